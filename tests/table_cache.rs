//! The table cache under a real descriptor limit: a database of thousands of SSTs is read (every
//! key by `get`, then a full scan) and compacted after this process lowers its own
//! `RLIMIT_NOFILE` to 256, with `max_open_files = 64`, then read with the default
//! `max_open_files` (as many as the limit allows), which the cache caps at half the limit. The same database with an
//! unlimited table cache cannot even be opened under that limit, which shows the limit is real.
//!
//! This is its own test binary, with one test, because the limit applies to the whole process.

use siftdb::{CompactionOptions, Db, Error, Options};
use std::collections::BTreeMap;

/// The soft descriptor limit the test runs under.
const FD_LIMIT: libc::rlim_t = 256;
/// The table cache size under test, well below the limit and the table count.
const MAX_OPEN_FILES: i32 = 64;
/// Keys written; with ~2 KiB files of about 60 entries this makes about 2,200 tables.
const KEYS: u64 = 120_000;

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn value(i: u64, round: u32) -> Vec<u8> {
    format!("{round}-{i:024}").into_bytes()
}

fn options(max_open_files: i32) -> Options {
    Options {
        memtable_size: 512 << 10,
        block_size: 1024,
        block_cache_bytes: 1 << 20,
        max_open_files,
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 2 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

/// Lowers this process's soft `RLIMIT_NOFILE` to `FD_LIMIT` (the hard limit stays).
fn lower_descriptor_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = FD_LIMIT.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

/// Descriptors this process has open (Linux: entries of /proc/self/fd).
fn open_descriptors() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count())
}

fn check_every_key(db: &Db, model: &BTreeMap<[u8; 8], Vec<u8>>) {
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap().as_ref(), model.get(&key(i)), "key {i}");
    }
    let mut scanned = 0usize;
    for (kv, (mk, mv)) in db.scan().unwrap().zip(model) {
        let (k, v) = kv.unwrap();
        assert_eq!((k.as_slice(), &v), (mk.as_slice(), mv));
        scanned += 1;
    }
    assert_eq!(scanned, model.len());
    assert_eq!(db.scan().unwrap().count(), model.len());
}

fn table_count(db: &Db) -> usize {
    db.stats().levels.iter().map(|l| l.files).sum()
}

#[test]
fn thousands_of_tables_are_read_and_compacted_under_a_256_descriptor_limit() {
    lower_descriptor_limit();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut model = BTreeMap::new();

    // Build: keys in order, compacted every 10,000 keys into L1 files of ~2 KiB.
    let db = Db::open(&path, options(MAX_OPEN_FILES)).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
        if i % 10_000 == 9_999 {
            db.compact().unwrap();
        }
    }
    let tables = table_count(&db);
    assert!(tables >= 2_000, "{tables} tables");
    assert!(tables as libc::rlim_t > FD_LIMIT * 4);
    drop(db);

    // An unlimited table cache would open every table: the descriptors run out.
    match Db::open(&path, options(-1)) {
        Err(Error::Io { .. }) => {}
        Err(e) => panic!("expected an I/O error (too many open files), got {e}"),
        Ok(_) => panic!("{tables} tables opened under a {FD_LIMIT}-descriptor limit"),
    }

    // Bounded: open, every key, a full scan.
    let db = Db::open(&path, options(MAX_OPEN_FILES)).unwrap();
    check_every_key(&db, &model);
    let s = db.stats();
    assert!(s.table_cache_open_tables <= MAX_OPEN_FILES as usize, "{s:?}");
    assert!(s.table_cache_misses >= tables as u64, "each table is reopened at least once");
    if let Some(n) = open_descriptors() {
        assert!(n <= MAX_OPEN_FILES as usize + 32, "{n} descriptors open");
    }

    // Overwrite every 7th key and delete every 11th: L0 files over the whole key range, so the
    // compaction merges them with every L1 file (read one at a time) into new tables, and the
    // old ones are deleted.
    for i in (0..KEYS).step_by(7) {
        db.put(key(i), value(i, 1)).unwrap();
        model.insert(key(i), value(i, 1));
    }
    for i in (0..KEYS).step_by(11) {
        db.delete(key(i)).unwrap();
        model.remove(&key(i));
    }
    db.flush().unwrap();
    check_every_key(&db, &model); // L0 and L1 together
    let before = db.stats().compactions;
    db.compact().unwrap();
    assert!(db.stats().compactions > before);
    assert_eq!(db.stats().levels[0].files, 0);
    assert!(table_count(&db) >= 1_800, "{} tables after compaction", table_count(&db));
    check_every_key(&db, &model);
    assert!(db.stats().table_cache_open_tables <= MAX_OPEN_FILES as usize);
    drop(db);

    // The compacted database reopens and reads the same under the limit.
    let db = Db::open(&path, options(MAX_OPEN_FILES)).unwrap();
    check_every_key(&db, &model);
    drop(db);

    // The default max_open_files is capped at half this process's soft limit, so the
    // database also works under 256 without setting it.
    let default = Options::default().max_open_files;
    assert!(default as libc::rlim_t > FD_LIMIT);
    let db = Db::open(&path, options(default)).unwrap();
    check_every_key(&db, &model);
    let open = db.stats().table_cache_open_tables;
    assert!(open <= FD_LIMIT as usize / 2 && open >= MAX_OPEN_FILES as usize, "{open}");
}
