//! The filter plan: which filter each run of the tree gets (kind, bits per key, FPR), as pure
//! functions of a [`TreeShape`] and a [`FilterPolicy`], in the manner of mini-lsm's
//! `generate_compaction_task(&LsmStorageState)`. Nothing here reads a file, a lock or a
//! counter: the engine describes the tree (src/db/plan.rs builds the shape from a version and
//! the read counters; the picker builds its own for trivial moves) and asks.
//!
//! - [`plan`]: the whole tree's filters at once (what `Db::stats` reports as configured);
//!   [`level_filter`] and [`l0_filter`] the one a compaction output or a flush needs.
//! - [`shape`]: the tree's description ([`TreeShape`], [`tree_shape`], [`l0_runs_beside`]).
//! - [`monkey`]: Monkey's per-level FPRs and the levels' weights.
//! - [`all_runs`]: one budget over every run, L0 included (`AllRuns`), weighted by the lookups
//!   that miss each level (`SkewAware`).
//! - [`flush`]: the memtable's and L0 files' two-bit filters.
//!
//! What a bit of `log2(1/FPR)` costs each kind is the filters' own cost model
//! (`StaticFilterKind::bits_per_log2{,_at}`); building a planned filter is
//! src/compaction/filter.rs's `build_filter`.

pub mod all_runs;
pub mod flush;
pub mod monkey;
pub mod shape;

pub use all_runs::{flush_filter_bits, lookup_weights};
pub use flush::memtable_filter_bits;
pub use monkey::LevelMove;
pub use shape::{l0_runs_beside, move_shape, tree_shape, LevelCounts, TreeShape, Writes};

use crate::filter::prelude::*;
use crate::filter::{BlockedBloom, PackedBinaryFuse, StandardBloom, TwoBitBloom};
use crate::options::{FilterAllocation, FilterConfig, FilterPolicy, LevelBudget, StaticFilterKind};
use all_runs::allocate;
use monkey::monkey_fprs;

/// Smallest FPR any level is given (Ribbon's lower bound).
pub const MIN_FPR: f64 = 1.0 / 4_294_967_296.0;

/// The filter one output level gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelFilter {
    /// Kind (`StaticFilterKind::None`: no filter).
    pub kind: StaticFilterKind,
    /// Configured false-positive rate (1 without a filter).
    pub fpr: f64,
}

impl LevelFilter {
    /// Whether a file built with this filter may stand where `planned` is wanted without being
    /// rewritten (a trivial move): the same kind, at least as selective. A moved file then
    /// costs no extra block reads, only the memory of the smaller FPR: under Monkey and
    /// all-runs allocation deeper levels plan larger FPRs, and insisting on equality would
    /// rewrite every file a sequential load moves down.
    pub fn serves_for(&self, planned: &LevelFilter) -> bool {
        self.kind == planned.kind && self.fpr <= planned.fpr * (1.0 + 1e-9)
    }

    /// Bits per key this filter is expected to spend: `c log2(1/fpr)`.
    pub fn bits_per_key(&self) -> f64 {
        if self.kind == StaticFilterKind::None || self.fpr >= 1.0 {
            0.0
        } else {
            self.kind.bits_per_log2() * (1.0 / self.fpr).log2()
        }
    }
}

/// The filter of L0 files: the flush filter's configuration, and whether a two-bit filter is
/// sized to the power of two nearest its bits (its share under `FilterAllocation::AllRuns` or
/// `SkewAware`, [`flush_filter_bits`]) rather than rounded up (a configured bits per key, a
/// minimum).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct L0Filter {
    /// The flush filter and its bits per key.
    pub config: FilterConfig,
    /// Sized to the nearest power of two of 32-bit words.
    pub nearest: bool,
}

impl L0Filter {
    /// The FPR this filter is configured for: its kind's theoretical FPR at its bits per key
    /// (`None` without a filter).
    pub fn fpr(&self) -> Option<f64> {
        match self.config {
            FilterConfig::None => None,
            FilterConfig::TwoBitBloom { bits_per_key: b } => {
                Some(<TwoBitBloom as BloomShape>::theoretical_fpr(b, 2))
            }
            FilterConfig::BlockedBloom { bits_per_key: b } => {
                Some(<BlockedBloom as BloomShape>::theoretical_fpr(
                    b,
                    <BlockedBloom as BloomShape>::probes_for_bits_per_key(b),
                ))
            }
            FilterConfig::StandardBloom { bits_per_key: b } => Some(classic_bloom_fpr(b)),
        }
    }
}

/// The filters of every run of a tree: what [`plan`] decides.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPlan {
    /// L0 files' (flush) filter.
    pub l0: L0Filter,
    /// Each level's compaction filter (index 0: what an output written at L0 would get, that
    /// of L1).
    pub levels: Vec<LevelFilter>,
}

impl FilterPlan {
    /// The FPR planned for `level`: the flush filter's theoretical FPR on L0, the compaction
    /// filter's on deeper levels; `None` without a filter.
    pub fn configured_fpr(&self, level: usize) -> Option<f64> {
        if level == 0 {
            return self.l0.fpr();
        }
        let lf = self.levels.get(level)?;
        (lf.kind != StaticFilterKind::None).then_some(lf.fpr)
    }
}

/// The filter of every run of a tree of `shape` (one [`LevelFilter`] per entry of
/// `shape.levels`) under `policy`.
pub fn plan(policy: &FilterPolicy, shape: &TreeShape) -> FilterPlan {
    FilterPlan {
        l0: l0_filter(policy, shape),
        levels: (0..shape.levels.len()).map(|l| level_filter(policy, l.max(1), shape)).collect(),
    }
}

/// The filter of compacted level `level >= 1` in a tree of `shape` (read by Monkey and
/// all-runs allocation; see [`monkey::level_weights`]).
pub fn level_filter(policy: &FilterPolicy, level: usize, shape: &TreeShape) -> LevelFilter {
    let kind = policy.compaction;
    if kind == StaticFilterKind::None {
        return LevelFilter { kind, fpr: 1.0 };
    }
    if policy.optimize_filters_for_hits && level >= deepest_level(shape) {
        return LevelFilter { kind: StaticFilterKind::None, fpr: 1.0 };
    }
    let shape = &planned_shape(policy, shape);
    if let Some(fpr) = kind.fixed_fpr() {
        return LevelFilter { kind, fpr };
    }
    let fpr = match &policy.allocation {
        FilterAllocation::PerLevel(list) => {
            let budget = list
                .get(level.saturating_sub(1))
                .or(list.last())
                .copied()
                .unwrap_or(LevelBudget::Fpr(0.01));
            match budget {
                LevelBudget::Fpr(p) => p,
                LevelBudget::BitsPerKey(b) => {
                    2f64.powf(-b / kind.bits_per_log2_at(shape.file_keys))
                }
            }
        }
        FilterAllocation::Monkey { bits_per_key } => {
            let levels: Vec<f64> = shape.levels.iter().skip(1).copied().collect();
            let c = kind.bits_per_log2_at(shape.file_keys);
            let p = monkey_fprs(&levels, *bits_per_key, c);
            p.get(level - 1).copied().unwrap_or(1.0).min(classic_bloom_fpr(*bits_per_key))
        }
        FilterAllocation::AllRuns { bits_per_key } => {
            let floor = classic_bloom_fpr(*bits_per_key);
            let a = allocate(shape, policy.flush, kind, *bits_per_key, false, Some(floor));
            a.level_fprs.get(level).copied().unwrap_or(1.0).min(floor)
        }
        FilterAllocation::SkewAware { bits_per_key } => {
            let a = allocate(shape, policy.flush, kind, *bits_per_key, true, None);
            a.level_fprs.get(level).copied().unwrap_or(1.0)
        }
    };
    if fpr >= 1.0 {
        return LevelFilter { kind: StaticFilterKind::None, fpr: 1.0 };
    }
    if kind == StaticFilterKind::PackedBinaryFuse {
        // The FPR the built filter has: that of the nearest whole fingerprint width, or no
        // filter when that is nearer than one bit (FPR above 2^-0.5).
        if fpr > std::f64::consts::FRAC_1_SQRT_2 {
            return LevelFilter { kind: StaticFilterKind::None, fpr: 1.0 };
        }
        let bits = PackedBinaryFuse::bits_for_fpr(fpr.max(MIN_FPR));
        return LevelFilter { kind, fpr: 2f64.powi(-(bits as i32)) };
    }
    LevelFilter { kind, fpr: fpr.max(MIN_FPR) }
}

/// The FPR of a classic Bloom filter of `bits_per_key` with its best whole number of probes:
/// the most any compacted level may get under a budget of `bits_per_key`
/// ([`FilterAllocation::AllRuns`], `Monkey`). Minimising the tree's wasted reads alone would
/// give the deepest level more than this when L0 or upper levels take a large share (a small
/// or growing tree); a user who configures RocksDB's 10 bits per key expects no file to filter
/// worse than RocksDB's (design.md#all-runs, "The floor").
pub fn classic_bloom_fpr(bits_per_key: f64) -> f64 {
    if bits_per_key <= 0.0 {
        return 1.0;
    }
    let probes = <StandardBloom as BloomShape>::probes_for_bits_per_key(bits_per_key);
    <StandardBloom as BloomShape>::theoretical_fpr(bits_per_key, probes)
}

/// The filter of L0 files in a tree of `shape`: the policy's flush filter, with its bits per
/// key from the allocation under [`FilterAllocation::AllRuns`] and `SkewAware`. Under `AllRuns`
/// and `Monkey` it is held to the floor the levels are ([`classic_bloom_fpr`] of the budget):
/// a two-bit filter that cannot reach it at its share becomes a blocked Bloom filter
/// ([`all_runs::allocate`], [`all_runs::floored`]).
pub fn flush_filter(policy: &FilterPolicy, shape: &TreeShape) -> FilterConfig {
    let (bits_per_key, weighted) = match policy.allocation {
        FilterAllocation::AllRuns { bits_per_key } => (bits_per_key, false),
        FilterAllocation::SkewAware { bits_per_key } => (bits_per_key, true),
        FilterAllocation::Monkey { bits_per_key } => {
            return all_runs::floored(policy.flush, classic_bloom_fpr(bits_per_key));
        }
        FilterAllocation::PerLevel(_) => return policy.flush,
    };
    let shape = planned_shape(policy, shape);
    let floor = (!weighted).then(|| classic_bloom_fpr(bits_per_key));
    allocate(&shape, policy.flush, policy.compaction, bits_per_key, weighted, floor).l0
}

/// The flush filter of L0 files in a tree of `shape` ([`flush_filter`]), and whether it is sized
/// to the nearest power of two ([`L0Filter::nearest`]).
pub fn l0_filter(policy: &FilterPolicy, shape: &TreeShape) -> L0Filter {
    let nearest = matches!(
        policy.allocation,
        FilterAllocation::AllRuns { .. } | FilterAllocation::SkewAware { .. }
    );
    L0Filter { config: flush_filter(policy, shape), nearest }
}

/// The deepest level of `shape` holding keys, at least 1 (an empty tree's first compaction
/// output is its deepest level).
fn deepest_level(shape: &TreeShape) -> usize {
    (1..shape.levels.len()).rev().find(|&l| shape.levels[l] > 0.0).unwrap_or(1)
}

/// `shape` as the policy's allocation plans it: with `optimize_filters_for_hits`, the deepest
/// level (which gets no filter) leaves the plan and its keys leave the budget.
fn planned_shape<'a>(
    policy: &FilterPolicy,
    shape: &'a TreeShape,
) -> std::borrow::Cow<'a, TreeShape> {
    if !policy.optimize_filters_for_hits {
        return std::borrow::Cow::Borrowed(shape);
    }
    let mut planned = shape.clone();
    let deepest = deepest_level(shape);
    planned.levels.iter_mut().skip(deepest).for_each(|keys| *keys = 0.0);
    std::borrow::Cow::Owned(planned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_shape() -> TreeShape {
        TreeShape {
            l0_runs: 0.0,
            l0_run_keys: 0.0,
            levels: vec![],
            absent_share: vec![],
            file_keys: f64::INFINITY,
        }
    }

    #[test]
    fn per_level_list_repeats_its_last_entry() {
        let policy = FilterPolicy {
            allocation: FilterAllocation::PerLevel(vec![
                LevelBudget::Fpr(0.05),
                LevelBudget::BitsPerKey(1.05 * 10.0),
            ]),
            compaction: StaticFilterKind::Ribbon,
            ..FilterPolicy::default()
        };
        assert_eq!(level_filter(&policy, 1, &no_shape()).fpr, 0.05);
        let deep = level_filter(&policy, 5, &no_shape());
        assert!((deep.fpr - 2f64.powi(-10)).abs() < 1e-12);
        let xor = FilterPolicy { compaction: StaticFilterKind::Xor8, ..policy };
        assert_eq!(level_filter(&xor, 2, &no_shape()).fpr, 1.0 / 256.0);
    }

    fn tree(levels: &[f64]) -> TreeShape {
        TreeShape { l0_runs: 2.0, l0_run_keys: 1e4, levels: levels.to_vec(), ..no_shape() }
    }

    #[test]
    fn the_plan_is_each_runs_filter_in_one_answer() {
        let shape = tree(&[0.0, 1e4, 1e5, 1e6]);
        for policy in [
            FilterPolicy::default(),
            FilterPolicy {
                allocation: FilterAllocation::Monkey { bits_per_key: 8.0 },
                ..FilterPolicy::default()
            },
            FilterPolicy {
                allocation: FilterAllocation::PerLevel(vec![LevelBudget::Fpr(0.01)]),
                ..FilterPolicy::default()
            },
        ] {
            let p = plan(&policy, &shape);
            assert_eq!(p.l0, l0_filter(&policy, &shape));
            assert_eq!(p.levels.len(), 4);
            assert_eq!(p.levels[0], level_filter(&policy, 1, &shape), "L0 outputs: L1's");
            for l in 1..4 {
                assert_eq!(p.levels[l], level_filter(&policy, l, &shape), "{policy:?} L{l}");
                assert_eq!(p.configured_fpr(l), Some(p.levels[l].fpr));
            }
        }
    }

    /// The unfloored split (skew-aware with every weight 1 is the all-runs optimum without the
    /// floor): two-bit L0 runs sized to the nearest power of two, bumped ribbon levels whose FPR
    /// grows with their keys (Monkey's rule), L0's FPR its two-bit curve's.
    #[test]
    fn all_runs_gives_l0_a_power_of_two_share_and_deeper_levels_larger_fprs() {
        let shape = tree(&[0.0, 1e4, 1e5, 1e6]);
        let unfloored = FilterPolicy {
            allocation: FilterAllocation::SkewAware { bits_per_key: 10.0 },
            ..FilterPolicy::default()
        };
        let p = plan(&unfloored, &shape);
        assert!(p.l0.nearest);
        let FilterConfig::TwoBitBloom { bits_per_key } = p.l0.config else { panic!("{p:?}") };
        let words = bits_per_key * shape.l0_run_keys / 32.0;
        assert!((words.log2() - words.log2().round()).abs() < 1e-9, "{words} words");
        let two_bit = <TwoBitBloom as BloomShape>::theoretical_fpr(bits_per_key, 2);
        assert_eq!(p.configured_fpr(0), Some(two_bit));
        let fprs: Vec<f64> = (1..4).map(|l| p.levels[l].fpr).collect();
        assert!(p.levels[1..].iter().all(|lf| lf.kind == StaticFilterKind::BumpedRibbon));
        assert!(fprs[0] < fprs[1] && fprs[1] < fprs[2], "{fprs:?}");
        // A configured flush filter is rounded up, not snapped; under Monkey it is held to the
        // floor: two-bit at 10 bits per key (4.0%) misses 8 bits' 2.2%, a blocked Bloom filter
        // reaches it.
        let configured = FilterPolicy {
            allocation: FilterAllocation::PerLevel(vec![LevelBudget::Fpr(0.01)]),
            ..FilterPolicy::default()
        };
        let l0 = plan(&configured, &shape).l0;
        assert!(!l0.nearest);
        assert_eq!(l0.config, FilterConfig::TwoBitBloom { bits_per_key: 10.0 });
        let monkey = FilterPolicy {
            allocation: FilterAllocation::Monkey { bits_per_key: 8.0 },
            ..FilterPolicy::default()
        };
        let l0 = plan(&monkey, &shape).l0;
        let FilterConfig::BlockedBloom { bits_per_key } = l0.config else { panic!("{l0:?}") };
        let floor = classic_bloom_fpr(8.0);
        assert!(l0.fpr().unwrap() <= floor, "{l0:?}");
        // The fewest such bits: a tenth of a bit less misses the floor.
        let less = L0Filter { config: l0.config.with_bits_per_key(bits_per_key - 0.1), ..l0 };
        assert!(less.fpr().unwrap() > floor, "{less:?}");
        // A two-bit filter that already reaches the floor is kept: 40 bits per key, 0.4%.
        let wide =
            FilterPolicy { flush: FilterConfig::TwoBitBloom { bits_per_key: 40.0 }, ..monkey };
        assert_eq!(plan(&wide, &shape).l0.config, wide.flush);
    }

    /// The floor holds on L0 under the default policy: where the two-bit filter at L0's share
    /// would filter worse than a classic Bloom filter of the budget (at 10 bits per key it
    /// needs about 29 bits per key to reach 0.82%), L0 gets a blocked Bloom filter that
    /// reaches it, and the levels share what is left. Where L0's share is large enough, the
    /// two-bit filter stays: a small L0 beside a large tree.
    #[test]
    fn all_runs_holds_l0_to_the_floor() {
        let floor = classic_bloom_fpr(10.0);
        // L0 holds half the keys (the small growing tree): the two-bit share would be about
        // 16 bits per key, 1.9%.
        let p = plan(&FilterPolicy::default(), &tree(&[0.0, 2e4]));
        let FilterConfig::BlockedBloom { .. } = p.l0.config else { panic!("{p:?}") };
        assert!(p.configured_fpr(0).unwrap() <= floor, "{p:?}");
        // 20,000 L0 keys beside 1.1M: L0's share is past 100 bits per key, two-bit reaches it.
        let p = plan(&FilterPolicy::default(), &tree(&[0.0, 1e4, 1e5, 1e6]));
        let FilterConfig::TwoBitBloom { .. } = p.l0.config else { panic!("{p:?}") };
        assert!(p.configured_fpr(0).unwrap() <= floor, "{p:?}");
    }

    #[test]
    fn optimize_filters_for_hits_leaves_the_deepest_level_unfiltered() {
        let shape = tree(&[0.0, 1e4, 1e5, 1e6]);
        let policy = FilterPolicy { optimize_filters_for_hits: true, ..FilterPolicy::default() };
        let p = plan(&policy, &shape);
        assert_eq!(p.levels[3], LevelFilter { kind: StaticFilterKind::None, fpr: 1.0 });
        assert_eq!(p.configured_fpr(3), None);
        assert!(p.levels[1..3].iter().all(|lf| lf.kind == StaticFilterKind::BumpedRibbon));
        // The deepest level leaves the plan: the others are planned as in a tree without it.
        let without = plan(&FilterPolicy::default(), &tree(&[0.0, 1e4, 1e5, 0.0]));
        assert_eq!(p.levels[1..3], without.levels[1..3]);
    }

    #[test]
    fn no_filters_plan_no_filters() {
        let policy = FilterPolicy {
            flush: FilterConfig::None,
            compaction: StaticFilterKind::None,
            ..FilterPolicy::default()
        };
        let p = plan(&policy, &tree(&[0.0, 1e4, 1e5]));
        assert!((0..3).all(|l| p.configured_fpr(l).is_none()), "{p:?}");
    }

    #[test]
    fn the_shape_counts_l0_at_least_at_its_mean_occupancy_and_prices_output_files() {
        let copts = crate::options::CompactionOptions::default();
        let counts = LevelCounts { entries: vec![0, 1000, 0, 0], bytes: vec![0, 100_000, 0, 0] };
        let s = tree_shape(&copts, &counts, (0, 500), vec![], Writes::Ongoing);
        let floor = copts.l0_compaction_trigger.saturating_sub(1) as f64 / 2.0;
        assert_eq!(s.l0_runs, floor);
        let full = tree_shape(&copts, &counts, (9, 500), vec![], Writes::Ongoing);
        assert_eq!(full.l0_runs, 9.0f64.max(floor));
        // A settled tree counts the L0 files it has, none here.
        assert_eq!(tree_shape(&copts, &counts, (0, 500), vec![], Writes::Settled).l0_runs, 0.0);
        assert_eq!(tree_shape(&copts, &counts, (2, 500), vec![], Writes::Settled).l0_runs, 2.0);
        assert_eq!(s.l0_run_keys, 500.0);
        // 100 bytes per entry: a target file holds target_file_size / 100 keys.
        assert_eq!(s.file_keys, copts.target_file_size as f64 / 100.0);
        let empty = LevelCounts { entries: vec![0; 4], bytes: vec![0; 4] };
        let empty_shape = tree_shape(&copts, &empty, (0, 0), vec![], Writes::Settled);
        assert_eq!(empty_shape.file_keys, f64::INFINITY);
        assert_eq!(l0_runs_beside(3, 2, 1), 2);
        assert_eq!(l0_runs_beside(1, 4, 0), 0);
        // A move: the entries leave one level for the next.
        let moved = counts.after(Some(LevelMove { from: 1, to: 2, entries: 400, bytes: 40_000 }));
        assert_eq!(moved.entries, vec![0, 600, 400, 0]);
        assert_eq!(moved.bytes, vec![0, 60_000, 40_000, 0]);
    }

    /// The default policy on the tree shapes of design.md#all-runs's table: a settled tree
    /// spends its budget on its files (within 5%), and no shape gives a level a worse FPR than
    /// a classic Bloom filter of the budget.
    #[test]
    fn the_default_budget_means_what_it_says_on_every_shape() {
        let copts = crate::options::CompactionOptions::default();
        let policy = FilterPolicy::default();
        let budget = 10.0;
        let bloom = classic_bloom_fpr(budget);
        // A classic Bloom filter of 10 bits per key, 7 probes: (1 - e^(-7/10))^7 = 0.00819.
        assert!((bloom - 0.00819).abs() < 1e-4, "{bloom}");
        // 100-byte entries; a memtable's worth of keys per L0 run.
        let shape_of = |levels: &[u64], l0: usize, run_keys: u64, writes: Writes| {
            let counts = LevelCounts {
                entries: levels.to_vec(),
                bytes: levels.iter().map(|n| n * 100).collect(),
            };
            tree_shape(&copts, &counts, (l0, run_keys), vec![], writes)
        };
        let compacted =
            |keys: u64| shape_of(&[0, keys, 0, 0, 0, 0, 0], 0, 600_000, Writes::Settled);
        for keys in [20_000, 1_000_000, 50_000_000] {
            let s = compacted(keys);
            let lf = level_filter(&policy, 1, &s);
            let c = lf.kind.bits_per_log2_at(s.file_keys);
            let spent = c * (1.0 / lf.fpr).log2();
            assert!((spent / budget - 1.0).abs() < 0.05, "{keys} keys: {spent} bits/key");
            assert!(lf.fpr <= bloom, "{keys} keys: {lf:?}");
        }
        let shapes = [
            // Growing: L0 at its mean occupancy beside small levels (the 20K-key complaint).
            shape_of(&[0, 20_000, 0, 0, 0, 0, 0], 0, 600_000, Writes::Ongoing),
            shape_of(&[1_200_000, 1_000_000, 0, 0, 0, 0, 0], 2, 600_000, Writes::Ongoing),
            // Settled over several levels, and with L0 files left behind.
            shape_of(&[0, 100_000, 1_000_000, 10_000_000, 0, 0, 0], 0, 600_000, Writes::Settled),
            shape_of(&[1_800_000, 0, 1_000_000, 0, 0, 0, 0], 3, 600_000, Writes::Settled),
        ];
        for s in &shapes {
            for l in 1..s.levels.len() {
                let lf = level_filter(&policy, l, s);
                assert!(lf.fpr <= bloom, "level {l} of {s:?}: {lf:?}");
            }
            // L0 too, where the shape has L0 runs (a growing tree at least their mean).
            let l0 = l0_filter(&policy, s);
            if s.l0_runs > 0.0 {
                assert!(l0.fpr().is_some_and(|p| p <= bloom), "L0 of {s:?}: {l0:?}");
            }
            // The plan spends at most the budget plus what the floor costs: each run lifted
            // to the floor spends at most its kind's bits at the floor.
            let l0_keys = s.l0_runs * s.l0_run_keys;
            let mut spent = l0_keys * l0.config.bits_per_key();
            for (l, &keys) in s.levels.iter().enumerate().skip(1) {
                let lf = level_filter(&policy, l, s);
                spent += keys * lf.kind.bits_per_log2_at(s.file_keys) * (1.0 / lf.fpr).log2();
            }
            let keys = l0_keys + s.levels.iter().skip(1).sum::<f64>();
            assert!(spent / keys <= budget * 1.05, "{s:?}: {} bits/key", spent / keys);
        }
    }

    #[test]
    fn a_memtable_filter_is_kept_only_at_the_planned_size() {
        // Nearest: exactly the size a rebuild would have.
        let planned = flush_filter_bits(10.0, 1000);
        assert!(flush::two_bit_as_planned(10.0, true, (planned, 0.0), 1000));
        assert!(!flush::two_bit_as_planned(10.0, true, (planned * 2, 0.0), 1000));
        // Configured: FPR no worse, size at most twice what the keys need.
        let fpr = <TwoBitBloom as BloomShape>::theoretical_fpr(10.0, 2);
        assert!(flush::two_bit_as_planned(10.0, false, (20_000, fpr), 1000));
        assert!(!flush::two_bit_as_planned(10.0, false, (20_001, fpr), 1000));
        assert!(!flush::two_bit_as_planned(10.0, false, (10_000, fpr * 1.01), 1000));
        // The memtable's filter follows the L0 plan, at 16 bits per key without a two-bit one.
        let shape = tree(&[0.0, 1e4, 1e5]);
        let policy = FilterPolicy {
            allocation: FilterAllocation::SkewAware { bits_per_key: 10.0 },
            ..FilterPolicy::default()
        };
        let FilterConfig::TwoBitBloom { bits_per_key } = l0_filter(&policy, &shape).config else {
            panic!()
        };
        assert_eq!(
            memtable_filter_bits(&policy, &shape, 5000),
            flush_filter_bits(bits_per_key, 5000)
        );
        let blocked = FilterPolicy {
            flush: FilterConfig::BlockedBloom { bits_per_key: 10.0 },
            ..FilterPolicy::default()
        };
        assert_eq!(memtable_filter_bits(&blocked, &shape, 5000), 5000 * 16);
        // So does it where the floor gives L0 a blocked Bloom filter.
        assert_eq!(memtable_filter_bits(&FilterPolicy::default(), &shape, 5000), 5000 * 16);
    }
}
