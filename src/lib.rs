//! siftdb: an embeddable LSM key-value store in which approximate-membership filters are
//! first-class.
//!
//! * [`filter`]: the filter library (Bloom family, and later static and cuckoo filters), usable on
//!   its own.
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
pub mod manifest;
pub mod memtable;
pub mod options;
pub mod options_validate;
pub mod query;
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
pub use db::{Db, DbCursor, DbIterator, LevelStats, MemoryUsage, ReadStats, Snapshot, Stats};
pub use error::{Error, Result};
pub use options::{
    CompactionOptions, Compression, FilterAllocation, FilterConfig, FilterPolicy, LevelBudget,
    Options, StaticFilterKind, WriteOptions,
};
