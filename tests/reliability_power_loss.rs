//! Simulated power loss at every storage operation of a workload (issue 7).
//!
//! Trial `i` arms `MemStorage::fail_after(i, persistent)`: operation `i` and every later one fail
//! without effect, which freezes the on-"disk" state exactly at that point (the engine sees
//! errors and stops, like a machine losing power mid-call). The file system then crashes in one
//! of three ways (drop unsynced bytes and directory entries; keep a random prefix of unsynced
//! appends; lose only unsynced directory entries), the database is reopened, read in full and
//! checked against the write history: every write acknowledged with `sync = true` (or before an
//! acknowledged flush) is present and the state is a prefix of the history (no hole, batches all
//! or nothing). Small memtables make rotations and background flushes happen on their own, so
//! compactions triggered by flushes are covered by the same sweep once they exist.
//!
//! Sharpness: with any one durability point of the engine disabled (`siftdb::testing::skip`),
//! the same sweep must find a trial that loses data or fails to open.

mod reliability_support;

use reliability_support::*;
use siftdb::storage::mem::{DataFate, DirFate};
use siftdb::storage::MemStorage;
use siftdb::{testing, Db, Options};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The sync-point switch is process-global: tests of this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const SHAPE: Shape =
    Shape { ops: 120, keys: 24, pad: 48, sync_percent: 35, flush_percent: 6, reopen_percent: 4 };
const SEED: u64 = 0x5eed_0007;
/// Crash kinds per trial: drop unsynced; keep a random prefix of unsynced appends; lose unsynced
/// directory entries; keep a random prefix and a random subset of directory changes.
const FATES: u32 = 4;

fn options(storage: &MemStorage) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        memtable_size: 1536,
        block_size: 256,
        block_cache_bytes: 1 << 16,
        ..Options::default()
    }
}

/// One trial: run until operation `fail_at`, crash with `fate`, reopen and check.
fn trial(steps: &[Step], ops: &[Op], fail_at: u64, fate: u32, variant: u64) -> Result<(), String> {
    let dir = Path::new("/db");
    let storage = MemStorage::new();
    storage.fail_after(fail_at, true);
    let out = run_with(dir, &options(&storage), steps, &|| storage.kill_process());
    match fate {
        0 => storage.crash_drop_unsynced(),
        1 => storage.crash_keep_random_prefix(fail_at.wrapping_mul(0x9E37_79B9) ^ SEED),
        2 => storage.crash_lose_unsynced_dir_entries(),
        _ => storage.crash(
            DataFate::KeepRandomPrefix(fail_at ^ SEED ^ variant << 32),
            DirFate::RandomSubset(fail_at.wrapping_mul(31) ^ SEED ^ variant << 40),
        ),
    }
    let db = Db::open(dir, options(&storage)).map_err(|e| format!("open failed: {e}"))?;
    let got = read_all(&db, SHAPE.keys)?;
    check_prefix(ops, out.floor, out.attempted, &got)?;
    drop(db);
    // Recovery must be repeatable: the state a recovery produced survives another crash.
    storage.crash_drop_unsynced();
    let db = Db::open(dir, options(&storage)).map_err(|e| format!("second open failed: {e}"))?;
    let again = read_all(&db, SHAPE.keys)?;
    if again != got {
        return Err("a second recovery changed the state".into());
    }
    Ok(())
}

/// Storage operations the uninterrupted workload performs.
fn workload_ops(steps: &[Step]) -> u64 {
    let storage = MemStorage::new();
    let out = run_with(Path::new("/db"), &options(&storage), steps, &|| storage.kill_process());
    assert!(!out.failed, "the workload runs cleanly without faults");
    storage.op_count()
}

#[test]
fn power_loss_at_every_operation_keeps_acknowledged_writes_and_a_prefix() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    testing::restore_all();
    let steps = script(SEED, SHAPE);
    let ops = ops(&steps);
    let total = workload_ops(&steps);
    let mut trials = 0;
    let mut failures = Vec::new();
    for i in 0..=total {
        for fate in 0..FATES {
            trials += 1;
            if let Err(e) = trial(&steps, &ops, i, fate, 0) {
                failures.push(format!("op {i} fate {fate}: {e}"));
            }
        }
    }
    eprintln!(
        "power loss: {total} storage operations, {trials} trials, {} failures",
        failures.len()
    );
    assert!(trials >= 1000, "only {trials} trials");
    assert!(
        failures.is_empty(),
        "{} failed trials, first: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
fn disabling_any_durability_point_is_detected() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let steps = script(SEED, SHAPE);
    let ops = ops(&steps);
    testing::restore_all();
    let total = workload_ops(&steps);
    let mut undetected = Vec::new();
    // `open.wal_sync` matters only in a narrow window (after a kill, before the recovered
    // memtable's flush): tests/reliability_model.rs shows it is needed.
    for &point in testing::SYNC_POINTS.iter().filter(|&&p| p != "open.wal_sync") {
        testing::restore_all();
        assert!(testing::skip(point), "the fault-injection feature is on in tests");
        let mut found = None;
        'search: for i in 0..=total {
            for fate in 0..FATES {
                // The random-subset fate catches a missing directory sync only for some coin
                // flips (1 in 4 for two entries), so the search tries several seeds.
                let variants = if fate == 3 { 8 } else { 1 };
                for v in 0..variants {
                    if let Err(e) = trial(&steps, &ops, i, fate, v) {
                        found = Some(format!("op {i} fate {fate}.{v}: {e}"));
                        break 'search;
                    }
                }
            }
        }
        testing::restore_all();
        match found {
            Some(how) => eprintln!("without {point}: {how}"),
            None => undetected.push(point),
        }
    }
    assert!(undetected.is_empty(), "disabling {undetected:?} went unnoticed");
}
