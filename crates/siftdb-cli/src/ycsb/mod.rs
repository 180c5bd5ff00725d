//! `siftdb ycsb`: the YCSB core workloads (the bench kit's `siftdb_bench_kit::ycsb`: mixes,
//! request distributions, hashed record keys) against siftdb: YCSB's load phase, then one
//! workload, reported in YCSB's `[OP], metric, value` format with p50/p99/p99.9 latency per
//! operation type. [`SiftYcsb`] is also what `siftdb bench --benchmarks=ycsbload,ycsba,...`
//! runs, as tools/rocksdb-bench and tools/fjall-bench do for their engines.

use crate::dirs;
use siftdb::{Db, Error, Options, Result, WriteBatch, WriteOptions};
use siftdb_bench_kit::ycsb::{self, Workload, YcsbEngine, YcsbRun};
use std::path::PathBuf;

/// Arguments of `siftdb ycsb`.
#[derive(clap::Args, Debug, Clone)]
pub struct YcsbArgs {
    /// Core workload: a, b, c, d, e or f.
    #[arg(long, default_value = "a")]
    pub workload: String,
    /// Records loaded before the run.
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Operations of the run phase, split evenly over the threads (rounded up to a multiple of
    /// --threads).
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

/// siftdb's operations for the kit's YCSB workloads: gets, puts (synced with `sync`) and a
/// cursor for scans.
pub struct SiftYcsb<'a> {
    pub db: &'a Db,
    pub sync: bool,
}

impl YcsbEngine for SiftYcsb<'_> {
    type Error = Error;

    fn read(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.db.get(key)?.map(|v| v.len()))
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::put_size(key, value) + 5);
        b.put(key, value);
        self.db.write_opt(b, WriteOptions { sync: self.sync })
    }

    fn scan(&self, start: &[u8], len: usize) -> Result<usize> {
        // A cursor (entries borrowed, RocksDB's raw iterator), as rocksdb-bench scans.
        let mut c = self.db.cursor()?;
        c.seek(start)?;
        let mut n = 0;
        while n < len && c.valid() {
            std::hint::black_box((c.key(), c.value()));
            n += 1;
            c.next()?;
        }
        Ok(n)
    }
}

/// The file that marks a database `siftdb ycsb` created (and may load again).
const YCSB_MARKER: &str = "SIFTDB-YCSB";

/// Loads the records, runs the workload, prints the report.
pub fn run(args: &YcsbArgs) -> Result<()> {
    let workload = Workload::from_letter(&args.workload).ok_or_else(|| {
        Error::InvalidArgument(format!("unknown YCSB workload {:?} (a..f)", args.workload))
    })?;
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
    let engine = SiftYcsb { db: &db, sync: false };
    let threads = args.threads.max(1);

    let st = ycsb::load(&engine, args.records, args.record_size, threads, args.seed ^ 0x10ad)?;
    let load_secs = (st.finish - st.start).as_secs_f64().max(1e-9);
    println!("[LOAD], Records, {}", args.records);
    println!("[LOAD], Throughput(ops/sec), {:.0}", args.records as f64 / load_secs);

    let run = YcsbRun {
        workload,
        records: args.records,
        record_size: args.record_size,
        threads,
        seed: args.seed,
        ops: args.operations.div_ceil(threads as u64),
        duration_secs: 0,
    };
    let stats = ycsb::run(&engine, &run)?;
    print!("{}", stats.ycsb_report(&run));
    Ok(())
}
