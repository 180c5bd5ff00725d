//! `delete_range` (issue 14): range tombstones respected by point lookups, multi_get,
//! contains_key, iterators and cursors at every layer (memtable, L0, deeper levels), across
//! flush, compaction and reopen; snapshots; filters never hiding a tombstone; compaction
//! dropping what is deleted; and a crash keeping a delete_range batch all or nothing.

use siftdb::storage::MemStorage;
use siftdb::{CompactionOptions, Db, Options, WriteBatch, WriteOptions};
use std::path::Path;
use std::sync::Arc;

fn k(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

fn v(i: u32) -> Vec<u8> {
    format!("v{i}").into_bytes()
}

fn opts(storage: &MemStorage) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        compaction: CompactionOptions { auto: false, ..CompactionOptions::default() },
        ..Options::default()
    }
}

fn fill(db: &Db, n: u32) {
    for i in 0..n {
        db.put(k(i), v(i)).unwrap();
    }
}

/// Checks every read path against "keys `0..n` minus `[lo, hi)`" (and no other key).
fn expect_deleted(db: &Db, n: u32, lo: u32, hi: u32) {
    expect_live(db, n, &|i| !(lo..hi).contains(&i));
}

/// Checks every read path against "the keys `i` in `0..n` with `live(i)`" (and no other key).
fn expect_live(db: &Db, n: u32, live: &dyn Fn(u32) -> bool) {
    for i in 0..n {
        assert_eq!(db.get(k(i)).unwrap(), live(i).then(|| v(i)), "get {i}");
        assert_eq!(db.contains_key(k(i)).unwrap(), live(i), "contains_key {i}");
    }
    let keys: Vec<Vec<u8>> = (0..n).map(k).collect();
    let got = db.multi_get(&keys);
    for (i, r) in (0..n).zip(got) {
        assert_eq!(r.unwrap(), live(i).then(|| v(i)), "multi_get {i}");
    }
    let want: Vec<Vec<u8>> = (0..n).filter(|&i| live(i)).map(k).collect();
    let fwd: Vec<Vec<u8>> = db.scan().unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(fwd, want, "forward scan");
    let mut rev: Vec<Vec<u8>> = db.scan().unwrap().rev().map(|r| r.unwrap().0).collect();
    rev.reverse();
    assert_eq!(rev, want, "reverse scan");
}

#[test]
fn a_range_tombstone_in_the_memtable_hides_keys_on_every_read_path() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    fill(&db, 50);
    db.delete_range(k(10)..k(20)).unwrap();
    expect_deleted(&db, 50, 10, 20);
    let mut c = db.cursor().unwrap();
    c.seek(&k(12)).unwrap();
    assert_eq!(c.key(), k(20), "seek into the range lands on its end");
    c.prev().unwrap();
    assert_eq!(c.key(), k(9), "prev skips the whole range");
    c.seek_for_prev(&k(19)).unwrap();
    assert_eq!(c.key(), k(9));
    c.next().unwrap();
    assert_eq!(c.key(), k(20));
}

#[test]
fn tombstones_cover_older_data_at_every_layer_across_flush_compaction_and_reopen() {
    let storage = MemStorage::new();
    let path = Path::new("/db");
    {
        let db = Db::open(path, opts(&storage)).unwrap();
        fill(&db, 100);
        db.compact().unwrap(); // data in L1
        db.delete_range(k(10)..k(20)).unwrap(); // tombstone in the memtable over L1 data
        expect_deleted(&db, 100, 10, 20);
        db.flush().unwrap(); // tombstone in L0 over L1 data
        assert_eq!(db.stats().levels[0].files, 1);
        expect_deleted(&db, 100, 10, 20);
    }
    let db = Db::open(path, opts(&storage)).unwrap();
    expect_deleted(&db, 100, 10, 20);
    db.delete_range(k(30)..k(35)).unwrap(); // survives reopen through the WAL
    drop(db);
    let db = Db::open(path, opts(&storage)).unwrap();
    let live = |i: u32| !(10..20).contains(&i) && !(30..35).contains(&i);
    expect_live(&db, 100, &live);
    db.compact().unwrap(); // tombstones and data merged in one level
    expect_live(&db, 100, &live);
}

#[test]
fn snapshots_taken_before_the_delete_range_still_see_the_keys() {
    let storage = MemStorage::new();
    let db = Db::open("/db", opts(&storage)).unwrap();
    fill(&db, 40);
    let before = db.snapshot();
    db.delete_range(k(5)..k(25)).unwrap();
    let after = db.snapshot();
    for step in ["memtable", "flush", "compact"] {
        match step {
            "flush" => db.flush().unwrap(),
            "compact" => db.compact().unwrap(),
            _ => {}
        }
        for i in 0..40 {
            assert_eq!(before.get(k(i)).unwrap(), Some(v(i)), "{step}: old snapshot, key {i}");
            let live = !(5..25).contains(&i);
            assert_eq!(after.get(k(i)).unwrap(), live.then(|| v(i)), "{step}: new snapshot {i}");
        }
        assert_eq!(before.scan().unwrap().count(), 40, "{step}");
        assert_eq!(before.scan().unwrap().rev().count(), 40, "{step}");
        assert_eq!(after.scan().unwrap().count(), 20, "{step}");
        let keys: Vec<Vec<u8>> = (0..40).map(k).collect();
        assert!(before.multi_get(&keys).into_iter().all(|r| r.unwrap().is_some()), "{step}");
    }
}

#[test]
fn writes_after_the_tombstone_are_visible_at_every_layer() {
    let storage = MemStorage::new();
    let db = Db::open("/db", opts(&storage)).unwrap();
    fill(&db, 30);
    db.flush().unwrap();
    db.delete_range(k(0)..k(30)).unwrap();
    db.put(k(7), b"again").unwrap(); // same memtable as the tombstone
    db.flush().unwrap();
    db.put(k(8), b"later").unwrap(); // memtable above an L0 tombstone
    let check = |db: &Db| {
        assert_eq!(db.get(k(7)).unwrap().as_deref(), Some(&b"again"[..]));
        assert_eq!(db.get(k(8)).unwrap().as_deref(), Some(&b"later"[..]));
        assert_eq!(db.get(k(9)).unwrap(), None);
        let all: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(all, vec![(k(7), b"again".to_vec()), (k(8), b"later".to_vec())]);
        let rev: Vec<Vec<u8>> = db.scan().unwrap().rev().map(|r| r.unwrap().0).collect();
        assert_eq!(rev, vec![k(8), k(7)]);
        assert!(db.contains_key(k(7)).unwrap() && !db.contains_key(k(6)).unwrap());
    };
    check(&db);
    db.compact().unwrap();
    check(&db);
}

#[test]
fn bad_bounds_are_rejected_naming_both_and_an_empty_range_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("m", "1").unwrap();
    let err = db.delete_range("x".."c").unwrap_err();
    assert!(matches!(err, siftdb::Error::InvalidArgument(_)), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("\"x\"") && msg.contains("\"c\""), "{msg}");
    let batches = db.stats().write_batches;
    db.delete_range("m".."m").unwrap();
    assert_eq!(db.stats().write_batches, batches, "an empty range writes nothing");
    assert_eq!(db.get("m").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn a_filter_never_lets_a_lookup_skip_a_tombstone_in_a_shallower_level() {
    // The key's value sits in L2; the tombstone covering it sits in an L1 file whose filter was
    // built from other keys only, so it answers "absent" for the key.
    let storage = MemStorage::new();
    let path = Path::new("/db");
    let small = |base| Options {
        compaction: CompactionOptions {
            auto: true,
            l0_compaction_trigger: 1,
            max_bytes_for_level_base: base,
            target_file_size: 1 << 10,
            ..CompactionOptions::default()
        },
        ..opts(&storage)
    };
    {
        // "a" plus 8 KiB of larger keys: L0 -> L1, then L1 (1 KiB target) overflows and its
        // files move down.
        let db = Db::open(path, small(1 << 10)).unwrap();
        db.put("a", "value-of-a").unwrap();
        for i in 0..64 {
            db.put(format!("b{i:03}"), vec![b'x'; 128]).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
    // From now on L1 may hold 1 MiB: what reaches it stays there.
    let db = Db::open(path, small(1 << 20)).unwrap();
    let s = db.stats();
    assert_eq!((s.levels[0].files, s.levels[1].files), (0, 0), "{:?}", s.levels);
    let before = db.stats();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"value-of-a"[..]));
    let d = db.stats().since(&before);
    assert!(d.levels[2..].iter().any(|l| l.reads.data_blocks_read > 0), "premise: below L1");
    // Tombstone over "a" and filler keys on both sides of it (so the file's point-key range
    // holds "a" and its filter is probed), flushed and compacted into L1.
    let mut b = WriteBatch::new();
    b.delete_range("a".."a\0").put("0", "filler").put("a0", "filler");
    db.write(b).unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s0 = db.stats();
    assert_eq!((s0.levels[0].files, s0.levels[1].files), (0, 1), "{:?}", s0.levels);
    assert_eq!(db.get("a").unwrap(), None, "the L1 tombstone must delete the L2 value");
    let d = db.stats().since(&s0);
    assert!(
        d.levels[1].reads.filter_useful >= 1,
        "premise: the L1 filter said absent for the key ({:?})",
        d.levels[1].reads
    );
    assert!(!db.contains_key("a").unwrap());
    assert_eq!(db.multi_get(["a"])[0].as_ref().unwrap(), &None);
    let first: Vec<Vec<u8>> = db.scan().unwrap().take(2).map(|r| r.unwrap().0).collect();
    assert_eq!(first, vec![b"0".to_vec(), b"a0".to_vec()]);
}

#[test]
fn bottommost_compaction_removes_a_fully_deleted_range() {
    let storage = MemStorage::new();
    let db = Db::open("/db", opts(&storage)).unwrap();
    fill(&db, 500);
    db.compact().unwrap();
    let entries = |db: &Db| db.stats().levels.iter().map(|l| l.entries).sum::<u64>();
    assert_eq!(entries(&db), 500);
    db.delete_range(k(0)..k(500)).unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(entries(&db), 0, "{:?}", db.stats().levels);
    assert_eq!(db.scan().unwrap().count(), 0);
    assert_eq!(db.get(k(3)).unwrap(), None);
}

#[test]
fn a_snapshot_keeps_covered_versions_through_bottommost_compaction() {
    let storage = MemStorage::new();
    let db = Db::open("/db", opts(&storage)).unwrap();
    fill(&db, 20);
    let snap = db.snapshot();
    db.delete_range(k(0)..k(20)).unwrap();
    db.compact().unwrap();
    assert_eq!(db.scan().unwrap().count(), 0);
    assert_eq!(snap.scan().unwrap().count(), 20);
    assert_eq!(snap.get(k(4)).unwrap(), Some(v(4)));
    drop(snap);
    db.compact().unwrap();
    let entries: u64 = db.stats().levels.iter().map(|l| l.entries).sum();
    assert_eq!(entries, 0, "released snapshot: the versions and the tombstone go");
}

#[test]
fn compaction_outputs_cut_inside_a_range_tombstone_stay_disjoint_and_correct() {
    let storage = MemStorage::new();
    let small = Options {
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 1 << 10,
            ..CompactionOptions::default()
        },
        ..opts(&storage)
    };
    let db = Db::open("/db", small).unwrap();
    for i in 0..400 {
        db.put(k(i), vec![b'x'; 64]).unwrap();
    }
    db.compact().unwrap();
    // A snapshot keeps the covered versions, so the outputs hold both and are cut inside the
    // tombstone's range.
    let snap = db.snapshot();
    db.delete_range(k(50)..k(350)).unwrap();
    db.compact().unwrap();
    let s = db.stats();
    assert!(s.levels[1].files > 3, "{:?}", s.levels);
    for i in 0..400 {
        assert_eq!(db.get(k(i)).unwrap().is_some(), !(50..350).contains(&i), "key {i}");
        assert!(snap.get(k(i)).unwrap().is_some(), "snapshot key {i}");
    }
    assert_eq!(db.scan().unwrap().count(), 100);
    assert_eq!(db.scan().unwrap().rev().count(), 100);
    let mut c = db.cursor().unwrap();
    c.seek(&k(100)).unwrap();
    assert_eq!(c.key(), k(350));
    c.seek_for_prev(&k(300)).unwrap();
    assert_eq!(c.key(), k(49));
}

#[test]
fn a_crash_keeps_a_delete_range_batch_all_or_nothing() {
    for synced in [false, true] {
        let storage = MemStorage::new();
        {
            let db = Db::open("/db", opts(&storage)).unwrap();
            fill(&db, 20);
            db.sync_wal().unwrap();
            let mut b = WriteBatch::new();
            b.delete_range(k(0)..k(10)).put("marker", "1").delete_range(k(15)..k(18));
            db.write_opt(b, WriteOptions { sync: synced }).unwrap();
            storage.crash_drop_unsynced();
        }
        let db = Db::open("/db", opts(&storage)).unwrap();
        let applied = db.get("marker").unwrap().is_some();
        assert_eq!(applied, synced, "a synced batch survives, an unsynced one is dropped");
        for i in 0..20 {
            let deleted = applied && ((0..10).contains(&i) || (15..18).contains(&i));
            assert_eq!(db.get(k(i)).unwrap().is_none(), deleted, "synced {synced}, key {i}");
        }
    }
}
