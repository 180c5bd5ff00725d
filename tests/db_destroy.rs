//! `Db::destroy`: deletes a database's own files and nothing else, and refuses, touching nothing,
//! a directory that is not a database or a database that is open.

use siftdb::storage::MemStorage;
use siftdb::{Db, Error, Options};
use std::path::Path;
use std::sync::Arc;

mod common;
use common::tree_snapshot::snapshot;

/// A database with tables, a WAL holding unflushed writes and a manifest.
fn make_db(dir: &Path) {
    let db = Db::open(dir, Options { memtable_size: 4096, ..Options::default() }).unwrap();
    for i in 0..300u32 {
        db.put(i.to_be_bytes(), [1u8; 50]).unwrap();
    }
    db.flush().unwrap();
    db.put(b"unflushed", b"v").unwrap();
}

#[test]
fn destroy_removes_every_database_file_and_the_then_empty_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(".sst")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with(".log")), "{names:?}");
    Db::destroy(&dir).unwrap();
    assert!(!dir.exists(), "the emptied directory is removed");
    assert!(tmp.path().exists(), "the parent stays");
}

#[test]
fn destroy_keeps_foreign_files_and_subdirectories_and_then_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    std::fs::write(dir.join("precious.txt"), b"keep me").unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub").join("000001.sst"), b"not a table of this database").unwrap();
    // Near misses of siftdb's names are not siftdb's.
    std::fs::write(dir.join("1.log"), b"x").unwrap();
    std::fs::write(dir.join("current"), b"y").unwrap();
    Db::destroy(&dir).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["1.log", "current", "precious.txt", "sub"]);
    assert_eq!(std::fs::read(dir.join("precious.txt")).unwrap(), b"keep me");
    assert_eq!(
        std::fs::read(dir.join("sub").join("000001.sst")).unwrap(),
        b"not a table of this database"
    );
}

#[test]
fn destroy_refuses_a_foreign_directory_and_leaves_it_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("home");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("precious.txt"), b"x").unwrap();
    // Files with siftdb's names but no CURRENT: not a database.
    std::fs::write(dir.join("000003.sst"), b"looks like a table").unwrap();
    std::fs::write(dir.join("000004.log"), b"looks like a WAL").unwrap();
    std::fs::write(dir.join("sub").join("a"), b"y").unwrap();
    let before = snapshot(&dir);
    match Db::destroy(&dir) {
        Err(Error::NotADatabase { dir: d, why }) => {
            assert_eq!(d, dir);
            assert!(why.contains("CURRENT"), "{why}");
        }
        other => panic!("expected NotADatabase, got {other:?}"),
    }
    assert_eq!(snapshot(&dir), before);
    assert!(!dir.join("LOCK").exists());
}

#[test]
fn destroy_refuses_a_database_whose_manifest_does_not_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    std::fs::write(dir.join(current.trim()), b"garbage, not a manifest record").unwrap();
    let before = snapshot(&dir);
    let err = Db::destroy(&dir).unwrap_err();
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
    assert!(err.to_string().contains("manifest"), "{err}");
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn destroy_refuses_a_missing_directory_and_a_plain_file() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nothing");
    assert!(matches!(Db::destroy(&missing), Err(Error::NotADatabase { .. })));
    assert!(!missing.exists());
    let file = tmp.path().join("file");
    std::fs::write(&file, b"data").unwrap();
    assert!(matches!(Db::destroy(&file), Err(Error::NotADatabase { .. })));
    assert_eq!(std::fs::read(&file).unwrap(), b"data");
}

#[test]
fn destroy_refuses_an_open_database_and_leaves_it_working() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    make_db(&dir);
    let db = Db::open(&dir, Options::default()).unwrap();
    // Opening may start a compaction of make_db's L0 files; the snapshot is of a settled tree.
    db.wait_for_compactions().unwrap();
    let before = snapshot(&dir);
    assert!(matches!(Db::destroy(&dir), Err(Error::Locked(_))));
    assert_eq!(snapshot(&dir), before);
    assert_eq!(db.get(b"unflushed").unwrap(), Some(b"v".to_vec()));
    drop(db);
    Db::destroy(&dir).unwrap();
    assert!(!dir.exists());
}

#[test]
fn destroy_with_goes_through_the_configured_storage() {
    let mem = MemStorage::new();
    let opts = Options { storage: Some(Arc::new(mem.clone())), ..Options::default() };
    let dir = Path::new("/db");
    {
        let db = Db::open(dir, opts.clone()).unwrap();
        db.put(b"k", b"v").unwrap();
    }
    use siftdb::storage::Storage;
    assert!(mem.exists(&dir.join("CURRENT")).unwrap());
    Db::destroy_with(dir, &opts).unwrap();
    assert!(!mem.exists(dir).unwrap());
    // A fresh database can be created in its place, and it is empty.
    let db = Db::open(dir, opts).unwrap();
    assert_eq!(db.get(b"k").unwrap(), None);
}
