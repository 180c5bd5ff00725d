//! Leveled compaction: choosing what to compact ([`picker`], a pure function of a file set and
//! the options), the filter each output level gets ([`filter`], including Monkey allocation, and
//! [`allocation`] over every run, L0 included),
//! which versions of a key survive and how merge operands collapse ([`collapse`]), and running
//! a compaction ([`job`]), split into key ranges merged on their own threads
//! ([`subcompaction`]). The engine's background thread and `Db::compact` drive
//! them (src/db/compact.rs). design.md, "Compaction", has the crash-safety argument.

pub mod allocation;
pub mod collapse;
pub mod filter;
pub mod job;
pub mod picker;
pub mod subcompaction;

pub use allocation::TreeShape;
pub use filter::{flush_filter, level_filter, level_weights, LevelFilter, LevelMove};
pub use picker::{pick, pick_level, Pick};
