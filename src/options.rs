//! Engine options. Every field states its default and its trade-off.

pub use crate::options_validate::{
    BITS_PER_KEY_MAX, BLOCK_SIZE_RANGE, MAX_IMMUTABLE_RANGE, MAX_MEMTABLE_SIZE, MIN_FILE_SIZE,
    MIN_FPR, MIN_MEMTABLE_SIZE, MULTIPLIER_MAX, RESTART_INTERVAL_RANGE, ZSTD_LEVEL_RANGE,
};
use crate::storage::Storage;
use std::sync::Arc;

/// Which data blocks read from files go into a full block cache ([`Options::block_cache_admission`],
/// design.md#block-cache). Until the cache first evicts, every block read goes in either way;
/// index and filter blocks (`cache_index_and_filter_blocks`) always do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheAdmission {
    /// Every block read from a file (an LRU cache, as RocksDB's).
    All,
    /// A block missed a second time within a window of recent misses (about twice the blocks
    /// the cache holds): TinyLFU's doorkeeper. Reads spread over far more data than the cache
    /// then decode into warm buffers instead of inserting and evicting a block each, while
    /// blocks read repeatedly are cached from their second miss. The window takes
    /// `block_cache_bytes / 512` bytes beside the cache (at least 4 KiB, at most 64 MiB).
    #[default]
    SecondMiss,
}

/// Per-block compression of SST data blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Blocks stored as is: fastest reads, largest files.
    None,
    /// zstd at the given level (1..=22). A block is stored compressed only if that saves at
    /// least 12.5%. Smaller files and fewer bytes read, at the cost of decompression per block
    /// read that misses the block cache.
    Zstd(i32),
    /// LZ4 (block format). A block is stored compressed only if that saves at least 12.5%.
    /// Compresses less than zstd but costs far less CPU (db_bench's half-compressible values,
    /// 2M keys: 89 MB on disk against zstd's 75 MB and 156 MB uncompressed; a full compaction
    /// about half as long as with zstd), so it suits the upper levels, rewritten soon.
    Lz4,
}

/// A filter to attach to an SST, with its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FilterConfig {
    /// No filter: every lookup of a key inside the file's key range reads an index and a data
    /// block.
    None,
    /// Floe's two-bit Bloom filter (two bits in one u32 word) at this many bits per key. Its FPR
    /// is higher than a classic Bloom filter's at equal memory (about 4.0% at 10 bits/key, 1.9%
    /// at 16), but the memtable fills it lock-free, so a flush can write it without a second pass.
    TwoBitBloom {
        /// Bits per key.
        bits_per_key: f64,
    },
    /// RocksDB-style cache-line-blocked Bloom filter (about 0.95% FPR at 10 bits/key).
    BlockedBloom {
        /// Bits per key.
        bits_per_key: f64,
    },
    /// Classic Bloom filter (about 0.82% at 10 bits/key, k probes in different cache lines).
    StandardBloom {
        /// Bits per key.
        bits_per_key: f64,
    },
}

impl FilterConfig {
    /// Bits per key of this configuration (0 for `None`).
    pub fn bits_per_key(&self) -> f64 {
        match *self {
            FilterConfig::None => 0.0,
            FilterConfig::TwoBitBloom { bits_per_key }
            | FilterConfig::BlockedBloom { bits_per_key }
            | FilterConfig::StandardBloom { bits_per_key } => bits_per_key,
        }
    }

    /// The same kind at `bits_per_key` (`None` stays `None`; 0 bits make it `None`).
    pub fn with_bits_per_key(self, bits_per_key: f64) -> FilterConfig {
        match self {
            _ if bits_per_key <= 0.0 => FilterConfig::None,
            FilterConfig::None => FilterConfig::None,
            FilterConfig::TwoBitBloom { .. } => FilterConfig::TwoBitBloom { bits_per_key },
            FilterConfig::BlockedBloom { .. } => FilterConfig::BlockedBloom { bits_per_key },
            FilterConfig::StandardBloom { .. } => FilterConfig::StandardBloom { bits_per_key },
        }
    }
}

/// The filter family of compaction outputs (files of levels 1 and deeper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaticFilterKind {
    /// Standard Ribbon (`siftdb::filter::Ribbon`): about `1.05 log2(1/FPR)` bits per key, any
    /// FPR in `[2^-32, 1/2]`; builds about 3x faster than `BumpedRibbon`. The default
    /// until filter tag 17.
    Ribbon,
    /// Bumped Ribbon (`siftdb::filter::BumpedRibbon`, BuRR): the same FPRs and probe as
    /// Ribbon in about `1.01 log2(1/FPR)` bits per key (3-4.4% fewer than Ribbon), at a build
    /// time about 3x Ribbon's. The default. A siftdb older than filter tag 17 reads such
    /// files without their filter, and refuses a manifest whose keyspace options name this kind
    /// (docs/format.md#bumped-ribbon).
    BumpedRibbon,
    /// Binary fuse filter, 8-bit fingerprints: FPR fixed at `2^-8` (0.39%), about 9 bits/key.
    BinaryFuse8,
    /// Binary fuse filter, 16-bit fingerprints: FPR `2^-16`, about 18 bits/key.
    BinaryFuse16,
    /// 4-wise binary fuse filter, 8-bit fingerprints: FPR `2^-8`, about 8.6 bits/key at a
    /// million keys (5% less than `BinaryFuse8`; one more memory access per query). A siftdb
    /// older than filter tags 14 and 15 reads such files without their filter, and refuses a
    /// manifest whose keyspace options name this kind (docs/format.md#binary-fuse4).
    BinaryFuse4Wise8,
    /// 4-wise binary fuse filter, 16-bit fingerprints: FPR `2^-16`, about 17.2 bits/key.
    BinaryFuse4Wise16,
    /// 4-wise binary fuse filter with bit-packed fingerprints of any width `w` from 1 to 32
    /// (`siftdb::filter::PackedBinaryFuse`): each level's width is `round(log2(1/FPR))` of the
    /// FPR its budget or allocation gives it, so levels get different widths (Pebble's
    /// 16/16/16/12/10/8/4 is `PerLevel` of `Fpr(2^-16)`, ..., `Fpr(2^-4)`), at about `1.075 w`
    /// bits per key. A siftdb older than filter tag 16 reads such files without their filter,
    /// and refuses a manifest whose keyspace options name this kind
    /// (docs/format.md#packed-binary-fuse).
    PackedBinaryFuse,
    /// Xor filter, 8-bit fingerprints: FPR `2^-8`, 9.84 bits/key.
    Xor8,
    /// Xor filter, 16-bit fingerprints: FPR `2^-16`, 19.7 bits/key.
    Xor16,
    /// Cache-line-blocked Bloom filter (any budget; about 1.5 `log2(1/FPR)` bits per key).
    BlockedBloom,
    /// Classic Bloom filter (`1.44 log2(1/FPR)` bits per key).
    StandardBloom,
    /// No filter on compacted levels.
    None,
}

impl StaticFilterKind {
    /// Every kind that builds a filter (all but [`StaticFilterKind::None`]).
    pub const FILTERS: [StaticFilterKind; 11] = [
        StaticFilterKind::Ribbon,
        StaticFilterKind::BumpedRibbon,
        StaticFilterKind::BinaryFuse8,
        StaticFilterKind::BinaryFuse16,
        StaticFilterKind::BinaryFuse4Wise8,
        StaticFilterKind::BinaryFuse4Wise16,
        StaticFilterKind::PackedBinaryFuse,
        StaticFilterKind::Xor8,
        StaticFilterKind::Xor16,
        StaticFilterKind::BlockedBloom,
        StaticFilterKind::StandardBloom,
    ];

    /// Whether the kind's FPR is fixed by its fingerprint width (the per-level budget and Monkey
    /// allocation do not apply).
    pub fn fixed_fpr(self) -> Option<f64> {
        match self {
            StaticFilterKind::BinaryFuse8
            | StaticFilterKind::BinaryFuse4Wise8
            | StaticFilterKind::Xor8 => Some(2f64.powi(-8)),
            StaticFilterKind::BinaryFuse16
            | StaticFilterKind::BinaryFuse4Wise16
            | StaticFilterKind::Xor16 => Some(2f64.powi(-16)),
            _ => None,
        }
    }

    /// The filter library's kind this builds (`None` for [`StaticFilterKind::None`]).
    pub fn filter_kind(self) -> Option<crate::filter::FilterKind> {
        use crate::filter::FilterKind;
        Some(match self {
            StaticFilterKind::Ribbon => FilterKind::Ribbon,
            StaticFilterKind::BumpedRibbon => FilterKind::BumpedRibbon,
            StaticFilterKind::BinaryFuse8 => FilterKind::BinaryFuse8,
            StaticFilterKind::BinaryFuse16 => FilterKind::BinaryFuse16,
            StaticFilterKind::BinaryFuse4Wise8 => FilterKind::BinaryFuse4Wise8,
            StaticFilterKind::BinaryFuse4Wise16 => FilterKind::BinaryFuse4Wise16,
            StaticFilterKind::PackedBinaryFuse => FilterKind::PackedBinaryFuse,
            StaticFilterKind::Xor8 => FilterKind::Xor8,
            StaticFilterKind::Xor16 => FilterKind::Xor16,
            StaticFilterKind::BlockedBloom => FilterKind::BlockedBloom,
            StaticFilterKind::StandardBloom => FilterKind::StandardBloom,
            StaticFilterKind::None => return None,
        })
    }

    /// Bits per key the kind spends per bit of `log2(1/FPR)` (the `c` of design.md#monkey):
    /// the filter library's cost model, [`crate::filter::FilterKind::bits_per_log2`];
    /// 0 for [`StaticFilterKind::None`].
    pub fn bits_per_log2(self) -> f64 {
        self.filter_kind().and_then(|k| k.bits_per_log2()).unwrap_or(0.0)
    }

    /// [`StaticFilterKind::bits_per_log2`] for filters of `keys` keys each
    /// ([`crate::filter::FilterKind::bits_per_log2_at`]); 0 for [`StaticFilterKind::None`].
    pub(crate) fn bits_per_log2_at(self, keys: f64) -> f64 {
        self.filter_kind().and_then(|k| k.bits_per_log2_at(keys)).unwrap_or(0.0)
    }
}

/// The filter budget of one level of compacted files.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LevelBudget {
    /// A target false-positive rate.
    Fpr(f64),
    /// A memory budget in filter bits per distinct key, converted to the FPR the kind reaches
    /// with it: `FPR = 2^-(bits / c)` with `c` from [`StaticFilterKind::bits_per_log2`].
    BitsPerKey(f64),
}

/// How the FPR of each compacted level is chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterAllocation {
    /// A budget per level, `[L1, L2, ...]`; the last entry repeats for deeper levels. An empty
    /// list means `Fpr(0.01)`.
    PerLevel(Vec<LevelBudget>),
    /// Monkey (Dayan, Athanassoulis and Idreos, SIGMOD 2017): a total budget of
    /// `bits_per_key` filter bits per entry over levels 1 and deeper, split so that each level's
    /// FPR is proportional to its number of entries (the optimum of the sum of FPRs a
    /// missing-key lookup pays; design.md#monkey), but no worse than a classic Bloom filter of
    /// `bits_per_key` on any level. L0 files keep the flush filter, held to the same floor (a
    /// two-bit filter that misses it becomes a blocked Bloom filter that reaches it).
    Monkey {
        /// Average filter bits per entry over all compacted levels.
        bits_per_key: f64,
    },
    /// Every run of the tree, L0 included (design.md#all-runs): a total
    /// budget of `bits_per_key` filter bits per key over L0 and every level, split so that a
    /// missing-key lookup's expected wasted block reads are smallest, each run on its own
    /// kind's FPR curve. L0 counts as the L0 files the tree has (plus the memtables on their way
    /// there), and while writes go on at least `(l0_compaction_trigger - 1) / 2` files of one
    /// memtable's keys, L0's mean occupancy; a compacted or read-mostly tree keeps nothing back
    /// for L0. No run, L0's included, gets a worse FPR than a classic Bloom filter of
    /// `bits_per_key` (0.82% at 10). The flush filter takes its bits per key from the allocation
    /// (the `bits_per_key` in [`FilterPolicy::flush`] is not used) and keeps its kind unless it
    /// is a two-bit filter that cannot reach that floor at its share: L0 files then get a
    /// blocked Bloom filter (one cache line per probe, as the two-bit one). Each compaction
    /// output's FPR is derived from the tree's shape when it is written.
    AllRuns {
        /// Average filter bits per key over every run.
        bits_per_key: f64,
    },
    /// [`FilterAllocation::AllRuns`] weighted by the lookups each level really serves
    /// (skew-aware; design.md#skew-aware): a level's filter saves a block read
    /// only for lookups of keys the level does not hold, so each level's term in the expected
    /// wasted reads is weighted by its share of such lookups since the database was opened
    /// (`ReadStats::absent_key_lookups` over the lookups, smoothed towards 1 while few lookups
    /// have been seen). Lookups that mostly find their key in upper levels move memory up; a
    /// level no lookup asks about a key it lacks gets no filter (what
    /// [`FilterPolicy::optimize_filters_for_hits`] asserts up front). L0 runs keep weight 1.
    SkewAware {
        /// Average filter bits per key over every run.
        bits_per_key: f64,
    },
}

/// Which filter each SST gets.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPolicy {
    /// Filter of the L0 files written by a flush. Defaults to a two-bit Bloom filter sized by
    /// the default all-runs allocation (its `bits_per_key` is then not read): the memtable's
    /// own lock-free filter is written as is when it has the planned size and its fill keeps
    /// the estimated FPR within the planned one (design.md#flush), so a flush
    /// costs no extra insertion pass. Under `AllRuns` and `Monkey` an L0 file is held to the
    /// classic Bloom FPR of the budget like every other file; where the two-bit filter cannot
    /// reach it at L0's share (at 10 bits per key it would need about 29), the flush builds a
    /// blocked Bloom filter instead. L0 files are few and short-lived; their filters are
    /// replaced by static filters at compaction.
    pub flush: FilterConfig,
    /// Filter kind of every compaction output. Default [`StaticFilterKind::BumpedRibbon`]: the
    /// key set of an output file is known when it is finished, so a static filter (built once
    /// from the collected hashes) gives the lowest memory per FPR. If a static construction fails
    /// after its retries, the file gets a blocked Bloom filter of the same bits per key and
    /// `Stats::filter_fallbacks` counts it.
    pub compaction: StaticFilterKind,
    /// How filter memory is shared between runs. Default `AllRuns { bits_per_key: 10.0 }`:
    /// RocksDB's customary 10 bits per key, over every run of the tree (the L0 files there are
    /// and each level), split so that a missing-key lookup reads the fewest blocks
    /// (design.md#all-runs; `siftdb readamp` compares it with the other policies at
    /// equal memory). `PerLevel([Fpr(0.01)])` is the simple alternative: 1% on every level
    /// (about 7 bits per key with Ribbon).
    pub allocation: FilterAllocation,
    /// RocksDB's `optimize_filters_for_hits`: compaction outputs to the deepest level of the
    /// tree get no filter (most of the filter memory, often 90%), for workloads whose lookups
    /// almost always find their key: a filter on the level that holds the key answers "maybe"
    /// anyway. Lookups of missing keys then read a block in the deepest level. Under
    /// [`FilterAllocation::Monkey`], `AllRuns` and `SkewAware` the deepest level's keys also
    /// leave the budget, so the other runs keep the bits per key they would get without it.
    /// Files written while their level was the deepest keep no filter after a deeper level
    /// appears, until a compaction rewrites them (as in RocksDB). Default `false`.
    pub optimize_filters_for_hits: bool,
}

impl Default for FilterPolicy {
    fn default() -> Self {
        FilterPolicy {
            flush: FilterConfig::TwoBitBloom { bits_per_key: 10.0 },
            compaction: StaticFilterKind::BumpedRibbon,
            allocation: FilterAllocation::AllRuns { bits_per_key: 10.0 },
            optimize_filters_for_hits: false,
        }
    }
}

/// Leveled compaction settings (defaults are RocksDB's).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionOptions {
    /// Run compactions on the background thread after flushes. Default `true`. With `false`
    /// only [`crate::Db::compact`] and [`crate::Db::compact_range`] compact, and writes never
    /// stall on L0 (tests use this to control when compactions happen).
    pub auto: bool,
    /// L0 files that trigger an L0 -> L1 compaction (score = files / trigger). Default 4.
    pub l0_compaction_trigger: usize,
    /// An L0 -> base compaction waits until L0 holds at least this fraction of the base-level
    /// bytes its files overlap, up to `l0_slowdown_writes_trigger / 2` files (design.md#compaction,
    /// "Picking"): each L0 byte then costs at most `1 + 1 / ratio` writes in that step instead of
    /// the `1 + base / (trigger x flush)` of a fixed trigger. 0 compacts at
    /// `l0_compaction_trigger` alone, as LevelDB and RocksDB do. The wait ends early once
    /// writes have stopped for a second, or once scans have read as many bytes of the waiting
    /// L0 files as the compaction would rewrite. Default 1.0.
    pub l0_min_base_ratio: f64,
    /// L0 files at which each write batch is delayed by 1 ms. Default 20.
    pub l0_slowdown_writes_trigger: usize,
    /// L0 files at which writes wait for compaction. Default 36.
    pub l0_stop_writes_trigger: usize,
    /// Target bytes of L1. Default 256 MiB (RocksDB's `max_bytes_for_level_base`).
    pub max_bytes_for_level_base: u64,
    /// Each deeper level's target is this many times the previous one. Default 10.
    pub max_bytes_for_level_multiplier: f64,
    /// Compaction output files are cut at the first user-key boundary past this size. Default
    /// 64 MiB (RocksDB's `target_file_size_base`).
    pub target_file_size: u64,
    /// Size the levels from the last one up (RocksDB's `level_compaction_dynamic_level_bytes`,
    /// design.md#dynamic-level-sizing): the last level's target is its size, each level above
    /// a multiplier smaller, and L0 compacts straight into the highest level whose target
    /// reaches `max_bytes_for_level_base` (the base level); the levels between L0 and it stay
    /// empty. The tree then has the fewest levels its data needs and about 90% of it in the
    /// last level, where static targets can leave the last level smaller than the one above
    /// and pay a level's rewrite for nothing. Default `false` (static targets
    /// [`CompactionOptions::level_target_bytes`]).
    pub dynamic_level_bytes: bool,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            auto: true,
            l0_compaction_trigger: 4,
            l0_min_base_ratio: 1.0,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size: 64 << 20,
            dynamic_level_bytes: false,
        }
    }
}

impl CompactionOptions {
    /// Target bytes of level `level >= 1`: `base * multiplier^(level - 1)`.
    pub fn level_target_bytes(&self, level: usize) -> f64 {
        self.max_bytes_for_level_base as f64
            * self.max_bytes_for_level_multiplier.powi(level.saturating_sub(1) as i32)
    }

    /// The target bytes of every level of a tree whose levels hold `level_bytes` (index =
    /// level; index 0, L0, is scored by file count and gets infinity), and the level L0
    /// compacts into. Static: [`CompactionOptions::level_target_bytes`], base level 1.
    /// Dynamic ([`CompactionOptions::dynamic_level_bytes`], RocksDB's
    /// `VersionStorageInfo::CalculateBaseBytes`): with `B` = `max_bytes_for_level_base`, `m` the
    /// multiplier, `S` the largest level's bytes and `F` the first non-empty level below L0,
    /// the size `S / m^(last - F)` that level `F` would have is moved up a level (and divided
    /// by `m`) while it exceeds `B` and a level above `F` is free; the level it stops at is the
    /// base level. From that size (clamped to `[B / m, B]`) each deeper level's size is `m`
    /// times the one above, and every target is that size but never below `B` (smaller
    /// levels would be favoured over L0, which then stalls), so the last level's target is
    /// about `S`. Levels above the base level get infinity: they are
    /// empty, and no compaction writes into them. An empty tree's base level is the last.
    pub fn level_targets(&self, level_bytes: &[u64]) -> (Vec<f64>, usize) {
        let n = level_bytes.len();
        let mut targets = vec![f64::INFINITY; n];
        if n < 2 {
            return (targets, 1);
        }
        let last = n - 1;
        if !self.dynamic_level_bytes {
            for (l, t) in targets.iter_mut().enumerate().skip(1) {
                *t = self.level_target_bytes(l);
            }
            return (targets, 1);
        }
        let (base_max, m) =
            (self.max_bytes_for_level_base as f64, self.max_bytes_for_level_multiplier);
        let Some(first) = (1..n).find(|&l| level_bytes[l] > 0) else {
            targets[last] = base_max;
            return (targets, last);
        };
        let largest = level_bytes[1..].iter().copied().max().unwrap_or(0) as f64;
        let mut size = largest / m.powi((last - first) as i32);
        let mut base = first;
        while base > 1 && size > base_max {
            base -= 1;
            size /= m;
        }
        let mut t = size.clamp(base_max / m, base_max);
        for (l, target) in targets.iter_mut().enumerate().skip(base) {
            if l > base {
                t *= m;
            }
            *target = t.max(base_max);
        }
        (targets, base)
    }
}

/// Default of [`Options::mmap_reads`].
const MMAP_READS_DEFAULT: bool = cfg!(all(unix, target_pointer_width = "64"));

/// Default of [`Options::max_open_files`]: as many tables as the descriptor limit allows, since
/// `Db::open` caps a limited value at half the process's soft `RLIMIT_NOFILE` (the reason is
/// in the option's documentation).
pub const MAX_OPEN_FILES_DEFAULT: i32 = i32::MAX;

/// Smallest limited [`Options::max_open_files`]: a scan or compaction uses a few tables at once,
/// and a cache smaller than that would reopen files on every step for no real saving.
pub const MIN_MAX_OPEN_FILES: i32 = 16;

/// Options of [`crate::Db::open`]. Start from `Options::default()` and change what you need;
/// `Db::open` checks every field ([`Options::validate`]) and refuses an out-of-range one with an
/// `InvalidArgument` naming it.
///
/// ```
/// use siftdb::{Compression, Db, FilterAllocation, FilterPolicy, Options};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let opts = Options {
///     memtable_size: 8 << 20,                    // flush every 8 MiB of writes
///     compression: Compression::Lz4,             // every level
///     block_cache_bytes: 64 << 20,               // data blocks cached across lookups
///     filter_policy: FilterPolicy {              // two-bit at flush, ribbon after compaction,
///         allocation: FilterAllocation::Monkey { bits_per_key: 8.0 }, // sized per level
///         ..FilterPolicy::default()
///     },
///     ..Options::default()
/// };
/// let db = Db::open(dir.path().join("db"), opts)?;
/// db.put("k", "v")?;
///
/// // A bad value is refused before anything touches the disk.
/// let bad = Options { block_size: 0, ..Options::default() };
/// let err = Db::open(dir.path().join("other"), bad).err().unwrap();
/// assert!(err.to_string().contains("block_size"));
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Bytes of user data (keys + values + per-entry overhead) a memtable holds before it is
    /// frozen and flushed. Default 64 MiB (RocksDB's `write_buffer_size`). Larger: fewer, larger
    /// L0 files and fewer compactions; more memory and a longer WAL replay after a crash.
    pub memtable_size: usize,
    /// Frozen memtables allowed to wait for the flush thread before writers block. Default 2.
    /// More absorbs write bursts at the cost of memory.
    pub max_immutable_memtables: usize,
    /// Target uncompressed size of an SST data block. Default 4096. Smaller blocks read fewer
    /// bytes per point lookup but grow the index.
    pub block_size: usize,
    /// Keys between restart points inside a block. Default 16. Smaller speeds up seeks inside a
    /// block, larger compresses key prefixes better.
    pub block_restart_interval: usize,
    /// Data block compression. Default `Compression::None` (point lookups skip decompression).
    /// Applies to every level unless [`Options::compression_per_level`] is set.
    pub compression: Compression,
    /// Data block compression per level (RocksDB's `compression_per_level`). Empty (the
    /// default): [`Options::compression`] everywhere. Otherwise entry `i` applies to the files
    /// written to level `i` (flushes write level 0, a compaction writes its output level), and
    /// the last entry to every deeper level. Upper levels hold little of the data and are
    /// rewritten often, so a fast codec there saves compaction time at little space cost; the
    /// last level holds about 90% of the data and is rewritten least, so a strong codec there
    /// saves the most space. RocksDB's common choice: `[None, None, Lz4, ..., Zstd(3)]` (none
    /// or LZ4 above, zstd at the bottom). A file's compression is read from its own blocks, so
    /// changing this option leaves existing files readable.
    pub compression_per_level: Vec<Compression>,
    /// Largest zstd dictionary per table file, in bytes (RocksDB's
    /// `compression_opts.max_dict_bytes`; design.md#zstd-dictionaries). 0 (the default): no
    /// dictionaries. Otherwise each file written with zstd trains a dictionary on its first
    /// data blocks and compresses all of them with it; readers keep it digested with the open
    /// table, so a block decode skips rebuilding entropy tables and small blocks compress
    /// better. Files of other codecs ignore it; keyspaces use the database's setting. Valid:
    /// 0..=1 MiB.
    pub compression_max_dict_bytes: usize,
    /// Bytes of data blocks each file's dictionary is trained on (RocksDB's
    /// `zstd_max_train_bytes`), buffered uncompressed by the file's writer. 0 (the default):
    /// the first `compression_max_dict_bytes` of data blocks are used as the dictionary
    /// without training. Valid: 0, or `compression_max_dict_bytes..=256 MiB`.
    pub compression_zstd_max_train_bytes: usize,
    /// With `compression_zstd_max_train_bytes` above 0: `true` (the default, as RocksDB's
    /// `use_zstd_dict_trainer`) trains each dictionary with zstd's trainer; `false` takes the
    /// last `compression_max_dict_bytes` of those blocks as the dictionary's content and has
    /// zstd add the entropy tables the blocks compress to with it
    /// (`ZDICT_finalizeDictionary`), at a small part of the trainer's cost. Either way a
    /// block decode starts from the dictionary's tables instead of rebuilding its own.
    pub compression_use_zstd_dict_trainer: bool,
    /// The dictionary size of files written by bottommost compactions, those with no older
    /// data below their output (RocksDB's `bottommost_compression_opts.max_dict_bytes` with
    /// `enabled`). `None` (the default): [`Options::compression_max_dict_bytes`] applies there
    /// too. A settled tree keeps most of its data in such files, so a dictionary only there
    /// gives most of the read gain while flushes and the upper levels' compactions, which
    /// rewrite the most bytes, skip its cost (design.md#zstd-dictionaries). Same range.
    pub bottommost_compression_max_dict_bytes: Option<usize>,
    /// Training bytes of those files' dictionaries (RocksDB's
    /// `bottommost_compression_opts.zstd_max_train_bytes`). `None` (the default):
    /// [`Options::compression_zstd_max_train_bytes`]. Same range, against the bottommost
    /// dictionary size.
    pub bottommost_compression_zstd_max_train_bytes: Option<usize>,
    /// Bytes of the shared block cache (`siftdb bench --cache_size`). Default 32 MiB; 0
    /// disables it. It bounds the decompressed data blocks read by lookups and scans, and with
    /// [`Options::cache_index_and_filter_blocks`] the tables' index and filter blocks too: each
    /// entry is charged what it allocates (its buffers, search summary and `Arc`, with the
    /// allocator's headers) plus the cache's own bookkeeping per entry (~115 bytes;
    /// design.md#memory-accounting), and the cache holds at most this
    /// many bytes plus 16 (per-shard rounding), plus whatever pinned index and filter blocks
    /// hold beyond their shard's share (pinned entries are never evicted). It does not bound
    /// memtables ([`Options::memtable_size`]), index and filter blocks kept outside it (the
    /// default: bounded by [`Options::max_open_files`]), range tombstones loaded with their
    /// tables, or the page cache and mapped file pages (`mmap_reads`) the OS keeps.
    /// [`crate::Db::memory_usage`] reports each of these (design.md#memory-accounting).
    pub block_cache_bytes: usize,
    /// Which data blocks read from files enter the block cache once it is full. Default
    /// [`CacheAdmission::SecondMiss`]; [`CacheAdmission::All`] is RocksDB's LRU cache.
    pub block_cache_admission: CacheAdmission,
    /// Keep the tables' index and filter blocks in the block cache (RocksDB's
    /// `cache_index_and_filter_blocks`): charged to `block_cache_bytes`, evicted under
    /// pressure and read from the file again on demand, so `block_cache_bytes` bounds them.
    /// Default `false`: each open table holds its own outside the cache (no lookup ever re-reads
    /// them, but their memory grows with the open tables). Requires an enabled block cache
    /// (`block_cache_bytes > 0`; [`crate::Error::InvalidArgument`] otherwise). Size the cache
    /// for it: a block larger than one of the cache's 16 shards (`block_cache_bytes / 16`) is
    /// never cached, so a table whose filter or index exceeds that re-reads it from the file
    /// at every lookup (the `rocksdb.block.cache.filter.miss` / `.index.miss` tickers show it;
    /// pinning L0 tables avoids it for them).
    pub cache_index_and_filter_blocks: bool,
    /// With `cache_index_and_filter_blocks`: level-0 tables keep their index and filter pinned
    /// in the block cache (RocksDB's `pin_l0_filter_and_index_blocks_in_cache`): charged, never
    /// evicted while the table is open, and read without a cache lookup. Every point lookup
    /// probes every overlapping L0 table, so these are the hottest. A table is pinned when it
    /// is opened while its file is at level 0 (a trivial move to level 1 reopens it unpinned).
    /// Default `false`; `true` without `cache_index_and_filter_blocks` is
    /// [`crate::Error::InvalidArgument`].
    pub pin_l0_filter_and_index_blocks_in_cache: bool,
    /// Partition the filters of compaction outputs (RocksDB's `partition_filters`;
    /// docs/format.md#partitioned-filter): a table's filter becomes a small top-level partition
    /// index over filter partitions of about [`Options::metadata_block_size`] bytes each, one per
    /// run of data blocks. A point lookup then reads the top level and one partition, so with
    /// `cache_index_and_filter_blocks` a cache smaller than a table's whole filter still serves
    /// its filter, and a cache miss re-reads one partition instead of the whole filter. With a
    /// block cache (any `cache_index_and_filter_blocks` setting) the partitions live in it,
    /// read on demand; without one they are loaded at open and held by the table. Costs one more
    /// block lookup per probe and a little space (the top level). Flush outputs (level 0) keep
    /// whole filters, and a table whose filter fits one partition gets a whole filter. Applies to
    /// every keyspace (a layout choice that changes no answer, so it is not persisted in the
    /// keyspace options). Default `false`. Tables written with it are SST format version 4.
    pub partition_filters: bool,
    /// Partition the index blocks of compaction outputs (RocksDB's `kTwoLevelIndexSearch`;
    /// docs/format.md#partitioned-index): a table whose index block is larger than
    /// [`Options::metadata_block_size`] stores it as index partitions of about that size under a
    /// top-level index. A point lookup then reads the top level and one partition, so with
    /// `cache_index_and_filter_blocks` a cache smaller than a table's whole index still holds
    /// the parts in use, and a miss re-reads one partition instead of the whole index. With a
    /// block cache the partitions live in it, read on demand; without one they are loaded at
    /// open. Costs one more block lookup per lookup and per index step of a scan. Flush outputs
    /// keep whole indexes. Applies to every keyspace, like `partition_filters`. Default `false`.
    /// Tables written with it are SST format version 4.
    pub partition_index: bool,
    /// Target size in bytes of a filter partition ([`Options::partition_filters`]; RocksDB's
    /// `metadata_block_size`): a partition is cut at the first data-block boundary where its
    /// estimated filter size (keys x bits per key) reaches it; and of an index partition
    /// ([`Options::partition_index`]), cut once its entries reach it. Default 4096; valid `512..=1 MiB`.
    /// Smaller: less read per probe, a larger top level.
    pub metadata_block_size: usize,
    /// Filters per level. See [`FilterPolicy`].
    pub filter_policy: FilterPolicy,
    /// Leveled compaction. See [`CompactionOptions`].
    pub compaction: CompactionOptions,
    /// Memory-map finished SSTs and read blocks straight from the map (RocksDB's
    /// `allow_mmap_reads`) when the real file system is used (`storage: None`) on a 64-bit unix
    /// target; ignored otherwise. A block-cache miss then costs no `read` system call and no
    /// copy out of the page cache, and zstd decompresses from the mapped pages. Trade-offs: the
    /// mapped files count toward the process's virtual size (not its private memory; the pages
    /// belong to the page cache), a first touch of a cold page is a page fault instead of a
    /// read, and an I/O error on the device arrives as SIGBUS instead of an error. Hazard: if
    /// another process truncates or rewrites an SST of an open database, touching the lost pages
    /// raises SIGBUS and kills the process (siftdb itself never modifies a finished SST, it only
    /// deletes it, which is safe). Turn it off when other programs may modify the directory.
    /// Default: `true` on 64-bit unix (readrandom with zstd: 8% less time per lookup), else
    /// `false`.
    pub mmap_reads: bool,
    /// Append the write-ahead log through a shared memory map instead of one `write(2)` per
    /// write group (RocksDB's `allow_mmap_writes`, here for the WAL only) when the real file
    /// system is used (`storage: None`) on 64-bit Linux; ignored otherwise. Durability is the
    /// same: an acknowledged write is in the page cache when `put` returns, so it survives a
    /// crash of the process, and `sync` writes are `fdatasync`ed. The log grows in 4 MiB
    /// windows reserved with `fallocate(2)` (a full disk is an error at the write, never a
    /// SIGBUS) and is cut back to its length when closed; a log left by a crash ends in zeros,
    /// which recovery reads as its end (docs/format.md#wal). A file system without
    /// `fallocate` gets `write(2)` appends. Hazard, as for `mmap_reads`: another process that
    /// truncates a live log makes the next write raise SIGBUS. Default: `true` on 64-bit
    /// Linux (fillrandom: the `write(2)` was about 30% of the writer thread's time).
    pub mmap_wal: bool,
    /// Read SSTs with `O_DIRECT` (RocksDB's `use_direct_reads`; Linux only): a block-cache miss
    /// then reads the block's 4096-byte-aligned span from the device, bypassing the page
    /// cache, so the block cache is the only cache and read amplification costs device reads.
    /// Overrides `mmap_reads` for SSTs. Applies when the real file system is used (`storage:
    /// None`); a custom storage does its own I/O. A file system that refuses `O_DIRECT` makes
    /// [`crate::Db::open`] fail with [`crate::Error::InvalidArgument`] (never a silent
    /// fallback). WAL and manifest reads stay buffered. Default `false`.
    pub direct_reads: bool,
    /// Write the SSTs of flushes and compactions with `O_DIRECT` (RocksDB's
    /// `use_direct_io_for_flush_and_compaction`; Linux only), so building a table does not
    /// fill the page cache with it. Appends go through a 1 MiB aligned buffer; the file is
    /// still synced before the manifest names it. Same scope and error as `direct_reads`.
    /// Default `false`.
    pub direct_io_for_flush_and_compaction: bool,
    /// Keep each SST data block within one 4 KiB page (db_bench's `block_align`;
    /// docs/format.md#aligned-data-blocks): blocks are cut where they are predicted to fill the
    /// rest of a page and moved past the page's end behind zero padding when they do not fit. With
    /// `direct_reads` a block-cache miss then reads one page instead of two for the blocks
    /// that would have straddled a page boundary (most of them, with compression). Unlike
    /// RocksDB's, it works with compression. Costs a few percent more blocks and index
    /// entries, and the padding. Applies to files written from then on. Default `false`.
    pub block_align: bool,
    /// Tables kept open at once by the table cache (RocksDB's `max_open_files`;
    /// design.md#table-cache). An open table holds a file descriptor (and a mapping with
    /// `mmap_reads`) and, unless `cache_index_and_filter_blocks`, keeps its index and filter
    /// blocks in memory; a lookup that finds its
    /// table closed reopens it (footer, properties, index and filter read and verified again),
    /// so a working set of files larger than this costs reopens. `-1` keeps every table open
    /// once opened (fastest, but a database of thousands of files then needs as many
    /// descriptors: it fails with "Too many open files" under the common `ulimit -n 1024`).
    /// Valid values: `-1`, or 16 and above. A limited value is capped at `Db::open` to half the
    /// process's soft `RLIMIT_NOFILE` at that moment (at least 16): the other half is left for
    /// the WAL, manifest, LOCK and directory handles, tables a running scan or compaction still
    /// holds after the cache evicted them, and the application's own files and sockets. The
    /// default, [`MAX_OPEN_FILES_DEFAULT`] (`i32::MAX`), is that cap itself: 512 tables under
    /// the common `ulimit -n 1024`, 10,000 under 20,000. A fixed 512 made lookups reopen
    /// tables once a database passed 512 files, about 120 us a reopen (100M keys in 8 MiB
    /// files read 18x slower than RocksDB while a writer added files). `-1` is never capped.
    pub max_open_files: i32,
    /// Put the whole (unpartitioned) filter blocks that open tables hold (the default, without
    /// `cache_index_and_filter_blocks`) on transparent huge pages: 2 MiB-aligned chunks advised
    /// `MADV_HUGEPAGE`, shared by every `Db` in the process (design.md#huge-pages).
    /// A lookup probes filters at random places; on 4 KiB pages most probes of a
    /// large database also miss the TLB. Linux only (elsewhere, and when the kernel's THP
    /// setting is `never`, filters are packed into the same chunks on ordinary pages or stay
    /// on the heap). The chunks' free space is reported as
    /// [`crate::MemoryUsage::filter_arena_free`]. Default `true`.
    pub filters_on_huge_pages: bool,
    /// The file system. Default `None` = the real one; tests pass an in-memory,
    /// fault-injecting storage.
    pub storage: Option<Arc<dyn Storage>>,
    /// The operator that merges the operands written by [`crate::Db::merge`] (RocksDB's
    /// `merge_operator`; see [`crate::merge`]). Default `None`: `Db::merge` is refused, and a
    /// read that meets operands written earlier fails with [`crate::Error::InvalidArgument`].
    /// Its name is recorded in every table holding operands; reopening with an operator of
    /// another name makes reads (and compactions) of those operands fail rather than mis-merge.
    pub merge_operator: Option<Arc<dyn crate::merge::MergeOperator>>,
    /// Threads one compaction may merge on (RocksDB's `max_subcompactions`): a compaction
    /// whose input holds at least two `compaction.target_file_size` worth of bytes splits each
    /// keyspace's key range into up to this many disjoint ranges of about equal input bytes,
    /// merged in parallel into their own outputs and installed together in one manifest edit
    /// (design.md#compaction). `1` merges on the compaction thread alone. Valid:
    /// `1..=64`. Default 2.
    pub max_subcompactions: usize,
    /// How keys map to the prefixes of prefix filters (RocksDB's `prefix_extractor`; see
    /// [`crate::PrefixExtractor`] for the contract that keeps scans exact). With one, every
    /// new table carries a prefix filter and every memtable a prefix Bloom, and a scan whose
    /// keys all share one extracted prefix ([`crate::Db::prefix`], or a range whose bounds
    /// share it) skips the files and memtables that say "no such prefix". Tables written
    /// under another extractor name are scanned without theirs. Default `None`.
    pub prefix_extractor: Option<Arc<dyn crate::PrefixExtractor>>,
    /// Bits per distinct prefix of the prefix filters (blocked Bloom; 10 gives about 1%).
    /// Valid: `1.0..=64.0`. Default 10.
    pub prefix_filter_bits_per_key: f64,
    /// A range filter in every new table (design.md#scan-filters): a range with both ends
    /// given ([`crate::Db::range`]) skips the files whose range filter proves it empty there.
    /// Default `None`.
    pub range_filter: Option<RangeFilterOptions>,
    /// Size in bytes past which the manifest rolls over while the database is open (RocksDB's
    /// `max_manifest_file_size`): the next edit that takes it past the larger of this and twice
    /// the manifest's opening snapshot starts a new manifest holding a snapshot of the state,
    /// and the old one is deleted (docs/format.md#manifest). Bounds the manifest's disk space and
    /// the next open's replay. Valid: `1024..`. Default 4 MiB.
    pub max_manifest_file_size: u64,
    /// Time to live of the default keyspace's entries (design.md#ttl; other keyspaces:
    /// [`crate::KeyspaceOptions::ttl`]): an entry older than this is invisible to every read
    /// and dropped by compaction. Values then carry their write time, so turning it on or off
    /// for an existing database is [`crate::Error::InvalidArgument`]; its duration may change.
    /// Valid: 1 ms and up. Default `None`.
    pub ttl: Option<std::time::Duration>,
    /// The default keyspace's compaction filter ([`crate::CompactionFilter`]). Default `None`.
    pub compaction_filter: Option<Arc<dyn crate::CompactionFilter>>,
    /// The clock TTLs are measured with. Default `None`: the system clock; tests pass a
    /// [`crate::ManualClock`].
    pub clock: Option<Arc<dyn crate::Clock>>,
    /// Key-value separation for the default keyspace (design.md#key-value-separation; other
    /// keyspaces: [`crate::KeyspaceOptions::blob_threshold`]): flush and compaction write
    /// values of at least this many bytes to blob files, and the SST keeps a reference.
    /// Valid: 1 and up. Default `None` (off). RocksDB: `enable_blob_files` + `min_blob_size`.
    pub blob_threshold: Option<u32>,
    /// Blob garbage collection: a compaction relocates the live values of the oldest
    /// `blob_gc_age_cutoff` fraction of the blob files (by number) whose references it reads
    /// into new blob files, so the old files' values all become garbage and the files are
    /// deleted. Valid: 0.0 (no collection) ..= 1.0. Default 0.25 (RocksDB's
    /// `blob_garbage_collection_age_cutoff`).
    pub blob_gc_age_cutoff: f64,
}

/// Default of [`Options::max_manifest_file_size`]: about 30,000 edits of ~140 bytes, replayed
/// in milliseconds at open, rolled over (a snapshot and four syncs) once per that many edits.
pub const MAX_MANIFEST_FILE_SIZE_DEFAULT: u64 = 4 << 20;

/// The shape of the range filters of [`Options::range_filter`] (a Grafite filter,
/// [`crate::filter::Grafite`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeFilterOptions {
    /// Bits per key (the integer part counts). A range of `l` keys that holds none of a
    /// file's keys is reported non-empty with probability at most `l / 2^(floor(bits_per_key)
    /// - 2)`. Valid: `4.0..=40.0`. Default 14 (0.4% for ranges of 16 keys).
    pub bits_per_key: f64,
    /// The longest range, in keys (more exactly: in units of the filter's key image,
    /// docs/format.md#grafite), the bound above is promised for; longer ranges are answered
    /// correctly but with a weaker bound. Valid: `1..`. Default 16.
    pub max_range: u64,
}

impl Default for RangeFilterOptions {
    fn default() -> Self {
        RangeFilterOptions { bits_per_key: 14.0, max_range: 16 }
    }
}

impl Options {
    /// The data block compression of files written to `level`: entry `level` of
    /// [`Options::compression_per_level`] (its last entry for deeper levels), or
    /// [`Options::compression`] when that list is empty.
    pub fn compression_for_level(&self, level: usize) -> Compression {
        match self.compression_per_level.as_slice() {
            [] => self.compression,
            list => list[level.min(list.len() - 1)],
        }
    }

    /// The zstd dictionary size and training bytes of files written by a compaction that is
    /// bottommost (`bottommost`: no older data below its output) or not.
    pub(crate) fn dictionary_for(&self, bottommost: bool) -> (usize, usize) {
        let all = (self.compression_max_dict_bytes, self.compression_zstd_max_train_bytes);
        if !bottommost {
            return all;
        }
        (
            self.bottommost_compression_max_dict_bytes.unwrap_or(all.0),
            self.bottommost_compression_zstd_max_train_bytes.unwrap_or(all.1),
        )
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            memtable_size: 64 << 20,
            max_immutable_memtables: 2,
            block_size: 4096,
            block_restart_interval: 16,
            compression: Compression::None,
            compression_per_level: Vec::new(),
            compression_max_dict_bytes: 0,
            compression_zstd_max_train_bytes: 0,
            compression_use_zstd_dict_trainer: true,
            bottommost_compression_max_dict_bytes: None,
            bottommost_compression_zstd_max_train_bytes: None,
            block_cache_bytes: 32 << 20,
            block_cache_admission: CacheAdmission::SecondMiss,
            cache_index_and_filter_blocks: false,
            pin_l0_filter_and_index_blocks_in_cache: false,
            partition_filters: false,
            partition_index: false,
            metadata_block_size: 4096,
            mmap_reads: MMAP_READS_DEFAULT,
            mmap_wal: cfg!(all(target_os = "linux", target_pointer_width = "64")),
            direct_reads: false,
            direct_io_for_flush_and_compaction: false,
            block_align: false,
            max_open_files: MAX_OPEN_FILES_DEFAULT,
            filters_on_huge_pages: true,
            filter_policy: FilterPolicy::default(),
            compaction: CompactionOptions::default(),
            storage: None,
            merge_operator: None,
            max_subcompactions: 2,
            prefix_extractor: None,
            prefix_filter_bits_per_key: 10.0,
            range_filter: None,
            max_manifest_file_size: MAX_MANIFEST_FILE_SIZE_DEFAULT,
            ttl: None,
            compaction_filter: None,
            blob_threshold: None,
            blob_gc_age_cutoff: 0.25,
            clock: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("memtable_size", &self.memtable_size)
            .field("max_immutable_memtables", &self.max_immutable_memtables)
            .field("block_size", &self.block_size)
            .field("block_restart_interval", &self.block_restart_interval)
            .field("block_align", &self.block_align)
            .field("compression", &self.compression)
            .field("compression_per_level", &self.compression_per_level)
            .field("compression_max_dict_bytes", &self.compression_max_dict_bytes)
            .field("compression_zstd_max_train_bytes", &self.compression_zstd_max_train_bytes)
            .field("compression_use_zstd_dict_trainer", &self.compression_use_zstd_dict_trainer)
            .field(
                "bottommost_compression_max_dict_bytes",
                &self.bottommost_compression_max_dict_bytes,
            )
            .field(
                "bottommost_compression_zstd_max_train_bytes",
                &self.bottommost_compression_zstd_max_train_bytes,
            )
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("block_cache_admission", &self.block_cache_admission)
            .field("cache_index_and_filter_blocks", &self.cache_index_and_filter_blocks)
            .field(
                "pin_l0_filter_and_index_blocks_in_cache",
                &self.pin_l0_filter_and_index_blocks_in_cache,
            )
            .field("partition_filters", &self.partition_filters)
            .field("partition_index", &self.partition_index)
            .field("metadata_block_size", &self.metadata_block_size)
            .field("mmap_reads", &self.mmap_reads)
            .field("mmap_wal", &self.mmap_wal)
            .field("direct_reads", &self.direct_reads)
            .field("direct_io_for_flush_and_compaction", &self.direct_io_for_flush_and_compaction)
            .field("max_open_files", &self.max_open_files)
            .field("filters_on_huge_pages", &self.filters_on_huge_pages)
            .field("filter_policy", &self.filter_policy)
            .field("compaction", &self.compaction)
            .field("storage", &self.storage.as_ref().map(|_| "custom"))
            .field("merge_operator", &self.merge_operator.as_ref().map(|m| m.name().to_string()))
            .field("max_subcompactions", &self.max_subcompactions)
            .field(
                "prefix_extractor",
                &self.prefix_extractor.as_ref().map(|p| p.name().to_string()),
            )
            .field("prefix_filter_bits_per_key", &self.prefix_filter_bits_per_key)
            .field("range_filter", &self.range_filter)
            .field("max_manifest_file_size", &self.max_manifest_file_size)
            .field("ttl", &self.ttl)
            .field(
                "compaction_filter",
                &self.compaction_filter.as_ref().map(|f| f.name().to_string()),
            )
            .field("clock", &self.clock.as_ref().map(|_| "custom"))
            .finish()
    }
}

/// Options of one read (RocksDB's `ReadOptions`), for the `_opt` reads of every handle
/// ([`crate::Db::range_opt`], [`crate::Db::cursor_opt`], [`crate::Db::multi_get_opt`] and
/// the same on `Keyspace` and `Snapshot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// For ranges and cursors. `true` (the default): data blocks the read loads from disk are
    /// put in the block cache until this one range or cursor has put a quarter of the cache's
    /// capacity there; the rest of a longer scan is read around the cache, so a scan cannot
    /// flush the blocks point lookups keep hot (under LRU, a scan longer than the cache would
    /// evict its own blocks before reading them again). `false`: nothing is put in the cache
    /// (blocks already cached are still used). Point lookups (`multi_get_opt`) fill the cache
    /// as `get` does.
    pub fill_cache: bool,
    /// For `multi_get_opt`: the most threads one batch may use (1 to 64). 1 (the default, as
    /// in RocksDB) looks every key up on the calling thread. Above 1, a batch of at least 64
    /// keys per part is cut in key order into that many parts, looked up on a worker pool of
    /// one thread per core kept by the process (rayon's global pool) while the caller waits, so
    /// one caller (say, a Python program, whose other threads wait on its interpreter lock)
    /// uses the cores a batch of cache-missing lookups can keep busy; the answers are the same.
    /// A service that already runs a reader per core gains nothing.
    pub multi_get_threads: usize,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions { fill_cache: true, multi_get_threads: 1 }
    }
}

impl ReadOptions {
    /// Checks every field against its documented range.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        let max = crate::limits::MAX_MULTI_GET_THREADS;
        if !(1..=max).contains(&self.multi_get_threads) {
            return Err(crate::Error::InvalidArgument(format!(
                "ReadOptions::multi_get_threads is {}; it must be 1 to {max}",
                self.multi_get_threads
            )));
        }
        Ok(())
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `true`: the call returns only after the WAL record is fsynced, so an acknowledged write
    /// survives power loss. `false` (the default, as in RocksDB): the record is handed to the OS,
    /// which writes it back when it chooses; it survives a crash of the process but not of the
    /// machine. A synced write also makes every earlier buffered write durable.
    pub sync: bool,
}
