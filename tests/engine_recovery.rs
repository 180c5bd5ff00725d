//! Recovery: what survives a close, a simulated power loss, a torn WAL tail, and what damaged
//! bytes (in the WAL or in an SST) turn into: a corruption error, never a panic and never a wrong
//! or silently missing value. Also the directory lock and the key/value size limits.

use siftdb::filter::rng::SplitMix64;
use siftdb::storage::mem::{DataFate, DirFate};
use siftdb::storage::MemStorage;
use siftdb::{Db, Error, Options, WriteBatch, WriteOptions};
use siftdb::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use std::path::{Path, PathBuf};

mod common;
use common::key6 as key;

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes()
}

fn mem_options(storage: &MemStorage, memtable_size: usize) -> Options {
    Options { memtable_size, ..common::mem_options(storage) }
}

/// The files of `dir` ending in `ext`, sorted by name (= by file number).
fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn flip_byte(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset as usize] ^= 0x5A;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn unflushed_writes_survive_drop_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..1000 {
            db.put(key(i), value(i)).unwrap();
        }
        for i in (0..1000).step_by(3) {
            db.delete(key(i)).unwrap();
        }
        let mut b = WriteBatch::new();
        b.put("batch-a", "1").put("batch-b", "2").delete(key(1));
        db.write(b).unwrap();
        assert_eq!(db.stats().flushes, 0, "everything must still be in the memtable and WAL");
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..1000 {
        let expect = (i % 3 != 0 && i != 1).then(|| value(i));
        assert_eq!(db.get(key(i)).unwrap(), expect, "key {i}");
    }
    assert_eq!(db.get("batch-a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("batch-b").unwrap().as_deref(), Some(&b"2"[..]));
}

/// Writes `n` batches (batch `i` puts `key(i)`, and every fifth batch also `key(i)+"/b"`) with
/// every `sync_every`-th synced, then crashes the storage with `crash` while the database is
/// still open. Returns the index of the last synced batch.
///
/// Why crash while the database is open: a power loss does not run destructors, and `Db::drop`
/// syncs the WAL, so dropping first would make every buffered write durable and the test could
/// not fail. `MemStorage::crash*` rewrites the file system to what survives power loss and kills
/// every handle opened before it, so the `Db` dropped afterwards (to stop its flush thread) can
/// no longer write or sync anything: from the storage's point of view the process died at the
/// crash. `std::mem::forget` would also skip the destructor, but it would leave the flush thread
/// running, leak the engine and not model anything more faithfully.
fn write_then_crash(storage: &MemStorage, n: u64, sync_every: u64, crash: impl FnOnce()) -> u64 {
    let db = Db::open("/db", mem_options(storage, 32 << 10)).unwrap();
    let mut last_synced = None;
    for i in 0..n {
        let mut b = WriteBatch::new();
        b.put(key(i), value(i));
        if i % 5 == 0 {
            let mut k = key(i);
            k.extend_from_slice(b"/b");
            b.put(k, value(i));
        }
        let sync = i % sync_every == sync_every - 1;
        db.write_opt(b, WriteOptions { sync }).unwrap();
        if sync {
            last_synced = Some(i);
        }
    }
    crash();
    drop(db);
    last_synced.expect("at least one synced write")
}

/// The recovered state must equal the state after some prefix `0..p` of the batches, with `p`
/// covering every synced batch; returns `p`.
fn check_prefix(db: &Db, n: u64, last_synced: u64) -> u64 {
    let present: Vec<bool> = (0..n).map(|i| db.get(key(i)).unwrap().is_some()).collect();
    let p = present.iter().take_while(|&&x| x).count() as u64;
    assert!(present[p as usize..].iter().all(|&x| !x), "recovered batches are not a prefix");
    assert!(p > last_synced, "synced batch {last_synced} lost (recovered prefix {p})");
    for i in 0..n {
        let mut k = key(i);
        k.extend_from_slice(b"/b");
        let expect = (i < p && i % 5 == 0).then(|| value(i));
        assert_eq!(db.get(&k).unwrap(), expect, "second record of batch {i} (atomicity)");
        if i < p {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
        }
    }
    p
}

#[test]
fn synced_writes_survive_a_crash_that_drops_unsynced_data() {
    let storage = MemStorage::new();
    let n = 3000; // about 5 memtables of 32 KiB: WAL rotations and flushes during the run
    let last_synced = write_then_crash(&storage, n, 97, || storage.crash_drop_unsynced());
    let db = Db::open("/db", mem_options(&storage, 32 << 10)).unwrap();
    let p = check_prefix(&db, n, last_synced);
    // Everything after the last sync was buffered and not yet flushed: the crash lost it, which
    // shows the simulation really dropped data (the assertions above could not fail otherwise).
    assert!(p < n, "the crash lost nothing");
    // The recovered database accepts writes and survives another clean reopen.
    db.put("after", "crash").unwrap();
    drop(db);
    let db = Db::open("/db", mem_options(&storage, 32 << 10)).unwrap();
    assert_eq!(check_prefix(&db, n, last_synced), p);
    assert_eq!(db.get("after").unwrap().as_deref(), Some(&b"crash"[..]));
}

#[test]
fn a_crash_keeping_random_unsynced_bytes_recovers_a_prefix_of_the_writes() {
    // Each file keeps its synced bytes plus a random prefix of the rest: WAL tails are torn at
    // arbitrary offsets (and, for odd seeds, unsynced directory entries are lost), and the
    // recovered state must still be a prefix of the batch history covering every synced batch.
    for seed in 1..=8u64 {
        let storage = MemStorage::new();
        let n = 1200;
        let sync_every = 50 + SplitMix64::new(seed).below(200);
        // Odd seeds also revert directory entries not made durable by `sync_dir`.
        let dirs = if seed % 2 == 1 { DirFate::RevertUnsynced } else { DirFate::KeepAll };
        let last = write_then_crash(&storage, n, sync_every, || {
            storage.crash(DataFate::KeepRandomPrefix(seed), dirs)
        });
        let db = Db::open("/db", mem_options(&storage, 32 << 10)).unwrap();
        check_prefix(&db, n, last);
    }
}

#[test]
fn a_torn_last_wal_record_is_dropped_and_earlier_writes_remain() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..100 {
            db.put(key(i), value(i)).unwrap();
        }
    }
    let wal = files_with_ext(dir.path(), "log").pop().expect("a WAL");
    let len = std::fs::metadata(&wal).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(len - 3).unwrap(); // the last record (put of key 99) loses its last 3 bytes
    drop(f);
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..99 {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
        }
        assert_eq!(db.get(key(99)).unwrap(), None, "the torn record must be dropped");
        // Writing after recovery must not turn the dropped tail into mid-log corruption.
        db.put("after", "tear").unwrap();
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(key(98)).unwrap(), Some(value(98)));
    assert_eq!(db.get("after").unwrap().as_deref(), Some(&b"tear"[..]));
}

#[test]
fn a_corrupted_wal_record_before_the_tail_fails_open_with_corruption() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..100 {
            db.put(key(i), value(i)).unwrap();
        }
    }
    let wal = files_with_ext(dir.path(), "log").pop().expect("a WAL");
    // Offset 12 is inside the payload of the first record (7-byte fragment header, then the
    // batch header): its checksum no longer matches, and 99 good records follow it.
    flip_byte(&wal, 12);
    match Db::open(dir.path(), Options::default()) {
        Err(e) => assert!(e.is_corruption(), "expected a corruption error, got {e}"),
        Ok(_) => panic!("open must not skip a damaged record that has records after it"),
    }
}

#[test]
fn a_corrupted_sst_block_gives_corruption_errors_never_wrong_values() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3000;
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..n {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
    }
    let sst = files_with_ext(dir.path(), "sst").pop().expect("an SST");
    let len = std::fs::metadata(&sst).unwrap().len();
    // The data blocks are most of the file, so its middle is inside one of them.
    flip_byte(&sst, len / 2);
    let db = match Db::open(dir.path(), Options::default()) {
        Ok(db) => db,
        // A hit in the index, filter, properties or footer is caught at open: also correct.
        Err(e) if e.is_corruption() => return,
        Err(e) => panic!("expected a corruption error, got {e}"),
    };
    let mut errors = 0;
    for i in 0..n {
        match db.get(key(i)) {
            Ok(v) => assert_eq!(v, Some(value(i)), "key {i}: a wrong answer instead of an error"),
            Err(e) => {
                assert!(e.is_corruption(), "key {i}: {e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 0, "no lookup read the damaged block");
    // A scan returns correct entries in order until it reaches the damaged block, then an error.
    let mut next = 0;
    let mut scan_error = None;
    for item in db.scan().unwrap() {
        match item {
            Ok((k, v)) => {
                assert_eq!((k, v), (key(next), value(next)), "scan entry {next}");
                next += 1;
            }
            Err(e) => {
                scan_error = Some(e);
                break;
            }
        }
    }
    let e = scan_error.expect("the scan must report the damaged block");
    assert!(e.is_corruption(), "{e}");
}

#[test]
fn a_second_open_of_an_open_directory_is_refused_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    match Db::open(dir.path(), Options::default()) {
        Err(Error::Locked(_)) => {}
        Err(e) => panic!("expected Error::Locked, got {e}"),
        Ok(_) => panic!("two handles on one directory"),
    }
    drop(db);
    // Closing releases the lock.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// A process that forks while a database is open (another thread spawning a command does) gives
/// the child a duplicate of the LOCK file's descriptor until the child execs or exits. Closing
/// the database must release the lock all the same, so that a reopen at once succeeds.
#[test]
fn closing_releases_the_lock_even_while_a_forked_child_holds_a_copy_of_its_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    // SAFETY: the child calls only async-signal-safe functions (`usleep`, `_exit`): it holds
    // its copies of the parent's descriptors for two seconds, as a child between `fork` and
    // `exec` does, then leaves without running any destructor.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork failed");
    if child == 0 {
        unsafe {
            libc::usleep(2_000_000);
            libc::_exit(0);
        }
    }
    db.close().unwrap();
    let reopened = Db::open(dir.path(), Options::default());
    let mut status = 0;
    // SAFETY: `child` is this process's child; `status` is a valid out pointer.
    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    let db = reopened.expect("the closed database reopens while the child lives");
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn oversized_keys_and_values_are_invalid_arguments() {
    let storage = MemStorage::new();
    let db = Db::open("/db", mem_options(&storage, 1 << 20)).unwrap();
    let big_key = vec![b'k'; MAX_KEY_SIZE + 1];
    assert!(matches!(db.put(&big_key, "v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.delete(&big_key), Err(Error::InvalidArgument(_))));
    let big_value = vec![0u8; MAX_VALUE_SIZE + 1];
    assert!(matches!(db.put("k", &big_value), Err(Error::InvalidArgument(_))));
    drop(big_value);
    // One bad record fails the whole batch: its good records are not applied.
    let mut b = WriteBatch::new();
    b.put("good", "1").put(&big_key, "2");
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get("good").unwrap(), None);
    // The limits are inclusive.
    let max_key = vec![b'm'; MAX_KEY_SIZE];
    db.put(&max_key, "ok").unwrap();
    assert_eq!(db.get(&max_key).unwrap().as_deref(), Some(&b"ok"[..]));
}
