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

fn assert_holds_the_model(db: &Db, version: u32) {
    let model = fixture_model_in(version, "default");
    for i in 0..2100 {
        let k = fixture_key(i);
        assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "key {}", i);
    }
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|kv| kv.unwrap()).collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(scanned.len(), expected.len());
    assert!(scanned == expected, "a full scan differs from the model");
    if version < 3 {
        assert_eq!(db.keyspace_names(), vec!["default"]);
        return;
    }
    assert_eq!(db.keyspace_names(), vec!["default", FIXTURE_KEYSPACE]);
    let ks = db.existing_keyspace(FIXTURE_KEYSPACE).expect("the fixture's keyspace");
    let model = fixture_model_in(version, FIXTURE_KEYSPACE);
    let scanned: Vec<(Vec<u8>, Vec<u8>)> = ks.scan().unwrap().map(|kv| kv.unwrap()).collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(scanned == expected, "a scan of keyspace {FIXTURE_KEYSPACE} differs from the model");
    for k in model.keys().take(50) {
        assert_eq!(ks.get(k).unwrap().as_ref(), model.get(k), "key {:?}", k);
    }
    for i in 0..10 {
        let k = counter_key(i);
        assert_eq!(db.get(&k).unwrap(), fixture_model_in(version, "default").get(&k).cloned());
    }
}

/// The options a fixture is read with: the defaults, plus the merge operator its operands need.
fn read_options(version: u32) -> Options {
    let merge_operator = fixture_options(version).merge_operator;
    Options { merge_operator, ..Options::default() }
}

fn opens_with_its_contents(version: u32) {
    let name = format!("format_v{version}");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    assert!(fixture.join("CURRENT").exists(), "fixture {} is missing", fixture.display());
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    {
        let opts = Options { create_if_missing: false, ..read_options(version) };
        let db = Db::open(dir.path(), opts).unwrap();
        assert_holds_the_model(&db, version);
        db.compact().unwrap();
        assert_holds_the_model(&db, version);
    }
    let db = Db::open(dir.path(), read_options(version)).unwrap();
    assert_holds_the_model(&db, version);
}

/// The properties of every table a fixture's manifest names.
fn table_properties(fixture: &Path) -> Vec<siftdb::inspect::sst::TableProperties> {
    let storage = siftdb::storage::FsStorage::new();
    let state = siftdb::inspect::manifest::recover(&storage, fixture).unwrap().unwrap();
    let mut out = Vec::new();
    for meta in state.levels.iter().flat_map(|l| l.values()) {
        let path = fixture.join(siftdb::inspect::filename::sst_name(meta.number));
        let file = siftdb::storage::Storage::open(&storage, &path).unwrap();
        let t = siftdb::inspect::sst::Table::open(file, meta.number, None, &path).unwrap();
        out.push(t.properties().clone());
    }
    out
}

#[test]
fn a_database_written_in_format_v1_opens_with_its_contents() {
    opens_with_its_contents(1);
}

#[test]
fn a_database_written_in_format_v2_with_lz4_tables_opens_with_its_contents() {
    opens_with_its_contents(2);
}

#[test]
fn a_database_written_in_format_v3_with_keyspaces_merges_and_range_tombstones_opens() {
    opens_with_its_contents(3);
}

#[test]
fn a_database_written_in_format_v4_with_partitioned_filters_and_indexes_opens() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v4");
    // The fixture holds what it is for: a format-4 table whose filter and index are in
    // partitions.
    let mut partitioned = 0;
    for p in table_properties(&fixture) {
        if p.filter_partitions > 1 && p.index_partitions > 1 {
            assert_eq!(p.format_version, 4);
            partitioned += 1;
        }
    }
    assert!(partitioned > 0, "format_v4 has no table with a partitioned filter and index");
    opens_with_its_contents(4);
    // And read with the partitions in a tiny cache, evicted and read again.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let opts = Options {
        block_cache_bytes: 8 << 10,
        cache_index_and_filter_blocks: true,
        ..read_options(4)
    };
    assert_holds_the_model(&Db::open(dir.path(), opts).unwrap(), 4);
}

#[test]
fn a_database_written_in_format_v5_with_scan_filters_opens() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v5");
    // The fixture holds what it is for: format-5 tables with a prefix and a range filter.
    let mut with_filters = 0;
    for p in table_properties(&fixture) {
        if p.prefix_filter_block.size > 0 && p.range_filter_block.size > 0 {
            assert_eq!(p.format_version, 5);
            assert_eq!(p.prefix_extractor.as_deref(), Some("siftdb.FixedPrefix.4"));
            with_filters += 1;
        }
    }
    assert!(with_filters > 0, "format_v5 has no table with scan filters");
    // Read without the extractor (defaults), and with the options that wrote it: the scan
    // filters are used then, and bounded scans agree with the model.
    opens_with_its_contents(5);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let db = Db::open(dir.path(), fixture_options(5)).unwrap();
    assert_holds_the_model(&db, 5);
    let model = fixture_model_in(5, "default");
    for (lo, hi) in [(0u64, 3u64), (100, 140), (777, 778), (2_050, 2_300)] {
        let (a, b) = (fixture_key(lo), fixture_key(hi));
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            db.range(a.clone()..=b.clone()).unwrap().map(|kv| kv.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.range(a..=b).map(|(k, v)| (k.clone(), v.clone())).collect();
        assert!(got == want, "range {lo}..={hi} differs from the model");
    }
    assert_eq!(
        db.prefix("fx01").unwrap().count(),
        model.range(fixture_key(1000)..fixture_key(2000)).count()
    );
}

#[test]
fn a_database_written_in_format_v6_with_a_ttl_keyspace_and_a_compaction_filter_opens() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v6");
    // The fixture holds what it is for: format-6 tables with write times, and the keyspace
    // record's TTL and filter name.
    let with_times = table_properties(&fixture)
        .into_iter()
        .filter(|p| p.write_times.is_some())
        .inspect(|p| assert_eq!(p.format_version, 6))
        .count();
    assert!(with_times > 0, "format_v6 has no table with write times");
    let storage = siftdb::storage::FsStorage::new();
    let state = siftdb::inspect::manifest::recover(&storage, &fixture).unwrap().unwrap();
    let rec = state.keyspaces.values().find(|k| k.name == FIXTURE_KEYSPACE).unwrap();
    assert_eq!(rec.filter_name, "siftdb.fixture.keep_all");
    assert_eq!(rec.options.ttl, Some(FIXTURE_TTL));
    opens_with_its_contents(6);
    // Reopening the keyspace without its TTL is refused; with it, it reads the model.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let db = Db::open(dir.path(), read_options(6)).unwrap();
    assert!(db.keyspace(FIXTURE_KEYSPACE, siftdb::KeyspaceOptions::default()).is_err());
    let ks = db.keyspace(FIXTURE_KEYSPACE, fixture_keyspace_options(6, FIXTURE_KEYSPACE)).unwrap();
    assert_eq!(ks.scan().unwrap().count(), fixture_model_in(6, FIXTURE_KEYSPACE).len());
}

#[test]
fn a_database_written_in_format_v7_with_ingested_tables_opens() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v7");
    // The fixture holds what it is for: tables the manifest records with a global sequence
    // number (tag 9), one in L0 and one in the bottom level.
    let storage = siftdb::storage::FsStorage::new();
    let state = siftdb::inspect::manifest::recover(&storage, &fixture).unwrap().unwrap();
    let ingested: Vec<usize> = (0..state.levels.len())
        .flat_map(|l| state.levels[l].values().filter(|m| m.global_seq.is_some()).map(move |_| l))
        .collect();
    assert!(ingested.contains(&0) && ingested.contains(&6), "ingested tables at {ingested:?}");
    opens_with_its_contents(7);
}

#[test]
fn a_database_written_in_format_v8_with_blob_files_opens() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v8");
    // The fixture holds what it is for: blob files named by the manifest, format-7 tables.
    let blobs = std::fs::read_dir(&fixture)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".blob"))
        .count();
    assert!(blobs > 0, "format_v8 has no blob file");
    let storage = siftdb::storage::FsStorage::new();
    let state = siftdb::inspect::manifest::recover(&storage, &fixture).unwrap().unwrap();
    assert_eq!(state.blobs.len(), blobs, "every blob file is live");
    let v7 = table_properties(&fixture).into_iter().filter(|p| p.format_version == 7).count();
    assert!(v7 > 0, "format_v8 has no format-7 table");
    opens_with_its_contents(8);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let db = Db::open(dir.path(), read_options(8)).unwrap();
    let ks = db.keyspace(FIXTURE_KEYSPACE, fixture_keyspace_options(8, FIXTURE_KEYSPACE)).unwrap();
    assert_eq!(ks.scan().unwrap().count(), fixture_model_in(8, FIXTURE_KEYSPACE).len());
}

#[test]
fn a_database_written_in_format_v9_with_zstd_dictionaries_opens() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v9");
    // The fixture holds what it is for: format-8 tables with a zstd dictionary, beside older
    // ones without.
    let props = table_properties(&fixture);
    let with = props.iter().filter(|p| p.compression_dict_block.size > 0);
    assert!(with.clone().count() > 0, "format_v9 has no table with a dictionary");
    assert!(with.clone().all(|p| p.format_version == 8 && p.compression == 1));
    assert!(props.iter().any(|p| p.compression_dict_block.size == 0), "{props:?}");
    opens_with_its_contents(9);
}

#[test]
fn a_database_written_in_format_v10_with_adopted_tables_opens() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format_v10");
    // The fixture holds what it is for: tables of keyspace FIXTURE_KEYSPACE whose keys carry
    // another id, which the manifest records (tag 12), one in L0 and one in the bottom level.
    let storage = siftdb::storage::FsStorage::new();
    let state = siftdb::inspect::manifest::recover(&storage, &fixture).unwrap().unwrap();
    let id = state.keyspaces.values().find(|k| k.name == FIXTURE_KEYSPACE).unwrap().id;
    let mut levels = Vec::new();
    for (level, files) in state.levels.iter().enumerate() {
        for m in files.values().filter(|m| m.stored_keyspace.is_some()) {
            assert_eq!((m.keyspace, m.stored_keyspace), (id, Some(id + 1)));
            let path = fixture.join(siftdb::inspect::filename::sst_name(m.number));
            let file = siftdb::storage::Storage::open(&storage, &path).unwrap();
            let t = siftdb::inspect::sst::Table::open(file, m.number, None, &path).unwrap();
            assert_eq!(siftdb::inspect::ikey::keyspace(&t.properties().smallest_key), id + 1);
            levels.push(level);
        }
    }
    assert!(levels.contains(&0) && levels.contains(&6), "adopted tables at {levels:?}");
    opens_with_its_contents(10);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let db = Db::open(dir.path(), read_options(10)).unwrap();
    let ks = db.keyspace(FIXTURE_KEYSPACE, fixture_keyspace_options(10, FIXTURE_KEYSPACE)).unwrap();
    let model = fixture_model_in(10, FIXTURE_KEYSPACE);
    let back: Vec<(Vec<u8>, Vec<u8>)> = ks.scan().unwrap().rev().map(|kv| kv.unwrap()).collect();
    assert!(back.into_iter().rev().eq(model.into_iter()), "a reverse scan differs");
}

#[test]
fn the_fixture_history_written_by_this_build_reads_back() {
    // The writer's own round trip, so a broken history or model cannot hide behind an old
    // fixture: the same steps through today's code give the same state.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), fixture_options(LATEST_FIXTURE)).unwrap();
        write_fixture_history(&db, LATEST_FIXTURE).unwrap();
        assert_holds_the_model(&db, LATEST_FIXTURE);
    }
    let db = Db::open(dir.path(), read_options(LATEST_FIXTURE)).unwrap();
    assert_holds_the_model(&db, LATEST_FIXTURE);
}
