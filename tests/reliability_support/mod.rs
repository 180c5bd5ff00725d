//! Shared pieces of the reliability tests: a write history whose every prefix is a checkable
//! database state, a workload runner over any storage, and the prefix check.
//!
//! Scheme. Operation `i` of a history is a batch (one or more records) over a small key space;
//! every value it writes names `i` (`v<i>:<key>`), so the state after the first `j` operations
//! is computable for every `j`. A recovered database is correct when its contents equal the
//! state after some `j` with `floor <= j <= attempted`, where `floor` counts the operations the
//! engine promised to keep (acknowledged with `sync = true`, or followed by an acknowledged
//! flush) and `attempted` the operations it was ever given. Equality with a prefix state is the
//! "no hole" rule: nothing newer survives while something older is lost, and a batch is all or
//! nothing (a partly applied batch equals no prefix state, as its records share `i`).

#![allow(dead_code)]

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::path::Path;

/// A database state: key -> value.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// One write: a batch of records (a `None` value is a delete), synced or buffered.
#[derive(Debug, Clone)]
pub struct Op {
    pub records: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub sync: bool,
}

/// One step of a workload.
#[derive(Debug, Clone)]
pub enum Step {
    Write(Op),
    /// `Db::flush`: on success every earlier write is durable.
    Flush,
    /// Close the database (drop) and open it again.
    Reopen,
    /// Kill the process (`run_with`'s `kill`: its unsynced writes stay with the "OS" only),
    /// then open again. Plain `run` treats it as `Reopen`.
    Kill,
    /// `Db::compact` (`upto: None`) or `Db::compact_range(..=upto)`: a flush (so on success
    /// every earlier write is durable), then compactions.
    Compact {
        upto: Option<Vec<u8>>,
    },
}

/// The key names: `k000`..; a small space so keys are overwritten and deleted often.
pub fn key(k: u64) -> Vec<u8> {
    format!("k{k:03}").into_bytes()
}

/// Value written by operation `i` to `key`, padded to `pad` bytes so memtables fill.
pub fn value(i: usize, key: &[u8], pad: usize) -> Vec<u8> {
    let mut v = format!("v{i}:{}", String::from_utf8_lossy(key)).into_bytes();
    v.resize(v.len().max(pad), b'.');
    v
}

/// Parameters of a random workload.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub ops: usize,
    pub keys: u64,
    pub pad: usize,
    /// Probability (percent) that a write is synced.
    pub sync_percent: u64,
    /// Probability (percent) that a step after a write is a flush / a reopen.
    pub flush_percent: u64,
    pub reopen_percent: u64,
    /// Probability (percent) that a step after a write is a compaction (`Step::Compact`).
    pub compact_percent: u64,
}

/// A random workload of `shape.ops` writes with flushes and reopens between them (and a reopen
/// after a third and after two thirds of the writes).
pub fn script(seed: u64, shape: Shape) -> Vec<Step> {
    let mut rng = SplitMix64::new(seed);
    let mut steps = Vec::new();
    for i in 0..shape.ops {
        let n = 1 + rng.below(4) as usize;
        let mut records = Vec::with_capacity(n);
        for _ in 0..n {
            let k = key(rng.below(shape.keys));
            let v = (rng.below(5) != 0).then(|| value(i, &k, shape.pad));
            records.push((k, v));
        }
        steps.push(Step::Write(Op { records, sync: rng.below(100) < shape.sync_percent }));
        let roll = rng.below(100);
        // Every workload reopens at least twice, so recovery itself is interrupted too.
        if i == shape.ops / 3 {
            steps.push(Step::Reopen);
        } else if i == 2 * shape.ops / 3 {
            steps.push(Step::Kill);
        } else if roll < shape.flush_percent {
            steps.push(Step::Flush);
        } else if roll < shape.flush_percent + shape.reopen_percent {
            steps.push(Step::Reopen);
        } else if roll < shape.flush_percent + shape.reopen_percent + shape.compact_percent {
            // Half of them compact only the keys up to the middle of the key space.
            let upto = (rng.below(2) == 0).then(|| key(shape.keys / 2));
            steps.push(Step::Compact { upto });
        }
    }
    steps
}

/// The writes of a script, in order.
pub fn ops(steps: &[Step]) -> Vec<Op> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Write(op) => Some(op.clone()),
            _ => None,
        })
        .collect()
}

/// Applies one operation to a model state.
pub fn apply(state: &mut State, op: &Op) {
    for (k, v) in &op.records {
        match v {
            Some(v) => state.insert(k.clone(), v.clone()),
            None => state.remove(k),
        };
    }
}

/// The batch of an operation.
pub fn batch(op: &Op) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in &op.records {
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        };
    }
    b
}

/// What a (possibly interrupted) workload run achieved.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    /// Operations handed to the engine (the last may have failed).
    pub attempted: usize,
    /// Operations the engine promised to keep (synced acknowledgement or a later flush).
    pub floor: usize,
    /// Whether the run stopped at an error.
    pub failed: bool,
    /// Compactions (rewriting or trivial moves) the engine completed, over every open.
    pub compactions: u64,
}

/// Compactions and trivial moves `db` completed since it was opened.
pub fn compactions(db: &Db) -> u64 {
    let s = db.stats();
    s.compactions + s.trivial_moves
}

/// Runs one `Step::Compact`.
pub fn compact(db: &Db, upto: &Option<Vec<u8>>) -> siftdb::Result<()> {
    match upto {
        None => db.compact(),
        Some(k) => db.compact_range(..=k.as_slice()),
    }
}

/// Runs `steps` against a database in `dir`, stopping at the first error (the error of an
/// injected fault or a simulated crash). The database is closed before returning.
pub fn run(dir: &Path, opts: &Options, steps: &[Step]) -> Outcome {
    run_with(dir, opts, steps, &|| {})
}

/// `run`, with `kill` simulating a killed process at `Step::Kill` (before the database is
/// dropped, so its closing WAL sync cannot happen).
pub fn run_with(dir: &Path, opts: &Options, steps: &[Step], kill: &dyn Fn()) -> Outcome {
    let mut out = Outcome::default();
    let Ok(mut db) = Db::open(dir, opts.clone()) else {
        out.failed = true;
        return out;
    };
    for step in steps {
        match step {
            Step::Write(op) => {
                out.attempted += 1;
                if db.write_opt(batch(op), WriteOptions { sync: op.sync }).is_err() {
                    out.failed = true;
                    out.compactions += compactions(&db);
                    return out;
                }
                if op.sync {
                    out.floor = out.attempted;
                }
            }
            Step::Flush | Step::Compact { .. } => {
                let r = match step {
                    Step::Compact { upto } => compact(&db, upto),
                    _ => db.flush(),
                };
                if r.is_err() {
                    out.failed = true;
                    out.compactions += compactions(&db);
                    return out;
                }
                out.floor = out.attempted;
            }
            Step::Reopen | Step::Kill => {
                if matches!(step, Step::Kill) {
                    kill();
                }
                out.compactions += compactions(&db);
                drop(db);
                match Db::open(dir, opts.clone()) {
                    Ok(d) => db = d,
                    Err(_) => {
                        out.failed = true;
                        return out;
                    }
                }
            }
        }
    }
    out.compactions += compactions(&db);
    out
}

/// Reads the whole database twice: a full scan, and a point lookup of every key in
/// `0..keys` (plus every scanned key); the two must agree.
pub fn read_all(db: &Db, keys: u64) -> Result<State, String> {
    let mut scanned = State::new();
    for item in db.scan().map_err(|e| format!("scan: {e}"))? {
        let (k, v) = item.map_err(|e| format!("scan: {e}"))?;
        if scanned.insert(k.clone(), v).is_some() {
            return Err(format!("scan returned {:?} twice", String::from_utf8_lossy(&k)));
        }
    }
    for k in (0..keys).map(key).chain(scanned.keys().cloned().collect::<Vec<_>>()) {
        let got = db.get(&k).map_err(|e| format!("get: {e}"))?;
        if got.as_ref() != scanned.get(&k) {
            return Err(format!(
                "get({}) = {:?} but the scan says {:?}",
                String::from_utf8_lossy(&k),
                got.map(|v| String::from_utf8_lossy(&v).into_owned()),
                scanned.get(&k).map(|v| String::from_utf8_lossy(v).into_owned())
            ));
        }
    }
    Ok(scanned)
}

/// Finds `j` in `floor..=attempted` with `state(ops[..j]) == got`; the error describes the
/// mismatch (lost acknowledged write or hole).
pub fn check_prefix(
    ops: &[Op],
    floor: usize,
    attempted: usize,
    got: &State,
) -> Result<usize, String> {
    let mut model = State::new();
    for op in &ops[..floor] {
        apply(&mut model, op);
    }
    for j in floor..=attempted.min(ops.len()) {
        if j > floor {
            apply(&mut model, &ops[j - 1]);
        }
        if &model == got {
            return Ok(j);
        }
    }
    // Name the newest operation the recovered state shows, to tell a loss from a hole.
    let newest = got
        .values()
        .filter_map(|v| {
            let s = std::str::from_utf8(v).ok()?;
            s.strip_prefix('v')?.split(':').next()?.parse::<usize>().ok()
        })
        .max();
    Err(format!(
        "recovered state ({} keys, newest value from op {newest:?}) equals no prefix of the \
         history between {floor} (acknowledged) and {attempted} (attempted) operations",
        got.len()
    ))
}
