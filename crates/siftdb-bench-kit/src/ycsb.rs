//! The YCSB core workloads (Cooper et al., "Benchmarking Cloud Serving Systems with YCSB",
//! SoCC 2010), engine-agnostic, so that `siftdb ycsb`, `siftdb bench --benchmarks=ycsba` and the
//! peers' drivers (tools/rocksdb-bench, tools/fjall-bench) run the same requests. An engine
//! implements [`YcsbEngine`] (read, write, scan); [`load`] and [`run`] do the rest: record keys,
//! request distributions, the operation mix and one latency histogram per operation type.
//!
//! | benchmark | mix | request distribution |
//! |---|---|---|
//! | `ycsba` | 50% read, 50% update | scrambled zipfian (0.99) |
//! | `ycsbb` | 95% read, 5% update | scrambled zipfian |
//! | `ycsbc` | 100% read | scrambled zipfian |
//! | `ycsbd` | 95% read, 5% insert | latest |
//! | `ycsbe` | 95% scan (1..=100 entries, uniform), 5% insert | scrambled zipfian (scan start) |
//! | `ycsbf` | 50% read, 50% read-modify-write | scrambled zipfian |
//!
//! `ycsbload` is YCSB's load phase: records `0..records`, each written once by one put, the
//! record numbers split into one contiguous share per thread. Record `n`'s key is YCSB's hashed
//! key `user<fnv1a64(n)>` (insertorder=hashed), so a load in record order writes keys in random
//! order. A record is one value of the record size (YCSB's 10 fields of 100 bytes stored as one
//! value; an update rewrites the whole record, a slight over-statement of YCSB's one-field
//! update). Values are db_bench's (`keys::ValueGen`), so compression sees the same data as in
//! the db_bench workloads.

use crate::hist::Histogram;
use crate::keys::ValueGen;
use crate::result_line::ThreadStats;
use crate::workloads::{run_threads, Budget};
use crate::zipf::{fnv1a64, ScrambledZipfian, Zipfian, THETA};
use siftdb::filter::rng::SplitMix64;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// A YCSB operation type, in YCSB's report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read one record.
    Read,
    /// Rewrite one existing record.
    Update,
    /// Write a new record (the next record number).
    Insert,
    /// Read 1..=100 records from a start key on.
    Scan,
    /// Read one record, then rewrite it.
    ReadModifyWrite,
}

impl Op {
    /// Every operation type, in report order.
    pub const ALL: [Op; 5] = [Op::Read, Op::Update, Op::Insert, Op::Scan, Op::ReadModifyWrite];

    /// YCSB's name of the operation (`READ`, `UPDATE`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "READ",
            Op::Update => "UPDATE",
            Op::Insert => "INSERT",
            Op::Scan => "SCAN",
            Op::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One of the core workloads A-F.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Update heavy.
    A,
    /// Read mostly.
    B,
    /// Read only.
    C,
    /// Read latest.
    D,
    /// Short ranges.
    E,
    /// Read-modify-write.
    F,
}

impl Workload {
    /// The workload of a letter `a`..`f` (either case).
    pub fn from_letter(s: &str) -> Option<Workload> {
        Some(match s.to_ascii_lowercase().as_str() {
            "a" => Workload::A,
            "b" => Workload::B,
            "c" => Workload::C,
            "d" => Workload::D,
            "e" => Workload::E,
            "f" => Workload::F,
            _ => return None,
        })
    }

    /// The workload a benchmark name names (`ycsba`..`ycsbf`), or `None`.
    pub fn parse(name: &str) -> Option<Workload> {
        name.strip_prefix("ycsb").filter(|l| l.len() == 1).and_then(Workload::from_letter)
    }

    /// The workload's letter, lower case.
    pub fn letter(self) -> char {
        match self {
            Workload::A => 'a',
            Workload::B => 'b',
            Workload::C => 'c',
            Workload::D => 'd',
            Workload::E => 'e',
            Workload::F => 'f',
        }
    }

    /// (probability, operation) pairs summing to 1.
    fn mix(self) -> &'static [(f64, Op)] {
        match self {
            Workload::A => &[(0.5, Op::Read), (0.5, Op::Update)],
            Workload::B => &[(0.95, Op::Read), (0.05, Op::Update)],
            Workload::C => &[(1.0, Op::Read)],
            Workload::D => &[(0.95, Op::Read), (0.05, Op::Insert)],
            Workload::E => &[(0.95, Op::Scan), (0.05, Op::Insert)],
            Workload::F => &[(0.5, Op::Read), (0.5, Op::ReadModifyWrite)],
        }
    }

    /// The operation a uniform draw `r` in [0, 1) picks.
    fn pick(self, r: f64) -> Op {
        let mix = self.mix();
        let mut acc = 0.0;
        for &(p, op) in mix {
            acc += p;
            if r < acc {
                return op;
            }
        }
        mix[mix.len() - 1].1
    }
}

/// The benchmark name of YCSB's load phase.
pub const LOAD: &str = "ycsbload";

/// Whether `name` is one of this module's benchmarks (`ycsbload`, `ycsba`..`ycsbf`).
pub fn is_benchmark(name: &str) -> bool {
    name == LOAD || Workload::parse(name).is_some()
}

/// One engine's operations, as the workloads need them.
pub trait YcsbEngine: Sync {
    /// The engine's error.
    type Error: Send;
    /// Reads `key`: the length of its value, or `None` when absent.
    fn read(&self, key: &[u8]) -> Result<Option<usize>, Self::Error>;
    /// Writes `key` (an insert or an update: YCSB's records are whole values).
    fn write(&self, key: &[u8], value: &[u8]) -> Result<(), Self::Error>;
    /// Reads up to `len` entries in key order from the first key at or after `start`; the
    /// number read.
    fn scan(&self, start: &[u8], len: usize) -> Result<usize, Self::Error>;
}

/// Record `n`'s key, `user<fnv1a64(n)>`, into `out` (cleared first).
pub fn record_key(n: u64, out: &mut Vec<u8>) {
    out.clear();
    write!(out, "user{}", fnv1a64(n)).expect("writing to a Vec cannot fail");
}

/// Loads records `0..records` of `record_size` bytes on `threads` threads (thread i seeded
/// `seed + i`, writing its contiguous share of the record numbers). `done` counts records,
/// `bytes` their keys and values.
pub fn load<T: YcsbEngine>(
    engine: &T,
    records: u64,
    record_size: usize,
    threads: usize,
    seed: u64,
) -> Result<ThreadStats, T::Error> {
    let threads = threads.max(1) as u64;
    let next_thread = AtomicU64::new(0);
    run_threads(threads as usize, seed, record_size, &|_, values, st| {
        let i = next_thread.fetch_add(1, Ordering::Relaxed);
        let (from, to) = (records * i / threads, records * (i + 1) / threads);
        let mut key = Vec::with_capacity(24);
        for n in from..to {
            record_key(n, &mut key);
            let v = values.next(record_size);
            engine.write(&key, v)?;
            st.bytes += (key.len() + v.len()) as u64;
        }
        st.done = to - from;
        Ok(())
    })
}

/// What to run: `workload` over the `records` [`load`] wrote, on `threads` threads seeded
/// `seed + i`, each stopping after `ops` operations or, when `duration_secs > 0`, after that
/// many seconds.
#[derive(Debug, Clone, Copy)]
pub struct YcsbRun {
    /// The workload.
    pub workload: Workload,
    /// Records loaded (record numbers `0..records`); inserts continue from there.
    pub records: u64,
    /// Bytes of each record written.
    pub record_size: usize,
    /// Client threads.
    pub threads: usize,
    /// Base seed.
    pub seed: u64,
    /// Operations per thread (when `duration_secs` is 0).
    pub ops: u64,
    /// Seconds per run, 0 for a count of `ops`.
    pub duration_secs: u64,
}

/// The figures of a workload run.
#[derive(Clone)]
pub struct YcsbStats {
    /// Operations of every type (`done`), bytes read and written, wall and busy time.
    pub st: ThreadStats,
    /// Per operation type (indexed as [`Op::ALL`]), nanoseconds per operation.
    pub latency: [Histogram; 5],
    /// Reads (of READ and READ-MODIFY-WRITE) that found their record.
    pub found: u64,
    /// Reads done (of READ and READ-MODIFY-WRITE).
    pub reads: u64,
}

impl YcsbStats {
    fn empty() -> YcsbStats {
        YcsbStats { st: ThreadStats::start(), latency: Default::default(), found: 0, reads: 0 }
    }

    fn merge(&mut self, o: &YcsbStats) {
        for (a, b) in self.latency.iter_mut().zip(&o.latency) {
            a.merge(b);
        }
        self.found += o.found;
        self.reads += o.reads;
    }

    /// The operation types the run did, with their histograms.
    pub fn ops(&self) -> impl Iterator<Item = (Op, &Histogram)> {
        Op::ALL.into_iter().zip(&self.latency).filter(|(_, h)| h.count() > 0)
    }

    /// db_bench's result line for `name`, then one latency line per operation type
    /// (`latency      : name.READ p50 ...`, the kit's latency line) and a line of the reads
    /// that found their record (all of them when the records were loaded).
    pub fn lines(&self, name: &str) -> String {
        let mut out = self.st.line(name);
        for (op, h) in self.ops() {
            let mut one = ThreadStats::start();
            one.latency = Some(Box::new(h.clone()));
            let line = one.latency_line(&format!("{name}.{}", op.name()));
            out += &format!("\n{}", line.expect("the histogram was just set"));
        }
        if self.reads > 0 {
            out += &format!("\nycsb         : {name} reads found {} of {}", self.found, self.reads);
        }
        out
    }

    /// The report in YCSB's `[OP], metric, value` format.
    pub fn ycsb_report(&self, run: &YcsbRun) -> String {
        let secs = (self.st.finish - self.st.start).as_secs_f64().max(1e-9);
        let mut out = format!(
            "[OVERALL], Workload, {} ({} threads, {} records)\n",
            run.workload.letter(),
            run.threads.max(1),
            run.records
        );
        out += &format!("[OVERALL], RunTime(ms), {:.0}\n", secs * 1e3);
        out += &format!("[OVERALL], Throughput(ops/sec), {:.0}\n", self.st.done as f64 / secs);
        let us = |ns: u64| ns as f64 / 1e3;
        for (op, h) in self.ops() {
            let name = op.name();
            out += &format!("[{name}], Operations, {}\n", h.count());
            out += &format!("[{name}], AverageLatency(us), {:.3}\n", h.mean() / 1e3);
            out += &format!("[{name}], 50thPercentileLatency(us), {:.3}\n", us(h.quantile(0.5)));
            out += &format!("[{name}], 99thPercentileLatency(us), {:.3}\n", us(h.quantile(0.99)));
            out += &format!("[{name}], 99.9PercentileLatency(us), {:.3}\n", us(h.quantile(0.999)));
        }
        out
    }
}

/// The record numbers a run's threads share: the next one to insert, and how many are known
/// to be present (workload D reads the latest of those). Inserts finish out of order across
/// threads, so a record counts as present only once every record below it has been written
/// (YCSB's acknowledged counter): `acked` is that limit, `pending` the records written above it.
struct Inserts {
    next: AtomicU64,
    acked: AtomicU64,
    pending: Mutex<std::collections::BTreeSet<u64>>,
}

impl Inserts {
    fn new(records: u64) -> Inserts {
        Inserts {
            next: AtomicU64::new(records),
            acked: AtomicU64::new(records),
            pending: Mutex::new(Default::default()),
        }
    }

    /// Record `n` has been written.
    fn ack(&self, n: u64) {
        let mut pending = self.pending.lock().expect("a benchmark thread panicked");
        pending.insert(n);
        let mut limit = self.acked.load(Ordering::Acquire);
        while pending.remove(&limit) {
            limit += 1;
        }
        self.acked.store(limit, Ordering::Release);
    }
}

/// Runs `run.workload` against `engine` and returns its figures.
pub fn run<T: YcsbEngine>(engine: &T, run: &YcsbRun) -> Result<YcsbStats, T::Error> {
    let records = run.records.max(1);
    let inserts = Inserts::new(records);
    let merged = Mutex::new(YcsbStats::empty());
    let st = run_threads(run.threads, run.seed, run.record_size, &|rng, values, st| {
        let mut mine = YcsbStats::empty();
        thread(engine, run, records, &inserts, rng, values, st, &mut mine)?;
        merged.lock().expect("a benchmark thread panicked").merge(&mine);
        Ok(())
    })?;
    let mut out = merged.into_inner().expect("a benchmark thread panicked");
    out.st = st;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn thread<T: YcsbEngine>(
    engine: &T,
    run: &YcsbRun,
    records: u64,
    inserts: &Inserts,
    rng: &mut SplitMix64,
    values: &mut ValueGen,
    st: &mut ThreadStats,
    out: &mut YcsbStats,
) -> Result<(), T::Error> {
    let scrambled = ScrambledZipfian::new(records);
    let mut latest = Zipfian::new(records, THETA);
    let mut budget = Budget::new(run.ops, run.duration_secs);
    let mut key = Vec::with_capacity(24);
    let mut done = 0;
    while budget.grant(done, 1) == 1 {
        let op = run.workload.pick(rng.next_f64());
        // The record, key and value chosen before timing: generator cost stays out of latency.
        let rec = if run.workload == Workload::D {
            let last = inserts.acked.load(Ordering::Acquire);
            latest.grow(last);
            last - 1 - latest.next(rng).min(last - 1)
        } else {
            scrambled.next(rng)
        };
        let inserted = (op == Op::Insert).then(|| inserts.next.fetch_add(1, Ordering::AcqRel));
        record_key(inserted.unwrap_or(rec), &mut key);
        let scan_len = if op == Op::Scan { 1 + rng.below(100) as usize } else { 0 };
        let start = Instant::now();
        match op {
            Op::Read => {
                let got = engine.read(&key)?;
                out.reads += 1;
                if let Some(len) = got {
                    out.found += 1;
                    st.bytes += (key.len() + len) as u64;
                }
            }
            Op::Update | Op::Insert => {
                let v = values.next(run.record_size);
                engine.write(&key, v)?;
                st.bytes += (key.len() + v.len()) as u64;
            }
            Op::Scan => {
                engine.scan(&key, scan_len)?;
            }
            Op::ReadModifyWrite => {
                let got = engine.read(&key)?;
                out.reads += 1;
                out.found += u64::from(got.is_some());
                let v = values.next(run.record_size);
                engine.write(&key, v)?;
                st.bytes += (key.len() + v.len()) as u64;
            }
        }
        out.latency[op.index()].record(start.elapsed().as_nanos() as u64);
        if let Some(n) = inserted {
            inserts.ack(n);
        }
        done += 1;
    }
    st.done = done;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::RwLock;

    /// An in-memory engine: a sorted map, counting each call.
    #[derive(Default)]
    struct Mem {
        map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
        scans: AtomicU64,
    }

    impl YcsbEngine for Mem {
        type Error = ();
        fn read(&self, key: &[u8]) -> Result<Option<usize>, ()> {
            Ok(self.map.read().unwrap().get(key).map(Vec::len))
        }
        fn write(&self, key: &[u8], value: &[u8]) -> Result<(), ()> {
            self.map.write().unwrap().insert(key.to_vec(), value.to_vec());
            Ok(())
        }
        fn scan(&self, start: &[u8], len: usize) -> Result<usize, ()> {
            self.scans.fetch_add(1, Ordering::Relaxed);
            Ok(self.map.read().unwrap().range(start.to_vec()..).take(len).count())
        }
    }

    fn a_run(workload: Workload, threads: usize) -> YcsbRun {
        YcsbRun {
            workload,
            records: 1000,
            record_size: 50,
            threads,
            seed: 3,
            ops: 4000,
            duration_secs: 0,
        }
    }

    #[test]
    fn names_parse_to_workloads_and_back() {
        for l in ["a", "b", "c", "d", "e", "f"] {
            let w = Workload::parse(&format!("ycsb{l}")).unwrap();
            assert_eq!(w.letter().to_string(), l);
            assert_eq!(Workload::from_letter(&l.to_uppercase()), Some(w));
        }
        for bad in ["ycsb", "ycsbg", "ycsbaa", "xycsba", "a"] {
            assert_eq!(Workload::parse(bad), None, "{bad}");
        }
        assert!(is_benchmark("ycsbload") && is_benchmark("ycsbe") && !is_benchmark("ycsbz"));
    }

    #[test]
    fn record_keys_are_ycsbs_hashed_keys_and_distinct() {
        let mut k = Vec::new();
        record_key(0, &mut k);
        assert_eq!(k, format!("user{}", fnv1a64(0)).into_bytes());
        let keys: std::collections::BTreeSet<Vec<u8>> = (0..10_000)
            .map(|n| {
                record_key(n, &mut k);
                k.clone()
            })
            .collect();
        assert_eq!(keys.len(), 10_000);
    }

    #[test]
    fn load_writes_every_record_once_over_the_threads() {
        let mem = Mem::default();
        let st = load(&mem, 1001, 50, 3, 9).unwrap();
        assert_eq!(st.done, 1001);
        let map = mem.map.read().unwrap();
        assert_eq!(map.len(), 1001);
        let mut k = Vec::new();
        for n in [0, 333, 334, 1000] {
            record_key(n, &mut k);
            assert_eq!(map.get(&k).map(Vec::len), Some(50), "record {n}");
        }
    }

    /// Each operation type's share of a run is binomial: over n operations with probability p,
    /// the count's standard deviation is sqrt(n p (1 - p)); 5 of them is the tolerance (a
    /// seeded run, so the check is deterministic; 5 sigma keeps it valid for any seed).
    #[test]
    fn each_workload_runs_its_mix_and_finds_every_loaded_record() {
        for w in [Workload::A, Workload::B, Workload::C, Workload::D, Workload::E, Workload::F] {
            let mem = Mem::default();
            load(&mem, 1000, 50, 1, 1).unwrap();
            let r = a_run(w, 2);
            let s = run(&mem, &r).unwrap();
            let n = 2 * r.ops;
            assert_eq!(s.st.done, n, "{w:?}");
            for &(p, op) in w.mix() {
                let got = s.latency[op.index()].count() as f64;
                let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
                assert!((got - mean).abs() <= 5.0 * sd + 1e-9, "{w:?} {op:?}: {got} vs {mean}");
            }
            let others: u64 = Op::ALL
                .iter()
                .filter(|op| !w.mix().iter().any(|(_, o)| o == *op))
                .map(|op| s.latency[op.index()].count())
                .sum();
            assert_eq!(others, 0, "{w:?} ran an operation outside its mix");
            // Every read asks for a loaded or acknowledged inserted record.
            assert_eq!(s.found, s.reads, "{w:?}");
            let inserts = s.latency[Op::Insert.index()].count();
            assert_eq!(mem.map.read().unwrap().len() as u64, 1000 + inserts, "{w:?}");
            if w == Workload::E {
                assert_eq!(mem.scans.load(Ordering::Relaxed), s.latency[3].count());
            }
            let lines = s.lines(&format!("ycsb{}", w.letter()));
            assert!(lines.starts_with(&format!("ycsb{} ", w.letter())), "{lines}");
            assert!(lines.contains("p99.9"), "{lines}");
            assert_eq!(lines.contains(" reads found "), w != Workload::E, "{lines}");
            let report = s.ycsb_report(&r);
            assert!(report.contains("[OVERALL], Throughput(ops/sec)"), "{report}");
        }
    }

    /// Workload D reads the latest records: with inserts arriving, reads of records inserted
    /// during the run must appear (they are the zipfian's most likely ranks), and nothing past
    /// the acknowledged ones is read.
    #[test]
    fn workload_d_reads_records_inserted_during_the_run() {
        struct Watch(Mem, AtomicU64);
        impl YcsbEngine for Watch {
            type Error = ();
            fn read(&self, key: &[u8]) -> Result<Option<usize>, ()> {
                let got = self.0.read(key)?;
                let mut k = Vec::new();
                // Count reads of records past the load (1000..).
                let fresh = (1000..1400).any(|n| {
                    record_key(n, &mut k);
                    k == key
                });
                self.1.fetch_add(u64::from(fresh), Ordering::Relaxed);
                Ok(got)
            }
            fn write(&self, key: &[u8], value: &[u8]) -> Result<(), ()> {
                self.0.write(key, value)
            }
            fn scan(&self, start: &[u8], len: usize) -> Result<usize, ()> {
                self.0.scan(start, len)
            }
        }
        for threads in [1, 2] {
            let w = Watch(Mem::default(), AtomicU64::new(0));
            load(&w, 1000, 8, 1, 1).unwrap();
            let s = run(&w, &a_run(Workload::D, threads)).unwrap();
            // With two threads, a record written after a higher one was acknowledged is not
            // read before it exists.
            assert_eq!(s.found, s.reads, "{threads} threads");
            assert!(w.1.load(Ordering::Relaxed) > 0, "no read of a freshly inserted record");
        }
    }

    #[test]
    fn a_record_is_acknowledged_only_once_every_record_below_it_is() {
        let i = Inserts::new(10);
        i.ack(11);
        i.ack(12);
        assert_eq!(i.acked.load(Ordering::Relaxed), 10);
        i.ack(10);
        assert_eq!(i.acked.load(Ordering::Relaxed), 13);
        assert!(i.pending.lock().unwrap().is_empty());
    }

    #[test]
    fn an_engine_error_stops_the_run() {
        struct Failing;
        impl YcsbEngine for Failing {
            type Error = &'static str;
            fn read(&self, _: &[u8]) -> Result<Option<usize>, &'static str> {
                Err("read failed")
            }
            fn write(&self, _: &[u8], _: &[u8]) -> Result<(), &'static str> {
                Ok(())
            }
            fn scan(&self, _: &[u8], _: usize) -> Result<usize, &'static str> {
                Ok(0)
            }
        }
        assert_eq!(run(&Failing, &a_run(Workload::C, 2)).err(), Some("read failed"));
        assert_eq!(load(&Failing, 10, 8, 1, 1).unwrap().done, 10);
    }
}
