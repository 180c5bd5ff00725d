//! `Db::checkpoint`: a consistent, openable, independent copy, also while another thread
//! writes batches of every record kind across two keyspaces.

mod model_support;

use model_support::{apply, random_specs, records, Handles, State};
use siftdb::filter::rng::SplitMix64;
use siftdb::storage::MemStorage;
use siftdb::{CompactionOptions, Db, Error, Options, U64AddOperator, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

mod common;
use common::key;

fn small() -> Options {
    Options {
        memtable_size: 64 << 10,
        compaction: CompactionOptions {
            target_file_size: 64 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.scan().unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn a_checkpoint_holds_the_state_at_the_call_and_is_independent() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), small()).unwrap();
    for i in 0..20_000 {
        db.put(key(i), format!("v{i}")).unwrap();
    }
    db.compact().unwrap();
    for i in (0..20_000).step_by(3) {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    for i in 20_000..20_500 {
        db.put(key(i), "unflushed").unwrap(); // only in the memtable and WAL
    }
    let expect = contents(&db);
    db.checkpoint(dir.path().join("cp")).unwrap();
    for i in 0..1000 {
        db.put(key(i), "after").unwrap();
    }
    db.compact().unwrap(); // deletes files the checkpoint links to: it must not care

    let cp = Db::open(dir.path().join("cp"), small()).unwrap();
    assert!(contents(&cp) == expect, "the checkpoint differs from the state at the call");
    cp.put(key(5), "in the copy").unwrap();
    cp.compact().unwrap();
    drop(cp);
    assert_eq!(db.get(key(5)).unwrap(), Some(b"after".to_vec()));
    let cp = Db::open(dir.path().join("cp"), small()).unwrap();
    assert_eq!(cp.get(key(5)).unwrap(), Some(b"in the copy".to_vec()));
    assert_eq!(cp.get(key(20_100)).unwrap(), Some(b"unflushed".to_vec()));
}

#[test]
fn a_checkpoint_refuses_an_existing_directory_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    let target = dir.path().join("taken");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("precious.txt"), "keep me").unwrap();
    let err = db.checkpoint(&target).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("already exists"));
    let names: Vec<_> =
        std::fs::read_dir(&target).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("precious.txt")]);
    assert_eq!(std::fs::read_to_string(target.join("precious.txt")).unwrap(), "keep me");
}

#[test]
fn a_checkpoint_taken_during_writes_is_a_prefix_of_the_history() {
    // One writer puts key(0), key(1), ... in order; a checkpoint taken meanwhile must hold
    // exactly key(0..m) for some m between the acknowledged counts before and after the call.
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path().join("db"), small()).unwrap());
    let acked = Arc::new(AtomicU64::new(0));
    let writer = {
        let (db, acked) = (db.clone(), acked.clone());
        std::thread::spawn(move || {
            for i in 0..40_000 {
                db.put(key(i), format!("v{i}")).unwrap();
                acked.store(i + 1, Ordering::Release);
            }
        })
    };
    while acked.load(Ordering::Acquire) < 5_000 {
        std::thread::yield_now();
    }
    let before = acked.load(Ordering::Acquire);
    db.checkpoint(dir.path().join("cp")).unwrap();
    let after = acked.load(Ordering::Acquire);
    writer.join().unwrap();

    let cp = Db::open(dir.path().join("cp"), small()).unwrap();
    let got = contents(&cp);
    let m = got.len() as u64;
    assert!(before <= m && m <= after, "checkpoint holds {m} keys; acknowledged {before}..{after}");
    let expect: BTreeMap<Vec<u8>, Vec<u8>> =
        (0..m).map(|i| (key(i), format!("v{i}").into_bytes())).collect();
    assert!(got == expect, "the checkpoint is not a prefix of the write history");
}

#[test]
fn a_checkpoint_survives_a_power_loss_right_after_it_returns() {
    let storage = MemStorage::new();
    let opts = || Options { storage: Some(Arc::new(storage.clone())), ..small() };
    let db = Db::open("/m/db", opts()).unwrap();
    for i in 0..3000 {
        db.put(key(i), "v").unwrap();
    }
    db.flush().unwrap();
    let mut b = WriteBatch::new();
    b.put("batch", "synced");
    db.write_opt(b, WriteOptions { sync: true }).unwrap();
    db.checkpoint("/m/cp").unwrap();
    storage.crash_drop_unsynced();
    drop(db);
    let cp = Db::open("/m/cp", opts()).unwrap();
    assert_eq!(cp.scan().unwrap().count(), 3001);
    assert_eq!(cp.get("batch").unwrap(), Some(b"synced".to_vec()));
}

#[test]
fn a_checkpoint_taken_during_merges_range_deletes_and_puts_in_two_keyspaces_is_a_state_of_the_history(
) {
    // One writer applies batches mixing puts, deletes, range deletes and merges across the
    // default keyspace and "ks2" (small memtables, so flushes and compactions run meanwhile) and
    // logs each acknowledged one, until the checkpoints are taken. Each checkpoint must equal
    // the model after some write between the acknowledged counts before and after the call.
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        memtable_size: 16 << 10,
        merge_operator: Some(Arc::new(U64AddOperator)),
        compaction: CompactionOptions { target_file_size: 8 << 10, ..CompactionOptions::default() },
        ..Options::default()
    };
    let h = Arc::new(Handles::open(&dir.path().join("db"), opts()));
    let (acked, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let writer = {
        let (h, acked, stop) = (h.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut rng, mut state, mut log) = (SplitMix64::new(0xC4EC), State::default(), vec![]);
            // A bound, in case the checkpoints starve: the test then fails below.
            for n in 1..=200_000 {
                let recs = records(&state, &random_specs(&mut rng, 200), n);
                h.db.write(h.batch(&recs)).unwrap();
                apply(&mut state, &recs);
                log.push(recs);
                acked.store(n, Ordering::Release);
                if stop.load(Ordering::Acquire) {
                    break;
                }
            }
            log
        })
    };
    let mut taken = Vec::new();
    for c in 0..3 {
        // The last checkpoint also waits for flushes and compactions to have run under the
        // writer, however slow the machine; the writer's bound ends the wait if they never do.
        let start = acked.load(Ordering::Acquire);
        let busy_enough = |c: usize| {
            let s = h.db.stats();
            c < 2 || (s.flushes >= 10 && s.compactions >= 2)
        };
        while (acked.load(Ordering::Acquire) < start + 1500 || !busy_enough(c))
            && acked.load(Ordering::Acquire) < 200_000
        {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        let cp = dir.path().join(format!("cp{c}"));
        h.db.checkpoint(&cp).unwrap();
        taken.push((cp, before, acked.load(Ordering::Acquire)));
    }
    stop.store(true, Ordering::Release);
    let log = writer.join().unwrap();
    let written = log.len();
    assert!(taken.iter().all(|&(_, _, after)| after < written), "{taken:?}: writes went on");
    let stats = h.db.stats();
    // Flushes and compactions ran while the writer wrote (checkpoints flush too).
    assert!(stats.flushes >= 10 && stats.compactions >= 2, "{stats:?}");
    for (cp, before, after) in taken {
        let got = Handles::open(&cp, opts()).scan();
        let mut state = State::default();
        let mut found = None;
        for j in 0..=after {
            if j > 0 {
                apply(&mut state, &log[j - 1]);
            }
            if j >= before && state == got {
                found = Some(j);
            }
        }
        assert!(
            found.is_some(),
            "{} equals the model after no write in {before}..={after}",
            cp.display()
        );
    }
}
