//! The engine's description of its tree for the filter plan (src/filter_plan/): a version's
//! level counts, L0's runs and the read counters' lookup weights, gathered here so that flush,
//! compaction, memtable rotation and `stats()` all describe the tree the same way.

use super::{DbInner, SuperVersion};
use crate::compaction::picker::level_counts;
use crate::filter_plan::{self, LevelMove, TreeShape, Writes};
use crate::limits::NUM_LEVELS;
use crate::options::Options;
use crate::version::Version;

/// The shape of version `v` ([`filter_plan::tree_shape`]) with `l0_runs` L0 runs of
/// `l0_run_keys` keys each and the lookup weights `absent_share`. With `moved`, the levels are
/// weighed as they will be once a compaction has moved those entries down.
pub(crate) fn tree_shape(
    opts: &Options,
    v: &Version,
    l0: (usize, u64),
    absent_share: Vec<f64>,
    moved: Option<LevelMove>,
    writes: Writes,
) -> TreeShape {
    let counts = level_counts(v.levels()).after(moved);
    filter_plan::tree_shape(&opts.compaction, &counts, l0, absent_share, writes)
}

/// Whether the tree of `sv` is taking writes: its memtables hold entries. A compaction that
/// runs after the last write was flushed (`Db::compact`, a read-mostly tree settling) plans
/// for the L0 files there are, not for L0's mean occupancy under writes.
pub(crate) fn writes_of(sv: &SuperVersion) -> Writes {
    if sv.mem.is_empty() && sv.imm.iter().all(|m| m.is_empty()) {
        Writes::Settled
    } else {
        Writes::Ongoing
    }
}

/// The L0 runs beside a filter about to be built in `v` ([`filter_plan::l0_runs_beside`]).
pub(crate) fn l0_runs_beside(v: &Version, leaving: usize, arriving: usize) -> usize {
    filter_plan::l0_runs_beside(v.levels()[0].len(), leaving, arriving)
}

/// Each level's share of point lookups (`get`, `multi_get`'s keys) since open that asked it
/// about a key it does not hold, smoothed (`filter_plan::lookup_weights`): the weights of
/// skew-aware filter allocation. Sums the per-thread read counters.
pub(crate) fn absent_share(inner: &DbInner) -> Vec<f64> {
    let absent: Vec<u64> =
        (0..NUM_LEVELS).map(|l| inner.reads.level(l).absent_key_lookups()).collect();
    filter_plan::lookup_weights(inner.reads.gets(), &absent)
}

/// The shape the next filter of `inner`'s current tree is planned in: `v` with
/// `l0_runs` L0 runs of the last flushed memtable's keys and the observed lookup weights.
pub(crate) fn live_shape(
    inner: &DbInner,
    v: &Version,
    l0_runs: usize,
    writes: Writes,
) -> TreeShape {
    let l0_run_keys = inner.l0_run_keys.load(std::sync::atomic::Ordering::Relaxed);
    tree_shape(&inner.opts, v, (l0_runs, l0_run_keys), absent_share(inner), None, writes)
}
