//! siftdb: an embeddable LSM key-value store in which approximate-membership filters are
//! first-class.
//!
//! # Quick start
//!
//! [`Db`] is the database: open it on a directory with [`Options`], write single keys or atomic
//! [`WriteBatch`]es, read with `get`, `multi_get`, iterators (both ways) and a seekable cursor,
//! and take consistent [`Snapshot`]s.
//!
//! ```
//! use siftdb::{Db, Options, WriteBatch, WriteOptions};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Db::open(dir.path().join("db"), Options::default())?;
//! db.put("apple", "red")?;
//! let mut batch = WriteBatch::new();
//! batch.put("banana", "yellow").put("cherry", "dark red").delete("apple");
//! db.write_opt(batch, WriteOptions { sync: true })?; // atomic, durable on return
//!
//! assert_eq!(db.get("banana")?, Some(b"yellow".to_vec()));
//! assert!(!db.contains_key("apple")?);
//!
//! let snap = db.snapshot(); // a consistent view
//! db.put("banana", "green")?;
//! assert_eq!(snap.get("banana")?, Some(b"yellow".to_vec()));
//!
//! // Iterators run both ways; a cursor seeks (RocksDB's iterator semantics).
//! let keys: Vec<Vec<u8>> = db.scan()?.rev().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
//! assert_eq!(keys, vec![b"cherry".to_vec(), b"banana".to_vec()]);
//! let mut cursor = db.cursor()?;
//! cursor.seek_for_prev(b"c")?;
//! assert_eq!(cursor.key(), b"banana");
//!
//! db.close()?; // reports the final WAL sync's error, which a drop cannot
//! # Ok::<(), siftdb::Error>(())
//! ```
//!
//! Every field of [`Options`] documents its default and trade-off, and `Db::open` refuses an
//! out-of-range value naming the field. [`Db::stats`] reports per-level read amplification under
//! RocksDB's ticker names; [`Db::memory_usage`] where memory goes.
//!
//! # Modules
//!
//! The crate root holds the engine's API: [`Db`], [`Options`] and its enums (also in
//! [`options`], with the valid ranges `Db::open` checks), [`WriteBatch`], [`Snapshot`], the
//! iterators ([`DbIterator`], [`DbCursor`]), keyspaces ([`Keyspace`], [`KeyspaceOptions`]), the
//! statistics types and [`Error`]. Beside it:
//!
//! * [`filter`]: the filter library (Bloom family, static and cuckoo filters), usable on its own,
//!   with a decision guide.
//! * [`merge`]: merge operators (`Db::merge`, read-modify-write without a read) and the
//!   built-in [`U64AddOperator`].
//! * [`storage`]: the file-system trait all engine I/O goes through, the real implementation and
//!   an in-memory one that simulates crashes and injects faults (pass one in
//!   [`Options::storage`]).
//! * [`coding`]: the fixed-width and varint encodings of siftdb's formats and the bounds-checked
//!   cursor that decodes them, for crates that store values in those formats.
//! * [`rng`]: the seeded generator behind the benchmarks' reproducible key streams.
//! * `inspect` (feature `inspect`): read-only access to a database's files (SSTs, WALs, the
//!   manifest), for tools such as the `siftdb` CLI and the fuzzers.
//! * `testing` (feature `fault-injection`): the durability-point switches of the crash tests.
//!
//! Everything else (memtable, WAL writer, compaction, caches) is internal and may change. The
//! column-store query layer is the crate `siftdb-query`, the command line `siftdb-cli`.
//! Formats are specified once, in `docs/format.md` at the repository root.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod coding;
pub mod compaction_filter;
/// The filter library (crate `siftdb-filter`), re-exported so `siftdb::filter::*` paths resolve.
pub use siftdb_filter as filter;
#[cfg(feature = "inspect")]
pub mod inspect;
pub mod merge;
pub mod options;
/// The seeded generator of `siftdb-filter`, under the engine's own `crate::rng` paths.
pub(crate) use siftdb_filter::rng;
pub mod storage;
// The engine consults the test hooks everywhere; only with `fault-injection` can a test reach
// them (and the switches and allocator a test uses, unused by the engine itself).
#[cfg(feature = "fault-injection")]
pub mod testing;
#[cfg(not(feature = "fault-injection"))]
#[allow(dead_code, unused_imports)]
pub(crate) mod testing;

pub(crate) mod batch;

// Parts of cache, ikey, manifest, range_del, sst and wal are reached only through `inspect`
// (tools, fuzzers) and the tests: an embedder's build without the feature leaves them unused.
// Builds with `inspect` (the workspace's, CI's clippy) still lint every item.
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unused_imports))]
pub(crate) mod cache;
pub(crate) mod cache_admission;
pub(crate) mod compaction;
pub(crate) mod error;
pub(crate) mod filename;
pub(crate) mod filter_plan;
pub(crate) mod heap;
pub(crate) mod huge_arena;
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unused_imports))]
pub(crate) mod ikey;
pub(crate) mod keyspace_options;
pub(crate) mod limits;
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unused_imports))]
pub(crate) mod manifest;
pub(crate) mod memtable;
pub(crate) mod options_validate;
pub(crate) mod prefix;
pub(crate) mod radix;
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unused_imports))]
pub(crate) mod range_del;
pub(crate) mod read_section;
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unused_imports))]
pub(crate) mod sst;
pub(crate) mod stripe;
pub(crate) mod table_cache;
pub(crate) mod version;
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unused_imports))]
pub(crate) mod wal;
pub(crate) mod write_time;

mod db;
mod ingest;
mod txn;

pub use batch::{WriteBatch, MAX_BATCH_SIZE, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use compaction_filter::{
    Clock, CompactionFilter, Decision, EntryKind, ManualClock, SystemClock,
};
pub use db::{
    Db, DbCursor, DbIterator, Keyspace, KeyspaceStats, LevelStats, MemoryUsage, PinnedValue,
    ReadStats, Snapshot, Stats,
};
pub use error::{Error, Result};
pub use ingest::{
    ExportOptions, ExportReport, IngestCheck, IngestMode, IngestOptions, IngestReport,
    IngestedFile, SstFileInfo, SstWriter,
};
pub use keyspace_options::KeyspaceOptions;
pub use merge::{MergeOperator, U64AddOperator};
pub use options::{
    CacheAdmission, CompactionOptions, Compression, FilterAllocation, FilterConfig, FilterPolicy,
    LevelBudget, Options, RangeFilterOptions, ReadOptions, StaticFilterKind, WriteOptions,
};
pub use prefix::{DelimitedPrefix, FixedPrefix, PrefixExtractor};
pub use txn::{Isolation, Transaction, TransactionOptions, TxCursor, TxIterator, TxKeyspace};

/// The README's Rust blocks, compiled and run as doctests (`cargo test --doc`), so the front
/// page's quick start stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
