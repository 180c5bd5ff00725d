//! Databases written by earlier builds still open: each committed fixture (tests/fixtures/format_vN,
//! written by examples/format_fixture.rs from the history in tests/fixtures/history.rs) is copied
//! to a temporary directory, opened with default options, and must hold exactly the history's
//! final state, through point lookups, a full scan, and after a compaction rewrites it in the
//! current format.

use siftdb::{Db, Options};
use std::path::Path;

include!("fixtures/history.rs");

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn assert_holds_the_model(db: &Db) {
    let model = fixture_model();
    for i in 0..2100 {
        let k = fixture_key(i);
        assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "key {}", i);
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|kv| kv.unwrap()).collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(scanned.len(), expected.len());
    assert!(scanned == expected, "a full scan differs from the model");
}

fn opens_with_its_contents(version: &str) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(version);
    assert!(fixture.join("CURRENT").exists(), "fixture {} is missing", fixture.display());
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    {
        let db = Db::open(dir.path(), Options { create_if_missing: false, ..Options::default() })
            .unwrap();
        assert_holds_the_model(&db);
        assert_eq!(db.keyspace_names(), vec!["default"]);
        db.compact().unwrap();
        assert_holds_the_model(&db);
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_holds_the_model(&db);
}

#[test]
fn a_database_written_in_format_v1_opens_with_its_contents() {
    opens_with_its_contents("format_v1");
}

#[test]
fn a_database_written_in_format_v2_with_lz4_tables_opens_with_its_contents() {
    opens_with_its_contents("format_v2");
}

#[test]
fn the_fixture_history_written_by_this_build_reads_back() {
    // The writer's own round trip, so a broken history or model cannot hide behind an old
    // fixture: the same steps through today's code give the same state.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), fixture_options(LATEST_FIXTURE)).unwrap();
        write_fixture_history(&db).unwrap();
        assert_holds_the_model(&db);
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_holds_the_model(&db);
}
