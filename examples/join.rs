//! The join benchmark of the query layer: a fact table joined with a filtered dimension, in
//! every [`JoinMode`], on a key-sorted and a scattered layout of the same fact rows.
//!
//! ```sh
//! cargo run --release --example join                 # aligned table
//! cargo run --release --example join -- --csv        # CSV
//! cargo run --release --example join -- --rows 1000000 --reps 3 --chunk-rows 65536 \
//!     --filter auto|two_bit|blocked|in_list --payload mixed|random
//! ```
//! Fact: `--rows` rows (default 4M) of a `u32` foreign key (stored as `u64`, uniform over the
//! dimension keys) and 8 `u64` payload columns, which are functions of the row's original
//! number, so both layouts hold the same rows. Dimension: 100K rows `key`, `grp = key / 100`,
//! `attr`; its filter `grp BETWEEN 0 AND s * 1000 - 1` selects the fraction `s` of the keys
//! (a contiguous key range). Each (layout, selectivity, mode) is timed `--reps` times (best
//! kept) and its joined row count and checksum are checked equal to `no_filter`'s.
//! `filter_fpr` is the observed false-positive rate among checked non-member rows (empty when no
//! filter was checked or every checked row was a member).

use siftdb::query::*;
use siftdb::rng::SplitMix64;
use siftdb::{Db, Options};
use std::time::Instant;

const DIM_ROWS: u64 = 100_000;
const SELECTIVITY: [f64; 5] = [0.001, 0.01, 0.1, 0.5, 1.0];

struct Args {
    csv: bool,
    rows: usize,
    reps: usize,
    chunk_rows: u32,
    filter: FilterChoice,
    random_payload: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        csv: false,
        rows: 4_000_000,
        reps: 3,
        chunk_rows: DEFAULT_CHUNK_ROWS,
        filter: FilterChoice::Auto,
        random_payload: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num =
            || it.next().and_then(|v| v.parse::<usize>().ok()).expect("a number after the flag");
        match arg.as_str() {
            "--csv" => a.csv = true,
            "--rows" => a.rows = num(),
            "--reps" => a.reps = num().max(1),
            "--chunk-rows" => a.chunk_rows = num() as u32,
            "--payload" => {
                a.random_payload = match it.next().as_deref() {
                    Some("mixed") => false,
                    Some("random") => true,
                    other => panic!("unknown payload {other:?}"),
                }
            }
            "--filter" => {
                a.filter = match it.next().as_deref() {
                    Some("auto") => FilterChoice::Auto,
                    Some("two_bit") => FilterChoice::TwoBit,
                    Some("blocked") => FilterChoice::Blocked,
                    Some("in_list") => FilterChoice::InList,
                    other => panic!("unknown filter {other:?}"),
                }
            }
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn payload(row: u64, j: u64, random: bool) -> u64 {
    let h = siftdb::filter::hash::mix64(row, j + 100);
    // `mixed` (default): column j keeps 8 + 7 j random bits, so zstd has real work on most
    // columns; `random`: 64 random bits, stored raw by zstd (decompression is a copy).
    if random {
        h
    } else {
        h >> (56 - 7 * j)
    }
}

fn fact_schema() -> Schema {
    let mut f = vec![Field::new("fk", ColumnType::U64)];
    f.extend((0..8).map(|j| Field::new(&format!("p{j}"), ColumnType::U64)));
    Schema::new(f).expect("valid schema")
}

/// Loads the fact table in the row order `order` (original row numbers), chunk by chunk.
fn load_fact<'a>(
    db: &'a Db,
    name: &str,
    fk: &[u64],
    order: &[u32],
    args: &Args,
) -> siftdb::Result<Table<'a>> {
    let mut t =
        Table::create(db, name, fact_schema(), TableOptions { chunk_rows: args.chunk_rows })?;
    for part in order.chunks(args.chunk_rows as usize) {
        let mut cols =
            vec![Column::new(ColumnData::U64(part.iter().map(|&r| fk[r as usize]).collect()))];
        for j in 0..8 {
            cols.push(Column::new(ColumnData::U64(
                part.iter().map(|&r| payload(r as u64, j, args.random_payload)).collect(),
            )));
        }
        t.append(&cols)?;
    }
    Ok(t)
}

fn main() -> siftdb::Result<()> {
    let args = parse_args();
    let dir = tempfile::tempdir().map_err(|e| siftdb::Error::io("creating a temp dir", e))?;
    let db = Db::open(dir.path(), Options::default())?;
    let mut rng = SplitMix64::new(2026);
    let fk: Vec<u64> = (0..args.rows).map(|_| rng.next_u64() % DIM_ROWS).collect();
    let scattered: Vec<u32> = {
        let mut o: Vec<u32> = (0..args.rows as u32).collect();
        for i in (1..o.len()).rev() {
            o.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        o
    };
    let mut sorted: Vec<u32> = (0..args.rows as u32).collect();
    sorted.sort_by_key(|&r| fk[r as usize]);

    let t0 = Instant::now();
    let dim_schema = Schema::new(vec![
        Field::new("key", ColumnType::U64),
        Field::new("grp", ColumnType::U64),
        Field::new("attr", ColumnType::I64),
    ])?;
    let mut dim = Table::create(&db, "dim", dim_schema, TableOptions::default())?;
    dim.append(&[
        Column::new(ColumnData::U64((0..DIM_ROWS).collect())),
        Column::new(ColumnData::U64((0..DIM_ROWS).map(|k| k / 100).collect())),
        Column::new(ColumnData::I64(
            (0..DIM_ROWS).map(|k| (k as i64 * 7919) % 1000 - 500).collect(),
        )),
    ])?;
    let layouts = [
        ("sorted", load_fact(&db, "fact_sorted", &fk, &sorted, &args)?),
        ("scattered", load_fact(&db, "fact_scattered", &fk, &scattered, &args)?),
    ];
    drop((fk, sorted, scattered));
    db.flush()?;
    if !args.csv {
        println!(
            "loaded 2 x {} fact rows (9 columns, {} rows/chunk) + {} dimension rows in {:.1} s",
            args.rows,
            args.chunk_rows,
            DIM_ROWS,
            t0.elapsed().as_secs_f64()
        );
        println!(
            "{:<9} {:>6} {:<12} {:>8} {:>6} {:>7} {:>9} {:>9} {:>8} {:>8} {:<13} {:>8}",
            "layout",
            "sel",
            "mode",
            "ms",
            "chunks",
            "skipped",
            "probed",
            "matched",
            "fpr",
            "cfg_fpr",
            "filter",
            "speedup"
        );
    } else {
        println!("layout,selectivity,mode,ms,chunks_total,chunks_skipped,rows_probed,rows_matched,filter_fpr");
    }
    for (lname, fact) in &layouts {
        for &s in &SELECTIVITY {
            let hi = ((s * (DIM_ROWS / 100) as f64).round() as u64).max(1) - 1;
            let build = BuildSide {
                table: &dim,
                key: "key".into(),
                predicates: vec![between("grp", Value::U64(0), Value::U64(hi))],
                projection: vec!["attr".into()],
            };
            let probe = ProbeSide {
                table: fact,
                key: "fk".into(),
                projection: (0..8).map(|j| format!("p{j}")).collect(),
            };
            let mut base: Option<(u64, u64, f64)> = None;
            for mode in JoinMode::ALL {
                let opts = JoinOptions { mode, filter: args.filter, ..Default::default() };
                let mut best = f64::INFINITY;
                let mut last = None;
                for _ in 0..args.reps {
                    let t = Instant::now();
                    let r = hash_join(&build, &probe, &opts)?;
                    best = best.min(t.elapsed().as_secs_f64() * 1e3);
                    last = Some(r);
                }
                let r = last.expect("reps >= 1");
                let (rows, sum, base_ms) = *base.get_or_insert((r.rows, r.checksum, best));
                assert_eq!(
                    (r.rows, r.checksum),
                    (rows, sum),
                    "{lname} {s} {}: result differs from no_filter",
                    mode.name()
                );
                let c = &r.counters;
                let fpr = c.observed_fpr();
                let fpr_s = if fpr.is_finite() { format!("{fpr:.5}") } else { String::new() };
                if args.csv {
                    println!(
                        "{lname},{s},{},{best:.2},{},{},{},{},{fpr_s}",
                        mode.name(),
                        c.chunks_total,
                        c.chunks_skipped(),
                        c.rows_probed,
                        c.rows_matched
                    );
                } else {
                    println!(
                        "{:<9} {:>6} {:<12} {:>8.1} {:>6} {:>7} {:>9} {:>9} {:>8} {:>8.5} {:<13} {:>7.2}x",
                        lname,
                        format!("{}%", s * 100.0),
                        mode.name(),
                        best,
                        c.chunks_total,
                        c.chunks_skipped(),
                        c.rows_probed,
                        c.rows_matched,
                        fpr_s,
                        c.configured_fpr,
                        c.filter_kind,
                        base_ms / best
                    );
                }
            }
        }
    }
    Ok(())
}
