//! I/O errors (issue 7): for every N, the Nth storage operation of a workload (writes, flushes,
//! reopens and explicit compactions) fails, once (transient) or from then on (persistent). Checked for every trial:
//! * no panic, in any thread (a panic hook counts them);
//! * a failed fsync (of a WAL, table, manifest, CURRENT or directory) turns the database
//!   read-only: the next write returns `Error::ReadOnly` naming the failure, and the failed sync
//!   is never retried (the in-memory storage poisons a file whose sync failed: a later sync
//!   "succeeds" without making anything durable, so a retry would lose acknowledged writes below);
//! * after the faults are cleared, a reopen finds every acknowledged write, and the state is a
//!   prefix of the history; if no error ever reached the caller, it finds every write;
//! * after a further power loss (unsynced data dropped), a reopen still finds every write
//!   acknowledged with `sync = true` and a prefix of the history.

mod reliability_support;

use reliability_support::*;
use siftdb::storage::{MemStorage, Storage};
use siftdb::{Db, Error, Options, WriteBatch, WriteOptions};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SHAPE: Shape = Shape {
    ops: 60,
    keys: 16,
    pad: 40,
    sync_percent: 40,
    flush_percent: 8,
    reopen_percent: 3,
    compact_percent: 10,
};
const SEED: u64 = 0x10_E220;

static PANICS: AtomicU64 = AtomicU64::new(0);
/// Trials whose failed sync was probed for the read-only state / whose caller saw an error.
static SYNC_PROBES: AtomicU64 = AtomicU64::new(0);
static REPORTED: AtomicU64 = AtomicU64::new(0);

fn options(storage: &MemStorage) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        memtable_size: 1024,
        block_size: 256,
        ..Options::default()
    }
}

/// Runs the workload, keeping the database open after the first error to probe it.
/// Returns the outcome and a violation, if any.
fn run_and_probe(dir: &Path, storage: &MemStorage, steps: &[Step]) -> (Outcome, Option<String>) {
    let mut out = Outcome::default();
    let opts = options(storage);
    let Ok(mut db) = Db::open(dir, opts.clone()) else {
        out.failed = true;
        return (out, None);
    };
    let mut first_error: Option<Error> = None;
    for step in steps {
        let r = match step {
            Step::Write(op) => {
                out.attempted += 1;
                let r = db.write_opt(batch(op), WriteOptions { sync: op.sync });
                if r.is_ok() && op.sync {
                    out.floor = out.attempted;
                }
                r
            }
            Step::Flush | Step::Compact { .. } => {
                let r = match step {
                    Step::Compact { upto } => compact(&db, upto),
                    _ => db.flush(),
                };
                if r.is_ok() {
                    out.floor = out.attempted;
                }
                r
            }
            // A kill would disarm the fault under test: reopen instead.
            Step::Reopen | Step::Kill => {
                drop(db);
                match Db::open(dir, opts.clone()) {
                    Ok(d) => {
                        db = d;
                        Ok(())
                    }
                    Err(_) => {
                        out.failed = true;
                        return (out, None);
                    }
                }
            }
        };
        if let Err(e) = r {
            first_error = Some(e);
            break;
        }
    }
    let Some(e) = first_error else { return (out, None) };
    out.failed = true;
    // A failed sync anywhere (reported directly, or through the read-only state it caused)
    // must leave the database refusing writes, naming the failure.
    let text = e.to_string();
    let sync_failed = text.contains("syncing") || matches!(e, Error::ReadOnly(_));
    REPORTED.fetch_add(1, Ordering::Relaxed);
    if sync_failed {
        SYNC_PROBES.fetch_add(1, Ordering::Relaxed);
        let mut b = WriteBatch::new();
        b.put("probe", "x");
        match db.write_opt(b, WriteOptions { sync: true }) {
            Err(Error::ReadOnly(why)) if why.contains("injected fault") => {}
            other => {
                return (out, Some(format!("after `{text}` a write returned {other:?}")));
            }
        }
    }
    (out, None)
}

fn trial(steps: &[Step], ops: &[Op], n: u64, persistent: bool) -> Result<(), String> {
    let dir = Path::new("/db");
    let storage = MemStorage::new();
    storage.fail_after(n, persistent);
    let (out, violation) = run_and_probe(dir, &storage, steps);
    if let Some(v) = violation {
        return Err(v);
    }
    storage.clear_faults();
    // Clean restart: nothing is lost that was acknowledged; all of it if no error was seen.
    let floor = if out.failed { out.floor } else { out.attempted };
    let db = Db::open(dir, options(&storage)).map_err(|e| format!("reopen failed: {e}"))?;
    let got = read_all(&db, SHAPE.keys)?;
    check_prefix(ops, floor, out.attempted, &got).map_err(|e| format!("after restart: {e}"))?;
    drop(db);
    // Power loss on top: synced acknowledgements still hold.
    storage.crash_drop_unsynced();
    let db = Db::open(dir, options(&storage)).map_err(|e| format!("open after crash: {e}"))?;
    let got = read_all(&db, SHAPE.keys)?;
    check_prefix(ops, out.floor, out.attempted, &got).map_err(|e| format!("after crash: {e}"))?;
    Ok(())
}

#[test]
fn failing_any_storage_operation_is_reported_and_loses_nothing_acknowledged() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        prev(info);
    }));
    let steps = script(SEED, SHAPE);
    let ops = ops(&steps);
    let total = {
        let s = MemStorage::new();
        let out = run(Path::new("/db"), &options(&s), &steps);
        assert!(!out.failed);
        s.op_count()
    };
    // Compaction steps in the script: the sweep fails operations inside compactions too. The
    // explicit steps are counted, not the compactions the stats saw: background ones depend on
    // timing (a close stops a running one), and a premise must not depend on the machine.
    let compactions = steps.iter().filter(|s| matches!(s, Step::Compact { .. })).count();
    assert!(compactions >= 2, "only {compactions} compaction steps");
    let mut trials = 0;
    let mut failures = Vec::new();
    for n in 0..=total {
        for persistent in [false, true] {
            trials += 1;
            let r = std::panic::catch_unwind(|| trial(&steps, &ops, n, persistent))
                .unwrap_or_else(|_| Err("panicked".into()));
            if let Err(e) = r {
                failures.push(format!("op {n} persistent {persistent}: {e}"));
            }
        }
    }
    let panics = PANICS.load(Ordering::SeqCst);
    let (probes, reported) = (SYNC_PROBES.load(Ordering::SeqCst), REPORTED.load(Ordering::SeqCst));
    eprintln!(
        "io errors: {total} operations ({compactions} compactions), {trials} trials, error reported to the caller in \
         {reported}, read-only after a failed sync checked {probes}, {} failures, {panics} panics",
        failures.len()
    );
    assert!(probes > 50, "the read-only rule was exercised {probes} times only");
    assert_eq!(panics, 0);
    assert!(
        failures.is_empty(),
        "{} failures, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

/// The previous process's closing WAL sync failed (its error has nowhere to go): the WAL is
/// poisoned, so a later fsync of it succeeds without making anything durable. The next open
/// must not count on that file: its records reach a fresh, synced table before a new synced
/// write is acknowledged, so a power loss cannot keep the new write and lose the older ones
/// (a hole). Found by the sweep above; this pins it down deterministically.
#[test]
fn a_failed_sync_at_close_is_not_trusted_by_the_next_open() {
    let dir = Path::new("/db");
    let storage = MemStorage::new();
    let ops: Vec<Op> = (0..3)
        .map(|i| Op { records: vec![(key(i), Some(value(i as usize, &key(i), 8)))], sync: i == 2 })
        .collect();
    let db = Db::open(dir, options(&storage)).unwrap();
    for op in &ops[..2] {
        db.write_opt(batch(op), WriteOptions { sync: false }).unwrap();
    }
    let wal = storage
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".log"))
        .map(|n| dir.join(n))
        .expect("a WAL");
    // The background threads are idle (nothing to flush or compact), so the next storage
    // operation is the closing WAL sync.
    storage.fail_after(0, false);
    drop(db);
    let (synced, len) = storage.file_lengths(&wal).expect("the WAL exists");
    assert!(synced < len, "the closing sync was to fail (WAL {len} bytes, {synced} synced)");
    let db = Db::open(dir, options(&storage)).unwrap();
    db.write_opt(batch(&ops[2]), WriteOptions { sync: true }).unwrap();
    drop(db);
    storage.crash_drop_unsynced();
    let db = Db::open(dir, options(&storage)).unwrap();
    let got = read_all(&db, 3).unwrap();
    check_prefix(&ops, 3, 3, &got).unwrap();
}
