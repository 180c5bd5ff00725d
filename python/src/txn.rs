//! `Transaction`: an optimistic transaction (`Db.transaction()`), a context manager that commits
//! on a normal exit and rolls back on an exception. Reads see the transaction's snapshot and its
//! own writes; `commit()` raises `ConflictError` when a key or range it read changed meanwhile
//! (serializable) or a key it wrote did (snapshot isolation). Scans return lists: an iterator
//! would borrow the transaction across calls.

use crate::buf::buf;
use crate::db::{keyspace_of, KeyspaceHandle};
use crate::errors::{closed, db_err};
use parking_lot::Mutex;
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use siftdb::{Keyspace, Transaction};
use std::ops::Bound as RangeBound;

#[pyclass(frozen, module = "siftdb._siftdb", name = "Transaction")]
pub struct TransactionHandle {
    /// `None` once committed or rolled back.
    tx: Mutex<Option<Transaction>>,
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

impl TransactionHandle {
    pub fn new(tx: Transaction) -> TransactionHandle {
        TransactionHandle { tx: Mutex::new(Some(tx)) }
    }

    /// Runs `f` on the open transaction with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Transaction) -> siftdb::Result<T> + Send,
    ) -> PyResult<T> {
        // `None`: the transaction itself is over; an engine error (a closed database
        // included) keeps its own message.
        let out = py.detach(|| self.tx.lock().as_ref().map(f));
        out.ok_or_else(|| closed("the transaction (committed or rolled back)"))?.map_err(db_err)
    }
}

fn ks_arg(keyspace: Option<&Bound<'_, KeyspaceHandle>>) -> PyResult<Option<Keyspace>> {
    keyspace.map(keyspace_of).transpose()
}

fn get_in(tx: &Transaction, ks: Option<&Keyspace>, k: &[u8]) -> siftdb::Result<Option<Vec<u8>>> {
    match ks {
        Some(ks) => tx.keyspace(ks)?.get(k),
        None => tx.get(k),
    }
}

#[pymethods]
impl TransactionHandle {
    /// The value of `key` (from `keyspace` if given), or `default`.
    #[pyo3(signature = (key, default = None, *, keyspace = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        keyspace: Option<&Bound<'py, KeyspaceHandle>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (kb, ks) = (buf(key, "key")?, ks_arg(keyspace)?);
        let k = kb.as_slice();
        let v = self.with(py, |tx| get_in(tx, ks.as_ref(), k))?;
        Ok(match v {
            Some(v) => PyBytes::new(py, &v).into_any(),
            None => default.unwrap_or_else(|| py.None().into_bound(py)),
        })
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let kb = buf(key, "key")?;
        let k = kb.as_slice();
        match self.with(py, |tx| tx.get(k))? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let kb = buf(key, "key")?;
        let k = kb.as_slice();
        self.with(py, |tx| tx.contains_key(k))
    }

    /// Buffers a put (into `keyspace` if given).
    #[pyo3(signature = (key, value, *, keyspace = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, KeyspaceHandle>>,
    ) -> PyResult<()> {
        let (kb, vb, ks) = (buf(key, "key")?, buf(value, "value")?, ks_arg(keyspace)?);
        let (k, v) = (kb.as_slice(), vb.as_slice());
        self.with(py, |tx| match &ks {
            Some(ks) => tx.keyspace(ks)?.put(k, v),
            None => tx.put(k, v),
        })
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None)
    }

    /// Buffers a delete (in `keyspace` if given).
    #[pyo3(signature = (key, *, keyspace = None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, KeyspaceHandle>>,
    ) -> PyResult<()> {
        let (kb, ks) = (buf(key, "key")?, ks_arg(keyspace)?);
        let k = kb.as_slice();
        self.with(py, |tx| match &ks {
            Some(ks) => tx.keyspace(ks)?.delete(k),
            None => tx.delete(k),
        })
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, None)
    }

    /// The `(key, value)` pairs in `[start, end)` or under `prefix` (in `keyspace` if given), as
    /// the transaction sees them, as a list (descending with `reverse`). Under serializable
    /// isolation the whole range read is validated at commit.
    #[pyo3(signature = (start = None, end = None, *, prefix = None, reverse = false, keyspace = None))]
    fn items<'py>(
        &self,
        py: Python<'py>,
        start: Option<&Bound<'py, PyAny>>,
        end: Option<&Bound<'py, PyAny>>,
        prefix: Option<&Bound<'py, PyAny>>,
        reverse: bool,
        keyspace: Option<&Bound<'py, KeyspaceHandle>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let s = start.map(|b| buf(b, "start")).transpose()?;
        let e = end.map(|b| buf(b, "end")).transpose()?;
        let p = prefix.map(|b| buf(b, "prefix")).transpose()?;
        let ks = ks_arg(keyspace)?;
        let (s, e, p) = (
            s.as_ref().map(|b| b.as_slice()),
            e.as_ref().map(|b| b.as_slice()),
            p.as_ref().map(|b| b.as_slice()),
        );
        let entries: Entries = self.with(py, |tx| {
            let lo = s.map_or(RangeBound::Unbounded, RangeBound::Included);
            let hi = e.map_or(RangeBound::Unbounded, RangeBound::Excluded);
            let collect = |it: siftdb::TxIterator<'_>| -> siftdb::Result<Entries> {
                if reverse {
                    it.rev().collect()
                } else {
                    it.collect()
                }
            };
            match (&ks, &p) {
                (Some(ks), Some(p)) => collect(tx.keyspace(ks)?.prefix(p)?),
                (Some(ks), None) => collect(tx.keyspace(ks)?.range::<&[u8], _>((lo, hi))?),
                (None, Some(p)) => collect(tx.prefix(p)?),
                (None, None) => collect(tx.range::<&[u8], _>((lo, hi))?),
            }
        })?;
        let list = PyList::empty(py);
        for (k, v) in entries {
            list.append(PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?)?;
        }
        Ok(list)
    }

    /// Validates and writes the transaction's writes as one atomic batch; `ConflictError` when
    /// validation fails (nothing is written; run the transaction again).
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let tx = self
            .tx
            .lock()
            .take()
            .ok_or_else(|| closed("the transaction (committed or rolled back)"))?;
        py.detach(|| tx.commit()).map_err(db_err)
    }

    /// Discards the transaction's writes.
    fn rollback(&self) {
        self.tx.lock().take();
    }

    /// The sequence number the transaction reads at.
    #[getter]
    fn read_sequence(&self) -> PyResult<u64> {
        let guard = self.tx.lock();
        let tx = guard.as_ref().ok_or_else(|| closed("the transaction"))?;
        Ok(tx.read_sequence())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits on a normal exit (a `ConflictError` then propagates); rolls back on an exception.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.rollback();
        } else if self.tx.lock().is_some() {
            self.commit(py)?;
        }
        Ok(false)
    }
}
