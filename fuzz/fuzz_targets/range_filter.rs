//! The Grafite range filter. Even first byte: the rest is any bytes for `GrafiteView::parse`,
//! whose accepted filters must answer every query without a panic. Odd first byte: the rest is a
//! key set and query bounds; the filter built from them (and its serialized view) must never
//! give a false negative.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::filter::{GrafiteBuilder, GrafiteView, RangeFilter};

/// Splits `data` into byte strings, each a length byte (mod 24) then that many bytes.
fn strings(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let len = (len as usize % 24).min(rest.len());
        out.push(rest[..len].to_vec());
        data = &rest[len..];
    }
    out
}

fn parse_and_query(data: &[u8]) {
    let Ok(view) = GrafiteView::parse(data) else { return };
    let mut h = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..64 {
        h = h.wrapping_mul(0x2545_F491_4F6C_DD1D).wrapping_add(1);
        let (lo, hi) = (h >> (h % 64), h.rotate_left(17));
        let _ = view.may_contain_range_u64(lo.min(hi), lo.max(hi));
        let _ = view.may_contain_range(&lo.to_be_bytes()[..(h % 9) as usize], &hi.to_be_bytes());
        let _ = view.expected_fpr_for(&lo.to_be_bytes(), &hi.to_be_bytes());
        let _ = (&view as &dyn RangeFilter).expected_fpr(lo);
    }
}

fn build_and_check(data: &[u8]) {
    let Some((&shape, rest)) = data.split_first() else { return };
    let bits = 4.0 + (shape % 37) as f64;
    let mut items = strings(rest);
    // The first half are keys; the rest are query bounds.
    let bounds = items.split_off(items.len() / 2);
    let mut keys = items;
    keys.sort();
    let builder = GrafiteBuilder::new(bits, 1 + (shape as u64 >> 3));
    let f = builder.build_sorted_keys(keys.iter().map(|k| k.as_slice())).expect("valid input");
    let bytes = f.to_bytes();
    let view = GrafiteView::parse(&bytes).expect("own bytes parse");
    let holds = |lo: &[u8], hi: &[u8]| {
        let i = keys.partition_point(|k| k.as_slice() < lo);
        lo <= hi && i < keys.len() && keys[i].as_slice() <= hi
    };
    let check = |lo: &[u8], hi: &[u8]| {
        let (a, b) = (f.may_contain_range(lo, hi), view.may_contain_range(lo, hi));
        assert_eq!(a, b, "filter and view disagree");
        assert!(a || !holds(lo, hi), "false negative on [{lo:?}, {hi:?}]");
    };
    for k in &keys {
        check(k, k);
    }
    for pair in bounds.chunks(2) {
        let lo = &pair[0];
        let hi = pair.get(1).unwrap_or(lo);
        check(lo, hi);
        check(hi, lo);
        if let Some(k) = keys.get(lo.len() % keys.len().max(1)) {
            check(lo.min(k), hi.max(k));
        }
    }
    // The same keys as integers: the first 8 bytes, big-endian.
    let ints: Vec<u64> = keys
        .iter()
        .map(|k| k.iter().chain([0u8; 8].iter()).take(8).fold(0u64, |v, &b| v << 8 | b as u64))
        .collect();
    let g = builder.build_u64(&ints).expect("valid input");
    for (i, &x) in ints.iter().enumerate() {
        let lo = x.saturating_sub(i as u64 * 977);
        assert!(g.may_contain_range_u64(lo, x.saturating_add(shape as u64)), "u64 false negative");
    }
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((&mode, rest)) if mode % 2 == 0 => parse_and_query(rest),
        Some((_, rest)) => build_and_check(rest),
        None => {}
    }
});
