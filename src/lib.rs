//! siftdb: an embeddable LSM key-value store in which approximate-membership filters are
//! first-class.
//!
//! * [`filter`]: the filter library (Bloom family, and later static and cuckoo filters), usable on
//!   its own.
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
