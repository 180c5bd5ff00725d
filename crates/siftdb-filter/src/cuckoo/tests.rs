//! Tests of the cuckoo filter: load, deletion, failure atomicity, FPR, size, encoding.

use super::layout::Geometry;
use super::*;
use crate::envelope::ParamWriter;
use crate::math::binomial_sigma;
use crate::rng::SplitMix64;
use crate::FilterView;

/// Inserts seeded random hashes into `2^log2` buckets until the first insert fails; returns the
/// filter (unchanged by that failure), the hashes stored and the hash that did not fit.
fn fill_until_full(log2: u32, f: u32, seed: u64) -> (Cuckoo, Vec<u64>, u64) {
    let mut c = Cuckoo::with_buckets(log2, f).unwrap().seeded(seed);
    let mut rng = SplitMix64::new(seed);
    let mut keys = Vec::new();
    loop {
        let h = rng.next_u64();
        match c.insert_hash(h) {
            Ok(()) => keys.push(h),
            Err(FilterError::Full(_)) => return (c, keys, h),
            Err(e) => panic!("unexpected error {e}"),
        }
    }
}

#[test]
fn load_factor_reaches_94_percent_for_every_width() {
    for f in FINGERPRINT_BITS {
        let (c, keys, _) = fill_until_full(14, f, f as u64);
        assert!(c.load_factor() >= 0.94, "f = {f}: first failure at load {}", c.load_factor());
        assert_eq!(c.len(), keys.len() as u64);
        assert!(keys.iter().all(|&k| c.contains_hash(k)), "f = {f}: false negative");
    }
}

#[test]
fn twelve_bit_fingerprints_cost_at_most_13_bits_per_key_when_full() {
    let (c, keys, _) = fill_until_full(16, 12, 3);
    let bits_per_key = c.memory_bytes() as f64 * 8.0 / keys.len() as f64;
    // 12 bits per slot exactly (bit-packed), so bits/key = 12 / load.
    assert_eq!(c.memory_bytes() as u64 * 8, c.capacity() * 12);
    assert!(bits_per_key <= 13.0, "{bits_per_key} bits/key at load {}", c.load_factor());
}

#[test]
fn failed_insert_leaves_the_filter_byte_identical() {
    for f in FINGERPRINT_BITS {
        let (mut c, mut keys, rejected) = fill_until_full(10, f, 40 + f as u64);
        let before = c.to_bytes();
        assert!(matches!(c.insert_hash(rejected), Err(FilterError::Full(_))));
        assert_eq!(c.to_bytes(), before, "f = {f}: the failed insert changed the filter");
        // Keep pushing: every failure is a no-op, every success keeps all earlier keys.
        let mut rng = SplitMix64::new(99);
        let mut failures = 0;
        for _ in 0..200 {
            let h = rng.next_u64();
            let snapshot = c.to_bytes();
            match c.insert_hash(h) {
                Ok(()) => keys.push(h),
                Err(_) => {
                    failures += 1;
                    assert_eq!(c.to_bytes(), snapshot);
                }
            }
        }
        assert!(failures > 0, "f = {f}: a full filter accepted 200 more keys");
        assert!(keys.iter().all(|&k| c.contains_hash(k)), "f = {f}: a fingerprint was lost");
        assert_eq!(c.len(), keys.len() as u64);
    }
}

#[test]
fn no_false_negatives_across_sizes_with_duplicates() {
    for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
        let f = FINGERPRINT_BITS[i % 3];
        let dups = n.min(1000);
        let mut c = Cuckoo::with_capacity((n + dups) as u64, f).unwrap();
        let keys = SplitMix64::new(i as u64).hashes(n);
        for &k in keys.iter().chain(&keys[..dups]) {
            c.insert_hash(k).unwrap_or_else(|e| panic!("n = {n}, f = {f}: {e}"));
        }
        assert_eq!(c.len(), (n + dups) as u64);
        assert!(keys.iter().all(|&k| c.contains_hash(k)), "n = {n}, f = {f}");
    }
}

#[test]
fn deleted_keys_are_mostly_absent_and_kept_keys_all_present() {
    let n = 10_000;
    let mut c = Cuckoo::with_capacity(n as u64, 12).unwrap();
    let keys = SplitMix64::new(5).hashes(n);
    for &k in &keys {
        c.insert_hash(k).unwrap();
    }
    let (gone, kept) = keys.split_at(n / 2);
    for &k in gone {
        c.remove_hash(k).unwrap();
    }
    assert_eq!(c.len(), kept.len() as u64);
    assert!(kept.iter().all(|&k| c.contains_hash(k)));
    // A deleted key stays "present" only as a false positive against what remains, so the count
    // is Binomial(n/2, p) with p = cuckoo_fpr(12, load): accept the mean plus 5 sigma plus 2.
    let p = c.theoretical_fpr();
    let present = gone.iter().filter(|&&k| c.contains_hash(k)).count() as f64;
    let m = gone.len() as f64;
    let bound = m * p + 5.0 * m * binomial_sigma(p, gone.len() as u64) + 2.0;
    assert!(present <= bound, "{present} of {m} deleted keys still present (bound {bound:.1})");
}

#[test]
fn key_inserted_twice_and_removed_once_is_still_present() {
    let mut c = Cuckoo::with_capacity(100, 16).unwrap();
    c.insert(b"twice").unwrap();
    c.insert(b"twice").unwrap();
    assert_eq!(c.len(), 2);
    c.remove(b"twice").unwrap();
    assert!(c.contains(b"twice"));
    c.remove(b"twice").unwrap();
    assert!(!c.contains(b"twice"));
    let before = c.to_bytes();
    assert!(matches!(c.remove(b"twice"), Err(FilterError::InvalidArgument(_))));
    assert_eq!(c.to_bytes(), before, "removing an absent key changed the filter");
}

#[test]
fn at_most_eight_copies_of_one_key_fit() {
    let mut c = Cuckoo::with_buckets(8, 8).unwrap();
    for _ in 0..2 * SLOTS {
        c.insert(b"k").unwrap();
    }
    assert!(matches!(c.insert(b"k"), Err(FilterError::Full(_))));
    assert_eq!(c.len(), 8);
}

#[test]
fn measured_fpr_at_full_load_matches_the_formula() {
    // Formula: 1 - (1 - p)^(8 alpha) with p = (2^f + 2) / 4^f (zero fingerprint remapped to 1).
    // Tolerance: 5 binomial sigmas sqrt(p(1-p)/N), plus 3% of the rate for the model, which uses
    // the mean occupancy 8 alpha of the two buckets where the FPR is a slightly concave function
    // of it (relative error about 8 alpha 2^-f / 2 <= 1.5% at f = 8).
    for (f, queries) in [(8u32, 300_000u64), (12, 1_000_000), (16, 4_000_000)] {
        let (c, _, _) = fill_until_full(14, f, 70 + f as u64);
        let p = cuckoo_fpr(f, c.load_factor());
        let mut rng = SplitMix64::new(1234 + f as u64);
        let fp = (0..queries).filter(|_| c.contains_hash(rng.next_u64())).count();
        let observed = fp as f64 / queries as f64;
        let tol = 5.0 * binomial_sigma(p, queries) + 0.03 * p;
        assert!((observed - p).abs() <= tol, "f = {f}: observed {observed:.6}, formula {p:.6}");
    }
}

#[test]
fn builder_picks_the_narrowest_width_meeting_the_target() {
    // 1000 keys -> 512 buckets, load 0.49: f = 8 gives 1.5%, 12 gives 0.095%, 16 gives 0.006%.
    let width = |p: f64| Cuckoo::with_false_pos(p).expected_items(1000).unwrap().fingerprint_bits();
    assert_eq!(width(0.05), 8);
    assert_eq!(width(0.01), 12);
    assert_eq!(width(0.0005), 16);
    assert!(Cuckoo::with_false_pos(1e-6).expected_items(1000).is_err());
    let c = Cuckoo::with_false_pos(0.01).seed(9).expected_items(1000).unwrap();
    assert_eq!((c.bucket_count(), c.seed()), (512, 9));
}

#[test]
fn with_capacity_rounds_buckets_up_to_a_power_of_two() {
    assert_eq!(Cuckoo::with_capacity(0, 8).unwrap().bucket_count(), 1);
    assert_eq!(Cuckoo::with_capacity(3, 8).unwrap().bucket_count(), 1);
    assert_eq!(Cuckoo::with_capacity(4, 8).unwrap().bucket_count(), 2);
    // 1e6 / 3.8 = 263,158 -> 2^19.
    assert_eq!(Cuckoo::with_capacity(1_000_000, 12).unwrap().bucket_count(), 1 << 19);
}

#[test]
fn invalid_arguments_are_errors_not_panics() {
    for f in [0, 4, 10, 32, 64] {
        assert!(Cuckoo::with_capacity(100, f).is_err(), "f = {f}");
    }
    assert!(Cuckoo::with_buckets(MAX_BUCKET_LOG2 + 1, 8).is_err());
    assert!(Cuckoo::with_capacity(u64::MAX, 8).is_err());
    for p in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
        assert!(Cuckoo::with_false_pos(p).expected_items(10).is_err(), "fpr {p}");
    }
}

#[test]
fn bit_packed_buckets_round_trip_without_touching_neighbours() {
    for f in FINGERPRINT_BITS {
        let g = Geometry::new(f, 5).unwrap();
        let mut words = vec![0u64; g.word_count() as usize];
        let mut rng = SplitMix64::new(f as u64);
        let mut model = vec![0u64; g.buckets() as usize];
        let mask = if 4 * f == 64 { u64::MAX } else { (1 << (4 * f)) - 1 };
        for _ in 0..2000 {
            let b = rng.below(g.buckets());
            let v = rng.next_u64() & mask;
            g.write(&mut words, b, v);
            model[b as usize] = v;
            assert!((0..g.buckets()).all(|i| g.read(words.as_slice(), i) == model[i as usize]));
        }
    }
}

#[test]
fn alternate_bucket_is_an_involution_and_differs() {
    let mut rng = SplitMix64::new(8);
    for log2 in [1u32, 3, 20] {
        let g = Geometry::new(12, log2).unwrap();
        for _ in 0..10_000 {
            let (i, fp) = (rng.below(g.buckets()), 1 + rng.below(4095));
            let j = g.alt(i, fp);
            assert!(j < g.buckets() && j != i);
            assert_eq!(g.alt(j, fp), i);
        }
    }
    assert_eq!(Geometry::new(8, 0).unwrap().alt(0, 77), 0);
}

#[test]
fn round_trip_view_and_batch_agree() {
    for f in FINGERPRINT_BITS {
        let mut c = Cuckoo::with_capacity(5000, f).unwrap().seeded(f as u64);
        let keys = SplitMix64::new(11).hashes(5000);
        for &k in &keys {
            c.insert_hash(k).unwrap();
        }
        let bytes = c.to_bytes();
        assert_eq!(Cuckoo::from_bytes(&bytes).unwrap(), c);
        let env = envelope::decode(&bytes).unwrap();
        let view = CuckooView::parse(&env).unwrap();
        assert_eq!(view.len(), 5000);
        let any = FilterView::parse(&bytes).unwrap();
        assert_eq!(any.kind(), FilterKind::Cuckoo);
        let mut probes = keys.clone();
        probes.extend(SplitMix64::new(12).hashes(20_000));
        let single: Vec<bool> = probes.iter().map(|&h| c.contains_hash(h)).collect();
        assert!(probes.iter().zip(&single).all(|(&h, &s)| any.contains_hash(h) == s));
        let (mut owned_batch, mut view_batch) = (Vec::new(), Vec::new());
        c.contains_batch(&probes, &mut owned_batch);
        view.contains_batch(&probes, &mut view_batch);
        assert_eq!(owned_batch, single);
        assert_eq!(view_batch, single);
    }
}

/// An envelope with a valid checksum around arbitrary params and payload words.
fn envelope(f: u8, log2: u8, items: u64, words: &[u64]) -> Vec<u8> {
    let params = ParamWriter::new().u8(f).u8(log2).u64(items).u64(0).finish();
    envelope::encode(FilterKind::Cuckoo, &params, |out| envelope::write_words(words, out))
}

#[test]
fn checksummed_but_inconsistent_params_are_rejected() {
    // Baseline: one bucket of 12-bit lanes is 48 bits in one word; one fingerprint stored.
    assert!(Cuckoo::from_bytes(&envelope(12, 0, 1, &[0x5])).is_ok());
    let bad = [
        envelope(10, 0, 1, &[0x5]),           // unsupported width
        envelope(12, 40, 0, &[0]),            // too many buckets (and payload mismatch)
        envelope(12, 1, 0, &[0]),             // payload shorter than 2 buckets need
        envelope(12, 0, 0, &[0, 0]),          // payload longer than 1 bucket needs
        envelope(12, 0, 5, &[0x5]),           // more items than slots
        envelope(12, 0, 2, &[0x5]),           // items disagree with occupied slots
        envelope(12, 0, 1, &[0x5 | 1 << 50]), // bits past the table set
    ];
    for (i, b) in bad.iter().enumerate() {
        let err = Cuckoo::from_bytes(b).unwrap_err();
        assert!(err.is_corruption(), "case {i}: {err}");
    }
    // The view skips the O(n) occupancy count but checks everything else.
    assert!(FilterView::parse(&bad[5]).is_ok());
    for b in bad.iter().take(5).chain(&bad[6..]) {
        assert!(FilterView::parse(b).unwrap_err().is_corruption());
    }
}

#[test]
fn formula_gives_the_papers_figures() {
    // 8 alpha / 2^f at alpha = 0.95: 2.97% (f = 8), 0.186% (f = 12), 0.0116% (f = 16).
    for (f, expected) in [(8, 0.0297), (12, 0.001855), (16, 0.0001160)] {
        let p = cuckoo_fpr(f, 0.95);
        assert!((p - expected).abs() < 0.01 * expected, "f = {f}: {p}");
    }
}
