use super::*;
use crate::rng::SplitMix64;
use crate::FilterView;

/// XXH64 (seed 0) of the bytes `0, 1, ..., i-1`, for `i` in `0..32`, as signed 64-bit values.
/// Source: Apache Arrow C++, `cpp/src/parquet/bloom_filter_test.cc`,
/// `HASHES_OF_LOOPING_BYTES_WITH_SEED_0` (generated with the reference xxHash implementation).
const XXH64_OF_0_TO_I: [i64; 32] = [
    -1205034819632174695,
    -1642502924627794072,
    5216751715308240086,
    -1889335612763511331,
    -13835840860730338,
    -2521325055659080948,
    4867868962443297827,
    1498682999415010002,
    -8626056615231480947,
    7482827008138251355,
    -617731006306969209,
    7289733825183505098,
    4776896707697368229,
    1428059224718910376,
    6690813482653982021,
    -6248474067697161171,
    4951407828574235127,
    6198050452789369270,
    5776283192552877204,
    -626480755095427154,
    -6637184445929957204,
    8370873622748562952,
    -1705978583731280501,
    -7898818752540221055,
    -2516210193198301541,
    8356900479849653862,
    -4413748141896466000,
    -6040072975510680789,
    1451490609699316991,
    -7948005844616396060,
    8567048088357095527,
    -4375578310507393311,
];

#[test]
fn hash_is_xxh64_with_seed_zero() {
    let bytes: Vec<u8> = (0..32).collect();
    for (i, &want) in XXH64_OF_0_TO_I.iter().enumerate() {
        assert_eq!(SplitBlockBloom::hash(&bytes[..i]), want as u64, "length {i}");
    }
    // arrow-rs parquet/src/bloom_filter/mod.rs, test_hash_bytes: XXH64("") = 17241709254077376921.
    assert_eq!(SplitBlockBloom::hash_bytes(b""), 17_241_709_254_077_376_921);
    // Typed helpers hash the plain encoding: little-endian bytes.
    assert_eq!(SplitBlockBloom::hash_i64(0x0706_0504_0302_0100), XXH64_OF_0_TO_I[8] as u64);
    assert_eq!(SplitBlockBloom::hash_u64(0x0706_0504_0302_0100), XXH64_OF_0_TO_I[8] as u64);
    assert_eq!(SplitBlockBloom::hash_i32(0x0302_0100), XXH64_OF_0_TO_I[4] as u64);
    let d = f64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(SplitBlockBloom::hash_f64(d), XXH64_OF_0_TO_I[8] as u64);
    let s = f32::from_le_bytes([0, 1, 2, 3]);
    assert_eq!(SplitBlockBloom::hash_f32(s), XXH64_OF_0_TO_I[4] as u64);
}

#[test]
fn block_and_mask_match_the_spec_by_hand() {
    // Worked by hand from the spec for a 1 KiB bitset (z = 32 blocks):
    //   block = ((h >> 32) * 32) >> 32 (the top 5 bits of h), x = h as u32,
    //   bit_i = (x * SALT[i] mod 2^32) >> 27.
    // (hash of bytes 0..i from the Arrow table, block, eight bit positions)
    let cases: [(usize, usize, [u32; 8]); 4] = [
        (0, 29, [29, 0, 25, 28, 14, 22, 29, 30]), // h = 0xEF46DB37_51D8E999
        (4, 31, [15, 8, 17, 28, 31, 1, 9, 10]),   // h = 0xFFCED860_4453CC1E
        (8, 17, [9, 26, 17, 12, 31, 8, 12, 21]),  // h = 0x884A1736_14B81B8D
        (31, 24, [11, 10, 7, 28, 5, 17, 22, 11]), // h = 0xC346D2B5_9B4D8EE1
    ];
    let bytes: Vec<u8> = (0..32).collect();
    for (len, block, bits) in cases {
        let mut f = SplitBlockBloom::from_parquet_bitset(&[0u8; 1024]).unwrap();
        f.insert(&bytes[..len]);
        let mut want = vec![0u8; 1024];
        for (i, &b) in bits.iter().enumerate() {
            let off = block * 32 + i * 4;
            want[off..off + 4].copy_from_slice(&(1u32 << b).to_le_bytes());
        }
        assert_eq!(f.to_parquet_bitset(), want, "value of length {len}");
        assert!(f.contains(&bytes[..len]));
    }
}

#[test]
fn reads_and_reproduces_a_bitset_written_by_parquet_mr() {
    // Source: arrow-rs, parquet/src/bloom_filter/mod.rs, test_with_fixture: "bloom filter
    // produced by parquet-mr/spark" for the string values "a0" ..= "a9" (one 32-byte block).
    let fixture: [u8; 32] = [
        200, 1, 80, 20, 64, 68, 8, 109, 6, 37, 4, 67, 144, 80, 96, 32, 8, 132, 43, 33, 0, 5, 99,
        65, 2, 0, 224, 44, 64, 78, 96, 4,
    ];
    let read = SplitBlockBloom::from_parquet_bitset(&fixture).unwrap();
    let mut built = SplitBlockBloom::from_shape(256, 8).unwrap();
    for i in 0..10 {
        let value = format!("a{i}");
        assert!(read.contains(value.as_bytes()), "{value}");
        built.insert(value.as_bytes());
    }
    // Byte-identical: BYTE_ARRAY values are hashed as their raw bytes, no length prefix.
    assert_eq!(built.to_parquet_bitset(), fixture);
}

#[test]
fn no_false_negatives_across_sizes_with_duplicates() {
    for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
        let mut f = SplitBlockBloom::with_bits_per_key(10.0).expected_items(n as u64).unwrap();
        let keys = SplitMix64::new(i as u64).hashes(n);
        f.insert_batch(&keys);
        keys.iter().take(1000).for_each(|&k| f.insert_hash(k));
        assert!(keys.iter().all(|&k| f.contains_hash(k)), "n = {n}");
    }
    let mut f = SplitBlockBloom::with_false_pos(0.01).expected_items(1000).unwrap();
    let values: Vec<String> = (0..1000).map(|i| format!("value-{i}")).collect();
    values.iter().for_each(|v| f.insert(v.as_bytes()));
    assert!(values.iter().all(|v| f.contains(v.as_bytes())));
}

#[test]
fn measured_fpr_matches_the_split_block_formula() {
    // Reference: sum_i Pois(i; 256/b) (1 - (1 - 1/32)^i)^8, exact for independent uniform bits
    // given a block's load. Tolerance: 5 binomial sigmas sqrt(p(1-p)/N) plus 5% of p for the
    // Poisson approximation of the binomial block loads and the correlation of the eight salted
    // products of one 32-bit value.
    let num_bits = 1u64 << 21; // a power of two, so b is exact
    let trials = 1_000_000u64;
    for bpk in [6u64, 8, 10, 12, 16] {
        let n = num_bits / bpk;
        let mut f = SplitBlockBloom::from_shape(num_bits, 8).unwrap();
        assert_eq!(f.num_bits(), num_bits);
        f.insert_batch(&SplitMix64::new(42).hashes(n as usize));
        let p = f.theoretical_fpr();
        let mut rng = SplitMix64::new(7);
        let fp = (0..trials).filter(|_| f.contains_hash(rng.next_u64())).count();
        let observed = fp as f64 / trials as f64;
        let tol = 5.0 * math::binomial_sigma(p, trials) + 0.05 * p;
        assert!((observed - p).abs() <= tol, "bpk {bpk}: observed {observed}, theory {p}");
    }
}

#[test]
fn sizing_follows_parquet_writers() {
    // Power-of-two byte counts, at least 32 bytes.
    assert_eq!(SplitBlockBloom::from_shape(1, 8).unwrap().memory_bytes(), 32);
    assert_eq!(SplitBlockBloom::from_shape(257, 8).unwrap().memory_bytes(), 64);
    assert_eq!(SplitBlockBloom::from_shape(8 * 1000, 8).unwrap().memory_bytes(), 1024);
    assert_eq!(SplitBlockBloom::from_shape(MAX_WRITER_BYTES * 8, 8).unwrap().num_blocks(), 1 << 22);
    // The builder sizes from the split-block formula (8 probes, about 10.5 bits/key for 1%),
    // then rounds the byte count up to a power of two.
    let b = crate::BloomBuilder::<SplitBlockBloom>::new(crate::Sizing::FalsePositiveRate(0.01));
    let (bpk, k) = b.shape_per_key().unwrap();
    assert_eq!(k, 8);
    assert!((10.0..11.0).contains(&bpk), "{bpk}");
    assert!(math::split_block_fpr(8, 32, 256.0 / bpk) <= 0.01);
    let f = b.expected_items(100_000).unwrap();
    assert_eq!(f.memory_bytes(), 262_144); // ceil(100,000 * bpk / 8) = ~131.5 KB -> 256 KiB
}

#[test]
fn invalid_sizes_are_errors_not_panics() {
    assert!(SplitBlockBloom::from_shape(0, 8).is_err());
    assert!(SplitBlockBloom::from_shape(1024, 7).is_err());
    assert!(SplitBlockBloom::from_shape(MAX_WRITER_BYTES * 8 + 1, 8).is_err());
    assert!(SplitBlockBloom::with_bits_per_key(10.0).expected_items(1 << 40).is_err());
    assert!(SplitBlockBloom::with_false_pos(1.0).expected_items(10).is_err());
    for len in [0usize, 1, 31, 33, 48, 1023] {
        assert!(SplitBlockBloom::from_parquet_bitset(&vec![0; len]).is_err(), "len {len}");
    }
    // Any positive multiple of 32 is readable, not only powers of two.
    assert_eq!(SplitBlockBloom::from_parquet_bitset(&[0; 96]).unwrap().num_blocks(), 3);
}

#[test]
fn batch_answers_equal_single_answers() {
    let mut f = SplitBlockBloom::from_shape(80_000, 8).unwrap();
    let keys = SplitMix64::new(3).hashes(10_000);
    f.insert_batch(&keys);
    let mut one_by_one = SplitBlockBloom::from_shape(80_000, 8).unwrap();
    keys.iter().for_each(|&k| one_by_one.insert_hash(k));
    assert_eq!(one_by_one, f);
    let mut probes = keys[..500].to_vec();
    probes.extend(SplitMix64::new(99).hashes(5003));
    let mut out = Vec::new();
    f.contains_batch(&probes, &mut out);
    assert_eq!(out, probes.iter().map(|&h| f.contains_hash(h)).collect::<Vec<_>>());
}

#[test]
fn round_trip_view_and_parquet_bitset_agree() {
    let mut f = SplitBlockBloom::from_shape(3 * 256, 8).unwrap(); // rounds to 4 blocks
    let values: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    values.iter().for_each(|v| f.insert(v.as_bytes()));
    let bytes = f.to_bytes();
    assert_eq!(SplitBlockBloom::from_bytes(&bytes).unwrap(), f);
    let env = envelope::decode(&bytes).unwrap();
    assert_eq!(env.payload, f.to_parquet_bitset().as_slice(), "payload is the Parquet bitset");
    let back = SplitBlockBloom::from_parquet_bitset(&f.to_parquet_bitset()).unwrap();
    assert_eq!(back.to_parquet_bitset(), f.to_parquet_bitset());
    let view = FilterView::parse(&bytes).unwrap();
    assert_eq!(view.kind(), FilterKind::SplitBlockBloom);
    let mut rng = SplitMix64::new(5);
    for i in 0..5000 {
        let h = rng.next_u64();
        assert_eq!(view.contains_hash(h), f.contains_hash(h));
        let v = format!("probe{i}");
        assert_eq!(view.contains(v.as_bytes()), f.contains(v.as_bytes()));
    }
    // FilterView::contains hashes split-block filters with XXH64, so inserted values are found.
    assert!(values.iter().all(|v| view.contains(v.as_bytes())));
}

#[test]
fn fill_estimate_tracks_theory_without_the_key_count() {
    let mut f = SplitBlockBloom::from_shape(1 << 20, 8).unwrap();
    f.insert_batch(&SplitMix64::new(8).hashes(100_000)); // 10.49 bits per key
    let info = f.info();
    assert_eq!((info.keys_inserted, info.bits), (100_000, 1 << 20));
    let p = f.theoretical_fpr();
    assert!((info.estimated_fpr - p).abs() < 0.1 * p, "{} vs {p}", info.estimated_fpr);
}
