//! One basic sequence of storage operations run against both implementations, so the in-memory
//! file system the engine's crash tests use behaves like the real one where both are defined.

use super::{FsStorage, MemStorage, Storage};
use crate::error::Error;
use std::path::Path;

fn basic_sequence(s: &dyn Storage, root: &Path) {
    let dir = root.join("db");
    s.create_dir_all(&dir).unwrap();
    assert!(s.exists(&dir).unwrap());
    assert_eq!(s.list(&dir).unwrap(), Vec::<String>::new());

    // create, append, sync, read back
    let a = dir.join("a.log");
    let mut w = s.create(&a).unwrap();
    assert!(w.is_empty());
    w.append(b"hello ").unwrap();
    w.append(b"world").unwrap();
    w.sync().unwrap();
    assert_eq!(w.len(), 11);
    drop(w);
    s.sync_dir(&dir).unwrap();
    let r = s.open(&a).unwrap();
    assert_eq!(r.len(), 11);
    assert_eq!(r.read_at(6, 5).unwrap(), b"world");
    let past_end = r.read_at(8, 4).unwrap_err();
    assert!(past_end.is_corruption(), "{past_end}");
    assert!(past_end.to_string().contains("a.log"), "{past_end}");
    drop(r);

    // rename, list
    let b = dir.join("b.log");
    s.rename(&a, &b).unwrap();
    assert!(!s.exists(&a).unwrap());
    assert_eq!(s.list(&dir).unwrap(), vec!["b.log".to_string()]);
    assert_eq!(s.read_all(&b).unwrap(), b"hello world");

    // rename over an existing file replaces it
    let c = dir.join("c.tmp");
    let mut w = s.create(&c).unwrap();
    w.append(b"new").unwrap();
    w.sync().unwrap();
    drop(w);
    s.rename(&c, &b).unwrap();
    assert_eq!(s.list(&dir).unwrap(), vec!["b.log".to_string()]);
    assert_eq!(s.read_all(&b).unwrap(), b"new");

    // truncate
    let mut w = s.create(&a).unwrap();
    w.append(b"0123456789").unwrap();
    drop(w);
    s.truncate(&a, 4).unwrap();
    assert_eq!(s.read_all(&a).unwrap(), b"0123");

    // remove; missing files are I/O errors naming the path
    s.remove(&b).unwrap();
    assert_eq!(s.list(&dir).unwrap(), vec!["a.log".to_string()]);
    let missing = s.open(&b).err().unwrap();
    assert!(matches!(missing, Error::Io { .. }) && missing.to_string().contains("b.log"));
    assert!(matches!(s.remove(&b), Err(Error::Io { .. })));
    assert!(matches!(s.create(&dir.join("no/such/dir")), Err(Error::Io { .. })));
    s.sync_dir(&dir).unwrap();

    // lock exclusivity
    let lock_path = dir.join("LOCK");
    let guard = s.lock(&lock_path).unwrap();
    match s.lock(&lock_path) {
        Err(Error::Locked(p)) => assert_eq!(p, lock_path),
        other => panic!("second lock must fail with Locked, got {:?}", other.err()),
    }
    drop(guard);
    let again = s.lock(&lock_path).unwrap();
    drop(again);
    assert_eq!(s.list(&dir).unwrap(), vec!["LOCK".to_string(), "a.log".to_string()]);
}

#[test]
fn fs_storage_passes_the_basic_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    basic_sequence(&FsStorage::new(), tmp.path());
}

#[test]
fn mem_storage_passes_the_basic_sequence() {
    basic_sequence(&MemStorage::new(), Path::new("/tmp/siftdb-mem"));
}
