//! Parquet export and import of query tables (feature `parquet`, on for this crate's tests
//! through the dev-dependency on itself): a table of every column type, nulls, several chunks
//! (the last short) and several pages per chunk is exported and read back with the parquet
//! crate directly (values, nulls, row groups, statistics, page index, Bloom filters byte for
//! byte against siftdb's chunk filters), imported into a new table and scanned; bad input is
//! refused with typed errors.

use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::bloom_filter::Sbbf;
use parquet::column::reader::{get_typed_column_reader, ColumnReader};
use parquet::data_type::{ByteArray, ByteArrayType, DataType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::{ReaderProperties, WriterProperties};
use parquet::file::reader::{FileReader, RowGroupReader};
use parquet::file::serialized_reader::{ReadOptionsBuilder, SerializedFileReader};
use parquet::file::statistics::Statistics;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use siftdb::filter::rng::SplitMix64;
use siftdb::filter::SplitBlockBloom;
use siftdb::{Db, Error, Options};
use siftdb_query::*;
use std::path::Path;
use std::sync::Arc;

const ROWS: usize = 3_500;
const OPTS: TableOptions = TableOptions { chunk_rows: 1_000, page_rows: 128 };

fn schema() -> Schema {
    Schema::new(vec![
        Field::new("id", ColumnType::U64),
        Field::new("i", ColumnType::I64),
        Field::new("f", ColumnType::F64),
        Field::new("b", ColumnType::Bytes),
        Field::nullable("cat", ColumnType::Bytes),
        Field::nullable("nu", ColumnType::U64),
        Field::nullable("ni", ColumnType::I64),
        Field::nullable("nf", ColumnType::F64),
    ])
    .unwrap()
}

/// Deterministic rows: `u64`s above 2^63 (unsigned order matters), negative `i64`s, doubles
/// with both zeros and infinities, empty byte strings, a low-cardinality nullable column (so a
/// dictionary-encoded chunk), and a nullable column that is all null in chunk 1.
fn columns() -> Vec<Column> {
    let mut rng = SplitMix64::new(7);
    let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1.5e300, -2.5e-300];
    let mut id = Vec::new();
    let mut i = Vec::new();
    let mut f = Vec::new();
    let mut b = Vec::new();
    let (mut cat, mut cat_ok) = (Vec::new(), Vec::new());
    let (mut nu, mut nu_ok) = (Vec::new(), Vec::new());
    let (mut ni, mut ni_ok) = (Vec::new(), Vec::new());
    let (mut nf, mut nf_ok) = (Vec::new(), Vec::new());
    for r in 0..ROWS as u64 {
        id.push(r.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        i.push(rng.next_u64() as i64 >> 20);
        f.push(if r % 97 == 0 {
            specials[(r / 97) as usize % specials.len()]
        } else {
            (rng.below(1 << 20) as f64 - 5e5) / 3.0
        });
        b.push((0..rng.below(12)).map(|_| rng.below(256) as u8).collect::<Vec<u8>>());
        cat_ok.push(r % 7 != 3);
        cat.push(if r % 7 != 3 { format!("cat{}", rng.below(5)).into_bytes() } else { vec![] });
        nu_ok.push(r % 3 != 0);
        nu.push(if r % 3 != 0 { rng.next_u64() } else { 0 });
        let ni_present = !(1_000..2_000).contains(&r) && rng.below(4) != 0;
        ni_ok.push(ni_present);
        ni.push(if ni_present { rng.below(1000) as i64 - 500 } else { 0 });
        nf_ok.push(r % 5 != 1);
        nf.push(if r % 5 != 1 { rng.below(100) as f64 / 4.0 } else { 0.0 });
    }
    vec![
        Column::new(ColumnData::U64(id)),
        Column::new(ColumnData::I64(i)),
        Column::new(ColumnData::F64(f)),
        Column::new(ColumnData::Bytes(b)),
        Column::with_validity(ColumnData::Bytes(cat), cat_ok).unwrap(),
        Column::with_validity(ColumnData::U64(nu), nu_ok).unwrap(),
        Column::with_validity(ColumnData::I64(ni), ni_ok).unwrap(),
        Column::with_validity(ColumnData::F64(nf), nf_ok).unwrap(),
    ]
}

fn build(db: &Db) -> Table<'_> {
    let mut t = Table::create(db, "src", schema(), OPTS).unwrap();
    t.append(&columns()).unwrap();
    assert_eq!(t.chunks().len(), 4);
    assert_eq!(t.chunks()[3].rows, 500);
    t
}

fn reader(path: &Path) -> SerializedFileReader<std::fs::File> {
    let props = ReaderProperties::builder().set_read_bloom_filter(true).build();
    let opts = ReadOptionsBuilder::new().with_page_index().with_reader_properties(props).build();
    SerializedFileReader::new_with_options(std::fs::File::open(path).unwrap(), opts).unwrap()
}

/// Every row of column `k` of a row group, through the parquet crate's typed column readers.
fn read_values(rg: &dyn RowGroupReader, k: usize, f: &Field, rows: usize) -> Vec<Value> {
    fn all<T: DataType>(r: ColumnReader, rows: usize) -> (Vec<T::T>, Vec<i16>) {
        let mut r = get_typed_column_reader::<T>(r);
        let (mut v, mut d) = (Vec::new(), Vec::new());
        let (n, _, _) = r.read_records(rows + 1, Some(&mut d), None, &mut v).unwrap();
        assert_eq!(n, rows);
        (v, d)
    }
    let r = rg.get_column_reader(k).unwrap();
    let (vals, def): (Vec<Value>, Vec<i16>) = match f.ty {
        ColumnType::U64 => {
            let (v, d) = all::<Int64Type>(r, rows);
            (v.into_iter().map(|x| Value::U64(x as u64)).collect(), d)
        }
        ColumnType::I64 => {
            let (v, d) = all::<Int64Type>(r, rows);
            (v.into_iter().map(Value::I64).collect(), d)
        }
        ColumnType::F64 => {
            let (v, d) = all::<DoubleType>(r, rows);
            (v.into_iter().map(Value::F64).collect(), d)
        }
        ColumnType::Bytes => {
            let (v, d) = all::<ByteArrayType>(r, rows);
            (v.into_iter().map(|x| Value::Bytes(x.data().to_vec())).collect(), d)
        }
    };
    if !f.nullable {
        return vals;
    }
    assert_eq!(def.len(), rows);
    let mut it = vals.into_iter();
    def.iter().map(|&d| if d == 1 { it.next().unwrap() } else { Value::Null }).collect()
}

/// The same value with `f64`s compared by bits (so `-0.0 != 0.0`).
fn bits(v: Value) -> Value {
    match v {
        Value::F64(x) => Value::U64(x.to_bits()),
        v => v,
    }
}

fn stat_values(s: &Statistics, ty: ColumnType) -> (Option<Value>, Option<Value>) {
    match (s, ty) {
        (Statistics::Int64(s), ColumnType::U64) => {
            (s.min_opt().map(|&x| Value::U64(x as u64)), s.max_opt().map(|&x| Value::U64(x as u64)))
        }
        (Statistics::Int64(s), ColumnType::I64) => {
            (s.min_opt().map(|&x| Value::I64(x)), s.max_opt().map(|&x| Value::I64(x)))
        }
        (Statistics::Double(s), ColumnType::F64) => {
            (s.min_opt().map(|&x| Value::F64(x)), s.max_opt().map(|&x| Value::F64(x)))
        }
        (Statistics::ByteArray(s), ColumnType::Bytes) => (
            s.min_opt().map(|x| Value::Bytes(x.data().to_vec())),
            s.max_opt().map(|x| Value::Bytes(x.data().to_vec())),
        ),
        (s, ty) => panic!("statistics {s:?} for a {} column", ty.name()),
    }
}

/// siftdb's stored chunk filter of column `k` of chunk `c` as a Parquet bitset (key layout:
/// docs/format.md#query-storage).
fn siftdb_bitset(t: &Table<'_>, c: u32, k: u16) -> Vec<u8> {
    let mut key = b"f/".to_vec();
    key.extend_from_slice(&c.to_be_bytes());
    key.extend_from_slice(&k.to_be_bytes());
    let value = t.keyspace().get(&key).unwrap().expect("chunk filter stored");
    SplitBlockBloom::from_bytes(&value).unwrap().to_parquet_bitset()
}

fn all_columns(t: &Table<'_>) -> ScanResult {
    let projection = t.schema().fields.iter().map(|f| f.name.clone()).collect();
    scan(t, &ScanSpec { predicates: vec![], projection }).unwrap()
}

#[test]
fn export_reads_back_with_the_parquet_crate_and_imports() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let t = build(&db);
    let cols = columns();
    let path = dir.path().join("t.parquet");
    let st = t.export_parquet(&path).unwrap();
    let file = std::fs::read(&path).unwrap();
    assert_eq!((st.rows, st.row_groups, st.bytes), (ROWS as u64, 4, file.len() as u64));

    let r = reader(&path);
    let meta = r.metadata();
    assert_eq!(meta.num_row_groups(), t.chunks().len());
    assert_eq!(meta.file_metadata().num_rows(), ROWS as i64);
    let kv = meta.file_metadata().key_value_metadata().expect("key-value metadata");
    assert!(kv.iter().any(|e| e.key == "siftdb.table" && e.value.as_deref() == Some("src")));
    let s = schema();
    for (k, f) in s.fields.iter().enumerate() {
        let c = meta.file_metadata().schema_descr().column(k);
        assert_eq!(c.name(), f.name);
        let want = if f.nullable { Repetition::OPTIONAL } else { Repetition::REQUIRED };
        assert_eq!(c.self_type().get_basic_info().repetition(), want);
        let (physical, logical) = match f.ty {
            ColumnType::U64 => (PhysicalType::INT64, Some(LogicalType::integer(64, false))),
            ColumnType::I64 => (PhysicalType::INT64, None),
            ColumnType::F64 => (PhysicalType::DOUBLE, None),
            ColumnType::Bytes => (PhysicalType::BYTE_ARRAY, None),
        };
        assert_eq!((c.physical_type(), c.logical_type_ref()), (physical, logical.as_ref()));
    }
    let mut filters = 0;
    for (g, chunk) in t.chunks().iter().enumerate() {
        let rg = r.get_row_group(g).unwrap();
        let rows = chunk.rows as usize;
        assert_eq!(rg.metadata().num_rows(), rows as i64);
        let page_index = meta.page_index_for_row_group(g);
        for (k, f) in s.fields.iter().enumerate() {
            // Every value and null.
            let got = read_values(rg.as_ref(), k, f, rows);
            let first = chunk.first_row as usize;
            let want: Vec<Value> = (first..first + rows).map(|i| cols[k].get(i)).collect();
            assert_eq!(
                got.into_iter().map(bits).collect::<Vec<_>>(),
                want.into_iter().map(bits).collect::<Vec<_>>(),
                "row group {g} column {}",
                f.name
            );
            // Column chunk statistics equal the chunk metadata's.
            let m = &chunk.columns[k];
            let cm = rg.metadata().column(k);
            let stats = cm.statistics().expect("statistics");
            assert_eq!(stats.null_count_opt(), Some(m.null_count as u64), "{g} {}", f.name);
            assert_eq!(stats.distinct_count_opt(), Some(m.distinct as u64), "{g} {}", f.name);
            let (min, max) = stat_values(stats, f.ty);
            assert_eq!(
                (min.map(bits), max.map(bits)),
                (m.min.clone().map(bits), m.max.clone().map(bits)),
                "row group {g} column {}",
                f.name
            );
            // Page index: one page per page_rows rows.
            let pages = rows.div_ceil(OPTS.page_rows as usize);
            let locations = page_index.page_locations(k).expect("offset index");
            assert_eq!(locations.len(), pages, "row group {g} column {}", f.name);
            for (p, loc) in locations.iter().enumerate() {
                assert_eq!(loc.first_row_index, (p * OPTS.page_rows as usize) as i64);
            }
            let ci = page_index.column_index(k).expect("column index");
            assert_eq!(ci.num_pages(), pages as u64);
            // Bloom filter: siftdb's chunk filter, byte for byte.
            if m.has_filter {
                let want = siftdb_bitset(&t, chunk.index, k as u16);
                let off = cm.bloom_filter_offset().expect("bloom filter") as usize;
                let len = cm.bloom_filter_length().expect("bloom filter length") as usize;
                let stored = &file[off..off + len];
                assert!(stored.ends_with(&want) && len - want.len() < 32, "{g} {}", f.name);
                let mut parsed = Vec::new();
                Sbbf::from_bytes(stored).unwrap().write_bitset(&mut parsed).unwrap();
                assert_eq!(parsed, want);
                let sbbf = rg.get_column_bloom_filter(k).expect("reader finds the filter");
                for i in first..first + rows {
                    let present = match cols[k].get(i) {
                        Value::Null => true,
                        Value::U64(v) => sbbf.check(&(v as i64)),
                        Value::I64(v) => sbbf.check(&v),
                        Value::F64(v) => sbbf.check(&v),
                        Value::Bytes(v) => sbbf.check(&ByteArray::from(v)),
                    };
                    assert!(present, "row {i} column {} missing from the bloom filter", f.name);
                }
                filters += 1;
            } else {
                assert_eq!(cm.bloom_filter_offset(), None);
                assert!(rg.get_column_bloom_filter(k).is_none());
            }
        }
    }
    assert_eq!(filters, 4 * 8 - 1, "column ni of chunk 1 is all null: no filter");

    // Import into a new table of the same Db: same schema, same rows, same chunk statistics.
    let u = Table::import_parquet(&db, "copy", &path, OPTS).unwrap();
    assert_eq!(u.schema(), t.schema());
    assert_eq!(all_columns(&u).columns, all_columns(&t).columns);
    assert_eq!(u.chunks().len(), t.chunks().len());
    for (a, b) in u.chunks().iter().zip(t.chunks()) {
        assert_eq!(a.rows, b.rows);
        for (x, y) in a.columns.iter().zip(&b.columns) {
            assert_eq!(
                (x.null_count, x.distinct, x.has_filter),
                (y.null_count, y.distinct, y.has_filter)
            );
            assert_eq!(
                (x.min.clone().map(bits), x.max.clone().map(bits)),
                (y.min.clone().map(bits), y.max.clone().map(bits))
            );
        }
    }
    // Each row group is one append: chunks follow the new table's chunk_rows.
    let opts = TableOptions { chunk_rows: 700, page_rows: 64 };
    let v = Table::import_parquet(&db, "rechunked", &path, opts).unwrap();
    let sizes: Vec<u32> = v.chunks().iter().map(|c| c.rows).collect();
    assert_eq!(sizes, [700, 300, 700, 300, 700, 300, 500]);
    assert_eq!(all_columns(&v).columns, all_columns(&t).columns);
}

#[test]
fn nan_round_trips_and_stays_out_of_parquet_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let s = Schema::new(vec![Field::new("x", ColumnType::F64)]).unwrap();
    let mut t = Table::create(&db, "t", s, TableOptions::default()).unwrap();
    let nan = f64::from_bits(0x7ff8_0000_0000_0001);
    t.append(&[Column::new(ColumnData::F64(vec![1.0, nan, -2.0, -nan]))]).unwrap();
    let path = dir.path().join("t.parquet");
    t.export_parquet(&path).unwrap();
    // siftdb orders by total_cmp (NaNs at both ends); Parquet statistics leave NaNs out.
    assert_eq!(t.chunks()[0].columns[0].max.clone().map(bits), Some(Value::U64(nan.to_bits())));
    let r = reader(&path);
    let stats = r.metadata().row_group(0).column(0).statistics().unwrap();
    assert_eq!(
        stat_values(stats, ColumnType::F64),
        (Some(Value::F64(-2.0)), Some(Value::F64(1.0)))
    );
    let u = Table::import_parquet(&db, "u", &path, TableOptions::default()).unwrap();
    let got = all_columns(&u).columns.remove(0).data;
    let ColumnData::F64(got) = got else { panic!("f64 column") };
    let want = [1.0, nan, -2.0, -nan];
    assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.map(f64::to_bits));
}

/// Pages hold `page_rows` rows even when that is megabytes (the writer's default 1 MiB page
/// limit would cut them earlier), and an empty table exports and imports.
#[test]
fn pages_follow_page_rows_whatever_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let s = Schema::new(vec![
        Field::new("blob", ColumnType::Bytes),
        Field::nullable("n", ColumnType::U64),
    ])
    .unwrap();
    let mut t = Table::create(&db, "big", s.clone(), TableOptions::default()).unwrap();
    let rows = 10_000u64;
    let blob = |r: u64| (0..600).map(|i| (r * 31 + i * 7) as u8).collect::<Vec<u8>>();
    t.append(&[
        Column::new(ColumnData::Bytes((0..rows).map(blob).collect())),
        Column::with_validity(
            ColumnData::U64((0..rows).collect()),
            (0..rows).map(|r| r % 2 == 0).collect(),
        )
        .unwrap(),
    ])
    .unwrap();
    let path = dir.path().join("big.parquet");
    t.export_parquet(&path).unwrap();
    let r = reader(&path);
    let index = r.metadata().page_index_for_row_group(0);
    for k in 0..2 {
        let first_rows: Vec<i64> =
            index.page_locations(k).unwrap().iter().map(|l| l.first_row_index).collect();
        assert_eq!(first_rows, [0, 4096, 8192], "column {k}");
    }

    let empty = Table::create(&db, "empty", s, TableOptions::default()).unwrap();
    let path = dir.path().join("empty.parquet");
    let st = empty.export_parquet(&path).unwrap();
    assert_eq!((st.rows, st.row_groups), (0, 0));
    let back = Table::import_parquet(&db, "empty_back", &path, TableOptions::default()).unwrap();
    assert_eq!((back.schema(), back.num_rows()), (empty.schema(), 0));
}

fn write_parquet(
    path: &Path,
    message: &str,
    write: impl FnOnce(&mut SerializedFileWriter<std::fs::File>),
) {
    let schema = Arc::new(parse_message_type(message).unwrap());
    let props = Arc::new(WriterProperties::builder().build());
    let mut w =
        SerializedFileWriter::new(std::fs::File::create(path).unwrap(), schema, props).unwrap();
    write(&mut w);
    w.close().unwrap();
}

fn assert_invalid_naming(r: siftdb::Result<Table<'_>>, name: &str) {
    match r {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(name), "{msg}"),
        other => panic!("expected an invalid-argument error naming {name}, got {other:?}"),
    }
}

#[test]
fn bad_input_is_refused_with_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let t = build(&db);

    // Export never overwrites, and leaves the existing file alone.
    let existing = dir.path().join("existing.parquet");
    std::fs::write(&existing, b"keep me").unwrap();
    match t.export_parquet(&existing) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("existing.parquet"), "{msg}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    let nowhere = dir.path().join("no/such/dir/t.parquet");
    assert!(matches!(t.export_parquet(&nowhere), Err(Error::Io { .. })));
    assert!(!nowhere.exists());

    let good = dir.path().join("good.parquet");
    t.export_parquet(&good).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let gone = |name: &str| Table::open_any(&db, name).is_err();

    // Missing, truncated, garbage: errors, no table.
    assert!(matches!(
        Table::import_parquet(&db, "x", dir.path().join("missing.parquet"), OPTS),
        Err(Error::Io { .. })
    ));
    for (name, content) in [
        ("empty", Vec::new()),
        ("truncated", bytes[..bytes.len() / 2].to_vec()),
        ("no_footer", bytes[..bytes.len() - 3].to_vec()),
        ("garbage", (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect()),
    ] {
        let p = dir.path().join(format!("{name}.parquet"));
        std::fs::write(&p, &content).unwrap();
        let r = Table::import_parquet(&db, name, &p, OPTS);
        assert!(r.is_err(), "{name}: {r:?}");
        assert!(gone(name), "{name}: table left behind");
    }

    // A damaged page header in row group 2: the footer reads, the table is created, row groups
    // 0 and 1 are appended, then the error drops the table again.
    let r = reader(&good);
    let cm = r.metadata().row_group(2).column(3);
    let at = cm.dictionary_page_offset().unwrap_or(cm.data_page_offset()) as usize;
    let mut damaged = bytes.clone();
    damaged[at..at + 16].fill(0xff);
    let p = dir.path().join("damaged.parquet");
    std::fs::write(&p, &damaged).unwrap();
    let e = Table::import_parquet(&db, "damaged", &p, OPTS).unwrap_err();
    assert!(e.to_string().contains("row group 2"), "{e}");
    assert!(gone("damaged"));
    Table::import_parquet(&db, "damaged", &good, OPTS).unwrap();
    // A flipped bit inside a page's compressed values: caught by the page CRC.
    let cm = r.metadata().row_group(1).column(0);
    let at = cm.data_page_offset() as usize + 100;
    let mut flipped = bytes.clone();
    flipped[at] ^= 0x10;
    let p = dir.path().join("flipped.parquet");
    std::fs::write(&p, &flipped).unwrap();
    let e = Table::import_parquet(&db, "flipped", &p, OPTS).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("CRC"), "{e}");
    assert!(gone("flipped"));

    // An existing table name is refused (and the existing table kept).
    assert_invalid_naming(Table::import_parquet(&db, "src", &good, OPTS), "src");
    assert_eq!(Table::open_any(&db, "src").unwrap().num_rows(), ROWS as u64);

    // Unsupported columns, named in the error.
    let p = dir.path().join("int32.parquet");
    write_parquet(&p, "message m { required int64 a; required int32 small; }", |w| {
        let mut rg = w.next_row_group().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<Int64Type>().write_batch(&[1, 2], None, None).unwrap();
        c.close().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<Int32Type>().write_batch(&[1, 2], None, None).unwrap();
        c.close().unwrap();
        rg.close().unwrap();
    });
    assert_invalid_naming(Table::import_parquet(&db, "int32", &p, OPTS), "small");
    assert!(gone("int32"));
    let p = dir.path().join("nested.parquet");
    write_parquet(
        &p,
        "message m { required int64 a; optional group g { optional int64 x; } }",
        |_| {},
    );
    assert_invalid_naming(Table::import_parquet(&db, "nested", &p, OPTS), "\"g\"");
    let p = dir.path().join("repeated.parquet");
    write_parquet(&p, "message m { repeated int64 r; }", |_| {});
    assert_invalid_naming(Table::import_parquet(&db, "repeated", &p, OPTS), "\"r\"");
    let p = dir.path().join("timestamp.parquet");
    write_parquet(&p, "message m { required int64 ts (TIMESTAMP(MICROS,true)); }", |_| {});
    assert_invalid_naming(Table::import_parquet(&db, "timestamp", &p, OPTS), "\"ts\"");

    // A file written by another writer with supported types imports (strings as bytes,
    // UINT_64 as u64), including an empty one.
    let p = dir.path().join("other.parquet");
    let msg = "message m { required int64 u (INTEGER(64,false)); optional binary s (UTF8); \
               required double d; }";
    write_parquet(&p, msg, |w| {
        let mut rg = w.next_row_group().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<Int64Type>().write_batch(&[-1, 5], None, None).unwrap();
        c.close().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<ByteArrayType>().write_batch(&["hé".into()], Some(&[0, 1]), None).unwrap();
        c.close().unwrap();
        let mut c = rg.next_column().unwrap().unwrap();
        c.typed::<DoubleType>().write_batch(&[0.5, -0.5], None, None).unwrap();
        c.close().unwrap();
        rg.close().unwrap();
    });
    let o = Table::import_parquet(&db, "other", &p, OPTS).unwrap();
    let want = Schema::new(vec![
        Field::new("u", ColumnType::U64),
        Field::nullable("s", ColumnType::Bytes),
        Field::new("d", ColumnType::F64),
    ])
    .unwrap();
    assert_eq!(o.schema(), &want);
    let res = all_columns(&o);
    assert_eq!(res.columns[0].data, ColumnData::U64(vec![u64::MAX, 5]));
    assert_eq!(res.columns[1].get(0), Value::Null);
    assert_eq!(res.columns[1].get(1), Value::Bytes("hé".as_bytes().to_vec()));
    let p = dir.path().join("empty_rows.parquet");
    write_parquet(&p, "message m { required int64 a; }", |_| {});
    assert_eq!(Table::import_parquet(&db, "empty_rows", &p, OPTS).unwrap().num_rows(), 0);
}

/// Random damage anywhere in an exported file: import returns an error or a table, never
/// panics, and leaves no table behind on error. Damage inside a page is always an error (page
/// CRCs); the footer has no checksum in Parquet, so damage there may import as another schema
/// or other values, and damage in a Bloom filter or the page index (which import does not
/// read) imports the same rows.
#[test]
fn damaged_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let t = build(&db);
    let want = all_columns(&t).columns;
    let good = dir.path().join("good.parquet");
    t.export_parquet(&good).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let footer_len = u32::from_le_bytes(bytes[bytes.len() - 8..][..4].try_into().unwrap());
    let footer_start = bytes.len() - 8 - footer_len as usize;
    let mut rng = SplitMix64::new(99);
    let (mut errors, mut same, mut footer_changes) = (0, 0, 0);
    for round in 0..300 {
        let mut b = bytes.clone();
        let mut in_footer = false;
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(b.len() as u64) as usize;
            b[at] ^= 1 << rng.below(8);
            in_footer |= at >= footer_start;
        }
        let p = dir.path().join(format!("d{round}.parquet"));
        std::fs::write(&p, &b).unwrap();
        let name = format!("d{round}");
        match Table::import_parquet(&db, &name, &p, OPTS) {
            Err(_) => {
                errors += 1;
                assert!(Table::open_any(&db, &name).is_err(), "round {round}: table left behind");
            }
            Ok(u) if all_columns(&u).columns == want && u.schema() == t.schema() => same += 1,
            Ok(_) => {
                assert!(in_footer, "round {round}: damage outside the footer imported silently");
                footer_changes += 1;
            }
        }
        std::fs::remove_file(&p).unwrap();
    }
    eprintln!("{errors} errors, {same} identical imports, {footer_changes} footer changes");
    assert!(errors > 100, "{errors}");
}
