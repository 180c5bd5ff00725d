//! RocksDB's options for the db_bench flags, and opening the database directory.
//!
//! Flags map one to one onto the RocksDB options of the same name in db_bench
//! (`tools/db_bench_tool.cc`): `--bloom_bits` is `NewBloomFilterPolicy(bits)`, the full filter
//! of block-based format_version 5+ (cache-local Bloom; the library's default format_version
//! applies), or `NewRibbonFilterPolicy(bits)` with `--use_ribbon_filter`; `--cache_size` an LRU
//! block cache; the level and L0 flags the column family's options; `--prefix_size=N`
//! (db_bench's) a fixed prefix extractor of N bytes, a memtable prefix Bloom of 0.1 of the write
//! buffer (`memtable_prefix_bloom_ratio`) and whole-key filtering kept on, so the table filters
//! answer point lookups and prefix seeks. A flag left out keeps RocksDB's default.

use crate::flags::Flags;
use crate::R;
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options, SliceTransform, DB};
use std::path::{Path, PathBuf};

/// The file that marks a `--db` directory rocksdb-bench created. The database lives in its
/// `rocksdb` subdirectory, so the directory holds nothing rocksdb-bench did not put there.
const MARKER: &str = "ROCKSDB-BENCH";

/// The subdirectory the `ingest` benchmark writes its external files into (then moved into the
/// database, so it is empty after a run; a crashed run's leftovers are deleted by a fresh open).
pub const STAGING: &str = "ingest-staging";

/// The column family every benchmark uses.
pub const DEFAULT_CF: &str = rocksdb::DEFAULT_COLUMN_FAMILY_NAME;

/// RocksDB's options for `f`. With `--statistics` they carry a `Statistics` object that every
/// DB opened with them shares (db_bench keeps one for the whole run, across fresh fills).
pub fn options(f: &Flags) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    let mut t = BlockBasedOptions::default();
    if f.cache_size > 0 {
        t.set_block_cache(&Cache::new_lru_cache(f.cache_size as usize));
    } else {
        t.disable_cache();
    }
    if f.use_ribbon_filter {
        // db_bench: Ribbon at the Bloom-equivalent bits (10 when --bloom_bits is unset).
        t.set_ribbon_filter(if f.bloom_bits >= 0 { f.bloom_bits as f64 } else { 10.0 });
    } else if f.bloom_bits >= 0 {
        t.set_bloom_filter(f.bloom_bits as f64, false);
    }
    if f.prefix_size > 0 {
        // The table filters then hold prefixes as well as whole keys (db_bench's
        // `--prefix_size` leaves `whole_key_filtering` at its default, true).
        o.set_prefix_extractor(SliceTransform::create_fixed_prefix(f.prefix_size));
        o.set_memtable_prefix_bloom_ratio(0.1);
        t.set_whole_key_filtering(true);
    }
    o.set_block_based_table_factory(&t);
    o.set_compression_type(compression_type(&f.compression));
    if f.compression_max_dict_bytes > 0 || f.compression_zstd_max_train_bytes > 0 {
        // db_bench's defaults for the other three: window bits -14, the codec's default level
        // (kDefaultCompressionLevel, 32767), strategy 0.
        o.set_compression_options(-14, 32767, 0, f.compression_max_dict_bytes);
        o.set_zstd_max_train_bytes(f.compression_zstd_max_train_bytes);
    }
    let bottom =
        (f.bottommost_compression_max_dict_bytes, f.bottommost_compression_zstd_max_train_bytes);
    if bottom != (None, None) {
        let dict = bottom.0.unwrap_or(f.compression_max_dict_bytes);
        let train = bottom.1.unwrap_or(f.compression_zstd_max_train_bytes);
        o.set_bottommost_compression_options(-14, 32767, 0, dict, true);
        o.set_bottommost_zstd_max_train_bytes(train, true);
    }
    if f.enable_blob_files {
        o.set_enable_blob_files(true);
        o.set_min_blob_size(f.min_blob_size);
        o.set_blob_file_size(f.blob_file_size);
        o.set_blob_compression_type(compression_type(&f.blob_compression));
        o.set_enable_blob_gc(f.enable_blob_garbage_collection);
        o.set_blob_gc_age_cutoff(f.blob_garbage_collection_age_cutoff);
    }
    if let Some(v) = f.write_buffer_size {
        o.set_write_buffer_size(v as usize);
    }
    if let Some(v) = f.target_file_size_base {
        o.set_target_file_size_base(v);
    }
    if let Some(v) = f.max_bytes_for_level_base {
        o.set_max_bytes_for_level_base(v);
    }
    if let Some(v) = f.max_bytes_for_level_multiplier {
        o.set_max_bytes_for_level_multiplier(v);
    }
    if let Some(v) = f.dynamic_level_bytes {
        o.set_level_compaction_dynamic_level_bytes(v);
    }
    if let Some(v) = f.l0_compaction_trigger {
        o.set_level_zero_file_num_compaction_trigger(v);
    }
    if let Some(v) = f.l0_slowdown_trigger {
        o.set_level_zero_slowdown_writes_trigger(v);
    }
    if let Some(v) = f.l0_stop_trigger {
        o.set_level_zero_stop_writes_trigger(v);
    }
    if let Some(v) = f.open_files {
        o.set_max_open_files(v);
    }
    o.set_use_direct_reads(f.use_direct_reads);
    o.set_use_direct_io_for_flush_and_compaction(f.use_direct_io_for_flush_and_compaction);
    o.set_allow_mmap_reads(f.mmap_read);
    o.set_allow_mmap_writes(f.mmap_write);
    o.set_disable_auto_compactions(f.disable_auto_compactions);
    if f.statistics {
        o.enable_statistics();
    }
    o
}

/// RocksDB's compression type of a (checked) compression flag.
fn compression_type(name: &str) -> DBCompressionType {
    match name {
        "none" => DBCompressionType::None,
        "snappy" => DBCompressionType::Snappy,
        "lz4" => DBCompressionType::Lz4,
        "zstd" => DBCompressionType::Zstd,
        other => unreachable!("flags::parse accepts only none|snappy|lz4|zstd, got {other}"),
    }
}

/// Where the database of `--db` lives.
pub fn db_path(dir: &Path) -> PathBuf {
    dir.join("rocksdb")
}

/// Checks that `dir` may be used fresh: absent, empty, or created by an earlier run (its
/// [`MARKER`], a plain file, and the engine's `rocksdb` subdirectory, nothing else). Anything
/// else is refused, never deleted (siftdb's tools delete only what they created). Returns
/// whether an earlier run's database subdirectory is there to delete.
pub fn check_fresh(dir: &Path) -> R<bool> {
    let names = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("--db {}: {e}", dir.display()).into()),
        Ok(entries) => entries
            .map(|e| e.map(|e| e.file_name()))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| format!("--db {}: {e}", dir.display()))?,
    };
    let refuse = |why: String| -> R<bool> {
        Err(format!(
            "refusing to use --db {}: {why}; rocksdb-bench reuses only a directory holding \
             nothing but its {MARKER} file and its rocksdb subdirectory: give a new or empty \
             directory",
            dir.display()
        )
        .into())
    };
    // By type, not name alone: a link named like the marker or the database is not ours.
    let is = |name: &str, want_dir: bool| {
        std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| {
            if want_dir {
                m.is_dir()
            } else {
                m.is_file()
            }
        })
    };
    if names.is_empty() {
        return Ok(false);
    }
    if !is(MARKER, false) {
        return refuse(format!(
            "it is not empty and rocksdb-bench did not create it (no {MARKER} file)"
        ));
    }
    for name in &names {
        let ours = (name == MARKER && is(MARKER, false))
            || (name == "rocksdb" && is("rocksdb", true))
            || (name == STAGING && is(STAGING, true));
        if !ours {
            return refuse(format!("it holds {name:?}, which rocksdb-bench did not create"));
        }
    }
    Ok(names.iter().any(|n| n == "rocksdb"))
}

/// Opens the database in `dir/rocksdb`; when `fresh`, first deletes an earlier run's database
/// subdirectory (see [`check_fresh`]) and marks `dir` as rocksdb-bench's.
pub fn open(dir: &Path, opts: &Options, fresh: bool) -> R<DB> {
    if fresh {
        if check_fresh(dir)? {
            std::fs::remove_dir_all(db_path(dir))?;
        }
        if dir.join(STAGING).is_dir() {
            std::fs::remove_dir_all(dir.join(STAGING))?;
        }
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join(MARKER), "a database directory created by rocksdb-bench\n")?;
    } else if !db_path(dir).is_dir() {
        return Err(format!(
            "--use_existing_db: no rocksdb-bench database in {} (expected {})",
            dir.display(),
            db_path(dir).display()
        )
        .into());
    }
    let mut opts = opts.clone();
    opts.create_if_missing(fresh);
    // Opened through a descriptor of the default column family (with the same options), so the
    // DB has a handle for it: batched MultiGet takes a column family.
    let default = rocksdb::ColumnFamilyDescriptor::new(DEFAULT_CF, opts.clone());
    Ok(DB::open_cf_descriptors(&opts, db_path(dir), [default])?)
}

/// The value of `key` in the database's newest OPTIONS file (`rocksdb_version`,
/// `format_version`, ...: RocksDB records what it actually used there, and the library has no
/// version call), or "unknown".
pub fn options_file_value(dir: &Path, key: &str) -> String {
    let Ok(entries) = std::fs::read_dir(db_path(dir)) else { return "unknown".into() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("OPTIONS-")))
        .collect();
    // OPTIONS-<file number>, zero-padded: the last name is the newest.
    files.sort();
    let prefix = format!("{key}=");
    files
        .last()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|s| s.lines().find_map(|l| l.trim().strip_prefix(&prefix).map(str::to_string)))
        .unwrap_or_else(|| "unknown".into())
}

/// `--statistics`' report: RocksDB's `Statistics::ToString()` after db_bench's `STATISTICS:`
/// heading (tickers as `name COUNT : n`, which scripts/compare.sh reads), then the live tables'
/// aggregated properties one per line as `sst_dump --show_properties` prints them
/// (`  filter block size: n`, `  # entries for filter: n`), for compare.sh's bits/key column.
pub fn statistics(db: &DB, opts: &Options) -> R<String> {
    let mut s = String::from("STATISTICS:\n");
    s += &opts.get_statistics().unwrap_or_default();
    let props = db.property_value(rocksdb::properties::AGGREGATED_TABLE_PROPERTIES)?;
    s += "\nAggregated table properties (live tables):\n";
    for kv in props.unwrap_or_default().split("; ") {
        if let Some((k, v)) = kv.split_once('=') {
            s += &format!("  {}: {}\n", k.trim(), v.trim());
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of this test process, removed when dropped (created with `create_dir`, so
    /// never one that existed before).
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let p = std::env::temp_dir()
                .join(format!("rocksdb-bench-test-{}-{name}", std::process::id()));
            std::fs::create_dir(&p).unwrap();
            Scratch(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn flags(extra: &str) -> Flags {
        crate::flags::parse(extra.split_whitespace().map(String::from)).unwrap()
    }

    #[test]
    fn a_directory_rocksdb_bench_did_not_create_is_refused_and_kept() {
        let s = Scratch::new("foreign");
        std::fs::write(s.0.join("precious"), b"keep me").unwrap();
        let e = check_fresh(&s.0).unwrap_err().to_string();
        assert!(e.contains("refusing") && e.contains(MARKER), "{e}");
        assert!(open(&s.0, &options(&flags("")), true).is_err());
        assert_eq!(std::fs::read(s.0.join("precious")).unwrap(), b"keep me");
    }

    #[test]
    fn a_file_added_to_its_own_directory_later_is_refused_and_kept() {
        let s = Scratch::new("added");
        let dir = s.0.join("db");
        let opts = options(&flags(""));
        drop(open(&dir, &opts, true).unwrap());
        std::fs::write(dir.join("notes.txt"), b"the user's").unwrap();
        let e = check_fresh(&dir).unwrap_err().to_string();
        assert!(e.contains("notes.txt"), "{e}");
        assert!(open(&dir, &opts, true).is_err());
        assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), b"the user's");
        assert!(db_path(&dir).is_dir(), "the database is kept too");
    }

    #[test]
    fn a_fresh_open_empties_its_own_directory_and_use_existing_keeps_it() {
        let s = Scratch::new("own");
        let dir = s.0.join("db");
        let opts = options(&flags("--bloom_bits=10 --compression_type=zstd --statistics"));
        let db = open(&dir, &opts, true).unwrap();
        db.put(b"k", b"v").unwrap();
        drop(db);
        let db = open(&dir, &opts, false).unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        drop(db);
        assert!(check_fresh(&dir).unwrap(), "an earlier run's directory may be emptied");
        let db = open(&dir, &opts, true).unwrap();
        assert_eq!(db.get(b"k").unwrap(), None);
        assert!(
            options_file_value(&dir, "rocksdb_version").starts_with(|c: char| c.is_ascii_digit())
        );
        let format: u32 = options_file_value(&dir, "format_version").parse().unwrap();
        assert!(format >= 5, "the full filter needs format_version 5+, got {format}");
    }

    #[test]
    fn statistics_print_the_tickers_and_filter_properties_compare_sh_reads() {
        let s = Scratch::new("stats");
        let opts = options(&flags("--bloom_bits=10 --statistics"));
        let db = open(&s.0.join("db"), &opts, true).unwrap();
        for i in 0..1000u32 {
            db.put(i.to_be_bytes(), b"value").unwrap();
        }
        db.flush().unwrap();
        for i in 0..2000u32 {
            db.get(i.to_be_bytes()).unwrap();
        }
        let text = statistics(&db, &opts).unwrap();
        assert!(text.contains("rocksdb.bloom.filter.useful COUNT : "), "{text}");
        assert!(text.contains("rocksdb.bloom.filter.full.positive COUNT : "), "{text}");
        assert!(text.contains("  # entries for filter: 1000\n"), "{text}");
        let filter_line = text.lines().find(|l| l.starts_with("  filter block size: ")).unwrap();
        let bytes: u64 = filter_line.rsplit(' ').next().unwrap().parse().unwrap();
        // 10 bits per key over 1000 keys, give or take the filter's rounding and trailer.
        assert!((1000..2000).contains(&bytes), "{filter_line}");
    }
}
