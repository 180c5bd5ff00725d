//! The point-lookup demo: load keys, flush, look up present and missing keys, and print
//! throughput and the per-level read-amplification table.
//!
//! The database runs with demo-sized compaction settings (8 MiB memtables, 24 MiB L1, 8 MiB
//! files) so the load builds several levels: L0 files carry the flush's two-bit Bloom filter,
//! compacted levels the static filter of the compaction policy (Ribbon), and the table shows
//! each level's filter memory and configured FPR next to the observed one.
//!
//! Missing keys fall inside the SSTs' key ranges (present keys are the even numbers, missing
//! ones the odd numbers in between), so only filters can reject them without a block read.

use crate::dirs;
use crate::progress;
use siftdb::filter::rng::SplitMix64;
use siftdb::{CompactionOptions, Db, Error, Options, Result};
use siftdb_bench_kit::load;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The file that marks a database directory the demo created itself: `--db` accepts a new or
/// empty directory, or one holding this marker and siftdb's own files (an earlier demo run,
/// which the demo then loads again: same keys, so the lookups stay exact). It never deletes.
const DEMO_MARKER: &str = "SIFTDB-DEMO";

/// Checks that the demo may write into `dir`; returns whether it must write the marker (the
/// directory is new or empty).
fn check_dir(dir: &Path) -> Result<bool> {
    dirs::check_writable_tool_dir(dir, "--db", DEMO_MARKER, "demo")
}

/// Arguments of the demo.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// Database directory (default: a temporary directory removed at exit): a new or empty
    /// directory, or one an earlier demo run created (it is loaded again). Anything else is
    /// refused; the demo deletes nothing.
    #[arg(long)]
    db: Option<PathBuf>,
    /// Keys to load.
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Lookups of present keys, and again of missing keys.
    #[arg(long, default_value_t = 1_000_000)]
    lookups: u64,
    /// RNG seed for key order and lookups.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Memtable size in MiB (L1 is three memtables, output files one).
    #[arg(long, default_value_t = 8)]
    memtable_mib: usize,
}

pub fn run(args: &DemoArgs) -> Result<()> {
    if args.keys == 0 || args.lookups == 0 {
        return Err(Error::InvalidArgument(format!(
            "--keys={} --lookups={}: the demo needs at least one key to load and one lookup",
            args.keys, args.lookups
        )));
    }
    let mark = match &args.db {
        Some(dir) => check_dir(dir)?,
        None => false,
    };
    let tmp;
    let dir = match &args.db {
        Some(p) => p.clone(),
        None => {
            tmp = tempfile::tempdir().map_err(|e| Error::io("creating a temp dir", e))?;
            tmp.path().to_path_buf()
        }
    };
    println!(
        "siftdb point-lookup demo: {} keys of 16 bytes, {}-byte values, in {}",
        args.keys,
        args.value_size,
        dir.display()
    );
    let mib = args.memtable_mib.max(1) << 20;
    let opts = Options {
        memtable_size: mib,
        compaction: CompactionOptions {
            max_bytes_for_level_base: 3 * mib as u64,
            target_file_size: mib as u64,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(&dir, opts)?;
    if mark {
        dirs::write_marker(&dir, DEMO_MARKER, "demo")?;
    }
    let mut rng = SplitMix64::new(args.seed);

    // Load present keys (even numbers) in random order, in batches of 100.
    let order = load::shuffled(args.keys, &mut rng);
    let mut value = vec![0u8; args.value_size];
    let pb = progress::bar("load", args.keys);
    let t = Instant::now();
    load::load_even_keys(&db, &mut rng, &order, &mut value, |n| pb.inc(n))?;
    db.flush()?;
    pb.finish_and_clear();
    let load_secs = t.elapsed().as_secs_f64();
    println!("load + flush : {:>10.0} keys/s ({load_secs:.2} s)", args.keys as f64 / load_secs);
    let t = Instant::now();
    db.wait_for_compactions()?;
    let s = db.stats();
    println!(
        "compaction   : {} compactions, {} trivial moves, {:.0} MB read, {:.0} MB written, write amplification {:.2}, {:.2} s waited after load",
        s.compactions,
        s.trivial_moves,
        s.compaction_bytes_read as f64 / 1e6,
        s.compaction_bytes_written as f64 / 1e6,
        s.write_amplification(),
        t.elapsed().as_secs_f64()
    );

    let before = db.stats();
    let (hit_secs, found) = lookups(&db, &mut rng, args, 0, "present")?;
    let after_hits = db.stats();
    let (miss_secs, false_found) = lookups(&db, &mut rng, args, 1, "missing")?;
    let after = db.stats();
    println!(
        "get present  : {:>10.0} ops/s ({found} of {} found)",
        args.lookups as f64 / hit_secs,
        args.lookups
    );
    println!(
        "get missing  : {:>10.0} ops/s ({false_found} of {} found)",
        args.lookups as f64 / miss_secs,
        args.lookups
    );
    if found != args.lookups || false_found != 0 {
        return Err(Error::Corruption {
            file: None,
            offset: None,
            what: format!("demo lookups disagree with the loaded keys: {found} present found, {false_found} missing found"),
        });
    }
    println!("\nread amplification, present-key lookups:");
    print!("{}", after_hits.since(&before).read_amp_table(args.lookups));
    println!("\nread amplification, missing-key lookups:");
    print!("{}", after.since(&after_hits).read_amp_table(args.lookups));
    println!(
        "\nflushes {} (filter written as is {}, rebuilt {}), static filter fallbacks {}, \
         L0 stall {} ms, block cache hits {} misses {}",
        after.flushes,
        after.flush_filter_as_is,
        after.flush_filter_rebuilt,
        after.filter_fallbacks,
        after.l0_stall_micros / 1000,
        after.block_cache_hits,
        after.block_cache_misses
    );
    Ok(())
}

/// Looks up `args.lookups` random keys with parity `parity` (0 = present, 1 = missing).
fn lookups(
    db: &Db,
    rng: &mut SplitMix64,
    args: &DemoArgs,
    parity: u64,
    what: &str,
) -> Result<(f64, u64)> {
    let pb = progress::bar(what, args.lookups);
    let t = Instant::now();
    let mut found = 0;
    for n in 0..args.lookups {
        let i = rng.below(args.keys);
        if db.get(load::decimal_key(2 * i + parity))?.is_some() {
            found += 1;
        }
        if n % 4096 == 0 {
            pb.set_position(n);
        }
    }
    pb.finish_and_clear();
    Ok((t.elapsed().as_secs_f64(), found))
}
