//! db_bench's result line and statistics output.
//!
//! `micros/op` is the sum of the threads' busy time divided by the operations (RocksDB's
//! `seconds_ * 1e6 / done_`), `ops/sec` the operations over the wall time from the first thread's
//! start to the last one's finish, and MB/s the bytes over that wall time.

use siftdb::Stats;
use std::time::Instant;

/// What one thread (or a merge of threads) did in a benchmark.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    /// Operations completed.
    pub done: u64,
    /// Bytes written or read (keys + values), 0 if the benchmark does not count bytes.
    pub bytes: u64,
    /// Operations that found their key (reads and seeks).
    pub found: u64,
    /// Whether to print "(found of done found)".
    pub report_found: bool,
    /// Start and finish instants.
    pub start: Instant,
    /// Finish instant.
    pub finish: Instant,
    /// Busy seconds, summed over merged threads.
    pub seconds: f64,
}

impl ThreadStats {
    /// Empty stats starting now.
    pub fn start() -> ThreadStats {
        let now = Instant::now();
        ThreadStats {
            done: 0,
            bytes: 0,
            found: 0,
            report_found: false,
            start: now,
            finish: now,
            seconds: 0.0,
        }
    }

    /// Marks the end of the thread's work.
    pub fn stop(&mut self) {
        self.finish = Instant::now();
        self.seconds = (self.finish - self.start).as_secs_f64();
    }

    /// Adds another thread's figures (RocksDB `Stats::Merge`).
    pub fn merge(&mut self, o: &ThreadStats) {
        self.done += o.done;
        self.bytes += o.bytes;
        self.found += o.found;
        self.report_found |= o.report_found;
        self.seconds += o.seconds;
        self.start = self.start.min(o.start);
        self.finish = self.finish.max(o.finish);
    }

    /// db_bench's result line for benchmark `name`.
    pub fn line(&self, name: &str) -> String {
        let done = self.done.max(1);
        let elapsed = (self.finish - self.start).as_secs_f64().max(1e-9);
        let mut extra = String::new();
        if self.bytes > 0 {
            extra = format!("{:6.1} MB/s", self.bytes as f64 / 1048576.0 / elapsed);
        }
        if self.report_found {
            if !extra.is_empty() {
                extra.push(' ');
            }
            extra += &format!("({} of {} found)", self.found, self.done);
        }
        format!(
            "{:<12} : {:11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}",
            name,
            self.seconds * 1e6 / done as f64,
            (done as f64 / elapsed) as i64,
            elapsed,
            done,
            if extra.is_empty() { "" } else { " " },
            extra
        )
    }
}

/// The `--statistics` block: RocksDB-named tickers in db_bench's `NAME COUNT : N` format, then
/// siftdb's per-level read counters (`lookups` normalises blocks per lookup).
pub fn statistics(stats: &Stats, lookups: u64) -> String {
    let mut s = String::from("STATISTICS:\n");
    for (name, v) in stats.tickers() {
        s += &format!("{name} COUNT : {v}\n");
    }
    // siftdb's own figures in the same format, for scripts/compare.sh: filter bytes held in
    // memory and the SST entries they cover.
    let filter_bytes: u64 = stats.levels.iter().map(|l| l.filter_bytes).sum();
    let entries: u64 = stats.levels.iter().map(|l| l.entries).sum();
    s += &format!("siftdb.filter.bytes COUNT : {filter_bytes}\n");
    s += &format!("siftdb.sst.entries COUNT : {entries}\n");
    s += "\nper-level reads (siftdb):\n";
    s += &stats.read_amp_table(lookups);
    s
}

/// The `stats` benchmark's text: files, bytes and filters per level.
pub fn level_summary(stats: &Stats) -> String {
    let mut s = String::from(
        "Level  Files       Size  Entries  Filter                 Filter KiB  bits/key\n",
    );
    for l in stats.levels.iter().filter(|l| l.files > 0) {
        let kinds =
            if l.filter_kinds.is_empty() { "none".into() } else { l.filter_kinds.join("+") };
        s += &format!(
            "L{:<5} {:>5} {:>10} {:>8}  {:<22} {:>10.1} {:>9.2}\n",
            l.level,
            l.files,
            l.bytes,
            l.entries,
            kinds,
            l.filter_bytes as f64 / 1024.0,
            l.filter_bits_per_key()
        );
    }
    s += &format!(
        "flushes {} (filter as is {}, rebuilt {}), memtable bytes {}, block cache {} B, write stall {} us\n",
        stats.flushes,
        stats.flush_filter_as_is,
        stats.flush_filter_rebuilt,
        stats.memtable_bytes,
        stats.block_cache_bytes,
        stats.write_stall_micros
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn result_line_matches_db_bench_format() {
        let mut t = ThreadStats::start();
        t.finish = t.start + Duration::from_micros(6_176_000);
        t.seconds = 6.176;
        t.done = 1_000_000;
        t.found = 632_893;
        t.report_found = true;
        assert_eq!(
            t.line("readrandom"),
            "readrandom   :       6.176 micros/op 161917 ops/sec 6.176 seconds 1000000 \
             operations; (632893 of 1000000 found)"
        );
    }
}
