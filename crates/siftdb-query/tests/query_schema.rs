//! Query layer: schemas survive a reopen, a wrong schema is a typed error, and damaged stored
//! bytes (column chunk, metadata) are typed corruption errors, never panics or wrong rows.

use siftdb::{Db, Error, Options};
use siftdb_query::*;

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", ColumnType::U64),
        Field::nullable("delta", ColumnType::I64),
        Field::new("score", ColumnType::F64),
        Field::nullable("name", ColumnType::Bytes),
    ])
    .unwrap()
}

fn columns(n: u64) -> Vec<Column> {
    vec![
        Column::new(ColumnData::U64((0..n).collect())),
        Column::with_validity(
            ColumnData::I64((0..n).map(|i| i as i64 - 50).collect()),
            (0..n).map(|i| i % 7 != 0).collect(),
        )
        .unwrap(),
        Column::new(ColumnData::F64((0..n).map(|i| i as f64 * 0.25).collect())),
        Column::with_validity(
            ColumnData::Bytes((0..n).map(|i| format!("n{i}").into_bytes()).collect()),
            (0..n).map(|i| i % 5 != 0).collect(),
        )
        .unwrap(),
    ]
}

fn all(t: &Table<'_>) -> siftdb::Result<ScanResult> {
    scan(
        t,
        &ScanSpec {
            predicates: vec![],
            projection: t.schema().fields.iter().map(|f| f.name.clone()).collect(),
        },
    )
}

#[test]
fn schema_and_chunks_round_trip_through_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let mut t =
            Table::create(&db, "t1", schema(), TableOptions { chunk_rows: 100, page_rows: 30 })
                .unwrap();
        t.append(&columns(250)).unwrap();
        assert_eq!(t.chunks().len(), 3);
        assert!(matches!(
            Table::create(&db, "t1", schema(), TableOptions::default()),
            Err(Error::InvalidArgument(_))
        ));
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let t = Table::open(&db, "t1", &schema()).unwrap();
    assert_eq!(t.schema(), &schema());
    assert_eq!(t.chunk_rows(), 100);
    assert_eq!(t.num_rows(), 250);
    let meta = &t.chunks()[0];
    assert_eq!(meta.columns[1].null_count, 15); // i % 7 == 0 for i in 0..100
    assert_eq!(meta.columns[0].min, Some(Value::U64(0)));
    assert_eq!(meta.columns[0].max, Some(Value::U64(99)));
    assert_eq!(meta.columns[3].min, Some(Value::Bytes(b"n1".to_vec())));
    let r = all(&t).unwrap();
    let want = columns(250);
    // Null slots read back as nulls (their stored payload is the type's default).
    for (got, want) in r.columns.iter().zip(&want) {
        assert_eq!(got.len(), want.len());
        assert!((0..want.len()).all(|i| got.get(i) == want.get(i)));
    }
    assert_eq!(Table::open_any(&db, "t1").unwrap().schema(), &schema());
}

#[test]
fn opening_with_wrong_types_is_an_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    Table::create(&db, "t", schema(), TableOptions::default()).unwrap();
    let mut wrong_type = schema();
    wrong_type.fields[2].ty = ColumnType::I64;
    let mut wrong_null = schema();
    wrong_null.fields[0].nullable = true;
    let mut fewer = schema();
    fewer.fields.pop();
    for s in [wrong_type, wrong_null, fewer] {
        match Table::open(&db, "t", &s) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains("t"), "{msg}"),
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }
    assert!(matches!(Table::open(&db, "missing", &schema()), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        Table::create(&db, "bad/name", schema(), TableOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn appending_mismatched_columns_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut t = Table::create(&db, "t", schema(), TableOptions::default()).unwrap();
    let mut cols = columns(10);
    cols[2] = Column::new(ColumnData::U64(vec![0; 10]));
    assert!(matches!(t.append(&cols), Err(Error::InvalidArgument(_))));
    let mut cols = columns(10);
    cols[0] = Column::with_validity(ColumnData::U64(vec![0; 10]), vec![false; 10]).unwrap();
    assert!(matches!(t.append(&cols), Err(Error::InvalidArgument(_))));
    assert_eq!(t.num_rows(), 0);
}

#[test]
fn corrupt_column_chunk_bytes_are_typed_corruption_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut t =
        Table::create(&db, "t", schema(), TableOptions { chunk_rows: 64, page_rows: 16 }).unwrap();
    t.append(&columns(64)).unwrap();
    let mut rng = siftdb::filter::rng::SplitMix64::new(8);
    for col in 0..4 {
        let key = t.column_chunk_key(0, col).unwrap();
        let good = t.column_chunk_bytes(0, col).unwrap().unwrap();
        let mut cases: Vec<Vec<u8>> =
            vec![Vec::new(), good[..good.len() / 2].to_vec(), good[..3].to_vec()];
        for _ in 0..20 {
            let mut bad = good.clone();
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] ^= 1 << rng.below(8);
            cases.push(bad);
        }
        let ks = t.keyspace().clone();
        for bad in cases {
            ks.put(&key, &bad).unwrap();
            let err = all(&t).expect_err("damaged chunk must fail the scan");
            assert!(err.is_corruption(), "{err}");
        }
        ks.put(&key, &good).unwrap();
        assert!(all(&t).is_ok());
    }
}

#[test]
fn corrupt_chunk_metadata_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut t =
        Table::create(&db, "t", schema(), TableOptions { chunk_rows: 64, page_rows: 16 }).unwrap();
    t.append(&columns(100)).unwrap();
    let ks = t.keyspace().clone();
    let mut key = b"m/".to_vec();
    key.extend_from_slice(&1u32.to_be_bytes());
    let good = ks.get(&key).unwrap().unwrap();
    for cut in [0, 1, good.len() / 2, good.len() - 1] {
        ks.put(&key, &good[..cut]).unwrap();
        assert!(Table::open(&db, "t", &schema()).unwrap_err().is_corruption());
    }
    let mut flipped = good.clone();
    flipped[5] ^= 0x10;
    ks.put(&key, &flipped).unwrap();
    assert!(Table::open(&db, "t", &schema()).unwrap_err().is_corruption());
    ks.put(b"s", b"SQS1garbage").unwrap();
    assert!(Table::open_any(&db, "t").unwrap_err().is_corruption());
}

#[test]
fn query_tables_live_outside_the_users_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("user", "key").unwrap();
    let mut t =
        Table::create(&db, "events", schema(), TableOptions { chunk_rows: 64, page_rows: 16 })
            .unwrap();
    t.append(&columns(200)).unwrap();
    // The user's scan sees only the user's keys, and a user key shaped like the old layout's
    // chunk metadata key cannot break the table.
    let mut legacy_meta = b"q/events/m/".to_vec();
    legacy_meta.extend_from_slice(&7u32.to_be_bytes());
    db.put(&legacy_meta, "not a chunk").unwrap();
    db.flush().unwrap();
    let user: Vec<Vec<u8>> =
        db.scan().unwrap().map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>().unwrap();
    assert_eq!(user, vec![legacy_meta.clone(), b"user".to_vec()]);
    let reopened = Table::open(&db, "events", &schema()).unwrap();
    assert_eq!(reopened.num_rows(), 200);
    assert_eq!(all(&reopened).unwrap().columns, all(&t).unwrap().columns);
    // Its keyspace is reserved: users cannot open it.
    assert!(db.keyspace("__query/events", siftdb::KeyspaceOptions::default()).is_err());
    assert!(db.keyspace_names().contains(&"__query/events".to_string()));
}
