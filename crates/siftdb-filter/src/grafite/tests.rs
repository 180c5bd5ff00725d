use super::*;
use crate::envelope::Words;
use crate::math::binomial_sigma;
use crate::rng::SplitMix64;
use crate::FilterView;

/// A db_bench key: the key number big-endian, then eight '0' bytes.
fn db_key(n: u64) -> Vec<u8> {
    let mut k = n.to_be_bytes().to_vec();
    k.extend_from_slice(b"00000000");
    k
}

/// A random key of family `mode`: shared prefixes, edge bytes, empty keys, long keys.
fn random_key(rng: &mut SplitMix64, mode: u64) -> Vec<u8> {
    match mode {
        0 => {
            let digits = rng.below(30);
            format!("user:{}", rng.below(1 << digits)).into_bytes()
        }
        1 => {
            let alphabet = [0u8, 1, b'a', b'b', 0xfe, 0xff];
            (0..rng.below(40)).map(|_| alphabet[rng.below(6) as usize]).collect()
        }
        2 => db_key(rng.below(1 << 20)),
        _ => {
            let mut k = vec![b'p'; 30];
            k.extend((0..rng.below(10)).map(|_| rng.below(256) as u8));
            k
        }
    }
}

/// A bound near `key`: truncated, a byte moved up or down, extended, or an extreme.
fn near(rng: &mut SplitMix64, key: &[u8]) -> Vec<u8> {
    let mut b = key.to_vec();
    match rng.below(7) {
        0 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
        1 | 2 if !b.is_empty() => {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = if rng.below(2) == 0 { b[i].wrapping_add(1) } else { b[i].wrapping_sub(1) };
        }
        3 => b.extend((0..1 + rng.below(4)).map(|_| rng.below(256) as u8)),
        4 => b.clear(),
        5 => b = vec![0xff; 1 + rng.below(50) as usize],
        _ => {}
    }
    b
}

/// Whether a sorted set holds a key in `[lo, hi]`.
fn holds<T: Ord + ?Sized, K: std::borrow::Borrow<T>>(sorted: &[K], lo: &T, hi: &T) -> bool {
    let i = sorted.partition_point(|k| k.borrow() < lo);
    i < sorted.len() && sorted[i].borrow() <= hi
}

#[test]
fn no_false_negatives_for_byte_keys_through_the_filter_and_its_view() {
    let mut rng = SplitMix64::new(1);
    for round in 0..48 {
        let mode = round % 5; // 4: a mix of every family
        let n = [0, 1, 2, 50, 3000, 300][round as usize % 6];
        let mut keys: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let family = if mode == 4 { rng.below(4) } else { mode };
                random_key(&mut rng, family)
            })
            .collect();
        keys.sort();
        let bits = 4.0 + rng.below(37) as f64;
        let f = GrafiteBuilder::new(bits, 1 + rng.below(100))
            .seed(rng.next_u64())
            .build_sorted_keys(keys.iter().map(|k| k.as_slice()))
            .unwrap();
        let bytes = f.to_bytes();
        let view = GrafiteView::parse(&bytes).unwrap();
        for _ in 0..400 {
            let (a, b) = match keys.len() {
                0 => (random_key(&mut rng, 1), random_key(&mut rng, 1)),
                len => {
                    let k = &keys[rng.below(len as u64) as usize];
                    let (x, y) = (near(&mut rng, k), near(&mut rng, k));
                    // Half the queries are built around a key, so they hold it.
                    if rng.below(2) == 0 {
                        (x.min(k.clone()), y.max(k.clone()))
                    } else {
                        (x, y)
                    }
                }
            };
            let truth = a <= b && holds::<[u8], _>(&keys, &a, &b);
            for (who, got) in
                [("filter", f.may_contain_range(&a, &b)), ("view", view.may_contain_range(&a, &b))]
            {
                assert!(got || !truth, "{who} round {round}: false negative on [{a:?}, {b:?}]");
            }
            if keys.is_empty() || a > b {
                assert!(!f.may_contain_range(&a, &b) && !view.may_contain_range(&a, &b));
            }
            assert_eq!(f.may_contain_range(&a, &b), view.may_contain_range(&a, &b));
        }
    }
}

#[test]
fn no_false_negatives_for_u64_keys_at_block_boundaries_and_wraps() {
    let mut rng = SplitMix64::new(2);
    for round in 0..40u64 {
        let n = [1u64, 2, 10, 1000, 20_000][round as usize % 5];
        let spread = [u64::MAX, 1 << 40, 1 << 20, 4 * n][(round / 5) as usize % 4];
        let mut keys: Vec<u64> = (0..n).map(|_| rng.below(spread)).collect();
        if round % 3 == 0 {
            keys.extend([0, u64::MAX]); // the extremes of the image space
        }
        let f = GrafiteBuilder::new(4.0 + rng.below(37) as f64, 8)
            .seed(round)
            .build_u64(&keys)
            .unwrap();
        keys.sort_unstable();
        keys.dedup();
        let bytes = f.to_bytes();
        let view = GrafiteView::parse(&bytes).unwrap();
        let r = f.universe();
        for _ in 0..1000 {
            let k = keys[rng.below(keys.len() as u64) as usize];
            let reach = 1 + rng.below(r.min(1 << 30));
            let (lo, hi) = match rng.below(4) {
                0 => (k, k),
                // Around a block boundary near the key: the range meets two blocks.
                1 => (k.saturating_sub(rng.below(reach)), k.saturating_add(rng.below(reach))),
                2 => {
                    let edge = (k / r * r).saturating_add(r - 1);
                    (edge.saturating_sub(rng.below(reach)), edge.saturating_add(rng.below(reach)))
                }
                _ => (rng.next_u64(), rng.next_u64()),
            };
            let truth = lo <= hi && holds::<u64, _>(&keys, &lo, &hi);
            let (a, b) = (f.may_contain_range_u64(lo, hi), view.may_contain_range_u64(lo, hi));
            assert!(a || !truth, "round {round}: false negative on [{lo}, {hi}], r = {r}");
            assert_eq!(a, b);
            if lo > hi {
                assert!(!a);
            }
        }
    }
}

#[test]
fn answers_equal_a_brute_force_over_the_codes_of_the_range() {
    // The query splits a range at block boundaries and wraps intervals mod r; it must answer
    // exactly "some key's code equals the code of some image in [lo, hi]".
    let mut rng = SplitMix64::new(3);
    for round in 0..30u64 {
        let n = 1 + rng.below(40);
        let keys: Vec<u64> = (0..n).map(|_| rng.below(n * 64 * (1 + round % 4))).collect();
        let f =
            GrafiteBuilder::new(4.0 + (round % 3) as f64, 1).seed(round).build_u64(&keys).unwrap();
        let codes: std::collections::HashSet<u64> = keys.iter().map(|&x| f.shape.code(x)).collect();
        for _ in 0..500 {
            let lo = rng.below(n * 64 * 5);
            let hi = lo + rng.below(f.universe().min(200));
            let brute = (lo..=hi).any(|z| codes.contains(&f.shape.code(z)));
            assert_eq!(f.may_contain_range_u64(lo, hi), brute, "round {round} [{lo}, {hi}]");
        }
    }
}

#[test]
fn empty_and_single_key_filters() {
    let empty = GrafiteBuilder::default().build_sorted_keys(std::iter::empty()).unwrap();
    assert_eq!((empty.num_keys(), empty.memory_bytes(), empty.bits_per_key()), (0, 0, 0.0));
    let bytes = empty.to_bytes();
    let view = GrafiteView::parse(&bytes).unwrap();
    for (lo, hi) in [(0, u64::MAX), (5, 5)] {
        assert!(!empty.may_contain_range_u64(lo, hi) && !view.may_contain_range_u64(lo, hi));
    }
    assert!(!view.may_contain_range(b"", b"\xff\xff") && view.expected_fpr_for(b"a", b"b") == 0.0);

    let one = GrafiteBuilder::default().build_sorted_keys([&b"key"[..]]).unwrap();
    let bytes = one.to_bytes();
    let view = GrafiteView::parse(&bytes).unwrap();
    for (lo, hi) in [(&b"key"[..], &b"key"[..]), (b"", b"z"), (b"k", b"key"), (b"key", b"key\0")] {
        assert!(one.may_contain_range(lo, hi) && view.may_contain_range(lo, hi), "{lo:?}");
    }
    // Bounds beyond P on either side, and a range past the key's image in its own block (h is
    // a rotation there, so no false positive is possible).
    for (lo, hi) in [(&b"a"[..], &b"kex"[..]), (b"kez", b"z"), (b"key\x01", b"z"), (b"z", b"a")] {
        assert!(!view.may_contain_range(lo, hi), "{lo:?}..{hi:?}");
    }
}

/// Observed FPR of `queries` empty ranges `[start, start + len - 1]` of db_bench keys.
fn observed_fpr(
    f: &Grafite,
    numbers: &[u64],
    len: u64,
    starts: impl Iterator<Item = u64>,
) -> (f64, u64) {
    let (mut fp, mut total) = (0u64, 0u64);
    for s in starts {
        let e = s + len - 1;
        if holds::<u64, _>(numbers, &s, &e) {
            continue; // not an empty range
        }
        total += 1;
        fp += f.may_contain_range(&db_key(s), &db_key(e)) as u64;
    }
    (fp as f64 / total as f64, total)
}

#[test]
fn fpr_of_empty_ranges_matches_the_bound_for_random_and_correlated_queries() {
    // n key numbers spread over 2^40 (thousands of r-blocks). A query of l images maps to l
    // codes; each key of another block lands there with probability l / r (2-independence), so
    // each empty query is a Bernoulli trial with p = expected_fpr(l) = l n / r = l / 2^(B-2), up
    // to the overlap of the keys' windows (relative p / 2, under 0.2%). Tolerance: 5 binomial
    // sigmas sqrt(p (1 - p) / N) + 1 / N, N the empty queries made (200k random starts; one
    // correlated query starting just past each key, about 100k).
    const N: u64 = 200_000;
    let mut rng = SplitMix64::new(4);
    let mut numbers: Vec<u64> = (0..100_000).map(|_| rng.below(1 << 40)).collect();
    numbers.sort_unstable();
    numbers.dedup();
    let keys: Vec<Vec<u8>> = numbers.iter().map(|&x| db_key(x)).collect();
    let f = GrafiteBuilder::new(14.0, 16).build_sorted_keys(keys.iter().map(|k| &k[..])).unwrap();
    assert_eq!(f.num_keys(), numbers.len() as u64, "the image is the key number");
    for len in [2u64, 16] {
        let p = f.expected_fpr(len);
        assert!((p - len as f64 / 4096.0).abs() < 1e-12);
        let random: Vec<u64> = (0..N).map(|_| rng.below((1 << 40) - len)).collect();
        // One query per key: repeating a key would repeat its (fixed) answer.
        let correlated: Vec<u64> = numbers.iter().map(|&x| x + 1).collect();
        for (what, (obs, trials)) in [
            ("random", observed_fpr(&f, &numbers, len, random.into_iter())),
            ("correlated", observed_fpr(&f, &numbers, len, correlated.into_iter())),
        ] {
            let tol = 5.0 * binomial_sigma(p, trials) + 1.0 / trials as f64;
            println!("grafite B=14 l={len} {what}: observed {obs:.5} over {trials}, bound {p:.5}");
            assert!((obs - p).abs() <= tol, "l = {len} {what}: observed {obs}, expected {p}");
        }
        let s = numbers[7] + 1;
        assert_eq!(f.expected_fpr_for(&db_key(s), &db_key(s + len - 1)), p);
    }
}

#[test]
fn dense_keys_in_one_block_are_answered_exactly() {
    // Keys every 3rd number in a single r-block: h is a rotation there, so an empty range's
    // codes miss every key's code and the FPR is 0, far under the bound.
    let numbers: Vec<u64> = (0..50_000u64).map(|i| 1_000_000 + 3 * i).collect();
    let keys: Vec<Vec<u8>> = numbers.iter().map(|&x| db_key(x)).collect();
    let f = GrafiteBuilder::new(10.0, 2).build_sorted_keys(keys.iter().map(|k| &k[..])).unwrap();
    let (obs, trials) = observed_fpr(&f, &numbers, 2, numbers.iter().map(|&x| x + 1));
    assert_eq!((obs, trials), (0.0, numbers.len() as u64));
    assert!(f.guaranteed_fpr() == 2.0 / 256.0);
}

#[test]
fn bits_per_key_is_within_half_a_bit_of_the_budget() {
    // EF: l = B - 2 low bits + n ones + Z = r / 2^l = n zeros + n / 256 32-bit samples, so
    // B + 0.125 bits per key (less when codes collide: at B = 4 about 11% of codes do).
    let keys = SplitMix64::new(5).hashes(100_000);
    for b in [4.0, 8.0, 14.0, 20.5, 40.0] {
        let f = GrafiteBuilder::new(b, 1).build_u64(&keys).unwrap();
        let bpk = f.bits_per_key();
        println!("grafite B={b}: {bpk:.4} bits/key");
        assert!((b - 0.5..=b + 0.6).contains(&bpk), "B = {b}: {bpk} bits per key");
        let bytes = f.to_bytes();
        assert_eq!(GrafiteView::parse(&bytes).unwrap().memory_bytes(), f.memory_bytes());
    }
}

#[test]
fn builder_arguments_are_checked() {
    let keys = [1u64, 2, 3];
    for b in [3.9, 40.5, f64::NAN] {
        let e = GrafiteBuilder::new(b, 4).build_u64(&keys).unwrap_err();
        assert!(
            matches!(e, FilterError::InvalidArgument(_)) && e.to_string().contains(&b.to_string())
        );
    }
    assert!(GrafiteBuilder::new(8.0, 0).build_u64(&keys).is_err());
    assert!(GrafiteBuilder::with_false_pos(0.0, 4).build_u64(&keys).is_err());
    assert!(GrafiteBuilder::with_false_pos(1e-13, 1 << 20).build_u64(&keys).is_err(), "B > 40");
    // B = 2 + ceil(log2(16 / 0.01)) = 2 + 11 = 13: FPR 16 / 2^11 <= 1%.
    let f = GrafiteBuilder::with_false_pos(0.01, 16).build_u64(&keys).unwrap();
    assert_eq!(f.universe(), 3 << 11);
    assert!(f.guaranteed_fpr() <= 0.01 && f.guaranteed_fpr() > 0.005);
    let unsorted = [&b"b"[..], b"a"];
    let e = GrafiteBuilder::default().build_sorted_keys(unsorted).unwrap_err();
    assert!(matches!(e, FilterError::InvalidArgument(_)), "{e}");
}

#[test]
fn same_input_gives_the_same_bytes_and_a_round_trip_is_identical() {
    let mut rng = SplitMix64::new(6);
    let mut keys: Vec<Vec<u8>> = (0..5000).map(|_| random_key(&mut rng, 0)).collect();
    keys.sort();
    let build = |seed| {
        GrafiteBuilder::new(12.0, 8).seed(seed).build_sorted_keys(keys.iter().map(|k| &k[..]))
    };
    let (a, b) = (build(9).unwrap(), build(9).unwrap());
    assert_eq!(a.to_bytes(), b.to_bytes());
    assert_ne!(a.to_bytes(), build(10).unwrap().to_bytes());
    assert_eq!(Grafite::from_bytes(&a.to_bytes()).unwrap(), a);
}

#[test]
fn the_kind_is_registered_and_point_views_refuse_it() {
    assert_eq!(FilterKind::from_tag(13), Some(FilterKind::Grafite));
    assert_eq!(FilterKind::from_name("grafite"), Some(FilterKind::Grafite));
    let bytes = GrafiteBuilder::default().build_u64(&[1, 2]).unwrap().to_bytes();
    let e = FilterView::parse(&bytes).unwrap_err();
    assert!(matches!(&e, FilterError::InvalidArgument(m) if m.contains("GrafiteView")), "{e}");
    let ribbon = crate::Ribbon::with_false_pos(0.01).build(&[1]).unwrap();
    let e = GrafiteView::parse(&crate::Filter::to_bytes(&ribbon)).unwrap_err();
    assert!(matches!(e, FilterError::InvalidArgument(_)), "another kind: {e}");
}

fn small_filter_bytes() -> Vec<u8> {
    let keys: Vec<Vec<u8>> = (0..300u64).map(|i| format!("key{:05}", i * 7).into_bytes()).collect();
    let f = GrafiteBuilder::new(9.0, 4).build_sorted_keys(keys.iter().map(|k| &k[..])).unwrap();
    f.to_bytes()
}

/// Rewrites the CRC so a tampered envelope reaches the field checks.
fn recrc(b: &mut [u8]) {
    let n = b.len() - 4;
    let crc = crc32fast::hash(&b[..n]);
    b[n..].copy_from_slice(&crc.to_le_bytes());
}

/// Every query kind on a parsed view, to show none panics.
fn exercise(view: &GrafiteView<'_>) {
    let mut rng = SplitMix64::new(7);
    for _ in 0..200 {
        let (lo, hi) = (rng.next_u64() >> rng.below(64), rng.next_u64() >> rng.below(64));
        let _ = view.may_contain_range_u64(lo.min(hi), lo.max(hi));
        let _ = view.may_contain_range(&lo.to_be_bytes(), b"key\xff");
        let _ = view.expected_fpr_for(b"key0", &hi.to_be_bytes());
    }
}

#[test]
fn every_flip_and_truncation_is_rejected_or_harmless() {
    let bytes = small_filter_bytes();
    for len in 0..bytes.len() {
        assert!(GrafiteView::parse(&bytes[..len]).unwrap_err().is_corruption(), "len {len}");
    }
    for i in 0..bytes.len() {
        for (bit, fix_crc) in [(0x01u8, false), (0x40, false), (0x01, true), (0x80, true)] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            if fix_crc && i < b.len() - 4 {
                recrc(&mut b);
            }
            match GrafiteView::parse(&b) {
                Ok(view) => exercise(&view), // a flip the checks cannot see: still no panic
                Err(e) => assert!(!fix_crc || i < 16 || e.is_corruption(), "byte {i}: {e}"),
            }
        }
    }
}

#[test]
fn tampered_fields_are_named() {
    let bytes = small_filter_bytes();
    let p = envelope::HEADER_LEN;
    let cases: [(usize, u8, &str); 8] = [
        (p + 8 + 7, 0x7f, "bits_per_key"),
        (p + 16, 0xff, "max_range"),
        (p + 32, 0x10, "universe"),
        (p + 40, 0x01, "num_codes"),
        (p + 64, 0x01, "low_bits"),
        (p + 65, 0x60, "sample_bits"),
        (p + 66, 0x0f, "window"),
        (p + 67, 0x01, "prefix_len"),
    ];
    for (at, xor, field) in cases {
        let mut b = bytes.clone();
        b[at] ^= xor;
        if field == "max_range" {
            b[p + 16..p + 24].fill(0);
        }
        recrc(&mut b);
        let e = GrafiteView::parse(&b).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains(field), "{field}: {e}");
    }
    // A set bit in the high bitvector, and a select sample moved.
    let view = GrafiteView::parse(&bytes).unwrap();
    let payload = bytes.len() - 4 - view.memory_bytes();
    let high_at = payload + view.low.word_count() * 8;
    let sample_at = high_at + view.high.word_count() * 8;
    for (at, field) in [(high_at + 1, "popcount"), (sample_at, "select sample")] {
        let mut b = bytes.clone();
        b[at] ^= 0x02;
        recrc(&mut b);
        let e = GrafiteView::parse(&b).unwrap_err();
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
}

#[test]
fn random_tampering_with_a_valid_checksum_never_panics() {
    let bytes = small_filter_bytes();
    let mut rng = SplitMix64::new(8);
    for _ in 0..20_000 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len() as u64 - 4) as usize;
            b[i] = rng.below(256) as u8;
        }
        recrc(&mut b);
        if let Ok(view) = GrafiteView::parse(&b) {
            exercise(&view);
        }
    }
}
