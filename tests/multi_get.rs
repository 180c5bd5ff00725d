//! `Db::multi_get` and `Db::contains_key` against one `get` per key: over a tree with overlapping
//! L0 files and deeper levels, with overwrites, deletes and snapshots; filter work per key equal
//! to single lookups; and a corrupt block failing only the keys that need it.

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Error, Options, WriteBatch};
use std::path::Path;

mod common;
use common::{small_tree, user_key as key};

fn options() -> Options {
    let mut o = small_tree(256 << 10);
    o.compaction.l0_compaction_trigger = 8;
    o
}

/// 30,000 keys (even numbers) in several levels, then overwrites and deletes left in L0 files
/// and the memtable.
fn build(dir: &Path) -> Db {
    let db = Db::open(dir, options()).unwrap();
    for chunk in (0..30_000u64).collect::<Vec<_>>().chunks(1000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(key(2 * i), format!("v0-{i}"));
        }
        db.write(b).unwrap();
    }
    db.compact().unwrap();
    let mut rng = SplitMix64::new(5);
    for round in 1..=3u64 {
        for _ in 0..3000 {
            let i = 2 * rng.below(30_000);
            if rng.below(3) == 0 {
                db.delete(key(i)).unwrap();
            } else {
                db.put(key(i), format!("v{round}-{i}")).unwrap();
            }
        }
        if round < 3 {
            db.flush().unwrap();
        }
    }
    db
}

#[test]
fn multi_get_and_contains_key_answer_as_get_does_now_and_at_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = build(dir.path());
    let stats = db.stats();
    assert!(stats.levels[0].files >= 2, "the test needs overlapping L0 files");
    assert!(stats.levels.iter().skip(1).filter(|l| l.files > 0).count() >= 1);

    let mut rng = SplitMix64::new(9);
    // Present, deleted and missing (odd) keys, duplicates, in random order.
    let keys: Vec<Vec<u8>> = (0..5000).map(|_| key(rng.below(60_000))).collect();
    let snap = db.snapshot();
    let expect: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get(k).unwrap()).collect();
    assert!(expect.iter().any(Option::is_some) && expect.iter().any(Option::is_none));
    let got: Vec<_> = db.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
    assert!(got == expect, "multi_get differs from get");
    for (k, e) in keys.iter().zip(&expect) {
        assert_eq!(db.contains_key(k).unwrap(), e.is_some(), "contains_key {k:?}");
    }

    // Change everything the snapshot saw; it must still answer as before.
    for k in &keys {
        db.put(k, "changed").unwrap();
    }
    db.flush().unwrap();
    let got: Vec<_> = snap.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
    assert!(got == expect, "snapshot multi_get differs from the gets made with it");
    for (k, e) in keys.iter().zip(&expect) {
        assert_eq!(snap.contains_key(k).unwrap(), e.is_some());
    }
    assert!(db.multi_get(&keys).into_iter().all(|r| r.unwrap().as_deref() == Some(b"changed")));
    assert!(db.multi_get(Vec::<&[u8]>::new()).is_empty());
}

#[test]
fn multi_get_probes_filters_and_reads_blocks_as_single_gets_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = build(dir.path());
    let mut rng = SplitMix64::new(13);
    let keys: Vec<Vec<u8>> = (0..4000).map(|_| key(rng.below(60_000))).collect();
    let reads = |db: &Db| db.stats().levels.iter().map(|l| l.reads).collect::<Vec<_>>();

    let before = reads(&db);
    for k in &keys {
        db.get(k).unwrap();
    }
    let mid = reads(&db);
    let _ = db.multi_get(&keys);
    let after = reads(&db);
    for level in 0..before.len() {
        let single = mid[level].minus(&before[level]);
        let batched = after[level].minus(&mid[level]);
        // Same filter verdicts per level (same keys, same files); block reads equal too, cache
        // hits aside (the cache is warmer the second time).
        assert_eq!(batched.filter_checks, single.filter_checks, "level {level}");
        assert_eq!(batched.filter_useful, single.filter_useful, "level {level}");
        assert_eq!(batched.filter_true_positive, single.filter_true_positive, "level {level}");
        assert_eq!(batched.data_blocks_read, single.data_blocks_read, "level {level}");
    }
}

#[test]
fn a_corrupt_block_fails_only_the_keys_that_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options { block_cache_bytes: 0, mmap_reads: false, ..options() };
    {
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..5000u64 {
            db.put(key(i), format!("value-{i}")).unwrap();
        }
        db.compact().unwrap();
    }
    // Flip a byte early in the one SST: inside its first data block.
    let sst = common::any_table(dir.path());
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[100] ^= 0x5A;
    std::fs::write(&sst, bytes).unwrap();

    let db = Db::open(dir.path(), opts()).unwrap();
    let keys: Vec<Vec<u8>> = (0..5000).step_by(7).map(key).collect();
    let single: Vec<_> = keys.iter().map(|k| db.get(k)).collect();
    let batched = db.multi_get(&keys);
    let mut failed = 0;
    for ((k, s), b) in keys.iter().zip(&single).zip(&batched) {
        match (s, b) {
            (Ok(s), Ok(b)) => assert_eq!(s, b, "key {k:?}"),
            (Err(Error::Corruption { .. }), Err(Error::Corruption { .. })) => failed += 1,
            _ => panic!("key {k:?}: get gave {s:?}, multi_get {b:?}"),
        }
    }
    assert!(failed > 0, "the flipped byte must break some keys");
    assert!(failed < keys.len() / 2, "only the keys of one block fail: {failed}");
}

#[test]
fn a_batch_split_among_threads_answers_as_one_thread_does() {
    use siftdb::ReadOptions;
    let dir = tempfile::tempdir().unwrap();
    let db = build(dir.path());
    let mut rng = SplitMix64::new(13);
    let keys: Vec<Vec<u8>> = (0..5000).map(|_| key(rng.below(60_000))).collect();
    let snap = db.snapshot();
    for k in keys.iter().step_by(7) {
        db.put(k, "after the snapshot").unwrap();
    }
    let threads = |n| ReadOptions { multi_get_threads: n, ..ReadOptions::default() };
    // Sizes around the 64-keys-a-thread floor (one part, two parts, a ragged last part).
    for n in [0, 1, 63, 64, 127, 128, 1001, 5000] {
        let batch = &keys[..n];
        let now: Vec<_> = db.multi_get(batch).into_iter().map(|r| r.unwrap()).collect();
        let then: Vec<_> = snap.multi_get(batch).into_iter().map(|r| r.unwrap()).collect();
        for t in [2, 3, 8, 64] {
            let got: Vec<_> =
                db.multi_get_opt(batch, &threads(t)).into_iter().map(|r| r.unwrap()).collect();
            assert!(got == now, "{n} keys on {t} threads differ from one thread");
            let got: Vec<_> =
                snap.multi_get_opt(batch, &threads(t)).into_iter().map(|r| r.unwrap()).collect();
            assert!(got == then, "{n} keys on {t} threads at the snapshot differ");
        }
    }
    // Out of range: every key fails with the reason, nothing is read.
    for t in [0, 64 + 1] {
        let got = db.multi_get_opt(&keys[..3], &threads(t));
        assert_eq!(got.len(), 3);
        for r in got {
            match r {
                Err(Error::InvalidArgument(m)) => assert!(m.contains("multi_get_threads"), "{m}"),
                other => panic!("{t} threads: {other:?}"),
            }
        }
    }
}
