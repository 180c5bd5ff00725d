use super::*;
use crate::conformance::filled;
use crate::rng::SplitMix64;
use crate::FilterView;
use std::collections::HashMap;

#[test]
fn no_false_negatives_across_sizes_with_duplicates() {
    for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
        let (mut f, keys) = filled::<CountingBloom>(n, 10.0, i as u64);
        for &k in keys.iter().take(1000) {
            f.insert_hash(k);
        }
        assert!(keys.iter().all(|&k| f.contains_hash(k)), "n = {n}");
    }
}

#[test]
fn random_inserts_and_removes_agree_with_a_multiplicity_model() {
    // Inserts 45%, removes 55%: each key's count is a reflected random walk with a geometric
    // stationary law (ratio 0.45/0.55, mean ~4.5), so some keys sit at 0 (refusals are tested)
    // and some counters reach 15. A small table (8000 counters, k = 3) so that counters saturate
    // and keys share counters: the invariant under test is that a counter below 15 holds exactly
    // the multiplicity sum of its keys, and a saturated one stays at 15, so a key with a
    // positive model count is always present.
    let pool = SplitMix64::new(77).hashes(2_000);
    let mut f = CountingBloom::from_shape(8_000, 3).unwrap();
    let mut model: HashMap<u64, u32> = HashMap::new();
    let mut rng = SplitMix64::new(78);
    let (mut removed, mut refused) = (0, 0);
    for step in 0..200_000u32 {
        let key = pool[rng.below(pool.len() as u64) as usize];
        let count = model.get(&key).copied().unwrap_or(0);
        if rng.below(100) < 45 {
            f.insert_hash(key);
            *model.entry(key).or_default() += 1;
        } else if count > 0 {
            f.remove_hash(key).unwrap();
            model.insert(key, count - 1);
            removed += 1;
        } else if !f.contains_hash(key) {
            let before = f.to_bytes();
            assert!(f.remove_hash(key).is_err());
            assert_eq!(f.to_bytes(), before, "a refused removal changed the filter");
            refused += 1;
        }
        if step % 10_000 == 0 {
            for (&k, &c) in &model {
                assert!(c == 0 || f.contains_hash(k), "false negative at step {step}");
            }
        }
    }
    for (&k, &c) in &model {
        assert!(c == 0 || f.count_estimate(k) as u32 >= c.min(15), "count underestimated");
    }
    assert!(removed > 10_000 && refused > 0, "removed {removed}, refused {refused}");
    let saturated = f.words.iter().flat_map(|&w| (0..16).map(move |i| (w >> (4 * i)) & 0xF));
    assert!(saturated.filter(|&v| v == 15).count() > 0, "the test never saturated a counter");
}

#[test]
fn removing_an_absent_key_is_an_error_and_changes_nothing() {
    let (mut f, _) = filled::<CountingBloom>(1000, 10.0, 4);
    let mut rng = SplitMix64::new(1234);
    let absent = std::iter::repeat_with(|| rng.next_u64()).find(|&h| !f.contains_hash(h)).unwrap();
    let before = f.to_bytes();
    let err = f.remove_hash(absent).unwrap_err();
    assert!(matches!(err, FilterError::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("key is not in the filter"));
    assert_eq!(f.to_bytes(), before);
}

#[test]
fn saturated_counters_never_decrement_so_no_false_negative() {
    let mut f = CountingBloom::from_shape(1000, 4).unwrap();
    let key = 0xDEAD_BEEF;
    for _ in 0..20 {
        f.insert_hash(key);
    }
    assert_eq!(f.count_estimate(key), 15);
    for i in 0..20 {
        f.remove_hash(key).unwrap_or_else(|e| panic!("removal {i}: {e}"));
    }
    // True count is 0, but the counters cannot know it: they stay saturated.
    assert!(f.contains_hash(key));
    assert_eq!(f.count_estimate(key), 15);
}

#[test]
fn insert_then_remove_restores_the_empty_filter() {
    let mut f = CountingBloom::from_shape(10_000, 7).unwrap();
    let empty = f.clone();
    let keys = SplitMix64::new(9).hashes(500);
    f.insert_batch(&keys);
    for &k in &keys {
        f.remove_hash(k).unwrap();
    }
    assert_eq!(f, empty);
}

#[test]
fn measured_fpr_matches_the_standard_formula() {
    // Tolerance: 5 binomial standard deviations sqrt(p(1-p)/N) around the standard formula
    // (1 - e^(-k n/m))^k with m = counters, plus 5% of p for the formula's approximation.
    let n = 100_000;
    let trials = 1_000_000u64;
    for cpk in [8.0, 12.0] {
        let (f, _) = filled::<CountingBloom>(n, cpk, 42);
        let p = f.theoretical_fpr();
        let mut rng = SplitMix64::new(7);
        let fp = (0..trials).filter(|_| f.contains_hash(rng.next_u64())).count();
        let observed = fp as f64 / trials as f64;
        let tol = 5.0 * math::binomial_sigma(p, trials) + 0.05 * p;
        assert!((observed - p).abs() <= tol, "cpk {cpk}: observed {observed}, theory {p}");
    }
}

#[test]
fn batch_answers_equal_single_answers() {
    let (f, keys) = filled::<CountingBloom>(10_000, 8.0, 3);
    let mut probes = keys[..500].to_vec();
    probes.extend(SplitMix64::new(99).hashes(5000));
    let mut out = Vec::new();
    f.contains_batch(&probes, &mut out);
    let single: Vec<bool> = probes.iter().map(|&h| f.contains_hash(h)).collect();
    assert_eq!(out, single);
    let bytes = f.to_bytes();
    let view = CountingBloomView::parse(&envelope::decode(&bytes).unwrap()).unwrap();
    view.contains_batch(&probes, &mut out);
    assert_eq!(out, single);
}

#[test]
fn round_trip_and_zero_copy_view_agree() {
    let (mut f, keys) = filled::<CountingBloom>(5000, 10.0, 11);
    for &k in &keys[..1000] {
        f.remove_hash(k).unwrap();
    }
    let bytes = f.to_bytes();
    assert_eq!(CountingBloom::from_bytes(&bytes).unwrap(), f);
    let view = FilterView::parse(&bytes).unwrap();
    assert_eq!(view.kind(), FilterKind::CountingBloom);
    let mut rng = SplitMix64::new(5);
    for h in keys.iter().copied().chain((0..5000).map(|_| rng.next_u64())) {
        assert_eq!(view.contains_hash(h), f.contains_hash(h));
    }
}

#[test]
fn invalid_shapes_are_errors_not_panics() {
    assert!(CountingBloom::from_shape(0, 3).is_err());
    assert!(CountingBloom::from_shape(64, 0).is_err());
    assert!(CountingBloom::from_shape(64, 31).is_err());
    assert!(CountingBloom::from_shape(MAX_COUNTERS + 1, 3).is_err());
    assert!(CountingBloom::with_false_pos(0.0).expected_items(10).is_err());
}

#[test]
fn union_adds_and_intersection_takes_the_minimum() {
    let a_keys = SplitMix64::new(1).hashes(3000);
    let b_keys = SplitMix64::new(2).hashes(3000);
    let mut a = CountingBloom::from_shape(60_000, 7).unwrap();
    let mut b = CountingBloom::from_shape(60_000, 7).unwrap();
    a.insert_batch(&a_keys);
    b.insert_batch(&b_keys);
    b.insert_batch(&a_keys[..1000]);
    let mut u = a.clone();
    u.union_with(&b).unwrap();
    assert!(a_keys.iter().chain(&b_keys).all(|&k| u.contains_hash(k)));
    // The union is a multiset sum: removing b's keys leaves a's keys present.
    for &k in b_keys.iter().chain(&a_keys[..1000]) {
        u.remove_hash(k).unwrap();
    }
    assert!(a_keys.iter().all(|&k| u.contains_hash(k)));
    let mut i = a.clone();
    i.intersect_with(&b).unwrap();
    assert!(a_keys[..1000].iter().all(|&k| i.contains_hash(k)));
    let leaked = a_keys[1000..].iter().filter(|&&k| i.contains_hash(k)).count();
    assert!(leaked < 200, "{leaked} of 2000 one-sided keys survived the intersection");
    assert_eq!(saturating_add_word(0xF1, 0x12), 0xF3);
    assert_eq!(min_word(0x3A, 0x5C), 0x3A);
    let other = CountingBloom::from_shape(60_016, 7).unwrap();
    let before = a.clone();
    assert!(a.union_with(&other).is_err());
    assert!(a.intersect_with(&other).is_err());
    assert_eq!(a, before);
}

#[test]
fn fill_info_counts_nonzero_counters() {
    let (f, _) = filled::<CountingBloom>(100_000, 10.0, 8);
    let info = f.info();
    assert_eq!(info.keys_inserted, 100_000);
    assert_eq!(info.bits, f.num_counters());
    // Expected fill 1 - e^(-k n/m) = 1 - e^(-0.7) ~ 0.503 (k = 7 at 10 counters per key).
    assert!((info.fill_ratio() - 0.503).abs() < 0.01, "{}", info.fill_ratio());
    assert!((info.estimated_fpr - f.theoretical_fpr()).abs() < 0.1 * f.theoretical_fpr());
    assert_eq!(nonzero_nibbles(0xF000_0000_0000_0201), 3);
}
