//! Read-path counters of SST lookups ([`ReadCounters`]) and their plain snapshot
//! ([`ReadStats`]), from which the engine reports RocksDB-named tickers per level.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Read-path counters. The engine keeps one per level and maps the fields to RocksDB ticker
/// names; all fields count events (relaxed atomics, safe to share between threads).
#[derive(Debug)]
pub struct ReadCounters {
    /// Lookups that probed a filter (`filter_useful + filter_positive`).
    pub filter_checks: AtomicU64,
    /// Filter answered "absent": the lookup ended without reading a block
    /// (RocksDB `rocksdb.bloom.filter.useful`).
    pub filter_useful: AtomicU64,
    /// Filter answered "maybe" (`rocksdb.bloom.filter.full.positive`).
    pub filter_positive: AtomicU64,
    /// Filter answered "maybe" and the table held the key as a Put or a tombstone
    /// (`rocksdb.bloom.filter.full.true.positive`).
    pub filter_true_positive: AtomicU64,
    /// Lookups in tables whose filter kind this build does not know (treated as "maybe").
    pub filter_unusable: AtomicU64,
    /// Lookups in tables whose filter gave no answer: no filter, an unknown kind, or a filter
    /// that could not be read (each read on as "maybe").
    pub unfiltered_lookups: AtomicU64,
    /// Of those, lookups that found the key in the table (as a Put, a merge operand or a
    /// tombstone). With [`ReadCounters::filter_true_positive`] this tells how many lookups
    /// asked a level about a key it does not hold, filtered or not
    /// ([`ReadStats::absent_key_lookups`]).
    pub unfiltered_found: AtomicU64,
    /// Index blocks consulted (the index is pinned in memory: one per lookup past the filter).
    pub index_blocks_read: AtomicU64,
    /// Data blocks consulted, from the cache or the file.
    pub data_blocks_read: AtomicU64,
    /// Data blocks served by the block cache.
    pub block_cache_hits: AtomicU64,
    /// Data blocks looked up in an enabled cache and read from the file.
    pub block_cache_misses: AtomicU64,
    /// Data blocks read from the file, with or without a cache (`data_blocks_read -
    /// block_cache_hits`): a device read with `Options::direct_reads`, a page-cache copy or a
    /// map access otherwise (RocksDB `rocksdb.{non.,}last.level.read.count`).
    pub file_reads: AtomicU64,
    /// Bytes of those reads: each block's stored size plus its 5-byte trailer (a direct read
    /// transfers that span rounded out to 4096-byte boundaries).
    pub file_read_bytes: AtomicU64,
    /// Index blocks found in the block cache (tables opened with
    /// `cache_index_and_filter_blocks` and not pinned; RocksDB `rocksdb.block.cache.index.hit`).
    pub index_cache_hits: AtomicU64,
    /// Index blocks not found there and read from the file again
    /// (`rocksdb.block.cache.index.miss`; each is a file read, not counted in `file_reads`).
    pub index_cache_misses: AtomicU64,
    /// Filter blocks found in the block cache (`rocksdb.block.cache.filter.hit`).
    pub filter_cache_hits: AtomicU64,
    /// Filter blocks not found there and read from the file again
    /// (`rocksdb.block.cache.filter.miss`; each is a file read, not counted in `file_reads`).
    pub filter_cache_misses: AtomicU64,
    /// The copy of the engine's striped counters these belong to (`crate::stripe`), whose
    /// owning thread adds without a locked instruction; `stripe::NONE` for counters of their
    /// own, which always add atomically.
    stripe: usize,
}

impl Default for ReadCounters {
    fn default() -> Self {
        ReadCounters::in_stripe(crate::stripe::NONE)
    }
}

/// Where a table cursor counts the data blocks it reads: the engine's per-thread scan counters
/// (see src/db/read_counters.rs), so a scan is counted apart from point lookups and never
/// writes another core's cache lines.
pub(crate) trait ScanCounters: Send + Sync + std::fmt::Debug {
    /// The counters of `level` to bump now (looked up per block read, by the reading thread:
    /// a cursor may move between threads).
    fn counters(&self, level: usize) -> &ReadCounters;
}

/// A plain copy of [`ReadCounters`] at one moment (same field meanings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadStats {
    /// See [`ReadCounters::filter_checks`].
    pub filter_checks: u64,
    /// See [`ReadCounters::filter_useful`].
    pub filter_useful: u64,
    /// See [`ReadCounters::filter_positive`].
    pub filter_positive: u64,
    /// See [`ReadCounters::filter_true_positive`].
    pub filter_true_positive: u64,
    /// See [`ReadCounters::filter_unusable`].
    pub filter_unusable: u64,
    /// See [`ReadCounters::unfiltered_lookups`].
    pub unfiltered_lookups: u64,
    /// See [`ReadCounters::unfiltered_found`].
    pub unfiltered_found: u64,
    /// See [`ReadCounters::index_blocks_read`].
    pub index_blocks_read: u64,
    /// See [`ReadCounters::data_blocks_read`].
    pub data_blocks_read: u64,
    /// See [`ReadCounters::block_cache_hits`].
    pub block_cache_hits: u64,
    /// See [`ReadCounters::block_cache_misses`].
    pub block_cache_misses: u64,
    /// See [`ReadCounters::file_reads`].
    pub file_reads: u64,
    /// See [`ReadCounters::file_read_bytes`].
    pub file_read_bytes: u64,
    /// See [`ReadCounters::index_cache_hits`].
    pub index_cache_hits: u64,
    /// See [`ReadCounters::index_cache_misses`].
    pub index_cache_misses: u64,
    /// See [`ReadCounters::filter_cache_hits`].
    pub filter_cache_hits: u64,
    /// See [`ReadCounters::filter_cache_misses`].
    pub filter_cache_misses: u64,
}

impl ReadStats {
    /// False positives: "maybe" answers for keys the table did not hold.
    pub fn false_positives(&self) -> u64 {
        self.filter_positive.saturating_sub(self.filter_true_positive)
    }

    /// Observed FPR = false positives / (false positives + useful), as RocksDB users compute it
    /// from the tickers; `None` before any negative probe.
    pub fn observed_fpr(&self) -> Option<f64> {
        let negatives = self.false_positives() + self.filter_useful;
        (negatives > 0).then(|| self.false_positives() as f64 / negatives as f64)
    }

    /// Lookups that asked a table about a key it does not hold, whether a filter answered
    /// (useful, or a false positive) or not: what a perfect filter would have saved. Skew-aware
    /// filter allocation weighs each level by this count (`FilterAllocation::SkewAware`).
    pub fn absent_key_lookups(&self) -> u64 {
        let unfiltered = self.unfiltered_lookups.saturating_sub(self.unfiltered_found);
        self.filter_useful + self.false_positives() + unfiltered
    }

    /// Field-wise sum.
    pub fn plus(&self, o: &ReadStats) -> ReadStats {
        self.zip(o, u64::wrapping_add)
    }

    /// Field-wise difference (counts accumulated since the earlier snapshot `o`).
    pub fn minus(&self, o: &ReadStats) -> ReadStats {
        self.zip(o, u64::saturating_sub)
    }

    fn zip(&self, o: &ReadStats, f: fn(u64, u64) -> u64) -> ReadStats {
        ReadStats {
            filter_checks: f(self.filter_checks, o.filter_checks),
            filter_useful: f(self.filter_useful, o.filter_useful),
            filter_positive: f(self.filter_positive, o.filter_positive),
            filter_true_positive: f(self.filter_true_positive, o.filter_true_positive),
            filter_unusable: f(self.filter_unusable, o.filter_unusable),
            unfiltered_lookups: f(self.unfiltered_lookups, o.unfiltered_lookups),
            unfiltered_found: f(self.unfiltered_found, o.unfiltered_found),
            index_blocks_read: f(self.index_blocks_read, o.index_blocks_read),
            data_blocks_read: f(self.data_blocks_read, o.data_blocks_read),
            block_cache_hits: f(self.block_cache_hits, o.block_cache_hits),
            block_cache_misses: f(self.block_cache_misses, o.block_cache_misses),
            file_reads: f(self.file_reads, o.file_reads),
            file_read_bytes: f(self.file_read_bytes, o.file_read_bytes),
            index_cache_hits: f(self.index_cache_hits, o.index_cache_hits),
            index_cache_misses: f(self.index_cache_misses, o.index_cache_misses),
            filter_cache_hits: f(self.filter_cache_hits, o.filter_cache_hits),
            filter_cache_misses: f(self.filter_cache_misses, o.filter_cache_misses),
        }
    }
}

impl ReadCounters {
    /// All counters at zero.
    pub fn new() -> ReadCounters {
        ReadCounters::default()
    }

    /// The current values.
    pub fn snapshot(&self) -> ReadStats {
        ReadStats {
            filter_checks: self.filter_checks.load(Relaxed),
            filter_useful: self.filter_useful.load(Relaxed),
            filter_positive: self.filter_positive.load(Relaxed),
            filter_true_positive: self.filter_true_positive.load(Relaxed),
            filter_unusable: self.filter_unusable.load(Relaxed),
            unfiltered_lookups: self.unfiltered_lookups.load(Relaxed),
            unfiltered_found: self.unfiltered_found.load(Relaxed),
            index_blocks_read: self.index_blocks_read.load(Relaxed),
            data_blocks_read: self.data_blocks_read.load(Relaxed),
            block_cache_hits: self.block_cache_hits.load(Relaxed),
            block_cache_misses: self.block_cache_misses.load(Relaxed),
            file_reads: self.file_reads.load(Relaxed),
            file_read_bytes: self.file_read_bytes.load(Relaxed),
            index_cache_hits: self.index_cache_hits.load(Relaxed),
            index_cache_misses: self.index_cache_misses.load(Relaxed),
            filter_cache_hits: self.filter_cache_hits.load(Relaxed),
            filter_cache_misses: self.filter_cache_misses.load(Relaxed),
        }
    }
}

impl ReadCounters {
    /// Counters of copy `stripe` of the engine's striped counters (src/db/read_counters.rs).
    pub(crate) fn in_stripe(stripe: usize) -> ReadCounters {
        let z = || AtomicU64::new(0);
        ReadCounters {
            filter_checks: z(),
            filter_useful: z(),
            filter_positive: z(),
            filter_true_positive: z(),
            filter_unusable: z(),
            unfiltered_lookups: z(),
            unfiltered_found: z(),
            index_blocks_read: z(),
            data_blocks_read: z(),
            block_cache_hits: z(),
            block_cache_misses: z(),
            file_reads: z(),
            file_read_bytes: z(),
            index_cache_hits: z(),
            index_cache_misses: z(),
            filter_cache_hits: z(),
            filter_cache_misses: z(),
            stripe,
        }
    }

    /// Adds one to `c`, a field of these counters (`crate::stripe::add`).
    #[inline]
    pub(crate) fn bump(&self, c: &AtomicU64) {
        crate::stripe::add(self.stripe, c, 1);
    }

    /// Adds `n` to `c`, a field of these counters.
    #[inline]
    pub(crate) fn add(&self, c: &AtomicU64, n: u64) {
        crate::stripe::add(self.stripe, c, n);
    }
}
