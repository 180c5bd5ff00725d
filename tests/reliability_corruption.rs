//! Damaged files (issue 7): 2,000 random byte flips and 200 truncations across the SST, WAL and
//! manifest files of a real database. Every open and every read (a point lookup of every model
//! key and a full scan) must return correct data or a corruption error: never a panic (in any
//! thread: a panic hook counts them), never a hang (a watchdog aborts), never a wrong value.
//!
//! The database is built once on the real file system (several L0 tables, a WAL holding
//! unflushed writes, a manifest); each trial loads a copy of its files into a `MemStorage`,
//! damages one file and opens the copy (the decoders are the same; the copy costs no fsyncs).
//! A separate, smaller set of trials damages copies on the real file system.
//!
//! Damage in the WAL may read as a torn tail: the recovery then drops the damaged record and
//! everything after it, and the state must be a prefix of the history. A truncated WAL is
//! indistinguishable from one whose unsynced tail a crash lost, so a truncation may drop several
//! records; so could a flip that makes a record's length run past the end of the file (the
//! torn-tail rule cannot tell it from an interrupted append). The test counts and prints both.
//! The pristine build runs a background flush thread, so its file layout (and so the exact
//! counts) can differ between runs; the checks do not depend on it.

mod reliability_support;

use reliability_support::*;
use siftdb::filter::rng::SplitMix64;
use siftdb::storage::{FsStorage, MemStorage, Storage};
use siftdb::{Db, Error, Options};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SHAPE: Shape = Shape {
    ops: 300,
    keys: 64,
    pad: 40,
    sync_percent: 20,
    flush_percent: 5,
    reopen_percent: 2,
    compact_percent: 0,
};
const FLIPS: usize = 2000;
const TRUNCATIONS: usize = 200;
const FS_TRIALS: usize = 60;

static PANICS: AtomicU64 = AtomicU64::new(0);
static PROGRESS: AtomicU64 = AtomicU64::new(0);

fn options() -> Options {
    Options {
        memtable_size: 4096,
        block_size: 512,
        block_cache_bytes: 1 << 16,
        // Compactions only where the script says (Step::Compact): a background compaction racing
        // the file listing could merge every table into one and change what gets damaged.
        compaction: siftdb::options::CompactionOptions { auto: false, ..Default::default() },
        ..Options::default()
    }
}

/// The pristine database: its files (name, bytes) and its write history.
struct Pristine {
    files: Vec<(String, Vec<u8>)>,
    ops: Vec<Op>,
}

fn build(dir: &Path) -> Pristine {
    let mut steps = script(0xC0EE, SHAPE);
    // Writes after the last flush stay in the WAL.
    steps.push(Step::Flush);
    let tail = script(0x7A11, Shape { ops: 20, flush_percent: 0, reopen_percent: 0, ..SHAPE });
    steps.extend(tail.into_iter().map(|s| match s {
        Step::Write(mut op) => {
            // Renumber the tail's values so they name their place in the whole history.
            let i = SHAPE.ops;
            for (k, v) in op.records.iter_mut() {
                if v.is_some() {
                    *v = Some(value(i, k, SHAPE.pad));
                }
            }
            Step::Write(op)
        }
        s => s,
    }));
    // Every op is distinct in the history (the tail reuses one number, which keeps batches
    // distinguishable enough for the prefix check: it compares whole states).
    let out = run(dir, &options(), &steps);
    assert!(!out.failed);
    let fs = FsStorage::new();
    let mut files = Vec::new();
    for name in fs.list(dir).unwrap() {
        if name != "LOCK" {
            files.push((name.clone(), fs.read_all(&dir.join(&name)).unwrap()));
        }
    }
    Pristine { files, ops: ops(&steps) }
}

fn damageable(name: &str) -> bool {
    name.ends_with(".sst") || name.ends_with(".log") || name.starts_with("MANIFEST-")
}

/// What one trial does to one file.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// XOR the byte at `at` with `mask` (non-zero).
    Flip { at: usize, mask: u8 },
    /// Cut the file to `len` bytes.
    Truncate { len: usize },
}

fn damaged(bytes: &[u8], d: Damage) -> Vec<u8> {
    let mut b = bytes.to_vec();
    match d {
        Damage::Flip { at, mask } => b[at] ^= mask,
        Damage::Truncate { len } => b.truncate(len),
    }
    b
}

/// Opens and reads the damaged copy; `Err` describes a violation.
fn check(dir: &Path, opts: Options, p: &Pristine, wal_damaged: bool) -> Result<usize, String> {
    let db = match Db::open(dir, opts) {
        Ok(db) => db,
        Err(e) if e.is_corruption() => return Ok(usize::MAX),
        Err(e) => return Err(format!("open failed with a non-corruption error: {e}")),
    };
    let ok_or_corrupt = |r: Result<Option<Vec<u8>>, Error>| match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_corruption() => Ok(None),
        Err(e) => Err(format!("read failed with a non-corruption error: {e}")),
    };
    let mut scanned = State::new();
    let mut scan_ok = true;
    match db.scan() {
        Ok(it) => {
            for item in it {
                match item {
                    Ok((k, v)) => {
                        scanned.insert(k, v);
                    }
                    Err(e) if e.is_corruption() => {
                        scan_ok = false;
                        break;
                    }
                    Err(e) => return Err(format!("scan failed with a non-corruption error: {e}")),
                }
            }
        }
        Err(e) if e.is_corruption() => scan_ok = false,
        Err(e) => return Err(format!("scan failed with a non-corruption error: {e}")),
    }
    let mut gets = Vec::new();
    for k in (0..SHAPE.keys).map(key) {
        if let Some(v) = ok_or_corrupt(db.get(&k))? {
            gets.push((k, v));
        }
    }
    // The state must be the whole history, or (WAL damage) a prefix of it.
    let n = p.ops.len();
    let lo = if wal_damaged { 0 } else { n };
    let mut model = State::new();
    for op in &p.ops[..lo] {
        apply(&mut model, op);
    }
    for j in lo..=n {
        if j > lo {
            apply(&mut model, &p.ops[j - 1]);
        }
        let scan_matches = !scan_ok || scanned == model;
        if scan_matches && gets.iter().all(|(k, v)| v.as_ref() == model.get(k)) {
            return Ok(n - j);
        }
    }
    Err(format!("reads match no prefix of the history (scan complete: {scan_ok})"))
}

/// One trial on an in-memory copy: `Ok(records lost)` or a violation.
fn mem_trial(p: &Pristine, target: usize, d: Damage) -> Result<usize, String> {
    let dir = PathBuf::from("/db");
    let storage = MemStorage::new();
    storage.create_dir_all(&dir).unwrap();
    for (i, (name, bytes)) in p.files.iter().enumerate() {
        let bytes = if i == target { damaged(bytes, d) } else { bytes.clone() };
        let mut f = storage.create(&dir.join(name)).unwrap();
        f.append(&bytes).unwrap();
        f.sync().unwrap();
    }
    storage.sync_dir(&dir).unwrap();
    let opts = Options { storage: Some(Arc::new(storage)), ..options() };
    let wal = p.files[target].0.ends_with(".log");
    catch_unwind(AssertUnwindSafe(|| check(&dir, opts, p, wal)))
        .unwrap_or_else(|_| Err("panicked".into()))
}

fn fs_trial(p: &Pristine, target: usize, d: Damage) -> Result<usize, String> {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (name, bytes)) in p.files.iter().enumerate() {
        let bytes = if i == target { damaged(bytes, d) } else { bytes.clone() };
        std::fs::write(tmp.path().join(name), bytes).unwrap();
    }
    let wal = p.files[target].0.ends_with(".log");
    catch_unwind(AssertUnwindSafe(|| check(tmp.path(), options(), p, wal)))
        .unwrap_or_else(|_| Err("panicked".into()))
}

fn watchdog() {
    std::thread::spawn(|| {
        let mut last = u64::MAX;
        loop {
            std::thread::sleep(Duration::from_secs(30));
            let now = PROGRESS.load(Ordering::SeqCst);
            if now == last {
                eprintln!("corruption test: no progress for 30 s at trial {now}: a hang");
                std::process::abort();
            }
            last = now;
        }
    });
}

#[test]
fn damaged_files_give_correct_data_or_a_corruption_error() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        prev(info);
    }));
    watchdog();
    let tmp = tempfile::tempdir().unwrap();
    let p = build(tmp.path());
    let targets: Vec<usize> = (0..p.files.len()).filter(|&i| damageable(&p.files[i].0)).collect();
    let kinds = |ext: &str| p.files.iter().filter(|(n, _)| n.contains(ext)).count();
    assert!(
        kinds(".sst") >= 2 && kinds(".log") >= 1 && kinds("MANIFEST") == 1,
        "{:?}",
        p.files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );

    let mut rng = SplitMix64::new(0xBAD_B17E);
    let mut failures = Vec::new();
    let (mut refused, mut multi_record_drops, mut torn) = (0, 0, 0);
    for t in 0..FLIPS + TRUNCATIONS + FS_TRIALS {
        let target = targets[rng.below(targets.len() as u64) as usize];
        let len = p.files[target].1.len();
        let d = if t < FLIPS || t >= FLIPS + TRUNCATIONS && t % 2 == 0 {
            Damage::Flip { at: rng.below(len as u64) as usize, mask: 1 + rng.below(255) as u8 }
        } else {
            Damage::Truncate { len: rng.below(len as u64) as usize }
        };
        let result = if t < FLIPS + TRUNCATIONS {
            mem_trial(&p, target, d)
        } else {
            fs_trial(&p, target, d)
        };
        match result {
            Ok(usize::MAX) => refused += 1,
            Ok(0) => {}
            Ok(1) => torn += 1,
            Ok(lost) => {
                multi_record_drops += 1;
                eprintln!("corruption: {d:?} of {} dropped {lost} records", p.files[target].0);
            }
            Err(e) => failures.push(format!("trial {t}: {:?} of {}: {e}", d, p.files[target].0)),
        }
        PROGRESS.fetch_add(1, Ordering::SeqCst);
    }
    let panics = PANICS.load(Ordering::SeqCst);
    eprintln!(
        "corruption: {FLIPS} flips + {TRUNCATIONS} truncations in memory, {FS_TRIALS} on disk; \
         open refused {refused}, last record dropped {torn}, several records dropped \
         {multi_record_drops}, violations {}, panics {panics}",
        failures.len()
    );
    assert_eq!(panics, 0, "a thread panicked");
    assert!(
        failures.is_empty(),
        "{} violations, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}
