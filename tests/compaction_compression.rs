//! `Options::compression_per_level` end to end: flushes write L0 with entry 0, compactions
//! write each output level with its entry (the last entry for deeper levels), read from the
//! tables themselves (the `compression` property, the format version, and the bytes the data
//! blocks take); the contents match a model, also after reopening with other settings.

use siftdb::filter::rng::SplitMix64;
use siftdb::inspect::sst::Table;
use siftdb::inspect::{filename, manifest};
use siftdb::storage::{MemStorage, Storage};
use siftdb::{CompactionOptions, Compression, Db, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn opts(storage: &MemStorage, per_level: Vec<Compression>) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        memtable_size: 256 << 10,
        compression_per_level: per_level,
        compaction: CompactionOptions {
            max_bytes_for_level_base: 512 << 10,
            max_bytes_for_level_multiplier: 4.0,
            target_file_size: 256 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

/// A 100-byte value of 4 distinct bytes in runs: any codec shrinks it several times.
fn value(n: u64) -> Vec<u8> {
    (0..100u64).map(|i| b"abcd"[((n + i / 10) % 4) as usize]).collect()
}

/// Per level (index = level), for each file: (compression tag, format version, data bytes on
/// disk, raw value bytes), read from the tables the manifest names.
fn tables_by_level(storage: &MemStorage, dir: &Path) -> Vec<Vec<(u8, u32, u64, u64)>> {
    let state = manifest::recover(storage, dir).unwrap().expect("a database");
    state
        .levels
        .iter()
        .map(|files| {
            files
                .values()
                .map(|meta| {
                    let path = dir.join(filename::sst_name(meta.number));
                    let t = Table::open(storage.open(&path).unwrap(), meta.number, None, &path)
                        .unwrap();
                    let p = t.properties();
                    (p.compression, p.format_version, p.data_size, p.raw_value_bytes)
                })
                .collect()
        })
        .collect()
}

fn check_model(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut it = db.scan().unwrap();
    for (k, v) in model {
        let (gk, gv) = it.next().expect("scan ended early").unwrap();
        assert_eq!((&gk, &gv), (k, v));
    }
    assert!(it.next().is_none(), "scan has keys the model lacks");
}

#[test]
fn flush_and_compaction_write_each_level_with_its_configured_compression() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    // L0 none, L1 LZ4, L2 and deeper zstd.
    let per_level = vec![Compression::None, Compression::Lz4, Compression::Zstd(3)];
    let db = Db::open(dir, opts(&storage, per_level.clone())).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = SplitMix64::new(7);
    for n in 0..120_000u64 {
        let k = rng.next_u64().to_be_bytes().to_vec();
        db.put(&k, value(n)).unwrap();
        model.insert(k, value(n));
    }
    db.wait_for_compactions().unwrap();
    drop(db);
    // One more flush with background compaction off, so level 0 surely keeps a file.
    let mut o = opts(&storage, per_level.clone());
    o.compaction.auto = false;
    let db = Db::open(dir, o).unwrap();
    for n in 0..1_000u64 {
        let k = format!("late{n:06}").into_bytes();
        db.put(&k, value(n)).unwrap();
        model.insert(k, value(n));
    }
    db.flush().unwrap();
    check_model(&db, &model);

    // L1 is never emptied by compaction (an L1 -> L2 compaction moves one file while L1 is
    // above its target, which two 256 KiB files exceed), and 120k entries overflow it into L2.
    let levels = tables_by_level(&storage, dir);
    assert!(levels.len() >= 3 && levels[..3].iter().all(|l| !l.is_empty()), "{levels:?}");
    for (level, files) in levels.iter().enumerate() {
        let want = match level {
            0 => (0, 1), // (tag, format version): none
            1 => (2, 2), // LZ4 tables are format version 2
            _ => (1, 1), // zstd
        };
        for &(tag, version, data_size, raw_values) in files {
            assert_eq!((tag, version), want, "level {level}");
            // Uncompressed blocks hold every value byte.
            if tag == 0 {
                assert!(data_size >= raw_values, "L{level}: {data_size} < {raw_values}");
            }
        }
        // Compressed levels hold far fewer, summed over the level: a subcompaction range (cut at
        // input file boundaries) may hold a few entries, and one tiny block's framing
        // outweighs what its codec saves.
        if want.0 != 0 && !files.is_empty() {
            let data: u64 = files.iter().map(|f| f.2).sum();
            let raw: u64 = files.iter().map(|f| f.3).sum();
            assert!(data * 2 < raw, "L{level}: {data} vs {raw} over {} files", files.len());
        }
    }
    drop(db);

    // Another setting at reopen: the old files read as written, the new ones follow it.
    let db = Db::open(dir, opts(&storage, vec![Compression::Lz4])).unwrap();
    check_model(&db, &model);
    db.compact().unwrap();
    check_model(&db, &model);
    let levels = tables_by_level(&storage, dir);
    let tags: Vec<u8> = levels.iter().flatten().map(|f| f.0).collect();
    assert!(!tags.is_empty() && tags.iter().all(|&t| t == 2), "{tags:?}");
}

#[test]
fn per_level_list_resolves_to_its_last_entry_below_and_to_compression_when_empty() {
    let mut o = Options { compression: Compression::Zstd(5), ..Options::default() };
    assert!(o.compression_per_level.is_empty());
    assert_eq!(o.compression_for_level(0), Compression::Zstd(5));
    assert_eq!(o.compression_for_level(6), Compression::Zstd(5));
    o.compression_per_level = vec![Compression::None, Compression::Lz4];
    assert_eq!(o.compression_for_level(0), Compression::None);
    assert_eq!(o.compression_for_level(1), Compression::Lz4);
    assert_eq!(o.compression_for_level(6), Compression::Lz4);
}
