//! Tests of what is particular to the 4-wise binary fuse filters: the paper's 4-wise sizing and
//! the bits per key it buys, builds around every change of segment length, the encoding of
//! tags 14 and 15 against bad parameters. The properties every filter of the family shares (no
//! false negatives, FPR, round trips, every byte flip and truncation) are in `tests.rs`, run
//! for the 4-wise kinds too.

use super::*;
use crate::envelope::{self, ParamWriter};
use crate::error::FilterError;
use crate::rng::SplitMix64;
use crate::{Filter, FilterView, StaticFilter};

/// Which attempt (0-based) of a default-seeded build produced a filter with seed `seed`.
fn attempt_of(seed: u64) -> u32 {
    (0..MAX_ATTEMPTS).find(|&i| attempt_seed(DEFAULT_SEED, i) == seed).expect("a build seed")
}

#[test]
fn sizing_follows_the_paper_and_beats_three_wise_at_a_million_keys() {
    let keys = SplitMix64::new(5).hashes(1_000_000);
    let f8 = BinaryFuse4Wise8::build(&keys).unwrap();
    // 2^floor(ln(10^6) / ln 2.91 - 0.5) = 2^12; size factor max(1.075, 0.77 + 0.305 ln(6 10^5) /
    // ln(10^6) = 1.064) = 1.075; ceil(1,075,000 / 4096) - 3 = 260 segments.
    assert_eq!((f8.segment_length(), f8.segment_count()), (4096, 260));
    // Slots are at most round(1.075 n) + L - 1 (the rounding up to whole segments), so bits per
    // key are at most W (1.075 + L / n): 8.633 for 8 bits, 17.27 for 16. The 3-wise filter
    // spends W (1.125 + ...) = 9.04 and 18.09 on the same keys.
    let bound = |w: f64| w * (1.075 + 4096.0 / 1e6);
    let f16 = BinaryFuse4Wise16::build(&keys).unwrap();
    let (b8, b16) = (f8.bits_per_key(), f16.bits_per_key());
    assert!(b8 <= bound(8.0) && b8 <= 8.0 * 1.09, "binary_fuse4_8 {b8}");
    assert!(b16 <= bound(16.0) && b16 <= 16.0 * 1.09, "binary_fuse4_16 {b16}");
    assert!(b8 < BinaryFuse8::build(&keys).unwrap().bits_per_key());
    assert!(b16 < BinaryFuse16::build(&keys).unwrap().bits_per_key());
}

#[test]
fn tiny_sets_build_with_one_slot_segments_and_find_their_keys() {
    // Below n = 5 the segment length formula gives 2^0: four one-slot segments per window.
    let keys = SplitMix64::new(11).hashes(40);
    for n in 1..=keys.len() {
        let f = BinaryFuse4Wise8::build(&keys[..n]).unwrap();
        assert!(f.segment_count() >= 1, "n {n}: {f:?}");
        assert!(keys[..n].iter().all(|&k| f.contains_hash(k)), "n {n}");
        if n < 5 {
            assert_eq!(f.segment_length(), 1, "n {n}");
        }
    }
}

#[test]
fn builds_in_few_attempts_around_every_segment_length_doubling() {
    // The segment length doubles where ln n / ln 2.91 - 0.5 crosses an integer k, at
    // n = 2.91^(k + 0.5). Just past a doubling the array holds the fewest, longest segments,
    // where the 3-wise layout needed its halved alternative (tests.rs, n = 11,504). Measured
    // for 4-wise: over 20 key sets at each of 12 sizes from 1,000 to 230,000 the first attempt
    // succeeded in 237 of 240 builds and none needed more than 3.
    for k in 2..=11 {
        let edge = 2.91f64.powf(k as f64 + 0.5);
        for n in [edge.floor() as usize, edge.ceil() as usize + 1, (edge * 1.3) as usize] {
            for t in 0..4 {
                let keys = SplitMix64::new(7000 + t).hashes(n);
                let f = BinaryFuse4Wise8::build(&keys).unwrap();
                assert!(keys.iter().all(|&h| f.contains_hash(h)), "n {n}");
                assert!(attempt_of(f.seed()) < 10, "n {n} set {t}: {}", attempt_of(f.seed()));
            }
        }
    }
}

/// A checksum-valid 4-wise envelope (8-bit kind) with the given parameters and a zero payload.
fn fuse4(keys: u64, len: u32, count: u32, payload: usize) -> Vec<u8> {
    let p = ParamWriter::new().u64(1).u64(keys).u32(len).u32(count).finish();
    envelope::encode(FilterKind::BinaryFuse4Wise8, &p, |out| out.resize(out.len() + payload, 0))
}

#[test]
fn inconsistent_params_with_a_valid_checksum_are_corruption() {
    assert!(BinaryFuse4Wise8::from_bytes(&fuse4(10, 4, 1, 16)).is_ok(), "the baseline is valid");
    let bad = [
        fuse4(10, 4, 1, 12),      // the 3-wise payload size, (1 + 2) * 4, not (1 + 3) * 4
        fuse4(10, 4, 1, 17),      // payload longer than the slots
        fuse4(10, 3, 2, 15),      // segment length not a power of two
        fuse4(10, 1 << 19, 1, 0), // segment length above 2^18
        fuse4(10, 4, 0, 12),      // no segment a window can start in
        fuse4(10, 1 << 18, u32::MAX, 0), // slot count overflows 32 bits
        fuse4(10, 1 << 18, (1 << 14) - 3, 0), // (c + 3) L = 2^32: one past the largest
        fuse4(17, 4, 1, 16),      // more keys than slots
        fuse4(0, 4, 1, 16),       // an empty filter with slots
        fuse4(3, 0, 0, 0),        // keys without slots
    ];
    for b in &bad {
        assert!(FilterView::parse(b).unwrap_err().is_corruption());
        assert!(BinaryFuse4Wise8::from_bytes(b).unwrap_err().is_corruption());
    }
    // A filter of one arity or width is not accepted as another.
    let good = fuse4(10, 4, 1, 16);
    assert!(BinaryFuse8::from_bytes(&good).is_err());
    assert!(BinaryFuse4Wise16::from_bytes(&good).is_err());
    let three = BinaryFuse8::build(&[1, 2, 3]).unwrap().to_bytes();
    assert!(BinaryFuse4Wise8::from_bytes(&three).is_err());
}

#[test]
fn arbitrary_params_never_panic_and_accepted_ones_probe_in_range() {
    // Random (often absurd) parameters behind a valid checksum: parse answers Ok or an error,
    // and an accepted filter answers probes without an out-of-range read.
    let mut rng = SplitMix64::new(13);
    let mut accepted = 0;
    for _ in 0..3000 {
        let len = match rng.below(3) {
            0 => 1u32 << rng.below(20),
            1 => rng.next_u64() as u32,
            _ => rng.below(64) as u32,
        };
        let count = if rng.below(2) == 0 { rng.below(40) as u32 } else { rng.next_u64() as u32 };
        let slots = (u64::from(count) + 3).saturating_mul(u64::from(len));
        let payload = if slots <= 4096 && rng.below(4) != 0 { slots } else { rng.below(4096) };
        let keys = rng.below(slots.max(1) + 2);
        let bytes = fuse4(keys, len, count, payload as usize);
        if let Ok(view) = FilterView::parse(&bytes) {
            accepted += 1;
            for _ in 0..64 {
                std::hint::black_box(view.contains_hash(rng.next_u64()));
            }
        }
    }
    assert!(accepted > 100, "the loop reaches the probe code: {accepted}");
}

#[test]
fn kind_tags_fourteen_and_fifteen_are_the_four_wise_kinds() {
    for (kind, tag, name) in [
        (FilterKind::BinaryFuse4Wise8, 14, "binary_fuse4_8"),
        (FilterKind::BinaryFuse4Wise16, 15, "binary_fuse4_16"),
    ] {
        assert_eq!((kind.tag(), kind.name()), (tag, name));
        assert_eq!(FilterKind::from_tag(tag), Some(kind));
        assert_eq!(FilterKind::from_name(name), Some(kind));
    }
    assert_eq!(FilterKind::from_tag(13), Some(FilterKind::Grafite), "tag 13 is not reused");
    let tags: Vec<u8> = FilterKind::ALL.iter().map(|k| k.tag()).collect();
    assert_eq!(tags, (1..=17).collect::<Vec<u8>>(), "ALL is in tag order, every tag once");
    let f = BinaryFuse4Wise16::build(&[7, 8]).unwrap();
    assert_eq!((f.kind(), f.to_bytes()[5]), (FilterKind::BinaryFuse4Wise16, 15));
}

#[test]
fn a_build_without_the_tag_reads_it_as_an_unknown_kind() {
    // What a siftdb from before tags 14 and 15 does with these bytes: its decoder finds no kind
    // for the tag and returns the typed UnknownFilterKind, which the SST reader turns into "no
    // filter" (src/sst/owned_filter.rs). Simulated here by rewriting the tag to 200, which this
    // build does not know either, with the checksum recomputed.
    let mut b = BinaryFuse4Wise8::build(&SplitMix64::new(3).hashes(500)).unwrap().to_bytes();
    b[5] = 200;
    let n = b.len() - 4;
    let crc = crc32fast::hash(&b[..n]);
    b[n..].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(FilterView::parse(&b), Err(FilterError::UnknownKind(200))));
}
#[test]
fn never_more_slots_than_three_wise_from_304_keys_up() {
    // Sizing alone decides the slot count (the halved layout of odd attempts has the same), so
    // this compares the two arities' layouts without building. Below 304 keys the 4-wise
    // layout's extra segment can cost up to 8% (n = 2: 13 slots against 12; the last case is
    // n = 303: 464 against 448); from 304 up it never costs more: checked for every n to
    // 300,000 and in 1% steps to 2^31.
    use super::fuse_layout::FuseLayout;
    use super::peel::{Layout, Sizing};
    let slots =
        |n: usize| (FuseLayout::<3>::for_keys(n).slots(), FuseLayout::<4>::for_keys(n).slots());
    assert_eq!(slots(303), (448, 464));
    let mut sizes: Vec<usize> = (304..=300_000).collect();
    let mut n = 300_000usize;
    while n <= MAX_KEYS {
        sizes.push(n);
        n = (n as f64 * 1.01).ceil() as usize;
    }
    for n in sizes {
        let (three, four) = slots(n);
        assert!(four <= three, "n {n}: 4-wise {four} slots, 3-wise {three}");
    }
}
