//! What `Db::open` accepts and refuses in a directory it finds (design.md#recovery):
//! what an interrupted creation leaves is created over; a directory whose CURRENT was lost but
//! whose WALs hold records is refused; a manifest naming tables on levels this build does not
//! have, or overlapping tables on a sorted level, is corruption (and no named file is deleted);
//! the directories `Db::open` and `Db::checkpoint` create survive a power loss.

use siftdb::inspect::filename::{parse_file_name, sst_name, FileKind};
use siftdb::inspect::manifest::{recover, FileMeta, VersionEdit};
use siftdb::storage::{FsStorage, MemStorage, Storage};
use siftdb::{Db, Error, KeyspaceOptions, Options, WriteOptions};
use std::path::Path;

mod common;

const SYNC: WriteOptions = WriteOptions { sync: true };

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn put_synced(db: &Db, key: &str, value: &str) {
    let mut b = siftdb::WriteBatch::new();
    b.put(key, value);
    db.write_opt(b, SYNC).unwrap();
}

/// Opens `dir`, writes a synced key, closes, reopens and reads it back.
fn takes_writes(dir: &Path) {
    let db = Db::open(dir, Options::default()).expect("open");
    put_synced(&db, "after", "open");
    db.close().unwrap();
    let db = Db::open(dir, Options::default()).expect("reopen");
    assert_eq!(db.get("after").unwrap().as_deref(), Some(&b"open"[..]));
}

#[test]
fn a_zero_filled_wal_left_by_an_interrupted_creation_is_created_over() {
    // The state a creation killed after the mapped WAL was made leaves: LOCK, a WAL of the
    // reservation's zeros, a manifest, and no CURRENT.
    let tmp = tempfile::tempdir().unwrap();
    let donor = tmp.path().join("donor");
    Db::open(&donor, Options::default()).unwrap().close().unwrap();
    let manifest = names(&donor).into_iter().find(|n| n.starts_with("MANIFEST-")).unwrap();
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("LOCK"), b"").unwrap();
    let wal = std::fs::File::create(dir.join("000001.log")).unwrap();
    wal.set_len(4 << 20).unwrap();
    drop(wal);
    std::fs::copy(donor.join(&manifest), dir.join("MANIFEST-000002")).unwrap();
    takes_writes(&dir);
    assert!(
        !dir.join("000001.log").exists(),
        "the creation's WAL is cleaned up: {:?}",
        names(&dir)
    );
}

#[test]
fn a_wal_holding_a_record_without_current_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let storage = FsStorage::new();
    type Case<'a> = (&'a str, &'a dyn Fn(&Path));
    let cases: [Case; 2] = [
        ("a CRC-valid record followed by zeros", &|path| {
            let mut w = siftdb::testing::WalWriter::new(storage.create(path).unwrap());
            w.add_record(b"any payload").unwrap();
            w.sync().unwrap();
            drop(w);
            let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            f.set_len(1 << 20).unwrap();
        }),
        ("bytes that are no record", &|path| std::fs::write(path, [0xA5u8; 300]).unwrap()),
    ];
    for (i, (what, make)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("db{i}"));
        std::fs::create_dir(&dir).unwrap();
        make(&dir.join("000001.log"));
        let before = names(&dir);
        match Db::open(&dir, Options::default()) {
            Err(Error::Corruption { what: msg, .. }) => {
                assert!(msg.contains("000001.log"), "{what}: {msg}")
            }
            other => panic!("{what}: expected corruption, got {:?}", other.map(|_| ())),
        }
        assert_eq!(names(&dir), before, "{what}: the directory is left as it was");
    }
}

/// Replaces the manifest of the closed database `dir` with one whose snapshot holds the live
/// files as `change` rearranges them (CRC-valid: written with the engine's log writer), and
/// points CURRENT at it.
fn forge_manifest(dir: &Path, change: impl FnOnce(&mut Vec<(u32, FileMeta)>)) -> String {
    let storage = FsStorage::new();
    let state = recover(&storage, dir).unwrap().expect("a database");
    let mut added: Vec<(u32, FileMeta)> = state
        .levels
        .iter()
        .enumerate()
        .flat_map(|(l, files)| files.values().map(move |m| (l as u32, m.clone())))
        .collect();
    change(&mut added);
    let number = state.next_file_number;
    let edit = VersionEdit {
        log_number: Some(state.log_number),
        next_file_number: Some(number + 1),
        last_sequence: Some(state.last_sequence),
        added,
        keyspaces: state.keyspaces.values().cloned().collect(),
        dropped_keyspaces: state.dropped_keyspaces.iter().copied().collect(),
        ..VersionEdit::default()
    };
    let name = common::write_manifest(dir, &edit, number);
    let again = recover(&storage, dir).unwrap().unwrap();
    assert_eq!(again.manifest_number, number, "the forged manifest replays");
    name
}

fn ssts(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|n| matches!(parse_file_name(n), Some((FileKind::Sst, _))))
        .collect()
}

#[test]
fn a_table_on_a_level_this_build_lacks_is_corruption_and_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, Options::default()).unwrap();
    db.put("a", "precious").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let mut number = 0;
    let manifest = forge_manifest(&dir, |files| {
        assert_eq!(files.len(), 1);
        files[0].0 = 8;
        number = files[0].1.number;
    });
    let before = names(&dir);
    match Db::open(&dir, Options::default()) {
        Err(Error::Corruption { file, what, .. }) => {
            assert!(what.contains(&sst_name(number)) && what.contains("level 8"), "{what}");
            assert!(file.unwrap().ends_with(&manifest));
        }
        other => panic!("expected corruption, got {:?}", other.map(|_| ())),
    }
    assert!(dir.join(sst_name(number)).exists(), "the table stays: {:?}", names(&dir));
    assert_eq!(names(&dir), before, "a refused open changes nothing");
}

/// Two flushes of `dir`'s database into L0 (a keyspace `ks` when `keyspace`), the first holding
/// `first` keys, the second `second`; closed.
fn two_tables(dir: &Path, first: &[&str], second: &[&str], keyspace: bool) {
    let db = Db::open(dir, Options::default()).unwrap();
    for (i, keys) in [first, second].iter().enumerate() {
        let ks =
            (keyspace && i == 1).then(|| db.keyspace("ks", KeyspaceOptions::default()).unwrap());
        for k in *keys {
            match &ks {
                Some(ks) => ks.put(k, format!("v{i}")).unwrap(),
                None => db.put(k, format!("v{i}")).unwrap(),
            }
        }
        db.flush().unwrap();
    }
    drop(db);
}

fn to_level_1(files: &mut [(u32, FileMeta)]) {
    assert_eq!(files.len(), 2);
    for f in files.iter_mut() {
        f.0 = 1;
    }
}

#[test]
fn overlapping_tables_on_a_sorted_level_are_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    two_tables(&dir, &["a", "m"], &["c", "z"], false);
    let manifest = forge_manifest(&dir, |f| to_level_1(f));
    let before = names(&dir);
    match Db::open(&dir, Options::default()) {
        Err(Error::Corruption { file, what, .. }) => {
            assert!(what.contains("overlap") && what.contains("level 1"), "{what}");
            assert!(file.unwrap().ends_with(&manifest));
        }
        other => panic!("expected corruption, got {:?}", other.map(|_| ())),
    }
    assert_eq!(names(&dir), before, "a refused open changes nothing");
    assert_eq!(ssts(&dir).len(), 2);
}

#[test]
fn disjoint_tables_on_a_sorted_level_open_including_equal_keys_of_two_keyspaces() {
    let tmp = tempfile::tempdir().unwrap();
    // Same keyspace, disjoint ranges; then the same user keys in two keyspaces (ordered by
    // keyspace first, so disjoint).
    for (i, (second, keyspace)) in
        [(&["n", "z"][..], false), (&["a", "m"][..], true)].into_iter().enumerate()
    {
        let dir = tmp.path().join(format!("db{i}"));
        two_tables(&dir, &["a", "m"], second, keyspace);
        forge_manifest(&dir, |f| to_level_1(f));
        let db = Db::open(&dir, Options::default()).expect("disjoint files open");
        assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"v0"[..]));
        let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
        let want = if keyspace { Some(&b"v1"[..]) } else { None };
        assert_eq!(ks.get("m").unwrap().as_deref(), want);
        if !keyspace {
            assert_eq!(db.get("z").unwrap().as_deref(), Some(&b"v1"[..]));
        }
    }
}

fn mem_options(storage: &MemStorage, create: bool) -> Options {
    Options { create_if_missing: create, ..common::mem_options(storage) }
}

#[test]
fn a_new_database_directory_survives_power_loss() {
    for dir in ["/a/b/db", "db", "c/db"] {
        let storage = MemStorage::new().with_volatile_directories();
        let db = Db::open(Path::new(dir), mem_options(&storage, true)).unwrap();
        put_synced(&db, "k", "v");
        storage.crash_drop_unsynced();
        drop(db);
        let db = Db::open(Path::new(dir), mem_options(&storage, false))
            .unwrap_or_else(|e| panic!("{dir}: the database is gone after a power loss: {e}"));
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]), "{dir}");
    }
}

#[test]
fn a_checkpoint_directory_survives_power_loss() {
    for target in ["cp", "/x/y/cp", "/cp", "z/cp"] {
        let storage = MemStorage::new().with_volatile_directories();
        let db = Db::open(Path::new("/db"), mem_options(&storage, true)).unwrap();
        put_synced(&db, "k", "v");
        db.checkpoint(Path::new(target)).unwrap();
        storage.crash_drop_unsynced();
        drop(db);
        let cp = Db::open(Path::new(target), mem_options(&storage, false))
            .unwrap_or_else(|e| panic!("{target}: the checkpoint is gone after a power loss: {e}"));
        assert_eq!(cp.get("k").unwrap().as_deref(), Some(&b"v"[..]), "{target}");
    }
}
