//! Property-based model test (issue 7): 256 random sequences of 200 operations (single writes
//! and batches, synced or buffered; range deletes; gets; scans forward and reversed; cursor walks with
//! direction changes; flushes; reopens; simulated power losses, one
//! always in the middle) run against the engine on a `MemStorage` and against a `BTreeMap`.
//!
//! Between crashes every get and scan must equal the model exactly. After a crash the recovered
//! state must equal the state verified before plus a prefix of the writes since, at least as
//! long as the last synced (or flushed) one: synced writes survive, buffered ones vanish only
//! as a suffix. The model then continues from the recovered state.

use proptest::prelude::*;
use siftdb::storage::mem::{DataFate, DirFate};
use siftdb::storage::MemStorage;
use siftdb::{Db, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

type State = BTreeMap<Vec<u8>, Vec<u8>>;
type Records = Vec<(Vec<u8>, Rec)>;

/// One record of a write: a put of a value, a delete, or a delete of `[key, end)`.
#[derive(Debug, Clone)]
enum Rec {
    Put(Vec<u8>),
    Delete,
    DeleteRange(Vec<u8>),
}

#[derive(Debug, Clone)]
enum Action {
    /// Records as (key number, value length or delete); one record is a single write.
    Write {
        recs: Vec<(u8, Option<u8>)>,
        sync: bool,
    },
    /// `delete_range(key(a), key(b))` (nothing when `a >= b`).
    DeleteRange(u8, u8, bool),
    Get(u8),
    Scan,
    /// `range(key(a)..=key(b)).rev()`.
    RevRange(u8, u8),
    /// Cursor moves as (move, target): 0 seek, 1 seek_for_prev, 2 next, 3 prev, 4 to first,
    /// 5 to last; a target is a key number times two, plus one for a point between two keys.
    Walk(Vec<(u8, u8)>),
    Flush,
    Reopen,
    /// Power loss: 0 drops unsynced data and entries, 1 keeps random prefixes, 2 keeps data but
    /// loses unsynced entries, 3 random prefixes and a random subset of entry changes, 4 a killed
    /// process (nothing lost).
    Crash(u8, u64),
}

fn action() -> impl Strategy<Value = Action> {
    let rec = (0u8..32, prop::option::weighted(0.85, 0u8..64));
    prop_oneof![
        40 => (prop::collection::vec(rec, 1..5), prop::bool::weighted(0.3))
            .prop_map(|(recs, sync)| Action::Write { recs, sync }),
        4 => (0u8..33, 0u8..33, prop::bool::weighted(0.3))
            .prop_map(|(a, b, sync)| Action::DeleteRange(a, b, sync)),
        15 => (0u8..32).prop_map(Action::Get),
        2 => Just(Action::Scan),
        2 => (0u8..34, 0u8..34).prop_map(|(a, b)| Action::RevRange(a, b)),
        3 => prop::collection::vec((0u8..6, 0u8..68), 1..30).prop_map(Action::Walk),
        3 => Just(Action::Flush),
        2 => Just(Action::Reopen),
        3 => (0u8..5, any::<u64>()).prop_map(|(f, s)| Action::Crash(f, s)),
    ]
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

/// The value written by write number `n` (values name their write, so prefixes are exact).
fn value(n: usize, len: u8) -> Vec<u8> {
    let mut v = format!("w{n}/").into_bytes();
    v.resize(v.len() + len as usize, b'#');
    v
}

/// `small_table_cache`: 1 KiB compaction outputs (the smallest `Options::validate` accepts) read through a table cache of 16 tables.
fn options(s: &MemStorage, small_table_cache: bool) -> Options {
    let mut o = Options {
        storage: Some(Arc::new(s.clone())),
        memtable_size: 2048,
        block_size: 256,
        ..Options::default()
    };
    if small_table_cache {
        o.max_open_files = 16;
        o.compaction.target_file_size = 1024;
    }
    o
}

fn apply(state: &mut State, recs: &Records) {
    for (k, v) in recs {
        match v {
            Rec::Put(v) => drop(state.insert(k.clone(), v.clone())),
            Rec::Delete => drop(state.remove(k)),
            Rec::DeleteRange(end) => state.retain(|x, _| !(k <= x && x < end)),
        };
    }
}

fn scan(db: &Db) -> State {
    db.scan().unwrap().map(|r| r.unwrap()).collect()
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
fn check_walk(db: &Db, moves: &[(u8, u8)], model: &State) -> Result<(), TestCaseError> {
    let mut c = db.cursor();
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

fn run_case(actions: &[Action], small: bool) -> Result<(), TestCaseError> {
    let dir = Path::new("/m");
    let storage = MemStorage::new();
    let mut db = Some(Db::open(dir, options(&storage, small)).unwrap());
    // `base`: the state verified at the last crash; `pending`: writes since, in order;
    // `floor`: how many of them are promised durable; `model`: base + all pending.
    let mut base = State::new();
    let mut pending: Vec<Records> = Vec::new();
    let mut floor = 0;
    let mut model = State::new();
    let mut writes = 0;
    let middle = actions.len() / 2;
    for (i, a) in actions.iter().enumerate() {
        let a = if i == middle { Action::Crash(0, i as u64) } else { a.clone() };
        let d = db.as_ref().unwrap();
        match a {
            Action::Write { recs, sync } => {
                writes += 1;
                let recs: Records = recs
                    .iter()
                    .map(|&(k, v)| (key(k), v.map_or(Rec::Delete, |l| Rec::Put(value(writes, l)))))
                    .collect();
                let mut b = WriteBatch::new();
                for (k, v) in &recs {
                    match v {
                        Rec::Put(v) => b.put(k, v),
                        Rec::Delete => b.delete(k),
                        Rec::DeleteRange(end) => b.delete_range(k, end),
                    };
                }
                d.write_opt(b, WriteOptions { sync }).unwrap();
                apply(&mut model, &recs);
                pending.push(recs);
                if sync {
                    floor = pending.len();
                }
            }
            Action::DeleteRange(a, b, sync) => {
                if a < b {
                    let recs: Records = vec![(key(a), Rec::DeleteRange(key(b)))];
                    let mut batch = WriteBatch::new();
                    batch.delete_range(key(a), key(b));
                    d.write_opt(batch, WriteOptions { sync }).unwrap();
                    apply(&mut model, &recs);
                    pending.push(recs);
                    if sync {
                        floor = pending.len();
                    }
                }
            }
            Action::Get(k) => {
                prop_assert_eq!(d.get(key(k)).unwrap(), model.get(&key(k)).cloned(), "get {}", k);
                prop_assert_eq!(d.contains_key(key(k)).unwrap(), model.contains_key(&key(k)));
                let keys = [key(k), key(k.wrapping_add(1)), key(k), key(k.wrapping_sub(1))];
                let got: Vec<_> = d.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
                let expect: Vec<_> = keys.iter().map(|k| model.get(k).cloned()).collect();
                prop_assert_eq!(got, expect, "multi_get around {}", k);
            }
            Action::Scan => {
                prop_assert_eq!(scan(d), model.clone());
                let rev: Vec<_> = d.scan().unwrap().rev().map(|r| r.unwrap()).collect();
                let want: Vec<_> =
                    model.iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(rev, want, "reverse scan");
            }
            Action::RevRange(a, b) => {
                let (lo, hi) = (key(a.min(b)), key(a.max(b)));
                let got: Vec<_> =
                    d.range(lo.clone()..=hi.clone()).unwrap().rev().map(|r| r.unwrap()).collect();
                let want: Vec<_> =
                    model.range(lo..=hi).rev().map(|(k, v)| (k.clone(), v.clone())).collect();
                prop_assert_eq!(got, want, "reverse range {}..={}", a, b);
            }
            Action::Walk(moves) => check_walk(d, &moves, &model)?,
            Action::Flush => {
                d.flush().unwrap();
                floor = pending.len();
            }
            Action::Reopen => {
                drop(db.take()); // close before reopening (the directory lock)
                db = Some(Db::open(dir, options(&storage, small)).unwrap());
                prop_assert_eq!(scan(db.as_ref().unwrap()), model.clone(), "after reopen");
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
                db = Some(Db::open(dir, options(&storage, small)).unwrap());
                let got = scan(db.as_ref().unwrap());
                let mut candidate = base.clone();
                let mut matched = None;
                for j in 0..=pending.len() {
                    if j > 0 {
                        apply(&mut candidate, &pending[j - 1]);
                    }
                    if candidate == got {
                        matched = Some(j);
                    }
                }
                let j = matched.ok_or_else(|| {
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
