//! `siftdb bench`: db_bench-compatible benchmarks (same flag names, key generation, found/missing
//! semantics and result lines as RocksDB 7.8's `db_bench`), so one command line runs the same
//! work on both engines. `scripts/compare.sh` runs them side by side.

mod blob;
mod compression;
pub mod flags;
mod ingest;
pub mod report;
mod scans;
mod transactions;
pub mod workloads;

use crate::dirs::{self, ToolDir};
use crate::ycsb::SiftYcsb;
use flags::{apply_db_bench_flags, Flags};
use report::ThreadStats;
use siftdb::{Db, Error, Options, Result};
use siftdb_bench_kit::io_meter::WriteMeter;
use siftdb_bench_kit::key_layout::{self, FillStream, KeyLayout, PrefixGen, RangeGen};
use siftdb_bench_kit::txn::{self, TxRun, TxWorkload};
use siftdb_bench_kit::ycsb::{self, Workload, YcsbRun};
use std::path::{Path, PathBuf};
use workloads::Ctx;

fn invalid(what: String) -> Error {
    Error::InvalidArgument(what)
}

/// Bytes of the key number the generator writes ([`siftdb_bench_kit::keys::make_key`]); shorter keys would make
/// key numbers collide and `readmissing` keys land outside the key ranges.
const MIN_KEY_SIZE: usize = 8;

/// The flag that sets each `Options` field, to point a validation error at the flag to change.
const FLAG_OF_FIELD: &[(&str, &str)] = &[
    ("memtable_size", "--write_buffer_size"),
    ("filter_policy.flush", "--flush_filter/--flush_bits/--bloom_bits"),
    (
        "filter_policy.allocation",
        "--bloom_bits/--compaction_filter/--monkey/--all_runs_bits/--skew_aware_bits",
    ),
    ("compaction.l0_compaction_trigger", "--level0_file_num_compaction_trigger"),
    ("compaction.l0_slowdown_writes_trigger", "--level0_slowdown_writes_trigger"),
    ("compaction.l0_stop_writes_trigger", "--level0_stop_writes_trigger"),
    ("compaction.l0_min_base_ratio", "--l0_min_base_ratio"),
    ("compaction.max_bytes_for_level_base", "--max_bytes_for_level_base"),
    ("compaction.max_bytes_for_level_multiplier", "--max_bytes_for_level_multiplier"),
    ("compaction.target_file_size", "--target_file_size_base"),
    ("compression", "--zstd_level"),
    ("max_subcompactions", "--subcompactions"),
    ("range_filter.bits_per_key", "--range_filter_bits"),
    ("range_filter.max_range", "--range_filter_max"),
];

/// `opts.validate()`, naming the flag behind the refused field.
fn validate(opts: &Options) -> Result<()> {
    opts.validate().map_err(|e| match e {
        Error::InvalidArgument(msg) => {
            match FLAG_OF_FIELD.iter().find(|(field, _)| msg.starts_with(field)) {
                Some((_, flag)) => invalid(format!("{msg} (set by {flag})")),
                None => invalid(msg),
            }
        }
        other => other,
    })
}

/// The file that marks a database `siftdb bench` created: a later fresh run deletes only a
/// database carrying it (or any siftdb database with `--destroy_existing_db`).
const BENCH_MARKER: &str = "SIFTDB-BENCH";

/// What `open(dir, _, true)` does with `dir` before it creates the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fresh {
    /// Absent or empty: nothing to delete.
    Empty,
    /// An earlier bench database (its marker): deleted, marker last.
    Ours,
    /// A siftdb database without the marker, which `--destroy_existing_db` allows deleting.
    Destroy,
}

/// What `open(dir, _, true)` will do with `dir`; a directory holding anything but an earlier
/// bench database is refused, a siftdb database bench did not create too unless
/// `destroy_existing` (`--destroy_existing_db`). `run` asks before it prints anything, `open`
/// again right before deleting.
fn fresh_dir_check(dir: &Path, destroy_existing: bool) -> Result<Fresh> {
    let accepted = "bench deletes only a database an earlier bench run created (holding \
                    SIFTDB-BENCH): give a new or empty directory";
    match dirs::tool_dir(dir, BENCH_MARKER)? {
        ToolDir::New => Ok(Fresh::Empty),
        ToolDir::Ours => Ok(Fresh::Ours),
        ToolDir::ForeignDatabase if destroy_existing => Ok(Fresh::Destroy),
        ToolDir::ForeignDatabase => Err(dirs::refuse(
            "--db",
            dir,
            &format!("it holds a siftdb database bench did not create (no {BENCH_MARKER})"),
            &format!("{accepted}, or pass --destroy_existing_db to delete this database"),
        )),
        ToolDir::Other(why) => Err(dirs::refuse("--db", dir, &why, accepted)),
    }
}

/// Opens the database; when `fresh`, an earlier bench database in `dir` (or, with
/// `destroy_existing`, any siftdb database) is first deleted with `Db::destroy` (which deletes
/// only siftdb's own files), and the new database gets the bench marker. A directory holding
/// anything else is refused before anything is written.
fn open(dir: &Path, opts: &Options, fresh: bool, destroy_existing: bool) -> Result<Db> {
    if fresh {
        let state = fresh_dir_check(dir, destroy_existing)?;
        if state != Fresh::Empty && dir.join("CURRENT").is_file() {
            Db::destroy(dir)?;
        }
        if state == Fresh::Ours {
            // Last, so an interrupted delete leaves a directory a later run still knows as its.
            let marker = dir.join(BENCH_MARKER);
            std::fs::remove_file(&marker)
                .map_err(|e| Error::io(format!("removing {}", marker.display()), e))?;
        }
    }
    // `--use_existing_db=1` measures the database that is there, as db_bench does: a missing
    // one is an error (checked before the open, which would create a LOCK file), never a new
    // empty database measured in its place.
    if !fresh && !dir.join("CURRENT").is_file() {
        return Err(invalid(format!(
            "--use_existing_db=1: {} holds no siftdb database (no CURRENT file)",
            dir.display()
        )));
    }
    let db = Db::open(
        dir,
        Options { create_if_missing: fresh && opts.create_if_missing, ..opts.clone() },
    )?;
    if fresh {
        dirs::write_marker(dir, BENCH_MARKER, "bench")?;
    }
    Ok(db)
}

/// Runs the benchmarks named by `--benchmarks`, printing one db_bench result line each.
pub fn run(flags: &Flags) -> Result<()> {
    let mut opts = Options::default();
    apply_db_bench_flags(flags, &mut opts).map_err(invalid)?;
    validate(&opts)?;
    if flags.threads == 0 {
        return Err(invalid("--threads=0: at least one thread must run each benchmark".into()));
    }
    if flags.key_size < MIN_KEY_SIZE {
        return Err(invalid(format!(
            "--key_size={} is too small: keys start with the key number as {MIN_KEY_SIZE} \
             big-endian bytes, so --key_size must be at least {MIN_KEY_SIZE}",
            flags.key_size
        )));
    }
    let names = flags.benchmark_list();
    const KNOWN: &[&str] = &[
        "fillseq",
        "fillrandom",
        "overwrite",
        "readrandom",
        "readmissing",
        "multireadrandom",
        "readseq",
        "seekrandom",
        "rangeempty",
        "prefixscan",
        "readwhilewriting",
        "deleterandom",
        "ingest",
        "compact",
        "waitforcompaction",
        "stats",
    ];
    let known =
        |n: &str| KNOWN.contains(&n) || TxWorkload::parse(n).is_some() || ycsb::is_benchmark(n);
    if let Some(bad) = names.iter().find(|n| !known(n)) {
        return Err(invalid(format!(
            "unknown benchmark {bad:?} (known: {}, txrmw[N], txblind[N], batchblind[N], \
             ycsbload, ycsba..ycsbf)",
            KNOWN.join(",")
        )));
    }
    // The key layout and the scan benchmarks' generators, checked before anything runs.
    let layout = KeyLayout::new(flags.num, flags.key_spacing).map_err(invalid)?;
    key_layout::check_empty_fraction(flags.empty_fraction).map_err(invalid)?;
    let has = |b: &str| names.iter().any(|n| n == b);
    let fill = FillStream { seed: flags.fill_seed.unwrap_or(flags.seed), num: flags.num };
    let (width, empty) = (flags.range_max_width, flags.empty_fraction);
    let range_gen = match has("rangeempty") {
        true => {
            Some(RangeGen::new(layout, fill, width, empty, flags.range_flavour).map_err(invalid)?)
        }
        false => None,
    };
    let prefix_gen = match has("prefixscan") {
        true => Some(PrefixGen::new(layout, fill, flags.prefix_size, empty).map_err(invalid)?),
        false => None,
    };
    let _tmp;
    let dir: PathBuf = match &flags.db {
        Some(p) => p.clone(),
        None => {
            _tmp = tempfile::tempdir().map_err(|e| Error::io("creating a temp dir", e))?;
            _tmp.path().join("db")
        }
    };
    if !flags.use_existing_db {
        fresh_dir_check(&dir, flags.destroy_existing_db)?;
    }
    println!("Keys:       {} bytes each", flags.key_size);
    println!("Values:     {} bytes each", flags.value_size);
    println!("Entries:    {}", flags.num);
    if opts.compression_per_level.is_empty() {
        println!("Compression: {:?}", opts.compression);
    } else {
        println!("Compression: {:?} (per level; the last repeats)", opts.compression_per_level);
    }
    if let Some(t) = opts.blob_threshold {
        println!("Blob files: values >= {t} bytes, GC age cutoff {}", opts.blob_gc_age_cutoff);
    }
    println!("Filter:     {:?} (flush)", opts.filter_policy.flush);
    println!(
        "            {:?} {:?} (compaction)",
        opts.filter_policy.compaction, opts.filter_policy.allocation
    );
    let c = &opts.compaction;
    println!(
        "Levels:     L1 {} B x{}, files {} B, L0 trigger {}, auto compaction {}",
        c.max_bytes_for_level_base,
        c.max_bytes_for_level_multiplier,
        c.target_file_size,
        c.l0_compaction_trigger,
        c.auto
    );
    if let Some(p) = &opts.prefix_extractor {
        println!(
            "            {} at {} bits/key (prefix)",
            p.name(),
            opts.prefix_filter_bits_per_key
        );
    }
    if let Some(r) = &opts.range_filter {
        println!(
            "            grafite at {} bits/key, max range {} (range)",
            r.bits_per_key, r.max_range
        );
    }
    if flags.key_spacing != 1 {
        println!("Key layout: number v is key number v * {}", flags.key_spacing);
    }
    if range_gen.is_some() {
        println!(
            "Ranges:     2..={} key numbers, {} of them empty ({})",
            flags.range_max_width,
            flags.empty_fraction,
            flags.range_flavour.name()
        );
    }
    println!("Threads:    {}", flags.threads);
    println!("------------------------------------------------");
    println!("DB path: [{}]", dir.display());

    let mut db = open(&dir, &opts, !flags.use_existing_db, flags.destroy_existing_db)?;
    let mut next_seed = flags.seed;
    for name in &names {
        let fresh = matches!(name.as_str(), "fillseq" | "fillrandom" | "ingest" | ycsb::LOAD);
        if fresh {
            if flags.use_existing_db {
                println!("{name:<12} : skipped (--use_existing_db is true)");
                continue;
            }
            drop(db);
            db = open(&dir, &opts, true, flags.destroy_existing_db)?;
        }
        let reads_before = is_point_read(name).then(|| device_reads(&db));
        let meter = WriteMeter::start();
        let mut ctx = Ctx { flags, db: &db, next_seed };
        // A line after the result line (scan benchmarks' filter figures).
        let mut note: Option<String> = None;
        let mut noted = |(st, line): (ThreadStats, Option<String>)| {
            note = line;
            Some(st)
        };
        let st: Option<ThreadStats> = match name.as_str() {
            "fillseq" => noted(with_write_amp(ctx.fill(name, true)?, name, &meter)),
            "fillrandom" | "overwrite" => {
                noted(with_write_amp(ctx.fill(name, false)?, name, &meter))
            }
            "readrandom" => Some(ctx.read_random(name, flags.key_size)?),
            "readmissing" => Some(ctx.read_random(name, flags.key_size + 1)?),
            "multireadrandom" => Some(ctx.multi_read_random()?),
            "readseq" => Some(ctx.read_seq()?),
            "seekrandom" => noted(ctx.seek_random()?),
            "rangeempty" => {
                let gen = range_gen.as_ref().expect("made when rangeempty is listed");
                noted(ctx.range_empty(gen)?)
            }
            "prefixscan" => {
                let gen = prefix_gen.as_ref().expect("made when prefixscan is listed");
                noted(ctx.prefix_scan(gen)?)
            }
            "readwhilewriting" => Some(ctx.read_while_writing()?),
            "deleterandom" => Some(ctx.delete_random()?),
            "waitforcompaction" => {
                // db_bench's waitforcompaction: until no flush or compaction is pending or
                // running; one operation, timed, with the bytes the wait wrote.
                let mut st = ThreadStats::start();
                db.wait_for_compactions()?;
                st.stop();
                st.done = 1;
                noted((st, Some(meter.written_line(name))))
            }
            "ingest" => noted(ingest::run(&mut ctx, &dir)?),
            "compact" => {
                let mut st = ThreadStats::start();
                // db_bench's "compact": flush, then compact everything into one sorted run.
                db.flush()?;
                db.compact()?;
                st.stop();
                st.done = 1;
                Some(st)
            }
            "stats" => {
                print!("{}", report::level_summary(&db.stats()));
                println!("{}", report::memory(&db.memory_usage()));
                None
            }
            ycsb::LOAD => {
                let engine = SiftYcsb { db: &db, sync: flags.sync };
                ctx.next_seed += flags.threads as u64;
                let st =
                    ycsb::load(&engine, flags.num, flags.value_size, flags.threads, next_seed)?;
                noted(with_write_amp(st, name, &meter))
            }
            w if ycsb::is_benchmark(w) => {
                let run = YcsbRun {
                    workload: Workload::parse(w).expect("a benchmark other than the load"),
                    records: flags.num,
                    record_size: flags.value_size,
                    threads: flags.threads,
                    seed: ctx.next_seed,
                    ops: flags.reads(),
                    duration_secs: flags.duration,
                };
                ctx.next_seed += flags.threads as u64;
                let s = ycsb::run(&SiftYcsb { db: &db, sync: flags.sync }, &run)?;
                println!("{}", s.lines(name));
                None
            }
            w => {
                let workload = TxWorkload::parse(w).expect("checked against KNOWN");
                let run = TxRun {
                    workload,
                    layout: KeyLayout { num: flags.num, spacing: flags.key_spacing },
                    key_size: flags.key_size,
                    value_size: flags.value_size,
                    threads: flags.threads,
                    seed: ctx.next_seed,
                    ops: flags.reads(),
                    duration_secs: flags.duration,
                };
                ctx.next_seed += flags.threads as u64;
                let s = txn::run(&transactions::SiftTx { db: &db, sync: flags.sync }, &run)?;
                println!("{}", s.lines(name));
                None
            }
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
        if matches!(name.as_str(), "fillseq" | "fillrandom" | "overwrite" | ycsb::LOAD) {
            println!("{}", blob::write_amp_line(name, &db.stats()));
        }
        if let Some((reads0, lookups0)) = reads_before {
            let (reads, lookups) = device_reads(&db);
            println!("{}", reads_line(name, reads - reads0, lookups - lookups0));
        }
    }
    if flags.statistics {
        // Counters since the database was last opened (a fill reopens it fresh).
        let s = db.stats();
        println!("\n{}", report::statistics(&s, s.gets));
        println!("{}", report::memory(&db.memory_usage()));
    }
    Ok(())
}

/// Point-read benchmarks, after which a line gives the file reads per lookup.
/// A fill's result with its write-amplification note line (process I/O over the user bytes,
/// the same measure the peers' tools print).
fn with_write_amp(
    st: ThreadStats,
    name: &str,
    meter: &WriteMeter,
) -> (ThreadStats, Option<String>) {
    let line = meter.line(name, st.bytes);
    (st, Some(line))
}

fn is_point_read(name: &str) -> bool {
    matches!(name, "readrandom" | "readmissing" | "multireadrandom" | "readwhilewriting")
}

/// (SST block reads that went to the file, point lookups) since the database was opened. With
/// `--use_direct_reads=1` every such read is a device read.
fn device_reads(db: &Db) -> (u64, u64) {
    let s = db.stats();
    (s.levels.iter().map(|l| l.reads.file_reads).sum(), s.gets)
}

/// `file reads   : NAME X per lookup (R reads, L lookups)` (not starting with the name, which
/// marks result lines): a lookup is one key, also in multireadrandom's batches, as its
/// ops/sec counts keys (db_bench's convention).
fn reads_line(name: &str, reads: u64, lookups: u64) -> String {
    let per = if lookups == 0 { 0.0 } else { reads as f64 / lookups as f64 };
    format!("file reads   : {name} {per:.4} per lookup ({reads} reads, {lookups} lookups)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_reads_line_gives_reads_per_key_and_does_not_look_like_a_result_line() {
        let l = reads_line("multireadrandom", 630, 1000);
        assert_eq!(l, "file reads   : multireadrandom 0.6300 per lookup (630 reads, 1000 lookups)");
        assert!(!l.contains(" micros/op "));
        assert!(reads_line("readrandom", 0, 0).contains(" 0.0000 per lookup"));
    }
}
