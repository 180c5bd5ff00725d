//! db_bench's result line (`name : x micros/op y ops/sec ...`) and the per-thread figures it is
//! computed from. No siftdb types: `siftdb bench` and the peers' drivers (tools/rocksdb-bench,
//! tools/fjall-bench) all use this module, so they print the same line from the same arithmetic.
//!
//! `micros/op` is the sum of the threads' busy time divided by the operations (RocksDB's
//! `seconds_ * 1e6 / done_`), `ops/sec` the operations over the wall time from the first thread's
//! start to the last one's finish, and MB/s the bytes over that wall time.

use crate::hist::Histogram;
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
    /// Per-operation latency in nanoseconds, when the benchmark times each operation
    /// (`--histogram`, as db_bench's; the two clock reads per operation cost about 40 ns).
    pub latency: Option<Box<Histogram>>,
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
            latency: None,
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
        match (&mut self.latency, &o.latency) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.latency = Some(b.clone()),
            _ => {}
        }
    }

    /// The latency line printed under the result line when operations were timed:
    /// `latency      : name p50 X us, p99 Y us, p99.9 Z us, max M us (N operations)` (not
    /// starting with the name, which marks result lines).
    pub fn latency_line(&self, name: &str) -> Option<String> {
        let h = self.latency.as_deref()?;
        let us = |ns: u64| ns as f64 / 1e3;
        Some(format!(
            "latency      : {name} p50 {:.2} us, p99 {:.2} us, p99.9 {:.2} us, max {:.2} us \
             ({} operations)",
            us(h.quantile(0.5)),
            us(h.quantile(0.99)),
            us(h.quantile(0.999)),
            us(h.max()),
            h.count()
        ))
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
