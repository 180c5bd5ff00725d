//! `Db::multi_get` with `Options::direct_reads` on a real file system (a directory under
//! /var/tmp: /tmp may be tmpfs): the block reads of a batch go to the device together
//! (io_uring), and the answers must be those of one `get` per key whatever the block cache
//! keeps (none, a few blocks, plenty) and however large the batch is against the I/O depth; a
//! block that fails verification fails only the keys that need it.

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Error, Options, WriteBatch};
use std::path::Path;

mod common;
use common::{small_tree, user_key as key};

fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp").unwrap()
}

fn options(cache: usize) -> Options {
    let mut o = Options { block_cache_bytes: cache, direct_reads: true, ..small_tree(256 << 10) };
    o.compaction.l0_compaction_trigger = 8;
    o
}

/// 40,000 keys (even numbers) over several levels, then overwrites and deletes left in two L0
/// files and the memtable.
fn build(dir: &Path) {
    let db = Db::open(dir, options(1 << 20)).unwrap();
    let mut rng = SplitMix64::new(3);
    for chunk in (0..40_000u64).collect::<Vec<_>>().chunks(1000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(key(2 * i), format!("v0-{i}-{}", rng.next_u64()));
        }
        db.write(b).unwrap();
    }
    db.compact().unwrap();
    for round in 1..=3u64 {
        for _ in 0..2000 {
            let i = 2 * rng.below(40_000);
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
}

#[test]
fn direct_multi_get_answers_as_get_with_no_tiny_or_ample_block_cache_and_any_batch_size() {
    let dir = disk_dir();
    build(dir.path());
    let mut rng = SplitMix64::new(9);
    // Present, deleted and missing (odd) keys, duplicates, in random order.
    let keys: Vec<Vec<u8>> = (0..3000).map(|_| key(rng.below(80_000))).collect();
    for cache in [0, 8 << 10, 8 << 20] {
        let db = Db::open(dir.path(), options(cache)).unwrap();
        let stats = db.stats();
        assert!(stats.levels[0].files >= 2, "the test needs overlapping L0 files");
        assert!(stats.levels.iter().skip(1).filter(|l| l.files > 0).count() >= 2);
        let expect: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get(k).unwrap()).collect();
        assert!(expect.iter().any(Option::is_some) && expect.iter().any(Option::is_none));
        // Batches of 1, of fewer keys than reads in flight, of more, and all keys at once.
        for batch in [1, 7, 33, 500, keys.len()] {
            let mut got = Vec::new();
            for chunk in keys.chunks(batch) {
                got.extend(db.multi_get(chunk).into_iter().map(|r| r.unwrap()));
            }
            assert!(got == expect, "cache {cache}, batch {batch}: multi_get differs from get");
        }
        let snap = db.snapshot();
        for k in keys.iter().step_by(5) {
            db.put(k, "changed").unwrap();
        }
        db.flush().unwrap();
        let got: Vec<_> = snap.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
        assert!(got == expect, "cache {cache}: snapshot multi_get differs from get");
        drop(snap);
        // Undo, so the next cache size sees the same data.
        for (k, e) in keys.iter().zip(&expect).step_by(5) {
            match e {
                Some(v) => db.put(k, v).unwrap(),
                None => db.delete(k).unwrap(),
            }
        }
        db.flush().unwrap();
    }
}

#[test]
fn direct_multi_get_counts_what_single_gets_count_and_reads_a_shared_block_once() {
    let dir = disk_dir();
    build(dir.path());
    let db = Db::open(dir.path(), options(0)).unwrap();
    // The counts compare two passes over one version: no compaction may land in between.
    db.wait_for_compactions().unwrap();
    let mut rng = SplitMix64::new(13);
    // Runs of neighbouring keys, so that several keys of a batch share a block.
    let keys: Vec<Vec<u8>> =
        (0..400).flat_map(|_| (rng.below(80_000)..).take(6).map(key).collect::<Vec<_>>()).collect();
    let reads = |db: &Db| db.stats().levels.iter().map(|l| l.reads).collect::<Vec<_>>();
    let before = reads(&db);
    for k in &keys {
        db.get(k).unwrap();
    }
    let mid = reads(&db);
    let _ = db.multi_get(&keys);
    let after = reads(&db);
    let (mut single_reads, mut batched_reads) = (0, 0);
    for level in 0..before.len() {
        let single = mid[level].minus(&before[level]);
        let batched = after[level].minus(&mid[level]);
        assert_eq!(batched.filter_checks, single.filter_checks, "level {level}");
        assert_eq!(batched.filter_useful, single.filter_useful, "level {level}");
        assert_eq!(batched.filter_true_positive, single.filter_true_positive, "level {level}");
        assert_eq!(batched.index_blocks_read, single.index_blocks_read, "level {level}");
        assert_eq!(batched.data_blocks_read, single.data_blocks_read, "level {level}");
        // No cache: every single lookup reads its block; the batch reads a block once.
        assert_eq!(single.file_reads, single.data_blocks_read, "level {level}");
        assert!(batched.file_reads <= single.file_reads, "level {level}");
        single_reads += single.file_reads;
        batched_reads += batched.file_reads;
    }
    assert!(batched_reads < single_reads, "{batched_reads} vs {single_reads}");
    assert!(batched_reads > 0);
}

#[test]
fn a_corrupt_block_under_direct_reads_fails_only_the_keys_that_need_it() {
    let dir = disk_dir();
    {
        let db = Db::open(dir.path(), options(0)).unwrap();
        for i in 0..5000u64 {
            db.put(key(i), format!("value-{i}")).unwrap();
        }
        db.compact().unwrap();
    }
    // Flip a byte early in the first SST: inside its first data block.
    let mut ssts: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    ssts.sort();
    let mut bytes = std::fs::read(&ssts[0]).unwrap();
    bytes[100] ^= 0x5A;
    std::fs::write(&ssts[0], bytes).unwrap();

    let db = Db::open(dir.path(), options(0)).unwrap();
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
    assert!(failed < keys.len() / 4, "only the keys of one block fail: {failed}");
}
