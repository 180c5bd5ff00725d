//! `Db::open_read_only`: recovers what `Db::open` would, writes nothing, refuses every mutation
//! with `Error::ReadOnly`, and needs neither the LOCK nor write permission.

use siftdb::storage::{DirLock, FsStorage, RandomAccessFile, Storage, WritableFile};
use siftdb::{Db, Error, Options, Result, WriteBatch, WriteOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;
use common::contents;

fn newest_wal(dir: &Path) -> PathBuf {
    let mut wals: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    wals.sort();
    wals.pop().unwrap()
}

/// A database with flushed keys `a*`, WAL-only keys `w*`, and a newest WAL whose last record
/// (key `torn`) is cut in half.
fn build(dir: &Path) {
    let db = Db::open(dir, Options::default()).unwrap();
    for i in 0..100 {
        db.put(format!("a{i:03}"), format!("flushed{i}")).unwrap();
    }
    db.flush().unwrap();
    for i in 0..50 {
        db.put(format!("w{i:03}"), format!("wal{i}")).unwrap();
    }
    db.delete("a000").unwrap();
    db.put("torn", vec![7u8; 300]).unwrap();
    db.close().unwrap();
    let wal = newest_wal(dir);
    let len = std::fs::metadata(&wal).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    f.set_len(len - 100).unwrap();
}

fn check_reads(db: &Db) {
    assert_eq!(db.get("a001").unwrap(), Some(b"flushed1".to_vec()));
    assert_eq!(db.get("a000").unwrap(), None, "a WAL-only tombstone is replayed");
    assert_eq!(db.get("w049").unwrap(), Some(b"wal49".to_vec()), "WAL-only writes are read");
    assert_eq!(db.get("torn").unwrap(), None, "the torn record is not replayed");
    assert_eq!(db.scan().unwrap().count(), 99 + 50);
}

#[test]
fn a_read_only_open_reads_the_wal_and_changes_no_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build(&dir);
    let before = contents(&dir);
    assert!(before.contains_key("LOCK"));
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    let before = contents(&dir);

    let db = Db::open_read_only(&dir, Options::default()).unwrap();
    check_reads(&db);
    let snap = db.snapshot();
    assert_eq!(snap.get("w000").unwrap(), Some(b"wal0".to_vec()));
    drop(snap);
    db.close().unwrap();
    assert_eq!(contents(&dir), before, "no file created, removed or changed (not even LOCK)");

    // A second read-only open over the same bytes, then dropped instead of closed.
    let db = Db::open_read_only(&dir, Options::default()).unwrap();
    check_reads(&db);
    drop(db);
    assert_eq!(contents(&dir), before);

    // The normal open recovers the same state (and cuts the torn tail: it writes).
    let db = Db::open(&dir, Options::default()).unwrap();
    check_reads(&db);
}

fn assert_read_only<T: std::fmt::Debug>(what: &str, r: Result<T>) {
    match r {
        Err(Error::ReadOnly(why)) => assert!(why.contains("opened read-only"), "{what}: {why}"),
        other => panic!("{what}: expected Error::ReadOnly, got {other:?}"),
    }
}

#[test]
fn every_mutating_call_of_a_read_only_database_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = Db::open(&dir, Options::default()).unwrap();
        db.put("k", "v").unwrap();
        let ks = db.keyspace("other", siftdb::KeyspaceOptions::default()).unwrap();
        ks.put("x", "1").unwrap();
        db.close().unwrap();
    }
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    let before = contents(&dir);
    let add = Arc::new(siftdb::U64AddOperator);
    let db = Db::open_read_only(&dir, Options { merge_operator: Some(add), ..Options::default() })
        .unwrap();
    assert_read_only("put", db.put("k", "w"));
    assert_read_only("merge", db.merge("k", 1u64.to_le_bytes()));
    assert_read_only("delete", db.delete("k"));
    assert_read_only("delete_range", db.delete_range("a".."z"));
    let mut b = WriteBatch::new();
    b.put("b", "1");
    assert_read_only("write", db.write(b));
    assert_read_only(
        "empty synced write",
        db.write_opt(WriteBatch::new(), WriteOptions { sync: true }),
    );
    assert_read_only("flush", db.flush());
    assert_read_only("compact", db.compact());
    assert_read_only("compact_range", db.compact_range("a".."z"));
    assert_read_only("wait_for_compactions", db.wait_for_compactions());
    assert_read_only("sync_wal", db.sync_wal());
    let cp = tmp.path().join("cp");
    assert_read_only("checkpoint", db.checkpoint(&cp));
    assert!(!cp.exists());
    assert_read_only("new keyspace", db.keyspace("new", siftdb::KeyspaceOptions::default()));
    assert_read_only("drop_keyspace", db.drop_keyspace("other"));
    let ks = db.existing_keyspace("other").expect("existing keyspaces are readable");
    assert_eq!(ks.get("x").unwrap(), Some(b"1".to_vec()));
    assert_read_only("keyspace put", ks.put("x", "2"));
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()), "reads still work");
    drop(ks);
    db.close().unwrap();
    assert_eq!(contents(&dir), before);
}

#[test]
fn a_read_only_open_works_beside_a_writer_holding_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let writer = Db::open(tmp.path(), Options::default()).unwrap();
    writer.put("flushed", "1").unwrap();
    writer.flush().unwrap();
    writer.put("in-wal", "2").unwrap();
    assert!(matches!(Db::open(tmp.path(), Options::default()), Err(Error::Locked(_))));

    let reader = Db::open_read_only(tmp.path(), Options::default()).unwrap();
    assert_eq!(reader.get("flushed").unwrap(), Some(b"1".to_vec()));
    assert_eq!(reader.get("in-wal").unwrap(), Some(b"2".to_vec()));
    // The writer keeps going; the reader sees the state of its open.
    writer.put("later", "3").unwrap();
    assert_eq!(writer.get("later").unwrap(), Some(b"3".to_vec()));
    assert_eq!(reader.get("later").unwrap(), None);
    reader.close().unwrap();
    writer.put("after", "4").unwrap();
    writer.close().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    assert_eq!(db.get("after").unwrap(), Some(b"4".to_vec()));
    assert_eq!(db.get("in-wal").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn a_read_only_open_of_a_directory_without_a_database_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let r = Db::open_read_only(&missing, Options::default());
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{:?}", r.err());
    assert!(!missing.exists());
    let r = Db::open_read_only(tmp.path(), Options::default());
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{:?}", r.err());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// The real file system with every mutating call refused (and counted): a read-only mount as
/// the engine sees it, also for a test process that runs as root.
struct NoWrites {
    fs: FsStorage,
    attempts: AtomicUsize,
}

impl NoWrites {
    fn refuse<T>(&self, what: &str, path: &Path) -> Result<T> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let e = std::io::Error::new(std::io::ErrorKind::ReadOnlyFilesystem, "read-only mount");
        Err(Error::io(format!("{what} {}", path.display()), e))
    }
}

impl Storage for NoWrites {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.refuse("creating", path)
    }
    fn create_immutable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.refuse("creating", path)
    }
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.refuse("creating", path)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.fs.open(path)
    }
    fn open_immutable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.fs.open_immutable(path)
    }
    fn rename(&self, from: &Path, _to: &Path) -> Result<()> {
        self.refuse("renaming", from)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.refuse("removing", path)
    }
    fn truncate(&self, path: &Path, _len: u64) -> Result<()> {
        self.refuse("truncating", path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.fs.list(dir)
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        self.fs.exists(path)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.refuse("creating directory", dir)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.refuse("removing directory", dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.refuse("syncing directory", dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.refuse("syncing", path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>> {
        self.refuse("locking", path)
    }
    fn link_or_copy(&self, from: &Path, _to: &Path) -> Result<()> {
        self.refuse("linking", from)
    }
}

#[test]
fn a_read_only_open_makes_no_mutating_storage_call() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build(&dir);
    let before = contents(&dir);
    let storage = Arc::new(NoWrites { fs: FsStorage::new(), attempts: AtomicUsize::new(0) });
    let opts = Options { storage: Some(storage.clone()), ..Options::default() };
    let r = Db::open(&dir, opts.clone());
    assert!(matches!(r, Err(Error::Io { .. })), "the writable open needs writes");
    let attempts_by_open = storage.attempts.swap(0, Ordering::SeqCst);
    assert!(attempts_by_open > 0);
    let db = Db::open_read_only(&dir, opts).unwrap();
    check_reads(&db);
    assert_read_only("put", db.put("k", "v"));
    db.close().unwrap();
    assert_eq!(storage.attempts.load(Ordering::SeqCst), 0, "no mutating storage call");
    assert_eq!(contents(&dir), before);
}

#[test]
fn a_read_only_open_works_in_a_directory_without_write_permission() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    build(&dir);
    let before = contents(&dir);
    let set_mode = |mode: u32| {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode & 0o444)).unwrap();
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    set_mode(0o555);
    let probe = dir.join("probe");
    let enforced = std::fs::write(&probe, b"x").is_err();
    if !enforced {
        // Root ignores permissions: a_read_only_open_makes_no_mutating_storage_call covers
        // the refused writes through a storage that fails them.
        std::fs::remove_file(&probe).unwrap();
    }
    let db = Db::open_read_only(&dir, Options::default());
    let result = db.map(|db| {
        check_reads(&db);
        db.close()
    });
    // Without write permission the writable open fails (it must take the LOCK).
    let writable_refused = !enforced || Db::open(&dir, Options::default()).is_err();
    set_mode(0o755);
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    result.unwrap().unwrap();
    assert!(writable_refused);
    assert_eq!(contents(&dir), before);
}
