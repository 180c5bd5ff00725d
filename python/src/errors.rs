//! The exception hierarchy: every engine error becomes `siftdb.Error` or one of its subclasses,
//! carrying the engine's message (its `Display`).

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use siftdb::filter::FilterError;

pyo3::create_exception!(
    siftdb,
    Error,
    PyException,
    "Base class of every error siftdb raises (I/O, a locked or read-only database, a failed \
     merge, a full filter, and the subclasses below)."
);
pyo3::create_exception!(
    siftdb,
    CorruptionError,
    Error,
    "Stored bytes are not what the format says (checksum mismatch, truncated file or filter)."
);
pyo3::create_exception!(
    siftdb,
    InvalidArgumentError,
    Error,
    "An argument outside its documented range: an option, a key too large, an unknown filter \
     kind, a dropped keyspace."
);
pyo3::create_exception!(
    siftdb,
    ConflictError,
    Error,
    "A transaction's commit lost to a concurrent write of a key it read (raised by \
     transactions)."
);
pyo3::create_exception!(
    siftdb,
    ClosedError,
    Error,
    "The database was closed (or the snapshot released): the handle serves nothing more."
);

/// The Python exception of an engine error.
pub fn db_err(e: siftdb::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        siftdb::Error::Corruption { .. } => CorruptionError::new_err(msg),
        siftdb::Error::InvalidArgument(_) | siftdb::Error::UnknownFilterKind(_) => {
            InvalidArgumentError::new_err(msg)
        }
        siftdb::Error::Closed => ClosedError::new_err(msg),
        siftdb::Error::Conflict { .. } => ConflictError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// The Python exception of a filter-library error.
pub fn filter_err(e: FilterError) -> PyErr {
    let msg = e.to_string();
    match e {
        FilterError::Corruption { .. } => CorruptionError::new_err(msg),
        FilterError::InvalidArgument(_) | FilterError::UnknownKind(_) => {
            InvalidArgumentError::new_err(msg)
        }
        _ => Error::new_err(msg),
    }
}

/// The error of a handle used after `close()` (or a snapshot after `release()`).
pub fn closed(what: &str) -> PyErr {
    ClosedError::new_err(format!("{what} is closed"))
}

/// Registers the exception classes in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("InvalidArgumentError", py.get_type::<InvalidArgumentError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    Ok(())
}
