//! A crash at every storage operation of a full compaction (in-memory storage, fail-Nth fault
//! then power loss) reopens to a database whose contents match the model and whose file set is
//! one of the states the manifest passes through (before, between or after the compaction's
//! edits), never a mix.

use siftdb::filter::rng::SplitMix64;
use siftdb::inspect::filename;
use siftdb::inspect::manifest::{self, RecoveredState, VersionEdit};
use siftdb::inspect::wal::WalReader;
use siftdb::storage::{MemStorage, Storage};
use siftdb::{CompactionOptions, Db, Options, WriteBatch};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type FileSet = BTreeSet<(usize, u64)>;

fn opts(storage: &MemStorage) -> Options {
    Options {
        memtable_size: 64 << 10,
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 16 << 10,
            ..CompactionOptions::default()
        },
        storage: Some(Arc::new(storage.clone())),
        ..Options::default()
    }
}

/// A database with several L0 files holding overwrites and deletes, closed cleanly.
fn build(dir: &Path) -> (MemStorage, Model) {
    let storage = MemStorage::new();
    let mut model = Model::new();
    let mut rng = SplitMix64::new(11);
    let db = Db::open(dir, opts(&storage)).unwrap();
    for round in 0..4 {
        let mut b = WriteBatch::new();
        for _ in 0..600 {
            let k = format!("key{:05}", rng.below(1500)).into_bytes();
            if round > 0 && rng.below(5) == 0 {
                b.delete(&k);
                model.remove(&k);
            } else {
                let v = format!("v{round}-{}", rng.next_u64()).into_bytes();
                b.put(&k, &v);
                model.insert(k, v);
            }
        }
        db.write(b).unwrap();
        db.flush().unwrap();
    }
    drop(db);
    (storage, model)
}

fn file_set(s: &RecoveredState) -> FileSet {
    s.levels.iter().enumerate().flat_map(|(l, f)| f.keys().map(move |&n| (l, n))).collect()
}

/// Every state the live manifest passes through, edit by edit.
fn manifest_states(storage: &MemStorage, dir: &Path) -> Vec<FileSet> {
    let current = storage.open(&dir.join(filename::CURRENT)).unwrap();
    let name = String::from_utf8(current.read_at(0, current.len() as usize).unwrap()).unwrap();
    let path = dir.join(name.trim_end());
    let mut reader = WalReader::new(storage.open(&path).unwrap(), &path);
    let mut state = RecoveredState::empty(0);
    let mut states = Vec::new();
    while let Some(rec) = reader.next_record().unwrap() {
        state.apply(&VersionEdit::decode(&rec).unwrap()).unwrap();
        states.push(file_set(&state));
    }
    states
}

fn check(db: &Db, model: &Model) {
    let got: Model = db.scan().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), model.len());
    assert!(got == *model, "contents differ from the model");
}

#[test]
fn crash_at_every_step_of_a_compaction_reopens_to_old_or_new_file_set() {
    let dir = Path::new("/db");
    // The fault-free run: how many operations the compaction takes and the states it installs.
    let (storage, model) = build(dir);
    let db = Db::open(dir, opts(&storage)).unwrap();
    let before = manifest_states(&storage, dir);
    let ops_start = storage.op_count();
    db.compact().unwrap();
    let ops = storage.op_count() - ops_start;
    let states = manifest_states(&storage, dir);
    assert!(states.len() > before.len(), "the compaction made edits");
    let valid: Vec<FileSet> = states[before.len() - 1..].to_vec();
    let stats = db.stats();
    assert_eq!(stats.levels[0].files, 0);
    check(&db, &model);
    drop(db);
    assert!(ops > 10, "compaction took {ops} storage operations");
    eprintln!("compaction: {ops} storage operations, {} manifest edits", valid.len() - 1);

    for n in 0..ops {
        let (storage, model) = build(dir);
        let db = Db::open(dir, opts(&storage)).unwrap();
        storage.fail_after(n, false);
        let _ = db.compact(); // may fail at operation n
        drop(db);
        storage.crash_drop_unsynced();
        let state = manifest::recover(&storage, dir).unwrap().expect("a database");
        let set = file_set(&state);
        assert!(valid.contains(&set), "crash at op {n}: file set {set:?} is not a manifest state");
        // Every named file exists and verifies (open reads each), and contents are intact.
        let db = Db::open(dir, opts(&storage)).unwrap();
        check(&db, &model);
        // No orphan table survives the reopen.
        let ssts = storage
            .list(dir)
            .unwrap()
            .into_iter()
            .filter(|n| matches!(filename::parse_file_name(n), Some((filename::FileKind::Sst, _))))
            .count();
        assert_eq!(ssts, set.len(), "crash at op {n}: orphan tables left");
        drop(db);
    }
}
