//! A compaction that cannot finish leaves nothing behind: one stopped because the database is
//! closing, one whose subcompaction thread panics, and one whose install fails.
//!
//! The first two hold or break a compaction through `siftdb::testing`'s compaction output hook
//! (process-wide: the tests of this file run one at a time).

use siftdb::filter::rng::SplitMix64;
use siftdb::inspect::filename::{parse_file_name, FileKind};
use siftdb::inspect::manifest;
use siftdb::storage::{MemStorage, Storage};
use siftdb::testing::{self, OutputStart};
use siftdb::{CompactionOptions, Db, Error, Options, WriteBatch};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Longest a test waits for something another thread does (a hang guard, never a measure).
const HANG_GUARD: Duration = Duration::from_secs(120);

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(storage: &MemStorage, auto: bool, subcompactions: usize) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        memtable_size: 8 << 20,
        max_subcompactions: subcompactions,
        compaction: CompactionOptions {
            auto,
            l0_compaction_trigger: 4,
            target_file_size: 16 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

/// Writes `files` L0 files of `keys` distinct keys each (flushed one by one) into `db`.
fn fill(db: &Db, files: u32, keys: u32, model: &mut Model) {
    let mut rng = SplitMix64::new(0xCA9C);
    for f in 0..files {
        let mut b = WriteBatch::new();
        for i in 0..keys {
            let key = format!("key{:08}", i * files + f).into_bytes();
            let value = format!("v{f}-{}", rng.below(1 << 40)).repeat(4).into_bytes();
            b.put(&key, &value);
            model.insert(key, value);
        }
        db.write(b).unwrap();
        db.flush().unwrap();
    }
}

/// SST file numbers in `dir`.
fn sst_files(storage: &MemStorage, dir: &Path) -> BTreeSet<u64> {
    let names = storage.list(dir).unwrap();
    let parsed = names.iter().filter_map(|n| parse_file_name(n));
    parsed.filter(|&(kind, _)| kind == FileKind::Sst).map(|(_, n)| n).collect()
}

/// The live files the manifest names, per level.
fn live(storage: &MemStorage, dir: &Path) -> Vec<BTreeSet<u64>> {
    let state = manifest::recover(storage, dir).unwrap().unwrap();
    state.levels.iter().map(|l| l.keys().copied().collect()).collect()
}

fn check_contents(db: &Db, model: &Model) {
    let got: Model = db.scan().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), model.len());
    assert!(got == *model, "the database lost or changed entries");
}

/// Waits (polling) until `cond` holds; panics after [`HANG_GUARD`].
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG_GUARD, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Removes the hook when a test ends, passing or not.
struct Unhook;
impl Drop for Unhook {
    fn drop(&mut self) {
        testing::set_compaction_output_hook(None);
    }
}

#[test]
fn dropping_the_database_stops_a_running_compaction_and_leaves_no_output() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _unhook = Unhook;
    let dir = Path::new("/db");
    let storage = MemStorage::new();
    // The compaction's second output holds it until the database is closing.
    let calls = Arc::new(AtomicUsize::new(0));
    let held = Arc::new(AtomicBool::new(false));
    let saw_closing = Arc::new(AtomicBool::new(false));
    let (c, h, s) = (calls.clone(), held.clone(), saw_closing.clone());
    let hook = move |at: &OutputStart<'_>| {
        if c.fetch_add(1, Ordering::SeqCst) + 1 == 2 {
            h.store(true, Ordering::SeqCst);
            let start = Instant::now();
            while !(at.closing)() && start.elapsed() < HANG_GUARD {
                std::thread::sleep(Duration::from_millis(1));
            }
            s.store((at.closing)(), Ordering::SeqCst);
        }
    };
    assert!(testing::set_compaction_output_hook(Some(Arc::new(hook))));
    let mut model = Model::new();
    let db = Db::open(dir, options(&storage, true, 1)).unwrap();
    // Four L0 files of 1.5 MB reach the trigger: an L0 -> L1 compaction of about 6 MB into
    // outputs of 16 KiB, some 370 of them.
    fill(&db, 4, 16_000, &mut model);
    let inputs = live(&storage, Path::new("/db"));
    wait_until("the compaction's second output", || held.load(Ordering::SeqCst));
    drop(db);

    assert!(saw_closing.load(Ordering::SeqCst), "the hook returned before the close began");
    // The job stopped inside its second output: it started no other.
    assert_eq!(calls.load(Ordering::SeqCst), 2, "outputs started by the compaction");
    // It installed nothing and removed its outputs: the files on disk are the inputs.
    let after = live(&storage, dir);
    assert_eq!(after, inputs, "the manifest's files changed");
    assert_eq!(after[0].len(), 4);
    let on_disk = sst_files(&storage, dir);
    assert_eq!(on_disk, after.iter().flatten().copied().collect(), "orphan tables on disk");
    // A stop at close is no failure: the next open is writable and finds every write.
    let db = Db::open(dir, options(&storage, false, 1)).unwrap();
    db.put(b"after", b"reopen").unwrap();
    model.insert(b"after".to_vec(), b"reopen".to_vec());
    check_contents(&db, &model);
}

/// A manual compaction stops as the background one does: here the hook itself begins the
/// close inside the job (as `Db::close` would, were it able to overlap `Db::compact`).
#[test]
fn a_manual_compaction_stops_when_the_database_is_closing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _unhook = Unhook;
    let dir = Path::new("/db");
    let storage = MemStorage::new();
    let mut model = Model::new();
    let db = Db::open(dir, options(&storage, false, 1)).unwrap();
    fill(&db, 4, 4_000, &mut model);
    let inputs = live(&storage, dir);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let hook = move |at: &OutputStart<'_>| {
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            (at.begin_close)();
        }
    };
    testing::set_compaction_output_hook(Some(Arc::new(hook)));
    let e = db.compact().unwrap_err();
    testing::set_compaction_output_hook(None);
    assert!(matches!(e, Error::Closed), "{e}");
    // The job stopped inside the output it had started.
    assert_eq!(calls.load(Ordering::SeqCst), 1, "outputs started");
    assert_eq!(live(&storage, dir), inputs, "the manifest's files changed");
    assert_eq!(sst_files(&storage, dir), inputs.iter().flatten().copied().collect());
    // Stopping is not a failure: the database did not turn read-only (a closing one may
    // refuse the write for that reason alone).
    let put = db.put(b"k", b"v");
    assert!(!matches!(put, Err(Error::ReadOnly(_))), "{put:?}");
    if put.is_ok() {
        model.insert(b"k".to_vec(), b"v".to_vec());
    }
    drop(db);
    let db = Db::open(dir, options(&storage, false, 1)).unwrap();
    check_contents(&db, &model);
}

#[test]
fn a_panicking_subcompaction_leaves_no_output_file() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _unhook = Unhook;
    // Range 1 runs on a thread of its own, range 0 on the thread running the compaction.
    for range in [1, 0] {
        let dir = Path::new("/db");
        let storage = MemStorage::new();
        let mut model = Model::new();
        let db = Db::open(dir, options(&storage, false, 4)).unwrap();
        fill(&db, 4, 4_000, &mut model);
        let before = sst_files(&storage, dir);
        let panicked = Arc::new(AtomicBool::new(false));
        let p = panicked.clone();
        let hook = move |at: &OutputStart<'_>| {
            if at.range == range {
                p.store(true, Ordering::SeqCst);
                panic!("injected panic in subcompaction {range}");
            }
        };
        testing::set_compaction_output_hook(Some(Arc::new(hook)));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| db.compact()));
        testing::set_compaction_output_hook(None);
        assert!(panicked.load(Ordering::SeqCst), "range {range} never made an output");
        match r {
            Ok(Err(e)) => {
                assert!(e.to_string().contains("injected panic"), "range {range}: {e}");
            }
            Ok(Ok(())) => panic!("range {range}: the compaction succeeded"),
            Err(_) => panic!("range {range}: the panic escaped Db::compact"),
        }
        assert_eq!(sst_files(&storage, dir), before, "range {range}: orphan outputs");
        // A panic is a bug in the engine or in user code it called: the database turns
        // read-only, as after any failed compaction.
        assert!(matches!(db.put(b"k", b"v"), Err(Error::ReadOnly(_))), "range {range}");
        drop(db);
        let db = Db::open(dir, options(&storage, false, 4)).unwrap();
        check_contents(&db, &model);
    }
}

/// A transient fault at each storage operation of a compaction: when the compaction fails,
/// the table cache holds only the live tables (a failed install leaves its outputs on disk,
/// as the edit may be durable, but drops them from the cache).
#[test]
fn a_failed_compaction_leaves_no_output_in_the_table_cache() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new("/db");
    let setup = || {
        let storage = MemStorage::new();
        let opts = Options { memtable_size: 1 << 20, ..options(&storage, false, 2) };
        let db = Db::open(dir, opts).unwrap();
        let mut model = Model::new();
        fill(&db, 3, 300, &mut model);
        (storage, db)
    };
    let (probe, db) = setup();
    let start = probe.op_count();
    db.compact().unwrap();
    let total = probe.op_count() - start;
    drop(db);
    let (mut failed, mut failed_installs) = (0, 0);
    for n in 0..total {
        let (storage, db) = setup();
        storage.fail_after(n, false);
        if db.compact().is_ok() {
            continue;
        }
        failed += 1;
        let live_files: usize = db.stats().levels.iter().map(|l| l.files).sum();
        let open = db.memory_usage().open_tables;
        // Outputs of a failed install stay on disk (unknown durability), unnamed by the version.
        failed_installs += usize::from(sst_files(&storage, dir).len() > live_files);
        assert!(open <= live_files, "op {n}: {open} open tables, {live_files} live files");
    }
    assert!(failed > 10, "only {failed} of {total} faults failed the compaction");
    assert!(failed_installs > 0, "no fault failed the install");
}
