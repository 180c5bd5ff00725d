//! Subcompactions (`Options::max_subcompactions`): a compaction split into key ranges merged
//! on their own threads leaves exactly the database one thread leaves (every key, full scans
//! both ways, and what held snapshots see, across keyspaces, merges and range deletes), its
//! outputs are disjoint and sorted on every level, and a failure inside one range installs
//! nothing and deletes what the ranges wrote.

use siftdb::filter::rng::SplitMix64;
use siftdb::inspect::manifest::recover;
use siftdb::storage::{MemStorage, Storage};
use siftdb::{CompactionOptions, Db, Keyspace, KeyspaceOptions, Options, Snapshot, U64AddOperator};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

const DIR: &str = "/db";

fn opts(storage: &Arc<MemStorage>, subcompactions: usize) -> Options {
    Options {
        memtable_size: 16 << 10,
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 8 << 10,
            max_bytes_for_level_base: 32 << 10,
            ..CompactionOptions::default()
        },
        merge_operator: Some(Arc::new(U64AddOperator)),
        max_subcompactions: subcompactions,
        storage: Some(storage.clone()),
        ..Options::default()
    }
}

/// Plain keys take puts, deletes and range deletes; counter keys (`m...`) take 8-byte puts,
/// merges and deletes, so every merge has an operand-compatible base.
fn plain(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn counter(i: u64) -> Vec<u8> {
    format!("m{i:04}").into_bytes()
}

const PLAIN: u64 = 3000;
const COUNTERS: u64 = 200;

/// Every key the workload can write, in order.
fn universe() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..PLAIN).map(plain).chain((0..COUNTERS).map(counter)).collect();
    keys.sort();
    keys
}

/// One database under test: its storage, handle and second keyspace.
struct Side {
    storage: Arc<MemStorage>,
    db: Db,
    ks2: Keyspace,
    snapshots: Vec<Snapshot>,
}

impl Side {
    fn open(storage: Arc<MemStorage>, subcompactions: usize) -> Side {
        let db = Db::open(Path::new(DIR), opts(&storage, subcompactions)).unwrap();
        let ks2 = db.keyspace("ks2", KeyspaceOptions::default()).unwrap();
        Side { storage, db, ks2, snapshots: Vec::new() }
    }
}

/// Applies the same seeded random operation to every side (both keyspaces, every record
/// kind), occasionally taking a snapshot on each.
fn random_op(rng: &mut SplitMix64, sides: &mut [Side], step: u64) {
    let in_ks2 = rng.next_u64().is_multiple_of(3);
    let roll = rng.next_u64() % 100;
    let i = rng.next_u64();
    let len = 10 + (rng.next_u64() % 60) as usize;
    let val: Vec<u8> = (0..len).map(|j| b'a' + ((step as usize + j) % 26) as u8).collect();
    let n = rng.next_u64() % 100;
    for s in sides.iter_mut() {
        let (db, ks) = (&s.db, &s.ks2);
        let r = match roll {
            0..=49 if in_ks2 => ks.put(plain(i % PLAIN), &val),
            0..=49 => db.put(plain(i % PLAIN), &val),
            50..=64 if in_ks2 => ks.delete(plain(i % PLAIN)),
            50..=64 => db.delete(plain(i % PLAIN)),
            65..=79 if in_ks2 => ks.merge(counter(i % COUNTERS), n.to_le_bytes()),
            65..=79 => db.merge(counter(i % COUNTERS), n.to_le_bytes()),
            80..=86 if in_ks2 => ks.put(counter(i % COUNTERS), n.to_le_bytes()),
            80..=86 => db.put(counter(i % COUNTERS), n.to_le_bytes()),
            87..=89 => db.delete(counter(i % COUNTERS)),
            90..=92 => {
                let start = i % PLAIN;
                let (a, b) = (plain(start), plain(start + 1 + n % 60));
                if in_ks2 {
                    ks.delete_range(a..b)
                } else {
                    db.delete_range(a..b)
                }
            }
            _ => Ok(()),
        };
        r.unwrap();
        if step % 1500 == 1499 {
            s.snapshots.push(s.db.snapshot());
        }
    }
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn collect(it: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>) -> Entries {
    it.collect::<siftdb::Result<_>>().unwrap()
}

/// Everything a reader can observe of `s`: per keyspace, every key's value and the scans both
/// ways, now and at each held snapshot.
fn observe(s: &Side) -> Vec<Entries> {
    let mut out = Vec::new();
    let keys = universe();
    let gets = |f: &dyn Fn(&[u8]) -> Option<Vec<u8>>| -> Entries {
        keys.iter().filter_map(|k| f(k).map(|v| (k.clone(), v))).collect()
    };
    out.push(gets(&|k| s.db.get(k).unwrap()));
    out.push(gets(&|k| s.ks2.get(k).unwrap()));
    out.push(collect(s.db.scan().unwrap()));
    out.push(collect(s.db.scan().unwrap().rev()));
    out.push(collect(s.ks2.scan().unwrap()));
    out.push(collect(s.ks2.scan().unwrap().rev()));
    for snap in &s.snapshots {
        out.push(gets(&|k| snap.get(k).unwrap()));
        out.push(gets(&|k| snap.keyspace(&s.ks2).unwrap().get(k).unwrap()));
        out.push(collect(snap.scan().unwrap()));
        out.push(collect(snap.keyspace(&s.ks2).unwrap().scan().unwrap().rev()));
    }
    out
}

/// Every level below L0 is sorted by `(keyspace, smallest key)` and its files' key ranges are
/// disjoint; every table in the directory is live (no output of a failed range is left).
fn check_files(storage: &MemStorage) {
    let state = recover(storage, Path::new(DIR)).unwrap().expect("a database");
    let mut live = BTreeSet::new();
    for (level, files) in state.levels.iter().enumerate() {
        live.extend(files.keys().copied());
        if level == 0 {
            continue;
        }
        let mut metas: Vec<_> = files.values().collect();
        metas.sort_by(|a, b| a.smallest().cmp(&b.smallest()));
        for w in metas.windows(2) {
            assert!(
                w[0].largest() < w[1].smallest(),
                "L{level}: file {} ends at {:?}, file {} starts at {:?}",
                w[0].number,
                String::from_utf8_lossy(&w[0].largest_key),
                w[1].number,
                String::from_utf8_lossy(&w[1].smallest_key),
            );
        }
    }
    let on_disk: BTreeSet<u64> = storage
        .list(Path::new(DIR))
        .unwrap()
        .iter()
        .filter_map(|name| name.strip_suffix(".sst").and_then(|n| n.parse().ok()))
        .collect();
    assert_eq!(on_disk, live, "tables in the directory vs tables the manifest names");
}

#[test]
fn subcompactions_leave_the_same_database_as_one_thread_with_snapshots_merges_and_range_deletes() {
    let mut sides = vec![
        Side::open(Arc::new(MemStorage::new()), 1),
        Side::open(Arc::new(MemStorage::new()), 4),
    ];
    let mut rng = SplitMix64::new(0x0005_abc0);
    let mut step = 0;
    // Three rounds: each writes over what the previous compactions left, so later compactions
    // merge new L0 files with deeper levels holding older versions and tombstones.
    for round in 0..3 {
        for _ in 0..6000 {
            random_op(&mut rng, &mut sides, step);
            step += 1;
        }
        if round == 1 {
            sides.iter_mut().for_each(|s| drop(s.snapshots.remove(0))); // one released
        }
        for s in &sides {
            s.db.compact().unwrap();
        }
        let (one, many) = (observe(&sides[0]), observe(&sides[1]));
        assert_eq!(one.len(), many.len());
        for (i, (a, b)) in one.iter().zip(&many).enumerate() {
            assert!(a == b, "round {round}: view {i} differs ({} vs {} entries)", a.len(), b.len());
        }
        assert!(one[2].len() > 100, "the workload leaves data to compare");
        check_files(&sides[1].storage);
    }
    assert_eq!(sides[0].db.stats().subcompactions, 0, "1 = one thread");
    let split = sides[1].db.stats().subcompactions;
    assert!(split >= 2, "the compactions were split: {split} ranges");
    // And the result reopens to the same contents.
    let before = observe(&sides[1]);
    let Side { storage, db, ks2, snapshots } = sides.pop().unwrap();
    let n_snaps = snapshots.len();
    drop((snapshots, ks2, db));
    let reopened = Side::open(storage, 4);
    let after = observe(&reopened);
    assert_eq!(after[..6], before[..6], "reopened (snapshots end with the process)");
    assert!(n_snaps > 0);
}

/// Fills a database of plain keys (puts and deletes) and returns its model.
fn fill(db: &Db, seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut rng = SplitMix64::new(seed);
    let mut model = BTreeMap::new();
    for step in 0..8000u64 {
        let k = plain(rng.next_u64() % PLAIN);
        if rng.next_u64().is_multiple_of(5) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("value-{step}-{}", "x".repeat((step % 40) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
    db.flush().unwrap();
    model
}

#[test]
fn an_io_error_in_one_subcompaction_installs_nothing_and_the_database_reopens_intact() {
    // How many storage operations a clean compaction of this database takes.
    let clean = Arc::new(MemStorage::new());
    let db = Db::open(Path::new(DIR), opts(&clean, 4)).unwrap();
    fill(&db, 11);
    let before = clean.op_count();
    db.compact().unwrap();
    let ops = clean.op_count() - before;
    assert!(db.stats().subcompactions >= 2, "the clean compaction was split");
    drop(db);
    assert!(ops > 20, "{ops} operations");

    let mut failed = 0;
    for k in 0..24 {
        let n = ops * k / 24;
        let storage = Arc::new(MemStorage::new());
        let db = Db::open(Path::new(DIR), opts(&storage, 4)).unwrap();
        let model = fill(&db, 11);
        storage.fail_after(n, false);
        let r = db.compact();
        storage.clear_faults();
        if r.is_err() {
            failed += 1;
            // The failed job's outputs are gone and its edit never landed.
            check_files(&storage);
        }
        drop(db);
        let db = Db::open(Path::new(DIR), opts(&storage, 4)).unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> = collect(db.scan().unwrap()).into_iter().collect();
        assert!(got == model, "fault after {n} of {ops} operations: contents differ");
        db.compact().unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> = collect(db.scan().unwrap()).into_iter().collect();
        assert!(got == model, "fault after {n}: contents differ after a new compaction");
        check_files(&storage);
    }
    assert!(failed >= 12, "most injected faults failed the compaction ({failed} of 24)");
}
