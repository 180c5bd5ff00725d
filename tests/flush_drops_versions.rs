//! A flush writes only the versions some reader can still see: the newest of each key, and for
//! each live snapshot the newest at or below it (issue: 200,000 overwrites of one key left
//! 200,000 entries in L0). Tombstones are kept (older levels may hold what they delete).

use siftdb::{Db, Options};

fn entries_in_l0(db: &Db) -> u64 {
    db.stats().levels[0].entries
}

#[test]
fn overwrites_of_one_key_flush_to_one_entry() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..50_000u32 {
        db.put("counter", i.to_le_bytes()).unwrap();
    }
    db.put("other", "x").unwrap();
    db.flush().unwrap();
    assert_eq!(entries_in_l0(&db), 2, "one version per key");
    assert_eq!(db.get("counter").unwrap(), Some(49_999u32.to_le_bytes().to_vec()));
    let scanned: Vec<_> = db.scan().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(scanned.len(), 2);
}

#[test]
fn a_live_snapshot_keeps_the_version_it_sees_through_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..1000u32 {
        db.put("k", i.to_le_bytes()).unwrap();
    }
    let snap = db.snapshot();
    for i in 1000..2000u32 {
        db.put("k", i.to_le_bytes()).unwrap();
    }
    db.delete("gone").unwrap();
    db.flush().unwrap();
    // "k": the newest and the snapshot's; "gone": its tombstone.
    assert_eq!(entries_in_l0(&db), 3);
    assert_eq!(snap.get("k").unwrap(), Some(999u32.to_le_bytes().to_vec()));
    assert_eq!(db.get("k").unwrap(), Some(1999u32.to_le_bytes().to_vec()));
    drop(snap);
    db.put("k", "last").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"last".to_vec()));
}

#[test]
fn a_tombstone_in_a_flush_still_hides_an_older_flushed_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("k", "old").unwrap();
    db.flush().unwrap();
    db.put("k", "newer").unwrap();
    db.delete("k").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get("k").unwrap(), None);
    assert_eq!(db.scan().unwrap().count(), 0);
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get("k").unwrap(), None);
}
