//! A crash at every storage operation of an ingestion (in-memory storage, fail-Nth fault then
//! power loss in three fates) reopens to a database holding either every ingested file or none,
//! with no orphan table; an acknowledged ingestion survives; a source that `IngestMode::Move`
//! removed is always in the database (design.md#ingestion-and-export).

use siftdb::inspect::filename;
use siftdb::inspect::manifest;
use siftdb::storage::{MemStorage, Storage};
use siftdb::{CompactionOptions, Db, IngestMode, IngestOptions, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn opts(storage: &MemStorage) -> Options {
    Options {
        memtable_size: 64 << 10,
        compaction: CompactionOptions { auto: false, ..CompactionOptions::default() },
        storage: Some(Arc::new(storage.clone())),
        ..Options::default()
    }
}

/// A database (flushed data, and a synced write in the memtable that overlaps the files, so
/// the ingestion flushes first) and three files to ingest in `/src`. Returns the storage, the
/// model before and after the ingestion, and the files.
fn build(dir: &Path) -> (MemStorage, Model, Model, Vec<PathBuf>) {
    let storage = MemStorage::new();
    storage.create_dir_all(Path::new("/src")).unwrap();
    let mut before = Model::new();
    let db = Db::open(dir, opts(&storage)).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..600 {
        let v = format!("db-{i}").into_bytes();
        b.put(key(i), &v);
        before.insert(key(i), v);
    }
    db.write(b).unwrap();
    db.flush().unwrap();
    let mut b = WriteBatch::new();
    b.put(key(150), "memtable");
    before.insert(key(150), b"memtable".to_vec());
    db.write_opt(b, WriteOptions { sync: true }).unwrap();
    let mut after = before.clone();
    let mut files = Vec::new();
    for f in 0..3u64 {
        let path = PathBuf::from(format!("/src/f{f}.sst"));
        let mut w = db.sst_writer(&path).unwrap();
        for i in (f * 300..f * 300 + 250).step_by(2) {
            let v = format!("ingested-{i}").into_bytes();
            w.put(key(i), &v).unwrap();
            after.insert(key(i), v);
        }
        w.finish().unwrap();
        files.push(path);
    }
    drop(db);
    (storage, before, after, files)
}

fn contents(db: &Db) -> Model {
    db.scan().unwrap().map(|r| r.unwrap()).collect()
}

fn ssts(storage: &MemStorage, dir: &Path) -> usize {
    let names = storage.list(dir).unwrap();
    let sst =
        |n: &String| matches!(filename::parse_file_name(n), Some((filename::FileKind::Sst, _)));
    names.iter().filter(|n| sst(n)).count()
}

#[test]
fn crash_at_every_step_of_an_ingestion_leaves_all_files_or_none() {
    let dir = Path::new("/db");
    let (storage, _, after, files) = build(dir);
    let db = Db::open(dir, opts(&storage)).unwrap();
    let start = storage.op_count();
    db.ingest(&files, IngestOptions::with_mode(IngestMode::Move)).unwrap();
    let ops = storage.op_count() - start;
    assert_eq!(contents(&db), after);
    drop(db);
    assert!(ops > 15, "the ingestion took {ops} storage operations");
    let mut seen = [0usize; 2];
    for n in 0..=ops {
        for fate in 0..3 {
            let (storage, before, after, files) = build(dir);
            let db = Db::open(dir, opts(&storage)).unwrap();
            storage.fail_after(n, true);
            let acked = db.ingest(&files, IngestOptions::with_mode(IngestMode::Move)).is_ok();
            drop(db);
            match fate {
                0 => storage.crash_drop_unsynced(),
                1 => storage.crash_keep_random_prefix(n),
                _ => storage.crash_lose_unsynced_dir_entries(),
            }
            let db = Db::open(dir, opts(&storage))
                .unwrap_or_else(|e| panic!("crash at op {n} fate {fate}: reopen failed: {e}"));
            let got = contents(&db);
            let all = got == after;
            assert!(all || got == before, "crash at op {n} fate {fate}: a partial ingestion");
            assert!(all || !acked, "crash at op {n} fate {fate}: an acknowledged ingestion lost");
            if !all {
                for f in &files {
                    assert!(storage.exists(f).unwrap(), "op {n} fate {fate}: source lost");
                }
            }
            seen[all as usize] += 1;
            let state = manifest::recover(&storage, dir).unwrap().expect("a database");
            let live: usize = state.levels.iter().map(|l| l.len()).sum();
            assert_eq!(ssts(&storage, dir), live, "crash at op {n} fate {fate}: orphan tables");
            drop(db);
        }
    }
    eprintln!("ingestion: {ops} storage operations; outcomes none/all: {seen:?}");
    assert!(seen[0] > 0 && seen[1] > 0, "both outcomes occur: {seen:?}");
}
