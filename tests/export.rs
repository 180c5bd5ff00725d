//! `Db::export` (design.md#ingestion-and-export): the live data of a range at one moment, as
//! files `Db::ingest` takes, in this database or another; merges resolved, tombstones dropped;
//! never into a directory holding files it did not write.

mod common;

use common::{ingest_options as opts, key6 as key};
use siftdb::{Db, Error, ExportOptions, IngestMode, IngestOptions, KeyspaceOptions};
use std::collections::BTreeMap;

#[test]
fn export_then_ingest_into_a_second_database_round_trips_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let src = Db::open(dir.path().join("src"), opts()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..5000u64 {
        let v = format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes();
        src.put(key(i), &v).unwrap();
        model.insert(key(i), v);
        if i % 1000 == 999 {
            src.flush().unwrap();
        }
    }
    src.compact().unwrap();
    for i in (0..5000).step_by(13) {
        src.delete(key(i)).unwrap();
        model.remove(&key(i));
    }
    src.delete_range(key(2000)..key(2100)).unwrap();
    for i in 2000..2100 {
        model.remove(&key(i));
    }
    for i in 4000..4010u64 {
        src.merge(key(i + 10_000), i.to_le_bytes()).unwrap();
        src.merge(key(i + 10_000), 1u64.to_le_bytes()).unwrap();
        model.insert(key(i + 10_000), (i + 1).to_le_bytes().to_vec());
    }
    let (lo, hi) = (key(1000), key(20_000));
    let out = dir.path().join("out/nested");
    let report = src
        .export(lo.clone()..hi.clone(), &out, &ExportOptions::with_target_file_size(32 << 10))
        .unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> =
        model.range(lo.clone()..hi.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(report.keys, want.len() as u64);
    assert!(report.files.len() >= 3, "cut at the target size: {} files", report.files.len());
    assert_eq!(report.bytes, report.files.iter().map(|f| f.file_size).sum::<u64>());
    // Writes after the export's moment are not in it.
    src.put(key(1500), "later").unwrap();

    let dst = Db::open(dir.path().join("dst"), opts()).unwrap();
    dst.put(key(999), "outside the range").unwrap();
    dst.put(key(1002), "overwritten by the ingestion").unwrap();
    let paths: Vec<_> = report.files.iter().map(|f| f.path.clone()).collect();
    dst.ingest(&paths, IngestOptions::with_mode(IngestMode::Copy)).unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> =
        dst.range(lo.clone()..hi.clone()).unwrap().map(|kv| kv.unwrap()).collect();
    assert!(got == want, "the ingested range differs ({} vs {} keys)", got.len(), want.len());
    assert_eq!(dst.get(key(999)).unwrap(), Some(b"outside the range".to_vec()));
    assert_eq!(dst.get(key(1500)).unwrap(), model.get(&key(1500)).cloned());
    assert_eq!(
        dst.get(key(14_005)).unwrap(),
        Some(4006u64.to_le_bytes().to_vec()),
        "merges arrive resolved"
    );
}

#[test]
fn a_keyspace_exports_into_the_same_name_in_another_database() {
    let dir = tempfile::tempdir().unwrap();
    let src = Db::open(dir.path().join("src"), opts()).unwrap();
    let _other = src.keyspace("first", KeyspaceOptions::default()).unwrap();
    let ks = src.keyspace("events", KeyspaceOptions::default()).unwrap();
    for i in 0..300 {
        ks.put(key(i), format!("e{i}")).unwrap();
    }
    let out = dir.path().join("out");
    let report = ks.export::<&[u8], _>(.., &out, &ExportOptions::default()).unwrap();
    assert_eq!((report.keys, report.files.len()), (300, 1));
    // In the second database "events" has another id.
    let dst = Db::open(dir.path().join("dst"), opts()).unwrap();
    let events = dst.keyspace("events", KeyspaceOptions::default()).unwrap();
    let paths: Vec<_> = report.files.iter().map(|f| f.path.clone()).collect();
    let r = events.ingest(&paths, IngestOptions::default()).unwrap();
    // Ids differ (2 there, 1 here), both non-zero: the file is adopted as it is.
    assert!(!r.files[0].rewritten && r.files[0].adopted_from == Some(2), "{r:?}");
    assert_eq!(events.scan().unwrap().count(), 300);
    assert_eq!(events.get(key(7)).unwrap(), Some(b"e7".to_vec()));
    assert_eq!(dst.scan().unwrap().count(), 0);
}

#[test]
fn export_refuses_a_directory_with_files_and_a_closed_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    db.put("a", "1").unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "user file").unwrap();
    let e = db.export::<&[u8], _>(.., &out, &ExportOptions::default()).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("not empty")), "{e}");
    assert_eq!(std::fs::read(out.join("keep.txt")).unwrap(), b"user file");
    // An empty range writes no file.
    let empty = dir.path().join("empty");
    let r = db.export(b"x".as_slice()..b"y".as_slice(), &empty, &ExportOptions::default()).unwrap();
    assert_eq!((r.keys, r.files.len()), (0, 0));
    let ks = db.keyspace("k", KeyspaceOptions::default()).unwrap();
    db.close().unwrap();
    let e = ks.export::<&[u8], _>(.., dir.path().join("late"), &ExportOptions::default());
    assert!(matches!(e, Err(Error::Closed)), "{e:?}");
}
