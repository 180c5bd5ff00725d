//! Compaction keeps exactly the versions live snapshots can see, `compact_range` compacts only
//! the range's files, and the L0 write throttle engages and is counted.

use siftdb::storage::MemStorage;
use siftdb::{CompactionOptions, Db, Options, WriteBatch};
use std::path::Path;
use std::sync::Arc;

fn opts(auto: bool) -> Options {
    Options {
        memtable_size: 32 << 10,
        compaction: CompactionOptions {
            auto,
            target_file_size: 16 << 10,
            max_bytes_for_level_base: 64 << 10,
            ..CompactionOptions::default()
        },
        storage: Some(Arc::new(MemStorage::new())),
        ..Options::default()
    }
}

fn k(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn total_entries(db: &Db) -> u64 {
    db.stats().levels.iter().map(|l| l.entries).sum()
}

#[test]
fn compaction_keeps_what_snapshots_see_and_drops_it_after_release() {
    let db = Db::open(Path::new("/db"), opts(false)).unwrap();
    for i in 0..2000 {
        db.put(k(i), b"v1").unwrap();
    }
    let snap = db.snapshot();
    for i in 0..2000 {
        if i % 2 == 0 {
            db.delete(k(i)).unwrap();
        } else {
            db.put(k(i), b"v2").unwrap();
        }
    }
    db.compact().unwrap();
    // The snapshot still sees every first version; the current state sees the second.
    for i in (0..2000).step_by(37) {
        assert_eq!(snap.get(k(i)).unwrap().as_deref(), Some(&b"v1"[..]), "key {i}");
        let now = db.get(k(i)).unwrap();
        assert_eq!(now.as_deref(), if i % 2 == 0 { None } else { Some(&b"v2"[..]) });
    }
    assert_eq!(snap.scan().unwrap().count(), 2000);
    assert_eq!(total_entries(&db), 4000, "both versions of every key are pinned");
    drop(snap);
    db.compact().unwrap();
    assert_eq!(total_entries(&db), 1000, "only the live odd keys remain, no tombstones");
    assert_eq!(db.scan().unwrap().count(), 1000);
}

#[test]
fn compact_range_touches_only_the_range() {
    let db = Db::open(Path::new("/db"), opts(false)).unwrap();
    for round in 0..3 {
        let mut b = WriteBatch::new();
        for i in 0..3000 {
            b.put(k(i), format!("r{round}"));
        }
        db.write(b).unwrap();
        db.flush().unwrap();
    }
    assert_eq!(db.stats().levels[0].files, 3);
    // L0 always moves whole (older L0 files must not stay above newer data), so the range
    // compaction empties L0; the rewrite of the bottom level is limited to the range.
    db.compact_range(k(0)..k(100)).unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].files, 0);
    assert_eq!(db.get(k(50)).unwrap().as_deref(), Some(&b"r2"[..]));
    assert_eq!(db.get(k(2999)).unwrap().as_deref(), Some(&b"r2"[..]));
    assert_eq!(db.scan().unwrap().count(), 3000);
    assert!(s.compactions >= 1);
}

#[test]
fn l0_throttle_delays_writes_and_counts_the_stall() {
    let mut o = opts(true);
    o.compaction.l0_compaction_trigger = 2;
    o.compaction.l0_slowdown_writes_trigger = 2;
    o.compaction.l0_stop_writes_trigger = 3;
    let db = Db::open(Path::new("/db"), o).unwrap();
    for i in 0..100u32 {
        let mut b = WriteBatch::new();
        for j in 0..100 {
            b.put(k(i * 100 + j), [7u8; 32]);
        }
        db.write(b).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.l0_slowdowns + s.l0_stops > 0, "{s:?}");
    assert!(s.l0_stall_micros > 0 && s.write_stall_micros >= s.l0_stall_micros);
    assert!(s.compactions > 0);
    assert_eq!(db.scan().unwrap().count(), 10_000);
}
