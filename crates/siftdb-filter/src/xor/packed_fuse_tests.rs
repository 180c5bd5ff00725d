//! Tests of the packed binary fuse filter (kind tag 16): no false negatives at every width and
//! both arities, FPR `2^-w`, agreement with the byte-wide filters at 8 and 16 bits, the
//! encoding against bad bytes and bad parameters.

use super::*;
use crate::envelope::{self, ParamWriter};
use crate::error::FilterError;
use crate::rng::SplitMix64;
use crate::{math, Filter, FilterView, StaticFilter};

#[test]
fn every_width_and_arity_finds_every_key_including_repeats_and_tiny_sets() {
    let keys = SplitMix64::new(1).hashes(3000);
    for arity in [3, 4] {
        for bits in 1..=32 {
            for n in [1, 2, 5, 37, 1000, 3000] {
                let mut set = keys[..n].to_vec();
                set.extend_from_slice(&keys[..n / 3]); // repeated keys
                let f = PackedBinaryFuse::build_with(&set, bits, arity, 9).unwrap();
                assert_eq!((f.fingerprint_bits(), f.arity(), f.len()), (bits, arity, n as u64));
                let missing = set.iter().find(|&&h| !f.contains_hash(h));
                assert!(missing.is_none(), "w {bits} arity {arity} n {n}");
            }
        }
    }
}

#[test]
fn measured_fpr_is_two_to_minus_the_width() {
    // As for the byte-wide filters: a non-member's fingerprint is uniform on w bits and
    // independent of the xor of its slots, so FPR = p = 2^-w exactly; the false-positive count
    // is binomial, tolerance 5 sigmas: |observed - p| <= 5 sqrt(p (1 - p) / probes).
    let keys = SplitMix64::new(21).hashes(100_000);
    let probes = 2_000_000u64;
    for (arity, bits) in [(4, 1), (4, 4), (3, 7), (4, 10), (4, 12), (3, 12)] {
        let f = PackedBinaryFuse::build_with(&keys, bits, arity, DEFAULT_SEED).unwrap();
        let p = 2f64.powi(-(bits as i32));
        assert_eq!(f.fpr(), p);
        let mut rng = SplitMix64::new(22);
        let fp = (0..probes).filter(|_| f.contains_hash(rng.next_u64())).count();
        let observed = fp as f64 / probes as f64;
        let tol = 5.0 * math::binomial_sigma(p, probes);
        assert!((observed - p).abs() <= tol, "w {bits}: observed {observed}, expected {p}");
    }
}

#[test]
fn eight_and_sixteen_bits_answer_as_the_byte_wide_filters_do() {
    // Same seed sequence, layout and fingerprint function, so the same fingerprint array: the
    // packed filter differs only in how it stores it.
    let keys = SplitMix64::new(3).hashes(20_000);
    let mut rng = SplitMix64::new(4);
    let probes: Vec<u64> = (0..200_000).map(|_| rng.next_u64()).collect();
    let pairs: [(PackedBinaryFuse, Box<dyn Filter>); 4] = [
        (
            PackedBinaryFuse::build_with(&keys, 8, 4, DEFAULT_SEED).unwrap(),
            Box::new(BinaryFuse4Wise8::build(&keys).unwrap()),
        ),
        (
            PackedBinaryFuse::build_with(&keys, 16, 4, DEFAULT_SEED).unwrap(),
            Box::new(BinaryFuse4Wise16::build(&keys).unwrap()),
        ),
        (
            PackedBinaryFuse::build_with(&keys, 8, 3, DEFAULT_SEED).unwrap(),
            Box::new(BinaryFuse8::build(&keys).unwrap()),
        ),
        (
            PackedBinaryFuse::build_with(&keys, 16, 3, DEFAULT_SEED).unwrap(),
            Box::new(BinaryFuse16::build(&keys).unwrap()),
        ),
    ];
    for (packed, wide) in &pairs {
        assert_eq!(packed.memory_bytes() - 7, wide.memory_bytes(), "{}", wide.kind());
        let differ = probes.iter().filter(|&&h| packed.contains_hash(h) != wide.contains_hash(h));
        assert_eq!(differ.count(), 0, "{}", wide.kind());
    }
}

#[test]
fn bits_per_key_are_the_width_times_the_size_factor() {
    // 4-wise at a million keys: 263 segments of 4096 slots (fuse4_tests.rs), so w * 1,077,248
    // / 10^6 bits per key: 1.0772 w.
    let keys = SplitMix64::new(5).hashes(1_000_000);
    for bits in [4, 12] {
        let f = PackedBinaryFuse::build(&keys, bits).unwrap();
        let expected = f64::from(bits) * 263.0 * 4096.0 / 1e6;
        assert!((f.bits_per_key() - expected).abs() < 1e-9, "w {bits}: {}", f.bits_per_key());
    }
}

#[test]
fn width_for_an_fpr_is_the_nearest_on_a_log_scale() {
    assert_eq!(PackedBinaryFuse::bits_for_fpr(0.01), 7); // log2(100) = 6.64
    assert_eq!(PackedBinaryFuse::bits_for_fpr(0.02), 6); // 5.64
    assert_eq!(PackedBinaryFuse::bits_for_fpr(2f64.powi(-16)), 16);
    assert_eq!(PackedBinaryFuse::bits_for_fpr(0.5), 1);
    assert_eq!(PackedBinaryFuse::bits_for_fpr(0.9), 1);
    assert_eq!(PackedBinaryFuse::bits_for_fpr(1e-30), 32);
    assert_eq!(PackedBinaryFuse::bits_for_fpr(f64::NAN), 1);
}

#[test]
fn round_trip_view_and_empty_filter() {
    let keys = SplitMix64::new(31).hashes(5000);
    for (bits, arity) in [(1, 4), (5, 3), (13, 4), (32, 4)] {
        let f = PackedBinaryFuse::build_with(&keys, bits, arity, 7).unwrap();
        let bytes = f.to_bytes();
        assert_eq!(PackedBinaryFuse::from_bytes(&bytes).unwrap(), f);
        let view = FilterView::parse(&bytes).unwrap();
        assert_eq!(view.kind(), FilterKind::PackedBinaryFuse);
        assert_eq!(view.parameter_fpr(), Some(f.fpr()));
        let mut rng = SplitMix64::new(32);
        for h in keys.iter().copied().chain((0..20_000).map(|_| rng.next_u64())) {
            view.prefetch_hash(h);
            assert_eq!(view.contains_hash(h), f.contains_hash(h));
        }
    }
    let empty = PackedBinaryFuse::build(&[], 9).unwrap();
    assert!(empty.is_empty() && empty.bits_per_key() == 0.0);
    let bytes = empty.to_bytes();
    assert_eq!(PackedBinaryFuse::from_bytes(&bytes).unwrap(), empty);
    let view = FilterView::parse(&bytes).unwrap();
    let mut rng = SplitMix64::new(33);
    assert!((0..1000).all(|_| {
        let h = rng.next_u64();
        view.prefetch_hash(h);
        !view.contains_hash(h) && !empty.contains_hash(h)
    }));
}

#[test]
fn kind_tag_sixteen_is_the_packed_filter() {
    let kind = FilterKind::PackedBinaryFuse;
    assert_eq!((kind.tag(), kind.name()), (16, "packed_binary_fuse"));
    assert_eq!(FilterKind::from_tag(16), Some(kind));
    assert_eq!(FilterKind::from_name("packed_binary_fuse"), Some(kind));
    assert_eq!(PackedBinaryFuse::build(&[7, 8], 5).unwrap().to_bytes()[5], 16);
}

#[test]
fn bad_build_arguments_are_invalid_argument() {
    let keys = SplitMix64::new(2).hashes(10);
    for (bits, arity) in [(0, 4), (33, 4), (8, 2), (8, 5)] {
        let e = PackedBinaryFuse::build_with(&keys, bits, arity, 1).unwrap_err();
        assert!(matches!(e, FilterError::InvalidArgument(_)), "w {bits} arity {arity}: {e}");
    }
}

#[test]
fn every_byte_flip_and_truncation_is_rejected() {
    let bytes = PackedBinaryFuse::build(&SplitMix64::new(41).hashes(100), 11).unwrap().to_bytes();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 1;
        assert!(PackedBinaryFuse::from_bytes(&b).is_err(), "flip at {i}");
        assert!(FilterView::parse(&b).is_err(), "flip at {i}");
    }
    for len in 0..bytes.len() {
        assert!(PackedBinaryFuse::from_bytes(&bytes[..len]).is_err(), "len {len}");
    }
}

/// A checksum-valid envelope with the given parameters and payload bytes.
fn packed(keys: u64, len: u32, count: u32, arity: u8, bits: u8, payload: &[u8]) -> Vec<u8> {
    let p = ParamWriter::new().u64(1).u64(keys).u32(len).u32(count).u8(arity).u8(bits).finish();
    envelope::encode(FilterKind::PackedBinaryFuse, &p, |out| out.extend_from_slice(payload))
}

#[test]
fn inconsistent_params_with_a_valid_checksum_are_corruption() {
    // Baseline: 4-wise, segments of 4 slots, 1 segment: (1 + 3) * 4 = 16 slots of 5 bits = 80
    // bits = 10 bytes, then 7 zero bytes.
    let ok = [0u8; 17];
    assert!(PackedBinaryFuse::from_bytes(&packed(10, 4, 1, 4, 5, &ok)).is_ok(), "baseline");
    let mut stray_tail = ok;
    stray_tail[12] = 1;
    let mut stray_bits = [0u8; 16]; // 16 slots of 3 bits = 6 bytes, exactly full: no stray bits
    stray_bits[5] = 0x80;
    assert!(PackedBinaryFuse::from_bytes(&packed(10, 4, 1, 4, 3, &stray_bits[..13])).is_ok());
    let mut stray_last = [0u8; 21]; // 16 slots of 7 bits = 14 bytes; byte 13 fully used
    stray_last[13] = 0x80;
    assert!(PackedBinaryFuse::from_bytes(&packed(10, 4, 1, 4, 7, &stray_last)).is_ok());
    let mut odd = [0u8; 9]; // 3-wise (1 + 2) * 1 slots of 5 bits = 15 bits: bit 15 unused
    odd[1] = 0x80;
    let bad: [(&str, Vec<u8>); 11] = [
        ("width 0", packed(10, 4, 1, 4, 0, &ok)),
        ("width 33", packed(10, 4, 1, 4, 33, &ok)),
        ("arity 2", packed(10, 4, 1, 2, 5, &ok)),
        ("arity 5", packed(10, 4, 1, 5, 5, &ok)),
        ("segment length not a power of two", packed(10, 3, 1, 4, 5, &ok)),
        ("more keys than slots", packed(17, 4, 1, 4, 5, &ok)),
        ("payload one byte short", packed(10, 4, 1, 4, 5, &ok[..16])),
        ("nonzero tail byte", packed(10, 4, 1, 4, 5, &stray_tail)),
        ("bit after the last fingerprint", packed(2, 1, 1, 3, 5, &odd)),
        ("keys without slots", packed(3, 0, 0, 4, 5, &[0u8; 7])),
        // The largest layout (16,380 + 3 segments of 2^18 slots) of 32-bit fingerprints: 2^37
        // bits, computed without overflow on any target, against a 7-byte payload.
        ("2^32 - 2^18 slots of 32 bits", packed(1, 1 << 18, 16_380, 4, 32, &[0u8; 7])),
    ];
    for (what, bytes) in bad {
        let e = PackedBinaryFuse::from_bytes(&bytes).unwrap_err();
        assert!(matches!(e, FilterError::Corruption { .. }), "{what}: {e}");
        assert!(FilterView::parse(&bytes).is_err(), "{what}");
    }
}
