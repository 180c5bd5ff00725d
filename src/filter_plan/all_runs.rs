//! Filter memory over every run of the tree, L0 included: `FilterAllocation::AllRuns`, and
//! `FilterAllocation::SkewAware`, the same split with each level weighted by the lookups that
//! miss it (design.md#all-runs).
//!
//! A lookup of a missing key probes one filter per run (each L0 file, then one file per
//! sorted level) and reads a block for each false positive, so its expected wasted reads are
//! `sum_r p_r`. Run `r` holds `n_r` keys; its filter kind turns `b_r` bits per key into
//! `p_r = f_r(b_r)`. Minimising `sum_r f_r(b_r)` subject to `sum_r n_r b_r = M` with a
//! Lagrange multiplier `λ` gives `-f_r'(b_r) = λ n_r` for every run that gets a filter: the
//! FPR's slope per bit of each run matches its size. For the static kinds
//! `f(b) = 2^(-b / c)`, so `p_r = λ n_r c / ln 2`, Monkey's rule (`p ∝ n`), and the blocked
//! and standard Bloom flush filters are taken as such curves too. The default flush filter
//! is a two-bit Bloom filter whose FPR falls much more slowly with memory (its `f(b)` flattens
//! past about 20 bits per key, since it sets only two bits per key), so its runs are solved
//! on its own curve, `BloomShape::theoretical_fpr` tabulated ([`TwoBitCurve`]). How many L0
//! runs the shape counts is [`super::tree_shape`]'s rule.
//!
//! Kinds whose FPR is fixed by their fingerprint width (binary fuse, xor) keep it; the other
//! runs share what is left. The memtable's two-bit filter has a power-of-two number of words,
//! so L0's share is snapped to the power of two below or above it (whichever costs less, the
//! levels solved again with the rest) and L0 filters are sized to the power of two nearest
//! that share for the keys they really hold (`flush_filter_bits`).
//!
//! Under `AllRuns` every run, L0's included, is held to a floor: no worse than a classic Bloom
//! filter of the budget. A two-bit L0 share that misses it is moved to a blocked Bloom curve
//! ([`allocate`]'s `floor`; [`floored`] for `Monkey`, whose budget leaves L0 out).

use super::TreeShape;
use crate::filter::prelude::*;
use crate::filter::TwoBitBloom;
use crate::options::{FilterConfig, StaticFilterKind};

/// Lookups a skew-aware weight counts as if they had missed every level, so that a few early
/// lookups cannot strip a level of its filter: the weight moves from 1 towards the observed
/// share as lookups accumulate, half-way after this many.
pub const WEIGHT_PRIOR_LOOKUPS: f64 = 10_000.0;

/// Each level's weight from what lookups have asked it: `(absent_l + P) / (lookups + P)` with
/// `absent_l` the lookups that asked level `l` about a key it does not hold (filtered or not),
/// `lookups` the point lookups, and `P` = [`WEIGHT_PRIOR_LOOKUPS`] pseudo-lookups of missing
/// keys. Between 0 and 1 when a level is probed at most once per lookup (one file per sorted
/// level); clamped there.
pub fn lookup_weights(lookups: u64, absent_per_level: &[u64]) -> Vec<f64> {
    let denominator = lookups as f64 + WEIGHT_PRIOR_LOOKUPS;
    absent_per_level
        .iter()
        .map(|&a| ((a as f64 + WEIGHT_PRIOR_LOOKUPS) / denominator).clamp(0.0, 1.0))
        .collect()
}

/// Most bits per key a two-bit filter is given (static kinds: `c * 32`, FPR 2^-32).
const MAX_TWO_BIT_BITS: f64 = 256.0;

/// How one run's FPR falls with its bits per key.
#[derive(Debug, Clone, Copy)]
enum Curve {
    /// `2^(-b / c)` with the kind's `c` at the tree's file size (the static kinds, and the
    /// blocked and standard Bloom flush filters, whose curves this fits within a few percent at
    /// their optimal probes).
    Exponential(f64),
    /// The two-bit Bloom filter: two bits in one 32-bit word, far from exponential.
    TwoBit,
}

impl Curve {
    /// The curve of a flush filter kind (`None` for no flush filter).
    fn of_flush(flush: FilterConfig) -> Option<Curve> {
        match flush {
            FilterConfig::None => None,
            FilterConfig::TwoBitBloom { .. } => Some(Curve::TwoBit),
            FilterConfig::BlockedBloom { .. } => {
                Some(Curve::Exponential(StaticFilterKind::BlockedBloom.bits_per_log2()))
            }
            FilterConfig::StandardBloom { .. } => {
                Some(Curve::Exponential(StaticFilterKind::StandardBloom.bits_per_log2()))
            }
        }
    }

    fn fpr(self, bits: f64) -> f64 {
        match self {
            _ if bits <= 0.0 => 1.0,
            Curve::Exponential(c) => 2f64.powf(-bits / c).min(1.0),
            // Below half a bit per key the filter is nearly all ones (FPR 0.94; the table
            // starts there): call it no filter.
            Curve::TwoBit if bits < 0.5 => 1.0,
            Curve::TwoBit => two_bit().fpr(bits),
        }
    }

    fn max_bits(self) -> f64 {
        match self {
            Curve::Exponential(c) => 32.0 * c,
            Curve::TwoBit => MAX_TWO_BIT_BITS,
        }
    }

    /// The bits per key minimising `fpr(b) + lambda * keys * b` (0: no filter is cheaper).
    fn best_bits(self, lambda: f64, keys: f64) -> f64 {
        let slope = lambda * keys;
        let best = match self {
            // -f'(b) = (ln 2 / c) 2^(-b/c) = slope.
            Curve::Exponential(c) => c * (std::f64::consts::LN_2 / (c * slope)).log2(),
            Curve::TwoBit => {
                let b = two_bit().best_bits(slope);
                if self.fpr(b) + slope * b < 1.0 {
                    b
                } else {
                    0.0
                }
            }
        };
        best.clamp(0.0, self.max_bits())
    }
}

/// Steps per bit of [`TwoBitCurve`]'s table.
const TWO_BIT_STEPS: f64 = 64.0;

/// The two-bit filter's theoretical FPR on `[0.5, MAX_TWO_BIT_BITS]` bits per key, tabulated
/// once per process from `theoretical_fpr` (a Poisson sum of a few hundred `pow` calls): an
/// allocation evaluates the curve thousands of times, and every flush, rotation, compaction and
/// trivial-move check allocates. Between grid points (1/64 bit) it is interpolated linearly,
/// within 0.1% of the formula; the polyline of a convex curve is convex, so the minimum of
/// `fpr(b) + slope * b` lies at the grid point where the segments' slope falls to `slope`.
struct TwoBitCurve {
    fpr: Vec<f64>,
}

fn two_bit() -> &'static TwoBitCurve {
    static CURVE: std::sync::OnceLock<TwoBitCurve> = std::sync::OnceLock::new();
    CURVE.get_or_init(|| {
        let n = ((MAX_TWO_BIT_BITS - 0.5) * TWO_BIT_STEPS) as usize + 1;
        let at = |i: usize| 0.5 + i as f64 / TWO_BIT_STEPS;
        let fpr = (0..n)
            .map(|i| <TwoBitBloom as BloomShape>::theoretical_fpr(at(i), 2).min(1.0))
            .collect();
        TwoBitCurve { fpr }
    })
}

impl TwoBitCurve {
    fn fpr(&self, bits: f64) -> f64 {
        let last = self.fpr.len() - 1;
        let x = ((bits - 0.5) * TWO_BIT_STEPS).clamp(0.0, last as f64);
        let i = (x as usize).min(last - 1);
        let t = x - i as f64;
        self.fpr[i] * (1.0 - t) + self.fpr[i + 1] * t
    }

    /// The grid point minimising `fpr(b) + slope * b`: the first whose next segment falls by
    /// at most `slope` per bit (binary search: the segments' fall shrinks along the curve).
    fn best_bits(&self, slope: f64) -> f64 {
        let fall = |i: usize| (self.fpr[i] - self.fpr[i + 1]) * TWO_BIT_STEPS;
        let (mut lo, mut hi) = (0, self.fpr.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if fall(mid) > slope {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        0.5 + lo as f64 / TWO_BIT_STEPS
    }
}

/// One class of equal runs in the optimisation.
#[derive(Debug, Clone, Copy)]
struct Class {
    runs: f64,
    keys: f64,
    /// Share of lookups for which a false positive here costs a read (1 for every run when
    /// all lookups are taken to miss; skew-aware allocation observes it).
    weight: f64,
    curve: Curve,
    /// Bits per key fixed by the kind (fixed-width fingerprints), or free.
    fixed: Option<f64>,
}

/// Bits per key of each class for multiplier `lambda`. A run weighted `w` minimises `w f(b) + λ n b`, so it sees the multiplier `λ / w`; a run
/// with weight 0 is never asked about a key it lacks and gets no filter.
fn bits_at(classes: &[Class], lambda: f64) -> Vec<f64> {
    let free = |c: &Class| match c.weight {
        w if w <= 0.0 => 0.0,
        w => c.curve.best_bits(lambda / w, c.keys),
    };
    classes.iter().map(|c| c.fixed.unwrap_or_else(|| free(c))).collect()
}

/// Bits per key of each class spending `budget` bits in all (`sum runs * keys * bits`), and
/// the multiplier `λ` that gives them, by bisection on `ln λ` (the spend falls as `λ` grows).
fn solve(classes: &[Class], budget: f64) -> (Vec<f64>, f64) {
    let spend =
        |bits: &[f64]| -> f64 { classes.iter().zip(bits).map(|(c, b)| c.runs * c.keys * b).sum() };
    let (mut lo, mut hi) = (-120.0f64, 20.0f64);
    for _ in 0..50 {
        let mid = (lo + hi) / 2.0;
        if spend(&bits_at(classes, mid.exp())) > budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (bits_at(classes, hi.exp()), hi.exp())
}

/// What [`allocate`] decides.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// L0's flush filter at its bits per key: the policy's flush kind, or a blocked Bloom
    /// filter where the floor takes L0 off a two-bit one ([`allocate`]); `FilterConfig::None`
    /// without a flush filter.
    pub l0: FilterConfig,
    /// FPR of each level (index 0 unused; 1 for no filter).
    pub level_fprs: Vec<f64>,
}

/// Splits `bits_per_key` over every run of `shape` (module documentation): L0's runs filtered
/// by `flush`, levels 1 and deeper by `compaction` (a kind with a tunable FPR), each level's
/// term weighted by `shape.absent_share` if `weighted` (skew-aware), else by 1. Empty levels
/// below the deepest get the FPR a one-key level would (so a level about to be written is
/// never left unfiltered, as in `monkey_fprs`).
///
/// With a `floor` (an FPR, under `AllRuns`: the classic Bloom filter's at the budget), L0's
/// filter is held to it as the levels are (their cap is applied by the caller): a two-bit
/// filter that would filter worse than the floor at its share is replaced by a blocked Bloom
/// filter (the same one cache line per probe, a far steeper curve) and the budget is solved
/// again with L0 on that curve; whatever the kind, L0 then gets at least the bits per key that
/// reach the floor, and the levels share the rest (design.md#all-runs, "The floor").
pub fn allocate(
    shape: &TreeShape,
    flush: FilterConfig,
    compaction: StaticFilterKind,
    bits_per_key: f64,
    weighted: bool,
    floor: Option<f64>,
) -> Allocation {
    let mut classes = Vec::new();
    let l0 = Curve::of_flush(flush).filter(|_| shape.l0_runs > 0.0 && shape.l0_run_keys > 0.0);
    let l0 = l0.map(|curve| {
        let (runs, keys) = (shape.l0_runs, shape.l0_run_keys);
        classes.push(Class { runs, keys, weight: 1.0, curve, fixed: None });
        classes.len() - 1
    });
    let weight = |l: usize| match shape.absent_share.get(l) {
        Some(&w) if weighted => w,
        _ => 1.0,
    };
    let filtered = compaction != StaticFilterKind::None;
    let c = compaction.bits_per_log2_at(shape.file_keys);
    let curve = Curve::Exponential(c);
    // A fixed-width kind spends what its FPR costs, `c log2(1/p)` bits per key.
    let fixed = compaction.fixed_fpr().map(|p| c * (1.0 / p).log2());
    let mut level_class = vec![None; shape.levels.len()];
    for (l, &keys) in shape.levels.iter().enumerate().skip(1) {
        if filtered && keys > 0.0 {
            level_class[l] = Some(classes.len());
            classes.push(Class { runs: 1.0, keys, weight: weight(l), curve, fixed });
        }
    }
    // The budget is per key of the whole tree, filtered or not.
    let total = shape.l0_runs * shape.l0_run_keys + shape.levels.iter().skip(1).sum::<f64>();
    let budget = bits_per_key * total;
    let (mut bits, mut lambda) = solve(&classes, budget);
    if let Some(i) = l0.filter(|&i| bits[i] > 0.0 && matches!(classes[i].curve, Curve::TwoBit)) {
        (bits, lambda) = snap_l0(&mut classes, i, (bits, lambda), budget);
    }
    let mut l0_config = flush;
    if let (Some(i), Some(cap)) = (l0, floor) {
        if classes[i].curve.fpr(bits[i]) * model_margin(flush) > cap {
            if matches!(classes[i].curve, Curve::TwoBit) {
                l0_config = FilterConfig::BlockedBloom { bits_per_key: 0.0 };
                classes[i].curve = Curve::of_flush(l0_config).expect("a blocked Bloom curve");
                (bits, lambda) = solve(&classes, budget);
            }
            let least = floor_bits(l0_config, cap);
            if bits[i] < least {
                classes[i].fixed = Some(least);
                (bits, lambda) = solve(&classes, budget);
            }
        }
    }
    // An empty level below the deepest gets what a one-key level would at this λ.
    let one_key_level = fixed.unwrap_or_else(|| curve.best_bits(lambda, 1.0));
    let level_fprs = (0..shape.levels.len())
        .map(|l| match level_class[l] {
            _ if l == 0 || !filtered => 1.0,
            Some(i) => curve.fpr(bits[i]),
            None => curve.fpr(one_key_level),
        })
        .collect();
    let l0 = l0.map_or(FilterConfig::None, |i| l0_config.with_bits_per_key(bits[i]));
    Allocation { l0, level_fprs }
}

/// How far a flush filter kind's observed FPR may exceed its formula, which the floor's test
/// of a kept filter allows for: the two-bit formula assumes the two bits of a key independent
/// and uniform in its word and reads optimistic on small, loaded filters (by up to 7% in
/// docs/results/2026-11-29-readamp-shapes); the other kinds are rebuilt at the floor's bits by
/// their own formula.
fn model_margin(kind: FilterConfig) -> f64 {
    match kind {
        FilterConfig::TwoBitBloom { .. } => 1.1,
        _ => 1.0,
    }
}

/// `config` held to the floor `fpr` outside an allocation (`Monkey`, whose budget leaves L0
/// out): unchanged when it filters at least that well, else a blocked Bloom filter in place
/// of a two-bit one, at the fewest bits per key reaching the floor.
pub fn floored(config: FilterConfig, fpr: f64) -> FilterConfig {
    let current = super::L0Filter { config, nearest: false }.fpr();
    match (config, current) {
        (FilterConfig::None, _) => config,
        (_, Some(p)) if p * model_margin(config) <= fpr => config,
        (FilterConfig::TwoBitBloom { .. }, _) => {
            let blocked = FilterConfig::BlockedBloom { bits_per_key: 0.0 };
            blocked.with_bits_per_key(floor_bits(blocked, fpr))
        }
        _ => config.with_bits_per_key(floor_bits(config, fpr)),
    }
}

/// The fewest bits per key at which a flush filter of `kind` has a theoretical FPR at most
/// `fpr` ([`super::L0Filter::fpr`]'s formulas), found by bisection and remembered: the blocked
/// Bloom formula is a Poisson sum minimised over probe counts, and every allocation asks.
fn floor_bits(kind: FilterConfig, fpr: f64) -> f64 {
    type Key = (std::mem::Discriminant<FilterConfig>, u64);
    static KNOWN: std::sync::Mutex<Vec<(Key, f64)>> = std::sync::Mutex::new(Vec::new());
    let key = (std::mem::discriminant(&kind), fpr.to_bits());
    let mut known = KNOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&(_, b)) = known.iter().find(|(k, _)| *k == key) {
        return b;
    }
    let at = |b: f64| super::L0Filter { config: kind.with_bits_per_key(b), nearest: false }.fpr();
    let (mut lo, mut hi) = (0.0f64, MAX_TWO_BIT_BITS);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if at(mid).is_some_and(|p| p <= fpr) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    // A process plans with a handful of budgets; the list stays short.
    if known.len() < 64 {
        known.push((key, hi));
    }
    hi
}

/// Expected wasted block reads per lookup: `sum runs * weight * fpr(bits)`.
fn expected_cost(classes: &[Class], bits: &[f64]) -> f64 {
    classes.iter().zip(bits).map(|(c, &b)| c.runs * c.weight * c.curve.fpr(b)).sum()
}

/// Fixes L0's bits per key at the power-of-two filter size just below or just above its
/// continuous optimum, whichever costs less once the other runs are solved again for the rest
/// of the budget, so that the budget holds as spent, not only as planned.
fn snap_l0(
    classes: &mut [Class],
    i: usize,
    continuous: (Vec<f64>, f64),
    budget: f64,
) -> (Vec<f64>, f64) {
    // With every other run fixed (fingerprint widths), nothing could take up the difference.
    if classes.iter().enumerate().all(|(j, c)| j == i || c.fixed.is_some()) {
        return continuous;
    }
    let keys = classes[i].keys;
    let words = (continuous.0[i] * keys / 32.0).max(2.0);
    let down = 2f64.powf(words.log2().floor());
    let mut best: Option<(f64, (Vec<f64>, f64))> = None;
    for size_bits in [32.0 * down, 64.0 * down] {
        let b0 = size_bits / keys;
        if classes[i].runs * keys * b0 > budget || b0 > classes[i].curve.max_bits() {
            continue;
        }
        classes[i].fixed = Some(b0);
        let candidate = solve(classes, budget);
        let cost = expected_cost(classes, &candidate.0);
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, candidate));
        }
    }
    classes[i].fixed = None;
    // Neither size fits the budget (a tiny one): L0 keeps its continuous share.
    best.map_or(continuous, |(_, solution)| solution)
}

/// Bits of an L0 filter of `bits_per_key` for `keys` keys under [`allocate`]: the power-of-two
/// number of 32-bit words nearest (in ratio) to `bits_per_key * keys`, at least 2 words.
pub fn flush_filter_bits(bits_per_key: f64, keys: u64) -> u64 {
    let words = (bits_per_key * keys.max(1) as f64 / 32.0).max(2.0);
    32 << (words.log2().round() as u32).min(57)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fewest blocks per missing lookup any filter on the compacted levels could give a
    /// tree of `l0_runs` two-bit L0 runs of 10,000 keys and `levels` (keys, checks per missing
    /// lookup), at `bpk` bits per key over the whole tree: the levels at the information bound
    /// (`log2(1/p)` bits per key, c = 1), L0 on the two-bit curve, sizes continuous (the
    /// engine's power-of-two L0 sizes can only cost more).
    fn bound_with_two_bit_l0(l0_runs: f64, levels: &[(f64, f64)], bpk: f64) -> f64 {
        let l0 =
            Class { runs: l0_runs, keys: 10_000.0, weight: 1.0, curve: Curve::TwoBit, fixed: None };
        let mut classes = vec![l0];
        for &(keys, weight) in levels {
            let curve = Curve::Exponential(1.0);
            classes.push(Class { runs: 1.0, keys, weight, curve, fixed: None });
        }
        let total = l0_runs * 10_000.0 + levels.iter().map(|l| l.0).sum::<f64>();
        let (bits, _) = solve(&classes, bpk * total);
        expected_cost(&classes, &bits)
    }

    #[test]
    fn two_bit_l0_runs_put_issue_16s_targets_out_of_reach_of_small_trees() {
        // docs/results/2026-11-28-readamp-4.3m as the default's builds end: 2 L0 runs, L2-L4
        // with the checks per missing lookup its CSV reports. Even ideal compacted filters read more than 0.07
        // blocks at 5 bits/key, and only just 0.01 at 8.5 (the default: 0.081 and 0.0111).
        let four = [(87_000.0, 0.81), (898_000.0, 0.935), (3_295_000.0, 0.998)];
        let at5 = bound_with_two_bit_l0(2.0, &four, 5.0);
        let at85 = bound_with_two_bit_l0(2.0, &four, 8.5);
        assert!((0.07..0.08).contains(&at5), "{at5}");
        assert!((0.0095..0.0105).contains(&at85), "{at85}");
        // docs/results/2026-11-28-readamp-430k (430K keys): 3 L0 runs hold 7% of the keys, and
        // L0 alone is out of reach.
        let three = [(3_465.0, 0.087), (82_228.0, 0.766), (314_307.0, 0.987)];
        assert!(bound_with_two_bit_l0(3.0, &three, 8.5) > 0.03);
        assert!(bound_with_two_bit_l0(3.0, &three, 5.0) > 0.1);
        // Without L0 runs the same 4.3M levels meet both targets at the bound.
        assert!(bound_with_two_bit_l0(0.0, &four, 5.0) < 0.06);
    }
    use crate::filter_plan::monkey::monkey_fprs;

    fn shape(l0_runs: f64, l0_run_keys: f64, levels: &[f64]) -> TreeShape {
        let levels = levels.to_vec();
        TreeShape { l0_runs, l0_run_keys, levels, absent_share: vec![], file_keys: f64::INFINITY }
    }

    #[test]
    fn without_l0_it_is_monkey() {
        let s = shape(0.0, 0.0, &[0.0, 1e4, 1e5, 1e6]);
        for bpk in [2.0, 6.0, 10.0] {
            let a = allocate(&s, FilterConfig::None, StaticFilterKind::Ribbon, bpk, false, None);
            let m = monkey_fprs(&s.levels[1..], bpk, StaticFilterKind::Ribbon.bits_per_log2());
            for (p, q) in a.level_fprs[1..].iter().zip(&m) {
                assert!((p / q - 1.0).abs() < 1e-6, "{bpk}: {:?} vs {m:?}", a.level_fprs);
            }
            assert_eq!(a.l0.bits_per_key(), 0.0);
        }
    }

    /// How far an allocation's spend is off its budget of `bpk` bits per key of the whole
    /// tree, relative.
    fn off_budget(s: &TreeShape, a: &Allocation, kind: StaticFilterKind, bpk: f64) -> f64 {
        let c = kind.bits_per_log2_at(s.file_keys);
        let levels: f64 = s.levels[1..]
            .iter()
            .zip(&a.level_fprs[1..])
            .map(|(n, p)| n * c * (1.0 / p).log2())
            .sum();
        let l0_keys = s.l0_runs * s.l0_run_keys;
        let keys = l0_keys + s.levels[1..].iter().sum::<f64>();
        (levels + l0_keys * a.l0.bits_per_key()) / (bpk * keys) - 1.0
    }

    #[test]
    fn binary_fuse_levels_are_priced_at_their_file_size() {
        // 4-wise fuse files of 9,000 keys cost 1.22 bits per bit of log2(1/FPR) (11,008
        // slots), not the large-set 1.075: priced at 1.075 the plan would overspend by 14%.
        let kind = StaticFilterKind::PackedBinaryFuse;
        let keys = crate::rng::SplitMix64::new(8).hashes(9000);
        let built = crate::filter::PackedBinaryFuse::build(&keys, 10).unwrap().bits_per_key();
        assert!((kind.bits_per_log2_at(9000.0) - built / 10.0).abs() < 1e-9, "{built}");
        assert!(kind.bits_per_log2_at(9000.0) > 1.2);
        assert_eq!(kind.bits_per_log2_at(f64::INFINITY), 1.075);
        assert_eq!(StaticFilterKind::Ribbon.bits_per_log2_at(9000.0), 1.05);
        // Bumped ribbon is one standard layer up to 4,096 keys, bumped layers above.
        assert_eq!(StaticFilterKind::BumpedRibbon.bits_per_log2_at(2000.0), 1.05);
        assert_eq!(StaticFilterKind::BumpedRibbon.bits_per_log2_at(9000.0), 1.01 + 0.03);
        assert_eq!(StaticFilterKind::BumpedRibbon.bits_per_log2_at(f64::INFINITY), 1.01);
        let mut s = shape(2.0, 10_000.0, &[0.0, 3.5e3, 8.2e4, 3.1e5]);
        s.file_keys = 9000.0;
        let flush = FilterConfig::TwoBitBloom { bits_per_key: 0.0 };
        for bpk in [4.0, 10.0] {
            let a = allocate(&s, flush, kind, bpk, false, None);
            let rel = off_budget(&s, &a, kind, bpk);
            assert!(rel.abs() < 1e-6, "{bpk}: spent {rel:+e} off the budget");
        }
    }

    #[test]
    fn the_budget_is_spent() {
        let s = shape(4.0, 10_000.0, &[0.0, 3.5e3, 8.2e4, 3.1e5]);
        for bpk in [2.0, 4.0, 8.0, 10.0, 16.0] {
            for flush in [
                FilterConfig::TwoBitBloom { bits_per_key: 0.0 },
                FilterConfig::BlockedBloom { bits_per_key: 0.0 },
            ] {
                let a = allocate(&s, flush, StaticFilterKind::Ribbon, bpk, false, None);
                let rel = off_budget(&s, &a, StaticFilterKind::Ribbon, bpk);
                assert!(rel.abs() < 1e-6, "{bpk} {flush:?}: spent {rel:+e} off the budget");
            }
        }
    }

    #[test]
    fn a_fixed_width_kind_keeps_its_fpr_and_l0_gets_the_rest() {
        let s = shape(4.0, 10_000.0, &[0.0, 3.5e3, 8.2e4, 3.1e5]);
        let flush = FilterConfig::TwoBitBloom { bits_per_key: 0.0 };
        let kind = StaticFilterKind::BinaryFuse8;
        let a = allocate(&s, flush, kind, 12.0, false, None);
        assert!(a.level_fprs[1..].iter().all(|&p| (p - 1.0 / 256.0).abs() < 1e-12), "{a:?}");
        let rel = off_budget(&s, &a, kind, 12.0);
        // L0 alone takes up the difference, on a curve tabulated at 1/64 bit: its bits per key
        // move in such steps (1/64 of 40,000 keys' bits is 1.5e-4 of the budget).
        assert!(rel.abs() < 2e-4, "spent {rel:+e} off the budget");
    }

    #[test]
    fn the_two_bit_table_follows_the_formula_and_finds_the_minimum_cost() {
        let curve = two_bit();
        for i in 0..2000 {
            let b = 0.5 + i as f64 * 0.0317;
            let exact = <TwoBitBloom as BloomShape>::theoretical_fpr(b, 2).min(1.0);
            let rel = curve.fpr(b) / exact - 1.0;
            assert!(rel.abs() < 1e-3, "{b}: {} vs {exact}", curve.fpr(b));
        }
        // The binary search's grid point against a scan of every grid point.
        for slope in [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7] {
            let cost = |b: f64| curve.fpr(b) + slope * b;
            let best = curve.best_bits(slope);
            let scan = (0..curve.fpr.len())
                .map(|i| cost(0.5 + i as f64 / TWO_BIT_STEPS))
                .fold(f64::INFINITY, f64::min);
            assert!(cost(best) <= scan * (1.0 + 1e-12), "slope {slope}: {best} bits");
        }
    }

    #[test]
    fn flush_filters_are_sized_to_the_nearest_power_of_two_words() {
        assert_eq!(flush_filter_bits(10.0, 1000), 8192); // 312.5 words -> 256
        assert_eq!(flush_filter_bits(10.0, 1200), 16384); // 375 words -> 512
        assert_eq!(flush_filter_bits(0.0, 1000), 64);
    }

    #[test]
    fn l0_gets_more_bits_per_key_than_the_deepest_level_and_beats_a_uniform_split() {
        // readamp's shape: small L0 runs, a large last level.
        let s = shape(4.0, 10_000.0, &[0.0, 3.5e3, 8.2e4, 3.1e5]);
        let flush = FilterConfig::TwoBitBloom { bits_per_key: 0.0 };
        let kind = StaticFilterKind::Ribbon;
        let bpk = 10.0;
        let a = allocate(&s, flush, kind, bpk, false, None);
        let deepest_bits = kind.bits_per_log2() * (1.0 / a.level_fprs[3]).log2();
        assert!(a.l0.bits_per_key() > deepest_bits, "{a:?}");
        let cost = |l0_bits: f64, fprs: &[f64]| {
            4.0 * Curve::TwoBit.fpr(l0_bits) + fprs[1..].iter().sum::<f64>()
        };
        let uniform = 2f64.powf(-bpk / kind.bits_per_log2());
        let optimal = cost(a.l0.bits_per_key(), &a.level_fprs);
        assert!(optimal < cost(bpk, &[1.0, uniform, uniform, uniform]) / 2.0, "{optimal}");
    }

    #[test]
    fn a_budget_too_small_for_any_filter_leaves_runs_unfiltered() {
        let s = shape(4.0, 1e4, &[0.0, 1e4, 1e5]);
        let flush = FilterConfig::TwoBitBloom { bits_per_key: 0.0 };
        let a = allocate(&s, flush, StaticFilterKind::Ribbon, 1e-6, false, None);
        assert!(a.level_fprs[1..].iter().all(|&p| p > 0.9), "{a:?}");
        let a = allocate(&s, flush, StaticFilterKind::None, 8.0, false, None);
        assert!(a.level_fprs.iter().all(|&p| p == 1.0));
        assert!(a.l0.bits_per_key() > 8.0);
    }

    #[test]
    fn l0_gets_a_power_of_two_filter_and_the_budget_still_holds() {
        let s = shape(3.0, 10_000.0, &[0.0, 3.5e3, 8.2e4, 3.1e5]);
        let flush = FilterConfig::TwoBitBloom { bits_per_key: 0.0 };
        for bpk in [4.0, 8.0, 10.0, 16.0] {
            let a = allocate(&s, flush, StaticFilterKind::Ribbon, bpk, false, None);
            let words = a.l0.bits_per_key() * 10_000.0 / 32.0;
            assert!((words.log2() - words.log2().round()).abs() < 1e-9, "{bpk}: {words} words");
            assert_eq!(flush_filter_bits(a.l0.bits_per_key(), 10_000) as f64, words * 32.0);
            let rel = off_budget(&s, &a, StaticFilterKind::Ribbon, bpk);
            assert!(rel.abs() < 1e-6, "{bpk}: spent {rel:+e} off the budget");
        }
    }

    #[test]
    fn an_empty_level_below_the_deepest_gets_the_smallest_fpr() {
        let s = shape(4.0, 1e4, &[0.0, 1e5, 1e6, 0.0]);
        let flush = FilterConfig::TwoBitBloom { bits_per_key: 0.0 };
        let a = allocate(&s, flush, StaticFilterKind::Ribbon, 8.0, false, None);
        assert!(a.level_fprs[3] < a.level_fprs[1], "{a:?}");
    }

    #[test]
    fn weighted_runs_meet_the_weighted_lagrange_condition_and_cost_less() {
        // Ribbon levels only (no flush filter): p_l = λ n_l c / (w_l ln 2) for every filtered
        // level, so p_l w_l / n_l is one constant; the budget is spent; and the weighted cost
        // sum w_l p_l is below that of the unweighted plan at the same memory.
        let mut s = shape(0.0, 0.0, &[0.0, 1e4, 1e5, 1e6]);
        s.absent_share = vec![1.0, 1.0, 0.5, 0.05];
        let (flush, kind) = (FilterConfig::None, StaticFilterKind::Ribbon);
        let weighted = allocate(&s, flush, kind, 6.0, true, None);
        let plain = allocate(&s, flush, kind, 6.0, false, None);
        let p = &weighted.level_fprs;
        let k: Vec<f64> = (1..4).map(|l| p[l] * s.absent_share[l] / s.levels[l]).collect();
        assert!(k.iter().all(|x| (x / k[0] - 1.0).abs() < 1e-6), "{p:?}");
        let c = kind.bits_per_log2();
        let spent: f64 = (1..4).map(|l| s.levels[l] * c * (1.0 / p[l]).log2()).sum();
        assert!((spent / (6.0 * 1.11e6) - 1.0).abs() < 1e-6, "{spent}");
        let cost = |a: &Allocation| (1..4).map(|l| s.absent_share[l] * a.level_fprs[l]).sum();
        let (w, u): (f64, f64) = (cost(&weighted), cost(&plain));
        assert!(w < 0.8 * u, "{w} vs {u}");
        // All weights 1: the unweighted plan.
        s.absent_share = vec![1.0; 4];
        assert_eq!(allocate(&s, flush, kind, 6.0, true, None), plain);
        // Weight 0: no filter there, the budget goes to the others.
        s.absent_share = vec![1.0, 1.0, 1.0, 0.0];
        assert_eq!(allocate(&s, flush, kind, 6.0, true, None).level_fprs[3], 1.0);
    }

    #[test]
    fn lookup_weights_start_at_one_and_approach_the_observed_share() {
        assert_eq!(lookup_weights(0, &[0, 0]), vec![1.0, 1.0]);
        let w = lookup_weights(1_000_000, &[1_000_000, 0, 250_000]);
        assert_eq!(w[0], 1.0);
        assert!((w[1] - WEIGHT_PRIOR_LOOKUPS / 1_010_000.0).abs() < 1e-12);
        assert!((w[2] - 260_000.0 / 1_010_000.0).abs() < 1e-12);
    }
}
