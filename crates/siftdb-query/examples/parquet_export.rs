//! Parquet export checked by DuckDB (`tests/python/duckdb_check.py`, run by CI).
//!
//! ```sh
//! cargo run --release -p siftdb-query --features parquet --example parquet_export -- OUT.parquet EXPECTED.csv
//! ```
//! Builds a deterministic table of `ROWS` rows in chunks of 65,536 (so several row groups, the
//! last short), exports it to `OUT.parquet` (an existing path is refused), runs two siftdb scans
//! and writes their rows to `EXPECTED.csv` (refused too if it exists), which the script compares
//! with DuckDB's answer to the same SQL on the exported file:
//!
//! * `point`: `key = key_of(POINT_ROW)` (an `eq` predicate on the `u64` key);
//! * `in_list`: `tag IN ('tag7', 'tag123', 'nope', x'FF00E7')` on the nullable bytes column.
//!
//! Columns: `key u64 = row * 0x9E3779B97F4A7C15 (mod 2^64)` (unique, half of them above 2^63),
//! `v i64`, `x f64`, `tag bytes` (nullable: null on every tenth row, `x'FF00' || row % 256` on
//! rows ending in 999, else `tag{0..999}`). CSV: `query,key,v,x_bits,tag` with `x_bits` the
//! double's bits as 16 hex digits and `tag` as upper-case hex or `NULL`, rows ordered by key.
//! The constants are repeated in the script: change both together.
//!
//! ```sh
//! cargo run --release -p siftdb-query --features parquet --example parquet_export -- --bench [ROWS]
//! ```
//! instead times the export of the join benchmark's fact table (examples/join.rs, aligned
//! layout: `fk` uniform over 0..100,000 and 8 `u64` payload columns where column `j` keeps
//! `8 + 7 j` random bits; default 4M rows, 65,536 per chunk) three times into a temporary
//! directory and prints each time and the median.

use siftdb::{Db, Options};
use siftdb_query::*;
use std::io::Write;
use std::time::Instant;

const ROWS: u64 = 300_000;
const CHUNK_ROWS: u32 = 65_536;
const POINT_ROW: u64 = 123_457;
const KEY_MULT: u64 = 0x9E37_79B9_7F4A_7C15;

fn key_of(row: u64) -> u64 {
    row.wrapping_mul(KEY_MULT)
}

fn mix(row: u64, salt: u64) -> u64 {
    siftdb::filter::hash::mix64(row, salt)
}

fn tag_of(row: u64) -> Option<Vec<u8>> {
    if row.is_multiple_of(10) {
        None
    } else if row % 1000 == 999 {
        Some(vec![0xff, 0x00, (row % 256) as u8])
    } else {
        Some(format!("tag{}", mix(row, 3) % 1000).into_bytes())
    }
}

fn table(db: &Db) -> siftdb::Result<Table<'_>> {
    let schema = Schema::new(vec![
        Field::new("key", ColumnType::U64),
        Field::new("v", ColumnType::I64),
        Field::new("x", ColumnType::F64),
        Field::nullable("tag", ColumnType::Bytes),
    ])?;
    let opts = TableOptions { chunk_rows: CHUNK_ROWS, ..TableOptions::default() };
    let mut t = Table::create(db, "events", schema, opts)?;
    let rows = 0..ROWS;
    let tags: Vec<Option<Vec<u8>>> = rows.clone().map(tag_of).collect();
    t.append(&[
        Column::new(ColumnData::U64(rows.clone().map(key_of).collect())),
        Column::new(ColumnData::I64(rows.clone().map(|r| (mix(r, 2) as i64) >> 40).collect())),
        Column::new(ColumnData::F64(rows.map(|r| r as f64 * 0.25 - 1000.0).collect())),
        Column::with_validity(
            ColumnData::Bytes(tags.iter().map(|t| t.clone().unwrap_or_default()).collect()),
            tags.iter().map(Option::is_some).collect(),
        )?,
    ])?;
    Ok(t)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// `--bench`: the export time of the join benchmark's fact table.
fn bench(rows: usize) -> siftdb::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| siftdb::Error::io("creating a temp dir", e))?;
    let db = Db::open(dir.path().join("db"), Options::default())?;
    let mut f = vec![Field::new("fk", ColumnType::U64)];
    f.extend((0..8).map(|j| Field::new(&format!("p{j}"), ColumnType::U64)));
    let mut t = Table::create(&db, "fact", Schema::new(f)?, TableOptions::default())?;
    let mut rng = siftdb::filter::rng::SplitMix64::new(2026);
    let fk: Vec<u64> = (0..rows).map(|_| rng.next_u64() % 100_000).collect();
    let chunk = DEFAULT_CHUNK_ROWS as usize;
    for start in (0..rows).step_by(chunk) {
        let part = start as u64..(start + chunk).min(rows) as u64;
        let mut cols = vec![Column::new(ColumnData::U64(fk[start..part.end as usize].to_vec()))];
        for j in 0..8 {
            let payload = |r: u64| mix(r, j + 100) >> (56 - 7 * j);
            cols.push(Column::new(ColumnData::U64(part.clone().map(payload).collect())));
        }
        t.append(&cols)?;
    }
    let mut secs = Vec::new();
    for rep in 0..3 {
        let out = dir.path().join(format!("fact{rep}.parquet"));
        let start = Instant::now();
        let st = t.export_parquet(&out)?;
        secs.push(start.elapsed().as_secs_f64());
        println!(
            "export {rep}: {:.3} s, {} rows, {} row groups, {} bytes",
            secs[rep], st.rows, st.row_groups, st.bytes
        );
        std::fs::remove_file(&out).map_err(|e| siftdb::Error::io("removing the export", e))?;
    }
    secs.sort_by(f64::total_cmp);
    println!("median {:.3} s", secs[1]);
    Ok(())
}

fn main() -> siftdb::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--bench") {
        let rows = args.get(1).map_or(4_000_000, |r| r.parse().expect("a row count"));
        return bench(rows);
    }
    let [out, expected] = args.as_slice() else {
        eprintln!("usage: parquet_export OUT.parquet EXPECTED.csv | parquet_export --bench [ROWS]");
        std::process::exit(2);
    };
    let dir = tempfile::tempdir().map_err(|e| siftdb::Error::io("creating a temp dir", e))?;
    let db = Db::open(dir.path(), Options::default())?;
    let t = table(&db)?;

    let start = Instant::now();
    let stats = t.export_parquet(out)?;
    println!(
        "exported {} rows in {} row groups, {} bytes, to {out} in {:.3} s",
        stats.rows,
        stats.row_groups,
        stats.bytes,
        start.elapsed().as_secs_f64()
    );

    let mut csv = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(expected)
        .map_err(|e| siftdb::Error::io(format!("creating {expected}"), e))?;
    let in_list_tags =
        [b"tag7".to_vec(), b"tag123".to_vec(), b"nope".to_vec(), vec![0xff, 0, 0xe7]];
    let queries = [
        ("point", eq("key", Value::U64(key_of(POINT_ROW)))),
        ("in_list", in_list("tag", in_list_tags.into_iter().map(Value::Bytes).collect())),
    ];
    let mut lines = vec!["query,key,v,x_bits,tag".to_string()];
    for (name, pred) in queries {
        let projection = ["key", "v", "x", "tag"].map(String::from).to_vec();
        let r = scan(&t, &ScanSpec { predicates: vec![pred], projection })?;
        let mut rows: Vec<(u64, String)> = (0..r.row_ids.len())
            .map(|i| {
                let Value::U64(key) = r.columns[0].get(i) else { unreachable!("u64 key") };
                let Value::I64(v) = r.columns[1].get(i) else { unreachable!("i64 v") };
                let Value::F64(x) = r.columns[2].get(i) else { unreachable!("f64 x") };
                let tag = match r.columns[3].get(i) {
                    Value::Bytes(b) => hex(&b),
                    _ => "NULL".to_string(),
                };
                (key, format!("{name},{key},{v},{:016x},{tag}", x.to_bits()))
            })
            .collect();
        rows.sort();
        println!("{name}: {} rows, {:?}", rows.len(), r.counters);
        lines.extend(rows.into_iter().map(|(_, line)| line));
    }
    writeln!(csv, "{}", lines.join("\n"))
        .and_then(|()| csv.sync_all())
        .map_err(|e| siftdb::Error::io(format!("writing {expected}"), e))?;
    Ok(())
}
