use super::*;
use crate::conformance::measured_fpr;
use crate::math;
use crate::rng::SplitMix64;
use crate::FilterView;

#[test]
fn no_false_negatives_across_sizes_with_duplicates() {
    for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
        let mut keys = SplitMix64::new(i as u64).hashes(n);
        keys.extend_from_within(..n / 3); // duplicates are removed, not an error
        let f = Ribbon::with_false_pos(0.01).build(&keys).unwrap();
        assert_eq!(f.num_keys(), n as u64);
        assert!(keys.iter().all(|&k| f.contains_hash(k)), "n = {n}");
    }
}

#[test]
fn no_false_negatives_at_random_sizes_and_targets() {
    let mut rng = SplitMix64::new(77);
    for round in 0..40 {
        let n = rng.below(if round % 4 == 0 { 40_000 } else { 600 }) as usize;
        let mut keys = rng.hashes(n);
        let dups: Vec<u64> = (0..n / 2).map(|_| keys[rng.below(n as u64) as usize]).collect();
        keys.extend(dups);
        let builder = match round % 3 {
            0 => Ribbon::with_false_pos(0.3 * rng.next_f64() + 1e-6),
            1 => Ribbon::with_result_bits(1 + rng.below(32) as u32),
            _ => Ribbon::with_false_pos(0.01),
        };
        let f = builder.seed(rng.next_u64()).build(&keys).unwrap();
        assert!(keys.iter().all(|&k| f.contains_hash(k)), "round {round}, n = {n}");
    }
}

#[test]
fn empty_set_answers_no_to_everything() {
    let f = Ribbon::build(&[]).unwrap();
    assert_eq!((f.num_slots(), f.memory_bytes(), f.fpr()), (0, 0, 0.0));
    assert_eq!(measured_fpr(&f, 10_000, 1), 0.0);
    let bytes = f.to_bytes();
    let view = FilterView::parse(&bytes).unwrap();
    assert!(!view.contains_hash(12345));
}

#[test]
fn measured_fpr_matches_theory_at_integer_and_fractional_bits() {
    // Standard ribbon: a non-key's result bits are independent of its row and of Z, so each
    // probe is a Bernoulli(fpr()) trial. Tolerance: 5 binomial sigmas sqrt(p(1-p)/N) plus 3% of
    // p for imperfect hashing (the model itself is exact).
    let keys = SplitMix64::new(3).hashes(100_000);
    let probes = 1_000_000;
    let builders = [
        (Ribbon::with_result_bits(7), 2f64.powi(-7)),
        (Ribbon::with_result_bits(10), 2f64.powi(-10)),
        (Ribbon::with_false_pos(0.01), 0.01),
        (Ribbon::with_false_pos(0.001), 0.001),
    ];
    for (i, (builder, target)) in builders.into_iter().enumerate() {
        let f = builder.build(&keys).unwrap();
        let p = f.fpr();
        assert!(p <= target * (1.0 + 1e-9) && p > 0.97 * target, "theory {p} vs {target}");
        let observed = measured_fpr(&f, probes, 100 + i as u64);
        let tol = 5.0 * math::binomial_sigma(p, probes) + 0.03 * p;
        assert!((observed - p).abs() <= tol, "target {target}: observed {observed}, theory {p}");
    }
}

#[test]
fn bits_per_key_at_one_million_keys_is_within_8_percent_of_the_bound() {
    let keys = SplitMix64::new(4).hashes(1_000_000);
    for builder in [Ribbon::with_false_pos(0.01), Ribbon::with_result_bits(7)] {
        let f = builder.build(&keys).unwrap();
        let bound = -f.fpr().log2();
        let bpk = f.bits_per_key();
        assert!(bpk <= 1.08 * bound, "{bpk} bits/key vs log2(1/fpr) = {bound}");
        assert_eq!(f.memory_bytes() as f64 * 8.0, bpk * 1e6);
    }
}

#[test]
fn batch_answers_equal_single_answers() {
    let keys = SplitMix64::new(5).hashes(20_000);
    let f = Ribbon::build(&keys).unwrap();
    let mut probes = keys[..1000].to_vec();
    probes.extend(SplitMix64::new(6).hashes(10_000));
    let mut out = Vec::new();
    f.contains_batch(&probes, &mut out);
    let single: Vec<bool> = probes.iter().map(|&h| f.contains_hash(h)).collect();
    assert_eq!(out, single);
}

#[test]
fn round_trip_and_zero_copy_view_agree() {
    for (n, builder) in [(5000, Ribbon::with_false_pos(0.01)), (300, Ribbon::with_result_bits(16))]
    {
        let keys = SplitMix64::new(n).hashes(n as usize);
        let f = builder.build(&keys).unwrap();
        let bytes = f.to_bytes();
        assert_eq!(Ribbon::from_bytes(&bytes).unwrap(), f);
        let view = FilterView::parse(&bytes).unwrap();
        assert_eq!(view.kind(), FilterKind::Ribbon);
        let mut rng = SplitMix64::new(5);
        for h in keys.iter().copied().chain((0..20_000).map(|_| rng.next_u64())) {
            assert_eq!(view.contains_hash(h), f.contains_hash(h));
        }
    }
}

/// Encodes ribbon params with a valid checksum, so only the parameter checks can reject them.
fn forged(n: u64, blocks: u64, upper: u64, k: u8, w: u8, payload_words: usize) -> Vec<u8> {
    let params = ParamWriter::new().u64(1).u64(n).u64(blocks).u64(upper).u8(k).u8(w).finish();
    envelope::encode(FilterKind::Ribbon, &params, |out| {
        envelope::write_words(&vec![0u64; payload_words], out)
    })
}

#[test]
fn inconsistent_params_with_valid_checksum_are_corruption() {
    // The well-formed baseline: 10 keys, 2 blocks, no upper blocks, 7 columns: 28 words.
    assert!(Ribbon::from_bytes(&forged(10, 2, 2, 7, 128, 28)).is_ok());
    let bad = [
        forged(10, 2, 2, 7, 128, 27),            // payload one word short
        forged(10, 3, 3, 7, 128, 28),            // more blocks than the payload holds
        forged(10, 2, 1, 7, 128, 28),            // an upper block needs 2 more words
        forged(10, 2, 3, 7, 128, 28),            // upper start beyond the blocks
        forged(10, 2, 2, 0, 128, 0),             // zero columns
        forged(10, 2, 2, 33, 128, 132),          // 33 columns
        forged(10, 2, 1, 32, 128, 130),          // upper blocks with 33 columns
        forged(10, 2, 2, 7, 64, 28),             // 64-bit rows are a different encoding
        forged(5, 0, 0, 7, 128, 0),              // keys but no table: would be false negatives
        forged(257, 2, 2, 7, 128, 28),           // more keys than slots
        forged(10, 1 << 40, 1 << 40, 7, 128, 0), // absurd block count, no allocation
    ];
    for (i, b) in bad.iter().enumerate() {
        let err = Ribbon::from_bytes(b).unwrap_err();
        assert!(err.is_corruption(), "case {i}: {err}");
        assert!(FilterView::parse(b).is_err(), "case {i}");
    }
}

#[test]
fn construction_is_deterministic_and_order_independent() {
    let keys = SplitMix64::new(8).hashes(10_000);
    let a = Ribbon::with_false_pos(0.01).seed(42).build(&keys).unwrap();
    let mut shuffled = keys.clone();
    shuffled.reverse();
    shuffled.extend_from_slice(&keys[..100]);
    let b = Ribbon::with_false_pos(0.01).seed(42).build(&shuffled).unwrap();
    assert_eq!(a.to_bytes(), b.to_bytes());
    let c = Ribbon::with_false_pos(0.01).seed(43).build(&keys).unwrap();
    assert_ne!(a.to_bytes(), c.to_bytes());
}

#[test]
fn invalid_targets_are_errors_not_panics() {
    for p in [0.0, -0.1, 0.6, 1.0, f64::NAN, f64::INFINITY, 1e-12] {
        let err = Ribbon::with_false_pos(p).build(&[1, 2, 3]).unwrap_err();
        assert!(matches!(err, FilterError::InvalidArgument(_)), "{p}: {err}");
    }
    for r in [0, 33] {
        let err = Ribbon::with_result_bits(r).build(&[1, 2, 3]).unwrap_err();
        assert!(matches!(err, FilterError::InvalidArgument(_)), "{r}: {err}");
    }
}

/// The probe of docs/format.md#ribbon, written from the text over raw bytes, sharing no
/// code with the module: if the two disagree, the document or the code is wrong.
fn design_md_probe(bytes: &[u8], h: u64) -> bool {
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let fmix = |x: u64, s: u64| {
        let mut x = x.wrapping_add(s);
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
        x ^ (x >> 33)
    };
    let params_len = u16::from_le_bytes([bytes[6], bytes[7]]) as usize;
    let p = &bytes[16..16 + params_len];
    let payload = &bytes[16 + params_len.div_ceil(8) * 8..];
    let (seed, blocks, upper, k) = (u64_at(p, 0), u64_at(p, 16), u64_at(p, 24), p[32] as u64);
    if blocks == 0 {
        return false;
    }
    let starts = 128 * (blocks - 1) + 1;
    let cols = |b: u64| if b < upper { k } else { k + 1 };
    let first_unit = |b: u64| b * k + b.saturating_sub(upper);
    let unit = |u: u64| {
        let i = 16 * u as usize;
        u64_at(payload, i) as u128 | (u64_at(payload, i + 8) as u128) << 64
    };
    let h1 = fmix(h, seed);
    let s = ((h1 as u128 * starts as u128) >> 64) as u64;
    let c =
        (fmix(h1, 0x0C0EFF1000000002) as u128) << 64 | (fmix(h1, 0x0C0EFF1000000001) | 1) as u128;
    let (b, o) = (s / 128, s % 128);
    (0..cols(b)).all(|j| {
        let mut x = unit(first_unit(b) + j) & (c << o);
        if o > 0 {
            x ^= unit(first_unit(b + 1) + j) & (c >> (128 - o));
        }
        x.count_ones() as u64 % 2 == (h1 >> j) & 1
    })
}

#[test]
fn probe_written_from_design_md_agrees_with_the_filter() {
    for (n, builder) in [(3000, Ribbon::with_false_pos(0.02)), (700, Ribbon::with_result_bits(5))] {
        let keys = SplitMix64::new(n).hashes(n as usize);
        let f = builder.build(&keys).unwrap();
        let bytes = f.to_bytes();
        let mut rng = SplitMix64::new(12);
        for h in keys.iter().copied().chain((0..50_000).map(|_| rng.next_u64())) {
            assert_eq!(design_md_probe(&bytes, h), f.contains_hash(h), "n {n}, hash {h:#x}");
        }
    }
}
