use super::*;
use crate::rng::SplitMix64;
use crate::{math, FilterView};

#[test]
fn no_false_negatives_across_sizes_with_duplicates() {
    for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
        let mut f = ScalableBloom::new(1000, 0.01).unwrap();
        let keys = SplitMix64::new(i as u64).hashes(n);
        for &k in keys.iter().chain(keys.iter().take(1000)) {
            f.insert_hash(k);
        }
        assert!(keys.iter().all(|&k| f.contains_hash(k)), "n = {n}");
    }
}

#[test]
fn grows_past_100x_initial_capacity_without_false_negatives() {
    let mut f = ScalableBloom::new(500, 0.01).unwrap();
    let keys = SplitMix64::new(3).hashes(60_000);
    for &k in &keys {
        f.try_insert_hash(k).unwrap();
    }
    // Capacities 500 * 2^i: seven stages hold 63,500 keys.
    assert_eq!(f.stage_count(), 7);
    assert_eq!(f.info().keys_inserted, 60_000);
    assert!(keys.iter().all(|&k| f.contains_hash(k)));
}

#[test]
fn a_stage_zero_key_is_found_after_many_stages_were_added() {
    let mut f = ScalableBloom::new(100, 0.01).unwrap();
    let early = 0x0123_4567_89AB_CDEF;
    f.insert_hash(early);
    f.insert_batch(&SplitMix64::new(4).hashes(20_000));
    assert!(f.stage_count() >= 7, "{} stages", f.stage_count());
    assert!(f.stages[0].bloom.contains_hash(early));
    // The key is in stage 0 only: an "every stage says maybe" reading would call it absent.
    let later = f.stages[1..].iter().filter(|s| s.bloom.contains_hash(early)).count();
    assert!(later < f.stage_count() - 1, "every later stage happens to say maybe");
    assert!(f.contains_hash(early));
    let bytes = f.to_bytes();
    assert!(FilterView::parse(&bytes).unwrap().contains_hash(early));
}

#[test]
fn measured_fpr_stays_under_the_target_as_stages_are_added() {
    // At the moment stage L-1 is full, each stage i holds its capacity and has FPR ~ p0 r^i, so
    // the compound FPR is 1 - prod(1 - p_i) <= P (1 - r^L) < P. Tolerance: the observed rate
    // must be within 5 binomial sigmas sqrt(p(1-p)/N) plus 5% of p (the standard formula's
    // approximation) of that per-stage theory, and below P + 5 sigma.
    let target = 0.01;
    let mut f = ScalableBloom::new(2000, target).unwrap();
    let keys = SplitMix64::new(11).hashes(2000 * 31);
    let trials = 200_000u64;
    let mut inserted = 0;
    for stages in 1..=5usize {
        let full = 2000 * ((1 << stages) - 1); // sum of capacities 2000 * 2^i, i < stages
        f.insert_batch(&keys[inserted..full]);
        inserted = full;
        assert_eq!(f.stage_count(), stages);
        let theory = f.theoretical_fpr();
        let mut rng = SplitMix64::new(100 + stages as u64);
        let fp = (0..trials).filter(|_| f.contains_hash(rng.next_u64())).count();
        let observed = fp as f64 / trials as f64;
        let tol = 5.0 * math::binomial_sigma(theory, trials) + 0.05 * theory;
        assert!((observed - theory).abs() <= tol, "{stages} stages: {observed} vs {theory}");
        let cap = target + 5.0 * math::binomial_sigma(target, trials);
        assert!(observed <= cap, "{stages} stages: observed {observed} above target {target}");
        assert!(theory < target, "{stages} stages: theory {theory}");
    }
}

#[test]
fn builder_validates_its_arguments() {
    for (n, p) in [(0, 0.01), (10, 0.0), (10, 1.0), (10, f64::NAN)] {
        assert!(
            matches!(ScalableBloom::new(n, p), Err(FilterError::InvalidArgument(_))),
            "{n} {p}"
        );
    }
    let f = || ScalableBloom::new(100, 0.01).unwrap();
    for r in [0.0, 1.0, -0.5, f64::INFINITY] {
        assert!(matches!(f().with_ratio(r), Err(FilterError::InvalidArgument(_))), "ratio {r}");
    }
    for s in [0.5, 17.0, f64::NAN] {
        assert!(matches!(f().with_growth(s), Err(FilterError::InvalidArgument(_))), "growth {s}");
    }
    let g = f().with_growth(4.0).unwrap().with_ratio(0.9).unwrap();
    assert_eq!((g.growth(), g.ratio(), g.initial_capacity()), (4.0, 0.9, 100));
    let mut used = f();
    used.insert_hash(1);
    assert!(used.with_growth(3.0).is_err());
    // Stage 0 too large for the 2^40-bit limit is a typed error at construction (2^37 keys at
    // p0 = 0.005 need ~11 bits each, 1.5e12 bits).
    assert!(matches!(ScalableBloom::new(1 << 40, 0.01), Err(FilterError::InvalidArgument(_))));
    assert!(matches!(ScalableBloom::new(1 << 37, 0.01), Err(FilterError::InvalidArgument(_))));
}

#[test]
fn the_stage_cap_is_a_typed_error_and_overflow_keeps_every_key() {
    // Growth 1: every stage holds one key, so 64 keys fill all MAX_STAGES stages.
    let mut f = ScalableBloom::new(1, 0.01).unwrap().with_growth(1.0).unwrap();
    let keys = SplitMix64::new(6).hashes(100);
    for &k in &keys[..MAX_STAGES] {
        f.try_insert_hash(k).unwrap();
    }
    assert_eq!(f.stage_count(), MAX_STAGES);
    let before = f.clone();
    assert!(matches!(f.try_insert_hash(keys[64]), Err(FilterError::Full(_))));
    assert_eq!(f, before, "a refused insert changed the filter");
    f.insert_batch(&keys[64..]);
    assert_eq!(f.stage_count(), MAX_STAGES);
    assert!(keys.iter().all(|&k| f.contains_hash(k)));
}

#[test]
fn batch_answers_equal_single_answers() {
    let mut f = ScalableBloom::new(1000, 0.02).unwrap();
    let keys = SplitMix64::new(12).hashes(10_000);
    f.insert_batch(&keys);
    let mut probes = keys[..2000].to_vec();
    probes.extend(SplitMix64::new(13).hashes(5000));
    let single: Vec<bool> = probes.iter().map(|&h| f.contains_hash(h)).collect();
    let mut out = Vec::new();
    f.contains_batch(&probes, &mut out);
    assert_eq!(out, single);
    let bytes = f.to_bytes();
    FilterView::parse(&bytes).unwrap().contains_batch(&probes, &mut out);
    assert_eq!(out, single);
}

#[test]
fn round_trip_and_zero_copy_view_agree() {
    let mut f = ScalableBloom::new(300, 0.01).unwrap().with_ratio(0.8).unwrap();
    let keys = SplitMix64::new(14).hashes(5000);
    f.insert_batch(&keys);
    let bytes = f.to_bytes();
    let back = ScalableBloom::from_bytes(&bytes).unwrap();
    assert_eq!(back, f);
    assert_eq!(back.to_bytes(), bytes);
    let view = FilterView::parse(&bytes).unwrap();
    assert_eq!(view.kind(), FilterKind::ScalableBloom);
    let mut rng = SplitMix64::new(15);
    for h in keys.iter().copied().chain((0..5000).map(|_| rng.next_u64())) {
        assert_eq!(view.contains_hash(h), f.contains_hash(h));
    }
    // Inserting after a round trip continues in the same stage.
    let mut a = f.clone();
    let mut b = back;
    a.insert_batch(&keys[..3000]);
    b.insert_batch(&keys[..3000]);
    assert_eq!(a, b);
}

#[test]
fn stage_records_bound_every_length() {
    // Payloads that pass the outer checksum but lie about their stages (as a buggy writer could
    // produce) are corruption, not panics.
    let mut f = ScalableBloom::new(10, 0.05).unwrap();
    f.insert_batch(&SplitMix64::new(17).hashes(15));
    let bytes = f.to_bytes();
    let env = envelope::decode(&bytes).unwrap();
    let payload = env.payload.to_vec();
    assert!(stage_records(&payload, 2).is_ok());
    assert!(stage_records(&payload, 3).unwrap_err().is_corruption());
    assert!(stage_records(&payload, 1).unwrap_err().is_corruption());
    let mut huge = payload.clone();
    huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(stage_records(&huge, 2).unwrap_err().is_corruption());
    let mut zero_cap = payload;
    zero_cap[0..8].copy_from_slice(&0u64.to_le_bytes());
    assert!(stage_records(&zero_cap, 2).unwrap_err().is_corruption());
}

#[test]
fn set_ops_need_identical_stages() {
    let keys_a = SplitMix64::new(18).hashes(3000);
    let keys_b = SplitMix64::new(19).hashes(3000);
    let mut a = ScalableBloom::new(1000, 0.01).unwrap();
    let mut b = ScalableBloom::new(1000, 0.01).unwrap();
    a.insert_batch(&keys_a);
    b.insert_batch(&keys_b[..1000]);
    b.insert_batch(&keys_a[..2000]); // b also has 3000 keys: the same two stages
    let mut u = a.clone();
    u.union_with(&b).unwrap();
    assert!(keys_a.iter().chain(&keys_b[..1000]).all(|&k| u.contains_hash(k)));
    let mut i = a.clone();
    i.intersect_with(&b).unwrap();
    // Keys in the same stage of both inputs survive the stage-wise AND.
    assert!(keys_a[1000..2000].iter().all(|&k| i.contains_hash(k)));
    let mut c = ScalableBloom::new(1000, 0.01).unwrap();
    c.insert_batch(&keys_b[..100]); // one stage only
    let before = a.clone();
    assert!(matches!(a.union_with(&c), Err(FilterError::InvalidArgument(_))));
    let d = ScalableBloom::new(1000, 0.02).unwrap();
    assert!(a.intersect_with(&d).is_err());
    assert_eq!(a, before);
}

#[test]
fn info_sums_the_stages() {
    let mut f = ScalableBloom::new(1000, 0.01).unwrap();
    f.insert_batch(&SplitMix64::new(20).hashes(7000));
    let info = f.info();
    assert_eq!(f.stage_count(), 3);
    assert_eq!(info.keys_inserted, 7000);
    let bits: u64 = f.stages.iter().map(|s| s.bloom.num_bits()).sum();
    assert_eq!(info.bits, bits);
    assert_eq!(
        f.memory_bytes() as u64,
        f.stages.iter().map(|s| s.bloom.num_bits().div_ceil(64) * 8).sum::<u64>()
    );
    // The fill estimate and the load formula agree within 10% at full stages.
    let theory = f.theoretical_fpr();
    assert!(
        (info.estimated_fpr - theory).abs() < 0.1 * theory,
        "{} vs {theory}",
        info.estimated_fpr
    );
    assert!(info.estimated_fpr < 0.01);
}
