//! The tree as the filter plan sees it ([`TreeShape`]): built from per-level counts, with the
//! levels weighed as Monkey weighs them and L0 counted as the runs a new filter will sit beside.

use super::monkey::{level_weights, LevelMove};
use crate::options::CompactionOptions;

/// The runs a lookup probes: L0 files and sorted levels.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeShape {
    /// L0 files a lookup probes (`l0_compaction_trigger - 1`: the most that stay while no
    /// compaction is due).
    pub l0_runs: f64,
    /// Keys of one L0 file (one memtable).
    pub l0_run_keys: f64,
    /// Keys of each level (index 0 unused), at capacity for all but the deepest level
    /// ([`level_weights`]).
    pub levels: Vec<f64>,
    /// Share of lookups that asked each level about a key it does not hold (index 0 unused:
    /// L0 runs weigh 1), as observed ([`super::all_runs::lookup_weights`]); read only by skew-aware allocation.
    /// Missing entries weigh 1.
    pub absent_share: Vec<f64>,
    /// Keys of one compaction output's filter (`target_file_size` over the mean entry size;
    /// infinite when unknown): what a bit of `log2(1/FPR)` costs the binary fuse kinds
    /// depends on it (`StaticFilterKind::bits_per_log2_at`).
    pub file_keys: f64,
}

/// Entries and bytes of each level (index 0: L0), summed over its files; what [`tree_shape`]
/// and [`level_weights`] read of a file set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelCounts {
    /// Entries of each level.
    pub entries: Vec<u64>,
    /// Bytes of each level.
    pub bytes: Vec<u64>,
}

impl LevelCounts {
    /// The counts after `moved` if given (a compaction's or a trivial move's entries leave one
    /// level for the next).
    pub fn after(mut self, moved: Option<LevelMove>) -> LevelCounts {
        if let Some(m) = moved {
            m.apply(&mut self.entries, &mut self.bytes);
        }
        self
    }
}

/// Whether the tree is taking writes, which decides how many L0 runs a new filter is planned
/// beside (design.md#all-runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// The memtables hold entries: L0 will fill again, so it is counted at least at its mean
    /// occupancy.
    Ongoing,
    /// The memtables are empty (a compacted, bulk-loaded or read-mostly tree): L0 is counted as
    /// the runs it holds, and a tree without L0 files keeps no budget back for them.
    Settled,
}

/// The runs of a tree of `counts` as filter allocation sees them: L0 as the `l0_runs` runs the
/// filter being sized will share the tree with ([`l0_runs_beside`]), and while `writes` are
/// [`Writes::Ongoing`] at least `(l0_compaction_trigger - 1) / 2`, L0's mean occupancy while
/// writes go on (it climbs from 0 to the trigger and a compaction empties it), each of
/// `l0_run_keys` keys (the last flushed memtable's); the levels weighted by [`level_weights`];
/// and each level's share of lookups of keys it does not hold (`absent_share`; empty at open,
/// before any lookup). design.md#all-runs says why the mean, and why not for a settled tree.
pub fn tree_shape(
    copts: &CompactionOptions,
    counts: &LevelCounts,
    (l0_runs, l0_run_keys): (usize, u64),
    absent_share: Vec<f64>,
    writes: Writes,
) -> TreeShape {
    let (entries, bytes) = (&counts.entries, &counts.bytes);
    // Keys of one output file, from the mean entry size of the levels below L0.
    let (below_entries, below_bytes): (u64, u64) =
        (entries.iter().skip(1).sum(), bytes.iter().skip(1).sum());
    let file_keys = if below_entries == 0 || below_bytes == 0 {
        f64::INFINITY
    } else {
        copts.target_file_size as f64 * below_entries as f64 / below_bytes as f64
    };
    let floor = match writes {
        Writes::Ongoing => copts.l0_compaction_trigger.saturating_sub(1) as f64 / 2.0,
        Writes::Settled => 0.0,
    };
    TreeShape {
        l0_runs: (l0_runs as f64).max(floor),
        l0_run_keys: l0_run_keys as f64,
        levels: level_weights(copts, entries, bytes),
        absent_share,
        file_keys,
    }
}

/// The shape a trivial move is judged on (the picker's): the tree as the move would leave it
/// (`counts`, already moved), L0 as the files it holds (`l0_files`), levels weighed as the
/// compaction job weighs them, so a file moved into an empty level below the deepest is judged
/// against that level as the new deepest, not as a level of one file's keys. Only how two
/// levels' filters compare matters here, so no lookup weights and no file size.
pub fn move_shape(copts: &CompactionOptions, counts: &LevelCounts, l0_files: usize) -> TreeShape {
    TreeShape {
        l0_runs: l0_files as f64,
        l0_run_keys: counts.entries[0] as f64 / l0_files.max(1) as f64,
        levels: level_weights(copts, &counts.entries, &counts.bytes),
        absent_share: vec![],
        file_keys: f64::INFINITY,
    }
}

/// The L0 runs a filter about to be built will sit beside, counted from the tree as it is
/// (design.md#all-runs): the `l0_files` L0 files, less `leaving` (a
/// compaction's L0 inputs), plus `arriving` (memtables that will be flushed before or as the
/// filter's own run). Counting the live runs, not the most L0 may hold, keeps a compacted or
/// read-mostly tree from reserving budget for L0 files it does not have beyond L0's mean
/// occupancy (the floor [`tree_shape`] puts under this count).
pub fn l0_runs_beside(l0_files: usize, leaving: usize, arriving: usize) -> usize {
    l0_files.saturating_sub(leaving) + arriving
}
