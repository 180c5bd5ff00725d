//! Helpers shared by the engine's integration tests (tests/*.rs), each binary bringing them in
//! with `mod common;`. Only helpers whose behaviour is the same in every test using them live
//! here; a test whose key format or options its assertions were sized for keeps its own.

// Every test binary compiles this whole module but uses only a part of it.
#![allow(dead_code)]

pub mod tree_snapshot;

use siftdb::storage::MemStorage;
use siftdb::{CompactionOptions, Db, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `key` and `i` in seven zero-padded digits (`key0000042`): byte order is numeric order.
pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

/// `key` and `i` in six zero-padded digits (`key000042`).
pub fn key6(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// What the ingestion and export tests open with: 64 KiB memtables, no automatic compaction
/// (each test places its files itself), and the u64 counter operator for their merges.
pub fn ingest_options() -> Options {
    Options {
        memtable_size: 64 << 10,
        compaction: CompactionOptions { auto: false, ..CompactionOptions::default() },
        merge_operator: Some(Arc::new(siftdb::U64AddOperator)),
        ..Options::default()
    }
}

/// Writes `edit` as the only record of a new manifest `MANIFEST-<number>` in the closed
/// database `dir` (CRC-valid: the engine's log writer) and points CURRENT at it, for tests
/// that forge a manifest to see what open makes of it. Returns the manifest's name.
pub fn write_manifest(
    dir: &Path,
    edit: &siftdb::inspect::manifest::VersionEdit,
    number: u64,
) -> String {
    use siftdb::storage::Storage;
    let name = format!("MANIFEST-{number:06}");
    let file = siftdb::storage::FsStorage::new().create(&dir.join(&name)).unwrap();
    let mut w = siftdb::testing::WalWriter::new(file);
    w.add_record(&edit.encode()).unwrap();
    w.sync().unwrap();
    drop(w);
    std::fs::write(dir.join(siftdb::inspect::filename::CURRENT), format!("{name}\n")).unwrap();
    name
}

/// `user` and `i` in eight zero-padded digits (`user00000042`).
pub fn user_key(i: u64) -> Vec<u8> {
    format!("user{i:08}").into_bytes()
}

/// 16-byte key: eight zero bytes, then `i` big-endian, so byte order is numeric order.
pub fn key16(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// Default options over the in-memory storage `storage` (a clone shares its files).
pub fn mem_options(storage: &MemStorage) -> Options {
    Options { storage: Some(Arc::new(storage.clone())), ..Options::default() }
}

/// A tree that grows levels after little data: memtables and table files of `size` bytes and a
/// first level of four tables, so a few MiB of writes reach several levels.
pub fn small_tree(size: usize) -> Options {
    Options {
        memtable_size: size,
        compaction: CompactionOptions {
            target_file_size: size as u64,
            max_bytes_for_level_base: 4 * size as u64,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

/// The value of the statistics ticker `name`.
pub fn ticker(db: &Db, name: &str) -> u64 {
    db.stats().tickers().into_iter().find(|(n, _)| *n == name).unwrap().1
}

/// Every file directly in `dir` by name with its bytes.
pub fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// A table file (`*.sst`) of the database directory `dir`: the first `read_dir` lists.
pub fn any_table(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("the directory holds a table")
}
