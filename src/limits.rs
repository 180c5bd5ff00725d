//! Fixed limits of the engine's shape, read by the options' validation and by every layer that
//! sizes an array per level or a thread pool per compaction. They live below all of those so
//! that the options never import the version set or the compaction code.

/// Number of levels, L0..L6.
pub const NUM_LEVELS: usize = 7;

/// Most subcompactions a job may ask for (`Options::max_subcompactions`): a thread each, and
/// beyond this the split points of a few hundred input files leave ranges too small to matter.
pub const MAX_SUBCOMPACTIONS: usize = 64;

/// Most threads one `multi_get` may use ([`crate::ReadOptions::multi_get_threads`]).
pub const MAX_MULTI_GET_THREADS: usize = 64;
