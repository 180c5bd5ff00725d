//! Direct I/O (`Options::direct_reads`, `direct_io_for_flush_and_compaction`): the same answers
//! as buffered reads against a `BTreeMap` model on a real file system; on tmpfs either the same
//! answers or a clear error at open; the in-memory storage accepts the options; and the
//! per-level file-read counters count exactly the data blocks read from the file.

use siftdb::filter::rng::SplitMix64;
use siftdb::storage::MemStorage;
use siftdb::{Db, Error, Options, WriteBatch};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

mod common;
use common::{key, small_tree};

/// A temporary directory on the disk that holds `target/` (`/tmp` may be tmpfs).
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// statfs(2)'s file-system magic of `dir`.
fn fs_magic(dir: &Path) -> i64 {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `statfs` only writes into the zeroed struct we pass and reads the NUL-terminated
    // path, both valid for the call.
    unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        assert_eq!(libc::statfs(c.as_ptr(), &mut s), 0, "statfs {}", dir.display());
        s.f_type as i64
    }
}

const TMPFS_MAGIC: i64 = 0x0102_1994;

fn options(direct: bool) -> Options {
    let mut o = Options {
        block_cache_bytes: 64 << 10,
        direct_reads: direct,
        direct_io_for_flush_and_compaction: direct,
        ..small_tree(128 << 10)
    };
    o.compaction.l0_compaction_trigger = 4;
    o
}

/// Seeded puts, overwrites and deletes over 20,000 keys, with flushes and compactions along
/// the way; returns the model.
fn fill(db: &Db, seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rng = SplitMix64::new(seed);
    let mut model = BTreeMap::new();
    for round in 0..12u64 {
        let mut b = WriteBatch::new();
        for _ in 0..2000 {
            let k = key(rng.below(20_000));
            if rng.below(8) == 0 {
                b.delete(&k);
                model.remove(&k);
            } else {
                let v = format!("v{round}-{}", rng.next_u64()).repeat(1 + rng.below(6) as usize);
                b.put(&k, &v);
                model.insert(k, v.into_bytes());
            }
        }
        db.write(b).unwrap();
        if round % 4 == 1 {
            db.compact().unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    // One more table on L0 above the compacted levels, so lookups cross two levels.
    for i in (0..20_000).step_by(97) {
        let v = format!("last-{i}");
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v.into_bytes());
    }
    db.flush().unwrap();
    model
}

/// Every key (present or not) by get and multi_get, and a full scan, against the model.
fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let keys: Vec<Vec<u8>> = (0..20_500).map(key).collect();
    for k in &keys {
        assert_eq!(db.get(k).unwrap().as_ref(), model.get(k), "{what}: get {k:?}");
    }
    for (k, got) in keys.iter().zip(db.multi_get(&keys)) {
        assert_eq!(got.unwrap().as_ref(), model.get(k), "{what}: multi_get {k:?}");
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|r| r.unwrap()).collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(scanned, expected, "{what}: scan");
}

/// Opens, fills and checks a direct-I/O database in `dir`, then the same after a reopen, and
/// compares with a buffered database given the same operations.
fn direct_and_buffered_agree(dir: &Path) {
    let direct = Db::open(dir.join("direct"), options(true)).unwrap();
    let model = fill(&direct, 42);
    assert!(direct.stats().levels.iter().filter(|l| l.files > 0).count() >= 2, "a deep tree");
    check(&direct, &model, "direct");
    let reads = direct.stats().total_reads();
    assert!(reads.file_reads > 0 && reads.file_read_bytes >= reads.file_reads, "{reads:?}");
    direct.close().unwrap();
    let direct = Db::open(dir.join("direct"), options(true)).unwrap();
    check(&direct, &model, "direct, reopened");
    let buffered = Db::open(dir.join("buffered"), options(false)).unwrap();
    assert_eq!(fill(&buffered, 42), model);
    check(&buffered, &model, "buffered");
    // The buffered database reads a direct-written one and vice versa (same bytes on disk).
    direct.close().unwrap();
    buffered.close().unwrap();
    check(&Db::open(dir.join("direct"), options(false)).unwrap(), &model, "direct by buffered");
    check(&Db::open(dir.join("buffered"), options(true)).unwrap(), &model, "buffered by direct");
}

#[test]
fn direct_reads_and_writes_give_the_same_answers_as_buffered_io_on_a_real_disk() {
    let tmp = disk_dir();
    if fs_magic(tmp.path()) == TMPFS_MAGIC {
        // target/ on tmpfs: the tmpfs test below covers this file system.
        let e = Db::open(tmp.path().join("db"), options(true));
        if let Err(e) = e {
            assert!(e.to_string().contains("not supported on the file system"), "{e}");
            return;
        }
    }
    direct_and_buffered_agree(tmp.path());
}

#[test]
fn direct_io_on_tmpfs_gives_the_same_answers_or_a_clear_error_at_open() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() || fs_magic(shm) != TMPFS_MAGIC {
        // No tmpfs here; the real-disk test covers direct I/O.
        return;
    }
    let tmp = tempfile::tempdir_in(shm).unwrap();
    match Db::open(tmp.path().join("probe"), options(true)) {
        // Linux 6.6 and later: tmpfs accepts O_DIRECT.
        Ok(db) => {
            drop(db);
            direct_and_buffered_agree(tmp.path());
        }
        Err(e) => {
            assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
            assert!(e.to_string().contains("not supported on the file system"), "{e}");
        }
    }
}

#[test]
fn the_in_memory_storage_accepts_the_direct_options_and_reads_as_buffered() {
    let mem = Arc::new(MemStorage::new());
    let opts = Options { storage: Some(mem), ..options(true) };
    let db = Db::open("/db", opts).unwrap();
    let model = fill(&db, 7);
    check(&db, &model, "in memory");
}

fn small_table_db(dir: &Path, cache_bytes: usize) -> Db {
    let opts = Options { block_cache_bytes: cache_bytes, ..options(true) };
    let db = Db::open(dir, opts).unwrap();
    for i in 0..5000 {
        db.put(key(i), format!("value-{i}")).unwrap();
    }
    db.flush().unwrap();
    db
}

#[test]
fn a_lookup_without_cache_counts_one_file_read_per_data_block_read() {
    let tmp = disk_dir();
    let db = small_table_db(tmp.path(), 0);
    let before = db.stats();
    let mut rng = SplitMix64::new(3);
    for _ in 0..500 {
        let i = rng.below(5000);
        assert_eq!(db.get(key(i)).unwrap(), Some(format!("value-{i}").into_bytes()));
    }
    let r = db.stats().since(&before).total_reads();
    assert_eq!(r.data_blocks_read, 500, "{r:?}");
    assert_eq!(r.file_reads, r.data_blocks_read, "{r:?}");
    assert_eq!(r.block_cache_hits + r.block_cache_misses, 0, "{r:?}");
    // Each read is one 4 KiB data block and its 5-byte trailer (a block ends after the entry
    // that crosses 4096 bytes, so a little more).
    assert!(r.file_read_bytes > 500 * 2048 && r.file_read_bytes < 500 * 8192, "{r:?}");
}

#[test]
fn a_lookup_served_by_the_block_cache_counts_no_file_read() {
    let tmp = disk_dir();
    let db = small_table_db(tmp.path(), 8 << 20);
    let first = db.stats();
    assert_eq!(db.get(key(1234)).unwrap(), Some(b"value-1234".to_vec()));
    let second = db.stats();
    assert_eq!(db.get(key(1234)).unwrap(), Some(b"value-1234".to_vec()));
    let miss = second.since(&first).total_reads();
    let hit = db.stats().since(&second).total_reads();
    assert_eq!((miss.file_reads, miss.block_cache_misses, miss.block_cache_hits), (1, 1, 0));
    assert_eq!((hit.file_reads, hit.file_read_bytes, hit.block_cache_hits), (0, 0, 1));
    let tickers: BTreeMap<_, _> = db.stats().tickers().into_iter().collect();
    assert_eq!(tickers["rocksdb.block.cache.data.hit"], 1);
    assert_eq!(tickers["rocksdb.block.cache.data.miss"], 1);
    // One table, on L0: it is the last level.
    assert_eq!(tickers["rocksdb.last.level.read.count"], 1);
    assert_eq!(tickers["rocksdb.non.last.level.read.count"], 0);
    assert_eq!(tickers["rocksdb.last.level.read.bytes"], miss.file_read_bytes);
}

#[test]
fn a_scan_counts_its_data_block_reads_apart_from_lookups_and_a_second_scan_hits_the_cache() {
    let tmp = disk_dir();
    let db = small_table_db(tmp.path(), 8 << 20);
    let first = db.stats();
    assert_eq!(db.scan().unwrap().count(), 5000);
    let second = db.stats();
    assert_eq!(db.scan().unwrap().rev().count(), 5000);
    let cold = second.since(&first);
    let warm = db.stats().since(&second);
    let (c, w) = (cold.total_scan_reads(), warm.total_scan_reads());
    // Cold: every block consulted was a cache miss read from the file, each read once.
    assert!(c.data_blocks_read > 10, "{c:?}");
    assert_eq!((c.block_cache_misses, c.file_reads), (c.data_blocks_read, c.data_blocks_read));
    assert!(c.file_read_bytes > c.file_reads * 2048, "{c:?}");
    // Warm, backwards: the same blocks (and the first block of each source again, for the
    // front cursor every iterator positions at creation), all from the cache.
    assert!(w.data_blocks_read >= c.data_blocks_read, "{w:?} {c:?}");
    assert_eq!(w.block_cache_hits, w.data_blocks_read, "{w:?}");
    assert_eq!((w.file_reads, w.file_read_bytes), (0, 0), "{w:?}");
    // Scans are not lookups: the point-lookup counters did not move.
    assert_eq!(db.stats().since(&first).total_reads(), siftdb::ReadStats::default());
    // Positionings: the forward scan's front cursor; the reverse scan's front cursor (made
    // with every iterator) and back cursor.
    assert_eq!((cold.seeks, warm.seeks), (1, 2));
    let tickers: BTreeMap<_, _> = db.stats().tickers().into_iter().collect();
    assert_eq!(tickers["rocksdb.block.cache.data.miss"], c.data_blocks_read);
    assert_eq!(tickers["rocksdb.number.db.seek"], 3);
    let table = db.stats().scan_read_table(3);
    assert!(table.starts_with("level") && table.contains("L0"), "{table}");
}

#[test]
fn aligned_lz4_blocks_read_directly_give_the_model_answers() {
    let tmp = disk_dir();
    let opts = |direct| Options {
        block_align: true,
        compression: siftdb::Compression::Lz4,
        ..options(direct)
    };
    let db = match Db::open(tmp.path().join("db"), opts(true)) {
        Ok(db) => db,
        Err(e) => {
            // tmpfs refuses O_DIRECT: the test above covers the error.
            assert!(e.to_string().contains("not supported on the file system"), "{e}");
            return;
        }
    };
    let model = fill(&db, 7);
    check(&db, &model, "aligned, direct");
    db.close().unwrap();
    check(&Db::open(tmp.path().join("db"), opts(false)).unwrap(), &model, "aligned, buffered");
}
