//! Backward moves over a whole table: block boundaries crossed by `prev`, `seek_for_prev`
//! landing in one block and answering from the one before, direction changes.

use super::*;
use crate::sst::TableIter;

/// A table of `n` simple entries in small blocks (a few entries each) with the given restart
/// interval, and the entries' internal keys.
fn table(n: u32, restart_interval: usize) -> (TableIter, Vec<Vec<u8>>) {
    let entries = simple_entries(n);
    let opts = TableOptions { block_size: 256, restart_interval, ..TableOptions::default() };
    let (bytes, summary) = build(&entries, opts, bloom_source());
    assert!(n < 10 || summary.properties.data_blocks > 3, "the entries span several blocks");
    let table = Arc::new(open(bytes, None).unwrap());
    let keys = entries.iter().map(|(k, s, kind, _)| ikey::encode(k, *s, *kind)).collect();
    (table.iter(false), keys)
}

#[test]
fn prev_from_the_last_entry_crosses_every_block_boundary() {
    for interval in [1, 16] {
        let (mut it, keys) = table(500, interval);
        it.seek_to_last().unwrap();
        for k in keys.iter().rev() {
            assert_eq!(it.key(), k.as_slice());
            it.prev().unwrap();
        }
        assert!(!it.valid());
    }
}

#[test]
fn seek_for_prev_answers_from_the_block_before_when_the_target_starts_a_block() {
    let (mut it, keys) = table(500, 16);
    for (i, k) in keys.iter().enumerate() {
        it.seek_for_prev(k).unwrap();
        assert_eq!(it.key(), k.as_slice(), "exact hit");
        // The oldest possible version of the same user key sorts after `k`: still `k`.
        let (user, _, _) = ikey::decode(k).unwrap();
        it.seek_for_prev(&ikey::encode(user, 0, ValueKind::Delete)).unwrap();
        assert_eq!(it.key(), k.as_slice());
        // The newest possible version sorts before `k`: the entry before it.
        it.seek_for_prev(&ikey::lookup_key(user, ikey::MAX_SEQ)).unwrap();
        match i {
            0 => assert!(!it.valid()),
            _ => assert_eq!(it.key(), keys[i - 1].as_slice()),
        }
    }
    it.seek_for_prev(&ikey::lookup_key(b"zzz", 0)).unwrap();
    assert_eq!(it.key(), keys[keys.len() - 1].as_slice());
}

#[test]
fn table_cursor_changes_direction_at_random() {
    let (mut it, keys) = table(400, 16);
    let mut rng = crate::rng::SplitMix64::new(21);
    let mut at = 0usize;
    it.seek_to_first().unwrap();
    for _ in 0..3000 {
        if rng.below(2) == 0 && at + 1 < keys.len() {
            it.next().unwrap();
            at += 1;
        } else if at > 0 {
            it.prev().unwrap();
            at -= 1;
        }
        assert_eq!(it.key(), keys[at].as_slice());
    }
}

#[test]
fn empty_table_has_no_last_entry() {
    let (bytes, _) = build(&[], TableOptions::default(), bloom_source());
    let mut it = Arc::new(open(bytes, None).unwrap()).iter(false);
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.seek_for_prev(&ikey::lookup_key(b"a", 5)).unwrap();
    assert!(!it.valid());
}
