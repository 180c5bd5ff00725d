//! An ingested table read at its global sequence number (`Table::set_global_seq`): every key
//! comes back with it, seeks honour the rewritten order (a seek below the global sequence
//! steps past the key it would otherwise land on), point lookups below it find nothing, and
//! the range tombstones carry it.

use super::*;
use crate::range_del::RangeTombstone;
use crate::sst::{GetResult, ReadCounters};

const G: u64 = 1000;

/// 300 keys at sequence 0 in small blocks, read at `G`; a range tombstone too.
fn table() -> Arc<Table> {
    let entries: Vec<Entry> =
        simple_entries(300).into_iter().map(|(k, _, kind, v)| (k, 0, kind, v)).collect();
    let opts = TableOptions { block_size: 256, restart_interval: 4, ..TableOptions::default() };
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts).unwrap();
    for (k, seq, kind, v) in &entries {
        b.add(&ikey::encode(k, *seq, *kind), v).unwrap();
    }
    b.add_range_tombstone(RangeTombstone { start: b"a".to_vec(), end: b"b".to_vec(), seq: 0 })
        .unwrap();
    b.finish(bloom_source()).unwrap();
    let mut t = open(file.bytes(), None).unwrap();
    t.set_global_seq(Some(G));
    Arc::new(t)
}

fn user(i: u32) -> Vec<u8> {
    format!("key{:08}", 2 * i).into_bytes()
}

#[test]
fn keys_read_at_the_global_sequence_and_seeks_follow_the_rewritten_order() {
    let t = table();
    let mut it = t.iter(false);
    it.seek_to_first().unwrap();
    let mut n = 0;
    while it.valid() {
        assert_eq!(ikey::decode(it.key()).unwrap(), (user(n).as_slice(), G, ValueKind::Put));
        it.next().unwrap();
        n += 1;
    }
    assert_eq!(n, 300);
    for i in [0u32, 1, 57, 150, 298, 299] {
        // At or above G the key itself; below G the next key (its version is too new).
        it.seek(&ikey::lookup_key(&user(i), G)).unwrap();
        assert_eq!(ikey::user_key(it.key()), user(i).as_slice(), "seek at G, key {i}");
        it.seek(&ikey::lookup_key(&user(i), G - 1)).unwrap();
        match i {
            299 => assert!(!it.valid(), "past the last key"),
            _ => assert_eq!(ikey::user_key(it.key()), user(i + 1).as_slice(), "seek below G"),
        }
        // The newest possible version of a key sorts before it; the oldest after it.
        it.seek_for_prev(&ikey::lookup_key(&user(i), G - 1)).unwrap();
        assert_eq!(ikey::user_key(it.key()), user(i).as_slice(), "seek_for_prev below G");
        it.seek_for_prev(&ikey::encode(&user(i), G + 1, ValueKind::Put)).unwrap();
        match i {
            0 => assert!(!it.valid(), "before the first key"),
            _ => assert_eq!(ikey::user_key(it.key()), user(i - 1).as_slice(), "above G"),
        }
        it.prev().unwrap();
    }
    it.seek_to_last().unwrap();
    assert_eq!(ikey::decode(it.key()).unwrap(), (user(299).as_slice(), G, ValueKind::Put));
}

#[test]
fn point_lookups_below_the_global_sequence_find_nothing_and_tombstones_carry_it() {
    let t = table();
    let counters = ReadCounters::default();
    let h = crate::filter::hash_key(&user(5));
    let mut ops = Vec::new();
    assert!(matches!(t.get(&user(5), h, G, &counters, &mut ops).unwrap(), GetResult::Found(_)));
    assert!(matches!(t.get(&user(5), h, G - 1, &counters, &mut ops).unwrap(), GetResult::NotFound));
    assert_eq!(t.max_covering_tombstone(b"a1", G), G);
    assert_eq!(t.max_covering_tombstone(b"a1", G - 1), 0);
}
