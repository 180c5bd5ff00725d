//! One conformance suite run against every filter kind: what the [`crate::Filter`] and
//! [`crate::SetOps`] contracts and the envelope promise, checked the same way for each (as
//! `siftdb`'s `storage/conformance.rs` does for its storage backends). Kind-specific behaviour
//! (layouts, parameter checks, the exact FPR models across shapes) stays in each kind's tests.
//!
//! Every key set is a seeded [`SplitMix64`] stream, so a failure reproduces.

use crate::prelude::*;
use crate::rng::SplitMix64;
use crate::{
    BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom, BumpedRibbon,
    CountingBloom, Cuckoo, FilterError, FilterView, GrafiteBuilder, GrafiteView, PackedBinaryFuse,
    Result, Ribbon, ScalableBloom, SplitBlockBloom, StandardBloom, TwoBitBloom, TwoBitConfig,
    Xor16, Xor8,
};
use std::fmt::Debug;

/// Fraction of `probes` fresh random hashes the filter accepts: a non-key is a fresh 64-bit
/// value, equal to one of `n` keys with probability `n / 2^64` (negligible).
pub(crate) fn measured_fpr(f: &impl Filter, probes: u64, seed: u64) -> f64 {
    let mut rng = SplitMix64::new(seed);
    let fp = (0..probes).filter(|_| f.contains_hash(rng.next_u64())).count();
    fp as f64 / probes as f64
}

/// A Bloom-family filter of layout `F` sized for `n` keys at `bits_per_key`, holding the first
/// `n` hashes of `SplitMix64::new(seed)`, and those hashes.
pub(crate) fn filled<F: InsertFilter + BloomShape>(
    n: usize,
    bits_per_key: f64,
    seed: u64,
) -> (F, Vec<u64>) {
    let mut f = F::with_bits_per_key(bits_per_key).expected_items(n as u64).unwrap();
    let keys = SplitMix64::new(seed).hashes(n);
    f.insert_batch(&keys);
    (f, keys)
}

/// One serialized filter of a kind, with the keys it holds and how to read it back.
struct Case {
    name: &'static str,
    keys: Vec<u64>,
    bytes: Vec<u8>,
    /// The kind's own decoder (`X::from_bytes`).
    decode: fn(&[u8]) -> Result<()>,
    /// The FPR the kind's math predicts for this filter, and the model error allowed beside
    /// the sampling error (a fraction of the prediction); `None` for range filters.
    fpr: Option<(f64, f64)>,
}

fn inserted<F: InsertFilter>(mut f: F, keys: &[u64]) -> F {
    f.insert_batch(keys);
    f
}

/// Every kind, at a size large enough for a sharp FPR estimate (20,000 keys).
fn cases() -> Vec<Case> {
    let keys = SplitMix64::new(41).hashes(20_000);
    let mut out = Vec::new();
    let mut push = |name, bytes, decode, fpr| {
        out.push(Case { name, keys: keys.clone(), bytes, decode, fpr });
    };
    // Poisson and word models carry a few percent of model error (the kinds' own tests bound
    // them across shapes); the static filters' rates are exact but for hashing.
    let f = filled::<StandardBloom>(keys.len(), 10.0, 41).0;
    push(
        "standard",
        f.to_bytes(),
        |b| StandardBloom::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.05)),
    );
    let f = filled::<BlockedBloom>(keys.len(), 10.0, 41).0;
    push(
        "blocked",
        f.to_bytes(),
        |b| BlockedBloom::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.08)),
    );
    let f = filled::<SplitBlockBloom>(keys.len(), 10.0, 41).0;
    push(
        "split_block",
        f.to_bytes(),
        |b| SplitBlockBloom::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.08)),
    );
    let f = filled::<CountingBloom>(keys.len(), 10.0, 41).0;
    push(
        "counting",
        f.to_bytes(),
        |b| CountingBloom::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.05)),
    );
    let f = inserted(TwoBitBloom::new(16 * keys.len() as u64).unwrap(), &keys);
    push(
        "two_bit",
        f.to_bytes(),
        |b| TwoBitBloom::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.08)),
    );
    let config = TwoBitConfig { word_bits: 64, bits_per_key_in_word: 3 };
    let f = inserted(TwoBitBloom::with_config(config, 16 * keys.len() as u64).unwrap(), &keys);
    push(
        "two_bit_64_3",
        f.to_bytes(),
        |b| TwoBitBloom::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.08)),
    );
    let f = inserted(ScalableBloom::new(2000, 0.01).unwrap(), &keys);
    push(
        "scalable",
        f.to_bytes(),
        |b| ScalableBloom::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.10)),
    );
    let mut f = Cuckoo::with_false_pos(0.01).expected_items(keys.len() as u64).unwrap();
    keys.iter().for_each(|&k| f.insert_hash(k).unwrap());
    push(
        "cuckoo",
        f.to_bytes(),
        |b| Cuckoo::from_bytes(b).map(drop),
        Some((f.theoretical_fpr(), 0.05)),
    );
    let f = Ribbon::with_false_pos(0.01).build(&keys).unwrap();
    push("ribbon", f.to_bytes(), |b| Ribbon::from_bytes(b).map(drop), Some((f.fpr(), 0.03)));
    let f = BumpedRibbon::with_false_pos(0.01).build(&keys).unwrap();
    push(
        "bumped_ribbon",
        f.to_bytes(),
        |b| BumpedRibbon::from_bytes(b).map(drop),
        Some((f.fpr(), 0.03)),
    );
    let f = PackedBinaryFuse::build(&keys, 7).unwrap();
    push(
        "packed_fuse",
        f.to_bytes(),
        |b| PackedBinaryFuse::from_bytes(b).map(drop),
        Some((f.fpr(), 0.03)),
    );
    let w8 = Some((2f64.powi(-8), 0.03));
    let w16 = Some((2f64.powi(-16), 0.03));
    push("xor8", Xor8::build(&keys).unwrap().to_bytes(), |b| Xor8::from_bytes(b).map(drop), w8);
    push("xor16", Xor16::build(&keys).unwrap().to_bytes(), |b| Xor16::from_bytes(b).map(drop), w16);
    let fuse8 = BinaryFuse8::build(&keys).unwrap().to_bytes();
    push("binary_fuse8", fuse8, |b| BinaryFuse8::from_bytes(b).map(drop), w8);
    let fuse16 = BinaryFuse16::build(&keys).unwrap().to_bytes();
    push("binary_fuse16", fuse16, |b| BinaryFuse16::from_bytes(b).map(drop), w16);
    let fuse4 = BinaryFuse4Wise8::build(&keys).unwrap().to_bytes();
    push("binary_fuse4_8", fuse4, |b| BinaryFuse4Wise8::from_bytes(b).map(drop), w8);
    let fuse4 = BinaryFuse4Wise16::build(&keys).unwrap().to_bytes();
    push("binary_fuse4_16", fuse4, |b| BinaryFuse4Wise16::from_bytes(b).map(drop), w16);
    let mut images = keys.clone();
    images.sort_unstable();
    let g = GrafiteBuilder::new(12.0, 64).build_u64(&images).unwrap();
    push("grafite", g.to_bytes(), |b| GrafiteView::parse(b).map(drop), None);
    out
}

#[test]
fn every_kind_finds_every_key_owned_and_in_place() {
    for case in cases() {
        (case.decode)(&case.bytes).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        if case.fpr.is_none() {
            let view = GrafiteView::parse(&case.bytes).unwrap();
            assert!(case.keys.iter().all(|&k| view.may_contain_range_u64(k, k)), "{}", case.name);
            continue;
        }
        let view = FilterView::parse(&case.bytes).unwrap();
        assert!(case.keys.iter().all(|&k| view.contains_hash(k)), "{}", case.name);
        let mut out = Vec::new();
        view.contains_batch(&case.keys, &mut out);
        assert!(out.iter().all(|&b| b), "{}: batch", case.name);
    }
}

#[test]
fn every_flip_and_truncation_is_corruption() {
    for case in cases() {
        // Small filters: every byte of the envelope is tried, so the suite stays fast.
        let keys = &case.keys[..60];
        let bytes = small(case.name, keys);
        let corrupt = |r: Result<()>, what: &str| match r {
            Err(e) if e.is_corruption() => {}
            other => panic!("{}: {what}: {other:?}", case.name),
        };
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 1;
            corrupt((case.decode)(&b), &format!("flip at {i}"));
            if case.fpr.is_some() {
                corrupt(FilterView::parse(&b).map(drop), &format!("view, flip at {i}"));
            }
        }
        for len in 0..bytes.len() {
            corrupt((case.decode)(&bytes[..len]), &format!("len {len}"));
        }
    }
}

/// The case `name`'s kind built from a few keys (the same constructors as [`cases`]).
fn small(name: &str, keys: &[u64]) -> Vec<u8> {
    let n = keys.len();
    match name {
        "standard" => {
            inserted(StandardBloom::from_shape(10 * n as u64, 7).unwrap(), keys).to_bytes()
        }
        "blocked" => inserted(BlockedBloom::from_shape(1024, 6).unwrap(), keys).to_bytes(),
        "split_block" => inserted(SplitBlockBloom::from_shape(256, 8).unwrap(), keys).to_bytes(),
        "counting" => {
            inserted(CountingBloom::from_shape(10 * n as u64, 7).unwrap(), keys).to_bytes()
        }
        "two_bit" => inserted(TwoBitBloom::new(8 * n as u64).unwrap(), keys).to_bytes(),
        "two_bit_64_3" => {
            let config = TwoBitConfig { word_bits: 64, bits_per_key_in_word: 3 };
            inserted(TwoBitBloom::with_config(config, 8 * n as u64).unwrap(), keys).to_bytes()
        }
        // Three stages, so the stage records are covered too.
        "scalable" => inserted(ScalableBloom::new(10, 0.05).unwrap(), &keys[..40]).to_bytes(),
        "cuckoo" => {
            let mut c = Cuckoo::with_buckets(4, 12).unwrap();
            keys[..20].iter().for_each(|&k| c.insert_hash(k).unwrap());
            c.to_bytes()
        }
        "ribbon" => Ribbon::build(keys).unwrap().to_bytes(),
        "bumped_ribbon" => {
            // Two layers at least (bumping is used), at the cost of a larger envelope.
            let more = SplitMix64::new(1).hashes(5000);
            let f = BumpedRibbon::build(&more).unwrap();
            assert!(f.layer_slots().len() >= 2, "{:?}", f.layer_slots());
            f.to_bytes()
        }
        "packed_fuse" => PackedBinaryFuse::build(keys, 7).unwrap().to_bytes(),
        "xor8" => Xor8::build(keys).unwrap().to_bytes(),
        "xor16" => Xor16::build(keys).unwrap().to_bytes(),
        "binary_fuse8" => BinaryFuse8::build(keys).unwrap().to_bytes(),
        "binary_fuse16" => BinaryFuse16::build(keys).unwrap().to_bytes(),
        "binary_fuse4_8" => BinaryFuse4Wise8::build(keys).unwrap().to_bytes(),
        "binary_fuse4_16" => BinaryFuse4Wise16::build(keys).unwrap().to_bytes(),
        "grafite" => {
            let mut images = keys.to_vec();
            images.sort_unstable();
            GrafiteBuilder::new(12.0, 64).build_u64(&images).unwrap().to_bytes()
        }
        other => panic!("no small filter for {other}"),
    }
}

#[test]
fn every_kind_has_the_fpr_its_math_predicts() {
    // Each probe of a non-key is a Bernoulli(p) trial for the predicted p, so the measured rate
    // over m probes lies within 5 binomial sigmas, sqrt(p (1 - p) / m) (`cost::binomial_sigma`),
    // of p, plus the kind's stated model error, a fraction of p.
    let probes = 400_000;
    for case in cases() {
        let Some((p, model)) = case.fpr else { continue };
        let view = FilterView::parse(&case.bytes).unwrap();
        let fpr = measured_fpr(&view, probes, 7);
        let tol = 5.0 * crate::cost::binomial_sigma(p, probes) + model * p;
        assert!((fpr - p).abs() <= tol, "{}: measured {fpr}, predicted {p} +- {tol}", case.name);
    }
}

/// `a` and `b` hold 3,000 keys each plus 1,000 in common; their union holds all, their
/// intersection the common ones with at most `leak_bound` of 2,000 one-sided keys; a filter of
/// another shape is refused with `InvalidArgument`, leaving `a` unchanged.
fn set_ops<F>(empty: F, others: Vec<F>, leak_bound: usize)
where
    F: InsertFilter + SetOps + Clone + PartialEq + Debug,
{
    let a_keys = SplitMix64::new(1).hashes(3000);
    let b_keys = SplitMix64::new(2).hashes(3000);
    let mut a = inserted(empty.clone(), &a_keys);
    let mut b = inserted(empty, &b_keys);
    b.insert_batch(&a_keys[..1000]); // common keys
    let mut u = a.clone();
    u.union_with(&b).unwrap();
    assert!(a_keys.iter().chain(&b_keys).all(|&k| u.contains_hash(k)));
    let mut i = a.clone();
    i.intersect_with(&b).unwrap();
    assert!(a_keys[..1000].iter().all(|&k| i.contains_hash(k)));
    let leaked = a_keys[1000..].iter().filter(|&&k| i.contains_hash(k)).count();
    assert!(leaked < leak_bound, "{leaked} of 2000 one-sided keys survived the intersection");
    let before = a.clone();
    for other in &others {
        assert!(matches!(a.union_with(other), Err(FilterError::InvalidArgument(_))));
        assert!(matches!(a.intersect_with(other), Err(FilterError::InvalidArgument(_))));
        assert_eq!(a, before);
    }
}

#[test]
fn union_and_intersection_keep_their_members_and_refuse_other_shapes() {
    let standard = |bits, k| StandardBloom::from_shape(bits, k).unwrap();
    set_ops(standard(60_000, 7), vec![standard(60_064, 7), standard(60_000, 6)], 200);
    let blocked = |bits, k| BlockedBloom::from_shape(bits, k).unwrap();
    set_ops(blocked(60_000, 6), vec![blocked(60_000 + 512, 6), blocked(60_000, 7)], 200);
    let split = |bits| SplitBlockBloom::from_shape(bits, 8).unwrap();
    set_ops(split(1 << 16), vec![split(1 << 17), split(1 << 15)], 200);
    // b holds 4000 keys at 16 bits per key: one-sided keys survive at ~1.9%, ~38 expected.
    let wide = TwoBitConfig { word_bits: 64, bits_per_key_in_word: 2 };
    let two_bit = vec![
        TwoBitBloom::new(1 << 17).unwrap(),
        TwoBitBloom::one_bit(1 << 16).unwrap(),
        TwoBitBloom::with_config(wide, 1 << 16).unwrap(),
    ];
    set_ops(TwoBitBloom::new(1 << 16).unwrap(), two_bit, 100);
}
