//! `IngestCheck::Metadata`: ingestion that reads a file's metadata blocks and not its data
//! blocks. What it accepts reads as `Full` would have it; what the properties show is refused
//! as `Full` refuses it; a damaged data block it let in is a corruption error when read, never
//! a wrong answer.

mod common;

use common::{ingest_options as opts, key6 as key};
use siftdb::{Db, Error, IngestCheck, IngestMode, IngestOptions};
use std::path::{Path, PathBuf};

fn metadata() -> IngestOptions {
    IngestOptions::with_mode(IngestMode::Copy).check(IngestCheck::Metadata)
}

fn write_file(db: &Db, path: &Path, keys: std::ops::Range<u64>) -> PathBuf {
    let mut w = db.sst_writer(path).unwrap();
    for i in keys {
        w.put(key(i), format!("value {i}")).unwrap();
    }
    w.finish().unwrap();
    path.to_path_buf()
}

#[test]
fn a_good_file_reads_back_whole_after_a_metadata_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    let a = write_file(&db, &dir.path().join("a.sst"), 0..500);
    let b = write_file(&db, &dir.path().join("b.sst"), 500..1000);
    let report = db.ingest(&[&a, &b], metadata()).unwrap();
    assert_eq!(report.files.iter().map(|f| f.entries).sum::<u64>(), 1000);
    for i in 0..1000 {
        assert_eq!(db.get(key(i)).unwrap(), Some(format!("value {i}").into_bytes()), "key {i}");
    }
    assert_eq!(db.scan().unwrap().count(), 1000);
}

#[test]
fn what_the_properties_show_is_refused_and_a_damaged_block_is_found_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    let p = |n: &str| dir.path().join(n);

    // A table of the engine's own: its properties give its entries' real sequence numbers.
    db.put(key(7000), "flushed").unwrap();
    db.flush().unwrap();
    let own = common::any_table(&dir.path().join("db"));
    std::fs::copy(&own, p("own.sst")).unwrap();
    let e = db.ingest(&[p("own.sst")], metadata()).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("sequence")), "{e}");

    // Not a table: its footer is checked.
    std::fs::write(p("mine.txt"), "not a table, and long enough to hold a footer's bytes").unwrap();
    let e = db.ingest(&[p("mine.txt")], metadata()).unwrap_err();
    assert!(e.is_corruption(), "{e}");

    // One flipped byte in the first data block: the full check refuses the file; the metadata
    // check does not read that block, and the read that does reports it.
    let good = write_file(&db, &p("good.sst"), 0..100);
    let mut bytes = std::fs::read(&good).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(p("damaged.sst"), &bytes).unwrap();
    let full = IngestOptions::with_mode(IngestMode::Copy);
    assert!(db.ingest(&[p("damaged.sst")], full).unwrap_err().is_corruption());
    db.ingest(&[p("damaged.sst")], metadata()).unwrap();
    let e = db.get(key(0)).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert_eq!(db.get(key(7000)).unwrap(), Some(b"flushed".to_vec()));
}

#[test]
fn a_table_of_blob_references_is_refused_by_either_check() {
    let dir = tempfile::tempdir().unwrap();
    let with_blobs = siftdb::Options { blob_threshold: Some(16), ..opts() };
    let source = Db::open(dir.path().join("source"), with_blobs).unwrap();
    for i in 0..50 {
        source.put(key(i), vec![b'v'; 100]).unwrap();
    }
    source.flush().unwrap();
    // Compacted to the bottom with no snapshot: every entry at sequence 0, so nothing but the
    // blob references tells this table from one SstWriter wrote.
    source.compact().unwrap();
    let table = common::any_table(&dir.path().join("source"));
    let copy = dir.path().join("refs.sst");
    std::fs::copy(&table, &copy).unwrap();

    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    for check in [IngestCheck::Metadata, IngestCheck::Full] {
        let o = IngestOptions::with_mode(IngestMode::Copy).check(check);
        let e = db.ingest(&[&copy], o).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("blob reference")),
            "{check:?}: {e}"
        );
    }
    assert_eq!(db.get(key(0)).unwrap(), None);
}
