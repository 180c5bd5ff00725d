//! rocksdb-bench's flags: db_bench's names, meanings and defaults (RocksDB 7.8
//! `tools/db_bench_tool.cc`, the same subset `siftdb bench` takes), parsed gflags-style:
//! `--name=value`, and for booleans also a bare `--name` (`--sync`, `--sync=1`, `--sync=false`).
//!
//! A tuning flag left out leaves RocksDB's own default in place (as db_bench does); only the
//! flags where db_bench's default differs from RocksDB's (`--cache_size` 8 MiB,
//! `--compression_type=snappy`, no filter) carry a default here. An unknown flag, a value that
//! does not parse or is out of range is an error naming the flag, never ignored: a comparison
//! must not silently run a different configuration than its command line says.

use siftdb_bench_kit::key_layout::{check_prefix_size, RangeFlavour};
use siftdb_bench_kit::txn::TxWorkload;
use siftdb_bench_kit::ycsb;
use std::collections::HashMap;
use std::path::PathBuf;

/// The benchmarks rocksdb-bench runs (siftdb bench's list), besides the transaction benchmarks
/// `txrmw[N]`, `txblind[N]` and `batchblind[N]` (siftdb-bench-kit's `txn` module) and the YCSB
/// ones, `ycsbload` and `ycsba`..`ycsbf` (its `ycsb` module).
pub const BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readmissing",
    "multireadrandom",
    "readseq",
    "seekrandom",
    "rangeempty",
    "prefixscan",
    "readwhilewriting",
    "deleterandom",
    "compact",
    "waitforcompaction",
    "ingest",
    "stats",
];

/// Bytes of the key number the generator writes (`keys::make_key`); shorter keys would make key
/// numbers collide and `readmissing` keys land outside the key ranges (as in siftdb bench).
const MIN_KEY_SIZE: usize = 8;

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Flags {
    /// Benchmarks, run in order.
    pub benchmarks: Vec<String>,
    /// Keys are drawn from `[0, num)`; fills write `num` keys per thread.
    pub num: u64,
    /// Reads per thread of the read benchmarks (`--reads`, -1 = `num`).
    pub reads: u64,
    /// Seconds each of readrandom, readmissing, multireadrandom, seekrandom, rangeempty and
    /// prefixscan runs; 0 = `reads` operations.
    pub duration: u64,
    /// Keys per MultiGet call of multireadrandom.
    pub batch_size: usize,
    /// `ReadOptions::async_io` for multireadrandom.
    pub async_io: bool,
    /// Key bytes.
    pub key_size: usize,
    /// Value bytes.
    pub value_size: usize,
    /// Threads per benchmark, sharing one DB.
    pub threads: usize,
    /// Filter bits per key; negative = no filter.
    pub bloom_bits: i64,
    /// Ribbon instead of Bloom, at the FPR of `bloom_bits` (10 if unset).
    pub use_ribbon_filter: bool,
    /// Block compression, lower case: none, snappy, lz4 or zstd.
    pub compression: String,
    /// Largest zstd dictionary per SST file in bytes (`compression_opts.max_dict_bytes`;
    /// db_bench's `--compression_max_dict_bytes`, default 0 = none).
    pub compression_max_dict_bytes: i32,
    /// Bytes of samples each dictionary is trained on (`compression_opts.zstd_max_train_bytes`;
    /// db_bench's `--compression_zstd_max_train_bytes`, default 0 = the samples are the
    /// dictionary).
    pub compression_zstd_max_train_bytes: i32,
    /// The dictionary size of bottommost files (`bottommost_compression_opts.max_dict_bytes`,
    /// enabled when this or the next is given; the other then takes the all-levels value).
    pub bottommost_compression_max_dict_bytes: Option<i32>,
    /// Bytes each bottommost dictionary is trained on
    /// (`bottommost_compression_opts.zstd_max_train_bytes`).
    pub bottommost_compression_zstd_max_train_bytes: Option<i32>,
    /// LRU block cache bytes (0 = no block cache).
    pub cache_size: u64,
    /// Memtable bytes (RocksDB's default when unset).
    pub write_buffer_size: Option<u64>,
    /// Target SST size of compaction output.
    pub target_file_size_base: Option<u64>,
    /// L1's target bytes.
    pub max_bytes_for_level_base: Option<u64>,
    /// Growth factor between levels.
    pub max_bytes_for_level_multiplier: Option<f64>,
    /// L0 files that start an L0 -> L1 compaction.
    pub l0_compaction_trigger: Option<i32>,
    /// L0 files at which writes slow down.
    pub l0_slowdown_trigger: Option<i32>,
    /// L0 files at which writes stop.
    pub l0_stop_trigger: Option<i32>,
    /// Table files kept open (-1 = all).
    pub open_files: Option<i32>,
    /// O_DIRECT for reads.
    pub use_direct_reads: bool,
    /// O_DIRECT for flush and compaction I/O.
    pub use_direct_io_for_flush_and_compaction: bool,
    /// mmap table files for reads.
    pub mmap_read: bool,
    /// mmap writable files (RocksDB's `allow_mmap_writes`: WAL, SSTs and MANIFEST).
    pub mmap_write: bool,
    /// No background compaction.
    pub disable_auto_compactions: bool,
    /// fsync every write.
    pub sync: bool,
    /// Print RocksDB's statistics (tickers, histograms) and table properties at the end.
    pub statistics: bool,
    /// Seed base of the per-thread generators (thread i of a benchmark uses base + i).
    pub seed: u64,
    /// rangeempty and prefixscan: the `--seed` of the fill that wrote the database (default
    /// `--seed`; key_layout.rs).
    pub fill_seed: Option<u64>,
    /// Database directory (default: a temporary directory removed at exit).
    pub db: Option<PathBuf>,
    /// Reuse the database at `--db`; fill benchmarks are then skipped.
    pub use_existing_db: bool,
    /// seekrandom: entries read with `Next` after each `Seek` (db_bench's `--seek_nexts`).
    pub seek_nexts: u64,
    /// Key number v is written and read as v * `key_spacing` (key_layout.rs; 1 = db_bench's).
    pub key_spacing: u64,
    /// rangeempty: widths uniform in [2, range_max_width].
    pub range_max_width: u64,
    /// rangeempty and prefixscan: share of empty ranges / absent prefixes.
    pub empty_fraction: f64,
    /// rangeempty: where empty ranges lie in their gaps.
    pub range_flavour: RangeFlavour,
    /// RocksDB's fixed prefix extractor of this many bytes with the memtable prefix Bloom
    /// (db_bench's `--prefix_size`); 0 = none.
    pub prefix_size: usize,
    /// Values of at least `min_blob_size` bytes go to blob files (RocksDB's integrated BlobDB).
    pub enable_blob_files: bool,
    /// The blob threshold (db_bench's default 0: every value, when blob files are on).
    pub min_blob_size: u64,
    /// Blob file size (db_bench's default 256 MiB).
    pub blob_file_size: u64,
    /// Blob compression, lower case (db_bench's default none).
    pub blob_compression: String,
    /// Relocate the live values of the oldest blob files during compaction.
    pub enable_blob_garbage_collection: bool,
    /// The share of oldest blob files that garbage collection relocates (db_bench's 0.25).
    pub blob_garbage_collection_age_cutoff: f64,
    /// ingest: keys per external file (siftdb-bench-kit's `ingest` module).
    pub ingest_keys_per_file: u64,
    /// Time every read of readrandom, readmissing and readwhilewriting (p50/p99/p99.9/max).
    pub histogram: bool,
    /// `level_compaction_dynamic_level_bytes` (RocksDB's default, true, when unset).
    pub dynamic_level_bytes: Option<bool>,
    /// readwhilewriting: the writer's bytes per second (0 = unlimited).
    pub benchmark_write_rate_limit: u64,
}

/// gflags-style boolean.
fn parse_bool(k: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "t" | "y" => Ok(true),
        "0" | "false" | "no" | "f" | "n" => Ok(false),
        _ => Err(format!("--{k}={v}: expected a boolean (1/0/true/false)")),
    }
}

/// The flags given on the command line, consumed one by one so leftovers are the unknown ones.
struct Given(HashMap<String, Option<String>>);

impl Given {
    /// The value of `--k`, which must not be given bare.
    fn value(&mut self, k: &str) -> Result<Option<String>, String> {
        match self.0.remove(k) {
            None => Ok(None),
            Some(None) => Err(format!("--{k} needs a value (--{k}=...)")),
            Some(Some(v)) => Ok(Some(v)),
        }
    }

    /// `--k` parsed as `T`, checked by `ok` (whose text names the valid range).
    fn num<T: std::str::FromStr + Copy>(
        &mut self,
        k: &str,
        ok: (fn(T) -> bool, &str),
    ) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        let Some(v) = self.value(k)? else { return Ok(None) };
        let x: T = v.parse().map_err(|e| format!("--{k}={v}: {e}"))?;
        if !ok.0(x) {
            return Err(format!("--{k}={v} is out of range: {}", ok.1));
        }
        Ok(Some(x))
    }

    fn boolean(&mut self, k: &str) -> Result<bool, String> {
        match self.0.remove(k) {
            None => Ok(false),
            Some(None) => Ok(true),
            Some(Some(v)) => parse_bool(k, &v),
        }
    }
}

const ANY: (fn(u64) -> bool, &str) = (|_| true, "");
const POSITIVE: (fn(u64) -> bool, &str) = (|x| x > 0, "must be at least 1");
const TRIGGER: (fn(i32) -> bool, &str) = (|x| x >= 1, "must be at least 1");

/// A compression flag, lower case: none, snappy, lz4 or zstd.
fn compression_flag(g: &mut Given, k: &str, default: &str) -> Result<String, String> {
    let c = g.value(k)?.unwrap_or_else(|| default.into()).to_ascii_lowercase();
    if !["none", "snappy", "lz4", "zstd"].contains(&c.as_str()) {
        return Err(format!("--{k}={c}: expected none|snappy|lz4|zstd"));
    }
    Ok(c)
}

/// Parses `args` (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Flags, String> {
    let mut map = HashMap::new();
    for a in args {
        let Some(body) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            return Err(format!("unexpected argument {a:?}: flags are --name=value"));
        };
        let (k, v) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        if map.insert(k.to_string(), v).is_some() {
            return Err(format!("--{k} is given twice"));
        }
    }
    let mut g = Given(map);
    let benchmarks: Vec<String> = g
        .value("benchmarks")?
        .unwrap_or_else(|| "fillseq,fillrandom,overwrite,readrandom,readmissing,readseq".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let known = |b: &str| {
        BENCHMARKS.contains(&b) || TxWorkload::parse(b).is_some() || ycsb::is_benchmark(b)
    };
    if let Some(bad) = benchmarks.iter().find(|b| !known(b.as_str())) {
        return Err(format!(
            "unknown benchmark {bad:?} (known: {}, txrmw[N], txblind[N], batchblind[N], ycsbload, \
             ycsba..ycsbf)",
            BENCHMARKS.join(",")
        ));
    }
    let num = g.num("num", POSITIVE)?.unwrap_or(1_000_000);
    let reads = g.num::<i64>("reads", (|x: i64| x >= -1, "-1 (= --num) or a count"))?.unwrap_or(-1);
    let compression = compression_flag(&mut g, "compression_type", "snappy")?;
    let key_size =
        g.num("key_size", (|x: usize| x >= MIN_KEY_SIZE, "at least 8 (the key number)"))?;
    let f = Flags {
        benchmarks,
        num,
        reads: if reads < 0 { num } else { reads as u64 },
        duration: g.num("duration", ANY)?.unwrap_or(0),
        batch_size: g.num("batch_size", (|x: usize| x >= 1, "must be at least 1"))?.unwrap_or(1),
        async_io: g.boolean("async_io")?,
        key_size: key_size.unwrap_or(16),
        value_size: g.num("value_size", (|_: usize| true, ""))?.unwrap_or(100),
        threads: g.num("threads", (|x: usize| x >= 1, "must be at least 1"))?.unwrap_or(1),
        bloom_bits: g
            .num("bloom_bits", (|x: i64| x <= 100, "negative (none) or 0..=100"))?
            .unwrap_or(-1),
        use_ribbon_filter: g.boolean("use_ribbon_filter")?,
        compression,
        compression_max_dict_bytes: g
            .num("compression_max_dict_bytes", (|x: i32| x >= 0, "must be at least 0"))?
            .unwrap_or(0),
        compression_zstd_max_train_bytes: g
            .num("compression_zstd_max_train_bytes", (|x: i32| x >= 0, "must be at least 0"))?
            .unwrap_or(0),
        bottommost_compression_max_dict_bytes: g.num(
            "bottommost_compression_max_dict_bytes",
            (|x: i32| x >= 0, "must be at least 0"),
        )?,
        bottommost_compression_zstd_max_train_bytes: g.num(
            "bottommost_compression_zstd_max_train_bytes",
            (|x: i32| x >= 0, "must be at least 0"),
        )?,
        cache_size: g.num("cache_size", ANY)?.unwrap_or(8 << 20),
        write_buffer_size: g.num("write_buffer_size", POSITIVE)?,
        target_file_size_base: g.num("target_file_size_base", POSITIVE)?,
        max_bytes_for_level_base: g.num("max_bytes_for_level_base", POSITIVE)?,
        max_bytes_for_level_multiplier: g
            .num("max_bytes_for_level_multiplier", (|x: f64| x > 0.0, "must be > 0"))?,
        l0_compaction_trigger: g.num("level0_file_num_compaction_trigger", TRIGGER)?,
        l0_slowdown_trigger: g.num("level0_slowdown_writes_trigger", TRIGGER)?,
        l0_stop_trigger: g.num("level0_stop_writes_trigger", TRIGGER)?,
        open_files: g
            .num("open_files", (|x: i32| x == -1 || x >= 1, "-1 (unlimited) or at least 1"))?,
        use_direct_reads: g.boolean("use_direct_reads")?,
        use_direct_io_for_flush_and_compaction: g
            .boolean("use_direct_io_for_flush_and_compaction")?,
        mmap_read: g.boolean("mmap_read")?,
        mmap_write: g.boolean("mmap_write")?,
        disable_auto_compactions: g.boolean("disable_auto_compactions")?,
        sync: g.boolean("sync")?,
        statistics: g.boolean("statistics")?,
        seed: g.num("seed", ANY)?.unwrap_or(0),
        fill_seed: g.num("fill_seed", ANY)?,
        db: g.value("db")?.map(PathBuf::from),
        use_existing_db: g.boolean("use_existing_db")?,
        seek_nexts: g.num("seek_nexts", ANY)?.unwrap_or(0),
        key_spacing: g.num("key_spacing", (|x: u64| x >= 1, "at least 1"))?.unwrap_or(1),
        range_max_width: g.num("range_max_width", (|x: u64| x >= 2, "at least 2"))?.unwrap_or(16),
        empty_fraction: g
            .num("empty_fraction", (|x: f64| (0.0..=1.0).contains(&x), "a share in 0..=1"))?
            .unwrap_or(0.5),
        range_flavour: match g.value("range_flavour")? {
            Some(v) => RangeFlavour::parse(&v)?,
            None => RangeFlavour::Uncorrelated,
        },
        prefix_size: g.num("prefix_size", (|_: usize| true, ""))?.unwrap_or(0),
        enable_blob_files: g.boolean("enable_blob_files")?,
        min_blob_size: g.num("min_blob_size", ANY)?.unwrap_or(0),
        blob_file_size: g.num("blob_file_size", POSITIVE)?.unwrap_or(256 << 20),
        blob_compression: compression_flag(&mut g, "blob_compression_type", "none")?,
        enable_blob_garbage_collection: g.boolean("enable_blob_garbage_collection")?,
        blob_garbage_collection_age_cutoff: g
            .num(
                "blob_garbage_collection_age_cutoff",
                (|x: f64| (0.0..=1.0).contains(&x), "a share in 0..=1"),
            )?
            .unwrap_or(0.25),
        ingest_keys_per_file: g
            .num("ingest_keys_per_file", POSITIVE)?
            .unwrap_or(siftdb_bench_kit::ingest::DEFAULT_KEYS_PER_FILE),
        histogram: g.boolean("histogram")?,
        dynamic_level_bytes: match g.0.contains_key("level_compaction_dynamic_level_bytes") {
            true => Some(g.boolean("level_compaction_dynamic_level_bytes")?),
            false => None,
        },
        benchmark_write_rate_limit: g.num("benchmark_write_rate_limit", ANY)?.unwrap_or(0),
    };
    // siftdb bench's range filter flags: RocksDB has no range filter, so only 0 (none) is
    // accepted; --range_filter_max, which only shapes a range filter, is then checked and has
    // no effect.
    g.num::<f64>("range_filter_bits", (|x| x == 0.0, "RocksDB has no range filter: only 0"))?;
    g.num("range_filter_max", POSITIVE)?;
    check_prefix_size(f.prefix_size, f.key_size)?;
    if f.mmap_read && f.use_direct_reads {
        return Err(
            "--mmap_read and --use_direct_reads exclude each other (RocksDB refuses both)".into()
        );
    }
    if f.mmap_write && f.use_direct_io_for_flush_and_compaction {
        return Err(
            "--mmap_write and --use_direct_io_for_flush_and_compaction exclude each other \
                    (RocksDB refuses both)"
                .into(),
        );
    }
    if f.use_existing_db && f.db.is_none() {
        return Err("--use_existing_db needs --db=DIR (the database to reuse)".into());
    }
    let mut unknown: Vec<_> = g.0.into_keys().collect();
    if !unknown.is_empty() {
        unknown.sort();
        return Err(format!(
            "unknown flag(s) --{}: rocksdb-bench takes siftdb bench's db_bench subset (see \
             tools/rocksdb-bench/src/flags.rs)",
            unknown.join(", --")
        ));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn dictionary_flags_parse_and_default_to_none() {
        let f = parse(args("--compression_type=zstd")).unwrap();
        assert_eq!((f.compression_max_dict_bytes, f.compression_zstd_max_train_bytes), (0, 0));
        let f = parse(args(
            "--compression_type=zstd --compression_max_dict_bytes=16384 \
             --compression_zstd_max_train_bytes=1638400",
        ))
        .unwrap();
        assert_eq!(
            (f.compression_max_dict_bytes, f.compression_zstd_max_train_bytes),
            (16384, 1_638_400)
        );
        let f = parse(args(
            "--compression_type=zstd --bottommost_compression_max_dict_bytes=16384 \
             --bottommost_compression_zstd_max_train_bytes=1638400",
        ))
        .unwrap();
        assert_eq!(
            (
                f.bottommost_compression_max_dict_bytes,
                f.bottommost_compression_zstd_max_train_bytes
            ),
            (Some(16384), Some(1_638_400))
        );
        assert_eq!(f.compression_max_dict_bytes, 0);
        let e = parse(args("--compression_max_dict_bytes=-1")).unwrap_err();
        assert!(e.contains("--compression_max_dict_bytes=-1 is out of range"), "{e}");
    }

    #[test]
    fn compare_sh_default_flags_parse_with_db_bench_meanings() {
        let f = parse(args(
            "--benchmarks=fillrandom,compact,readrandom,readmissing,stats --num=1000000 \
             --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=zstd --threads=1 \
             --write_buffer_size=8388608 --target_file_size_base=8388608 \
             --max_bytes_for_level_base=33554432 --statistics=1 --seed=1 --db=/tmp/x",
        ))
        .unwrap();
        assert_eq!(f.benchmarks, ["fillrandom", "compact", "readrandom", "readmissing", "stats"]);
        assert_eq!((f.num, f.reads, f.bloom_bits, f.seed), (1_000_000, 1_000_000, 10, 1));
        assert_eq!(f.compression, "zstd");
        assert_eq!(f.write_buffer_size, Some(8 << 20));
        assert_eq!(f.max_bytes_for_level_base, Some(32 << 20));
        assert!(f.statistics && !f.use_existing_db);
        assert_eq!(f.l0_compaction_trigger, None, "unset flags keep RocksDB's default");
    }

    #[test]
    fn booleans_take_gflags_spellings() {
        assert!(parse(args("--sync")).unwrap().sync);
        assert!(parse(args("--sync=true")).unwrap().sync);
        assert!(!parse(args("--sync=0")).unwrap().sync);
        assert!(parse(args("--sync=maybe")).unwrap_err().contains("--sync=maybe"));
    }

    #[test]
    fn unknown_flags_and_benchmarks_are_errors_naming_them() {
        let e = parse(args("--num=10 --block_size=4096")).unwrap_err();
        assert!(e.contains("--block_size"), "{e}");
        let e = parse(args("--benchmarks=fillrandom,levelstats")).unwrap_err();
        assert!(e.contains("\"levelstats\""), "{e}");
        let f = parse(args("--benchmarks=fillseq,txrmw,txrmw10,txblind,batchblind")).unwrap();
        assert_eq!(f.benchmarks.len(), 5);
        let e = parse(args("--benchmarks=txrmw0")).unwrap_err();
        assert!(e.contains("\"txrmw0\""), "{e}");
    }

    #[test]
    fn out_of_range_values_are_errors_naming_flag_and_range() {
        for (a, want) in [
            ("--key_size=4", "at least 8"),
            ("--threads=0", "--threads=0"),
            ("--open_files=0", "-1 (unlimited)"),
            ("--compression_type=bzip2", "none|snappy|lz4|zstd"),
            ("--num=abc", "--num=abc"),
            ("--num", "needs a value"),
            ("--max_bytes_for_level_multiplier=0", "must be > 0"),
            ("--mmap_read --use_direct_reads", "exclude each other"),
            ("--mmap_write --use_direct_io_for_flush_and_compaction", "exclude each other"),
            ("--use_existing_db", "needs --db"),
            ("--empty_fraction=2", "--empty_fraction=2 is out of range: a share in 0..=1"),
            ("--key_spacing=0", "--key_spacing=0 is out of range"),
            ("--range_max_width=1", "--range_max_width=1 is out of range"),
            ("--range_filter_bits=14", "RocksDB has no range filter"),
            ("--range_flavour=sideways", "uncorrelated|correlated"),
            ("--prefix_size=17", "--prefix_size=17 exceeds --key_size=16"),
            ("--blob_compression_type=lzma", "--blob_compression_type=lzma: expected"),
            ("--blob_garbage_collection_age_cutoff=1.5", "a share in 0..=1"),
            ("--ingest_keys_per_file=0", "must be at least 1"),
        ] {
            let e = parse(args(a)).unwrap_err();
            assert!(e.contains(want), "{a}: {e}");
        }
    }

    #[test]
    fn scan_flags_default_to_db_bench_layout_and_accept_siftdb_s_range_filter_off() {
        let f = parse(args("--num=500")).unwrap();
        assert_eq!((f.seek_nexts, f.key_spacing, f.prefix_size, f.range_max_width), (0, 1, 0, 16));
        assert_eq!((f.empty_fraction, f.range_flavour), (0.5, RangeFlavour::Uncorrelated));
        let f = parse(args(
            "--seek_nexts=4 --key_spacing=64 --prefix_size=7 --range_filter_bits=0 \
             --range_filter_max=16 --range_flavour=correlated --empty_fraction=0.25",
        ))
        .unwrap();
        assert_eq!((f.seek_nexts, f.key_spacing, f.prefix_size), (4, 64, 7));
        assert_eq!((f.empty_fraction, f.range_flavour), (0.25, RangeFlavour::Correlated));
    }

    #[test]
    fn blob_flags_take_db_bench_names_and_defaults() {
        let f = parse(args("--num=5")).unwrap();
        assert!(!f.enable_blob_files && !f.enable_blob_garbage_collection);
        assert_eq!((f.min_blob_size, f.blob_file_size), (0, 256 << 20));
        assert_eq!(
            (f.blob_compression.as_str(), f.blob_garbage_collection_age_cutoff),
            ("none", 0.25)
        );
        let f = parse(args(
            "--enable_blob_files --min_blob_size=4096 --blob_compression_type=LZ4 \
             --enable_blob_garbage_collection=1 --blob_garbage_collection_age_cutoff=0.5",
        ))
        .unwrap();
        assert!(f.enable_blob_files && f.enable_blob_garbage_collection);
        assert_eq!((f.min_blob_size, f.blob_compression.as_str()), (4096, "lz4"));
        assert_eq!(f.blob_garbage_collection_age_cutoff, 0.5);
    }

    #[test]
    fn reads_default_to_num() {
        let f = parse(args("--num=500")).unwrap();
        assert_eq!(f.reads, 500);
        assert_eq!(parse(args("--num=500 --reads=7")).unwrap().reads, 7);
    }
}
