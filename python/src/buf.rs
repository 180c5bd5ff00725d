//! Keys and values from Python: `bytes` is read in place; any other object exporting the
//! buffer protocol (bytearray, memoryview, numpy arrays, mmap) is copied once. `str` is
//! refused: which encoding is meant is the caller's to say.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView};

/// The bytes of one key or value argument.
pub enum Buf<'py> {
    /// A `bytes` object, borrowed.
    Bytes(Bound<'py, PyBytes>),
    /// A copy of another buffer's bytes.
    Owned(Vec<u8>),
}

impl Buf<'_> {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Buf::Bytes(b) => b.as_bytes(),
            Buf::Owned(v) => v,
        }
    }
}

/// The bytes of `obj`, or a `TypeError` naming its type and the argument (`what`).
pub fn buf<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Buf<'py>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Buf::Bytes(b.clone()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Buf::Owned(b.to_vec()));
    }
    // The limited API (abi3, Python 3.9) has no buffer access; a memoryview over the object
    // accepts exactly the buffer exporters, and `tobytes` copies their bytes.
    match PyMemoryView::from(obj) {
        Ok(view) => {
            let bytes = view.call_method0("tobytes")?;
            let bytes = bytes.cast::<PyBytes>()?;
            Ok(Buf::Owned(bytes.as_bytes().to_vec()))
        }
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be bytes or a buffer (bytearray, memoryview), not {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
        ))),
    }
}

/// The bytes of every item of an iterable of keys.
pub fn bufs<'py>(items: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Buf<'py>>> {
    if let Ok(list) = items.cast::<PyList>() {
        return list_bufs(list, what);
    }
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        out.push(buf(&item?, what)?);
    }
    Ok(out)
}

/// Items of a list read ahead of their use: [`bufs`]'s usual case (`multi_get` of a list).
/// Taking an item costs a few tens of nanoseconds and the load it waits for a DRAM miss and a
/// page walk: 8 ahead left part of the wait exposed (the multi_get phase of
/// `python/bench/vs_rocksdict.py`'s workload: 32 ahead took 4.9% less time than 8, medians of
/// 12 alternating passes; 64 measured the same as 32).
const AHEAD: usize = 32;

/// [`bufs`] of a list. The keys of a batch are objects scattered over the heap, each read
/// first by its reference count's increment, a cache miss when the batch was built long
/// before; the loop starts loading the item [`AHEAD`] places on as it takes each one, so those
/// misses overlap.
fn list_bufs<'py>(list: &Bound<'py, PyList>, what: &str) -> PyResult<Vec<Buf<'py>>> {
    let mut out = Vec::with_capacity(list.len());
    let mut i = 0;
    // `len` again on every step: a buffer's `tobytes` (in `buf`) could run code that changes
    // the list.
    while i < list.len() {
        if i + AHEAD < list.len() {
            // SAFETY: the index is in range and the GIL is held; the result is a borrowed
            // reference, only used as an address to prefetch (never dereferenced here).
            let ahead = unsafe { pyo3::ffi::PyList_GetItem(list.as_ptr(), (i + AHEAD) as _) };
            siftdb::filter::prefetch_read(ahead);
        }
        out.push(buf(&list.get_item(i)?, what)?);
        i += 1;
    }
    Ok(out)
}
