//! `siftdb crashtest`: a kill -9 crash loop (issue 7, after RocksDB's `db_crashtest.py`).
//!
//! Each cycle the parent starts a child (this binary, hidden subcommand `crashtest-child`) that
//! opens the database in `--dir` and writes synced batches and single writes, printing
//! `ack <i>` on stdout (flushed) after write `i` returns. A second thread of the child compacts
//! (`Db::compact`, a flush then a full compaction) every few milliseconds, and small memtables
//! keep background flushes and compactions running too. After a random delay (sometimes almost
//! none, so the kill lands during recovery) the parent sends SIGKILL, collects the child's
//! lines, opens the database itself and checks it.
//!
//! Where the kill landed, from the child's lines (each written and flushed whole): `start`
//! before `Db::open`, `open` after it (a kill between the two hit recovery), `compact` before a
//! compaction and `compacted <n>` after it (`n`: compactions the child's database completed so
//! far, background ones included); a kill after a `compact` with no `compacted` hit a
//! compaction. The summary line counts both.
//!
//! Checkable history: write `i` of cycle `c` has id `c << 24 | i`; its keys, kinds and values are
//! a function of the seed and the id (every value names the id), so the parent can replay any
//! write without the child's help. The child writes in order, one at a time, and prints an
//! acknowledgement before starting the next write; so if the last acknowledgement is `a`, the
//! writes that may have reached the WAL are exactly `0..=a+1`. The recovered state must equal
//! the state verified after the previous cycle plus writes `0..j` of this cycle for some
//! `j` in `a+1 ..= a+2`. A `j` below that is a lost acknowledged write; no `j` at all is a hole.
//! The next cycle starts from the state actually recovered.

use siftdb::rng::SplitMix64;
use siftdb::{Db, Options, Result, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Keys in the key space: small, so writes overwrite and delete each other constantly.
const KEYS: u64 = 64;
/// Memtable size of parent and child: a few dozen writes, so flushes happen every cycle.
const MEMTABLE_BYTES: usize = 4096;

/// Arguments of `siftdb crashtest`.
#[derive(clap::Args, Debug, Clone)]
pub struct CrashtestArgs {
    /// Kill/recover cycles.
    #[arg(long, default_value_t = 300)]
    cycles: u64,
    /// Seed of the writes and of the kill delays.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Database directory (default: a temporary directory removed at exit): a new or empty
    /// directory (anything else, a siftdb database included, is refused).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Longest time a child runs before it is killed, in milliseconds.
    #[arg(long, default_value_t = 30)]
    max_ms: u64,
}

/// Arguments of the hidden child process.
#[derive(clap::Args, Debug, Clone)]
pub struct ChildArgs {
    #[arg(long)]
    dir: PathBuf,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    cycle: u64,
}

type State = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options { memtable_size: MEMTABLE_BYTES, block_cache_bytes: 1 << 20, ..Options::default() }
}

/// The records of write `id`: 1 to 4 (a batch when more than one), one in eight a delete.
fn records(seed: u64, id: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut rng = SplitMix64::new(seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let n = 1 + rng.below(4);
    (0..n)
        .map(|_| {
            let key = format!("key{:03}", rng.below(KEYS)).into_bytes();
            let value =
                (rng.below(8) != 0).then(|| format!("{id}:{}", "x".repeat(40)).into_bytes());
            (key, value)
        })
        .collect()
}

fn write_id(cycle: u64, i: u64) -> u64 {
    cycle << 24 | i
}

/// Writes one whole line to stdout and flushes it (the parent reads lines up to the kill).
fn say(line: std::fmt::Arguments<'_>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| siftdb::Error::io("writing to the parent", e))
}

/// The child's compaction thread: a full compaction every 0-4 ms, announced before and after.
fn compact_loop(db: &Db, seed: u64) -> Result<()> {
    let mut rng = SplitMix64::new(seed);
    loop {
        std::thread::sleep(Duration::from_micros(rng.below(4_000)));
        say(format_args!("compact"))?;
        db.compact()?;
        let s = db.stats();
        say(format_args!("compacted {}", s.compactions + s.trivial_moves))?;
    }
}

/// The child: write until killed, acknowledging each write on stdout, while a second thread
/// compacts.
pub fn child(args: &ChildArgs) -> Result<()> {
    say(format_args!("start"))?;
    let db = Db::open(&args.dir, options())?;
    say(format_args!("open"))?;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let e = match compact_loop(&db, args.seed ^ args.cycle) {
                Err(e) => e,
                Ok(()) => unreachable!("the compaction loop ends only by an error"),
            };
            // An error ends the child; the parent reports it (a child must not exit by itself).
            eprintln!("crashtest child: compaction failed: {e}");
            std::process::exit(3);
        });
        write_loop(&db, args)
    })
}

fn write_loop(db: &Db, args: &ChildArgs) -> Result<()> {
    for i in 0..(1 << 24) {
        let mut b = WriteBatch::new();
        for (k, v) in records(args.seed, write_id(args.cycle, i)) {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            };
        }
        db.write_opt(b, WriteOptions { sync: true })?;
        say(format_args!("ack {i}"))?;
    }
    Ok(())
}

fn apply(state: &mut State, seed: u64, id: u64) {
    for (k, v) in records(seed, id) {
        match v {
            Some(v) => state.insert(k, v),
            None => state.remove(&k),
        };
    }
}

fn read_state(db: &Db) -> Result<State> {
    let mut s = State::new();
    for item in db.scan()? {
        let (k, v) = item?;
        s.insert(k, v);
    }
    // Point lookups go through filters and indexes that the scan does not use.
    for k in (0..KEYS).map(|k| format!("key{k:03}").into_bytes()) {
        let got = db.get(&k)?;
        if got.as_ref() != s.get(&k) {
            return Err(siftdb::Error::corruption(
                format!("get and scan disagree on {}", String::from_utf8_lossy(&k)),
                None,
            ));
        }
    }
    Ok(s)
}

#[derive(Default)]
struct Tally {
    cycles: u64,
    acked: u64,
    lost: u64,
    holes: u64,
    failed_opens: u64,
    /// Kills before the child printed `start` (process start-up), between `start` and `open`
    /// (recovery), and inside a `compact` .. `compacted` pair.
    before_start: u64,
    in_recovery: u64,
    in_compaction: u64,
    /// Compactions the children completed (their last `compacted` counts).
    compactions: u64,
}

/// What one child printed before it was killed.
#[derive(Default)]
struct ChildReport {
    /// Last acknowledged write.
    last_ack: Option<u64>,
    started: bool,
    opened: bool,
    /// A `compact` line not followed by `compacted`.
    compacting: bool,
    /// The count of the last `compacted` line.
    compactions: u64,
}

/// The parent loop.
pub fn run(args: &CrashtestArgs) -> Result<()> {
    let tmp;
    let dir = match &args.dir {
        Some(p) => p.clone(),
        None => {
            tmp = tempfile::tempdir().map_err(|e| siftdb::Error::io("creating a temp dir", e))?;
            tmp.path().to_path_buf()
        }
    };
    crate::dirs::check_new_or_empty(&dir, "--dir", "crashtest")?;
    let exe = std::env::current_exe().map_err(|e| siftdb::Error::io("finding this binary", e))?;
    let mut rng = SplitMix64::new(args.seed);
    let mut state = {
        let db = Db::open(&dir, options())?;
        read_state(&db)?
    };
    let mut t = Tally::default();
    let start = Instant::now();
    for cycle in 0..args.cycles {
        // One cycle in eight is killed within 3 ms: mostly during the child's recovery.
        let delay_us =
            if rng.below(8) == 0 { rng.below(3_000) } else { rng.below(args.max_ms.max(1) * 1000) };
        let report = run_child(&exe, &dir, args.seed, cycle, Duration::from_micros(delay_us))?;
        let acks = report.last_ack;
        t.cycles += 1;
        t.acked += acks.map_or(0, |a| a + 1);
        t.before_start += u64::from(!report.started);
        t.in_recovery += u64::from(report.started && !report.opened);
        t.in_compaction += u64::from(report.compacting);
        t.compactions += report.compactions;
        let db = match Db::open(&dir, options()) {
            Ok(db) => db,
            Err(e) => {
                eprintln!("crashtest: cycle {cycle}: open failed: {e}");
                t.failed_opens += 1;
                break;
            }
        };
        let got = match read_state(&db) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("crashtest: cycle {cycle}: reading failed: {e}");
                t.failed_opens += 1;
                break;
            }
        };
        drop(db);
        // Acknowledged count a1 = acks + 1; candidates j = a1 and a1 + 1; below is a loss.
        let acked = acks.map_or(0, |a| a + 1);
        let mut model = state.clone();
        let mut matched = None;
        for j in 0..=acked + 1 {
            if j > 0 {
                apply(&mut model, args.seed, write_id(cycle, j - 1));
            }
            if model == got {
                matched = Some(j);
            }
        }
        match matched {
            Some(j) if j >= acked => {}
            Some(j) => {
                eprintln!("crashtest: cycle {cycle}: {} acknowledged writes lost", acked - j);
                t.lost += acked - j;
            }
            None => {
                eprintln!("crashtest: cycle {cycle}: recovered state is no prefix of the history");
                t.holes += 1;
            }
        }
        state = got;
    }
    println!(
        "crashtest: cycles {}, acknowledged writes {}, acknowledged writes lost {}, holes {}, \
         failed opens {}, kills during recovery {}, during compaction {}, before open {}, \
         compactions {} ({:.1} s)",
        t.cycles,
        t.acked,
        t.lost,
        t.holes,
        t.failed_opens,
        t.in_recovery,
        t.in_compaction,
        t.before_start,
        t.compactions,
        start.elapsed().as_secs_f64()
    );
    if t.lost + t.holes + t.failed_opens > 0 {
        return Err(siftdb::Error::invalid("crashtest found durability violations"));
    }
    Ok(())
}

/// Runs one child for `delay`, kills it, and returns what it printed.
fn run_child(
    exe: &Path,
    dir: &Path,
    seed: u64,
    cycle: u64,
    delay: Duration,
) -> Result<ChildReport> {
    let mut child = Command::new(exe)
        .arg("crashtest-child")
        .arg("--dir")
        .arg(dir)
        .arg("--seed")
        .arg(seed.to_string())
        .arg("--cycle")
        .arg(cycle.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| siftdb::Error::io("starting the crashtest child", e))?;
    std::thread::sleep(delay);
    // SIGKILL on Unix. The child may have exited on its own (an error): its stderr says why.
    let _ = child.kill();
    let status = child.wait().map_err(|e| siftdb::Error::io("waiting for the child", e))?;
    let mut r = ChildReport::default();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line.map_err(|e| siftdb::Error::io("reading the child's lines", e))?;
            let (word, arg) = line.split_once(' ').unwrap_or((&line, ""));
            match (word, arg.parse::<u64>().ok()) {
                ("ack", Some(i)) => r.last_ack = Some(i),
                ("start", _) => r.started = true,
                ("open", _) => r.opened = true,
                ("compact", _) => r.compacting = true,
                ("compacted", Some(n)) => {
                    r.compacting = false;
                    r.compactions = n;
                }
                _ => {}
            }
        }
    }
    if status.success() || status.code().is_some() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        return Err(siftdb::Error::invalid(format!(
            "crashtest child exited by itself ({status}): {}",
            err.trim()
        )));
    }
    Ok(r)
}
