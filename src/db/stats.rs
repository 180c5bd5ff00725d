//! [`Stats`]: what `Db::stats()` reports, including the per-level read-amplification counters
//! named after RocksDB's tickers so the two engines can be compared line by line.

use super::{DbInner, SuperVersion};
use crate::limits::NUM_LEVELS;
pub use crate::sst::ReadStats;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One level of the LSM tree.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct LevelStats {
    /// Level number.
    pub level: usize,
    /// SST files.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Entries (versions and tombstones).
    pub entries: u64,
    /// Filter kinds present (snake-case names, e.g. `two_bit_bloom`), or "none".
    pub filter_kinds: Vec<String>,
    /// Bytes of memory the level's filters take while their tables are open (taken from each
    /// file's metadata, so every table counts whether the table cache holds it open or not).
    pub filter_bytes: u64,
    /// The FPR the filter policy configures for the level now: the flush filter's theoretical
    /// FPR on L0, the compaction policy's (fixed or Monkey) on deeper levels; `None` without a
    /// filter.
    pub configured_fpr: Option<f64>,
    /// The FPR the level's filters were built for (each file's `TableInfo::filter_fpr`: from
    /// the filter's parameters, or its kind and bits per key): the mean over L0's files (a
    /// lookup probes each), the entries-weighted mean over a sorted level's (a lookup probes
    /// the one covering its key); files without a filter left out. It differs from
    /// `configured_fpr` where files were built under an earlier plan (allocations that follow
    /// the tree's shape) or where the flush filter's power-of-two size gives more bits than
    /// configured. `None` without filters.
    pub built_fpr: Option<f64>,
    /// Read counters of point lookups (get, contains_key, multi_get) since open.
    pub reads: ReadStats,
    /// Data blocks read by iterators and cursors since open (cache hits, misses, file reads),
    /// and in the filter fields what the scan filters answered for bounded scans: checks,
    /// files skipped (`filter_useful`), passed (`filter_positive`) and passed files that held
    /// an entry of the range (`filter_true_positive`, known at the scan's first positioning).
    pub scan_reads: ReadStats,
}

impl LevelStats {
    /// Filter bits per entry of the level (0 when empty).
    pub fn filter_bits_per_key(&self) -> f64 {
        if self.entries == 0 {
            0.0
        } else {
            self.filter_bytes as f64 * 8.0 / self.entries as f64
        }
    }
}

/// File figures of one keyspace (every live keyspace is listed, "default" first).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyspaceStats {
    /// The keyspace's name.
    pub name: String,
    /// SST files holding it (a file holds one keyspace).
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Entries in those files.
    pub entries: u64,
    /// Filter kinds of those files ("none" for a file without a filter).
    pub filter_kinds: Vec<String>,
}

/// Where the database's memory goes, from [`crate::Db::memory_usage`]. Every figure is bytes held
/// now; together they are what siftdb itself allocates for data (not the page cache or mapped
/// file pages, not per-thread scratch buffers, and not small per-object overheads).
/// design.md#memory-accounting, says what bounds each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryUsage {
    /// The active and frozen memtables (keys, values and per-entry overhead; bounded by
    /// `memtable_size * (1 + max_immutable_memtables)`).
    pub memtables: u64,
    /// Everything in the block cache: `block_cache_data + block_cache_index +
    /// block_cache_filter` (bounded by `Options::block_cache_bytes`, plus pinned entries beyond
    /// their shard's share).
    pub block_cache: u64,
    /// Of `block_cache`: data blocks.
    pub block_cache_data: u64,
    /// Of `block_cache`: index blocks (`cache_index_and_filter_blocks`).
    pub block_cache_index: u64,
    /// Of `block_cache`: filter blocks (`cache_index_and_filter_blocks`).
    pub block_cache_filter: u64,
    /// Of `block_cache`: pinned index and filter blocks (never evicted while their L0 table
    /// is open; `pin_l0_filter_and_index_blocks_in_cache`).
    pub block_cache_pinned: u64,
    /// The block cache's capacity (`Options::block_cache_bytes`).
    pub block_cache_capacity: u64,
    /// Filter blocks held by the open tables outside the block cache (the default; zero with
    /// `cache_index_and_filter_blocks`). Bounded only through `max_open_files`.
    pub table_filters: u64,
    /// Index blocks (and their search summaries) and range tombstones held by the open tables
    /// outside the block cache (range tombstones stay there in every mode).
    pub table_indexes: u64,
    /// The open table readers themselves (struct, properties' keys, path, digested zstd
    /// compression dictionary): the table cache's own memory, bounded through
    /// `max_open_files`.
    pub table_readers: u64,
    /// Free space in the huge-page chunks that hold table filters
    /// (`Options::filters_on_huge_pages`): mapped, resident once touched, in use by no filter
    /// now. The chunks are shared by every `Db` in the process, so this figure is the
    /// process's, not this database's alone.
    pub filter_arena_free: u64,
    /// Tables open now (each also holds a file descriptor, and a mapping with `mmap_reads`).
    pub open_tables: usize,
    /// Of `open_tables`: those whose index and filter are pinned in the block cache.
    pub pinned_tables: usize,
}

impl MemoryUsage {
    /// The sum of the byte figures (the block cache counted once, as a whole).
    pub fn total(&self) -> u64 {
        self.memtables
            + self.block_cache
            + self.table_filters
            + self.table_indexes
            + self.table_readers
            + self.filter_arena_free
    }
}

impl std::fmt::Display for MemoryUsage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        writeln!(f, "memory usage (MiB):")?;
        writeln!(f, "  memtables            {:>10.1}", mib(self.memtables))?;
        writeln!(
            f,
            "  block cache          {:>10.1}  (capacity {:.1})",
            mib(self.block_cache),
            mib(self.block_cache_capacity)
        )?;
        writeln!(f, "    data blocks        {:>10.1}", mib(self.block_cache_data))?;
        writeln!(f, "    index blocks       {:>10.1}", mib(self.block_cache_index))?;
        writeln!(f, "    filter blocks      {:>10.1}", mib(self.block_cache_filter))?;
        writeln!(
            f,
            "    pinned (of above)  {:>10.1}  ({} pinned tables)",
            mib(self.block_cache_pinned),
            self.pinned_tables
        )?;
        writeln!(
            f,
            "  table filters        {:>10.1}  ({} open tables, outside the block cache)",
            mib(self.table_filters),
            self.open_tables
        )?;
        writeln!(
            f,
            "  table indexes        {:>10.1}  (and range tombstones)",
            mib(self.table_indexes)
        )?;
        writeln!(f, "  table readers        {:>10.1}", mib(self.table_readers))?;
        writeln!(
            f,
            "  filter arena free    {:>10.1}  (huge-page chunks for table filters: free space)",
            mib(self.filter_arena_free)
        )?;
        write!(f, "  total                {:>10.1}", mib(self.total()))
    }
}

/// A snapshot of the engine's counters.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Point lookups served.
    pub gets: u64,
    /// Point lookups that found a value.
    pub gets_found: u64,
    /// Iterator and cursor positionings (seek, seek_for_prev, seek_to_first/last).
    pub seeks: u64,
    /// Bytes in the active and immutable memtables.
    pub memtable_bytes: u64,
    /// Immutable memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Per level, L0 first; levels without files are included.
    pub levels: Vec<LevelStats>,
    /// Per-keyspace file figures.
    pub keyspaces: Vec<KeyspaceStats>,
    /// Flushes completed.
    pub flushes: u64,
    /// Flushes that wrote the memtable's two-bit filter as is.
    pub flush_filter_as_is: u64,
    /// Flushed files whose filter was built from their keys, of any kind (design.md#flush).
    pub flush_filter_rebuilt: u64,
    /// Block cache hits / misses and current usage in bytes.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Bytes held by the block cache.
    pub block_cache_bytes: u64,
    /// Table lookups that found their table open in the table cache.
    pub table_cache_hits: u64,
    /// Table lookups that had to open the file (each one an open of the file and a read of
    /// its footer, properties, index and filter).
    pub table_cache_misses: u64,
    /// Tables the table cache holds open now (at most `Options::max_open_files`).
    pub table_cache_open_tables: usize,
    /// Microseconds writers waited for a flush to free a memtable slot.
    pub write_stall_micros: u64,
    /// Writes groups committed, and batches in them (group commit efficiency).
    pub write_groups: u64,
    /// Batches written.
    pub write_batches: u64,
    /// WAL syncs performed.
    pub wal_syncs: u64,
    /// Key and value bytes written by users (the denominator of write amplification).
    pub user_bytes: u64,
    /// Bytes of L0 files written by flushes.
    pub flush_bytes_written: u64,
    /// Compactions that rewrote files.
    pub compactions: u64,
    /// Files moved down a level without rewriting.
    pub trivial_moves: u64,
    /// Key ranges merged by compactions that split their input into subcompactions
    /// (`Options::max_subcompactions`); 0 while every compaction ran on one thread.
    pub subcompactions: u64,
    /// Bytes of compaction input files.
    pub compaction_bytes_read: u64,
    /// Bytes of compaction output files.
    pub compaction_bytes_written: u64,
    /// Compaction outputs whose static filter could not be built and got a blocked Bloom
    /// filter instead.
    pub filter_fallbacks: u64,
    /// Write batches delayed 1 ms because L0 reached `l0_slowdown_writes_trigger`.
    pub l0_slowdowns: u64,
    /// Write batches that waited because L0 reached `l0_stop_writes_trigger`.
    pub l0_stops: u64,
    /// Microseconds of those L0 delays and stops (also included in `write_stall_micros`).
    pub l0_stall_micros: u64,
    /// Live blob files (design.md#key-value-separation). Their bytes count in
    /// `flush_bytes_written` and `compaction_bytes_written` when written.
    pub blob_files: u64,
    /// Bytes of the values in live blob files.
    pub blob_bytes: u64,
    /// Of `blob_bytes`, those no table refers to any more (garbage until the file is deleted).
    pub blob_garbage_bytes: u64,
    /// Values compactions relocated out of old blob files (garbage collection).
    pub blob_relocated: u64,
}

impl Stats {
    /// Write amplification: bytes written to SSTs by flushes and compactions per byte of user
    /// data written (0 before any write).
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes == 0 {
            0.0
        } else {
            (self.flush_bytes_written + self.compaction_bytes_written) as f64
                / self.user_bytes as f64
        }
    }

    /// Sum of the point-lookup read counters of every level.
    pub fn total_reads(&self) -> ReadStats {
        self.levels.iter().fold(ReadStats::default(), |t, l| t.plus(&l.reads))
    }

    /// Sum of the scan read counters of every level.
    pub fn total_scan_reads(&self) -> ReadStats {
        self.levels.iter().fold(ReadStats::default(), |t, l| t.plus(&l.scan_reads))
    }

    /// Read counters accumulated since `earlier` (file figures stay those of `self`).
    pub fn since(&self, earlier: &Stats) -> Stats {
        let mut d = self.clone();
        for (l, e) in d.levels.iter_mut().zip(&earlier.levels) {
            l.reads = l.reads.minus(&e.reads);
            l.scan_reads = l.scan_reads.minus(&e.scan_reads);
        }
        d.seeks -= earlier.seeks.min(d.seeks);
        d.gets -= earlier.gets.min(d.gets);
        d.gets_found -= earlier.gets_found.min(d.gets_found);
        d
    }

    /// The deepest level that holds files (RocksDB's "last level" of its
    /// `rocksdb.last.level.read.*` tickers); `None` for an empty tree.
    pub fn last_level(&self) -> Option<usize> {
        self.levels.iter().filter(|l| l.files > 0).map(|l| l.level).max()
    }

    /// The counters under RocksDB's ticker names (summed over levels), for side-by-side reports.
    /// Block-cache and file-read tickers count point lookups and scans together, as RocksDB's
    /// do. File reads (`rocksdb.*last.level.read.*`) are data blocks only, split into the last
    /// level ([`Stats::last_level`]) and the others as RocksDB does; index and filter blocks
    /// read from the file again are their cache misses (`rocksdb.block.cache.index.miss`,
    /// `.filter.miss`, nonzero only with `cache_index_and_filter_blocks` or partitioned filters,
    /// whose partitions are read into the block cache on demand).
    pub fn tickers(&self) -> Vec<(&'static str, u64)> {
        let filters = self.total_reads();
        let t = filters.plus(&self.total_scan_reads());
        let last = self.last_level();
        let last_reads = self
            .levels
            .iter()
            .filter(|l| Some(l.level) == last)
            .fold(ReadStats::default(), |a, l| a.plus(&l.reads).plus(&l.scan_reads));
        let upper = t.minus(&last_reads);
        vec![
            ("rocksdb.bloom.filter.useful", filters.filter_useful),
            ("rocksdb.bloom.filter.full.positive", filters.filter_positive),
            ("rocksdb.bloom.filter.full.true.positive", filters.filter_true_positive),
            ("rocksdb.block.cache.hit", self.block_cache_hits),
            ("rocksdb.block.cache.miss", self.block_cache_misses),
            ("rocksdb.block.cache.data.hit", t.block_cache_hits),
            ("rocksdb.block.cache.data.miss", t.block_cache_misses),
            ("rocksdb.block.cache.index.hit", t.index_cache_hits),
            ("rocksdb.block.cache.index.miss", t.index_cache_misses),
            ("rocksdb.block.cache.filter.hit", t.filter_cache_hits),
            ("rocksdb.block.cache.filter.miss", t.filter_cache_misses),
            ("rocksdb.last.level.read.count", last_reads.file_reads),
            ("rocksdb.last.level.read.bytes", last_reads.file_read_bytes),
            ("rocksdb.non.last.level.read.count", upper.file_reads),
            ("rocksdb.non.last.level.read.bytes", upper.file_read_bytes),
            ("rocksdb.no.file.opens", self.table_cache_misses),
            ("rocksdb.number.keys.read", self.gets),
            ("rocksdb.number.db.seek", self.seeks),
            ("rocksdb.stall.micros", self.write_stall_micros),
            // Bytes of tables written by flushes and by compactions (write amplification =
            // their sum / the user bytes written, `rocksdb.bytes.written`).
            ("rocksdb.flush.write.bytes", self.flush_bytes_written),
            ("rocksdb.compact.write.bytes", self.compaction_bytes_written),
            ("rocksdb.compact.read.bytes", self.compaction_bytes_read),
            ("rocksdb.bytes.written", self.user_bytes),
            ("rocksdb.blobdb.gc.num.keys.relocated", self.blob_relocated),
        ]
    }

    /// The per-level read-amplification table; `lookups` normalises block reads per lookup.
    /// `blocks/op` counts index and data blocks consulted (cached or not); `file_rd/op` the
    /// data blocks read from the file (device reads with `Options::direct_reads`), and
    /// `KiB/op` their bytes.
    pub fn read_amp_table(&self, lookups: u64) -> String {
        let mut s = String::new();
        let per = |n: u64| if lookups == 0 { 0.0 } else { n as f64 / lookups as f64 };
        let _ = writeln!(
            s,
            "{:<6} {:>5} {:>9} {:<14} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>8} {:>9} {:>11} {:>10} {:>8}",
            "level",
            "files",
            "entries",
            "filter",
            "filter_KiB",
            "bits/key",
            "cfg_fpr",
            "built_fpr",
            "checks",
            "useful",
            "false_pos",
            "obs_fpr",
            "blocks/op",
            "file_rd/op",
            "KiB/op"
        );
        for l in self.levels.iter().filter(|l| l.files > 0 || l.reads.filter_checks > 0) {
            let fpr = l.reads.observed_fpr().map_or("-".into(), |f| format!("{:.3}%", f * 100.0));
            let kinds =
                if l.filter_kinds.is_empty() { "none".into() } else { l.filter_kinds.join("+") };
            let pct = |x: Option<f64>| x.map_or("-".into(), |f| format!("{:.3}%", f * 100.0));
            let (cfg, built) = (pct(l.configured_fpr), pct(l.built_fpr));
            let _ = writeln!(
                s,
                "{:<6} {:>5} {:>9} {:<14} {:>9.1} {:>9.2} {:>9} {:>9} {:>10} {:>10} {:>8} {:>9} {:>11.4} {:>10.4} {:>8.3}",
                format!("L{}", l.level),
                l.files,
                l.entries,
                kinds,
                l.filter_bytes as f64 / 1024.0,
                l.filter_bits_per_key(),
                cfg,
                built,
                l.reads.filter_checks,
                l.reads.filter_useful,
                l.reads.false_positives(),
                fpr,
                per(l.reads.data_blocks_read + l.reads.index_blocks_read),
                per(l.reads.file_reads),
                per(l.reads.file_read_bytes) / 1024.0,
            );
        }
        s
    }

    /// Per level, the data blocks iterators and cursors read, per positioning (`seeks`, e.g.
    /// the operations of a seekrandom run): blocks consulted, how many the block cache served,
    /// and the file reads (device reads with `Options::direct_reads`) and their KiB; then what
    /// the scan filters (prefix and range filters, design.md#scan-filters) did for bounded
    /// scans: files asked, files skipped, false positives (a file passed that held no entry of
    /// the range) and the observed FPR among files without one. Empty when no scan read a
    /// block or asked a filter.
    pub fn scan_read_table(&self, seeks: u64) -> String {
        let mut s = String::new();
        let used =
            |l: &&LevelStats| l.scan_reads.data_blocks_read > 0 || l.scan_reads.filter_checks > 0;
        if !self.levels.iter().any(|l| used(&l)) {
            return s;
        }
        let per = |n: u64| if seeks == 0 { 0.0 } else { n as f64 / seeks as f64 };
        let _ = writeln!(
            s,
            "{:<6} {:>11} {:>12} {:>12} {:>11} {:>10} {:>10} {:>10} {:>9} {:>9}",
            "level",
            "blocks",
            "cache_hits",
            "blocks/seek",
            "file_rd/seek",
            "KiB/seek",
            "sf_checks",
            "skipped",
            "false_pos",
            "obs_fpr"
        );
        for l in self.levels.iter().filter(used) {
            let r = &l.scan_reads;
            let fpr = r.observed_fpr().map_or("-".into(), |f| format!("{:.3}%", f * 100.0));
            let _ = writeln!(
                s,
                "{:<6} {:>11} {:>12} {:>12.4} {:>11.4} {:>10.3} {:>10} {:>10} {:>9} {:>9}",
                format!("L{}", l.level),
                r.data_blocks_read,
                r.block_cache_hits,
                per(r.data_blocks_read),
                per(r.file_reads),
                per(r.file_read_bytes) / 1024.0,
                r.filter_checks,
                r.filter_useful,
                r.false_positives(),
                fpr,
            );
        }
        s
    }
}

/// Builds the [`Stats`] snapshot.
pub(crate) fn stats(inner: &DbInner) -> Stats {
    let sv = inner.super_version();
    let c = &inner.counters;
    // The plan of the next compaction output: beside the L0 files there are now.
    let l0 = super::plan::l0_runs_beside(&sv.version, 0, 0);
    let shape = super::plan::live_shape(inner, &sv.version, l0, super::plan::writes_of(&sv));
    let plan = crate::filter_plan::plan(&inner.opts.filter_policy, &shape);
    let levels = (0..NUM_LEVELS)
        .map(|level| {
            let files = &sv.version.levels()[level];
            let mut kinds: Vec<String> = Vec::new();
            for f in files {
                let k = f.info.filter_kind.map_or("none", |k| k.name()).to_string();
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            LevelStats {
                level,
                files: files.len(),
                bytes: files.iter().map(|f| f.meta.size).sum(),
                entries: files.iter().map(|f| f.meta.entries).sum(),
                filter_kinds: kinds,
                filter_bytes: files.iter().map(|f| f.info.filter_memory_bytes).sum(),
                configured_fpr: plan.configured_fpr(level),
                built_fpr: level_built_fpr(level, files),
                reads: inner.reads.level(level),
                scan_reads: inner.reads.scan_level(level),
            }
        })
        .collect();
    let blobs: Vec<crate::sst::blob::BlobMeta> =
        inner.manifest.lock().blobs().values().cloned().collect();
    let (hits, misses, usage) = match &inner.cache {
        Some(cache) => (cache.hits(), cache.misses(), cache.usage() as u64),
        None => (0, 0, 0),
    };
    Stats {
        gets: inner.reads.gets(),
        gets_found: inner.reads.gets_found(),
        seeks: inner.reads.seeks(),
        memtable_bytes: std::iter::once(&sv.mem)
            .chain(sv.imm.iter())
            .map(|m| m.approximate_bytes() as u64)
            .sum(),
        immutable_memtables: sv.imm.len(),
        levels,
        keyspaces: keyspace_stats(inner, &sv),
        flushes: c.flushes.load(Ordering::Relaxed),
        flush_filter_as_is: c.flush_filter_as_is.load(Ordering::Relaxed),
        flush_filter_rebuilt: c.flush_filter_rebuilt.load(Ordering::Relaxed),
        block_cache_hits: hits,
        block_cache_misses: misses,
        block_cache_bytes: usage,
        table_cache_hits: inner.tables.hits(),
        table_cache_misses: inner.tables.misses(),
        table_cache_open_tables: inner.tables.open_tables(),
        write_stall_micros: c.write_stall_micros.load(Ordering::Relaxed),
        write_groups: c.write_groups.load(Ordering::Relaxed),
        write_batches: c.write_batches.load(Ordering::Relaxed),
        wal_syncs: c.wal_syncs.load(Ordering::Relaxed),
        user_bytes: c.user_bytes.load(Ordering::Relaxed),
        flush_bytes_written: c.flush_bytes_written.load(Ordering::Relaxed),
        compactions: c.compactions.load(Ordering::Relaxed),
        trivial_moves: c.trivial_moves.load(Ordering::Relaxed),
        subcompactions: c.subcompactions.load(Ordering::Relaxed),
        compaction_bytes_read: c.compaction_bytes_read.load(Ordering::Relaxed),
        compaction_bytes_written: c.compaction_bytes_written.load(Ordering::Relaxed),
        filter_fallbacks: c.filter_fallbacks.load(Ordering::Relaxed),
        l0_slowdowns: c.l0_slowdowns.load(Ordering::Relaxed),
        l0_stops: c.l0_stops.load(Ordering::Relaxed),
        l0_stall_micros: c.l0_stall_micros.load(Ordering::Relaxed),
        blob_files: blobs.len() as u64,
        blob_bytes: blobs.iter().map(|b| b.bytes).sum(),
        blob_garbage_bytes: blobs.iter().map(|b| b.garbage_bytes).sum(),
        blob_relocated: c.blob_relocated.load(Ordering::Relaxed),
    }
}

/// File figures per live keyspace.
fn keyspace_stats(inner: &DbInner, sv: &SuperVersion) -> Vec<KeyspaceStats> {
    let set = inner.keyspaces.load();
    let ids = std::iter::once((0, crate::keyspace_options::DEFAULT_KEYSPACE_NAME.to_string()))
        .chain(set.live.iter().map(|(&id, k)| (id, k.name.to_string())));
    ids.map(|(id, name)| {
        let mut s = KeyspaceStats { name, ..KeyspaceStats::default() };
        for f in sv.version.levels().iter().flatten().filter(|f| f.meta.keyspace == id) {
            s.files += 1;
            s.bytes += f.meta.size;
            s.entries += f.meta.entries;
            let k = f.info.filter_kind.map_or("none", |k| k.name()).to_string();
            if !s.filter_kinds.contains(&k) {
                s.filter_kinds.push(k);
            }
        }
        s
    })
    .collect()
}

/// The FPR the filters of `level`'s `files` were built for (see `LevelStats::built_fpr`).
fn level_built_fpr(level: usize, files: &[Arc<crate::version::TableFile>]) -> Option<f64> {
    let (mut sum, mut weight) = (0.0, 0.0);
    for f in files {
        let Some(fpr) = f.info.filter_fpr else { continue };
        let w = if level == 0 { 1.0 } else { f.meta.entries as f64 };
        sum += w * fpr;
        weight += w;
    }
    (weight > 0.0).then(|| sum / weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_fpr_is_false_positives_over_negatives() {
        let r = ReadStats {
            filter_useful: 990,
            filter_positive: 110,
            filter_true_positive: 100,
            ..Default::default()
        };
        assert_eq!(r.false_positives(), 10);
        assert!((r.observed_fpr().unwrap() - 0.01).abs() < 1e-12);
        assert_eq!(ReadStats::default().observed_fpr(), None);
    }

    #[test]
    fn file_reads_split_into_last_level_and_the_others() {
        let level = |level, files, file_reads| LevelStats {
            level,
            files,
            reads: ReadStats {
                file_reads,
                file_read_bytes: file_reads * 4101,
                ..Default::default()
            },
            ..Default::default()
        };
        let s = Stats {
            levels: vec![level(0, 1, 3), level(1, 2, 5), level(2, 4, 7), level(3, 0, 0)],
            ..Default::default()
        };
        assert_eq!(s.last_level(), Some(2));
        let t: std::collections::HashMap<_, _> = s.tickers().into_iter().collect();
        assert_eq!(t["rocksdb.last.level.read.count"], 7);
        assert_eq!(t["rocksdb.last.level.read.bytes"], 7 * 4101);
        assert_eq!(t["rocksdb.non.last.level.read.count"], 8);
        assert_eq!(t["rocksdb.non.last.level.read.bytes"], 8 * 4101);
        let table = s.read_amp_table(10);
        assert!(table.lines().next().unwrap().contains("file_rd/op"), "{table}");
        assert!(table.contains("0.7000"), "{table}");
    }
}
