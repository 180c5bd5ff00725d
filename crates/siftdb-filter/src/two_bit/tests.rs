//! Functional tests: membership, concurrency, batches, set operations, encoding.
//! The statistical (FPR) tests are in `tests_fpr.rs`.

use super::*;
use crate::envelope::{encode, ParamWriter};
use crate::rng::SplitMix64;
use crate::{BloomBuilder, FilterView, Sizing};

const CONFIGS: [TwoBitConfig; 4] = [
    TwoBitConfig::FLOE,
    TwoBitConfig::ONE_BIT,
    TwoBitConfig { word_bits: 64, bits_per_key_in_word: 3 },
    TwoBitConfig { word_bits: 64, bits_per_key_in_word: 8 },
];

fn filled(config: TwoBitConfig, n: usize, bits_per_key: u64, seed: u64) -> (TwoBitBloom, Vec<u64>) {
    let mut f = TwoBitBloom::with_config(config, (n as u64 * bits_per_key).max(1)).unwrap();
    let keys = SplitMix64::new(seed).hashes(n);
    f.insert_batch(&keys);
    (f, keys)
}

#[test]
fn two_bit_bloom_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TwoBitBloom>();
    assert_send_sync::<TwoBitBloomView<'static>>();
}

#[test]
fn no_false_negatives_across_sizes_and_configs_with_duplicates() {
    for config in CONFIGS {
        for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
            let (mut f, keys) = filled(config, n, 8, i as u64);
            // Duplicates: re-insert a prefix through both paths; membership must not change.
            for &k in keys.iter().take(1000) {
                f.insert_hash(k);
                f.insert_hash_atomic(k);
            }
            assert!(keys.iter().all(|&k| f.contains_hash(k)), "{config:?} n = {n}");
        }
    }
}

#[test]
fn positions_are_remixed_when_the_hash_has_too_few_bits() {
    // 64-bit words, k = 8: 48 position bits; with 2^17 words 48 + 17 > 64 bits are needed.
    let big = Layout::new(TwoBitConfig { word_bits: 64, bits_per_key_in_word: 8 }, 17).unwrap();
    assert!(big.remix);
    let floe = Layout::new(TwoBitConfig::FLOE, 35).unwrap();
    assert!(!floe.remix);
    // Every mask stays inside its word and sets between 1 and k bits.
    let mut rng = SplitMix64::new(3);
    for _ in 0..10_000 {
        let (i, mask) = floe.locate(rng.next_u64());
        assert!((i as u64) < floe.num_words());
        assert!(mask >> 32 == 0 && (1..=2).contains(&mask.count_ones()));
        let (i, mask) = big.locate(rng.next_u64());
        assert!((i as u64) < big.num_words() && (1..=8).contains(&mask.count_ones()));
    }
}

#[test]
fn concurrent_atomic_inserts_lose_no_key_and_equal_a_sequential_build() {
    let n = 400_000;
    let keys = SplitMix64::new(77).hashes(n);
    for config in [TwoBitConfig::FLOE, TwoBitConfig { word_bits: 64, bits_per_key_in_word: 3 }] {
        let shared = TwoBitBloom::with_config(config, n as u64 * 8).unwrap();
        std::thread::scope(|s| {
            for (t, part) in keys.chunks(n / 4).enumerate() {
                let f = &shared;
                s.spawn(move || {
                    // Two threads insert one key at a time, two in batches: both atomic paths.
                    if t % 2 == 0 {
                        part.iter().for_each(|&k| f.insert_hash_atomic(k));
                    } else {
                        f.insert_batch_atomic(part);
                    }
                    f.add_keys_inserted(part.len() as u64);
                });
            }
        });
        assert!(keys.iter().all(|&k| shared.contains_hash(k)), "{config:?}: a key was lost");
        let mut sequential = TwoBitBloom::with_config(config, n as u64 * 8).unwrap();
        keys.iter().for_each(|&k| sequential.insert_hash(k));
        // OR is commutative and associative: any interleaving yields the same bits.
        assert_eq!(shared, sequential, "{config:?}");
        assert_eq!(shared.to_bytes(), sequential.to_bytes());
    }
}

#[test]
fn batch_operations_equal_single_operations() {
    for config in CONFIGS {
        let keys = SplitMix64::new(5).hashes(10_007);
        let mut single = TwoBitBloom::with_config(config, 80_000).unwrap();
        keys.iter().for_each(|&k| single.insert_hash(k));
        let mut batch = TwoBitBloom::with_config(config, 80_000).unwrap();
        batch.insert_batch(&keys);
        assert_eq!(batch, single, "{config:?}");
        let atomic = TwoBitBloom::with_config(config, 80_000).unwrap();
        atomic.insert_batch_atomic(&keys);
        atomic.set_keys_inserted(keys.len() as u64);
        assert_eq!(atomic, single, "{config:?}");

        let mut probes = keys[..500].to_vec();
        probes.extend(SplitMix64::new(99).hashes(5000));
        let expected: Vec<bool> = probes.iter().map(|&h| single.contains_hash(h)).collect();
        let mut out = vec![true; 3]; // stale contents must be cleared
        single.contains_batch(&probes, &mut out);
        assert_eq!(out, expected);
        let bytes = single.to_bytes();
        let view = TwoBitBloomView::parse(&envelope::decode(&bytes).unwrap()).unwrap();
        view.contains_batch(&probes, &mut out);
        assert_eq!(out, expected);
    }
}

#[test]
fn round_trip_and_zero_copy_view_agree() {
    for config in CONFIGS {
        let (f, keys) = filled(config, 5000, 10, 11);
        let bytes = f.to_bytes();
        let back = TwoBitBloom::from_bytes(&bytes).unwrap();
        assert_eq!(back, f);
        assert_eq!(back.info(), f.info());
        let view = FilterView::parse(&bytes).unwrap();
        assert_eq!(view.kind(), FilterKind::TwoBitBloom);
        let mut rng = SplitMix64::new(5);
        for h in keys.iter().copied().chain((0..5000).map(|_| rng.next_u64())) {
            assert_eq!(view.contains_hash(h), f.contains_hash(h));
        }
        let env = envelope::decode(&bytes).unwrap();
        let tv = TwoBitBloomView::parse(&env).unwrap();
        assert_eq!((tv.config(), tv.num_bits(), tv.keys_inserted()), (config, f.num_bits(), 5000));
        // Payload: 2^L little-endian words.
        assert_eq!(env.payload.len() as u64, f.num_words() * config.word_bits as u64 / 8);
    }
}

#[test]
fn payload_words_are_little_endian_in_index_order() {
    let mut f = TwoBitBloom::new(64).unwrap(); // two u32 words
                                               // A hash whose top bit selects word 1 and whose low 10 bits give positions 3 and 7.
    let h = (1u64 << 63) | 3 | (7 << 5);
    f.insert_hash(h);
    let bytes = f.to_bytes();
    let env = envelope::decode(&bytes).unwrap();
    assert_eq!(env.payload, &[0, 0, 0, 0, 0x88, 0, 0, 0]);
    assert_eq!(env.params, &[32, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn valid_envelopes_with_bad_params_are_corruption() {
    // Each envelope has a correct checksum, so only the parameter checks can catch it.
    let cases: [(u8, u8, u8, usize); 6] = [
        (48, 2, 1, 12), // word width not 32/64
        (32, 0, 1, 8),  // k = 0
        (32, 9, 1, 8),  // k above 8
        (32, 2, 36, 8), // 2^36 u32 words exceed 2^40 bits
        (32, 2, 2, 12), // payload one word short of 2^2 words
        (64, 2, 1, 8),  // payload of one u64 word where the params say two
    ];
    for (word_bits, k, log2, payload_len) in cases {
        let params = ParamWriter::new().u8(word_bits).u8(k).u8(log2).u64(0).finish();
        let bytes =
            encode(FilterKind::TwoBitBloom, &params, |out| out.extend(vec![0u8; payload_len]));
        let err = TwoBitBloom::from_bytes(&bytes).unwrap_err();
        assert!(err.is_corruption(), "{word_bits}/{k}/{log2}: {err}");
        assert!(FilterView::parse(&bytes).unwrap_err().is_corruption());
    }
    // A trailing parameter byte is a different encoding.
    let params = ParamWriter::new().u8(32).u8(2).u8(0).u64(0).u8(0).finish();
    let bytes = encode(FilterKind::TwoBitBloom, &params, |out| out.extend([0u8; 4]));
    assert!(TwoBitBloom::from_bytes(&bytes).unwrap_err().is_corruption());
    // A filter of another kind is an invalid argument for `from_bytes`.
    let other = crate::StandardBloom::from_shape(64, 2).unwrap().to_bytes();
    assert!(matches!(TwoBitBloom::from_bytes(&other), Err(FilterError::InvalidArgument(_))));
}

#[test]
fn invalid_configs_and_sizes_are_typed_errors() {
    let bad = [
        TwoBitConfig { word_bits: 16, bits_per_key_in_word: 2 },
        TwoBitConfig { word_bits: 128, bits_per_key_in_word: 2 },
        TwoBitConfig { word_bits: 32, bits_per_key_in_word: 0 },
        TwoBitConfig { word_bits: 64, bits_per_key_in_word: 9 },
    ];
    for config in bad {
        assert!(matches!(config.validate(), Err(FilterError::InvalidArgument(_))), "{config:?}");
        assert!(matches!(
            TwoBitBloom::with_config(config, 1024),
            Err(FilterError::InvalidArgument(_))
        ));
    }
    for config in CONFIGS {
        config.validate().unwrap();
    }
    assert_eq!(TwoBitConfig::default(), TwoBitConfig::FLOE);
    assert!(matches!(TwoBitBloom::new(0), Err(FilterError::InvalidArgument(_))));
    assert!(matches!(TwoBitBloom::new(MAX_BITS + 1), Err(FilterError::InvalidArgument(_))));
    assert!(TwoBitBloom::from_shape(64, 0).is_err());
    assert!(TwoBitBloom::from_shape(64, 9).is_err());
    assert!(TwoBitBloom::with_bits_per_key(-1.0).expected_items(10).is_err());
    assert!(TwoBitBloom::with_false_pos(0.0).expected_items(10).is_err());
}

#[test]
fn sizing_rounds_words_up_to_a_power_of_two_and_keeps_k_2() {
    let f = TwoBitBloom::with_bits_per_key(8.0).expected_items(1_000_000).unwrap();
    assert_eq!(f.config(), TwoBitConfig::FLOE);
    assert_eq!(f.num_words(), 1 << 18); // 8e6 bits / 32 = 250,000 words -> 262,144
    assert_eq!(f.num_bits(), 1 << 23);
    assert_eq!(f.memory_bytes(), 1 << 20);
    let one = TwoBitBloom::one_bit(1).unwrap();
    assert_eq!((one.num_words(), one.num_bits()), (1, 32));
    let f = TwoBitBloom::from_shape(65, 3).unwrap();
    assert_eq!((f.num_words(), f.config().bits_per_key_in_word), (4, 3));
    // 1% at k = 2 in u32 words needs about 25 bits per key (blocked formula).
    let (bpk, k) =
        BloomBuilder::<TwoBitBloom>::new(Sizing::FalsePositiveRate(0.01)).shape_per_key().unwrap();
    assert_eq!(k, 2);
    assert!((24.0..26.0).contains(&bpk), "{bpk}");
}

#[test]
fn reported_key_count_is_what_the_owner_says() {
    let f = TwoBitBloom::new(1 << 12).unwrap();
    f.insert_hash_atomic(1);
    assert_eq!(f.info().keys_inserted, 0); // the atomic path counts nothing
    f.add_keys_inserted(5);
    f.add_keys_inserted(u64::MAX);
    assert_eq!(f.info().keys_inserted, u64::MAX);
    f.set_keys_inserted(7);
    let mut g = f.clone();
    g.insert_hash(2);
    assert_eq!((f.info().keys_inserted, g.info().keys_inserted), (7, 8));
}
