//! Bad input (issue 7): opening a directory that is not a siftdb database, a database whose
//! CURRENT was lost, or one written by a newer format version is a clear error that changes
//! nothing on disk (every file's name and bytes compared before and after). An empty or missing
//! directory is created; the leftovers of an interrupted creation are taken over.

use siftdb::storage::{MemStorage, Storage};
use siftdb::testing::WalWriter;
use siftdb::{Db, Options};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

mod common;
use common::contents;

/// Opens `dir` with `create_if_missing`, expecting an error that contains `needle`, and checks
/// the directory did not change.
fn refused(dir: &Path, needle: &str) {
    let before = contents(dir);
    let err = Db::open(dir, Options::default()).err().expect("open must fail");
    let msg = err.to_string();
    assert!(msg.contains(needle), "error {msg:?} does not say {needle:?}");
    assert_eq!(contents(dir), before, "a refused open changed the directory");
}

fn real_db(dir: &Path) {
    let db = Db::open(dir, Options { memtable_size: 1024, ..Options::default() }).unwrap();
    for i in 0..200 {
        db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    db.put("tail", "in the wal").unwrap();
}

fn file_with(dir: &Path, suffix: &str) -> std::path::PathBuf {
    let mut names: Vec<_> = contents(dir).into_keys().filter(|n| n.ends_with(suffix)).collect();
    names.sort();
    dir.join(names.last().expect("a file with that suffix"))
}

#[test]
fn a_directory_of_foreign_files_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), b"not a database").unwrap();
    std::fs::write(tmp.path().join("000001.bin"), [0u8; 100]).unwrap();
    refused(tmp.path(), "is not a siftdb database");
}

#[test]
fn a_database_without_current_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    real_db(tmp.path());
    std::fs::remove_file(tmp.path().join("CURRENT")).unwrap();
    refused(tmp.path(), "CURRENT is missing");
}

#[test]
fn a_table_of_a_newer_format_version_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    real_db(tmp.path());
    let sst = file_with(tmp.path(), ".sst");
    let mut bytes = std::fs::read(&sst).unwrap();
    // Footer: 64 bytes at the end; the version is the u32 at footer offset 48.
    let at = bytes.len() - 64 + 48;
    let newer = siftdb::inspect::sst::format::FORMAT_VERSION + 1;
    bytes[at..at + 4].copy_from_slice(&newer.to_le_bytes());
    std::fs::write(&sst, bytes).unwrap();
    refused(tmp.path(), "newer than this build supports");
}

#[test]
fn a_manifest_with_an_unknown_required_field_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    real_db(tmp.path());
    // One more edit holding required field tag 0x0042 (tags below 0x8000 must be understood),
    // framed as a log record (the framing does not depend on the offset inside a block).
    let mem = MemStorage::new();
    let p = Path::new("frame");
    let mut w = WalWriter::new(mem.create(p).unwrap());
    let mut field = 0x0042u16.to_le_bytes().to_vec();
    field.extend_from_slice(&0u32.to_le_bytes());
    w.add_record(&field).unwrap();
    let framed = mem.read_all(p).unwrap();
    let names = contents(tmp.path());
    let manifest = tmp.path().join(names.keys().find(|n| n.starts_with("MANIFEST-")).unwrap());
    assert!(std::fs::metadata(&manifest).unwrap().len() + (framed.len() as u64) < (32 << 10));
    std::fs::OpenOptions::new().append(true).open(&manifest).unwrap().write_all(&framed).unwrap();
    refused(tmp.path(), "unknown required field tag 66");
}

#[test]
fn an_empty_or_missing_directory_becomes_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("a/b");
    Db::open(&missing, Options::default()).unwrap().put("k", "v").unwrap();
    let db = Db::open(&missing, Options::default()).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    let empty = tempfile::tempdir().unwrap();
    Db::open(empty.path(), Options::default()).unwrap();
    assert!(empty.path().join("CURRENT").exists());
}

#[test]
fn leftovers_of_an_interrupted_creation_are_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("LOCK"), b"").unwrap();
    std::fs::write(tmp.path().join("000001.log"), b"").unwrap();
    std::fs::write(tmp.path().join("CURRENT.tmp"), b"MANIFEST-0000").unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    db.put("k", "v").unwrap();
}

#[test]
fn opening_without_create_if_missing_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options { create_if_missing: false, ..Options::default() };
    assert!(Db::open(tmp.path().join("nope"), opts.clone()).is_err());
    assert!(!tmp.path().join("nope").exists());
    let before = contents(tmp.path());
    assert!(Db::open(tmp.path(), opts).is_err());
    // The LOCK file is the one trace a refused open may leave in an empty directory.
    let after: BTreeMap<_, _> =
        contents(tmp.path()).into_iter().filter(|(n, _)| n != "LOCK").collect();
    assert_eq!(after, before);
}

#[test]
fn an_out_of_range_max_open_files_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    real_db(tmp.path());
    let before = contents(tmp.path());
    for bad in [0, 15, -2] {
        let opts = Options { max_open_files: bad, ..Options::default() };
        let msg = Db::open(tmp.path(), opts).err().expect("open must fail").to_string();
        assert!(msg.contains("max_open_files") && msg.contains(&bad.to_string()), "{msg}");
        assert!(msg.contains("-1") && msg.contains("16"), "names the valid range: {msg}");
        assert_eq!(contents(tmp.path()), before, "a refused open changed the directory");
        let missing = tmp.path().join("new");
        let opts = Options { max_open_files: bad, ..Options::default() };
        assert!(Db::open(&missing, opts).is_err());
        assert!(!missing.exists(), "a refused open created the directory");
    }
    let db = Db::open(tmp.path(), Options { max_open_files: 16, ..Options::default() }).unwrap();
    assert_eq!(db.get("k0007").unwrap().as_deref(), Some(&b"v7"[..]));
}
