//! siftdb: an embeddable LSM key-value store in which approximate-membership filters are
//! first-class.
//!
//! * [`filter`]: the filter library (Bloom family, and later static and cuckoo filters), usable on
//!   its own.
//! * [`storage`]: the file-system trait all engine I/O goes through, the real implementation and
//!   an in-memory one that simulates crashes and injects faults.
//! * [`wal`]: the write-ahead log (block-framed records, torn-tail-aware recovery).
//! * [`manifest`]: the log of version edits that records the live files; [`filename`] names them.
//!
//! Formats are specified once, in `design.md` at the repository root.

#![warn(missing_docs)]

pub mod error;
pub mod filename;
pub mod filter;
pub mod manifest;
pub mod rng;
pub mod storage;
pub mod wal;

pub use error::{Error, Result};
