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
//! let mut cursor = db.cursor();
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
//! * [`filter`]: the filter library (Bloom family, static and cuckoo filters), usable on its own.
//! * [`merge`]: merge operators (`Db::merge`, read-modify-write without a read) and the
//!   built-in [`U64AddOperator`].
//! * [`ikey`]: internal keys (user key, sequence number, kind) and their order.
//! * [`sst`]: the SSTable format (builder, reader, iterator); [`cache`]: the shared block cache;
//!   [`table_cache`]: the open tables, bounded by `Options::max_open_files`.
//! * [`storage`]: the file-system trait all engine I/O goes through, the real implementation and
//!   an in-memory one that simulates crashes and injects faults.
//! * [`wal`]: the write-ahead log (block-framed records, torn-tail-aware recovery).
//! * [`manifest`]: the log of version edits that records the live files; [`filename`] names them.
//! * [`query`]: a column-store query layer on the engine: chunked typed tables, chunk skipping,
//!   hash joins with probe filters.
//!
//! Formats are specified once, in `design.md` at the repository root.

#![warn(missing_docs)]

pub mod batch;
pub mod cache;
pub mod coding;
pub mod compaction;
pub mod error;
pub mod filename;
pub mod filter;
pub mod ikey;
pub mod keyspace_options;
pub mod manifest;
pub mod memtable;
pub mod merge;
pub mod options;
pub mod options_validate;
pub mod query;
pub mod range_del;
pub mod rng;
pub mod sst;
pub mod storage;
pub mod table_cache;
#[doc(hidden)]
pub mod testing;
pub mod version;
pub mod wal;

mod db;

pub use batch::WriteBatch;
pub use db::{
    Db, DbCursor, DbIterator, Keyspace, KeyspaceStats, LevelStats, MemoryUsage, ReadStats,
    Snapshot, Stats,
};
pub use error::{Error, Result};
pub use keyspace_options::KeyspaceOptions;
pub use merge::{MergeOperator, U64AddOperator};
pub use options::{
    CompactionOptions, Compression, FilterAllocation, FilterConfig, FilterPolicy, LevelBudget,
    Options, StaticFilterKind, WriteOptions,
};
