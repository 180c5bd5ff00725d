//! Leveled compaction: choosing what to compact ([`picker`], a pure function of a file set and
//! the options), building the filter the plan (src/filter_plan/) gives each output ([`filter`]),
//! which versions of a key survive and how merge operands collapse ([`collapse`]), and running
//! a compaction ([`job`]), split into key ranges ([`subcompaction`], a pure planner) that the
//! job merges on their own threads. The engine's background thread and `Db::compact` drive
//! them (src/db/compact.rs). design.md#compaction has the crash-safety argument.

pub mod collapse;
pub mod filter;
pub mod job;
pub mod picker;
pub mod subcompaction;

pub use picker::{pick, pick_level, Pick};
