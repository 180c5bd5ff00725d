//! The filter of a compaction output: which kind and FPR a level gets (fixed per-level budgets
//! or Monkey allocation), and its construction from the collected key hashes with the Bloom
//! fallback.
//!
//! # Monkey allocation
//! Dayan, Athanassoulis and Idreos, "Monkey: Optimal Navigable Key-Value Store", SIGMOD 2017.
//! A lookup of a missing key probes one filter per level (levels >= 1 are sorted runs) and
//! reads a block for every false positive, so its expected wasted reads are `sum_i p_i`. A
//! filter of `n_i` keys at FPR `p_i` costs `c n_i log2(1/p_i)` bits (`c` per kind). Minimising
//! `sum_i p_i` subject to `sum_i c n_i log2(1/p_i) = M` with a Lagrange multiplier `λ`:
//! `1 - λ c n_i / (p_i ln 2) = 0`, so `p_i = K n_i` for one constant `K`: each level's FPR is
//! proportional to its entries, and the small upper levels get the low FPRs. `K` follows from
//! the budget: `sum_i n_i log2(1/(K n_i)) = M / c`, i.e.
//! `log2(1/K) = (M / c + sum_i n_i log2 n_i) / N` with `N = sum_i n_i`. A level with `K n_i >= 1`
//! gets no filter (`p_i = 1`, zero bits) and `K` is solved again over the others.

use super::allocation::{allocate, TreeShape};
use super::picker::HasMeta;
use crate::error::Result;
use crate::filter::prelude::*;
use crate::filter::{
    BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom, BumpedRibbon,
    PackedBinaryFuse, Ribbon, StandardBloom, Xor16, Xor8,
};
use crate::manifest::FileMeta;
use crate::options::{
    CompactionOptions, FilterAllocation, FilterConfig, FilterPolicy, LevelBudget, StaticFilterKind,
};

/// Smallest FPR any level is given (Ribbon's lower bound).
const MIN_FPR: f64 = 1.0 / 4_294_967_296.0;

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

/// Entries a compaction moves from one level to the next (its inputs from the upper level; the
/// lower level's inputs are rewritten in place), so that filters are planned on the tree as
/// the compaction or trivial move leaves it.
#[derive(Debug, Clone, Copy)]
pub struct LevelMove {
    /// The level the entries leave.
    pub from: usize,
    /// The level they join.
    pub to: usize,
    /// Entries moved.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Entries and bytes of each level of `levels`, after `moved` if given: what
/// [`level_weights`] weighs, for the compaction job and the picker alike.
pub fn level_counts<F: HasMeta>(
    levels: &[Vec<F>],
    moved: Option<LevelMove>,
) -> (Vec<u64>, Vec<u64>) {
    let sum = |l: &Vec<F>, f: fn(&FileMeta) -> u64| l.iter().map(|g| f(g.meta())).sum();
    let mut entries: Vec<u64> = levels.iter().map(|l| sum(l, |m| m.entries)).collect();
    let mut bytes: Vec<u64> = levels.iter().map(|l| sum(l, |m| m.size)).collect();
    if let Some(m) = moved {
        m.apply(&mut entries, &mut bytes);
    }
    (entries, bytes)
}

impl LevelMove {
    /// Moves the entries and bytes between per-level counts.
    fn apply(&self, entries: &mut [u64], bytes: &mut [u64]) {
        if self.from >= entries.len() || self.to >= entries.len() {
            return;
        }
        entries[self.from] = entries[self.from].saturating_sub(self.entries);
        bytes[self.from] = bytes[self.from].saturating_sub(self.bytes);
        entries[self.to] += self.entries;
        bytes[self.to] += self.bytes;
    }
}

/// Monkey's weight of each level (index 0, L0, is ignored): the entries a level holds at
/// capacity, `target_bytes(l) / bytes_per_entry`, for the levels above the deepest non-empty
/// one; for the deepest, its actual entries but at least the capacity of the level above it
/// (the last level is rarely full, and a young last level must not be given the small FPRs of
/// a small level). Capacities rather than the current counts make a level's FPR stable while
/// its files are rewritten one at a time, as Monkey's analysis assumes levels at capacity.
pub fn level_weights(copts: &CompactionOptions, entries: &[u64], bytes: &[u64]) -> Vec<f64> {
    let n: u64 = entries.iter().skip(1).sum();
    let b: u64 = bytes.iter().skip(1).sum();
    if n == 0 {
        return entries.iter().map(|&e| e as f64).collect();
    }
    let per_entry = (b as f64 / n as f64).max(1.0);
    let deepest = (1..entries.len()).rev().find(|&l| entries[l] > 0).unwrap_or(1);
    let cap = |l: usize| copts.level_target_bytes(l) / per_entry;
    (0..entries.len())
        .map(|l| match l {
            0 => 0.0,
            l if l < deepest => cap(l),
            l if l == deepest && l > 1 => (entries[l] as f64).max(cap(l - 1)),
            l if l == deepest => entries[l] as f64,
            _ => 0.0,
        })
        .collect()
}

/// The filter of compacted level `level >= 1` in a tree of `shape` (read by Monkey and
/// all-runs allocation; see [`level_weights`]).
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
            p.get(level - 1).copied().unwrap_or(1.0)
        }
        FilterAllocation::AllRuns { bits_per_key } => {
            let a = allocate(shape, policy.flush, kind, *bits_per_key, false);
            a.level_fprs.get(level).copied().unwrap_or(1.0)
        }
        FilterAllocation::SkewAware { bits_per_key } => {
            let a = allocate(shape, policy.flush, kind, *bits_per_key, true);
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

/// The filter of L0 files in a tree of `shape`: the policy's flush filter, with its bits per
/// key from the allocation under [`FilterAllocation::AllRuns`] and `SkewAware`.
pub fn flush_filter(policy: &FilterPolicy, shape: &TreeShape) -> FilterConfig {
    let (bits_per_key, weighted) = match policy.allocation {
        FilterAllocation::AllRuns { bits_per_key } => (bits_per_key, false),
        FilterAllocation::SkewAware { bits_per_key } => (bits_per_key, true),
        _ => return policy.flush,
    };
    let shape = planned_shape(policy, shape);
    let a = allocate(&shape, policy.flush, policy.compaction, bits_per_key, weighted);
    policy.flush.with_bits_per_key(a.l0_bits_per_key)
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

/// Monkey's FPR per level for levels of `entries[i]` keys, a total of `bits_per_key` filter
/// bits per key over all of them and `c` bits per key per bit of `log2(1/p)`: `p_i = K n_i`
/// capped at 1 (module documentation). Empty levels get `p = K` (what a first file would get
/// if it were tiny), so a level that is about to be written is never left unfiltered.
pub fn monkey_fprs(entries: &[f64], bits_per_key: f64, c: f64) -> Vec<f64> {
    let total: f64 = entries.iter().sum();
    let mut fprs = vec![1.0; entries.len()];
    if total <= 0.0 || c <= 0.0 {
        return vec![2f64.powf(-bits_per_key / c.max(1e-9)); entries.len()];
    }
    let memory = bits_per_key * total / c; // sum of n_i log2(1/p_i) to spend
    let mut active: Vec<usize> = (0..entries.len()).filter(|&i| entries[i] > 0.0).collect();
    let mut log2_inv_k = 0.0;
    loop {
        let n: f64 = active.iter().map(|&i| entries[i]).sum();
        if n <= 0.0 {
            break;
        }
        let s: f64 = active.iter().map(|&i| entries[i] * entries[i].log2()).sum();
        log2_inv_k = (memory + s) / n;
        // Levels whose FPR would reach 1 drop out (zero bits) and K is solved again.
        let before = active.len();
        active.retain(|&i| log2_inv_k - entries[i].log2() > 0.0);
        if active.len() == before {
            break;
        }
    }
    for &i in &active {
        fprs[i] = 2f64.powf(entries[i].log2() - log2_inv_k);
    }
    for (i, p) in fprs.iter_mut().enumerate() {
        if entries[i] <= 0.0 {
            *p = 2f64.powf(-log2_inv_k).min(1.0);
        }
    }
    fprs
}

/// Builds the serialized filter `lf` describes from `hashes`. A static build that fails (after
/// its own retries) falls back to a blocked Bloom filter at the same bits per key; the second
/// value says whether that happened. `None` kind gives `Ok(None)`.
pub fn build_filter(lf: LevelFilter, hashes: &[u64]) -> Result<Option<(Vec<u8>, bool)>> {
    let attempt = || -> Result<Vec<u8>> {
        let fpr = lf.fpr;
        let n = hashes.len() as u64;
        Ok(match lf.kind {
            StaticFilterKind::None => unreachable!("handled by the caller"),
            StaticFilterKind::Ribbon => {
                Ribbon::with_false_pos(fpr.clamp(MIN_FPR, 0.5)).build(hashes)?.to_bytes()
            }
            StaticFilterKind::BumpedRibbon => {
                BumpedRibbon::with_false_pos(fpr.clamp(MIN_FPR, 0.5)).build(hashes)?.to_bytes()
            }
            StaticFilterKind::BinaryFuse8 => BinaryFuse8::build(hashes)?.to_bytes(),
            StaticFilterKind::BinaryFuse16 => BinaryFuse16::build(hashes)?.to_bytes(),
            StaticFilterKind::BinaryFuse4Wise8 => BinaryFuse4Wise8::build(hashes)?.to_bytes(),
            StaticFilterKind::BinaryFuse4Wise16 => BinaryFuse4Wise16::build(hashes)?.to_bytes(),
            StaticFilterKind::PackedBinaryFuse => {
                PackedBinaryFuse::build(hashes, PackedBinaryFuse::bits_for_fpr(fpr))?.to_bytes()
            }
            StaticFilterKind::Xor8 => Xor8::build(hashes)?.to_bytes(),
            StaticFilterKind::Xor16 => Xor16::build(hashes)?.to_bytes(),
            StaticFilterKind::BlockedBloom => {
                let mut f = BlockedBloom::with_false_pos(fpr.clamp(1e-9, 0.5)).expected_items(n)?;
                f.insert_batch(hashes);
                f.to_bytes()
            }
            StaticFilterKind::StandardBloom => {
                let mut f =
                    StandardBloom::with_false_pos(fpr.clamp(1e-9, 0.5)).expected_items(n)?;
                f.insert_batch(hashes);
                f.to_bytes()
            }
        })
    };
    if lf.kind == StaticFilterKind::None {
        return Ok(None);
    }
    with_fallback(attempt, lf.bits_per_key(), hashes).map(Some)
}

/// Runs `attempt`; on failure builds a blocked Bloom filter of `bits_per_key` (at least 1) over
/// `hashes`. Returns the bytes and whether the fallback was used.
pub fn with_fallback(
    attempt: impl FnOnce() -> Result<Vec<u8>>,
    bits_per_key: f64,
    hashes: &[u64],
) -> Result<(Vec<u8>, bool)> {
    match attempt() {
        Ok(bytes) => Ok((bytes, false)),
        Err(_) => {
            let mut f = BlockedBloom::with_bits_per_key(bits_per_key.max(1.0))
                .expected_items(hashes.len() as u64)?;
            f.insert_batch(hashes);
            Ok((f.to_bytes(), true))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{FilterKind, FilterView};

    #[test]
    fn monkey_fpr_is_proportional_to_entries_and_spends_the_budget() {
        let entries = [1e4, 1e5, 1e6];
        let (bpk, c) = (8.0, 1.05);
        let p = monkey_fprs(&entries, bpk, c);
        // Proportionality p_i / n_i constant (the Lagrangian optimum).
        assert!((p[1] / p[0] - 10.0).abs() < 1e-9 && (p[2] / p[1] - 10.0).abs() < 1e-9);
        // Memory identity: sum c n_i log2(1/p_i) = bpk * N.
        let spent: f64 = entries.iter().zip(&p).map(|(n, p)| c * n * (1.0 / p).log2()).sum();
        let total: f64 = entries.iter().sum();
        assert!((spent - bpk * total).abs() / (bpk * total) < 1e-9);
        // Monkey beats the uniform split at equal memory: uniform p = 2^(-bpk / c).
        let uniform = 3.0 * 2f64.powf(-bpk / c);
        assert!(p.iter().sum::<f64>() < uniform, "{p:?} vs {uniform}");
    }

    #[test]
    fn monkey_caps_levels_at_fpr_one() {
        // A tiny budget: the largest level would exceed FPR 1, so it goes unfiltered and the
        // whole budget goes to the small level.
        let p = monkey_fprs(&[1e3, 1e6], 0.001, 1.05);
        assert_eq!(p[1], 1.0);
        let spent = 1.05 * 1e3 * (1.0 / p[0]).log2();
        assert!((spent - 0.001 * 1.001e6).abs() < 1e-6 * spent, "{p:?}");
    }

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

    #[test]
    fn packed_fuse_levels_get_the_nearest_whole_width_and_build_it() {
        // Pebble's widths as per-level FPRs, and a budget between widths: 10 bits per key at
        // c = 1.075 is FPR 2^-9.30, so width 9.
        let policy = FilterPolicy {
            compaction: StaticFilterKind::PackedBinaryFuse,
            allocation: FilterAllocation::PerLevel(vec![
                LevelBudget::Fpr(2f64.powi(-16)),
                LevelBudget::Fpr(2f64.powi(-12)),
                LevelBudget::Fpr(0.011),
                LevelBudget::BitsPerKey(10.0),
            ]),
            ..FilterPolicy::default()
        };
        let hashes = crate::rng::SplitMix64::new(4).hashes(3000);
        for (level, width) in [(1, 16), (2, 12), (3, 7), (4, 9), (6, 9)] {
            let lf = level_filter(&policy, level, &no_shape());
            assert_eq!(lf.fpr, 2f64.powi(-width), "L{level}");
            let (bytes, _) = build_filter(lf, &hashes).unwrap().unwrap();
            assert_eq!(FilterView::parse(&bytes).unwrap().parameter_fpr(), Some(lf.fpr));
        }
        // Monkey's continuous FPRs become widths too: smaller levels, wider fingerprints.
        let monkey =
            FilterPolicy { allocation: FilterAllocation::Monkey { bits_per_key: 8.0 }, ..policy };
        // An FPR nearer no filter than one bit (above 2^-0.5) leaves the level unfiltered.
        let loose = FilterPolicy {
            allocation: FilterAllocation::PerLevel(vec![LevelBudget::Fpr(0.75)]),
            ..policy.clone()
        };
        assert_eq!(level_filter(&loose, 1, &no_shape()).kind, StaticFilterKind::None);
        let shape = TreeShape { levels: vec![0.0, 1e4, 1e5, 1e6], ..no_shape() };
        let fprs: Vec<f64> = (1..=3).map(|l| level_filter(&monkey, l, &shape).fpr).collect();
        assert!(fprs.iter().all(|p| (1.0 / p).log2().fract() == 0.0), "{fprs:?}");
        assert!(fprs[0] < fprs[1] && fprs[1] < fprs[2], "{fprs:?}");
    }

    #[test]
    fn every_kind_builds_and_a_failed_static_build_falls_back_to_blocked_bloom() {
        let hashes = crate::rng::SplitMix64::new(3).hashes(5000);
        for kind in StaticFilterKind::FILTERS {
            let lf = LevelFilter { kind, fpr: 0.01 };
            let (bytes, fell_back) = build_filter(lf, &hashes).unwrap().unwrap();
            assert!(!fell_back);
            let v = FilterView::parse(&bytes).unwrap();
            assert!(hashes.iter().all(|&h| v.contains_hash(h)), "{kind:?}");
        }
        assert!(build_filter(LevelFilter { kind: StaticFilterKind::None, fpr: 1.0 }, &hashes)
            .unwrap()
            .is_none());
        let failing = || Err(crate::Error::FilterFull("forced".into()));
        let (bytes, fell_back) = with_fallback(failing, 7.0, &hashes).unwrap();
        assert!(fell_back);
        let v = FilterView::parse(&bytes).unwrap();
        assert_eq!(v.kind(), FilterKind::BlockedBloom);
        assert!(hashes.iter().all(|&h| v.contains_hash(h)));
    }
}
