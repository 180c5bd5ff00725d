//! Keys and values from Python: `bytes` is read in place; any other object exporting the
//! buffer protocol (bytearray, memoryview, numpy arrays, mmap) is copied once. `str` is
//! refused: which encoding is meant is the caller's to say.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};

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
    let mut out = Vec::with_capacity(items.len().unwrap_or(0));
    for item in items.try_iter()? {
        out.push(buf(&item?, what)?);
    }
    Ok(out)
}
