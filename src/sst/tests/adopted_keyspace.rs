//! An adopted table (`Table::adopt_keyspace`): keys stored with keyspace id `S` are read as keys
//! of `T`. Iterators return `T`; seeks translate their target (a smaller keyspace lands before
//! the first key, a larger one past the last); point lookups of `T` find the keys, lookups of
//! `S` or any other id find nothing; ids that are 0, equal, or not the file's are refused.

use super::*;
use crate::filter::hash_key;
use crate::range_del::RangeTombstone;
use crate::sst::{FilterVerdict, GetResult, ReadCounters, ValueOut};

const S: u32 = 7;
const T: u32 = 3;
const G: u64 = 500;

fn user(i: u32) -> Vec<u8> {
    format!("key{:08}", 2 * i).into_bytes()
}

/// 300 keys of keyspace `S` at sequence 0 in small blocks, and a range tombstone: an ingested
/// file written for another keyspace id.
fn bytes() -> Vec<u8> {
    let opts = TableOptions { block_size: 256, restart_interval: 4, ..TableOptions::default() };
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts).unwrap();
    for i in 0..300 {
        b.add(&ikey::encode_in(S, &user(i), 0, ValueKind::Put), format!("v{i}").as_bytes())
            .unwrap();
    }
    let t = RangeTombstone { start: b"a".to_vec(), end: b"b".to_vec(), seq: 0 };
    b.add_range_tombstone(t).unwrap();
    b.finish(bloom_source()).unwrap();
    file.bytes()
}

fn adopted() -> Arc<Table> {
    let mut t = open(bytes(), None).unwrap();
    t.set_global_seq(Some(G));
    t.adopt_keyspace(S, T).unwrap();
    Arc::new(t)
}

#[test]
fn keys_read_with_the_adopted_id_and_seeks_translate_their_target() {
    let t = adopted();
    let mut it = t.iter(false);
    it.seek_to_first().unwrap();
    let mut n = 0;
    while it.valid() {
        let (ks, k, seq, kind) = ikey::decode_in(it.key()).unwrap();
        assert_eq!((ks, k, seq, kind), (T, user(n).as_slice(), G, ValueKind::Put));
        assert_eq!(it.value(), format!("v{n}").as_bytes());
        it.next().unwrap();
        n += 1;
    }
    assert_eq!(n, 300);
    for i in [0u32, 1, 99, 150, 299] {
        it.seek(&ikey::lookup_key_in(T, &user(i), G)).unwrap();
        assert_eq!(ikey::split(it.key()), (T, user(i).as_slice()), "seek {i}");
        it.seek_for_prev(&ikey::lookup_key_in(T, &user(i), 0)).unwrap();
        assert_eq!(ikey::split(it.key()), (T, user(i).as_slice()), "seek_for_prev {i}");
        // Stepping both ways from a seek stays in the adopted id.
        it.prev().unwrap();
        if i > 0 {
            assert_eq!(ikey::split(it.key()), (T, user(i - 1).as_slice()), "prev of {i}");
        } else {
            assert!(!it.valid());
        }
    }
    // A target of a smaller keyspace (the default one, and 1 < T) is before every key, also
    // when its user key is larger than all of them; one of a larger keyspace (S itself among
    // them) is after every key.
    for ks in [0, T - 1] {
        it.seek(&ikey::lookup_key_in(ks, b"zzz", G)).unwrap();
        assert_eq!(ikey::split(it.key()), (T, user(0).as_slice()), "seek in keyspace {ks}");
        it.seek_for_prev(&ikey::lookup_key_in(ks, b"zzz", G)).unwrap();
        assert!(!it.valid(), "seek_for_prev in keyspace {ks}");
    }
    for ks in [T + 1, S, u32::MAX] {
        it.seek(&ikey::lookup_key_in(ks, b"", G)).unwrap();
        assert!(!it.valid(), "seek in keyspace {ks}");
        it.seek_for_prev(&ikey::lookup_key_in(ks, b"", G)).unwrap();
        assert_eq!(ikey::split(it.key()), (T, user(299).as_slice()), "seek_for_prev in {ks}");
    }
    it.seek_to_last().unwrap();
    assert_eq!(ikey::split(it.key()), (T, user(299).as_slice()));
    // The range tombstones hold user keys and read at the global sequence.
    assert_eq!(t.max_covering_tombstone(b"a1", G), G);
}

#[test]
fn point_lookups_find_the_adopted_ids_keys_and_no_other_ids() {
    let t = adopted();
    let c = ReadCounters::new();
    for i in 0..300u32 {
        let k = user(i);
        let h = hash_key(&k);
        assert!(matches!(t.probe_filter(T, &k, h, &c), FilterVerdict::Maybe { positive: true }));
        let got =
            t.get_past_filter(T, &k, G, &c, true, ValueOut::Copy, &mut Vec::new(), 0).unwrap();
        assert_eq!(got, GetResult::Found(format!("v{i}").into_bytes()), "key {i}");
        assert!(t.data_block_handle(T, &k, G, &c).unwrap().is_some());
        for other in [0, 1, S] {
            assert_eq!(t.probe_filter(other, &k, h, &c), FilterVerdict::Absent, "{other}");
            assert_eq!(t.probe_filter_in_range(other, &k, h, &c), FilterVerdict::Absent);
            let got = t
                .get_past_filter(other, &k, G, &c, false, ValueOut::Copy, &mut Vec::new(), 0)
                .unwrap();
            assert_eq!(got, GetResult::NotFound, "key {i} in keyspace {other}");
            assert_eq!(t.data_block_handle(other, &k, G, &c).unwrap(), None);
        }
        // Absent keys between the stored ones: never found.
        let absent = format!("key{:08}", 2 * i + 1).into_bytes();
        let got = t
            .get_past_filter(T, &absent, G, &c, false, ValueOut::Copy, &mut Vec::new(), 0)
            .unwrap();
        assert_eq!(got, GetResult::NotFound);
    }
}

#[test]
fn an_adoption_of_ids_that_are_zero_equal_or_not_the_files_is_corruption() {
    for (stored, adopted, what) in [
        (0, T, "must differ from 0"),
        (S, 0, "must differ from 0"),
        (S, S, "from each other"),
        (T, 9, "carry keyspace 3, they carry 7"),
    ] {
        let mut t = open(bytes(), None).unwrap();
        let e = t.adopt_keyspace(stored, adopted).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains(what), "{stored}->{adopted}: {e}");
        assert!(e.to_string().contains("000007.sst"), "{e}");
    }
    // A table of range deletions only names its id in its range-deletion block.
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), TableOptions::default()).unwrap();
    b.set_keyspace(S);
    let t = RangeTombstone { start: b"a".to_vec(), end: b"b".to_vec(), seq: 0 };
    b.add_range_tombstone(t).unwrap();
    b.finish(bloom_source()).unwrap();
    let mut t = open(file.bytes(), None).unwrap();
    assert!(t.adopt_keyspace(9, T).unwrap_err().is_corruption());
    t.adopt_keyspace(S, T).unwrap();
}
