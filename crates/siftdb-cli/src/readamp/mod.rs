//! `siftdb readamp`: the read-amplification report (issue 6, docs/tools.md#readamp).
//!
//! For each filter policy ([`build::Policy`]) and each budget of `--bits` filter bits per key it
//! builds the same database (same keys, values, options and LSM shape; only the filter policy
//! differs), looks up present and missing keys, and reports per level and in total: data blocks
//! read per lookup, observed against configured FPR, and filter bytes. Then it measures every
//! filter of `siftdb::filter` on its own (`siftdb_bench_kit::survey`). Outputs: a table on stdout,
//! `<out>/readamp.csv`, `<out>/equal_memory.csv` (every policy read at the default policy's
//! measured memory: [`compare`]), `<out>/fpr_vs_bits.csv`, `<out>/blocks_per_lookup.svg` and
//! `<out>/fpr_vs_bits.svg`.
//!
//! Equal memory: every policy is configured with the budget as bits per key at flush and at
//! compaction (all-runs allocation: over the whole tree); the bits each build actually spent
//! (filter bytes over entries, all levels) are reported, the plots use them as x, and a run
//! further than `--tolerance` from its budget is marked in readamp.csv's `equal_memory` column;
//! equal_memory.csv then compares the policies at the bits they really spent ([`compare`]).
//! Binary fuse's size is fixed by its fingerprint width, so it runs only at budgets within
//! `--tolerance` of its own bits per key at the output file size (measured first: about 10.3
//! for 8-bit and 20.6 for 16-bit fingerprints at 9,000 keys).

mod build;
mod compare;
mod csv;
mod filters;
mod jobs;
mod measure;
mod plot;
mod report;

use crate::dirs::{self, DirState};
use crate::progress;
use build::{Policy, Shape};
use measure::Measured;
use siftdb::{Error, Result};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The files readamp writes, and the only names a reused `--out` directory may hold.
const OUTPUTS: [&str; 5] = [
    "readamp.csv",
    "equal_memory.csv",
    "fpr_vs_bits.csv",
    "blocks_per_lookup.svg",
    "fpr_vs_bits.svg",
];

/// The output directory: `--out` if it is new, empty or holds only [`OUTPUTS`] (readamp never
/// overwrites a file it did not write), else a fresh directory it creates.
fn output_dir(out: Option<&Path>) -> Result<PathBuf> {
    let Some(out) = out else {
        let dir = tempfile::Builder::new()
            .prefix("siftdb-readamp-")
            .tempdir()
            .map_err(|e| Error::io("creating the output directory", e))?;
        // Kept: the report outlives the process.
        return Ok(dir.keep());
    };
    let accepted = "readamp reuses a directory only if it holds nothing but its own outputs \
                    (readamp.csv, equal_memory.csv, fpr_vs_bits.csv, blocks_per_lookup.svg, \
                    fpr_vs_bits.svg)";
    match dirs::classify(out)? {
        DirState::Absent => std::fs::create_dir_all(out)
            .map_err(|e| Error::io(format!("creating {}", out.display()), e))?,
        DirState::Empty => {}
        _ if !out.is_dir() => {
            return Err(dirs::refuse("--out", out, "it is not a directory", accepted))
        }
        DirState::Database | DirState::Other(_) => {
            let names = dirs::entries(out)?;
            if let Some(foreign) = names.iter().find(|n| !OUTPUTS.contains(&n.as_str())) {
                let why = format!("it holds {foreign:?}, which readamp did not write");
                return Err(dirs::refuse("--out", out, &why, accepted));
            }
            // A name alone does not make a file readamp's: a symbolic link (or a directory)
            // named like an output would have its target overwritten.
            for name in &names {
                let meta = std::fs::symlink_metadata(out.join(name)).map_err(|e| {
                    Error::io(format!("inspecting {}", out.join(name).display()), e)
                })?;
                if !meta.file_type().is_file() {
                    let why = format!("its {name:?} is not a regular file readamp wrote");
                    return Err(dirs::refuse("--out", out, &why, accepted));
                }
            }
        }
    }
    Ok(out.to_path_buf())
}

/// Arguments of `siftdb readamp`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReadampArgs {
    /// Output directory. Default: a new directory `siftdb-readamp-*` under the system temp
    /// directory (its path is printed). A given directory is created if missing and reused only
    /// if it holds nothing but readamp's own output files, which are then overwritten; to
    /// regenerate the committed report: `--out docs/results/DATE-readamp-430k`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Filter budgets, bits per key, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4,6,8,10,12,16,20")]
    bits: Vec<f64>,
    /// Keys loaded (present keys are even numbers, missing ones the odd numbers between).
    #[arg(long, default_value_t = 430_000)]
    keys: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Lookups of present keys, and again of missing keys, per build.
    #[arg(long, default_value_t = 200_000)]
    lookups: u64,
    /// Keys per flush (one L0 file each; compactions finish before the next batch).
    #[arg(long, default_value_t = 10_000)]
    flush_keys: u64,
    /// Target size of L1 in KiB.
    #[arg(long, default_value_t = 1024)]
    level_base_kib: u64,
    /// Each level's target is this many times the previous one's.
    #[arg(long, default_value_t = 10.0)]
    level_multiplier: f64,
    /// Compaction output file size in KiB.
    #[arg(long, default_value_t = 1024)]
    file_kib: u64,
    /// Keys per filter in the FPR sweep (negatives: four times as many).
    #[arg(long, default_value_t = 1_000_000)]
    fpr_keys: usize,
    /// Relative distance from the budget up to which a run counts as equal memory.
    #[arg(long, default_value_t = 0.10)]
    tolerance: f64,
    /// Build the databases in real files in a temporary directory instead of in memory
    /// (`siftdb::storage::MemStorage`); the counts are the same, the builds slower.
    #[arg(long)]
    on_disk: bool,
    /// Read the tables with `O_DIRECT` (implies `--on-disk`; the temporary directory must be on
    /// a file system that allows it, set `TMPDIR` to choose one) through a block cache of
    /// `--cache-mib`, so every file read is a device read: the report adds device reads and
    /// microseconds per lookup. The block counts are the same as without.
    #[arg(long)]
    direct_reads: bool,
    /// Block cache of the `--direct-reads` builds in MiB (0: none). Default 8, the cache the
    /// direct-read benchmarks use (`scripts/direct.sh`).
    #[arg(long)]
    cache_mib: Option<u64>,
    /// Builds measured at once (each build is one writer thread plus its flush and compaction;
    /// the counts do not depend on this, the microseconds per lookup do: keep 1 to time).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Seed of keys, values and lookups.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Share of present keys among the lookups made while loading (after each flush, what
    /// skew-aware allocation observes) and in the `blk/mix` figure: this share times the
    /// blocks of a present-key lookup plus the rest times those of a missing-key lookup.
    #[arg(long, default_value_t = 0.5)]
    hit_fraction: f64,
    /// Lookups after each flush during the load (0: none).
    #[arg(long, default_value_t = 2000)]
    load_lookups: u64,
    /// Which present keys are looked up, during the load and in the measurement.
    #[arg(long, value_enum, default_value = "uniform")]
    present_dist: build::PresentDist,
    /// Overwrite every key this many times after the load (same order and flush cadence): the
    /// tree keeps its shape while compactions rewrite its files, so files built while the
    /// tree was smaller (under allocations that follow its shape) are replaced. At most 10.
    #[arg(long, default_value_t = 0)]
    rewrites: u32,
    /// After the load, compact the whole tree into one sorted run on its deepest level
    /// (`Db::compact`): the fully compacted, settled shape, with no L0 file and the budget planned
    /// for that one level (design.md, "Allocation over all runs": what each shape gets).
    #[arg(long)]
    compact: bool,
    /// Only these policies, by their report names, comma separated (default: every policy).
    /// For long runs by hand (a 50M-key rung of the default alone); the equal-memory
    /// comparison then covers only the policies run.
    #[arg(long, value_delimiter = ',')]
    policies: Vec<String>,
}

/// The policies `--policies` names (all when empty), in report order; an unknown name is an
/// error listing the known ones.
fn chosen_policies(names: &[String]) -> Result<Vec<Policy>> {
    if let Some(bad) = names.iter().find(|n| !Policy::ALL.iter().any(|p| p.name() == n.as_str())) {
        let known: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
        return Err(Error::invalid(format!(
            "readamp: --policies: unknown policy {bad:?} (known: {})",
            known.join(", ")
        )));
    }
    Ok(Policy::ALL
        .into_iter()
        .filter(|p| names.is_empty() || names.iter().any(|n| n == p.name()))
        .collect())
}

/// One (policy, budget) of the report.
#[derive(Debug)]
pub struct Run {
    /// The policy.
    pub policy: Policy,
    /// Budget in bits per key (0 for no filter).
    pub budget: f64,
    /// The measurement, or why the policy cannot spend this budget.
    pub outcome: std::result::Result<Measured, String>,
    /// Build and measurement seconds.
    pub secs: f64,
}

impl Run {
    /// Filter bits per entry the build ended up with (all levels).
    pub fn actual_bits_per_key(&self) -> Option<f64> {
        self.outcome.as_ref().ok().map(|m| m.total.bits_per_key())
    }

    /// `yes` when the actual bits per key are within `tolerance` (relative) of the budget,
    /// else `over +x%` / `under -x%`; `n/a` for no filter; `unreachable` when not run.
    pub fn equal_memory(&self, tolerance: f64) -> String {
        match self.actual_bits_per_key() {
            None => "unreachable".into(),
            Some(_) if self.policy == Policy::NoFilter => "n/a".into(),
            Some(a) => {
                let rel = a / self.budget - 1.0;
                if rel.abs() <= tolerance {
                    "yes".into()
                } else if rel > 0.0 {
                    format!("over {:+.1}%", rel * 100.0)
                } else {
                    format!("under {:+.1}%", rel * 100.0)
                }
            }
        }
    }
}

pub fn run(args: &ReadampArgs) -> Result<()> {
    if args.keys < 2
        || args.lookups == 0
        || args.bits.iter().any(|&b| !(b > 0.0 && b <= 32.0))
        || !(0.0..=1.0).contains(&args.hit_fraction)
        || args.rewrites > 10
        || args.cache_mib.is_some_and(|m| m > 1 << 20)
        || !(1..=64).contains(&args.jobs)
    {
        return Err(Error::invalid(
            "readamp: --keys >= 2, --lookups >= 1, --bits in (0, 32], --hit-fraction in [0, 1], \
             --rewrites at most 10, --cache-mib at most 1048576, --jobs in 1..=64",
        ));
    }
    if args.cache_mib.is_some() && !args.direct_reads {
        return Err(Error::invalid(
            "readamp: --cache-mib sizes the block cache of --direct-reads builds; give both",
        ));
    }
    let policies = chosen_policies(&args.policies)?;
    let io = if args.direct_reads {
        build::Io::Direct { cache_bytes: (args.cache_mib.unwrap_or(8) << 20) as usize }
    } else if args.on_disk {
        build::Io::Disk
    } else {
        build::Io::Memory
    };
    let t0 = Instant::now();
    let out = output_dir(args.out.as_deref())?;
    println!("output directory: {}", out.display());
    let shape = Shape {
        keys: args.keys,
        value_size: args.value_size,
        flush_keys: args.flush_keys,
        level_base: args.level_base_kib << 10,
        multiplier: args.level_multiplier,
        file_size: args.file_kib << 10,
        seed: args.seed,
        load_lookups: args.load_lookups,
        hit_fraction: args.hit_fraction,
        present: args.present_dist,
        rewrites: args.rewrites,
        compact: args.compact,
    };
    println!(
        "siftdb readamp: {} keys of 16 bytes, {}-byte values, {} keys per flush, L1 {} KiB x{} per level, \
         {} KiB files; {} present ({:?}) + {} missing lookups per build; {} lookups after each \
         flush, {:.0}% of present keys",
        args.keys, args.value_size, args.flush_keys, args.level_base_kib, args.level_multiplier,
        args.file_kib, args.lookups, args.present_dist, args.lookups, args.load_lookups,
        args.hit_fraction * 100.0
    );
    if args.compact {
        println!("compacted into one level after the load (--compact)");
    }
    match io {
        build::Io::Memory => println!("files in memory (MemStorage)"),
        build::Io::Disk => println!("files on disk, read through memory maps"),
        build::Io::Direct { cache_bytes } => println!(
            "files on disk, read with O_DIRECT through a {} MiB block cache",
            cache_bytes >> 20
        ),
    }
    // Entries of a compaction output file: its target size over key + value + about one byte
    // of block overhead per entry (prefix-compressed keys, varint lengths, restarts).
    let keys_per_file = (shape.file_size / (16 + args.value_size as u64 + 1)) as usize;
    let fuse = build::FuseBits::measure(keys_per_file)?;
    println!(
        "binary fuse at {keys_per_file} keys per file: {:.2} bits/key (8-bit), {:.2} (16-bit)",
        fuse.fuse8, fuse.fuse16
    );
    let mut plan = Vec::new();
    if policies.contains(&Policy::NoFilter) {
        plan.push((Policy::NoFilter, 0.0));
    }
    for &b in &args.bits {
        plan.extend(policies.iter().filter(|&&p| p != Policy::NoFilter).map(|&p| (p, b)));
    }
    let order = build::load_order(&shape);
    let pb = progress::bar("readamp", plan.len() as u64);
    let one = |&(policy, budget): &(Policy, f64)| -> Result<Run> {
        let t = Instant::now();
        let outcome = match policy.filter_policy(budget, fuse, args.tolerance) {
            Err(reason) => Err(reason),
            Ok(fp) => {
                let dir = tempfile::tempdir().map_err(|e| Error::io("creating a temp dir", e))?;
                let db = build::build(dir.path(), &shape, fp, io)?;
                let params = (args.lookups, args.seed, args.hit_fraction);
                Ok(measure::measure(&db, &order, params, args.present_dist)?)
            }
        };
        let run = Run { policy, budget, outcome, secs: t.elapsed().as_secs_f64() };
        pb.inc(1);
        pb.set_message(format!("{} @{budget}", policy.name()));
        if !std::io::stderr().is_terminal() {
            // Long runs by hand log to files: one line a build instead of the bar.
            eprintln!(
                "readamp: {}/{} {} @{budget} done in {:.1} s",
                pb.position(),
                plan.len(),
                policy.name(),
                run.secs
            );
        }
        Ok(run)
    };
    let runs = jobs::run_all(&plan, args.jobs, one)?;
    pb.finish_and_clear();
    let db_secs = t0.elapsed().as_secs_f64();
    report::print_report(&runs, args);
    if io != build::Io::Memory {
        report::print_file_reads(&runs, io);
    }
    let comparisons = compare::compare(&runs);
    compare::print(&comparisons, args.lookups);

    let t = Instant::now();
    let fpr_rows = filters::sweep(&args.bits, args.fpr_keys, args.seed)?;
    let sweep_secs = t.elapsed().as_secs_f64();
    let names: Vec<&'static str> = Policy::ALL.iter().map(|p| p.name()).collect();
    let [readamp_csv, equal_csv, fpr_csv, blocks_svg, fpr_svg] = OUTPUTS.map(|n| out.join(n));
    csv::write(&readamp_csv, &csv::readamp_csv(&runs, args.tolerance))?;
    csv::write(&equal_csv, &compare::csv(&comparisons, args.lookups))?;
    csv::write(&fpr_csv, &csv::fpr_csv(&fpr_rows))?;
    plot::blocks_per_lookup(&blocks_svg, &runs, &names)?;
    plot::fpr_vs_bits(&fpr_svg, &fpr_rows)?;
    println!(
        "\nwrote {0}/readamp.csv, {0}/equal_memory.csv, {0}/fpr_vs_bits.csv, \
         {0}/blocks_per_lookup.svg, {0}/fpr_vs_bits.svg",
        out.display()
    );
    println!(
        "time: {db_secs:.1} s for {} builds, {sweep_secs:.1} s filter sweep ({} rows), {:.1} s total",
        runs.iter().filter(|r| r.outcome.is_ok()).count(),
        fpr_rows.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
