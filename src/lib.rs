//! siftdb: an embeddable LSM key-value store in which approximate-membership filters are
//! first-class.
//!
//! * [`filter`]: the filter library (Bloom family, and later static and cuckoo filters), usable on
//!   its own.
//! * [`ikey`]: internal keys (user key, sequence number, kind) and their order.
//! * [`sst`]: the SSTable format (builder, reader, iterator); [`cache`]: the shared block cache.
//!
//! Formats are specified once, in `design.md` at the repository root.

#![warn(missing_docs)]

pub mod batch;
pub mod cache;
pub mod coding;
pub mod error;
pub mod filter;
pub mod ikey;
pub mod options;
pub mod rng;
pub mod sst;
pub mod storage;

pub use error::{Error, Result};
