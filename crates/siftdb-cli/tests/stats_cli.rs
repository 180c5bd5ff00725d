//! `siftdb stats DB` counts the writes still in the WAL, not only those in tables.

use siftdb::{Db, Options};
use std::process::Command;

/// The `WAL` row and the `total` line of `siftdb stats dir`.
fn stats(dir: &std::path::Path) -> (Vec<String>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .arg("stats")
        .arg(dir)
        .output()
        .expect("run siftdb stats");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let wal = stdout.lines().find(|l| l.starts_with("WAL ")).expect("a WAL row");
    let total = stdout.lines().find(|l| l.starts_with("total:")).expect("a total line");
    (wal.split_whitespace().map(String::from).collect(), total.to_string())
}

#[test]
fn stats_of_a_fresh_database_with_unflushed_writes_counts_the_wal_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    for i in 0..150u32 {
        db.put(i.to_be_bytes(), b"value").unwrap();
    }
    for i in 0..20u32 {
        db.delete(i.to_be_bytes()).unwrap();
    }
    // Read beside the running database (stats takes no lock), then after it closed.
    let check = |when: &str| {
        let (wal, total) = stats(tmp.path());
        // WAL files bytes entries tombstones
        assert_eq!(wal[3], "170", "{when}: {wal:?}");
        assert_eq!(wal[4], "20", "{when}: {wal:?}");
        assert!(total.contains("170 entries (170 in the WAL"), "{when}: {total}");
    };
    check("open");
    db.close().unwrap();
    check("closed");
}

#[test]
fn stats_after_a_flush_counts_the_table_and_an_empty_wal() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    for i in 0..100u32 {
        db.put(i.to_be_bytes(), b"value").unwrap();
    }
    db.flush().unwrap();
    db.put(b"late", b"v").unwrap();
    db.close().unwrap();
    let (wal, total) = stats(tmp.path());
    assert_eq!(wal[3], "1", "{wal:?}");
    assert!(total.contains("101 entries (1 in the WAL"), "{total}");
}
