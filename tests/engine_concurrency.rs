//! Concurrency: one writer and three readers share a `Db` while small memtables rotate and flush.
//!
//! The writer keeps an invariant: batch `v` sets keys `k0..k9` all to version `v`, as one
//! `WriteBatch`. Readers then check what atomic batches and consistent snapshots promise:
//! * inside one snapshot all ten keys show the same version (a batch is never half visible, and
//!   a snapshot does not mix memtable and SST states from different moments);
//! * versions never go backwards across a reader's successive snapshots and plain `get`s: once a
//!   reader has seen version `v` anywhere, every later read returns at least `v`.
//!
//! A second test runs four writers (group commit) against concurrent flushes and checks nothing
//! is lost. Work is bounded by operation counts, not by time, and nothing asserts on timing.

use siftdb::{Db, Options, Snapshot, WriteBatch};
use std::sync::{Arc, Barrier};

const KEYS: usize = 10;
const BATCHES: u64 = 1_000;
const READERS: usize = 3;
/// Most rounds per reader; a reader stops earlier once it has seen the last batch, so the reads
/// overlap the writes without a long tail of reads over a quiescent database.
const READER_ROUNDS: usize = 20_000;

/// `Db` and `Snapshot` are shared across threads: a compile-time check.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Db>();
    assert_send_sync::<Snapshot>();
};

fn key(i: usize) -> String {
    format!("k{i}")
}

/// A version padded to 100 bytes, so a 32 KiB memtable fills every ~25 batches.
fn value(v: u64) -> Vec<u8> {
    format!("{v:0100}").into_bytes()
}

fn version(bytes: &[u8]) -> u64 {
    std::str::from_utf8(bytes).unwrap().parse().unwrap()
}

/// Version of all ten keys in `snap` (0 before the first batch); panics if they differ.
fn snapshot_version(snap: &Snapshot, reader: usize) -> u64 {
    let versions: Vec<u64> =
        (0..KEYS).map(|i| snap.get(key(i)).unwrap().map_or(0, |v| version(&v))).collect();
    assert!(
        versions.iter().all(|&v| v == versions[0]),
        "reader {reader}: snapshot {} shows a torn batch: {versions:?}",
        snap.sequence()
    );
    versions[0]
}

fn reader(db: &Db, id: usize, start: &Barrier) -> u64 {
    start.wait();
    let mut seen = 0u64; // highest version this reader has observed by any read
    for round in 0..READER_ROUNDS {
        let snap = db.snapshot();
        let v = snapshot_version(&snap, id);
        assert!(v >= seen, "reader {id}: snapshot went back from {seen} to {v}");
        seen = v;
        if round % 8 == 0 {
            // A scan through the snapshot sees the same single version for all ten keys.
            let scanned: Vec<u64> =
                snap.prefix("k").unwrap().map(|r| version(&r.unwrap().1)).collect();
            assert!(scanned.is_empty() && v == 0 || scanned == vec![v; KEYS], "{scanned:?}");
        }
        drop(snap);
        for i in 0..KEYS {
            let g = db.get(key(i)).unwrap().map_or(0, |b| version(&b));
            assert!(g >= seen, "reader {id}: get({}) returned {g} after {seen} was seen", key(i));
            seen = g;
        }
        if seen == BATCHES {
            break;
        }
    }
    seen
}

#[test]
fn readers_see_whole_batches_and_monotonic_versions_while_a_writer_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let opts =
        Options { memtable_size: 32 << 10, block_cache_bytes: 8 << 20, ..Options::default() };
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    // Everyone starts together so the reads overlap the writes (not asserted: no timing).
    let start = Barrier::new(READERS + 1);
    let results = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            start.wait();
            for v in 1..=BATCHES {
                let mut b = WriteBatch::new();
                for i in 0..KEYS {
                    b.put(key(i), value(v));
                }
                db.write(b).unwrap();
                if v % 200 == 0 {
                    db.flush().unwrap(); // explicit flushes on top of the automatic ones
                }
            }
        });
        let readers: Vec<_> = (0..READERS)
            .map(|id| {
                s.spawn({
                    let (db, start) = (&db, &start);
                    move || reader(db, id, start)
                })
            })
            .collect();
        writer.join().unwrap();
        readers.into_iter().map(|r| r.join().unwrap()).collect::<Vec<_>>()
    });
    // After the writer is done every key holds the last version, from memtable or SST.
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(BATCHES)));
    }
    let snap = db.snapshot();
    assert_eq!(snapshot_version(&snap, 0), BATCHES);
    let stats = db.stats();
    assert!(stats.flushes >= 20, "the run must flush repeatedly: {} flushes", stats.flushes);
    for (id, last) in results.iter().enumerate() {
        assert!(*last <= BATCHES, "reader {id} saw a version never written");
    }
}

#[test]
fn concurrent_writers_and_flushes_lose_nothing() {
    // Four writers (group commit gathers their batches), one of them syncing every tenth
    // batch, while a fifth thread keeps forcing flushes; afterwards, and after a reopen, every
    // record of every batch is there.
    const WRITERS: u64 = 4;
    const PER_WRITER: u64 = 600;
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { memtable_size: 32 << 10, ..Options::default() };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let start = Barrier::new(WRITERS as usize + 1);
    std::thread::scope(|s| {
        for t in 0..WRITERS {
            let (db, start) = (&db, &start);
            s.spawn(move || {
                start.wait();
                for i in 0..PER_WRITER {
                    let mut b = WriteBatch::new();
                    b.put(format!("w{t}/{i:05}/a"), value(i))
                        .put(format!("w{t}/{i:05}/b"), value(i));
                    let sync = t == 0 && i % 10 == 0;
                    db.write_opt(b, siftdb::WriteOptions { sync }).unwrap();
                }
            });
        }
        let (db, start) = (&db, &start);
        s.spawn(move || {
            start.wait();
            for _ in 0..20 {
                db.flush().unwrap();
            }
        });
    });
    let check = |db: &Db| {
        for t in 0..WRITERS {
            let got: Vec<_> = db.prefix(format!("w{t}/")).unwrap().map(|r| r.unwrap()).collect();
            assert_eq!(got.len() as u64, 2 * PER_WRITER, "writer {t}");
            for (j, (k, v)) in got.iter().enumerate() {
                let i = j as u64 / 2;
                let side = if j % 2 == 0 { "a" } else { "b" };
                assert_eq!(k, format!("w{t}/{i:05}/{side}").as_bytes());
                assert_eq!(v, &value(i));
            }
        }
    };
    check(&db);
    let stats = db.stats();
    assert_eq!(stats.write_batches, WRITERS * PER_WRITER, "{stats:?}");
    assert!(stats.write_groups <= stats.write_batches);
    drop(db);
    check(&Db::open(dir.path(), opts).unwrap());
}

#[test]
fn readers_finish_on_their_tables_while_compactions_delete_them() {
    // Two readers get and scan 4,000 keys while the main thread overwrites them in rounds and
    // compacts after each round: every compaction rewrites the ~4 KiB files the readers are in
    // and deletes the old ones, and a table cache of 16 keeps evicting what the readers use.
    // A reader must always see every key with a value of some round (never an error from a
    // deleted file, a missing key, or another key's value).
    const N: u64 = 4_000;
    const ROUNDS: u64 = 6;
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        memtable_size: 64 << 10,
        block_size: 1024,
        max_open_files: 16,
        compaction: siftdb::CompactionOptions {
            target_file_size: 4 << 10,
            max_bytes_for_level_base: 64 << 10,
            ..siftdb::CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let k = |i: u64| format!("key{i:06}");
    let v = |i: u64, round: u64| format!("{round}:{}", k(i)).into_bytes();
    let check = |i: u64, got: &[u8], reader: usize| {
        let s = std::str::from_utf8(got).unwrap();
        let (round, of) = s.split_once(':').unwrap();
        assert_eq!(of, k(i), "reader {reader}: value of another key");
        assert!(round.parse::<u64>().unwrap() <= ROUNDS, "reader {reader}: {s}");
    };
    for i in 0..N {
        db.put(k(i), v(i, 0)).unwrap();
    }
    db.compact().unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let start = Barrier::new(3);
    let reads = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|id| {
                let (db, done, start) = (&db, &done, &start);
                s.spawn(move || {
                    start.wait();
                    let mut rng = siftdb::filter::rng::SplitMix64::new(id as u64 + 1);
                    let mut reads = 0u64;
                    while !done.load(std::sync::atomic::Ordering::Acquire) || reads == 0 {
                        for _ in 0..200 {
                            let i = rng.below(N);
                            let got = db.get(k(i)).unwrap().expect("every key is always present");
                            check(i, &got, id);
                        }
                        let mut n = 0;
                        for kv in db.scan().unwrap() {
                            let (key, got) = kv.unwrap();
                            assert_eq!(key, k(n).as_bytes(), "reader {id}: scan skipped a key");
                            check(n, &got, id);
                            n += 1;
                        }
                        assert_eq!(n, N, "reader {id}: scan length");
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        start.wait();
        for round in 1..=ROUNDS {
            for i in (round % 3..N).step_by(3) {
                db.put(k(i), v(i, round)).unwrap();
            }
            db.compact().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        readers.into_iter().map(|r| r.join().unwrap()).collect::<Vec<_>>()
    });
    assert!(reads.iter().all(|&r| r > 0));
    let stats = db.stats();
    assert!(stats.compactions >= ROUNDS, "{stats:?}");
    assert!(stats.table_cache_misses > 0 && stats.table_cache_open_tables <= 16, "{stats:?}");
    // Deleted inputs are gone from disk once no reader holds their version: at the latest when
    // the database closes, only the tables of the last version remain.
    let files: usize = stats.levels.iter().map(|l| l.files).sum();
    assert!(files > 16, "more tables than the cache holds: {files}");
    drop(db);
    let on_disk = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".sst"))
        .count();
    assert_eq!(on_disk, files);
    let db = Db::open(dir.path(), Options { max_open_files: 16, ..Options::default() }).unwrap();
    for i in 0..N {
        check(i, &db.get(k(i)).unwrap().unwrap(), 0);
    }
}
