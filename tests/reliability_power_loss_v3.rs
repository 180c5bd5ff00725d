//! Simulated power loss at every storage operation of a workload of cross-keyspace batches,
//! range tombstones, merges and checkpoints (the `reliability_power_loss.rs` scheme over the
//! two-keyspace model of `model_support`).
//!
//! Trial `i` arms `MemStorage::fail_after(i, persistent)`: operation `i` and every later one
//! fail without effect, freezing the on-"disk" state there. The file system then crashes in two
//! of four ways (alternating with `i`) (drop unsynced bytes and directory entries; keep a random prefix of unsynced
//! appends; lose only unsynced directory entries; a random prefix and a random subset of
//! directory changes), the database is reopened, and both keyspaces are read in full (scan, and
//! a get of every key) and checked against the write history: the state is the one after some
//! prefix of the writes, at least as long as the last one acknowledged with `sync = true` (or
//! followed by an acknowledged flush, compaction or checkpoint). As every write is one batch
//! and a partly applied batch equals no prefix state (records of one write name it, merges of
//! one write move several counters), this is "every acknowledged synced write is present and
//! every batch is all or nothing, in every keyspace".
//!
//! Every checkpoint that returned `Ok` before the fault must survive the power loss of the
//! storage it shares with the source (it syncs its own files) and open to the state at its call.

mod model_support;

use model_support::*;
use siftdb::filter::rng::SplitMix64;
use siftdb::storage::mem::{DataFate, DirFate};
use siftdb::storage::MemStorage;
use siftdb::{CompactionOptions, Options, U64AddOperator, WriteOptions};
use std::path::Path;
use std::sync::Arc;

/// One step of the workload.
#[derive(Debug, Clone)]
enum Step {
    /// A write: one batch, synced or buffered.
    Write(Records, bool),
    Flush,
    /// `Db::compact`: a flush, then compactions down to the last level.
    Compact,
    /// `Db::checkpoint` into `/cp<n>`, `n` counting checkpoints.
    Checkpoint,
    Reopen,
    /// A killed process (unsynced writes stay with the "OS"), then an open.
    Kill,
}

/// A seeded script of `writes` writes with flushes, compactions, checkpoints, reopens and a
/// kill between them, and the model state after each write (`states[j]`: after `j` writes).
fn script(seed: u64, writes: usize) -> (Vec<Step>, Vec<State>) {
    let mut rng = SplitMix64::new(seed);
    let (mut steps, mut states) = (Vec::new(), vec![State::default()]);
    for n in 1..=writes {
        let specs = random_specs(&mut rng, 40);
        let state = states.last().unwrap();
        let recs = records(state, &specs, n);
        let mut next = state.clone();
        apply(&mut next, &recs);
        states.push(next);
        steps.push(Step::Write(recs, rng.below(100) < 35));
        if n == writes / 3 {
            steps.push(Step::Reopen);
        } else if n == 2 * writes / 3 {
            steps.push(Step::Kill);
        } else if n == writes / 2 || n == 5 * writes / 6 {
            steps.push(Step::Checkpoint); // at least two, whatever the seed
        } else {
            match rng.below(100) {
                0..=4 => steps.push(Step::Flush),
                5..=7 => steps.push(Step::Checkpoint),
                8..=9 => steps.push(Step::Compact),
                10..=11 => steps.push(Step::Reopen),
                _ => {}
            }
        }
    }
    (steps, states)
}

fn options(storage: &MemStorage) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        memtable_size: 1536,
        block_size: 256,
        merge_operator: Some(Arc::new(U64AddOperator)),
        compaction: CompactionOptions { target_file_size: 1024, ..CompactionOptions::default() },
        ..Options::default()
    }
}

/// What a (possibly interrupted) run achieved.
#[derive(Debug, Default)]
struct Outcome {
    /// Writes handed to the engine (the last may have failed).
    attempted: usize,
    /// Writes the engine promised to keep.
    floor: usize,
    failed: bool,
    /// Checkpoints that returned `Ok`: (directory, writes acknowledged at the call).
    checkpoints: Vec<(String, usize)>,
    /// Checkpoint calls made (the last may have failed).
    checkpoint_calls: usize,
}

/// Runs `steps` on the database in `dir`, stopping at the first error.
fn run(dir: &Path, storage: &MemStorage, steps: &[Step]) -> Outcome {
    let mut out = Outcome::default();
    let Ok(mut h) = Handles::try_open(dir, options(storage)) else {
        out.failed = true;
        return out;
    };
    for step in steps {
        let ok = match step {
            Step::Write(recs, sync) => {
                out.attempted += 1;
                let ok = h.db.write_opt(h.batch(recs), WriteOptions { sync: *sync }).is_ok();
                if ok && *sync {
                    out.floor = out.attempted;
                }
                ok
            }
            Step::Flush | Step::Compact => {
                let r = if matches!(step, Step::Flush) { h.db.flush() } else { h.db.compact() };
                if r.is_ok() {
                    out.floor = out.attempted;
                }
                r.is_ok()
            }
            Step::Checkpoint => {
                let cp = format!("/cp{}", out.checkpoint_calls);
                out.checkpoint_calls += 1;
                let ok = h.db.checkpoint(&cp).is_ok();
                if ok {
                    // The checkpoint syncs the source's WAL: every acknowledged write is durable.
                    out.floor = out.attempted;
                    out.checkpoints.push((cp, out.attempted));
                }
                ok
            }
            Step::Reopen | Step::Kill => {
                if matches!(step, Step::Kill) {
                    storage.kill_process();
                }
                drop(h);
                match Handles::try_open(dir, options(storage)) {
                    Ok(x) => h = x,
                    Err(_) => {
                        out.failed = true;
                        return out;
                    }
                }
                true
            }
        };
        if !ok {
            out.failed = true;
            return out;
        }
    }
    out
}

/// Both keyspaces read twice, by a full scan and by a get of every key (the two must agree).
fn read_all(h: &Handles) -> Result<State, String> {
    let got = h.try_scan().map_err(|e| format!("scan: {e}"))?;
    for (ks, m) in got.iter().enumerate() {
        for k in (0..32).map(key) {
            let v = if ks == 0 { h.db.get(&k) } else { h.ks2.get(&k) };
            let v = v.map_err(|e| format!("get: {e}"))?;
            if v.as_ref() != m.get(&k) {
                return Err(format!(
                    "keyspace {ks}: get({}) disagrees with the scan",
                    k.escape_ascii()
                ));
            }
        }
    }
    Ok(got)
}

/// One trial: run until storage operation `fail_at`, crash with `fate`, reopen and check the
/// source and every checkpoint that returned `Ok`.
fn trial(steps: &[Step], states: &[State], fail_at: u64, fate: u32) -> Result<(), String> {
    let dir = Path::new("/db");
    let storage = MemStorage::new();
    storage.fail_after(fail_at, true);
    let out = run(dir, &storage, steps);
    let seed = fail_at.wrapping_mul(0x9E37_79B9);
    match fate {
        0 => storage.crash_drop_unsynced(),
        1 => storage.crash_keep_random_prefix(seed),
        2 => storage.crash_lose_unsynced_dir_entries(),
        _ => storage.crash(DataFate::KeepRandomPrefix(seed), DirFate::RandomSubset(seed ^ 7)),
    }
    let h = Handles::try_open(dir, options(&storage)).map_err(|e| format!("open: {e}"))?;
    let got = read_all(&h)?;
    let top = out.attempted.min(states.len() - 1);
    if !(out.floor..=top).any(|j| states[j] == got) {
        let newest = (0..states.len()).rev().find(|&j| states[j] == got);
        return Err(format!(
            "recovered state is no prefix between {} (acknowledged) and {top} (attempted) \
             writes; it equals the state after {newest:?} writes",
            out.floor
        ));
    }
    drop(h);
    for (cp, at) in &out.checkpoints {
        let h = Handles::try_open(Path::new(cp), options(&storage))
            .map_err(|e| format!("checkpoint {cp} does not open: {e}"))?;
        if read_all(&h)? != states[*at] {
            return Err(format!("checkpoint {cp} differs from the state after {at} writes"));
        }
    }
    Ok(())
}

#[test]
fn power_loss_at_every_operation_keeps_synced_batches_whole_in_both_keyspaces() {
    let (steps, states) = script(0x5EED_0303, 50);
    // The uninterrupted run: how many storage operations to sweep, and a sanity check that
    // the workload exercises what it claims.
    let storage = MemStorage::new();
    let out = run(Path::new("/db"), &storage, &steps);
    assert!(!out.failed, "the workload runs cleanly without faults");
    assert!(out.checkpoints.len() >= 2, "only {} checkpoints", out.checkpoints.len());
    let recs = steps.iter().flat_map(|s| match s {
        Step::Write(r, _) => r.as_slice(),
        _ => &[],
    });
    let (mut merges, mut ranges, mut ks2) = (0, 0, 0);
    for r in recs {
        merges += usize::from(matches!(r.kind, Kind::Merge(_)));
        ranges += usize::from(matches!(r.kind, Kind::DeleteRange(_)));
        ks2 += usize::from(r.ks == 1);
    }
    assert!(merges >= 20 && ranges >= 5 && ks2 >= 20, "{merges} {ranges} {ks2}");
    let total = storage.op_count();
    let mut failures = Vec::new();
    let mut trials = 0;
    // Two fates per operation, alternating (0 and 2 at even operations, 1 and 3 at odd ones),
    // so every fate meets every phase of the workload while the sweep stays a few seconds.
    for i in 0..=total {
        for fate in [(i % 2) as u32, (i % 2) as u32 + 2] {
            trials += 1;
            if let Err(e) = trial(&steps, &states, i, fate) {
                failures.push(format!("op {i} fate {fate}: {e}"));
            }
        }
    }
    eprintln!("power loss v3: {total} storage operations, {trials} trials");
    assert!(
        failures.is_empty(),
        "{} of {trials} trials failed, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}
