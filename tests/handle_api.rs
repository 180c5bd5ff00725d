//! One shape for every handle: `Db`, `Keyspace` and `Snapshot` read through the same methods
//! with the same arguments and answers, `Db` and `Keyspace` write through the same methods, and
//! the newer calls (`get_pinned`, read options, ranges for `delete_range`, a keyspace's own
//! snapshot and write options) do what they say.

use siftdb::{
    Db, Error, KeyspaceOptions, Options, ReadOptions, U64AddOperator, WriteBatch, WriteOptions,
};
use std::sync::Arc;

fn keys(it: siftdb::DbIterator) -> Vec<Vec<u8>> {
    it.map(|kv| kv.unwrap().0).collect()
}

/// Every read method, called with the same arguments on any handle: this compiles only while
/// the three handles share one signature per method, and the answers must agree.
macro_rules! every_read {
    ($h:expr) => {{
        let h = &$h;
        let mut cursor = h.cursor().unwrap();
        cursor.seek(b"b").unwrap();
        let at_b = cursor.valid().then(|| cursor.key().to_vec());
        let unfilled = ReadOptions { fill_cache: false, ..Default::default() };
        (
            h.get("b").unwrap(),
            h.get_pinned("b").unwrap().map(|v| v.into_vec()),
            h.contains_key("b").unwrap(),
            h.multi_get(["a", "b", "zz"]).into_iter().map(Result::unwrap).collect::<Vec<_>>(),
            keys(h.range("a".."c").unwrap()),
            keys(h.range_opt("a".."c", &unfilled).unwrap()),
            keys(h.scan().unwrap()),
            keys(h.prefix("b").unwrap()),
            at_b,
            h.cursor_opt(&unfilled).unwrap().valid(),
        )
    }};
}

#[test]
fn db_keyspace_and_snapshots_answer_the_same_reads_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("other", KeyspaceOptions::default()).unwrap();
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        db.put(k, v).unwrap();
        ks.put(k, v).unwrap();
    }
    db.flush().unwrap();
    let from_db = every_read!(db);
    assert_eq!(from_db, every_read!(ks));
    let snap = db.snapshot();
    let ks_snap = ks.snapshot();
    let ks_via_snap = snap.keyspace(&ks).unwrap();
    // Later writes are not in the snapshots.
    db.put("b", "changed").unwrap();
    ks.delete("b").unwrap();
    assert_eq!(every_read!(snap), from_db);
    assert_eq!(every_read!(ks_snap), from_db);
    assert_eq!(every_read!(ks_via_snap), from_db);
    assert_eq!(db.get("b").unwrap(), Some(b"changed".to_vec()));
    assert_eq!(ks.get("b").unwrap(), None);
    assert_eq!(from_db.0, Some(b"2".to_vec()));
    assert_eq!(from_db.3, vec![Some(b"1".to_vec()), Some(b"2".to_vec()), None]);
    assert_eq!(from_db.4, vec![b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(from_db.8, Some(b"b".to_vec()));
}

#[test]
fn a_snapshot_of_a_foreign_or_dropped_keyspace_is_refused() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let db = Db::open(d1.path(), Options::default()).unwrap();
    let other = Db::open(d2.path(), Options::default()).unwrap();
    let foreign = other.keyspace("f", KeyspaceOptions::default()).unwrap();
    let err = db.snapshot().keyspace(&foreign).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("another database")), "{err}");
    let ks = db.keyspace("gone", KeyspaceOptions::default()).unwrap();
    ks.put("k", "v").unwrap();
    let snap = ks.snapshot();
    db.drop_keyspace("gone").unwrap();
    let err = snap.get("k").unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("dropped")), "{err}");
    assert!(db.snapshot().keyspace(&ks).is_err());
}

#[test]
fn delete_range_takes_any_range_with_an_end_on_db_keyspace_and_batch() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
    let all = ["a", "b", "c", "d", "e", "f"];
    for k in all {
        db.put(k, "v").unwrap();
        ks.put(k, "v").unwrap();
    }
    let left = |it: siftdb::DbIterator| -> String {
        keys(it).into_iter().map(|k| String::from_utf8(k).unwrap()).collect()
    };
    db.delete_range("b".."c").unwrap(); // half-open: c stays
    assert_eq!(left(db.scan().unwrap()), "acdef");
    db.delete_range("c"..="d").unwrap(); // inclusive: d goes too
    assert_eq!(left(db.scan().unwrap()), "aef");
    db.delete_range(..="a").unwrap(); // open start
    assert_eq!(left(db.scan().unwrap()), "ef");
    let err = db.delete_range("e"..).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("upper bound")), "{err}");
    assert_eq!(left(db.scan().unwrap()), "ef", "a refused range deletes nothing");
    let err = db.delete_range("f".."e").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)));
    db.delete_range("e".."e").unwrap();
    assert_eq!(left(db.scan().unwrap()), "ef");

    ks.delete_range("b"..="e").unwrap();
    assert_eq!(left(ks.scan().unwrap()), "af");
    assert!(ks.delete_range::<&str, _>(..).is_err());
    let mut b = WriteBatch::new();
    b.delete_range_in(&ks, .."b").put("z", "v");
    db.write(b).unwrap();
    assert_eq!(left(ks.scan().unwrap()), "f");
    assert_eq!(left(db.scan().unwrap()), "efz");
    let mut b = WriteBatch::new();
    b.put("y", "v").delete_range("x"..);
    assert!(db.write(b).is_err(), "the whole batch fails");
    assert_eq!(db.get("y").unwrap(), None);
}

#[test]
fn get_pinned_answers_as_get_from_memtables_tables_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { merge_operator: Some(Arc::new(U64AddOperator)), ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    let big = vec![7u8; 10_000];
    db.put("table", &big).unwrap();
    db.merge("count", 2u64.to_le_bytes()).unwrap();
    db.flush().unwrap();
    db.put("mem", "in the memtable").unwrap();
    db.merge("count", 3u64.to_le_bytes()).unwrap();
    db.put("gone", "x").unwrap();
    db.delete("gone").unwrap();

    let pinned = db.get_pinned("table").unwrap().unwrap();
    assert!(pinned.is_pinned(), "a table's value is read in place");
    assert_eq!(&*pinned, big.as_slice());
    let mem = db.get_pinned("mem").unwrap().unwrap();
    assert!(!mem.is_pinned());
    assert_eq!(mem, b"in the memtable".to_vec());
    let count = db.get_pinned("count").unwrap().unwrap();
    assert_eq!(count.as_bytes(), 5u64.to_le_bytes());
    assert_eq!(db.get_pinned("gone").unwrap(), None);
    assert_eq!(db.get_pinned("never").unwrap(), None);
    // The pinned bytes outlive later writes, flushes and compactions of their key.
    db.put("table", "new").unwrap();
    db.compact().unwrap();
    assert_eq!(&*pinned, big.as_slice());
    assert_eq!(db.get_pinned("table").unwrap().unwrap(), b"new".to_vec());
}

/// The database in `dir` after keys `0..n` (4 bytes, big-endian) with 100-byte values were
/// written and flushed to one table, reopened with a block cache of `cache_bytes` (empty).
fn reopened_with_a_flushed_table(dir: &std::path::Path, cache_bytes: usize, n: u32) -> Db {
    let opts = || Options { block_cache_bytes: cache_bytes, ..Options::default() };
    let db = Db::open(dir, opts()).unwrap();
    for i in 0..n {
        db.put(i.to_be_bytes(), [i as u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    Db::open(dir, opts()).unwrap()
}

#[test]
fn a_scan_that_does_not_fill_the_cache_leaves_it_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = reopened_with_a_flushed_table(dir.path(), 64 << 20, 5_000);
    let cached = || db.memory_usage().block_cache_data;
    let before = cached();
    let unfilled = ReadOptions { fill_cache: false, ..Default::default() };
    assert_eq!(db.range_opt::<&[u8], _>(.., &unfilled).unwrap().count(), 5_000);
    let mut c = db.cursor_opt(&unfilled).unwrap();
    c.seek_to_first().unwrap();
    while c.valid() {
        c.next().unwrap();
    }
    assert_eq!(cached(), before, "no data block entered the cache");
    assert_eq!(db.scan().unwrap().count(), 5_000);
    assert!(cached() > before, "a default scan fills the cache");
}

#[test]
fn a_scan_puts_at_most_a_quarter_of_the_block_cache_in_it_and_more_on_each_pass() {
    let dir = tempfile::tempdir().unwrap();
    // About 2.4 MB of data blocks against a 1 MiB cache: a scan's budget is 256 KiB.
    let db = reopened_with_a_flushed_table(dir.path(), 1 << 20, 20_000);
    let cached = || db.memory_usage().block_cache_data;
    assert_eq!(db.scan().unwrap().count(), 20_000);
    let first = cached();
    // The budget spends each block's charge as it admits it: one block (about 4 KiB) past
    // 256 KiB at most, plus the cache's own bookkeeping per entry (a few percent).
    assert!(first > 200 << 10 && first <= 288 << 10, "one pass cached {first} bytes");
    // A second pass hits what the first cached and caches as much again beyond it.
    assert_eq!(db.scan().unwrap().count(), 20_000);
    let second = cached();
    assert!(second > first + (200 << 10), "two passes cached {second} bytes");
    // A short range within the budget (about 14 blocks) is cached whole, as before: read
    // again, it misses no block.
    let reads = || db.stats().total_scan_reads();
    let keys = |lo: u32, hi: u32| db.range(lo.to_be_bytes()..hi.to_be_bytes()).unwrap().count();
    assert_eq!(keys(18_000, 18_500), 500);
    let (hits, misses) = (reads().block_cache_hits, reads().block_cache_misses);
    assert_eq!(keys(18_000, 18_500), 500);
    assert_eq!(reads().block_cache_misses, misses, "every block of the range was cached");
    assert!(reads().block_cache_hits >= hits + 10, "the second read hit the cache");
}

#[test]
fn a_keyspace_writes_with_write_options_and_batches_like_the_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
    let mut b = WriteBatch::new();
    b.put_in(&ks, "k", "v").put("d", "v");
    ks.write_opt(b, WriteOptions { sync: true }).unwrap();
    assert_eq!(ks.get("k").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get("d").unwrap(), Some(b"v".to_vec()), "a batch names its own keyspaces");
    // Keys by value, from any iterator.
    let wanted = vec![b"k".to_vec(), b"x".to_vec()];
    let got: Vec<_> = ks.multi_get(wanted).into_iter().map(Result::unwrap).collect();
    assert_eq!(got, vec![Some(b"v".to_vec()), None]);
    db.close().unwrap();
    assert!(matches!(ks.write(WriteBatch::new()), Err(Error::Closed)));
    assert!(matches!(ks.cursor(), Err(Error::Closed)));
}
