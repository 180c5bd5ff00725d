//! Tables written by earlier builds still read: each committed fixture (tests/fixtures/query_vN,
//! written by examples/query_fixture.rs from tests/fixtures/query_history.rs) is copied to a
//! temporary directory and opened; a full scan must return exactly the history's rows, a
//! predicate scan exactly the matching ones, and rows appended by this build to the old table
//! must read back next to the old ones.

use siftdb::{Db, Options};
use siftdb_query::*;
use std::path::Path;

include!("fixtures/query_history.rs");

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn all_columns() -> Vec<String> {
    query_fixture_schema().fields.iter().map(|f| f.name.clone()).collect()
}

/// The rows of `cols` at `rows`, as columns of the same types.
fn take(cols: &[Column], rows: &[usize]) -> Vec<Column> {
    cols.iter()
        .map(|c| {
            let data = match &c.data {
                ColumnData::U64(v) => ColumnData::U64(rows.iter().map(|&i| v[i]).collect()),
                ColumnData::I64(v) => ColumnData::I64(rows.iter().map(|&i| v[i]).collect()),
                ColumnData::F64(v) => ColumnData::F64(rows.iter().map(|&i| v[i]).collect()),
                ColumnData::Bytes(v) => {
                    ColumnData::Bytes(rows.iter().map(|&i| v[i].clone()).collect())
                }
            };
            match &c.validity {
                Some(val) => {
                    Column::with_validity(data, rows.iter().map(|&i| val[i]).collect()).unwrap()
                }
                None => Column::new(data),
            }
        })
        .collect()
}

fn check_table(t: &Table<'_>, expected: &[Column]) {
    let all = scan(t, &ScanSpec { predicates: vec![], projection: all_columns() }).unwrap();
    assert_eq!(all.columns, expected, "a full scan differs from the fixture's rows");
    // delta BETWEEN -20 AND 20 (nulls never match), with every column projected.
    let p = between("delta", Value::I64(-20), Value::I64(20));
    let rows: Vec<usize> =
        (0..expected[0].len()).filter(|&i| p.matches(&expected[1].get(i))).collect();
    assert!(!rows.is_empty());
    let r = scan(t, &ScanSpec { predicates: vec![p], projection: all_columns() }).unwrap();
    assert_eq!(r.columns, take(expected, &rows), "a predicate scan differs");
    assert_eq!(r.row_ids, rows.iter().map(|&i| i as u64).collect::<Vec<_>>());
    // A point predicate on a bytes column goes through the chunk filters.
    let p = eq("tag", Value::Bytes(b"tag-4".to_vec()));
    let rows: Vec<usize> =
        (0..expected[0].len()).filter(|&i| p.matches(&expected[3].get(i))).collect();
    let r = scan(t, &ScanSpec { predicates: vec![p], projection: vec!["id".into()] }).unwrap();
    assert_eq!(r.columns, take(&expected[..1], &rows));
}

fn reads_with_its_rows(name: &str) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    assert!(fixture.join("CURRENT").exists(), "fixture {} is missing", fixture.display());
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture, dir.path());
    let opts = Options { create_if_missing: false, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    let expected = query_fixture_columns();
    let mut t = Table::open(&db, QUERY_FIXTURE_TABLE, &query_fixture_schema()).unwrap();
    assert_eq!(t.num_rows(), QUERY_FIXTURE_ROWS);
    assert_eq!(t.chunk_rows(), QUERY_FIXTURE_CHUNK_ROWS);
    let page_rows = if name == "query_v1" { DEFAULT_PAGE_ROWS } else { QUERY_FIXTURE_PAGE_ROWS };
    assert_eq!(t.page_rows(), page_rows);
    check_table(&t, &expected);

    // This build appends to the old table; old and new chunks read together.
    t.append(&expected).unwrap();
    let twice: Vec<usize> = (0..expected[0].len()).chain(0..expected[0].len()).collect();
    let expected2 = take(&expected, &twice);
    check_table(&t, &expected2);
    drop(t);
    let t = Table::open(&db, QUERY_FIXTURE_TABLE, &query_fixture_schema()).unwrap();
    check_table(&t, &expected2);
}

#[test]
fn query_v1_fixture_reads() {
    reads_with_its_rows("query_v1");
}

#[test]
fn query_v2_fixture_reads() {
    reads_with_its_rows("query_v2");
}
