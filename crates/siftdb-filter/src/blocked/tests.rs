use super::*;
use crate::conformance::filled;
use crate::rng::SplitMix64;
use crate::FilterView;

#[test]
fn no_false_negatives_across_sizes_with_duplicates() {
    for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
        let (mut f, keys) = filled::<BlockedBloom>(n, 10.0, i as u64);
        // Duplicates, through the single-key path this time.
        for &k in keys.iter().take(1000) {
            f.insert_hash(k);
        }
        assert!(keys.iter().all(|&k| f.contains_hash(k)), "n = {n}");
        let mut out = Vec::new();
        f.contains_batch(&keys, &mut out);
        assert!(out.iter().all(|&b| b), "batch, n = {n}");
    }
}

#[test]
fn measured_fpr_matches_the_blocked_formula() {
    // Reference: Putze et al.'s blocked formula sum_i Pois(i; 512/b) (1 - (1 - 1/512)^(k i))^k.
    // Tolerance: 5 binomial sigmas sqrt(p(1-p)/N) plus 6% of p for the formula's own model
    // error: it replaces the block's random fill X/512 by its mean, and E[(X/512)^k] exceeds
    // (E X/512)^k by about k(k-1)/2 * Var(X/512)/fill^2, 1-4% for k = 4..11 at these loads.
    let n = 200_000;
    let trials = 1_000_000u64;
    for bpk in [6.0, 8.0, 10.0, 12.0, 16.0] {
        // Blocks are whole, so the reference uses the filter's actual load (keys per block).
        let (f, _) = filled::<BlockedBloom>(n, bpk, 42);
        let p = f.theoretical_fpr();
        let mut rng = SplitMix64::new(7);
        let fp = (0..trials).filter(|_| f.contains_hash(rng.next_u64())).count();
        let observed = fp as f64 / trials as f64;
        let tol = 5.0 * math::binomial_sigma(p, trials) + 0.06 * p;
        assert!(
            (observed - p).abs() <= tol,
            "bpk {bpk}, k {}: observed {observed}, theory {p}",
            f.probes()
        );
    }
}

#[test]
fn builder_uses_the_blocked_probe_count_and_formula() {
    // The probe count minimises the blocked formula; from 16 bits/key on it is clearly below
    // the textbook round(b ln 2) (10 vs 11 at 16, 11 vs 14 at 20).
    for (bpk, k) in [(10.0, 7), (16.0, 10), (20.0, 11)] {
        let f = BlockedBloom::with_bits_per_key(bpk).expected_items(100_000).unwrap();
        assert_eq!(f.probes(), k, "bpk {bpk}");
        assert_eq!(f.num_blocks(), ((100_000.0 * bpk) as u64).div_ceil(512));
    }
    // A 1% target needs more memory than the standard layout's 9.59 bits/key.
    let f = BlockedBloom::with_false_pos(0.01).expected_items(100_000).unwrap();
    let bpk = f.num_bits() as f64 / 100_000.0;
    assert!((9.8..10.8).contains(&bpk), "{bpk}");
    assert!(<BlockedBloom as BloomShape>::theoretical_fpr(bpk, f.probes()) <= 0.0101);
}

#[test]
fn invalid_sizes_are_errors_not_panics() {
    assert!(BlockedBloom::with_false_pos(0.0).expected_items(10).is_err());
    assert!(BlockedBloom::with_false_pos(f64::NAN).expected_items(10).is_err());
    assert!(BlockedBloom::with_bits_per_key(-1.0).expected_items(10).is_err());
    assert!(BlockedBloom::with_bits_per_key(10.0).expected_items(u64::MAX).is_err());
    assert!(BlockedBloom::from_shape(0, 3).is_err());
    assert!(BlockedBloom::from_shape(512, 0).is_err());
    assert!(BlockedBloom::from_shape(512, MAX_PROBES + 1).is_err());
    assert!(BlockedBloom::from_shape(crate::sizing::MAX_BITS + 1, 6).is_err());
    assert_eq!(BlockedBloom::from_shape(513, 6).unwrap().num_blocks(), 2);
}

#[test]
fn owned_blocks_are_cache_line_aligned() {
    let f = BlockedBloom::from_shape(512 * 5, 6).unwrap();
    assert_eq!(std::mem::size_of::<Block>(), 64);
    assert!(f.blocks.iter().all(|b| (b as *const Block as usize).is_multiple_of(64)));
}

#[test]
fn every_key_sets_bits_in_exactly_one_block() {
    let mut f = BlockedBloom::from_shape(512 * 64, 7).unwrap();
    let h = 0x0123_4567_89AB_CDEF;
    f.insert_hash(h);
    let touched: Vec<usize> = (0..64).filter(|&b| f.blocks[b] != Block::default()).collect();
    assert_eq!(touched, vec![block_of(h, 64)]);
    let ones: u32 = f.blocks[touched[0]].0.iter().map(|w| w.count_ones()).sum();
    assert!((1..=7).contains(&ones), "{ones}");
}

#[test]
fn batch_answers_equal_single_answers() {
    let (f, keys) = filled::<BlockedBloom>(10_000, 8.0, 3);
    let mut probes = keys[..500].to_vec();
    probes.extend(SplitMix64::new(99).hashes(5003)); // not a multiple of the batch size
    let mut out = Vec::new();
    f.contains_batch(&probes, &mut out);
    let single: Vec<bool> = probes.iter().map(|&h| f.contains_hash(h)).collect();
    assert_eq!(out, single);
    // insert_batch builds the same table as one insert_hash per key.
    let mut one_by_one = BlockedBloom::from_shape(f.num_bits(), f.probes()).unwrap();
    keys.iter().for_each(|&k| one_by_one.insert_hash(k));
    assert_eq!(one_by_one, f);
}

#[test]
fn round_trip_and_zero_copy_view_agree() {
    let (f, keys) = filled::<BlockedBloom>(5000, 10.0, 11);
    let bytes = f.to_bytes();
    assert_eq!(BlockedBloom::from_bytes(&bytes).unwrap(), f);
    let view = FilterView::parse(&bytes).unwrap();
    assert_eq!(view.kind(), FilterKind::BlockedBloom);
    let mut rng = SplitMix64::new(5);
    for h in keys.iter().copied().chain((0..5000).map(|_| rng.next_u64())) {
        assert_eq!(view.contains_hash(h), f.contains_hash(h));
    }
    assert!(view.contains(b"absent?") == f.contains(b"absent?"));
}

#[test]
fn fill_estimate_tracks_theory_without_the_key_count() {
    let (f, _) = filled::<BlockedBloom>(100_000, 10.0, 8);
    let info = f.info();
    assert_eq!(info.keys_inserted, 100_000);
    assert_eq!(info.bits, f.num_bits());
    // The estimate uses only the blocks' popcounts; it must land near the formula, which uses
    // the key count (10%: sampling noise of 1954 blocks plus the formula's model error).
    let p = f.theoretical_fpr();
    assert!((info.estimated_fpr - p).abs() < 0.1 * p, "{} vs {p}", info.estimated_fpr);
    let empty = BlockedBloom::from_shape(4096, 6).unwrap().info();
    assert_eq!((empty.bits_set, empty.estimated_fpr), (0, 0.0));
}
