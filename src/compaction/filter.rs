//! The construction of a compaction output's filter from the collected key hashes
//! ([`build_filter`], with its Bloom fallback). Which kind and FPR each level gets is planned in
//! src/filter_plan/; the FPR a built filter has is the filter library's cost model
//! (`siftdb_filter::cost`).

use crate::error::Result;
use crate::filter::prelude::*;
use crate::filter::{
    BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom, BumpedRibbon,
    PackedBinaryFuse, Ribbon, StandardBloom, Xor16, Xor8,
};
use crate::filter_plan::{LevelFilter, MIN_FPR};
use crate::options::StaticFilterKind;

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
            StaticFilterKind::BumpedRibbon => BumpedRibbon::with_false_pos(fpr.clamp(MIN_FPR, 0.5))
                .threads(build_threads())
                .build(hashes)?
                .to_bytes(),
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

/// Threads a bumped ribbon filter's large layers are banded on: the machine's cores, at most
/// four. The bytes do not depend on it; the table waits for its filter, so a free core
/// shortens a flush, a compaction or an `SstWriter::finish` (the banding is most of it).
/// Read once: `available_parallelism` reads the cgroup's CPU quota from files on Linux.
fn build_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(4))
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
