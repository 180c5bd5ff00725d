//! `siftdb._siftdb`: the native half of the Python package `siftdb` (the engine as `Db`,
//! `Keyspace`, `Snapshot`, `WriteBatch`; the filter library as `Filter`). The package's
//! `__init__.py` and `filter.py` re-export it with the documentation; the stubs are in
//! `siftdb/*.pyi`.
//!
//! Transactions are `Transaction` (txn.rs), their `Error::Conflict` raised as `ConflictError`.

mod buf;
mod db;
mod errors;
mod filter;
mod txn;

use pyo3::prelude::*;

#[pymodule]
fn _siftdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    db::register(m)?;
    filter::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
