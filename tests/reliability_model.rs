//! Property-based model test (issue 7): 256 random sequences of 200 operations (single writes
//! and batches, synced or buffered, mixing puts, deletes, range deletes and merges (u64 add on
//! four hot keys) across two keyspaces, the default one and "ks2"; gets; scans forward and
//! reversed; cursor walks with direction changes; flushes; checkpoints; reopens; simulated
//! power losses, one always in the middle) run against the engine on a `MemStorage` and
//! against a model: one `BTreeMap` per keyspace.
//!
//! Between crashes every get and scan must equal the model exactly. After a crash the recovered
//! state must equal the state verified before plus a prefix of the writes since, at least as
//! long as the last synced (or flushed, or checkpointed) one: synced writes survive, buffered
//! ones vanish only as a suffix, and a batch is all or nothing in both keyspaces. The model then
//! continues from the recovered state.
//!
//! A checkpoint is taken while the model is known exactly; it is opened later (after more
//! writes, compactions and power losses of the storage it shares with the source) and at the
//! end of the case, and must equal the model at the moment it was taken.

mod model_support;

use model_support::*;
use proptest::prelude::*;
use siftdb::storage::mem::{DataFate, DirFate};
use siftdb::storage::MemStorage;
use siftdb::{Options, U64AddOperator, WriteOptions};
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Action {
    /// One write: its records in batch order (one record is a single write).
    Write {
        recs: Vec<RecSpec>,
        sync: bool,
    },
    /// `delete_range(key(a), key(b))` in the default keyspace (nothing when `a >= b`).
    DeleteRange(u8, u8, bool),
    Get(u8),
    Scan,
    /// `range(key(a)..=key(b)).rev()` in keyspace 0 (default) or 1 ("ks2").
    RevRange(usize, u8, u8),
    /// Cursor moves in keyspace 0 or 1 as (move, target): 0 seek, 1 seek_for_prev, 2 next,
    /// 3 prev, 4 to first, 5 to last; a target is a key number times two, plus one for a
    /// point between two keys.
    Walk(usize, Vec<(u8, u8)>),
    Flush,
    /// `Db::checkpoint` into a new directory; the model at that moment is kept with it.
    Checkpoint,
    /// Opens checkpoint `n % taken` (if any) and compares it with its model.
    OpenCheckpoint(u8),
    Reopen,
    /// Power loss: 0 drops unsynced data and entries, 1 keeps random prefixes, 2 keeps data but
    /// loses unsynced entries, 3 random prefixes and a random subset of entry changes, 4 a killed
    /// process (nothing lost).
    Crash(u8, u64),
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        40 => (prop::collection::vec(rec_spec(), 1..5), prop::bool::weighted(0.3))
            .prop_map(|(recs, sync)| Action::Write { recs, sync }),
        4 => (0u8..33, 0u8..33, prop::bool::weighted(0.3))
            .prop_map(|(a, b, sync)| Action::DeleteRange(a, b, sync)),
        15 => (0u8..32).prop_map(Action::Get),
        2 => Just(Action::Scan),
        2 => (0usize..2, 0u8..34, 0u8..34).prop_map(|(ks, a, b)| Action::RevRange(ks, a, b)),
        3 => (0usize..2, prop::collection::vec((0u8..6, 0u8..68), 1..30))
            .prop_map(|(ks, moves)| Action::Walk(ks, moves)),
        3 => Just(Action::Flush),
        1 => Just(Action::Checkpoint),
        1 => any::<u8>().prop_map(Action::OpenCheckpoint),
        2 => Just(Action::Reopen),
        3 => (0u8..5, any::<u64>()).prop_map(|(f, s)| Action::Crash(f, s)),
    ]
}

/// `small_table_cache`: 1 KiB compaction outputs (the smallest `Options::validate` accepts)
/// read through a table cache of 16 tables, their data blocks aligned to pages
/// (`block_align`: padding between blocks).
fn options(s: &MemStorage, small_table_cache: bool) -> Options {
    let mut o = Options {
        storage: Some(Arc::new(s.clone())),
        memtable_size: 2048,
        block_size: 256,
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    };
    if small_table_cache {
        o.max_open_files = 16;
        o.compaction.target_file_size = 1024;
        o.block_align = true;
    }
    o
}

/// A walk target: key `t / 2`, or for odd `t` a point just after it (before the next key).
fn walk_target(t: u8) -> Vec<u8> {
    let mut k = key(t / 2);
    if t % 2 == 1 {
        k.push(b'5');
    }
    k
}

/// Runs the moves of a walk on a cursor and on the model (a position is the current key)
/// and compares them after every move.
fn check_walk(mut c: siftdb::DbCursor, moves: &[(u8, u8)], model: &Map) -> TestResult {
    let mut at: Option<Vec<u8>> = None;
    for (n, &(m, t)) in moves.iter().enumerate() {
        let target = walk_target(t);
        let after = |k: &Vec<u8>| model.range(k.clone()..).find(|(x, _)| *x > k);
        at = match m {
            0 => {
                c.seek(&target).unwrap();
                model.range(target..).next().map(|(k, _)| k.clone())
            }
            1 => {
                c.seek_for_prev(&target).unwrap();
                model.range(..=target).next_back().map(|(k, _)| k.clone())
            }
            2 if at.is_some() => {
                c.next().unwrap();
                after(at.as_ref().unwrap()).map(|(k, _)| k.clone())
            }
            3 if at.is_some() => {
                c.prev().unwrap();
                model.range(..at.clone().unwrap()).next_back().map(|(k, _)| k.clone())
            }
            4 => {
                c.seek_to_first().unwrap();
                model.keys().next().cloned()
            }
            5 => {
                c.seek_to_last().unwrap();
                model.keys().next_back().cloned()
            }
            _ => at, // next or prev with the cursor off the ends: a no-op
        };
        prop_assert_eq!(c.valid(), at.is_some(), "move {} ({}, {})", n, m, t);
        if let Some(k) = &at {
            prop_assert_eq!(c.key(), k.as_slice(), "key after move {}", n);
            prop_assert_eq!(c.value(), model[k].as_slice(), "value after move {}", n);
        }
    }
    Ok(())
}

type TestResult = Result<(), TestCaseError>;

fn run_case(actions: &[Action], small: bool) -> TestResult {
    let dir = Path::new("/m");
    let storage = MemStorage::new();
    let mut db = Some(Handles::open(dir, options(&storage, small)));
    // `base`: the state verified at the last crash; `pending`: writes since, in order;
    // `floor`: how many of them are promised durable; `model`: base + all pending.
    let mut base = State::default();
    let mut pending: Vec<Records> = Vec::new();
    let mut floor = 0;
    let mut model = State::default();
    let mut writes = 0;
    // Checkpoints taken: (directory, the model when it was taken).
    let mut checkpoints: Vec<(String, State)> = Vec::new();
    let middle = actions.len() / 2;
    for (i, a) in actions.iter().enumerate() {
        let a = if i == middle { Action::Crash(0, i as u64) } else { a.clone() };
        let h = db.as_ref().unwrap();
        match a {
            Action::Write { recs, sync } => {
                writes += 1;
                let recs = records(&model, &recs, writes);
                h.db.write_opt(h.batch(&recs), WriteOptions { sync }).unwrap();
                apply(&mut model, &recs);
                pending.push(recs);
                if sync {
                    floor = pending.len();
                }
            }
            Action::DeleteRange(a, b, sync) => {
                if a < b {
                    let recs = vec![Rec { ks: 0, key: key(a), kind: Kind::DeleteRange(key(b)) }];
                    h.db.write_opt(h.batch(&recs), WriteOptions { sync }).unwrap();
                    apply(&mut model, &recs);
                    pending.push(recs);
                    if sync {
                        floor = pending.len();
                    }
                }
            }
            Action::Get(k) => {
                let (d, ks2) = (&h.db, &h.ks2);
                prop_assert_eq!(
                    d.get(key(k)).unwrap(),
                    model[0].get(&key(k)).cloned(),
                    "get {}",
                    k
                );
                prop_assert_eq!(d.contains_key(key(k)).unwrap(), model[0].contains_key(&key(k)));
                prop_assert_eq!(
                    ks2.get(key(k)).unwrap(),
                    model[1].get(&key(k)).cloned(),
                    "ks2 {}",
                    k
                );
                let keys = [key(k), key(k.wrapping_add(1)), key(k), key(k.wrapping_sub(1))];
                let got: Vec<_> = d.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
                let expect: Vec<_> = keys.iter().map(|k| model[0].get(k).cloned()).collect();
                prop_assert_eq!(got, expect, "multi_get around {}", k);
                let got: Vec<_> = ks2.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
                let expect: Vec<_> = keys.iter().map(|k| model[1].get(k).cloned()).collect();
                prop_assert_eq!(got, expect, "ks2 multi_get around {}", k);
            }
            Action::Scan => {
                prop_assert_eq!(&h.scan(), &model);
                for (ks, it) in [(0, h.db.scan().unwrap()), (1, h.ks2.scan().unwrap())] {
                    let rev: Vec<_> = it.rev().map(|r| r.unwrap()).collect();
                    let want: Vec<_> =
                        model[ks].iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
                    prop_assert_eq!(rev, want, "reverse scan of keyspace {}", ks);
                }
            }
            Action::RevRange(ks, a, b) => {
                let (lo, hi) = (key(a.min(b)), key(a.max(b)));
                let it = match ks {
                    0 => h.db.range(lo.clone()..=hi.clone()),
                    _ => h.ks2.range(lo.clone()..=hi.clone()),
                };
                let got: Vec<_> = it.unwrap().rev().map(|r| r.unwrap()).collect();
                let want: Vec<_> =
                    model[ks].range(lo..=hi).rev().map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(got, want, "reverse range {}..={} of keyspace {}", a, b, ks);
            }
            Action::Walk(ks, moves) => {
                let c = if ks == 0 { h.db.cursor().unwrap() } else { h.ks2.cursor().unwrap() };
                check_walk(c, &moves, &model[ks])?
            }
            Action::Flush => {
                h.db.flush().unwrap();
                floor = pending.len();
            }
            Action::Checkpoint => {
                let cp = format!("/cp{}", checkpoints.len());
                h.db.checkpoint(&cp).unwrap();
                // The checkpoint syncs the WAL first: every acknowledged write is durable.
                floor = pending.len();
                checkpoints.push((cp, model.clone()));
            }
            Action::OpenCheckpoint(n) => {
                if !checkpoints.is_empty() {
                    let (cp, want) = &checkpoints[n as usize % checkpoints.len()];
                    check_checkpoint(&storage, cp, want, small)?;
                }
            }
            Action::Reopen => {
                drop(db.take()); // close before reopening (the directory lock)
                db = Some(Handles::open(dir, options(&storage, small)));
                prop_assert_eq!(&db.as_ref().unwrap().scan(), &model, "after reopen");
            }
            Action::Crash(fate, seed) => {
                // The power goes while the database is open; its handles die with the crash.
                match fate {
                    0 => storage.crash_drop_unsynced(),
                    1 => storage.crash_keep_random_prefix(seed),
                    2 => storage.crash_lose_unsynced_dir_entries(),
                    3 => {
                        storage.crash(DataFate::KeepRandomPrefix(seed), DirFate::RandomSubset(seed))
                    }
                    // A killed process: everything handed to the OS survives (until a later
                    // power loss, which may still drop what was never synced).
                    _ => storage.kill_process(),
                }
                drop(db.take());
                if fate == 4 {
                    floor = pending.len();
                }
                db = Some(Handles::open(dir, options(&storage, small)));
                let got = db.as_ref().unwrap().scan();
                let j = prefix_match(&base, &pending, &got).ok_or_else(|| {
                    TestCaseError::fail(format!("state after crash at action {i} is no prefix"))
                })?;
                prop_assert!(
                    j >= floor,
                    "crash at action {} lost synced writes ({} < {})",
                    i,
                    j,
                    floor
                );
                base = got.clone();
                model = got;
                pending.clear();
                floor = 0;
            }
        }
    }
    drop(db);
    for (cp, want) in &checkpoints {
        check_checkpoint(&storage, cp, want, small)?;
    }
    Ok(())
}

/// Opens the checkpoint in `cp` and compares both keyspaces with `want`.
fn check_checkpoint(storage: &MemStorage, cp: &str, want: &State, small: bool) -> TestResult {
    let h = Handles::open(Path::new(cp), options(storage, small));
    prop_assert_eq!(&h.scan(), want, "checkpoint {}", cp);
    Ok(())
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

#[test]
fn engine_matches_a_btreemap_through_reopens_and_crashes() {
    let mut runner = proptest::test_runner::TestRunner::new(config(256));
    let strategy = prop::collection::vec(action(), 200);
    if let Err(e) = runner.run(&strategy, |actions| run_case(&actions, false)) {
        panic!("{e}");
    }
}

#[test]
fn engine_matches_a_btreemap_through_a_table_cache_of_16_tables() {
    let mut runner = proptest::test_runner::TestRunner::new(config(64));
    let strategy = prop::collection::vec(action(), 200);
    if let Err(e) = runner.run(&strategy, |actions| run_case(&actions, true)) {
        panic!("{e}");
    }
}
