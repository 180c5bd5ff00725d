//! `Options::block_cache_admission` (design.md#block-cache): once the block cache is full, a data
//! block read from its file goes in at its second miss under `SecondMiss` and at its first under
//! `All`; before the cache is full, both admit every block.

use siftdb::{CacheAdmission, Db, Options};

const KEYS: u64 = 40_000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

/// 40,000 keys of 100-byte values compacted into ~1,100 uncompressed 4 KiB blocks, with a
/// 1 MiB block cache (16 shards of about 15 blocks) and every index and filter outside it.
fn open(dir: &std::path::Path, admission: CacheAdmission) -> Db {
    let opts = Options {
        block_cache_bytes: 1 << 20,
        block_cache_admission: admission,
        mmap_reads: false,
        ..Options::default()
    };
    Db::open(dir, opts).unwrap()
}

fn build(dir: &std::path::Path) {
    let db = open(dir, CacheAdmission::All);
    for i in 0..KEYS {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.compact().unwrap();
}

fn hits(db: &Db) -> u64 {
    db.stats().block_cache_hits
}

/// Reads every 40th key of the first half once: about 500 blocks (some 36 keys share one),
/// twice what the cache holds, so it fills and evicts; the second half stays unread.
fn fill_the_cache(db: &Db) {
    for i in (0..KEYS / 2).step_by(40) {
        assert!(db.get(key(i)).unwrap().is_some());
    }
}

#[test]
fn second_miss_admits_a_block_at_its_second_miss_once_the_cache_is_full() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let db = open(dir.path(), CacheAdmission::SecondMiss);
    fill_the_cache(&db);
    // A key of the unread second half.
    let probe = |i: u64| {
        let before = hits(&db);
        assert!(db.get(key(i)).unwrap().is_some());
        hits(&db) - before
    };
    let k = KEYS * 3 / 4 + 7;
    assert_eq!(probe(k), 0, "first read of a block: a miss");
    assert_eq!(probe(k), 0, "second read: a miss again, which admits the block");
    assert_eq!(probe(k), 1, "third read: a hit");
}

#[test]
fn all_admits_every_block_and_both_admit_everything_before_the_cache_fills() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    for admission in [CacheAdmission::All, CacheAdmission::SecondMiss] {
        let db = open(dir.path(), admission);
        // A fresh cache: the first block read is cached at once either way.
        assert!(db.get(key(11)).unwrap().is_some());
        let before = hits(&db);
        assert!(db.get(key(12)).unwrap().is_some());
        assert_eq!(hits(&db) - before, 1, "{admission:?}: an empty cache admits the first miss");
        drop(db);
    }
    let db = open(dir.path(), CacheAdmission::All);
    fill_the_cache(&db);
    let k = KEYS * 3 / 4 + 7;
    assert!(db.get(key(k)).unwrap().is_some());
    let before = hits(&db);
    assert!(db.get(key(k)).unwrap().is_some());
    assert_eq!(hits(&db) - before, 1, "All: a full cache admits the first miss");
}
