//! `rocksdb-bench`: siftdb's db_bench workloads run against RocksDB built from source in release
//! mode (the `rocksdb` crate's librocksdb-sys: -O3, NDEBUG, -march=native via
//! `.cargo/config.toml`), for the side-by-side comparison in `scripts/compare.sh`. Debian's
//! db_bench 7.8.3 is an assertion-enabled build ("WARNING: Assertions are enabled; benchmarks
//! unnecessarily slow"), so ratios against it flatter siftdb; this tool is RocksDB at its best.
//!
//! Same flag names, key generation, value generation, seeds and result lines as `siftdb bench`
//! (crates/siftdb-cli/src/bench/, crates/siftdb-bench-kit/), so one command line means the same work; flags in `flags.rs`, their
//! RocksDB options in `engine.rs`, the benchmarks in `workloads.rs`. `--statistics` prints
//! RocksDB's own statistics in db_bench's format plus the live tables' filter size and entries.
//! The transaction benchmarks (`txrmw[N]`, `txblind[N]`, `batchblind[N]`) run through
//! `OptimisticTransactionDB` (`txn.rs`); the YCSB benchmarks (`ycsbload`, `ycsba`..`ycsbf`)
//! through `ycsb.rs`.

// The key/value generators, the key layout of the scan benchmarks, the thread runner, the read
// budget and the result line are siftdb bench's own (siftdb-bench-kit), so both tools do the
// same work and print the same line (scripts/compare.sh relies on it).
mod engine;
mod flags;
mod ingest;
mod txn;
mod workloads;
mod ycsb;

use siftdb_bench_kit::io_meter::WriteMeter;
use siftdb_bench_kit::key_layout::{FillStream, KeyLayout, PrefixGen, RangeGen};
use siftdb_bench_kit::result_line::ThreadStats as St;
use siftdb_bench_kit::txn::TxWorkload;
use siftdb_bench_kit::ycsb::{self as kit_ycsb, Workload, YcsbRun};
use std::path::PathBuf;
use workloads::Ctx;

/// Errors of the tool: RocksDB's, I/O, and flag or directory checks (as text naming the flag).
pub type R<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() {
    if let Err(e) = run() {
        eprintln!("rocksdb-bench: {e}");
        std::process::exit(2);
    }
}

fn run() -> R<()> {
    let f = flags::parse(std::env::args().skip(1))?;
    // The key layout and the scan benchmarks' generators, checked before anything runs.
    let layout = KeyLayout::new(f.num, f.key_spacing)?;
    let has = |b: &str| f.benchmarks.iter().any(|n| n == b);
    let fill = FillStream { seed: f.fill_seed.unwrap_or(f.seed), num: f.num };
    let (width, empty) = (f.range_max_width, f.empty_fraction);
    let range_gen = match has("rangeempty") {
        true => Some(RangeGen::new(layout, fill, width, empty, f.range_flavour)?),
        false => None,
    };
    let prefix_gen = match has("prefixscan") {
        true => Some(PrefixGen::new(layout, fill, f.prefix_size, empty)?),
        false => None,
    };
    let _tmp;
    let dir: PathBuf = match &f.db {
        Some(p) => p.clone(),
        None => {
            _tmp = TempDir::new()?;
            _tmp.0.join("db")
        }
    };
    if !f.use_existing_db {
        // Refuse a foreign directory before printing anything.
        engine::check_fresh(&dir)?;
    }
    let opts = engine::options(&f);
    let mut db = engine::open(&dir, &opts, !f.use_existing_db)?;
    let version = engine::options_file_value(&dir, "rocksdb_version");
    println!("RocksDB:    version {version} (rocksdb crate, release build, NDEBUG)");
    println!("Keys:       {} bytes each", f.key_size);
    println!("Values:     {} bytes each", f.value_size);
    println!("Entries:    {}", f.num);
    println!("Compression: {}", f.compression);
    let filter = match (f.use_ribbon_filter, f.bloom_bits) {
        (true, b) => format!("ribbon at {} Bloom-equivalent bits/key", if b >= 0 { b } else { 10 }),
        (false, b) if b >= 0 => format!(
            "bloom (full, cache-local) at {b} bits/key, format_version {}",
            engine::options_file_value(&dir, "format_version")
        ),
        _ => "none".into(),
    };
    println!("Filter:     {filter}");
    if f.prefix_size > 0 {
        println!(
            "            fixed prefix extractor of {} bytes, memtable prefix Bloom 0.1",
            f.prefix_size
        );
    }
    if f.key_spacing != 1 {
        println!("Key layout: number v is key number v * {}", f.key_spacing);
    }
    if range_gen.is_some() {
        println!(
            "Ranges:     2..={} key numbers, {} of them empty ({})",
            f.range_max_width,
            f.empty_fraction,
            f.range_flavour.name()
        );
    }
    println!("Threads:    {}", f.threads);
    println!("------------------------------------------------");
    println!("DB path: [{}]", engine::db_path(&dir).display());

    let mut next_seed = f.seed;
    for name in &f.benchmarks {
        if matches!(name.as_str(), "fillseq" | "fillrandom" | "ingest" | kit_ycsb::LOAD) {
            if f.use_existing_db {
                println!("{name:<12} : skipped (--use_existing_db is true)");
                continue;
            }
            drop(db);
            db = engine::open(&dir, &opts, true)?;
        }
        if let Some(w) = TxWorkload::parse(name) {
            // The database is reopened as an OptimisticTransactionDB for the benchmark (one open
            // handle at a time), then as before for the benchmarks after it.
            drop(db);
            let st = txn::run(&f, &dir, &opts, w, next_seed)?;
            next_seed += f.threads as u64;
            db = engine::open(&dir, &opts, false)?;
            println!("{}", st.lines(name));
            continue;
        }
        let meter = WriteMeter::start();
        let mut ctx = Ctx { f: &f, db: &db, next_seed };
        // A line after the result line (seek entries, scan benchmarks' found shares).
        let mut note: Option<String> = None;
        let mut noted = |(st, line): (St, Option<String>)| {
            note = line;
            Some(st)
        };
        let st: Option<St> = match name.as_str() {
            "fillseq" => noted(ctx.fill(true).map(|st| with_write_amp(st, name, &meter))?),
            "fillrandom" | "overwrite" => {
                noted(ctx.fill(false).map(|st| with_write_amp(st, name, &meter))?)
            }
            "ingest" => {
                ctx.next_seed += 1;
                noted(ingest::run(&f, &dir, &db, &opts, next_seed)?)
            }
            kit_ycsb::LOAD => {
                let engine = ycsb::RocksYcsb { db: &db, wo: ctx.write_opts() };
                ctx.next_seed += f.threads as u64;
                let st = kit_ycsb::load(&engine, f.num, f.value_size, f.threads, next_seed)?;
                noted(with_write_amp(st, name, &meter))
            }
            w if kit_ycsb::is_benchmark(w) => {
                let run = YcsbRun {
                    workload: Workload::parse(w).expect("a benchmark other than the load"),
                    records: f.num,
                    record_size: f.value_size,
                    threads: f.threads,
                    seed: ctx.next_seed,
                    ops: f.reads,
                    duration_secs: f.duration,
                };
                ctx.next_seed += f.threads as u64;
                let engine = ycsb::RocksYcsb { db: &db, wo: ctx.write_opts() };
                println!("{}", kit_ycsb::run(&engine, &run)?.lines(name));
                None
            }
            "waitforcompaction" => {
                // db_bench's waitforcompaction: until no flush or compaction is pending or
                // running; one operation, timed, with the bytes the wait wrote.
                let mut st = St::start();
                db.wait_for_compact(&rocksdb::WaitForCompactOptions::default())?;
                st.stop();
                st.done = 1;
                noted((st, Some(meter.written_line(name))))
            }
            "readrandom" => Some(ctx.read_random(f.key_size)?),
            "readmissing" => Some(ctx.read_random(f.key_size + 1)?),
            "multireadrandom" => Some(ctx.multi_read_random()?),
            "readseq" => Some(ctx.read_seq()?),
            "seekrandom" => noted(ctx.seek_random()?),
            "rangeempty" => {
                let gen = range_gen.as_ref().expect("made when rangeempty is listed");
                noted(ctx.range_empty(gen).map(|(st, l)| (st, Some(l)))?)
            }
            "prefixscan" => {
                let gen = prefix_gen.as_ref().expect("made when prefixscan is listed");
                noted(ctx.prefix_scan(gen).map(|(st, l)| (st, Some(l)))?)
            }
            "readwhilewriting" => Some(ctx.read_while_writing()?),
            "deleterandom" => Some(ctx.delete_random()?),
            "compact" => {
                // db_bench's compact: CompactRange over everything (it flushes the memtable
                // first); one operation, timed.
                let mut st = St::start();
                db.compact_range(None::<&[u8]>, None::<&[u8]>);
                st.stop();
                st.done = 1;
                Some(st)
            }
            "stats" => {
                let stats = db.property_value(rocksdb::properties::STATS)?;
                println!("\n{}", stats.unwrap_or_default());
                None
            }
            other => unreachable!("flags::parse accepts only known benchmarks, got {other}"),
        };
        next_seed = ctx.next_seed;
        if let Some(st) = st {
            println!("{}", st.line(name));
            if let Some(line) = st.latency_line(name) {
                println!("{line}");
            }
        }
        if let Some(line) = note {
            println!("{line}");
        }
    }
    if f.statistics {
        println!("\n{}", engine::statistics(&db, &opts)?);
    }
    Ok(())
}

/// A fill's result with its write-amplification note line (process I/O over the user bytes).
fn with_write_amp(st: St, name: &str, meter: &WriteMeter) -> (St, Option<String>) {
    let line = meter.line(name, st.bytes);
    (st, Some(line))
}

/// A new directory under the system temp dir, removed at exit. `create_dir` fails if the name
/// exists, so the removal never reaches a directory this process did not create.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> R<TempDir> {
        let p = std::env::temp_dir().join(format!("rocksdb-bench-{}", std::process::id()));
        std::fs::create_dir(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
