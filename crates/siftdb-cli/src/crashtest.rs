//! `siftdb crashtest`: a kill -9 crash loop (issue 7, after RocksDB's `db_crashtest.py`).
//!
//! Each cycle the parent starts a child (this binary, hidden subcommand `crashtest-child`) that
//! opens the database in `--dir` and writes synced batches and single writes, printing
//! `ack <i>` on stdout (flushed) after write `i` returns. A second thread of the child compacts
//! (`Db::compact`, a flush then a full compaction) after every `COMPACT_EVERY` writes, and small
//! memtables keep background flushes and compactions running too. The writer starts the next
//! request only once the previous compaction finished, so the compactions a child completes
//! follow from the writes it made, whatever the machine's speed.
//!
//! When to kill is decided by the child's progress, never by a clock: the parent reads the
//! child's lines as they come and sends SIGKILL right after the line its seeded plan names for
//! the cycle: `start` (printed just before `Db::open`: the kill lands in recovery), the `j`-th
//! `compact` (in a compaction), or `ack <n>` (after `n + 1` acknowledged writes). One cycle in
//! `CREATE_EVERY` is a creation: the child's `Db::open` creates a new database in a directory of
//! its own, and is killed right after `start`, so the kill lands in the creation; the parent
//! checks that directory as it checks the main one, writes to it, and destroys it.
//!
//! Where the kill landed, from the child's lines (each written and flushed whole): `start`
//! before `Db::open`, `open` after it (a kill between the two hit recovery), `compact` before a
//! compaction and `compacted <n>` after it (`n`: compactions the child's database completed so
//! far, background ones included); a kill after a `compact` with no `compacted` hit a
//! compaction. The summary line counts the kills aimed at each place and where they landed.
//!
//! Checkable history: write `i` of cycle `c` has id `c << 24 | i`; its keys, kinds and values are
//! a function of the seed and the id (every value names the id), so the parent can replay any
//! write without the child's help. The child writes in order, one at a time, and prints an
//! acknowledgement before starting the next write; so if the last acknowledgement is `a`, the
//! writes that may have reached the WAL are exactly `0..=a+1`. The recovered state must equal
//! the state verified after the previous cycle plus writes `0..j` of this cycle for some
//! `j` in `a+1 ..= a+2`. A `j` below that is a lost acknowledged write; no `j` at all is a hole.
//! The next cycle starts from the state actually recovered.

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Options, Result, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// Keys in the key space: small, so writes overwrite and delete each other constantly.
const KEYS: u64 = 64;
/// Memtable size of parent and child: a few dozen writes, so flushes happen every cycle.
const MEMTABLE_BYTES: usize = 4096;
/// The child asks for a compaction after every this many acknowledged writes.
const COMPACT_EVERY: u64 = 16;
/// One cycle in this many kills the first `Db::open` of a new directory.
const CREATE_EVERY: u64 = 10;

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
    /// Most acknowledged writes a child makes before it is killed (the kill point of a cycle
    /// aimed at acknowledgements is drawn below this).
    #[arg(long, default_value_t = 200)]
    max_acks: u64,
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

/// Compaction requests of the child's writer and completions of its compaction thread.
#[derive(Default)]
struct Requests {
    state: Mutex<(u64, u64)>,
    cv: Condvar,
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

/// The child's compaction thread: a full compaction for each request of the writer, announced
/// before and after.
fn compact_loop(db: &Db, requests: &Requests) -> Result<()> {
    loop {
        {
            let mut g = requests.state.lock().unwrap_or_else(|e| e.into_inner());
            while g.1 == g.0 {
                g = requests.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        }
        say(format_args!("compact"))?;
        db.compact()?;
        let s = db.stats();
        say(format_args!("compacted {}", s.compactions + s.trivial_moves))?;
        requests.state.lock().unwrap_or_else(|e| e.into_inner()).1 += 1;
        requests.cv.notify_all();
    }
}

/// The child: write until killed, acknowledging each write on stdout, while a second thread
/// compacts.
pub fn child(args: &ChildArgs) -> Result<()> {
    say(format_args!("start"))?;
    let db = Db::open(&args.dir, options())?;
    say(format_args!("open"))?;
    let requests = Requests::default();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let e = match compact_loop(&db, &requests) {
                Err(e) => e,
                Ok(()) => unreachable!("the compaction loop ends only by an error"),
            };
            // An error ends the child; the parent reports it (a child must not exit by itself).
            eprintln!("crashtest child: compaction failed: {e}");
            std::process::exit(3);
        });
        write_loop(&db, args, &requests)
    })
}

fn write_loop(db: &Db, args: &ChildArgs, requests: &Requests) -> Result<()> {
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
        if (i + 1) % COMPACT_EVERY == 0 {
            // One request at a time: wait for the previous compaction, then ask for the next.
            let mut g = requests.state.lock().unwrap_or_else(|e| e.into_inner());
            while g.1 < g.0 {
                g = requests.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            g.0 += 1;
            requests.cv.notify_all();
        }
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
    /// Kills aimed at recovery (right after `start`), at a compaction (right after a
    /// `compact`), and at the first open of a new directory (creations).
    aimed_recovery: u64,
    aimed_compaction: u64,
    creations: u64,
    /// Kills before the child printed `start` (process start-up), between `start` and `open`
    /// (recovery), and inside a `compact` .. `compacted` pair.
    before_start: u64,
    in_recovery: u64,
    in_compaction: u64,
    /// Compactions the children completed (`compacted` lines).
    compactions: u64,
}

/// Where a cycle's kill is aimed: right after the child prints `start`, its `n`-th `compact`
/// (from 1), or `ack <n>`.
#[derive(Clone, Copy, Debug)]
enum KillAt {
    Start,
    Compact(u64),
    Ack(u64),
}

impl KillAt {
    fn matches(self, word: &str, arg: Option<u64>, compacts: u64) -> bool {
        match self {
            KillAt::Start => word == "start",
            KillAt::Compact(n) => word == "compact" && compacts == n,
            KillAt::Ack(n) => word == "ack" && arg == Some(n),
        }
    }
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
    /// `compact` lines.
    compacts: u64,
    /// `compacted` lines.
    compacted: u64,
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
    // Creation cycles make their databases here, never beside the user's directory.
    let scratch = tempfile::tempdir().map_err(|e| siftdb::Error::io("creating a temp dir", e))?;
    let exe = std::env::current_exe().map_err(|e| siftdb::Error::io("finding this binary", e))?;
    let mut rng = SplitMix64::new(args.seed);
    let mut state = {
        let db = Db::open(&dir, options())?;
        read_state(&db)?
    };
    let mut t = Tally::default();
    let start = Instant::now();
    for cycle in 0..args.cycles {
        let creation = cycle % CREATE_EVERY == CREATE_EVERY / 2;
        let kill_at = match rng.below(8) {
            _ if creation => KillAt::Start,
            0 => KillAt::Start,
            1 | 2 => KillAt::Compact(1 + rng.below(3)),
            _ => KillAt::Ack(rng.below(args.max_acks.max(1))),
        };
        let target =
            if creation { scratch.path().join(format!("db-{cycle}")) } else { dir.clone() };
        let report = run_child(&exe, &target, args.seed, cycle, kill_at)?;
        t.cycles += 1;
        t.creations += u64::from(creation);
        t.aimed_recovery += u64::from(!creation && matches!(kill_at, KillAt::Start));
        t.aimed_compaction += u64::from(matches!(kill_at, KillAt::Compact(_)));
        t.acked += report.last_ack.map_or(0, |a| a + 1);
        t.before_start += u64::from(!report.started);
        t.in_recovery += u64::from(report.started && !report.opened);
        t.in_compaction += u64::from(report.compacting);
        t.compactions += report.compacted;
        let base = if creation { State::new() } else { state.clone() };
        let Some(got) = check_cycle(&target, &base, args.seed, cycle, &report, &mut t) else {
            break;
        };
        if creation {
            // The new database takes writes, keeps them, and goes.
            let after = Db::open(&target, options()).and_then(|db| {
                let mut b = WriteBatch::new();
                b.put("after-creation", "kept");
                db.write_opt(b, WriteOptions { sync: true })?;
                db.close()?;
                let db = Db::open(&target, options())?;
                let v = db.get("after-creation")?;
                db.close()?;
                Ok(v)
            });
            if !matches!(&after, Ok(Some(v)) if v == b"kept") {
                eprintln!("crashtest: cycle {cycle}: the created database lost a write: {after:?}");
                t.failed_opens += 1;
                break;
            }
            Db::destroy(&target)?;
        } else {
            state = got;
        }
    }
    println!(
        "crashtest: cycles {}, acknowledged writes {}, acknowledged writes lost {}, holes {}, \
         failed opens {}, kills aimed at recovery {}, at compaction {}, at creation {}, \
         kills during recovery {}, during compaction {}, before open {}, compactions {} ({:.1} s)",
        t.cycles,
        t.acked,
        t.lost,
        t.holes,
        t.failed_opens,
        t.aimed_recovery,
        t.aimed_compaction,
        t.creations,
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

/// Opens `dir` after cycle `cycle`'s kill and checks it holds `base` plus a prefix of the
/// cycle's writes with every acknowledged one; counts violations in `t`. Returns the state
/// recovered, or `None` when the database could not be opened or read (the loop stops).
fn check_cycle(
    dir: &Path,
    base: &State,
    seed: u64,
    cycle: u64,
    report: &ChildReport,
    t: &mut Tally,
) -> Option<State> {
    let got = Db::open(dir, options()).and_then(|db| read_state(&db));
    let got = match got {
        Ok(s) => s,
        Err(e) => {
            eprintln!("crashtest: cycle {cycle}: open or read of {} failed: {e}", dir.display());
            t.failed_opens += 1;
            return None;
        }
    };
    // Acknowledged count a1 = acks + 1; candidates j = a1 and a1 + 1; below is a loss.
    let acked = report.last_ack.map_or(0, |a| a + 1);
    let mut model = base.clone();
    let mut matched = None;
    for j in 0..=acked + 1 {
        if j > 0 {
            apply(&mut model, seed, write_id(cycle, j - 1));
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
    Some(got)
}

/// Runs one child, kills it (SIGKILL) right after it prints the line `kill_at` names, and
/// returns what it printed.
fn run_child(
    exe: &Path,
    dir: &Path,
    seed: u64,
    cycle: u64,
    kill_at: KillAt,
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
    let mut r = ChildReport::default();
    let mut killed = false;
    if let Some(out) = child.stdout.take() {
        // Lines after the kill (written before it landed) are read too, up to the pipe's end.
        for line in BufReader::new(out).lines() {
            let line = line.map_err(|e| siftdb::Error::io("reading the child's lines", e))?;
            let (word, arg) = line.split_once(' ').unwrap_or((&line, ""));
            let arg = arg.parse::<u64>().ok();
            match (word, arg) {
                ("ack", Some(i)) => r.last_ack = Some(i),
                ("start", _) => r.started = true,
                ("open", _) => r.opened = true,
                ("compact", _) => {
                    r.compacting = true;
                    r.compacts += 1;
                }
                ("compacted", Some(_)) => {
                    r.compacting = false;
                    r.compacted += 1;
                }
                _ => {}
            }
            if !killed && kill_at.matches(word, arg, r.compacts) {
                // SIGKILL on Unix.
                let _ = child.kill();
                killed = true;
            }
        }
    }
    let _ = child.kill();
    let status = child.wait().map_err(|e| siftdb::Error::io("waiting for the child", e))?;
    if !killed || status.success() || status.code().is_some() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        return Err(siftdb::Error::invalid(format!(
            "crashtest child exited by itself ({status}) before its kill point {kill_at:?}: {}",
            err.trim()
        )));
    }
    Ok(r)
}
