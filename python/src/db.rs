//! The engine, Pythonic: `Db`, `Keyspace`, `Snapshot`, `WriteBatch` and the iterator.
//!
//! Class layout: `_Reader` holds the handle the reads go through (a database, a keyspace or a
//! snapshot) and carries the read methods; `_Writer(_Reader)` adds the writes; `Db` and
//! `Keyspace` are writers, `Snapshot` a reader. Every method that reaches the engine releases
//! the GIL (`Python::detach`) for the engine call: reads and writes may wait for I/O, a flush
//! slot or a lock. Arguments are converted and results built while attached.

use crate::buf::{buf, bufs, Buf};
use crate::errors::{closed, db_err, InvalidArgumentError};
use parking_lot::{Mutex, RwLock};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use siftdb::{
    Compression, Db, DbCursor, DbIterator, Keyspace, KeyspaceOptions, Options, PinnedValue,
    ReadStats, Snapshot, WriteOptions,
};
use std::ops::Bound as RangeBound;
use std::path::PathBuf;
use std::sync::Arc;

/// What a handle reads through. A `Db` handle holds the only strong owner of the engine's
/// `Db` besides in-flight calls, so `close()` can take it back and close it.
#[derive(Clone)]
enum Source {
    Db(Arc<Db>),
    Keyspace(Keyspace),
    Snapshot(Arc<Snapshot>),
}

impl Source {
    fn get_pinned(&self, k: &[u8]) -> siftdb::Result<Option<PinnedValue>> {
        match self {
            Source::Db(d) => d.get_pinned(k),
            Source::Keyspace(ks) => ks.get_pinned(k),
            Source::Snapshot(s) => s.get_pinned(k),
        }
    }

    fn contains_key(&self, k: &[u8]) -> siftdb::Result<bool> {
        match self {
            Source::Db(d) => d.contains_key(k),
            Source::Keyspace(ks) => ks.contains_key(k),
            Source::Snapshot(s) => s.contains_key(k),
        }
    }

    fn multi_get(
        &self,
        keys: &[&[u8]],
        opts: &siftdb::ReadOptions,
    ) -> Vec<siftdb::Result<Option<Vec<u8>>>> {
        match self {
            Source::Db(d) => d.multi_get_opt(keys, opts),
            Source::Keyspace(ks) => ks.multi_get_opt(keys, opts),
            Source::Snapshot(s) => s.multi_get_opt(keys, opts),
        }
    }

    fn range(&self, lo: RangeBound<&[u8]>, hi: RangeBound<&[u8]>) -> siftdb::Result<DbIterator> {
        match self {
            Source::Db(d) => d.range::<&[u8], _>((lo, hi)),
            Source::Keyspace(ks) => ks.range::<&[u8], _>((lo, hi)),
            Source::Snapshot(s) => s.range::<&[u8], _>((lo, hi)),
        }
    }

    fn cursor(&self) -> siftdb::Result<DbCursor> {
        match self {
            Source::Db(d) => d.cursor(),
            Source::Keyspace(ks) => ks.cursor(),
            Source::Snapshot(s) => s.cursor(),
        }
    }

    fn prefix(&self, p: &[u8]) -> siftdb::Result<DbIterator> {
        match self {
            Source::Db(d) => d.prefix(p),
            Source::Keyspace(ks) => ks.prefix(p),
            Source::Snapshot(s) => s.prefix(p),
        }
    }

    /// The keyspace a write through this handle goes to (`None`: the default one), or the
    /// refusal of a snapshot (which the class layout already prevents).
    fn write(&self, batch: siftdb::WriteBatch, sync: bool) -> siftdb::Result<()> {
        let opts = WriteOptions { sync };
        match self {
            Source::Db(d) => d.write_opt(batch, opts),
            Source::Keyspace(ks) => ks.write_opt(batch, opts),
            Source::Snapshot(_) => Err(siftdb::Error::invalid("a snapshot is read-only")),
        }
    }

    fn keyspace(&self) -> Option<&Keyspace> {
        match self {
            Source::Keyspace(ks) => Some(ks),
            _ => None,
        }
    }
}

/// Base class of every handle that reads: the read methods of `Db`, `Keyspace` and `Snapshot`.
#[pyclass(subclass, frozen, module = "siftdb._siftdb", name = "_Reader")]
pub struct Reader {
    src: RwLock<Option<Source>>,
    what: &'static str,
}

impl Reader {
    fn new(src: Source, what: &'static str) -> Reader {
        Reader { src: RwLock::new(Some(src)), what }
    }

    fn src(&self) -> PyResult<Source> {
        self.src.read().clone().ok_or_else(|| closed(self.what))
    }

    fn get_bytes<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = buf(key, "key")?;
        let k = key.as_slice();
        let src = self.src()?;
        let v = py.detach(|| src.get_pinned(k)).map_err(db_err)?;
        Ok(v.map(|v| PyBytes::new(py, v.as_bytes())))
    }

    fn iter(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        mode: Mode,
    ) -> PyResult<Iter> {
        let src = self.src()?;
        let walk = match prefix {
            Some(p) => {
                if start.is_some() || end.is_some() {
                    return Err(InvalidArgumentError::new_err(
                        "invalid argument: give a prefix or start/end bounds, not both",
                    ));
                }
                let p = buf(p, "prefix")?;
                let p = p.as_slice();
                Walk::Iter(py.detach(|| src.prefix(p)).map_err(db_err)?)
            }
            None if end.is_none() => {
                // No upper bound: no scan filter can rule a file out (they need both ends), so
                // the engine's cursor reads exactly what a `DbIterator` would, and its entries
                // are borrowed instead of copied into two `Vec`s each.
                let start = start.map(|s| buf(s, "start")).transpose()?;
                let lower = start.as_ref().map(|s| s.as_slice().to_vec());
                let c = py
                    .detach(|| {
                        let mut c = src.cursor()?;
                        match (&lower, reverse) {
                            (Some(lo), false) => c.seek(lo)?,
                            (None, false) => c.seek_to_first()?,
                            (_, true) => c.seek_to_last()?,
                        }
                        Ok(c)
                    })
                    .map_err(db_err)?;
                // Forward, `seek` applied the lower bound already.
                Walk::Cursor { c, lower: lower.filter(|_| reverse), moved: false }
            }
            None => {
                let start = start.map(|s| buf(s, "start")).transpose()?;
                let end = end.map(|e| buf(e, "end")).transpose()?;
                let lo = start
                    .as_ref()
                    .map_or(RangeBound::Unbounded, |s| RangeBound::Included(s.as_slice()));
                let hi = end
                    .as_ref()
                    .map_or(RangeBound::Unbounded, |e| RangeBound::Excluded(e.as_slice()));
                Walk::Iter(py.detach(|| src.range(lo, hi)).map_err(db_err)?)
            }
        };
        Ok(Iter::new(walk, reverse, mode))
    }
}

#[pymethods]
impl Reader {
    /// `db[key]`: the value of `key`; `KeyError` if it has none.
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.get_bytes(py, key)?.ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    /// `key in db`: whether `key` has a value (copies no value).
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = buf(key, "key")?;
        let k = key.as_slice();
        let src = self.src()?;
        py.detach(|| src.contains_key(k)).map_err(db_err)
    }

    /// The value of `key`, or `default` when it has none.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match self.get_bytes(py, key)? {
            Some(v) => Some(v.into_any()),
            None => default,
        })
    }

    /// The values of `keys` (any iterable of bytes-like keys) as a list in their order, `None`
    /// for a key without a value: one engine call at one moment, filters probed for all keys
    /// before any block is read. `threads` (1 to 64): the most threads the engine may use for
    /// this batch (at least 64 keys each), the GIL released throughout; the answers are the
    /// same.
    #[pyo3(signature = (keys, *, threads = 1))]
    fn multi_get<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
        threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let keys: Vec<Buf<'py>> = bufs(keys, "key")?;
        let slices: Vec<&[u8]> = keys.iter().map(Buf::as_slice).collect();
        let src = self.src()?;
        let opts = siftdb::ReadOptions { multi_get_threads: threads, ..Default::default() };
        let mut results = py.detach(|| src.multi_get(&slices, &opts));
        // The first failed key's error is the call's; otherwise the list is made at its final
        // size in one pass (appending grew it step by step).
        if let Some(i) = results.iter().position(Result::is_err) {
            if let Err(e) = results.swap_remove(i) {
                return Err(db_err(e));
            }
        }
        PyList::new(
            py,
            results.iter().map(|r| match r {
                Ok(Some(v)) => PyBytes::new(py, v).into_any(),
                _ => py.None().into_bound(py),
            }),
        )
    }

    /// Iterates `(key, value)` pairs in key order (`reverse=True`: descending): keys in
    /// `[start, end)` (either bound may be omitted), or keys starting with `prefix`.
    #[pyo3(signature = (start = None, end = None, *, prefix = None, reverse = false))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Iter> {
        self.iter(py, start, end, prefix, reverse, Mode::Items)
    }

    /// Iterates the keys, as `items` does.
    #[pyo3(signature = (start = None, end = None, *, prefix = None, reverse = false))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Iter> {
        self.iter(py, start, end, prefix, reverse, Mode::Keys)
    }

    /// Iterates the values, as `items` does.
    #[pyo3(signature = (start = None, end = None, *, prefix = None, reverse = false))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<Iter> {
        self.iter(py, start, end, prefix, reverse, Mode::Values)
    }

    /// `iter(db)`: every key in order, as a dict iterates its keys.
    fn __iter__(&self, py: Python<'_>) -> PyResult<Iter> {
        self.iter(py, None, None, None, false, Mode::Keys)
    }
}

/// Base class of the handles that write (`Db`, `Keyspace`).
#[pyclass(subclass, frozen, extends = Reader, module = "siftdb._siftdb", name = "_Writer")]
pub struct Writer;

fn write_one(
    slf: &Bound<'_, Writer>,
    (key, value): (&[u8], &[u8]),
    fill: impl FnOnce(&mut siftdb::WriteBatch, Option<&Keyspace>),
    sync: bool,
) -> PyResult<()> {
    let src = slf.as_super().get().src()?;
    // Sized for its one record (`key` and `value`, or a range's start and end): growing from
    // empty reallocated twice per put, about 5% of a Python put loop's samples.
    let mut b = siftdb::WriteBatch::with_capacity(siftdb::WriteBatch::put_size(key, value));
    fill(&mut b, src.keyspace());
    slf.py().detach(|| src.write(b, sync)).map_err(db_err)
}

#[pymethods]
impl Writer {
    /// Sets `key` to `value` (`sync=True`: durable on return).
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (k, v) = (buf(key, "key")?, buf(value, "value")?);
        write_one(
            slf,
            (k.as_slice(), v.as_slice()),
            |b, ks| put(b, ks, k.as_slice(), v.as_slice()),
            sync,
        )
    }

    /// `db[key] = value`.
    fn __setitem__(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        Self::put(slf, key, value, false)
    }

    /// Deletes `key` (a blind delete: no error when it has no value).
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        let k = buf(key, "key")?;
        write_one(slf, (k.as_slice(), &[]), |b, ks| delete(b, ks, k.as_slice()), sync)
    }

    /// `del db[key]`: a blind delete, as `delete` (no `KeyError` for a missing key).
    fn __delitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::delete(slf, key, false)
    }

    /// Deletes every key in `[start, end)` with one range tombstone.
    #[pyo3(signature = (start, end, *, sync = false))]
    fn delete_range(
        slf: &Bound<'_, Self>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (s, e) = (buf(start, "start")?, buf(end, "end")?);
        let range = (s.as_slice(), e.as_slice());
        write_one(slf, range, |b, ks| delete_range(b, ks, s.as_slice(), e.as_slice()), sync)
    }

    /// Adds a merge operand to `key` (needs the database's `merge_operator`, e.g. "u64add").
    #[pyo3(signature = (key, operand, *, sync = false))]
    fn merge(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        let (k, v) = (buf(key, "key")?, buf(operand, "operand")?);
        write_one(
            slf,
            (k.as_slice(), v.as_slice()),
            |b, ks| merge(b, ks, k.as_slice(), v.as_slice()),
            sync,
        )
    }

    /// A batch of writes applied atomically: as a context manager it commits on a normal exit
    /// and discards everything on an exception.
    #[pyo3(signature = (*, sync = false))]
    fn write_batch(slf: &Bound<'_, Self>, sync: bool) -> PyResult<WriteBatch> {
        let reader = slf.as_super();
        let ks = reader.get().src()?.keyspace().cloned();
        let target = reader.clone().unbind();
        Ok(WriteBatch { state: Mutex::new(Some(siftdb::WriteBatch::new())), target, ks, sync })
    }
}

fn put(b: &mut siftdb::WriteBatch, ks: Option<&Keyspace>, k: &[u8], v: &[u8]) {
    match ks {
        Some(ks) => b.put_in(ks, k, v),
        None => b.put(k, v),
    };
}

fn delete(b: &mut siftdb::WriteBatch, ks: Option<&Keyspace>, k: &[u8]) {
    match ks {
        Some(ks) => b.delete_in(ks, k),
        None => b.delete(k),
    };
}

fn delete_range(b: &mut siftdb::WriteBatch, ks: Option<&Keyspace>, s: &[u8], e: &[u8]) {
    match ks {
        Some(ks) => b.delete_range_in(ks, s..e),
        None => b.delete_range(s..e),
    };
}

fn merge(b: &mut siftdb::WriteBatch, ks: Option<&Keyspace>, k: &[u8], v: &[u8]) {
    match ks {
        Some(ks) => b.merge_in(ks, k, v),
        None => b.merge(k, v),
    };
}

/// An atomic batch of writes (from `Db.write_batch()` or `Keyspace.write_batch()`).
#[pyclass(frozen, module = "siftdb._siftdb", name = "WriteBatch")]
pub struct WriteBatch {
    /// `None` once written or discarded.
    state: Mutex<Option<siftdb::WriteBatch>>,
    /// The handle it writes through, looked up at commit: a batch holds no strong reference to
    /// the engine's `Db`, so `Db.close()` never waits for an unwritten batch.
    target: Py<Reader>,
    /// The keyspace of that handle (`None`: the default one).
    ks: Option<Keyspace>,
    sync: bool,
}

impl WriteBatch {
    /// Adds one operation, into `keyspace` if given, else into the keyspace of the handle
    /// the batch came from.
    fn add(
        &self,
        keyspace: Option<&Bound<'_, KeyspaceHandle>>,
        f: impl FnOnce(&mut siftdb::WriteBatch, Option<&Keyspace>),
    ) -> PyResult<()> {
        let ks_src = keyspace.map(|k| k.as_super().as_super().get().src()).transpose()?;
        let ks = match &ks_src {
            Some(s) => s.keyspace(),
            None => self.ks.as_ref(),
        };
        let mut state = self.state.lock();
        let b = state
            .as_mut()
            .ok_or_else(|| closed("the write batch (already written or discarded)"))?;
        f(b, ks);
        Ok(())
    }
}

#[pymethods]
impl WriteBatch {
    /// Adds a put (into `keyspace` if given).
    #[pyo3(signature = (key, value, *, keyspace = None))]
    fn put(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, KeyspaceHandle>>,
    ) -> PyResult<()> {
        let (k, v) = (buf(key, "key")?, buf(value, "value")?);
        self.add(keyspace, |b, ks| put(b, ks, k.as_slice(), v.as_slice()))
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value, None)
    }

    /// Adds a delete (into `keyspace` if given).
    #[pyo3(signature = (key, *, keyspace = None))]
    fn delete(
        &self,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, KeyspaceHandle>>,
    ) -> PyResult<()> {
        let k = buf(key, "key")?;
        self.add(keyspace, |b, ks| delete(b, ks, k.as_slice()))
    }

    fn __delitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(key, None)
    }

    /// Adds a range deletion of `[start, end)` (into `keyspace` if given).
    #[pyo3(signature = (start, end, *, keyspace = None))]
    fn delete_range(
        &self,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, KeyspaceHandle>>,
    ) -> PyResult<()> {
        let (s, e) = (buf(start, "start")?, buf(end, "end")?);
        self.add(keyspace, |b, ks| delete_range(b, ks, s.as_slice(), e.as_slice()))
    }

    /// Adds a merge operand (into `keyspace` if given).
    #[pyo3(signature = (key, operand, *, keyspace = None))]
    fn merge(
        &self,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, KeyspaceHandle>>,
    ) -> PyResult<()> {
        let (k, v) = (buf(key, "key")?, buf(operand, "operand")?);
        self.add(keyspace, |b, ks| merge(b, ks, k.as_slice(), v.as_slice()))
    }

    /// Operations added so far.
    fn __len__(&self) -> usize {
        self.state.lock().as_ref().map_or(0, |b| b.len())
    }

    /// Writes the batch atomically; the batch cannot be used afterwards.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let target = self.target.get().src()?;
        let b = self
            .state
            .lock()
            .take()
            .ok_or_else(|| closed("the write batch (already written or discarded)"))?;
        let sync = self.sync;
        py.detach(|| target.write(b, sync)).map_err(db_err)
    }

    /// Drops every operation without writing; the batch cannot be used afterwards.
    fn discard(&self) {
        self.state.lock().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commits on a normal exit; discards on an exception (which propagates).
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.discard();
        } else if self.state.lock().is_some() {
            self.commit(py)?;
        }
        Ok(false)
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Items,
    Keys,
    Values,
}

/// What an iterator reads from: the engine's cursor (ranges without an upper bound, where it
/// reads what a `DbIterator` would) or its iterator (ranges with an upper bound and prefixes,
/// whose scan filters may skip files). One per Python iterator, never in a collection: the
/// variants' sizes differing costs nothing.
#[allow(clippy::large_enum_variant)]
enum Walk {
    /// `lower`: the inclusive lower bound a reverse walk stops at (a forward walk seeked to
    /// it). `moved`: whether the entry the cursor is on was taken already.
    Cursor {
        c: DbCursor,
        lower: Option<Vec<u8>>,
        moved: bool,
    },
    Iter(DbIterator),
}

/// Entries fetched with the GIL released, waiting for `__next__`: their bytes back to back in
/// one reused buffer, so a batch allocates nothing per entry.
struct IterState {
    /// `None` once the walk ended (or failed).
    walk: Option<Walk>,
    /// Keys and values of the fetched entries (only the part the mode yields).
    bytes: Vec<u8>,
    /// Per fetched entry: where its key ends and where its value ends in `bytes` (each starts
    /// where the previous part ended).
    ends: Vec<(usize, usize)>,
    /// The next entry of `ends` to yield.
    pos: usize,
    /// An error met while fetching, raised once the entries before it were yielded.
    err: Option<siftdb::Error>,
    /// Entries fetched per release of the GIL: doubles from 16 to 1024, so a loop that stops
    /// early reads little ahead and a full scan pays for the release rarely.
    batch: usize,
}

impl IterState {
    /// Appends one entry's key and value (as `mode` needs them) to the buffer.
    fn push(&mut self, mode: Mode, k: &[u8], v: &[u8]) {
        if !matches!(mode, Mode::Values) {
            self.bytes.extend_from_slice(k);
        }
        let kend = self.bytes.len();
        if !matches!(mode, Mode::Keys) {
            self.bytes.extend_from_slice(v);
        }
        self.ends.push((kend, self.bytes.len()));
    }

    /// Fetches up to `batch` entries into the emptied buffer (run with the GIL released).
    fn fill(&mut self, reverse: bool, mode: Mode) {
        self.bytes.clear();
        self.ends.clear();
        self.pos = 0;
        let Some(mut walk) = self.walk.take() else { return };
        let mut ended = false;
        for _ in 0..self.batch {
            match &mut walk {
                Walk::Cursor { c, lower, moved } => {
                    if *moved {
                        let r = if reverse { c.prev() } else { c.next() };
                        if let Err(e) = r {
                            self.err = Some(e);
                            ended = true;
                            break;
                        }
                    }
                    *moved = true;
                    let past = lower.as_deref().is_some_and(|lo| c.key() < lo);
                    if !c.valid() || past {
                        ended = true;
                        break;
                    }
                    self.push(mode, c.key(), c.value());
                }
                Walk::Iter(it) => match if reverse { it.next_back() } else { it.next() } {
                    Some(Ok((k, v))) => self.push(mode, &k, &v),
                    Some(Err(e)) => {
                        self.err = Some(e);
                        ended = true;
                        break;
                    }
                    None => {
                        ended = true;
                        break;
                    }
                },
            }
        }
        if !ended {
            self.walk = Some(walk);
            self.batch = (self.batch * 2).min(1024);
        }
    }
}

/// An iterator over a range or prefix, one direction (from `items`, `keys`, `values`). It reads
/// at the moment it was made: writes after that are not seen.
#[pyclass(frozen, module = "siftdb._siftdb", name = "Iterator")]
pub struct Iter {
    state: Mutex<IterState>,
    reverse: bool,
    mode: Mode,
}

impl Iter {
    fn new(walk: Walk, reverse: bool, mode: Mode) -> Iter {
        let state = IterState {
            walk: Some(walk),
            bytes: Vec::new(),
            ends: Vec::new(),
            pos: 0,
            err: None,
            batch: 16,
        };
        Iter { state: Mutex::new(state), reverse, mode }
    }
}

#[pymethods]
impl Iter {
    // An iterator is its own iterator (Python's protocol), hence the name clippy flags.
    #[allow(clippy::self_named_constructors)]
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut guard = self.state.lock();
        let st: &mut IterState = &mut guard;
        if st.pos == st.ends.len() {
            if let Some(e) = st.err.take() {
                return Err(db_err(e));
            }
            if st.walk.is_none() {
                return Ok(None);
            }
            let (reverse, mode) = (self.reverse, self.mode);
            py.detach(|| st.fill(reverse, mode));
        }
        let Some(&(kend, vend)) = st.ends.get(st.pos) else {
            return match st.err.take() {
                Some(e) => Err(db_err(e)),
                None => Ok(None),
            };
        };
        let start = match st.pos.checked_sub(1).and_then(|p| st.ends.get(p)) {
            Some(&(_, prev_end)) => prev_end,
            None => 0,
        };
        st.pos += 1;
        let (k, v) = (&st.bytes[start..kend], &st.bytes[kend..vend]);
        Ok(Some(match self.mode {
            Mode::Items => PyTuple::new(py, [PyBytes::new(py, k), PyBytes::new(py, v)])?.into_any(),
            Mode::Keys => PyBytes::new(py, k).into_any(),
            Mode::Values => PyBytes::new(py, v).into_any(),
        }))
    }
}

/// A database. `Db(path, **options)` opens (creating if missing) the database in directory
/// `path`; use it as a context manager or call `close()`.
#[pyclass(frozen, extends = Writer, module = "siftdb._siftdb", name = "Db")]
pub struct DbHandle {
    path: PathBuf,
    read_only: bool,
}

/// The options `Db(path, **options)` accepts.
const OPTION_NAMES: &str = "create_if_missing, error_if_exists, memtable_size, \
    max_immutable_memtables, block_size, block_restart_interval, compression, \
    block_cache_bytes, cache_index_and_filter_blocks, partition_filters, partition_index, \
    mmap_reads, direct_reads, max_open_files, max_subcompactions, merge_operator";

fn parse_compression(s: &str) -> PyResult<Compression> {
    Ok(match s {
        "none" => Compression::None,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd(3),
        _ => match s.strip_prefix("zstd:").and_then(|l| l.parse::<i32>().ok()) {
            Some(level) => Compression::Zstd(level),
            None => {
                return Err(InvalidArgumentError::new_err(format!(
                    "invalid argument: compression {s:?} is not one of \"none\", \"lz4\", \"zstd\", \"zstd:LEVEL\""
                )))
            }
        },
    })
}

fn options(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut o = Options::default();
    let Some(kwargs) = kwargs else { return Ok(o) };
    for (k, v) in kwargs.iter() {
        let name: String = k.extract()?;
        match name.as_str() {
            "create_if_missing" => o.create_if_missing = v.extract()?,
            "error_if_exists" => o.error_if_exists = v.extract()?,
            "memtable_size" => o.memtable_size = v.extract()?,
            "max_immutable_memtables" => o.max_immutable_memtables = v.extract()?,
            "block_size" => o.block_size = v.extract()?,
            "block_restart_interval" => o.block_restart_interval = v.extract()?,
            "compression" => o.compression = parse_compression(&v.extract::<String>()?)?,
            "block_cache_bytes" => o.block_cache_bytes = v.extract()?,
            "cache_index_and_filter_blocks" => o.cache_index_and_filter_blocks = v.extract()?,
            "partition_filters" => o.partition_filters = v.extract()?,
            "partition_index" => o.partition_index = v.extract()?,
            "mmap_reads" => o.mmap_reads = v.extract()?,
            "direct_reads" => o.direct_reads = v.extract()?,
            "max_open_files" => o.max_open_files = v.extract()?,
            "max_subcompactions" => o.max_subcompactions = v.extract()?,
            "merge_operator" => {
                o.merge_operator = match v.extract::<Option<String>>()?.as_deref() {
                    None => None,
                    Some("u64add") => Some(Arc::new(siftdb::U64AddOperator)),
                    Some(other) => {
                        return Err(InvalidArgumentError::new_err(format!(
                    "invalid argument: merge_operator {other:?} is unknown (built in: \"u64add\")"
                )))
                    }
                }
            }
            other => {
                return Err(InvalidArgumentError::new_err(format!(
                    "invalid argument: unknown option {other:?} (options: {OPTION_NAMES})"
                )))
            }
        }
    }
    Ok(o)
}

impl DbHandle {
    fn db(slf: &Bound<'_, Self>) -> PyResult<Arc<Db>> {
        match slf.as_super().as_super().get().src()? {
            Source::Db(d) => Ok(d),
            _ => Err(closed("the database")),
        }
    }
}

fn py_opt_f64(py: Python<'_>, x: Option<f64>) -> Py<PyAny> {
    match x {
        Some(f) => f.into_pyobject(py).map(|f| f.into_any().unbind()).unwrap_or_else(|_| py.None()),
        None => py.None(),
    }
}

fn read_stats_into(d: &Bound<'_, PyDict>, prefix: &str, r: &ReadStats) -> PyResult<()> {
    let fields: [(&str, u64); 17] = [
        ("filter_checks", r.filter_checks),
        ("filter_useful", r.filter_useful),
        ("filter_positive", r.filter_positive),
        ("filter_true_positive", r.filter_true_positive),
        ("filter_unusable", r.filter_unusable),
        ("unfiltered_lookups", r.unfiltered_lookups),
        ("unfiltered_found", r.unfiltered_found),
        ("index_blocks_read", r.index_blocks_read),
        ("data_blocks_read", r.data_blocks_read),
        ("block_cache_hits", r.block_cache_hits),
        ("block_cache_misses", r.block_cache_misses),
        ("file_reads", r.file_reads),
        ("file_read_bytes", r.file_read_bytes),
        ("index_cache_hits", r.index_cache_hits),
        ("index_cache_misses", r.index_cache_misses),
        ("filter_cache_hits", r.filter_cache_hits),
        ("filter_cache_misses", r.filter_cache_misses),
    ];
    for (name, v) in fields {
        d.set_item(format!("{prefix}{name}"), v)?;
    }
    Ok(())
}

#[pymethods]
impl DbHandle {
    /// Opens the database in directory `path` (`read_only=True`: `Db::open_read_only`, no lock,
    /// no writes). Keyword options: see `OPTION_NAMES` in the module's guide.
    #[new]
    #[pyo3(signature = (path, *, read_only = false, **options))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        read_only: bool,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let opts = self::options(options)?;
        let p = path.clone();
        let db = py
            .detach(
                move || if read_only { Db::open_read_only(&p, opts) } else { Db::open(&p, opts) },
            )
            .map_err(db_err)?;
        let reader = Reader::new(Source::Db(Arc::new(db)), "the database");
        Ok(PyClassInitializer::from(reader)
            .add_subclass(Writer)
            .add_subclass(DbHandle { path, read_only }))
    }

    /// The database's directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether it was opened with `read_only=True`.
    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(slf: &Bound<'_, Self>) -> bool {
        slf.as_super().as_super().get().src.read().is_none()
    }

    /// Closes the database: syncs the WAL (reporting its error, which a garbage-collected
    /// handle cannot), releases the directory lock. Every keyspace, snapshot and iterator
    /// taken from it raises `ClosedError` from then on. Closing twice is a no-op.
    fn close(slf: &Bound<'_, Self>) -> PyResult<()> {
        let taken = slf.as_super().as_super().get().src.write().take();
        let Some(Source::Db(mut arc)) = taken else { return Ok(()) };
        slf.py()
            .detach(move || loop {
                // Calls in flight on other threads hold a clone for their duration only.
                match Arc::try_unwrap(arc) {
                    Ok(db) => return db.close(),
                    Err(a) => {
                        arc = a;
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
            })
            .map_err(db_err)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the database (whether or not an exception is propagating).
    fn __exit__(
        slf: &Bound<'_, Self>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        Self::close(slf)?;
        Ok(false)
    }

    /// A consistent read view of the default keyspace as of now.
    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<Py<SnapshotHandle>> {
        let db = Self::db(slf)?;
        SnapshotHandle::create(slf.py(), db.snapshot())
    }

    /// An optimistic transaction over every keyspace: `isolation` is "serializable" (every
    /// key and range read is validated at commit) or "snapshot" (only written keys are);
    /// `sync` makes its commit durable on return.
    #[pyo3(signature = (*, isolation = "serializable", sync = false))]
    fn transaction(
        slf: &Bound<'_, Self>,
        isolation: &str,
        sync: bool,
    ) -> PyResult<crate::txn::TransactionHandle> {
        let isolation = match isolation {
            "serializable" => siftdb::Isolation::Serializable,
            "snapshot" => siftdb::Isolation::Snapshot,
            other => {
                return Err(InvalidArgumentError::new_err(format!(
                    "invalid argument: isolation {other:?} (valid: \"serializable\", \"snapshot\")"
                )))
            }
        };
        let db = Self::db(slf)?;
        let opts = siftdb::TransactionOptions { isolation, write: WriteOptions { sync } };
        let tx = slf.py().detach(|| db.transaction_opt(opts)).map_err(db_err)?;
        Ok(crate::txn::TransactionHandle::new(tx))
    }

    /// The keyspace `name`: created with default options when missing and `create` is true,
    /// `InvalidArgumentError` when missing otherwise.
    #[pyo3(signature = (name, *, create = true))]
    fn keyspace(slf: &Bound<'_, Self>, name: &str, create: bool) -> PyResult<Py<KeyspaceHandle>> {
        let db = Self::db(slf)?;
        let ks = slf.py().detach(|| {
            if create {
                db.keyspace(name, KeyspaceOptions::default())
            } else {
                db.existing_keyspace(name).ok_or_else(|| {
                    siftdb::Error::invalid(format!("keyspace '{name}' does not exist"))
                })
            }
        });
        KeyspaceHandle::create(slf.py(), ks.map_err(db_err)?)
    }

    /// The names of the live keyspaces, "default" first.
    fn keyspace_names(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        Ok(Self::db(slf)?.keyspace_names())
    }

    /// Drops keyspace `name` and its data; its handles raise `InvalidArgumentError` afterwards.
    fn drop_keyspace(slf: &Bound<'_, Self>, name: &str) -> PyResult<()> {
        let db = Self::db(slf)?;
        slf.py().detach(|| db.drop_keyspace(name)).map_err(db_err)
    }

    /// Writes a consistent copy of the database into the new directory `path` (hard links where
    /// the file system allows).
    fn checkpoint(slf: &Bound<'_, Self>, path: PathBuf) -> PyResult<()> {
        let db = Self::db(slf)?;
        slf.py().detach(|| db.checkpoint(&path)).map_err(db_err)
    }

    /// Flushes the memtables to L0 files and waits for it.
    fn flush(slf: &Bound<'_, Self>) -> PyResult<()> {
        let db = Self::db(slf)?;
        slf.py().detach(|| db.flush()).map_err(db_err)
    }

    /// Compacts the whole tree into its last level and waits for it.
    fn compact(slf: &Bound<'_, Self>) -> PyResult<()> {
        let db = Self::db(slf)?;
        slf.py().detach(|| db.compact()).map_err(db_err)
    }

    /// Syncs the write-ahead log: every write acknowledged so far is durable on return.
    fn sync_wal(slf: &Bound<'_, Self>) -> PyResult<()> {
        let db = Self::db(slf)?;
        slf.py().detach(|| db.sync_wal()).map_err(db_err)
    }

    /// The engine's counters as a plain dict: scalar counters, `write_amplification`,
    /// `tickers` (RocksDB's ticker names), `levels` and `keyspaces` (lists of dicts, one per
    /// level / keyspace, ready for `pandas.DataFrame`).
    fn stats<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let py = slf.py();
        let s = Self::db(slf)?.stats();
        let d = PyDict::new(py);
        let scalars: [(&str, u64); 28] = [
            ("gets", s.gets),
            ("gets_found", s.gets_found),
            ("seeks", s.seeks),
            ("memtable_bytes", s.memtable_bytes),
            ("immutable_memtables", s.immutable_memtables as u64),
            ("flushes", s.flushes),
            ("flush_filter_as_is", s.flush_filter_as_is),
            ("flush_filter_rebuilt", s.flush_filter_rebuilt),
            ("block_cache_hits", s.block_cache_hits),
            ("block_cache_misses", s.block_cache_misses),
            ("block_cache_bytes", s.block_cache_bytes),
            ("table_cache_hits", s.table_cache_hits),
            ("table_cache_misses", s.table_cache_misses),
            ("table_cache_open_tables", s.table_cache_open_tables as u64),
            ("write_stall_micros", s.write_stall_micros),
            ("write_groups", s.write_groups),
            ("write_batches", s.write_batches),
            ("wal_syncs", s.wal_syncs),
            ("user_bytes", s.user_bytes),
            ("flush_bytes_written", s.flush_bytes_written),
            ("compactions", s.compactions),
            ("trivial_moves", s.trivial_moves),
            ("subcompactions", s.subcompactions),
            ("compaction_bytes_read", s.compaction_bytes_read),
            ("compaction_bytes_written", s.compaction_bytes_written),
            ("filter_fallbacks", s.filter_fallbacks),
            ("l0_slowdowns", s.l0_slowdowns),
            ("l0_stops", s.l0_stops),
        ];
        for (name, v) in scalars {
            d.set_item(name, v)?;
        }
        d.set_item("l0_stall_micros", s.l0_stall_micros)?;
        d.set_item("write_amplification", s.write_amplification())?;
        let tickers = PyDict::new(py);
        for (name, v) in s.tickers() {
            tickers.set_item(name, v)?;
        }
        d.set_item("tickers", tickers)?;
        let levels = PyList::empty(py);
        for l in &s.levels {
            let ld = PyDict::new(py);
            ld.set_item("level", l.level)?;
            ld.set_item("files", l.files)?;
            ld.set_item("bytes", l.bytes)?;
            ld.set_item("entries", l.entries)?;
            ld.set_item("filter_kinds", l.filter_kinds.clone())?;
            ld.set_item("filter_bytes", l.filter_bytes)?;
            ld.set_item("filter_bits_per_key", l.filter_bits_per_key())?;
            ld.set_item("configured_fpr", py_opt_f64(py, l.configured_fpr))?;
            ld.set_item("built_fpr", py_opt_f64(py, l.built_fpr))?;
            read_stats_into(&ld, "reads_", &l.reads)?;
            read_stats_into(&ld, "scan_reads_", &l.scan_reads)?;
            levels.append(ld)?;
        }
        d.set_item("levels", levels)?;
        let keyspaces = PyList::empty(py);
        for k in &s.keyspaces {
            let kd = PyDict::new(py);
            kd.set_item("name", &k.name)?;
            kd.set_item("files", k.files)?;
            kd.set_item("bytes", k.bytes)?;
            kd.set_item("entries", k.entries)?;
            kd.set_item("filter_kinds", k.filter_kinds.clone())?;
            keyspaces.append(kd)?;
        }
        d.set_item("keyspaces", keyspaces)?;
        Ok(d)
    }

    /// The read-amplification table (`siftdb readamp`'s, `Stats::read_amp_table`) as a list of
    /// dicts, one per level that holds files or was probed: `pandas.DataFrame(db.read_amp_table())`.
    /// Per-lookup figures divide by `lookups` (default: the point lookups served since open).
    #[pyo3(signature = (lookups = None))]
    fn read_amp_table<'py>(
        slf: &Bound<'py, Self>,
        lookups: Option<u64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let py = slf.py();
        let s = Self::db(slf)?.stats();
        let lookups = lookups.unwrap_or(s.gets);
        let per = |n: u64| if lookups == 0 { 0.0 } else { n as f64 / lookups as f64 };
        let out = PyList::empty(py);
        for l in s.levels.iter().filter(|l| l.files > 0 || l.reads.filter_checks > 0) {
            let d = PyDict::new(py);
            let kinds = if l.filter_kinds.is_empty() {
                "none".to_string()
            } else {
                l.filter_kinds.join("+")
            };
            d.set_item("level", l.level)?;
            d.set_item("files", l.files)?;
            d.set_item("entries", l.entries)?;
            d.set_item("filter", kinds)?;
            d.set_item("filter_bytes", l.filter_bytes)?;
            d.set_item("bits_per_key", l.filter_bits_per_key())?;
            d.set_item("configured_fpr", py_opt_f64(py, l.configured_fpr))?;
            d.set_item("built_fpr", py_opt_f64(py, l.built_fpr))?;
            d.set_item("checks", l.reads.filter_checks)?;
            d.set_item("useful", l.reads.filter_useful)?;
            d.set_item("false_positives", l.reads.false_positives())?;
            d.set_item("observed_fpr", py_opt_f64(py, l.reads.observed_fpr()))?;
            d.set_item(
                "blocks_per_lookup",
                per(l.reads.data_blocks_read + l.reads.index_blocks_read),
            )?;
            d.set_item("file_reads_per_lookup", per(l.reads.file_reads))?;
            d.set_item("kib_per_lookup", per(l.reads.file_read_bytes) / 1024.0)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Where memory goes (memtables, block cache, table readers, filters), in bytes.
    fn memory_usage<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let m = Self::db(slf)?.memory_usage();
        let d = PyDict::new(slf.py());
        d.set_item("memtables", m.memtables)?;
        d.set_item("block_cache", m.block_cache)?;
        d.set_item("block_cache_data", m.block_cache_data)?;
        d.set_item("block_cache_index", m.block_cache_index)?;
        d.set_item("block_cache_filter", m.block_cache_filter)?;
        d.set_item("block_cache_pinned", m.block_cache_pinned)?;
        d.set_item("block_cache_capacity", m.block_cache_capacity)?;
        d.set_item("table_filters", m.table_filters)?;
        d.set_item("table_indexes", m.table_indexes)?;
        d.set_item("table_readers", m.table_readers)?;
        d.set_item("filter_arena_free", m.filter_arena_free)?;
        d.set_item("open_tables", m.open_tables)?;
        d.set_item("pinned_tables", m.pinned_tables)?;
        d.set_item("total", m.total())?;
        Ok(d)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        let state = if Self::closed(slf) { " (closed)" } else { "" };
        format!("siftdb.Db({:?}){state}", slf.get().path.display().to_string())
    }
}

/// A keyspace: an independent key space of one database with its own files and options,
/// sharing the WAL (a write batch can span keyspaces atomically). From `Db.keyspace(name)`.
#[pyclass(frozen, extends = Writer, module = "siftdb._siftdb", name = "Keyspace")]
pub struct KeyspaceHandle {
    name: String,
}

impl KeyspaceHandle {
    fn create(py: Python<'_>, ks: Keyspace) -> PyResult<Py<KeyspaceHandle>> {
        let name = ks.name().to_string();
        let init =
            PyClassInitializer::from(Reader::new(Source::Keyspace(ks), "the keyspace's database"))
                .add_subclass(Writer)
                .add_subclass(KeyspaceHandle { name });
        Py::new(py, init)
    }
}

#[pymethods]
impl KeyspaceHandle {
    /// The keyspace's name.
    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }

    /// A consistent read view of this keyspace as of now.
    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<Py<SnapshotHandle>> {
        let src = slf.as_super().as_super().get().src()?;
        let Source::Keyspace(ks) = src else { return Err(closed("the keyspace")) };
        SnapshotHandle::create(slf.py(), ks.snapshot())
    }

    fn __repr__(&self) -> String {
        format!("siftdb.Keyspace({:?})", self.name)
    }
}

/// A consistent read view at one moment (from `Db.snapshot()` or `Keyspace.snapshot()`): its
/// reads see exactly the writes acknowledged before it was taken. `release()` (or leaving its
/// `with` block) lets compaction drop the versions it pinned.
#[pyclass(frozen, extends = Reader, module = "siftdb._siftdb", name = "Snapshot")]
pub struct SnapshotHandle {
    sequence: u64,
}

impl SnapshotHandle {
    fn create(py: Python<'_>, snap: Snapshot) -> PyResult<Py<SnapshotHandle>> {
        let sequence = snap.sequence();
        let init =
            PyClassInitializer::from(Reader::new(Source::Snapshot(Arc::new(snap)), "the snapshot"))
                .add_subclass(SnapshotHandle { sequence });
        Py::new(py, init)
    }
}

#[pymethods]
impl SnapshotHandle {
    /// The sequence number the snapshot reads at.
    #[getter]
    fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Releases the snapshot; its reads raise `ClosedError` afterwards. Iterators already made
    /// from it keep their own view.
    fn release(slf: &Bound<'_, Self>) {
        slf.as_super().get().src.write().take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        slf: &Bound<'_, Self>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        Self::release(slf);
        false
    }
}

/// The engine keyspace a `Keyspace` handle writes to (`ClosedError` once its database closed).
pub fn keyspace_of(k: &Bound<'_, KeyspaceHandle>) -> PyResult<Keyspace> {
    match k.as_super().as_super().get().src()? {
        Source::Keyspace(ks) => Ok(ks),
        _ => Err(closed("the keyspace")),
    }
}

/// Registers the classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add_class::<Writer>()?;
    m.add_class::<DbHandle>()?;
    m.add_class::<KeyspaceHandle>()?;
    m.add_class::<SnapshotHandle>()?;
    m.add_class::<WriteBatch>()?;
    m.add_class::<Iter>()?;
    m.add_class::<crate::txn::TransactionHandle>()?;
    m.add("OPTION_NAMES", OPTION_NAMES.split(", ").collect::<Vec<_>>())?;
    Ok(())
}
