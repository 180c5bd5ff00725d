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
