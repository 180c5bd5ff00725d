//! [`Stats`]: what `Db::stats()` reports, including the per-level read-amplification counters
//! named after RocksDB's tickers so the two engines can be compared line by line.

use std::fmt::Write as _;

/// Read counters of one level (or the memtables), as a plain snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadAmp {
    /// Filter probes (`bloom.filter.checked`, not a RocksDB ticker name).
    pub filter_checks: u64,
    /// Probes the filter answered "no": the file was skipped (`rocksdb.bloom.filter.useful`).
    pub filter_useful: u64,
    /// Probes the filter answered "maybe" (`rocksdb.bloom.filter.full.positive`).
    pub filter_positive: u64,
    /// "Maybe" answers for keys the file really holds (`rocksdb.bloom.filter.full.true.positive`).
    pub filter_true_positive: u64,
    /// Index blocks read, from cache or disk.
    pub index_blocks_read: u64,
    /// Data blocks read, from cache or disk.
    pub data_blocks_read: u64,
}

impl ReadAmp {
    /// False positives: "maybe" answers for keys the file does not hold.
    pub fn false_positives(&self) -> u64 {
        self.filter_positive.saturating_sub(self.filter_true_positive)
    }

    /// Observed FPR = false positives / (false positives + useful), as RocksDB users compute it
    /// from the tickers. `None` before any negative probe.
    pub fn observed_fpr(&self) -> Option<f64> {
        let negatives = self.false_positives() + self.filter_useful;
        (negatives > 0).then(|| self.false_positives() as f64 / negatives as f64)
    }
}

/// One level of the LSM tree.
#[derive(Debug, Clone, Default, PartialEq)]
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
    /// Bytes of filter held in memory for the level.
    pub filter_bytes: u64,
    /// Read counters since open.
    pub reads: ReadAmp,
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

/// A snapshot of the engine's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Point lookups served.
    pub gets: u64,
    /// Point lookups that found a value.
    pub gets_found: u64,
    /// Bytes in the active and immutable memtables.
    pub memtable_bytes: u64,
    /// Immutable memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Per level, L0 first; levels without files are included.
    pub levels: Vec<LevelStats>,
    /// Flushes completed.
    pub flushes: u64,
    /// Flushes that wrote the memtable's two-bit filter as is.
    pub flush_filter_as_is: u64,
    /// Flushes that rebuilt the filter from the keys (design.md "Flush filter rule").
    pub flush_filter_rebuilt: u64,
    /// Block cache hits / misses and current usage in bytes.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Bytes held by the block cache.
    pub block_cache_bytes: u64,
    /// Microseconds writers waited for a flush to free a memtable slot.
    pub write_stall_micros: u64,
    /// Writes groups committed, and batches in them (group commit efficiency).
    pub write_groups: u64,
    /// Batches written.
    pub write_batches: u64,
    /// WAL syncs performed.
    pub wal_syncs: u64,
}

impl Stats {
    /// Sum of the read counters of every level.
    pub fn total_reads(&self) -> ReadAmp {
        let mut t = ReadAmp::default();
        for l in &self.levels {
            t.filter_checks += l.reads.filter_checks;
            t.filter_useful += l.reads.filter_useful;
            t.filter_positive += l.reads.filter_positive;
            t.filter_true_positive += l.reads.filter_true_positive;
            t.index_blocks_read += l.reads.index_blocks_read;
            t.data_blocks_read += l.reads.data_blocks_read;
        }
        t
    }

    /// The counters under RocksDB's ticker names (summed over levels), for side-by-side reports.
    pub fn tickers(&self) -> Vec<(&'static str, u64)> {
        let t = self.total_reads();
        vec![
            ("rocksdb.bloom.filter.useful", t.filter_useful),
            ("rocksdb.bloom.filter.full.positive", t.filter_positive),
            ("rocksdb.bloom.filter.full.true.positive", t.filter_true_positive),
            ("rocksdb.block.cache.hit", self.block_cache_hits),
            ("rocksdb.block.cache.miss", self.block_cache_misses),
            ("rocksdb.number.keys.read", self.gets),
            ("rocksdb.stall.micros", self.write_stall_micros),
        ]
    }

    /// The per-level read-amplification table; `lookups` normalises block reads per lookup.
    pub fn read_amp_table(&self, lookups: u64) -> String {
        let mut s = String::new();
        let per = |n: u64| if lookups == 0 { 0.0 } else { n as f64 / lookups as f64 };
        let _ = writeln!(
            s,
            "{:<6} {:>5} {:>9} {:<14} {:>9} {:>9} {:>10} {:>10} {:>8} {:>9} {:>11}",
            "level",
            "files",
            "entries",
            "filter",
            "filter_KiB",
            "bits/key",
            "checks",
            "useful",
            "false_pos",
            "obs_fpr",
            "blocks/op"
        );
        for l in self.levels.iter().filter(|l| l.files > 0 || l.reads.filter_checks > 0) {
            let fpr = l.reads.observed_fpr().map_or("-".into(), |f| format!("{:.3}%", f * 100.0));
            let kinds = if l.filter_kinds.is_empty() { "none".into() } else { l.filter_kinds.join("+") };
            let _ = writeln!(
                s,
                "{:<6} {:>5} {:>9} {:<14} {:>9.1} {:>9.2} {:>10} {:>10} {:>8} {:>9} {:>11.4}",
                format!("L{}", l.level),
                l.files,
                l.entries,
                kinds,
                l.filter_bytes as f64 / 1024.0,
                l.filter_bits_per_key(),
                l.reads.filter_checks,
                l.reads.filter_useful,
                l.reads.false_positives(),
                fpr,
                per(l.reads.data_blocks_read + l.reads.index_blocks_read),
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_fpr_is_false_positives_over_negatives() {
        let r = ReadAmp { filter_useful: 990, filter_positive: 110, filter_true_positive: 100, ..Default::default() };
        assert_eq!(r.false_positives(), 10);
        assert!((r.observed_fpr().unwrap() - 0.01).abs() < 1e-12);
        assert_eq!(ReadAmp::default().observed_fpr(), None);
    }
}
