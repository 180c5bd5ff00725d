//! The key layout of the scan benchmarks (`--key_spacing`, `rangeempty`, `prefixscan`): which key
//! numbers a workload writes and reads, and which ranges and prefixes it asks about. No siftdb
//! types: `siftdb bench` and `tools/rocksdb-bench` both use this module, so both tools ask the
//! same questions in the same order from the same seeds.
//!
//! Everything is computed in key-number space; keys are [`make_key`] of the numbers, which sort
//! in numeric order, so a range of `w` consecutive numbers is `w` consecutive keys of the layout.
//!
//! - Spacing G (`--key_spacing`): workload number v becomes key number v * G, fills and reads
//!   alike, so the numbers between two keys form a gap of G - 1. G = 1 is db_bench's layout.
//! - `rangeempty`: width w uniform in [2, `--range_max_width`]; with probability
//!   `--empty_fraction` an empty range inside the gap after key v * G (uncorrelated: starting
//!   at v * G + 1 + r, r uniform so that the range stays in the gap; correlated: starting at
//!   v * G + 1, right after the key, where SuRF-like filters fail), else a range of w numbers
//!   holding v * G, at a uniform offset. v is a number the fill wrote (below).
//! - `prefixscan`: with `--prefix_size` N <= 8 a prefix is the first N bytes of the 8-byte
//!   big-endian key number, so group g = number >> 8(8 - N) shares one prefix and covers
//!   S = 2^(8(8 - N)) numbers. Present groups are those of v * G; absent ones are the groups up
//!   to the last key's group that hold no multiple of G (none unless G > S), drawn uniformly.
//!
//! Which numbers exist: `fillseq` writes every v, but `fillrandom` draws `below(num)` from each
//! of its first `num` outputs, with repeats, so only about 1 - 1/e = 63% of the numbers are
//! written. The questions that must hit a key (a non-empty range, a present prefix, the key a
//! correlated range starts after) therefore take their v from the fill's own draws
//! ([`FillStream`]): draw number j, uniform in [0, num), of the generator the fill's first
//! thread used (`--fill_seed`, by default `--seed`), reached in one step
//! (`SplitMix64::skipped`). Every such v was written by that fill, or by `fillseq`, whatever the
//! reads' seed, thread count or duration; keys drawn twice by the fill are asked about twice as
//! often. A database the fill stream does not describe (another seed, another workload) shows
//! as `found_share` below `targeted_share`, and the benchmarks then print a warning.

use crate::keys::make_key;
use siftdb::filter::rng::SplitMix64;

/// Where the keys of a workload lie: number v is key number v * `spacing`, v in [0, num).
#[derive(Debug, Clone, Copy)]
pub struct KeyLayout {
    /// Workload numbers are drawn from [0, num).
    pub num: u64,
    /// `--key_spacing` G (>= 1).
    pub spacing: u64,
}

impl KeyLayout {
    /// The layout of `--num` and `--key_spacing`; refuses G = 0 and a last gap past 2^64.
    pub fn new(num: u64, spacing: u64) -> Result<KeyLayout, String> {
        if spacing == 0 {
            return Err("--key_spacing=0 is out of range: at least 1 (number v is written as \
                        key number v * G; 1 = db_bench's layout)"
                .into());
        }
        if num.checked_add(1).and_then(|n| n.checked_mul(spacing)).is_none() {
            return Err(format!(
                "--key_spacing={spacing} with --num={num}: the key numbers (up to num * G) do \
                 not fit in 64 bits"
            ));
        }
        Ok(KeyLayout { num, spacing })
    }

    /// The key number of workload number `v`.
    #[inline]
    pub fn number(&self, v: u64) -> u64 {
        v * self.spacing
    }

    /// Writes the key of workload number `v` (`make_key(v * G)`) into `out`.
    #[inline]
    pub fn key(&self, v: u64, key_size: usize, out: &mut Vec<u8>) {
        make_key(self.number(v), key_size, out);
    }
}

/// The workload numbers a fill wrote: its first thread's draws (see the module comment).
#[derive(Debug, Clone, Copy)]
pub struct FillStream {
    /// The seed of the fill's first thread (`--fill_seed`).
    pub seed: u64,
    /// The fill's `--num`: its draws, and the range they were drawn from.
    pub num: u64,
}

impl FillStream {
    /// The line a scan benchmark adds after its result when `found` operations found a key
    /// where `targeted` were aimed at one (empty when they agree). With the database this fill
    /// wrote the two are equal whatever the filters (they never hide a key); otherwise the
    /// share of empty operations is not the one `--empty_fraction` asked for.
    pub fn mismatch_warning(&self, name: &str, found: u64, targeted: u64) -> String {
        if found == targeted {
            return String::new();
        }
        format!(
            "\nwarning: {name}: {found} operations found a key where {targeted} were aimed at \
             one: the database was not written by fillseq or by fillrandom with --fill_seed={} \
             and --num={} (key_layout.rs), so the share of empty operations is not \
             --empty_fraction",
            self.seed, self.num,
        )
    }

    /// A workload number the fill wrote: its draw number j, for j uniform in [0, num)
    /// (one draw from `rng`).
    #[inline]
    pub fn written(&self, rng: &mut SplitMix64) -> u64 {
        let j = rng.below(self.num);
        SplitMix64::skipped(self.seed, j).below(self.num)
    }
}

/// `--empty_fraction`, checked: a share in [0, 1].
pub fn check_empty_fraction(f: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(format!("--empty_fraction={f} is out of range: a share in 0..=1"))
    }
}

/// `--prefix_size`, checked against `--key_size` (0 = no prefix extractor).
pub fn check_prefix_size(prefix_size: usize, key_size: usize) -> Result<(), String> {
    if prefix_size > key_size {
        return Err(format!(
            "--prefix_size={prefix_size} exceeds --key_size={key_size}: no key would have a prefix"
        ));
    }
    Ok(())
}

/// Where `rangeempty` puts an empty range in a gap (`--range_flavour`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeFlavour {
    /// At a uniformly random position inside the gap.
    Uncorrelated,
    /// Right after an existing key (v * G + 1).
    Correlated,
}

impl RangeFlavour {
    /// `uncorrelated` or `correlated`.
    pub fn parse(s: &str) -> Result<RangeFlavour, String> {
        match s {
            "uncorrelated" => Ok(RangeFlavour::Uncorrelated),
            "correlated" => Ok(RangeFlavour::Correlated),
            _ => Err(format!("--range_flavour={s}: expected uncorrelated|correlated")),
        }
    }

    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            RangeFlavour::Uncorrelated => "uncorrelated",
            RangeFlavour::Correlated => "correlated",
        }
    }
}

/// One `rangeempty` question: does the database hold a key number in [lo, hi]?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeOp {
    /// First key number of the range.
    pub lo: u64,
    /// Last key number of the range (inclusive).
    pub hi: u64,
    /// Whether the range was placed in a gap (it then holds no key of the layout).
    pub empty: bool,
}

/// `rangeempty`'s generator of ranges.
#[derive(Debug, Clone, Copy)]
pub struct RangeGen {
    layout: KeyLayout,
    fill: FillStream,
    max_width: u64,
    empty_fraction: f64,
    flavour: RangeFlavour,
}

impl RangeGen {
    /// Checks the flags: widths of at least 2, and gaps wider than the widest range when any
    /// range is to be empty.
    pub fn new(
        layout: KeyLayout,
        fill: FillStream,
        max_width: u64,
        empty_fraction: f64,
        flavour: RangeFlavour,
    ) -> Result<RangeGen, String> {
        let empty_fraction = check_empty_fraction(empty_fraction)?;
        if max_width < 2 {
            return Err(format!("--range_max_width={max_width} is out of range: at least 2"));
        }
        if empty_fraction > 0.0 && layout.spacing <= max_width {
            return Err(format!(
                "rangeempty: an empty range of up to --range_max_width={max_width} key numbers \
                 must fit in a gap of --key_spacing - 1, so --key_spacing={} must exceed \
                 --range_max_width (or set --empty_fraction=0)",
                layout.spacing
            ));
        }
        if layout.number(layout.num).checked_add(max_width).is_none() {
            return Err(format!(
                "--key_spacing={} with --num={}: the ranges run past 2^64",
                layout.spacing, layout.num
            ));
        }
        Ok(RangeGen { layout, fill, max_width, empty_fraction, flavour })
    }

    /// The fill whose keys the non-empty ranges hold.
    pub fn fill(&self) -> FillStream {
        self.fill
    }

    /// The next question (three or four draws from `rng`).
    pub fn next(&self, rng: &mut SplitMix64) -> RangeOp {
        let w = 2 + rng.below(self.max_width - 1);
        let empty = rng.next_f64() < self.empty_fraction;
        let base = self.layout.number(self.fill.written(rng));
        let lo = match (empty, self.flavour) {
            // Holds base at a uniform offset (clipped at key number 0).
            (false, _) => base.saturating_sub(rng.below(w)),
            // In the gap (base, base + G): G - 1 numbers, G - w start positions.
            (true, RangeFlavour::Uncorrelated) => base + 1 + rng.below(self.layout.spacing - w),
            (true, RangeFlavour::Correlated) => base + 1,
        };
        RangeOp { lo, hi: lo + w - 1, empty }
    }
}

/// One `prefixscan` question: the keys of prefix group `group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixOp {
    /// Key numbers `group << shift ..` share the prefix.
    pub group: u64,
    /// Whether the group holds no key number of the layout.
    pub absent: bool,
}

/// `prefixscan`'s generator of prefixes.
#[derive(Debug, Clone, Copy)]
pub struct PrefixGen {
    layout: KeyLayout,
    fill: FillStream,
    prefix_size: usize,
    /// log2 of the numbers per group: 8 * (8 - prefix_size).
    shift: u32,
    empty_fraction: f64,
    /// The group of the last key number.
    last_group: u64,
    /// Groups in [0, last_group] holding no key number.
    absent_groups: u64,
}

impl PrefixGen {
    /// Checks the flags: 1 <= `--prefix_size` <= 8, and an absent group exists when any
    /// prefix is to be absent.
    pub fn new(
        layout: KeyLayout,
        fill: FillStream,
        prefix_size: usize,
        empty_fraction: f64,
    ) -> Result<PrefixGen, String> {
        let empty_fraction = check_empty_fraction(empty_fraction)?;
        if !(1..=8).contains(&prefix_size) {
            return Err(format!(
                "prefixscan needs --prefix_size in 1..=8 (a prefix of the 8-byte key number), \
                 got --prefix_size={prefix_size}"
            ));
        }
        let shift = 8 * (8 - prefix_size as u32);
        let last_group = layout.number(layout.num.saturating_sub(1)) >> shift;
        let mut gen = PrefixGen {
            layout,
            fill,
            prefix_size,
            shift,
            empty_fraction,
            last_group,
            absent_groups: 0,
        };
        gen.absent_groups = gen.absent_up_to(last_group);
        if empty_fraction > 0.0 && gen.absent_groups == 0 {
            let per_group = 1u128 << shift;
            return Err(format!(
                "prefixscan: with --prefix_size={prefix_size} a prefix covers {per_group} key \
                 numbers, and --key_spacing={} --num={} leaves no prefix group without a key; \
                 use --key_spacing > {per_group} (or set --empty_fraction=0)",
                layout.spacing, layout.num
            ));
        }
        Ok(gen)
    }

    /// Groups in [0, g] (g <= last group) holding a key number.
    fn present_up_to(&self, g: u64) -> u64 {
        if self.layout.spacing as u128 <= 1u128 << self.shift {
            // Keys at most a group apart, from number 0: every group up to the last key's.
            return g + 1;
        }
        // Each key in a group of its own: the v in [0, num) with v * G < (g + 1) * S.
        let end = (g as u128 + 1) << self.shift;
        // In 64 bits where the bound fits: a u128 division is a library call (`__udivti3`),
        // time the benchmark would count as the engine's.
        let keys = match u64::try_from(end) {
            Ok(end) => end.div_ceil(self.layout.spacing) as u128,
            Err(_) => end.div_ceil(self.layout.spacing as u128),
        };
        keys.min(self.layout.num as u128) as u64
    }

    /// Whether group `g <= last group` holds a key number: `present_up_to(g) -
    /// present_up_to(g - 1) == 1` with one division instead of two (two divisions per try were
    /// 8% of an absent-prefix scan's time in a profile, time the benchmark counts as the
    /// engine's). Key `v` is number `v * spacing`; the first at or after the group's start is
    /// `v = ceil(g G / spacing)`, and the group holds it iff `v < num` and it lies before the
    /// next group's start.
    fn holds_key(&self, g: u64) -> bool {
        if self.layout.spacing as u128 <= 1u128 << self.shift {
            return true; // every group up to the last key's (present_up_to)
        }
        // g G <= the last key's number < 2^64 (KeyLayout::new refuses larger layouts).
        let start = g << self.shift;
        let v = start.div_ceil(self.layout.spacing);
        v < self.layout.num
            && (v as u128 * self.layout.spacing as u128) < ((g as u128 + 1) << self.shift)
    }

    /// Groups in [0, g] (g <= last group) holding no key number.
    fn absent_up_to(&self, g: u64) -> u64 {
        g + 1 - self.present_up_to(g).min(g + 1)
    }

    /// The fill whose keys the present prefixes hold.
    pub fn fill(&self) -> FillStream {
        self.fill
    }

    /// The next question (draws from `rng`: two, or a few more for an absent prefix).
    pub fn next(&self, rng: &mut SplitMix64) -> PrefixOp {
        if rng.next_f64() < self.empty_fraction {
            // A uniform absent group: by rejection (a few O(1) tries when absent groups are
            // common; the search below costs ~25 u128 divisions, which a profile of prefixscan
            // showed as 15% of an operation), else the k-th by binary search.
            for _ in 0..16 {
                let g = rng.below(self.last_group + 1);
                if !self.holds_key(g) {
                    return PrefixOp { group: g, absent: true };
                }
            }
            // The k-th absent group: the smallest g with absent_up_to(g) > k.
            let k = rng.below(self.absent_groups);
            let (mut lo, mut hi) = (0, self.last_group);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.absent_up_to(mid) > k {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            PrefixOp { group: lo, absent: true }
        } else {
            let n = self.layout.number(self.fill.written(rng));
            PrefixOp { group: n >> self.shift, absent: false }
        }
    }

    /// Writes the prefix of `group` (its first key number's first `--prefix_size` key bytes).
    pub fn prefix(&self, group: u64, out: &mut Vec<u8>) {
        make_key(group << self.shift, 8, out);
        out.truncate(self.prefix_size);
    }

    /// Whether key number `n` has the prefix of `group`.
    #[cfg(test)]
    fn holds(&self, group: u64, n: u64) -> bool {
        n >> self.shift == group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_one_is_db_bench_layout_and_zero_or_overflow_is_refused() {
        let l = KeyLayout::new(100, 1).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        l.key(42, 16, &mut a);
        make_key(42, 16, &mut b);
        assert_eq!(a, b);
        assert!(KeyLayout::new(100, 0).unwrap_err().contains("--key_spacing=0"));
        assert!(KeyLayout::new(u64::MAX / 2, 4).unwrap_err().contains("--key_spacing=4"));
    }

    fn fill_of(num: u64) -> FillStream {
        FillStream { seed: 3, num }
    }

    fn fill(layout: KeyLayout) -> FillStream {
        fill_of(layout.num)
    }

    /// The numbers `fillrandom` writes: thread 0 seeded `seed` draws `below(num)` `num` times.
    fn filled(seed: u64, num: u64) -> std::collections::BTreeSet<u64> {
        let mut rng = SplitMix64::new(seed);
        (0..num).map(|_| rng.below(num)).collect()
    }

    #[test]
    fn questions_that_must_hit_a_key_ask_about_numbers_the_fill_wrote() {
        let layout = KeyLayout::new(1000, 64).unwrap();
        let written = filled(3, 1000);
        // About 1 - 1/e of the numbers: drawing them uniformly would miss a third.
        assert!((560..=700).contains(&written.len()), "{}", written.len());
        for flavour in [RangeFlavour::Uncorrelated, RangeFlavour::Correlated] {
            let gen = RangeGen::new(layout, fill(layout), 16, 0.5, flavour).unwrap();
            let mut rng = SplitMix64::new(11); // the reads' seed need not be the fill's
            for _ in 0..10_000 {
                let op = gen.next(&mut rng);
                let hits = (op.lo..=op.hi).filter(|n| n % 64 == 0 && written.contains(&(n / 64)));
                assert_eq!(hits.count(), usize::from(!op.empty), "{op:?}");
                if op.empty && flavour == RangeFlavour::Correlated {
                    assert!(written.contains(&(op.lo / 64)), "after a written key: {op:?}");
                }
            }
        }
        let gen = PrefixGen::new(KeyLayout::new(1000, 512).unwrap(), fill_of(1000), 7, 0.5);
        let (gen, mut rng) = (gen.unwrap(), SplitMix64::new(11));
        for _ in 0..10_000 {
            let op = gen.next(&mut rng);
            let holds = written.iter().any(|&v| gen.holds(op.group, v * 512));
            assert_eq!(holds, !op.absent, "{op:?}");
        }
    }

    #[test]
    fn empty_ranges_stay_inside_gaps_and_others_hold_a_key() {
        let layout = KeyLayout::new(1000, 64).unwrap();
        for flavour in [RangeFlavour::Uncorrelated, RangeFlavour::Correlated] {
            let gen = RangeGen::new(layout, fill(layout), 16, 0.5, flavour).unwrap();
            let mut rng = SplitMix64::new(7);
            let mut empties = 0;
            for _ in 0..10_000 {
                let op = gen.next(&mut rng);
                assert!((2..=16).contains(&(op.hi - op.lo + 1)), "{op:?}");
                let keys = (op.lo..=op.hi).filter(|n| n % 64 == 0 && n / 64 < 1000).count();
                assert_eq!(keys, usize::from(!op.empty), "{op:?}");
                if op.empty {
                    empties += 1;
                    if flavour == RangeFlavour::Correlated {
                        assert_eq!(op.lo % 64, 1, "right after a key: {op:?}");
                    }
                }
            }
            // Binomial(10000, 0.5): sigma 50.
            assert!((4750..=5250).contains(&empties), "{empties}");
        }
    }

    #[test]
    fn range_flags_out_of_range_are_errors_naming_the_flags() {
        let layout = KeyLayout::new(1000, 16).unwrap();
        let e =
            RangeGen::new(layout, fill(layout), 16, 0.5, RangeFlavour::Uncorrelated).unwrap_err();
        assert!(e.contains("--key_spacing=16") && e.contains("--range_max_width"), "{e}");
        assert!(RangeGen::new(layout, fill(layout), 16, 0.0, RangeFlavour::Uncorrelated).is_ok());
        let e =
            RangeGen::new(layout, fill(layout), 8, 2.0, RangeFlavour::Uncorrelated).unwrap_err();
        assert!(e.contains("--empty_fraction=2"), "{e}");
        let e =
            RangeGen::new(layout, fill(layout), 1, 0.5, RangeFlavour::Uncorrelated).unwrap_err();
        assert!(e.contains("--range_max_width=1"), "{e}");
        assert!(RangeFlavour::parse("sideways").unwrap_err().contains("--range_flavour"));
    }

    /// Present and absent groups by brute force, against the generator's arithmetic.
    fn check_groups(num: u64, spacing: u64, prefix_size: usize) {
        let layout = KeyLayout::new(num, spacing).unwrap();
        let gen = PrefixGen::new(layout, fill(layout), prefix_size, 0.5).unwrap();
        let present: std::collections::BTreeSet<u64> =
            (0..num).map(|v| layout.number(v) >> gen.shift).collect();
        let absent: Vec<u64> = (0..=gen.last_group).filter(|g| !present.contains(g)).collect();
        assert_eq!(gen.absent_groups, absent.len() as u64, "{num} {spacing} {prefix_size}");
        for g in 0..=gen.last_group {
            assert_eq!(gen.holds_key(g), present.contains(&g), "group {g}");
        }
        let mut rng = SplitMix64::new(1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..4000 {
            let op = gen.next(&mut rng);
            let holds = (0..num).any(|v| gen.holds(op.group, layout.number(v)));
            assert_eq!(holds, !op.absent, "{op:?}");
            if op.absent {
                seen.insert(op.group);
            }
        }
        if absent.len() <= 100 {
            assert_eq!(seen.len(), absent.len(), "every absent group is drawn");
        }
    }

    #[test]
    fn absent_prefixes_are_exactly_the_groups_without_a_key() {
        check_groups(200, 512, 7); // every odd group of 256 numbers
        check_groups(200, 300, 7); // gaps of 300 over groups of 256: some absent groups
        check_groups(50, 3, 8); // one number per prefix
        check_groups(30, 70_000, 6); // groups of 65536
    }

    #[test]
    fn prefixscan_refuses_layouts_without_absent_prefixes() {
        let e =
            PrefixGen::new(KeyLayout::new(1000, 256).unwrap(), fill_of(1000), 7, 0.5).unwrap_err();
        assert!(e.contains("--prefix_size=7") && e.contains("--key_spacing=256"), "{e}");
        assert!(PrefixGen::new(KeyLayout::new(1000, 256).unwrap(), fill_of(1000), 7, 0.0).is_ok());
        let e =
            PrefixGen::new(KeyLayout::new(1000, 512).unwrap(), fill_of(1000), 0, 0.5).unwrap_err();
        assert!(e.contains("--prefix_size=0"), "{e}");
        let mut p = Vec::new();
        let gen =
            PrefixGen::new(KeyLayout::new(1000, 512).unwrap(), fill_of(1000), 7, 0.5).unwrap();
        gen.prefix(3, &mut p);
        assert_eq!(p, [0, 0, 0, 0, 0, 0, 3]);
    }
}
