//! Databases whose zstd files carry per-file dictionaries (`Options::compression_max_dict_bytes`,
//! design.md#zstd-dictionaries): many small files flushed and compacted with dictionaries read
//! back through point lookups and scans, across a reopen, and next to files without them.

use siftdb::inspect::sst::TableProperties;
use siftdb::{Compression, Db, Options};
use std::collections::BTreeMap;
use std::path::Path;

fn key(i: u64) -> Vec<u8> {
    format!("user{:010}", i * 7919 % 100_003).into_bytes()
}

/// Values of words from a small vocabulary (seeded by `i`): files share words, which is what
/// a dictionary captures.
fn value(i: u64, round: u64) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
    ];
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round;
    let n = 6 + x % 10;
    let words: Vec<&str> = (0..n)
        .map(|_| {
            x = x.rotate_left(7).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            WORDS[(x >> 60) as usize]
        })
        .collect();
    format!("{round}:{}", words.join(" ")).into_bytes()
}

/// Small memtables and files: many flushes, several compaction outputs per level.
fn options(max_dict_bytes: usize, train_bytes: usize) -> Options {
    let mut o = Options {
        memtable_size: 64 << 10,
        compression: Compression::Zstd(3),
        compression_max_dict_bytes: max_dict_bytes,
        compression_zstd_max_train_bytes: train_bytes,
        ..Options::default()
    };
    o.compaction.target_file_size = 128 << 10;
    o.compaction.max_bytes_for_level_base = 512 << 10;
    o
}

/// The level and properties of every live table of the database at `dir` (closed).
fn tables_by_level(dir: &Path) -> Vec<(usize, TableProperties)> {
    let storage = siftdb::storage::FsStorage::new();
    let state = siftdb::inspect::manifest::recover(&storage, dir).unwrap().unwrap();
    let mut out = Vec::new();
    for (level, files) in state.levels.iter().enumerate() {
        for meta in files.values() {
            let path = dir.join(siftdb::inspect::filename::sst_name(meta.number));
            let file = siftdb::storage::Storage::open(&storage, &path).unwrap();
            let t = siftdb::inspect::sst::Table::open(file, meta.number, None, &path).unwrap();
            out.push((level, t.properties().clone()));
        }
    }
    out
}

/// The properties of every live table of the database at `dir` (closed).
fn table_properties(dir: &Path) -> Vec<TableProperties> {
    tables_by_level(dir).into_iter().map(|(_, p)| p).collect()
}

/// Whether each live table of the database at `dir` (closed) has a dictionary, by level.
fn dictionaries_by_level(dir: &Path) -> Vec<(usize, bool)> {
    let with = |(level, p): (usize, TableProperties)| (level, p.compression_dict_block.size > 0);
    tables_by_level(dir).into_iter().map(with).collect()
}

fn assert_holds(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model.iter().step_by(3) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{:?}", String::from_utf8_lossy(k));
    }
    for i in 0..200 {
        let absent = format!("user{:010}x", i).into_bytes();
        assert_eq!(db.get(&absent).unwrap(), None);
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(scanned.len(), model.len());
    assert!(scanned.iter().zip(model).all(|(a, b)| a.0 == *b.0 && a.1 == *b.1), "scan differs");
}

/// Writes 20,000 keys in two rounds (the second overwriting a third of them), with flushes
/// and compactions along the way; returns the model.
fn fill(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for i in 0..20_000 {
        db.put(key(i), value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
    }
    db.flush().unwrap();
    for i in (0..20_000).step_by(3) {
        db.put(key(i), value(i, 1)).unwrap();
        model.insert(key(i), value(i, 1));
    }
    for i in (0..20_000).step_by(50) {
        db.delete(key(i)).unwrap();
        model.remove(&key(i));
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    model
}

#[test]
fn many_small_files_with_trained_dictionaries_read_back_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let model = {
        let db = Db::open(dir.path(), options(4096, 32 << 10)).unwrap();
        let model = fill(&db);
        assert_holds(&db, &model);
        db.compact().unwrap();
        assert_holds(&db, &model);
        model
    };
    let props = table_properties(dir.path());
    let with = props.iter().filter(|p| p.compression_dict_block.size > 0).count();
    assert!(props.len() >= 4, "only {} tables", props.len());
    assert_eq!(with, props.len(), "every zstd table of this size has a dictionary");
    assert!(props.iter().all(|p| p.format_version == 8 && p.compression_dict_block.size <= 4096));
    let db = Db::open(dir.path(), options(4096, 32 << 10)).unwrap();
    assert_holds(&db, &model);
    // The digested dictionaries are counted with the table readers.
    assert!(db.memory_usage().table_readers > 0);
}

#[test]
fn files_with_and_without_dictionaries_mix_in_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = {
        let db = Db::open(dir.path(), options(0, 0)).unwrap();
        fill(&db)
    };
    assert!(table_properties(dir.path()).iter().all(|p| p.compression_dict_block.size == 0));
    // Reopened with raw-content dictionaries (no training): new files get them, old ones
    // keep reading without.
    let db = Db::open(dir.path(), options(8192, 0)).unwrap();
    for i in 20_000..30_000 {
        db.put(key(i), value(i, 2)).unwrap();
        model.insert(key(i), value(i, 2));
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_holds(&db, &model);
    drop(db);
    let props = table_properties(dir.path());
    assert!(props.iter().any(|p| p.compression_dict_block.size == 8192), "no raw dictionary");
    // Everything rewritten with dictionaries, then without again.
    let db = Db::open(dir.path(), options(8192, 0)).unwrap();
    db.compact().unwrap();
    assert_holds(&db, &model);
    drop(db);
    assert!(table_properties(dir.path()).iter().all(|p| p.compression_dict_block.size > 0));
    let db = Db::open(dir.path(), options(0, 0)).unwrap();
    assert_holds(&db, &model);
    db.compact().unwrap();
    assert_holds(&db, &model);
}

/// Whether `dir` is on tmpfs (statfs(2) magic), where older kernels refuse `O_DIRECT`.
fn on_tmpfs(dir: &Path) -> bool {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `statfs` only writes into the zeroed struct we pass and reads the NUL-terminated
    // path, both valid for the call.
    unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        assert_eq!(libc::statfs(c.as_ptr(), &mut s), 0, "statfs {}", dir.display());
        s.f_type as i64 == 0x0102_1994
    }
}

#[test]
fn batched_direct_reads_decode_with_the_dictionary() {
    // `multi_get` with `direct_reads` collects the device reads of a batch and decodes each
    // block where its read lands (src/sst/reader/batch.rs), with the table's dictionary.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let direct = !on_tmpfs(dir.path()); // tmpfs: the same path through buffered reads
    let opts = || Options {
        direct_reads: direct,
        mmap_reads: false,
        block_cache_bytes: 64 << 10,
        ..options(4096, 32 << 10)
    };
    let model = {
        let db = Db::open(dir.path(), opts()).unwrap();
        let model = fill(&db);
        db.compact().unwrap();
        model
    };
    assert!(table_properties(dir.path()).iter().all(|p| p.compression_dict_block.size > 0));
    let db = Db::open(dir.path(), opts()).unwrap();
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for chunk in keys.chunks(64) {
        let got = db.multi_get(chunk.iter().copied());
        for (k, v) in chunk.iter().zip(got) {
            assert_eq!(v.unwrap().as_ref(), model.get(*k), "{:?}", String::from_utf8_lossy(k));
        }
    }
}

#[test]
fn the_bottommost_options_decide_the_dictionaries_of_bottommost_outputs_only() {
    // Dictionaries only at the bottom: a flush writes none, a full compaction (every output
    // bottommost) writes them; then the reverse, dictionaries everywhere but at the bottom.
    for (all, bottom) in [((0, 0), (4096, 32 << 10)), ((4096, 32 << 10), (0, 0))] {
        let dir = tempfile::tempdir().unwrap();
        let opts = || Options {
            bottommost_compression_max_dict_bytes: Some(bottom.0),
            bottommost_compression_zstd_max_train_bytes: Some(bottom.1),
            ..options(all.0, all.1)
        };
        {
            let db = Db::open(dir.path(), opts()).unwrap();
            for i in 0..3_000 {
                db.put(key(i), value(i, 0)).unwrap();
            }
            db.flush().unwrap();
        }
        let flushed = dictionaries_by_level(dir.path());
        assert!(flushed.iter().any(|&(level, _)| level == 0), "no L0 table: {flushed:?}");
        let l0_dict = all.0 > 0;
        assert!(
            flushed.iter().filter(|&&(l, _)| l == 0).all(|&(_, d)| d == l0_dict),
            "{flushed:?}"
        );
        let db = Db::open(dir.path(), opts()).unwrap();
        // Rewrites the first 3,000 keys with the same values and adds the rest.
        let model = fill(&db);
        db.compact().unwrap();
        assert_holds(&db, &model);
        drop(db);
        let compacted = dictionaries_by_level(dir.path());
        assert!(compacted.len() >= 2, "{compacted:?}");
        let deepest = compacted.iter().map(|&(l, _)| l).max().unwrap();
        assert!(
            compacted.iter().all(|&(l, d)| l == deepest && d == (bottom.0 > 0)),
            "{compacted:?}"
        );
        let db = Db::open(dir.path(), opts()).unwrap();
        assert_holds(&db, &model);
    }
}
