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

/// The (smallest, largest) sequence numbers over the live tables of the database at `path`, from
/// its manifest (what `Db::close` left).
fn table_seq_range(path: &Path) -> (u64, u64) {
    let state = siftdb::inspect::manifest::recover(&siftdb::storage::FsStorage::new(), path)
        .unwrap()
        .expect("a database");
    let files = state.levels.iter().flat_map(|l| l.values());
    files.fold((u64::MAX, 0), |(lo, hi), m| (lo.min(m.smallest_seq), hi.max(m.largest_seq)))
}

#[test]
fn the_bottom_level_writes_sequence_zero_only_for_versions_every_reader_sees() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let on_disk = || Options { storage: None, ..opts(false) };
    let db = Db::open(&path, on_disk()).unwrap();
    for i in 0..2000 {
        db.put(k(i), b"v1").unwrap();
    }
    let snap = db.snapshot();
    for i in (1..2000).step_by(2) {
        db.put(k(i), b"v2").unwrap();
    }
    db.compact().unwrap();
    // Below the snapshot every key's v1 is seen by every reader: sequence 0. The odd keys' v2
    // lies above the snapshot, which must not see it: it keeps its sequence number.
    for i in (0..2000).step_by(7) {
        assert_eq!(snap.get(k(i)).unwrap().as_deref(), Some(&b"v1"[..]), "key {i}");
        let now = if i % 2 == 0 { &b"v1"[..] } else { &b"v2"[..] };
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(now), "key {i}");
    }
    assert_eq!(total_entries(&db), 3000, "v1 of every key, v2 of the odd ones");
    // A transaction reads at a registered snapshot: a write after it keeps its sequence
    // number through a bottommost compaction, so the commit still sees the conflict.
    let tx = db.transaction().unwrap();
    assert_eq!(tx.get(k(4)).unwrap().as_deref(), Some(&b"v1"[..]));
    tx.put(k(4), b"tx").unwrap();
    db.put(k(4), b"after-read").unwrap();
    db.compact().unwrap();
    assert!(matches!(tx.commit(), Err(siftdb::Error::Conflict { .. })));
    drop(snap);
    db.close().unwrap();
    let (lo, hi) = table_seq_range(&path);
    assert_eq!(lo, 0, "the versions every reader sees are written at sequence 0");
    assert!(hi > 2000, "the versions above the snapshot keep theirs ({hi})");

    // Without snapshots a full compaction leaves one version per key, all at sequence 0; later
    // writes (sequence numbers continue from the manifest) are newer than them.
    let db = Db::open(&path, on_disk()).unwrap();
    db.compact().unwrap();
    assert_eq!(total_entries(&db), 2000);
    db.put(k(6), b"v3").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(k(6)).unwrap().as_deref(), Some(&b"v3"[..]));
    assert_eq!(db.get(k(4)).unwrap().as_deref(), Some(&b"after-read"[..]));
    assert_eq!(db.get(k(5)).unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(db.scan().unwrap().count(), 2000);
    db.close().unwrap();
    let state = siftdb::inspect::manifest::recover(&siftdb::storage::FsStorage::new(), &path)
        .unwrap()
        .unwrap();
    let bottom = state.levels.iter().rev().find(|l| !l.is_empty()).unwrap();
    assert!(bottom.values().all(|m| m.largest_seq == 0), "the compacted run is all at 0");
    assert!(state.levels[0].values().all(|m| m.smallest_seq > 2000), "the new write is not");
}

#[test]
fn l0_left_waiting_for_bytes_compacts_once_writes_stop() {
    // A base level of 4 MB under L0 files of a few KB that each span its whole key range:
    // past the trigger L0 waits for the base's bytes (up to 10 files) while writes go on; once
    // they stop for `L0_SETTLE_AFTER` (1 s) the trigger alone applies and L0 drops below it.
    // Without that the six files would stay for good.
    let db = Db::open(
        Path::new("/db"),
        Options {
            compaction: CompactionOptions {
                auto: true,
                target_file_size: 1 << 20,
                max_bytes_for_level_base: 64 << 20,
                dynamic_level_bytes: true,
                ..CompactionOptions::default()
            },
            ..opts(true)
        },
    )
    .unwrap();
    let value = [7u8; 200];
    for i in 0..20_000 {
        db.put(k(i), value).unwrap();
    }
    db.compact().unwrap();
    for round in 0..6 {
        for j in 0..100 {
            db.put(k(j * 200 + round), b"new").unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(db.stats().levels[0].files, 6, "L0 waits for bytes while writes go on");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while db.stats().levels[0].files >= 4 {
        assert!(std::time::Instant::now() < deadline, "L0 still waits after writes stopped");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(db.get(k(5)).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(k(6)).unwrap().as_deref(), Some(&value[..]));
    assert_eq!(db.scan().unwrap().count(), 20_000);
}
