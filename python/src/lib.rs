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

/// The module's Rust allocations (the engine's blocks and buffers, each found value before it
/// becomes `bytes`) go to mimalloc, not glibc malloc: a Python `multi_get` batch allocates and
/// frees a value per key between decoded 4 KiB blocks, and glibc spent 6% of such a batch in
/// `_int_malloc`, `unlink_chunk`, `malloc_consolidate` and `_int_free` (mimalloc: 2%). Python's
/// own objects stay with Python's allocator; nothing allocated by one is freed by the other.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
