//! The construction of a compaction output's filter from the collected key hashes
//! ([`build_filter`], with its Bloom fallback), and the FPR a built filter has ([`built_fpr`]).
//! Which kind and FPR each level gets is planned in src/filter_plan/.

use crate::error::Result;
use crate::filter::prelude::*;
use crate::filter::{
    BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom, BumpedRibbon,
    FilterKind, PackedBinaryFuse, Ribbon, StandardBloom, Xor16, Xor8,
};
use crate::filter_plan::{LevelFilter, MIN_FPR};
use crate::options::StaticFilterKind;

/// The FPR a table's filter of `kind` was built for, from the bits per key it holds over its
/// `keys` distinct keys: the Bloom kinds' theoretical FPR (the two-bit filter with its two bits
/// per key, the others with the probes their builders choose for those bits), `2^(-b / c)` for
/// Ribbon (`c` from [`StaticFilterKind::bits_per_log2`]), the fixed FPR of the fingerprint
/// kinds, and for the packed binary fuse filter `2^-w` with `w` its bits per key over the
/// 4-wise layout's slots per key at `keys` (exact for one filter per table; an estimate for a
/// partitioned one). `None` for kinds no table carries. A table's `TableInfo::filter_fpr` uses
/// it where the filter's own parameters do not fix the FPR (the Bloom kinds), or the filter is
/// not held in the table (docs/tools.md#readamp).
pub fn built_fpr(kind: FilterKind, bits_per_key: f64, keys: u64) -> Option<f64> {
    use crate::filter::TwoBitBloom;
    let b = bits_per_key;
    let fpr = match kind {
        FilterKind::TwoBitBloom => <TwoBitBloom as BloomShape>::theoretical_fpr(b, 2),
        FilterKind::BlockedBloom => <BlockedBloom as BloomShape>::theoretical_fpr(
            b,
            <BlockedBloom as BloomShape>::probes_for_bits_per_key(b),
        ),
        FilterKind::StandardBloom => <StandardBloom as BloomShape>::theoretical_fpr(
            b,
            <StandardBloom as BloomShape>::probes_for_bits_per_key(b),
        ),
        FilterKind::Ribbon => 2f64.powf(-b / StaticFilterKind::Ribbon.bits_per_log2()),
        FilterKind::BumpedRibbon => 2f64.powf(-b / StaticFilterKind::BumpedRibbon.bits_per_log2()),
        FilterKind::BinaryFuse8 | FilterKind::BinaryFuse4Wise8 | FilterKind::Xor8 => 1.0 / 256.0,
        FilterKind::BinaryFuse16 | FilterKind::BinaryFuse4Wise16 | FilterKind::Xor16 => {
            1.0 / 65536.0
        }
        FilterKind::PackedBinaryFuse => {
            let slots_per_key = crate::filter::fuse_slots_per_key(keys.max(1) as f64, 4);
            2f64.powf(-(b / slots_per_key).round().clamp(1.0, 32.0))
        }
        _ => return None,
    };
    Some(fpr.clamp(0.0, 1.0))
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
    use crate::filter_plan::{level_filter, TreeShape};
    use crate::options::{FilterAllocation, FilterPolicy, LevelBudget};

    #[test]
    fn built_fpr_follows_each_kinds_curve() {
        let ribbon = built_fpr(FilterKind::Ribbon, 10.5, 1000).unwrap();
        assert!((ribbon - 2f64.powi(-10)).abs() < 1e-12);
        assert_eq!(built_fpr(FilterKind::BinaryFuse8, 9.0, 1000), Some(1.0 / 256.0));
        assert_eq!(built_fpr(FilterKind::Xor16, 20.0, 1000), Some(1.0 / 65536.0));
        assert_eq!(built_fpr(FilterKind::Cuckoo, 12.0, 1000), None);
        // The packed filter's width from its bits per key and key count, as built.
        let keys = crate::rng::SplitMix64::new(6).hashes(9000);
        for w in [3, 9, 14] {
            let f = PackedBinaryFuse::build(&keys, w).unwrap();
            let fpr = built_fpr(FilterKind::PackedBinaryFuse, f.bits_per_key(), 9000);
            assert_eq!(fpr, Some(f.fpr()), "w {w}");
        }
        // The two-bit filter: falls with memory, far above a Bloom filter's at 16 bits/key.
        let two_bit = |b| built_fpr(FilterKind::TwoBitBloom, b, 1000).unwrap();
        assert!(two_bit(8.0) > two_bit(16.0) && two_bit(16.0) > two_bit(32.0));
        assert!(two_bit(16.0) > 10.0 * built_fpr(FilterKind::BlockedBloom, 16.0, 1000).unwrap());
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
