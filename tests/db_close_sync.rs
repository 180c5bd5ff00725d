//! `Db::close`, `Db::sync_wal` and a synced empty batch, over the in-memory storage that drops
//! unsynced bytes at a simulated power loss and fails chosen operations.

use siftdb::storage::{MemStorage, Storage};
use siftdb::{Db, Error, Options, WriteBatch, WriteOptions};
use std::path::{Path, PathBuf};

mod common;
use common::mem_options;

const DIR: &str = "/db";

/// The newest WAL of the database.
fn current_wal(mem: &MemStorage) -> PathBuf {
    let name = mem
        .list(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .max()
        .expect("a WAL");
    Path::new(DIR).join(name)
}

/// `(synced, current)` length of the newest WAL.
fn wal_lengths(mem: &MemStorage) -> (u64, u64) {
    mem.file_lengths(&current_wal(mem)).unwrap()
}

/// Writes `k` -> `v` buffered, applies `make_durable` to the open database, simulates a power
/// loss while it is still open, and reports whether a reopen finds the write.
fn survives_power_loss(make_durable: impl FnOnce(&Db)) -> bool {
    let mem = MemStorage::new();
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    db.put(b"k", b"v").unwrap();
    let (synced, len) = wal_lengths(&mem);
    assert!(synced < len, "a buffered write is not synced yet ({synced} of {len})");
    make_durable(&db);
    mem.crash_drop_unsynced();
    drop(db); // its handles died with the crash: the destructor's sync cannot help
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    db.get(b"k").unwrap().is_some()
}

#[test]
fn a_buffered_write_is_lost_at_power_loss_without_a_sync() {
    // The control of the tests below: without a sync the crash does drop the write.
    assert!(!survives_power_loss(|_| {}));
}

#[test]
fn sync_wal_makes_earlier_buffered_writes_durable_without_writing() {
    assert!(survives_power_loss(|db| {
        let syncs_before = db.stats().wal_syncs;
        db.sync_wal().unwrap();
        assert_eq!(db.stats().wal_syncs, syncs_before + 1);
    }));
}

#[test]
fn sync_wal_appends_nothing_to_the_log() {
    let mem = MemStorage::new();
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    db.put(b"k", b"v").unwrap();
    let (_, len) = wal_lengths(&mem);
    db.sync_wal().unwrap();
    assert_eq!(wal_lengths(&mem), (len, len));
}

#[test]
fn an_empty_batch_written_with_sync_fsyncs_the_wal() {
    assert!(survives_power_loss(|db| {
        db.write_opt(WriteBatch::new(), WriteOptions { sync: true }).unwrap();
    }));
}

#[test]
fn an_empty_batch_without_sync_does_not_fsync() {
    let mem = MemStorage::new();
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    db.put(b"k", b"v").unwrap();
    let before = wal_lengths(&mem);
    db.write_opt(WriteBatch::new(), WriteOptions { sync: false }).unwrap();
    assert_eq!(wal_lengths(&mem), before);
}

#[test]
fn a_failed_sync_wal_is_reported_and_turns_the_database_read_only() {
    let mem = MemStorage::new();
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    db.put(b"k", b"v").unwrap();
    mem.fail_after(0, false);
    let err = db.sync_wal().unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    mem.clear_faults();
    assert!(matches!(db.put(b"k2", b"v"), Err(Error::ReadOnly(_))));
    // An empty synced batch reports the read-only state too instead of claiming durability.
    assert!(matches!(
        db.write_opt(WriteBatch::new(), WriteOptions { sync: true }),
        Err(Error::ReadOnly(_))
    ));
}

#[test]
fn close_syncs_the_wal_and_returns_ok() {
    let mem = MemStorage::new();
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let (synced, len) = wal_lengths(&mem);
    assert_eq!(synced, len);
    mem.crash_drop_unsynced();
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn close_returns_the_error_of_the_final_wal_sync() {
    let mem = MemStorage::new();
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    db.put(b"k", b"v").unwrap();
    // Every operation from now on fails, the final WAL sync included.
    mem.fail_after(0, true);
    let err = db.close().unwrap_err();
    assert!(err.to_string().contains("injected fault"), "{err}");
    mem.clear_faults();
    // The lock was released: the database reopens, and the write is still with the "OS".
    let db = Db::open(DIR, mem_options(&mem)).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn close_releases_the_directory_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
}
