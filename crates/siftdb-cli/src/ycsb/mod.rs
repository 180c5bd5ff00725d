//! `siftdb ycsb`: the YCSB core workloads (Cooper et al., "Benchmarking Cloud Serving Systems
//! with YCSB", SoCC 2010) against siftdb, reporting throughput and p50/p99/p99.9 latency per
//! operation type in YCSB's `[OP], metric, value` format.
//!
//! | workload | mix | request distribution |
//! |---|---|---|
//! | a | 50% read, 50% update | scrambled zipfian (0.99) |
//! | b | 95% read, 5% update | scrambled zipfian |
//! | c | 100% read | scrambled zipfian |
//! | d | 95% read, 5% insert | latest |
//! | e | 95% scan (1..=100 entries, uniform), 5% insert | scrambled zipfian (scan start) |
//! | f | 50% read, 50% read-modify-write | scrambled zipfian |
//!
//! Keys are YCSB's hashed keys `user<fnv1a64(n)>`; a record is one value of
//! `field_count * field_length` bytes (YCSB's 10 fields of 100 bytes, stored as one value; an
//! update rewrites the whole record, a slight over-statement of YCSB's one-field update).

use crate::dirs;
use crate::progress;
use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Error, Options, Result, WriteBatch};
use siftdb_bench_kit::hist::Histogram;
use siftdb_bench_kit::zipf::{fnv1a64, ScrambledZipfian, Zipfian, THETA};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Arguments of `siftdb ycsb`.
#[derive(clap::Args, Debug, Clone)]
pub struct YcsbArgs {
    /// Core workload: a, b, c, d, e or f.
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// Records loaded before the run.
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Operations of the run phase (split over the threads).
    #[arg(long, default_value_t = 100_000)]
    pub operations: u64,
    /// Client threads sharing one `Db`.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Bytes per record (YCSB: 10 fields x 100 bytes).
    #[arg(long, default_value_t = 1000)]
    pub record_size: usize,
    /// Database directory (default: a temporary directory removed at exit): a new or empty
    /// directory, or a database an earlier ycsb run created (marked SIFTDB-YCSB). Anything
    /// else, another siftdb database included, is refused; ycsb deletes nothing.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Seed of the client threads' generators (thread i uses seed + i).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Operation types, in report order.
const OPS: [&str; 5] = ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"];
const READ: usize = 0;
const UPDATE: usize = 1;
const INSERT: usize = 2;
const SCAN: usize = 3;
const RMW: usize = 4;

/// Operation mix: (probability, op) pairs summing to 1.
fn mix(workload: &str) -> Result<Vec<(f64, usize)>> {
    Ok(match workload {
        "a" => vec![(0.5, READ), (0.5, UPDATE)],
        "b" => vec![(0.95, READ), (0.05, UPDATE)],
        "c" => vec![(1.0, READ)],
        "d" => vec![(0.95, READ), (0.05, INSERT)],
        "e" => vec![(0.95, SCAN), (0.05, INSERT)],
        "f" => vec![(0.5, READ), (0.5, RMW)],
        w => return Err(Error::InvalidArgument(format!("unknown YCSB workload {w:?} (a..f)"))),
    })
}

/// YCSB's key of record `n`.
fn key(n: u64) -> String {
    format!("user{}", fnv1a64(n))
}

fn value(rng: &mut SplitMix64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill(&mut v);
    v
}

/// The file that marks a database `siftdb ycsb` created (and may load again).
const YCSB_MARKER: &str = "SIFTDB-YCSB";

/// Loads the records, runs the workload, prints the report.
pub fn run(args: &YcsbArgs) -> Result<()> {
    let workload = args.workload.to_ascii_lowercase();
    let ops_mix = mix(&workload)?;
    if args.records == 0 {
        return Err(Error::InvalidArgument("--records must be at least 1".into()));
    }
    let _tmp;
    let dir = match &args.db {
        Some(p) => p.clone(),
        None => {
            _tmp = tempfile::tempdir().map_err(|e| Error::io("creating a temp dir", e))?;
            _tmp.path().join("db")
        }
    };
    let mark = dirs::check_writable_tool_dir(&dir, "--db", YCSB_MARKER, "ycsb")?;
    let db = Db::open(&dir, Options::default())?;
    if mark {
        dirs::write_marker(&dir, YCSB_MARKER, "ycsb")?;
    }

    // Load phase: records 0..records, batches of 100.
    let mut rng = SplitMix64::new(args.seed ^ 0x10ad);
    let pb = progress::bar("load", args.records);
    let t = Instant::now();
    let mut batch = WriteBatch::new();
    for n in 0..args.records {
        batch.put(key(n), value(&mut rng, args.record_size));
        if batch.len() == 100 {
            db.write(std::mem::take(&mut batch))?;
            pb.inc(100);
        }
    }
    if !batch.is_empty() {
        db.write(batch)?;
    }
    pb.finish_and_clear();
    let load = t.elapsed().as_secs_f64();
    println!("[LOAD], Records, {}", args.records);
    println!("[LOAD], Throughput(ops/sec), {:.0}", args.records as f64 / load);

    // Run phase.
    let threads = args.threads.max(1);
    let inserted = AtomicU64::new(args.records); // next record number to insert
    let acked = AtomicU64::new(args.records); // records known to be present (D's "latest")
    let pb = progress::bar(&format!("workload {workload}"), args.operations);
    let t = Instant::now();
    let results: Vec<Result<Vec<Histogram>>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let per = args.operations / threads as u64
                    + u64::from((i as u64) < args.operations % threads as u64);
                let (db, ops_mix, inserted, acked, pb) = (&db, &ops_mix, &inserted, &acked, &pb);
                let workload = workload.as_str();
                s.spawn(move || -> Result<Vec<Histogram>> {
                    let mut rng = SplitMix64::new(args.seed + i as u64);
                    let scrambled = ScrambledZipfian::new(args.records);
                    let mut latest = Zipfian::new(args.records, THETA);
                    let mut hists = vec![Histogram::default(); OPS.len()];
                    for n in 0..per {
                        let r = rng.next_f64();
                        let mut acc = 0.0;
                        let op = ops_mix
                            .iter()
                            .find(|(p, _)| {
                                acc += p;
                                r < acc
                            })
                            .map_or(ops_mix[ops_mix.len() - 1].1, |&(_, op)| op);
                        // Record chosen before timing: generator cost stays out of latency.
                        let rec = if workload == "d" {
                            let last = acked.load(Ordering::Acquire);
                            latest.grow(last);
                            last - 1 - latest.next(&mut rng)
                        } else {
                            scrambled.next(&mut rng)
                        };
                        let start = Instant::now();
                        match op {
                            READ => {
                                db.get(key(rec))?;
                            }
                            UPDATE => db.put(key(rec), value(&mut rng, args.record_size))?,
                            INSERT => {
                                let k = inserted.fetch_add(1, Ordering::AcqRel);
                                db.put(key(k), value(&mut rng, args.record_size))?;
                                acked.fetch_max(k + 1, Ordering::AcqRel);
                            }
                            SCAN => {
                                let len = 1 + rng.below(100) as usize;
                                for kv in db.range(key(rec).into_bytes()..)?.take(len) {
                                    kv?;
                                }
                            }
                            _ => {
                                let k = key(rec);
                                db.get(&k)?;
                                db.put(&k, value(&mut rng, args.record_size))?;
                            }
                        }
                        hists[op].record(start.elapsed().as_nanos() as u64);
                        if n % 1024 == 1023 {
                            pb.inc(1024);
                        }
                    }
                    Ok(hists)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("ycsb thread panicked")).collect()
    });
    let secs = t.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let mut total = vec![Histogram::default(); OPS.len()];
    for r in results {
        for (t, h) in total.iter_mut().zip(r?) {
            t.merge(&h);
        }
    }
    println!("[OVERALL], Workload, {workload} ({threads} threads, {} records)", args.records);
    println!("[OVERALL], RunTime(ms), {:.0}", secs * 1e3);
    println!("[OVERALL], Throughput(ops/sec), {:.0}", args.operations as f64 / secs);
    for (name, h) in OPS.iter().zip(&total).filter(|(_, h)| h.count() > 0) {
        let us = |ns: u64| ns as f64 / 1e3;
        println!("[{name}], Operations, {}", h.count());
        println!("[{name}], AverageLatency(us), {:.3}", h.mean() / 1e3);
        println!("[{name}], 50thPercentileLatency(us), {:.3}", us(h.quantile(0.5)));
        println!("[{name}], 99thPercentileLatency(us), {:.3}", us(h.quantile(0.99)));
        println!("[{name}], 99.9PercentileLatency(us), {:.3}", us(h.quantile(0.999)));
    }
    Ok(())
}
