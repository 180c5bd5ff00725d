//! Backward moves over one block: `prev`, `seek_to_last` and `seek_for_prev` against the
//! forward order, for restart intervals 1 and 16 and blocks of one entry.

use crate::ikey::{encode, ValueKind};
use crate::sst::block::{Block, BlockBuilder};
use std::sync::Arc;

/// Internal key of the `i`-th entry: user keys `key000000`, `key000002`, ... (odd ones absent).
fn key(i: u32) -> Vec<u8> {
    encode(format!("key{:06}", i * 2).as_bytes(), 7, ValueKind::Put)
}

/// The key just after entry `i` and before entry `i + 1` (an odd number).
fn between(i: u32) -> Vec<u8> {
    encode(format!("key{:06}", i * 2 + 1).as_bytes(), 7, ValueKind::Put)
}

fn build(n: u32, interval: usize) -> Arc<Block> {
    let mut b = BlockBuilder::new(interval);
    for i in 0..n {
        b.add(&key(i), format!("v{i}").as_bytes());
    }
    Arc::new(Block::new(b.finish()).unwrap())
}

#[test]
fn prev_from_the_last_entry_visits_every_entry_in_descending_order() {
    for interval in [1, 16] {
        for n in [1, 2, 15, 16, 17, 300] {
            let block = build(n, interval);
            let mut it = block.iter();
            it.seek_to_last().unwrap();
            for i in (0..n).rev() {
                assert!(it.valid(), "interval {interval}, n {n}, entry {i}");
                assert_eq!(it.key(), key(i));
                assert_eq!(it.value(), format!("v{i}").as_bytes());
                it.prev().unwrap();
            }
            assert!(!it.valid(), "prev before the first entry leaves the block");
            it.prev().unwrap();
            assert!(!it.valid(), "prev on an invalid cursor stays invalid");
        }
    }
}

#[test]
fn seek_for_prev_finds_the_last_key_at_or_below_the_target() {
    for interval in [1, 16] {
        for n in [1, 16, 17, 300] {
            let block = build(n, interval);
            let mut it = block.iter();
            for i in 0..n {
                it.seek_for_prev(&key(i)).unwrap();
                assert_eq!(it.key(), key(i), "exact hit, interval {interval}, n {n}");
                it.seek_for_prev(&between(i)).unwrap();
                assert_eq!(it.key(), key(i), "between {i} and {}", i + 1);
            }
            it.seek_for_prev(b"a\0\0\0\0\0\0\0\0").unwrap();
            assert!(!it.valid(), "a target below every key finds nothing");
            it.seek_for_prev(b"z\0\0\0\0\0\0\0\0").unwrap();
            assert_eq!(it.key(), key(n - 1), "a target above every key finds the last");
        }
    }
}

#[test]
fn next_and_prev_interleave_without_losing_position() {
    let mut rng = crate::rng::SplitMix64::new(11);
    for interval in [1, 16] {
        let n = 200;
        let block = build(n, interval);
        let mut it = block.iter();
        it.seek(&key(100)).unwrap();
        let mut at = 100i64;
        for _ in 0..2000 {
            if rng.below(2) == 0 {
                it.next().unwrap();
                at += 1;
            } else {
                it.prev().unwrap();
                at -= 1;
            }
            if at < 0 || at >= n as i64 {
                assert!(!it.valid());
                at = rng.below(n as u64) as i64;
                it.seek(&key(at as u32)).unwrap();
            }
            assert_eq!(it.key(), key(at as u32), "interval {interval}");
        }
    }
}

#[test]
fn empty_block_has_no_last_entry() {
    let block = build(0, 16);
    let mut it = block.iter();
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.seek_for_prev(&key(3)).unwrap();
    assert!(!it.valid());
}

#[test]
fn backward_moves_over_malformed_blocks_are_corruption_not_panics() {
    let good = build(40, 4).data().to_vec();
    let mut rng = crate::rng::SplitMix64::new(5);
    let mut failures = 0;
    for _ in 0..3000 {
        let mut bytes = good.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] = rng.next_u64() as u8;
        }
        let Ok(block) = Block::new(bytes) else { continue };
        let block = Arc::new(block);
        let mut it = block.iter();
        let mut steps = 0;
        match it.seek_to_last() {
            Ok(()) => {
                while it.valid() {
                    if it.prev().is_err() {
                        failures += 1;
                        assert!(!it.valid(), "an error leaves the cursor invalid");
                    }
                    steps += 1;
                    assert!(steps <= block.size());
                }
            }
            Err(_) => failures += 1,
        }
        let _ = it.seek_for_prev(&key(17));
    }
    assert!(failures > 0, "some corruptions are detected while stepping back");
}
