//! `siftdb bench`'s flags: db_bench's names and defaults (RocksDB 7.8 `tools/db_bench_tool.cc`)
//! for the subset that makes sense for siftdb, plus siftdb's own filter-policy flags.
//!
//! Boolean flags accept gflags' spellings: `--sync`, `--sync=1`, `--sync=true`, `--sync=0`,
//! `--sync=false`, so a db_bench command line can be pasted as is.

use siftdb::filter::cost;
use siftdb::options::{FilterAllocation, FilterConfig, LevelBudget, StaticFilterKind};
use siftdb::{FixedPrefix, Options, RangeFilterOptions};
use siftdb_bench_kit::key_layout::{check_prefix_size, RangeFlavour};
use std::path::PathBuf;
use std::sync::Arc;

/// gflags-style boolean: `1`/`0`/`true`/`false`/`yes`/`no`.
fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "t" | "y" => Ok(true),
        "0" | "false" | "no" | "f" | "n" => Ok(false),
        _ => Err(format!("expected a boolean (1/0/true/false), got {s:?}")),
    }
}

/// `--cache_admission`: `second_miss` or `all`.
fn parse_cache_admission(s: &str) -> Result<siftdb::CacheAdmission, String> {
    match s.to_ascii_lowercase().as_str() {
        "second_miss" => Ok(siftdb::CacheAdmission::SecondMiss),
        "all" => Ok(siftdb::CacheAdmission::All),
        _ => Err(format!("expected second_miss or all, got {s:?}")),
    }
}

/// The flush filter named by `--flush_filter`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushFilter {
    /// Floe's two-bit Bloom filter, written from the memtable as is (siftdb's default).
    #[value(name = "two_bit")]
    TwoBit,
    /// RocksDB-style cache-line-blocked Bloom filter (what `--bloom_bits` alone selects).
    Blocked,
    /// Classic Bloom filter.
    Standard,
    /// No filter.
    None,
}

/// The compaction filter named by `--compaction_filter`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionFilter {
    /// Standard Ribbon at the FPR of `--bloom_bits` (what RocksDB's `--use_ribbon_filter` asks
    /// for).
    Ribbon,
    /// Bumped Ribbon (BuRR) at the FPR of `--bloom_bits` (siftdb's default): as `ribbon` in 3-4%
    /// fewer bits, built in about 3x the time.
    #[value(name = "bumped_ribbon")]
    BumpedRibbon,
    /// Binary fuse, 8-bit fingerprints (FPR fixed at 0.39%, ~9 bits/key).
    #[value(name = "binary_fuse8")]
    BinaryFuse8,
    /// Binary fuse, 16-bit fingerprints.
    #[value(name = "binary_fuse16")]
    BinaryFuse16,
    /// 4-wise binary fuse, 8-bit fingerprints (FPR 0.39%, ~8.6 bits/key at 1M keys per file).
    #[value(name = "binary_fuse4_8")]
    BinaryFuse4Wise8,
    /// 4-wise binary fuse, 16-bit fingerprints.
    #[value(name = "binary_fuse4_16")]
    BinaryFuse4Wise16,
    /// 4-wise binary fuse with bit-packed fingerprints of the width nearest the FPR of
    /// `--bloom_bits` (as for `ribbon`), or of `--fingerprint_bits` per level.
    #[value(name = "packed_binary_fuse")]
    PackedBinaryFuse,
    /// Xor, 8-bit fingerprints.
    Xor8,
    /// Xor, 16-bit fingerprints.
    Xor16,
    /// Cache-line-blocked Bloom at `--bloom_bits` bits per key (RocksDB's Bloom, like for like).
    Blocked,
    /// Classic Bloom at `--bloom_bits` bits per key.
    Standard,
    /// No filter on compacted levels.
    None,
}

/// db_bench's flags (names, meanings and defaults as in RocksDB 7.8) plus siftdb's own.
#[derive(clap::Args, Debug, Clone)]
#[command(rename_all = "snake_case")]
pub struct Flags {
    /// Comma-separated benchmarks, run in order: fillseq, fillrandom, overwrite, readrandom,
    /// readmissing, multireadrandom, readseq, seekrandom, rangeempty, prefixscan,
    /// readwhilewriting, deleterandom, compact, stats; and the transaction workloads txrmw[N]
    /// (read N keys, write the first back, commit; YCSB-F's read-modify-write through an
    /// optimistic transaction), txblind[N] and batchblind[N] (N blind writes through a
    /// transaction or as one batch), over keys a fill wrote (docs/tools.md).
    #[arg(long, default_value = "fillseq,fillrandom,overwrite,readrandom,readmissing,readseq")]
    pub benchmarks: String,
    /// Number of key/values to place in the database (keys are drawn from [0, num)).
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Reads per thread of the read benchmarks; -1 = `num`.
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    pub reads: i64,
    /// Seconds each read benchmark runs (readrandom, readmissing, multireadrandom, seekrandom); 0 = run
    /// `--reads` operations instead. As db_bench's `--duration`: runs long enough to get past
    /// warm-up.
    #[arg(long, default_value_t = 0)]
    pub duration: u64,
    /// Keys per `Db::multi_get` call of multireadrandom (db_bench's `--batch_size`).
    #[arg(long, default_value_t = 1)]
    pub batch_size: usize,
    /// Threads one multireadrandom batch may use (`ReadOptions::multi_get_threads`, siftdb
    /// only; db_bench has no such flag): 1 reads every key on the benchmark's thread.
    #[arg(long, default_value_t = 1)]
    pub multi_get_threads: usize,
    /// seekrandom: entries read with `next` after each seek (db_bench's `--seek_nexts`); 0 reads
    /// only the entry the seek lands on.
    #[arg(long, default_value_t = 0)]
    pub seek_nexts: u64,
    /// Key layout: every workload's key number v is written and read as v * G, leaving a gap of
    /// G - 1 unused numbers after each key (what rangeempty and prefixscan ask about). 1 =
    /// db_bench's layout.
    #[arg(long, default_value_t = 1)]
    pub key_spacing: u64,
    /// rangeempty: ranges span w key numbers, w uniform in [2, this].
    #[arg(long, default_value_t = 16)]
    pub range_max_width: u64,
    /// rangeempty and prefixscan: the share of operations asking about an empty range or an
    /// absent prefix (0..=1); the others ask about one that holds a written key number.
    #[arg(long, default_value_t = 0.5)]
    pub empty_fraction: f64,
    /// rangeempty: where an empty range lies in its gap: `uncorrelated` (a uniform position) or
    /// `correlated` (right after a key, where SuRF-like filters fail).
    #[arg(long, default_value = "uncorrelated", value_parser = RangeFlavour::parse)]
    pub range_flavour: RangeFlavour,
    /// siftdb: prefix filters with a fixed-length prefix extractor of N bytes
    /// (`Options::prefix_extractor = FixedPrefix::new(N)`, RocksDB's `--prefix_size`); 0 = none.
    #[arg(long, default_value_t = 0)]
    pub prefix_size: usize,
    /// siftdb: a range filter (Grafite) of B bits per key in every new SST
    /// (`Options::range_filter`); 0 = none. An empty range of w keys passes it with probability
    /// about w / 2^(B - 2).
    #[arg(long, default_value_t = 0.0)]
    pub range_filter_bits: f64,
    /// siftdb: the longest range, in keys, the range filter's bound holds for
    /// (`RangeFilterOptions::max_range`).
    #[arg(long, default_value_t = 16)]
    pub range_filter_max: u64,
    /// Key size in bytes: the key number as 8 big-endian bytes, padded with '0' bytes.
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Bloom filter bits per key; negative = no filter (db_bench's default -1).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    pub bloom_bits: i64,
    /// Ask for a Ribbon filter at the same FPR (applied where siftdb builds static filters).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub use_ribbon_filter: bool,
    /// Block compression: none, lz4, zstd, or snappy (db_bench's default; siftdb has no snappy
    /// and runs lz4 instead, with a note).
    #[arg(long, default_value = "snappy")]
    pub compression_type: String,
    /// db_bench: levels below this one are not compressed, the others use
    /// `--compression_type`; negative = every level uses it.
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    pub min_level_to_compress: i64,
    /// siftdb: compression per level, comma-separated (`none,none,lz4,zstd`): entry i applies to
    /// level i, the last to all deeper levels (`Options::compression_per_level`).
    #[arg(long)]
    pub compression_per_level: Option<String>,
    /// db_bench: largest zstd dictionary per SST file in bytes, 0 = none
    /// (`Options::compression_max_dict_bytes`; RocksDB's `compression_opts.max_dict_bytes`).
    #[arg(long, default_value_t = 0)]
    pub compression_max_dict_bytes: usize,
    /// db_bench: bytes of data blocks each file's dictionary is trained on; 0 = the first
    /// `--compression_max_dict_bytes` of blocks are the dictionary, untrained
    /// (`Options::compression_zstd_max_train_bytes`).
    #[arg(long, default_value_t = 0)]
    pub compression_zstd_max_train_bytes: usize,
    /// db_bench: train each dictionary with zstd's trainer (true), or finalize the trained-on
    /// blocks' last `--compression_max_dict_bytes` as the dictionary (false;
    /// `Options::compression_use_zstd_dict_trainer`).
    #[arg(long, default_value = "true", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub compression_use_zstd_dict_trainer: bool,
    /// The dictionary size of files written by bottommost compactions
    /// (`Options::bottommost_compression_max_dict_bytes`; RocksDB's
    /// `bottommost_compression_opts.max_dict_bytes`). Absent: `--compression_max_dict_bytes`.
    #[arg(long)]
    pub bottommost_compression_max_dict_bytes: Option<usize>,
    /// Training bytes of those dictionaries
    /// (`Options::bottommost_compression_zstd_max_train_bytes`). Absent:
    /// `--compression_zstd_max_train_bytes`.
    #[arg(long)]
    pub bottommost_compression_zstd_max_train_bytes: Option<usize>,
    /// db_bench: keep values of at least `--min_blob_size` bytes in blob files
    /// (`Options::blob_threshold`).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub enable_blob_files: bool,
    /// db_bench: the blob threshold in bytes (0, db_bench's default: every value).
    #[arg(long, default_value_t = 0)]
    pub min_blob_size: u32,
    /// db_bench: relocate the live values of the oldest blob files during compaction.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub enable_blob_garbage_collection: bool,
    /// db_bench: the share of the oldest blob files garbage collection relocates from
    /// (`Options::blob_gc_age_cutoff`).
    #[arg(long, default_value_t = 0.25)]
    pub blob_garbage_collection_age_cutoff: f64,
    /// Concurrent threads per benchmark, sharing one `Db`.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Bytes of memtable before a flush.
    #[arg(long, default_value_t = 64 << 20)]
    pub write_buffer_size: usize,
    /// Target SST size of compaction output.
    #[arg(long, default_value_t = 64 << 20)]
    pub target_file_size_base: u64,
    /// Bytes of L1.
    #[arg(long, default_value_t = 256 << 20)]
    pub max_bytes_for_level_base: u64,
    /// Each deeper level's target is this many times the previous one.
    #[arg(long, default_value_t = 10.0)]
    pub max_bytes_for_level_multiplier: f64,
    /// Threads one compaction may merge on (`Options::max_subcompactions`, 1..=64).
    /// db_bench's flag of the same name defaults to 1; absent here, siftdb's own default
    /// applies.
    #[arg(long)]
    pub subcompactions: Option<usize>,
    /// L0 files that trigger an L0 -> L1 compaction.
    #[arg(long, default_value_t = 4)]
    pub level0_file_num_compaction_trigger: usize,
    /// siftdb: an L0 -> base compaction waits until L0 holds this fraction of the base-level
    /// bytes it overlaps, up to half the slowdown trigger (`CompactionOptions::l0_min_base_ratio`;
    /// 0 = the trigger alone, as db_bench). Absent, siftdb's default applies.
    #[arg(long)]
    pub l0_min_base_ratio: Option<f64>,
    /// L0 files at which writes are delayed.
    #[arg(long, default_value_t = 20)]
    pub level0_slowdown_writes_trigger: usize,
    /// L0 files at which writes wait for compaction.
    #[arg(long, default_value_t = 36)]
    pub level0_stop_writes_trigger: usize,
    /// Size the levels from the last one up (`CompactionOptions::dynamic_level_bytes`; db_bench's
    /// flag, on by default in RocksDB since 8.4, off by default in siftdb).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub level_compaction_dynamic_level_bytes: bool,
    /// No background compaction (only the `compact` benchmark compacts).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub disable_auto_compactions: bool,
    /// Block cache bytes (db_bench's default 8 MiB; `Options::block_cache_bytes`). Bounds the
    /// decompressed data blocks, and with `--cache_index_and_filter_blocks` the index and filter
    /// blocks too (each entry charged what it allocates + ~115 bytes of the cache's own
    /// bookkeeping; pinned entries beyond a shard's
    /// share come on top). Not bounded by it: memtables (`--write_buffer_size` x 3), index and
    /// filter blocks kept by open tables without `--cache_index_and_filter_blocks` (up to
    /// `--open_files` tables' worth), and the page cache / mapped file pages (`--mmap_read`),
    /// which count in RSS as RssFile. The `stats` benchmark and `--statistics` print each.
    #[arg(long, default_value_t = 8 << 20)]
    pub cache_size: usize,
    /// Which data blocks enter a full block cache (`Options::block_cache_admission`):
    /// `second_miss` (siftdb's default: a block missed twice within a window of recent misses)
    /// or `all` (every block read, RocksDB's LRU cache).
    #[arg(long, default_value = "second_miss", value_parser = parse_cache_admission)]
    pub cache_admission: siftdb::CacheAdmission,
    /// Keep index and filter blocks in the block cache, charged to `--cache_size`
    /// (`Options::cache_index_and_filter_blocks`). db_bench's flag of the same name.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub cache_index_and_filter_blocks: bool,
    /// Pin L0 tables' index and filter blocks in the block cache (needs
    /// `--cache_index_and_filter_blocks`; `Options::pin_l0_filter_and_index_blocks_in_cache`).
    /// db_bench's flag of the same name.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub pin_l0_filter_and_index_blocks_in_cache: bool,
    /// Partition the filters and index blocks of compaction outputs into blocks of about
    /// `--metadata_block_size` bytes under small top-level indexes, so a lookup reads one
    /// filter partition and one index partition, not the whole filter and index
    /// (`Options::partition_filters` and `Options::partition_index`; SST format version 4).
    /// db_bench's flag of the same name.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub partition_index_and_filters: bool,
    /// Target bytes of a filter or index partition with `--partition_index_and_filters`
    /// (`Options::metadata_block_size`, 512..=1048576). db_bench's flag of the same name.
    #[arg(long, default_value_t = 4096)]
    pub metadata_block_size: usize,
    /// fsync every write.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub sync: bool,
    /// Database directory (default: a fresh temporary directory, removed at exit). A new or
    /// empty directory is used as is (bench marks its database with a SIFTDB-BENCH file); a
    /// database an earlier bench run created is deleted first with `Db::destroy` (unless
    /// `--use_existing_db`); any other siftdb database only with `--destroy_existing_db`; a
    /// directory holding anything else is refused.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Let a fresh run delete (with `Db::destroy`, siftdb's own files only) a siftdb database
    /// at `--db` that bench did not create. db_bench's flag of the same name.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub destroy_existing_db: bool,
    /// Keep the database at `--db` instead of starting fresh (fill benchmarks then refuse to run).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub use_existing_db: bool,
    /// Print RocksDB-named tickers and the per-level read counters at the end.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub statistics: bool,
    /// Time every read of readrandom, readmissing and readwhilewriting and print p50, p99,
    /// p99.9 and max under the result line (db_bench's flag; about 40 ns of clock reads per
    /// operation).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub histogram: bool,
    /// readwhilewriting: the writer's rate in bytes per second (key + value), 0 = as fast as
    /// it can (db_bench's `--benchmark_write_rate_limit`).
    #[arg(long, default_value_t = 0)]
    pub benchmark_write_rate_limit: u64,
    /// ingest: keys per `SstWriter` file (siftdb-bench-kit's `ingest` plan; rocksdb-bench
    /// takes the same flag).
    #[arg(long, default_value_t = siftdb_bench_kit::ingest::DEFAULT_KEYS_PER_FILE)]
    pub ingest_keys_per_file: u64,
    /// Seed base of the per-thread random generators (thread i uses seed + i).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// rangeempty and prefixscan: the `--seed` of the process whose fillrandom wrote the
    /// database (its first thread's draws are the keys known to exist; key_layout.rs).
    /// Default: `--seed`.
    #[arg(long)]
    pub fill_seed: Option<u64>,
    /// siftdb: filter of flushed (L0) SSTs. Default: `blocked` when `--bloom_bits` >= 0 (the
    /// same filter family RocksDB uses, for a like-for-like run), else `none`.
    #[arg(long, value_enum)]
    pub flush_filter: Option<FlushFilter>,
    /// siftdb: bits per key of `--flush_filter` (default: `--bloom_bits`, or 16 for two_bit).
    #[arg(long)]
    pub flush_bits: Option<f64>,
    /// siftdb: filter of compaction outputs (L1 and deeper). With `--bloom_bits` >= 0 the
    /// default is `bumped_ribbon` at the FPR a blocked Bloom filter reaches with `--bloom_bits`
    /// (the same FPR as RocksDB's Bloom, in about a third less memory; `ribbon` with
    /// `--use_ribbon_filter`); with `--bloom_bits` < 0, `none`.
    #[arg(long, value_enum)]
    pub compaction_filter: Option<CompactionFilter>,
    /// siftdb: per-level FPRs as fingerprint widths, L1 first, the last repeating for deeper
    /// levels (Pebble's `16,16,12,10,8,4`): level i gets FPR 2^-w_i. Exact widths with
    /// `--compaction_filter=packed_binary_fuse`, the same FPRs with `ribbon`, `bumped_ribbon`,
    /// `blocked` or
    /// `standard`. Each width 1..=32.
    #[arg(long)]
    pub fingerprint_bits: Option<String>,
    /// siftdb: split the compacted levels' filter memory by Monkey's rule (same total bits per
    /// key as the per-level budget) instead of one FPR on every level.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub monkey: bool,
    /// siftdb: one filter budget of B bits per key over every run, L0 included
    /// (`FilterAllocation::AllRuns`): the flush and compaction filters keep their kinds, their
    /// bits per key come from the allocation.
    #[arg(long)]
    pub all_runs_bits: Option<f64>,
    /// siftdb: `--all_runs_bits` weighted by the lookups each level serves, observed since open
    /// (`FilterAllocation::SkewAware`).
    #[arg(long)]
    pub skew_aware_bits: Option<f64>,
    /// No filter on the deepest level (RocksDB's flag of the same name,
    /// `FilterPolicy::optimize_filters_for_hits`).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub optimize_filters_for_hits: bool,
    /// siftdb: zstd level when `--compression_type=zstd` (RocksDB's default level is 3).
    #[arg(long, default_value_t = 3)]
    pub zstd_level: i32,
    /// Memory-map SSTs and read blocks from the map (`Options::mmap_reads`). db_bench's flag of
    /// the same name defaults to false; absent here, siftdb's own default applies.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub mmap_read: Option<bool>,
    /// siftdb: put the filters that open tables hold on transparent huge pages
    /// (`Options::filters_on_huge_pages`; no db_bench equivalent). Absent, siftdb's own default
    /// (on) applies.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub huge_page_filters: Option<bool>,
    /// Append the write-ahead log through a memory map (`Options::mmap_wal`; siftdb maps the WAL
    /// only). db_bench's flag of the same name (RocksDB's `allow_mmap_writes`) defaults to
    /// false; absent here, siftdb's own default (on, on 64-bit Linux) applies.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub mmap_write: Option<bool>,
    /// Tables kept open at once (`Options::max_open_files`): -1 = unlimited, else 16 or more.
    /// db_bench's flag of the same name defaults to RocksDB's -1; absent here, siftdb's own
    /// default (half the soft descriptor limit) applies.
    #[arg(long, allow_hyphen_values = true)]
    pub open_files: Option<i32>,
    /// Read SSTs with O_DIRECT (`Options::direct_reads`; Linux only): block-cache misses are
    /// device reads. Overrides `--mmap_read`. db_bench's flag of the same name.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub use_direct_reads: bool,
    /// Write the SSTs of flushes and compactions with O_DIRECT
    /// (`Options::direct_io_for_flush_and_compaction`). db_bench's flag of the same name.
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub use_direct_io_for_flush_and_compaction: bool,
    /// Keep each data block within one 4 KiB page (`Options::block_align`), so a direct read
    /// of a block is one page. db_bench's flag of the same name (which RocksDB allows only
    /// without compression; siftdb's works with it).
    #[arg(long, default_value = "false", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pub block_align: bool,
}

impl Flags {
    /// Reads per thread of the read benchmarks.
    pub fn reads(&self) -> u64 {
        if self.reads < 0 {
            self.num
        } else {
            self.reads as u64
        }
    }

    /// The benchmark names, in order.
    pub fn benchmark_list(&self) -> Vec<String> {
        self.benchmarks.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    }

    /// The flush filter the flags select.
    pub fn flush_filter(&self) -> FilterConfig {
        let kind = self.flush_filter.unwrap_or(if self.bloom_bits >= 0 {
            FlushFilter::Blocked
        } else {
            FlushFilter::None
        });
        let default_bits = match kind {
            FlushFilter::TwoBit if self.bloom_bits < 0 => 16.0,
            _ => self.bloom_bits.max(0) as f64,
        };
        let bits_per_key = self.flush_bits.unwrap_or(default_bits);
        match kind {
            _ if bits_per_key <= 0.0 => FilterConfig::None,
            FlushFilter::None => FilterConfig::None,
            FlushFilter::TwoBit => FilterConfig::TwoBitBloom { bits_per_key },
            FlushFilter::Blocked => FilterConfig::BlockedBloom { bits_per_key },
            FlushFilter::Standard => FilterConfig::StandardBloom { bits_per_key },
        }
    }
}

/// FPR of a 512-bit-block Bloom filter at `bits_per_key` with its optimal probe count: what
/// RocksDB's cache-local Bloom filter reaches with `--bloom_bits` (0.95% at 10).
pub fn blocked_bloom_fpr_at(bits_per_key: f64) -> f64 {
    let k = cost::blocked_optimal_probes(512, bits_per_key, 16);
    cost::blocked_bloom_fpr(512, 512.0 / bits_per_key, k)
}

/// `--fingerprint_bits`: comma-separated widths 1..=32, as per-level FPRs `2^-w`.
fn parse_fingerprint_bits(list: &str) -> Result<Vec<LevelBudget>, String> {
    let widths: Vec<u32> = list
        .split(',')
        .map(|w| match w.trim().parse::<u32>() {
            Ok(w) if (1..=32).contains(&w) => Ok(w),
            _ => Err(format!("--fingerprint_bits value {w:?} is out of range: an integer 1..=32")),
        })
        .collect::<Result<_, _>>()?;
    Ok(widths.into_iter().map(|w| LevelBudget::Fpr(2f64.powi(-(w as i32)))).collect())
}

impl Flags {
    /// The compaction-output filter kind and per-level budget the flags select.
    pub fn compaction_filter(&self) -> Result<(StaticFilterKind, FilterAllocation), String> {
        let default = if self.use_ribbon_filter {
            CompactionFilter::Ribbon
        } else if self.bloom_bits >= 0 {
            CompactionFilter::BumpedRibbon
        } else {
            CompactionFilter::None
        };
        let choice = self.compaction_filter.unwrap_or(default);
        if self.use_ribbon_filter && choice != CompactionFilter::Ribbon {
            return Err(format!("--use_ribbon_filter contradicts --compaction_filter={choice:?}"));
        }
        let bits = self.bloom_bits.max(0) as f64;
        let per_level_widths =
            self.fingerprint_bits.as_deref().map(parse_fingerprint_bits).transpose()?;
        if per_level_widths.is_some() && choice == CompactionFilter::None {
            return Err("--fingerprint_bits needs a compaction filter: give --bloom_bits or \
                        --compaction_filter"
                .into());
        }
        // A kind whose fingerprint width fixes its FPR gets that FPR.
        let fixed = |kind: StaticFilterKind| {
            (kind, LevelBudget::Fpr(kind.fixed_fpr().expect("a fixed-width fingerprint kind")))
        };
        let (kind, budget) = match choice {
            CompactionFilter::None => {
                return Ok((StaticFilterKind::None, FilterAllocation::PerLevel(vec![])))
            }
            CompactionFilter::Ribbon if bits > 0.0 => {
                (StaticFilterKind::Ribbon, LevelBudget::Fpr(blocked_bloom_fpr_at(bits)))
            }
            // db_bench's --use_ribbon_filter without --bloom_bits: its default 10 bits' FPR.
            CompactionFilter::Ribbon => {
                (StaticFilterKind::Ribbon, LevelBudget::Fpr(blocked_bloom_fpr_at(10.0)))
            }
            CompactionFilter::BumpedRibbon => (
                StaticFilterKind::BumpedRibbon,
                LevelBudget::Fpr(blocked_bloom_fpr_at(if bits > 0.0 { bits } else { 10.0 })),
            ),
            CompactionFilter::BinaryFuse8 => fixed(StaticFilterKind::BinaryFuse8),
            CompactionFilter::BinaryFuse16 => fixed(StaticFilterKind::BinaryFuse16),
            CompactionFilter::BinaryFuse4Wise8 => fixed(StaticFilterKind::BinaryFuse4Wise8),
            CompactionFilter::BinaryFuse4Wise16 => fixed(StaticFilterKind::BinaryFuse4Wise16),
            CompactionFilter::PackedBinaryFuse => (
                StaticFilterKind::PackedBinaryFuse,
                LevelBudget::Fpr(blocked_bloom_fpr_at(if bits > 0.0 { bits } else { 10.0 })),
            ),
            CompactionFilter::Xor8 => fixed(StaticFilterKind::Xor8),
            CompactionFilter::Xor16 => fixed(StaticFilterKind::Xor16),
            CompactionFilter::Blocked | CompactionFilter::Standard if bits <= 0.0 => {
                return Err("--compaction_filter=blocked|standard needs --bloom_bits > 0".into())
            }
            CompactionFilter::Blocked => {
                (StaticFilterKind::BlockedBloom, LevelBudget::BitsPerKey(bits))
            }
            CompactionFilter::Standard => {
                (StaticFilterKind::StandardBloom, LevelBudget::BitsPerKey(bits))
            }
        };
        let chosen = [self.monkey, self.all_runs_bits.is_some(), self.skew_aware_bits.is_some()];
        if chosen.iter().filter(|&&c| c).count() > 1 {
            return Err("--monkey, --all_runs_bits and --skew_aware_bits contradict each other \
                        (one allocation at a time)"
                .into());
        }
        if let Some(budgets) = per_level_widths {
            if chosen.iter().any(|&c| c) || kind.fixed_fpr().is_some() {
                return Err(format!(
                    "--fingerprint_bits sets each level's FPR: it contradicts --monkey, \
                     --all_runs_bits, --skew_aware_bits and --compaction_filter={choice:?}"
                ));
            }
            return Ok((kind, FilterAllocation::PerLevel(budgets)));
        }
        if let Some(bits_per_key) = self.all_runs_bits {
            return Ok((kind, FilterAllocation::AllRuns { bits_per_key }));
        }
        if let Some(bits_per_key) = self.skew_aware_bits {
            return Ok((kind, FilterAllocation::SkewAware { bits_per_key }));
        }
        if !self.monkey {
            return Ok((kind, FilterAllocation::PerLevel(vec![budget])));
        }
        if kind.fixed_fpr().is_some() {
            return Err(
                "--monkey needs a filter with a tunable FPR (ribbon, bumped_ribbon, packed_binary_fuse, blocked, \
                 standard)"
                    .into(),
            );
        }
        // Monkey gets the same total memory as the uniform budget.
        let bits_per_key = match budget {
            LevelBudget::BitsPerKey(b) => b,
            LevelBudget::Fpr(p) => kind.bits_per_log2() * (1.0 / p).log2(),
        };
        Ok((kind, FilterAllocation::Monkey { bits_per_key }))
    }
}

/// Maps the db_bench flags onto siftdb's [`Options`].
pub fn apply_db_bench_flags(flags: &Flags, opts: &mut Options) -> Result<(), String> {
    opts.memtable_size = flags.write_buffer_size;
    opts.block_cache_bytes = flags.cache_size;
    opts.block_cache_admission = flags.cache_admission;
    opts.cache_index_and_filter_blocks = flags.cache_index_and_filter_blocks;
    opts.pin_l0_filter_and_index_blocks_in_cache = flags.pin_l0_filter_and_index_blocks_in_cache;
    opts.partition_filters = flags.partition_index_and_filters;
    opts.partition_index = flags.partition_index_and_filters;
    opts.metadata_block_size = flags.metadata_block_size;
    if let Some(m) = flags.mmap_read {
        opts.mmap_reads = m;
    }
    if let Some(m) = flags.mmap_write {
        opts.mmap_wal = m;
    }
    if let Some(h) = flags.huge_page_filters {
        opts.filters_on_huge_pages = h;
    }
    opts.direct_reads = flags.use_direct_reads;
    opts.direct_io_for_flush_and_compaction = flags.use_direct_io_for_flush_and_compaction;
    opts.block_align = flags.block_align;
    if let Some(n) = flags.open_files {
        let min = siftdb::options::MIN_MAX_OPEN_FILES;
        if n != -1 && n < min {
            return Err(format!("--open_files={n} is out of range: -1 (unlimited) or >= {min}"));
        }
        opts.max_open_files = n;
    }
    if let Some(n) = flags.subcompactions {
        opts.max_subcompactions = n;
    }
    apply_scan_filter_flags(flags, opts)?;
    super::compression::apply(flags, opts)?;
    super::blob::apply(flags, opts)?;
    opts.filter_policy.flush = flags.flush_filter();
    let (kind, allocation) = flags.compaction_filter()?;
    opts.filter_policy.compaction = kind;
    opts.filter_policy.allocation = allocation;
    opts.filter_policy.optimize_filters_for_hits = flags.optimize_filters_for_hits;
    // Ranges (memtable size, level sizes, multiplier, L0 triggers, filter budgets) are checked
    // once, by `Options::validate`, which `bench::run` calls on the result.
    let trig = (
        flags.level0_file_num_compaction_trigger,
        flags.level0_slowdown_writes_trigger,
        flags.level0_stop_writes_trigger,
    );
    let c = &mut opts.compaction;
    c.auto = !flags.disable_auto_compactions;
    c.target_file_size = flags.target_file_size_base;
    c.max_bytes_for_level_base = flags.max_bytes_for_level_base;
    c.max_bytes_for_level_multiplier = flags.max_bytes_for_level_multiplier;
    c.dynamic_level_bytes = flags.level_compaction_dynamic_level_bytes;
    (c.l0_compaction_trigger, c.l0_slowdown_writes_trigger, c.l0_stop_writes_trigger) = trig;
    if let Some(r) = flags.l0_min_base_ratio {
        c.l0_min_base_ratio = r;
    }
    Ok(())
}

/// `--prefix_size`, `--range_filter_bits` and `--range_filter_max` onto the scan filters
/// (design.md#scan-filters); the bits' range is `Options::validate`'s.
fn apply_scan_filter_flags(flags: &Flags, opts: &mut Options) -> Result<(), String> {
    check_prefix_size(flags.prefix_size, flags.key_size)?;
    if flags.prefix_size > 0 {
        opts.prefix_extractor = Some(Arc::new(FixedPrefix::new(flags.prefix_size)));
    }
    let bits = flags.range_filter_bits;
    if bits.is_nan() || bits < 0.0 {
        return Err(format!("--range_filter_bits={bits} is out of range: 0 (none) or 4..=40"));
    }
    if bits > 0.0 {
        let max_range = flags.range_filter_max;
        opts.range_filter = Some(RangeFilterOptions { bits_per_key: bits, max_range });
    }
    Ok(())
}
