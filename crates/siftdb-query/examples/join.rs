//! The join and scan benchmark of the query layer: a fact table joined with a filtered
//! dimension in every [`JoinMode`], and scanned with a point and a range predicate with and
//! without pushdown, on a key-sorted and a scattered layout of the same fact rows.
//!
//! ```sh
//! cargo run --release -p siftdb-query --example join                 # aligned table
//! cargo run --release -p siftdb-query --example join -- --csv        # CSV
//! cargo run --release -p siftdb-query --example join -- --rows 1000000 --reps 5 --chunk-rows 65536 \
//!     --page-rows 4096 --filter auto|two_bit|blocked|in_list --payload mixed|random \
//!     --only scattered,0.01
//! ```
//! Fact: `--rows` rows (default 4M) of a `u32` foreign key (stored as `u64`, uniform over the
//! dimension keys) and 8 `u64` payload columns, which are functions of the row's original
//! number, so both layouts hold the same rows. Dimension: 100K rows `key`, `grp = key / 100`,
//! `attr`; its filter `grp BETWEEN 0 AND s * 1000 - 1` selects the fraction `s` of the keys
//! (a contiguous key range).
//!
//! Timing: each case (a layout and selectivity, or a layout and scan predicate) runs every mode
//! once as a warm-up, then `--reps` rounds (default 5), round `r` starting at mode `r` in
//! rotating order, so no mode always runs first or after the same neighbour. Printed: the
//! median, min and max. Every timed run's row count and checksum must equal the baseline's
//! (`no_filter`, or the scan without pushdown). `filter_fpr` is the observed false-positive
//! rate among checked non-member rows (empty when no filter was checked or every checked row
//! was a member). `--only LAYOUT[,SEL]` runs one layout (and selectivity) for profiling.
//!
//! The Db's block cache is `--cache-mb` (default 1,024): the two fact tables (about 290 MB of
//! column chunks) stay cached, as a query engine keeps its hot tables in its buffer pool. With
//! the Db's default 8 MiB every column read copies its block out of the mapped file and then
//! the value out of the block, the same bytes in every mode, which narrows every ratio.

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Options};
use siftdb_query::*;
use std::time::Instant;

const DIM_ROWS: u64 = 100_000;
const SELECTIVITY: [f64; 5] = [0.001, 0.01, 0.1, 0.5, 1.0];

struct Args {
    csv: bool,
    rows: usize,
    reps: usize,
    chunk_rows: u32,
    page_rows: u32,
    filter: FilterChoice,
    random_payload: bool,
    /// `--cache-mb`: the Db's block cache.
    cache_mb: usize,
    /// `--only LAYOUT[,SEL]`.
    only: Option<(String, Option<f64>)>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        csv: false,
        rows: 4_000_000,
        reps: 5,
        chunk_rows: DEFAULT_CHUNK_ROWS,
        page_rows: DEFAULT_PAGE_ROWS,
        filter: FilterChoice::Auto,
        random_payload: false,
        cache_mb: 1024,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|_| format!("{v:?} is not a number"));
        match arg.as_str() {
            "--csv" => a.csv = true,
            "--rows" => a.rows = number(value()?)?.max(1),
            "--reps" => a.reps = number(value()?)?.max(1),
            "--chunk-rows" => a.chunk_rows = number(value()?)? as u32,
            "--page-rows" => a.page_rows = number(value()?)? as u32,
            "--cache-mb" => a.cache_mb = number(value()?)?,
            "--payload" => {
                a.random_payload = match value()?.as_str() {
                    "mixed" => false,
                    "random" => true,
                    other => return Err(format!("unknown payload {other:?}")),
                }
            }
            "--filter" => {
                a.filter = match value()?.as_str() {
                    "auto" => FilterChoice::Auto,
                    "two_bit" => FilterChoice::TwoBit,
                    "blocked" => FilterChoice::Blocked,
                    "in_list" => FilterChoice::InList,
                    other => return Err(format!("unknown filter {other:?}")),
                }
            }
            "--only" => {
                let v = value()?;
                let (layout, sel) = match v.split_once(',') {
                    Some((l, s)) => (
                        l.to_string(),
                        Some(s.parse().map_err(|_| format!("bad selectivity {s:?}"))?),
                    ),
                    None => (v, None),
                };
                if layout != "sorted" && layout != "scattered" {
                    return Err(format!("--only: unknown layout {layout:?}"));
                }
                a.only = Some((layout, sel));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// Median, min and max of a mode's timed runs, in milliseconds.
struct Timing {
    median: f64,
    min: f64,
    max: f64,
}

impl Timing {
    fn of(mut ms: Vec<f64>) -> Timing {
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let median = if n % 2 == 1 { ms[n / 2] } else { (ms[n / 2 - 1] + ms[n / 2]) / 2.0 };
        Timing { median, min: ms[0], max: ms[n - 1] }
    }
}

/// Runs case `i` of `n` through `run` once each as a warm-up, then `reps` rounds in rotating
/// order (round `r` starts at case `r % n`). Returns each case's last result and timing; every
/// run's result must satisfy `check` against case 0's warm-up result.
fn measure<R>(
    n: usize,
    reps: usize,
    mut run: impl FnMut(usize) -> siftdb::Result<R>,
    check: impl Fn(usize, &R, &R),
) -> siftdb::Result<Vec<(R, Timing)>> {
    let mut last: Vec<R> = (0..n).map(&mut run).collect::<siftdb::Result<_>>()?;
    for (i, r) in last.iter().enumerate() {
        check(i, r, &last[0]);
    }
    let mut times = vec![Vec::with_capacity(reps); n];
    for round in 0..reps {
        for k in 0..n {
            let i = (round + k) % n;
            let t = Instant::now();
            let r = run(i)?;
            times[i].push(t.elapsed().as_secs_f64() * 1e3);
            check(i, &r, &last[0]);
            last[i] = r;
        }
    }
    Ok(last.into_iter().zip(times).map(|(r, t)| (r, Timing::of(t))).collect())
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
    let mut t = Table::create(
        db,
        name,
        fact_schema(),
        TableOptions { chunk_rows: args.chunk_rows, page_rows: args.page_rows },
    )?;
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

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("join: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("join: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> siftdb::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| siftdb::Error::io("creating a temp dir", e))?;
    let opts = Options { block_cache_bytes: args.cache_mb << 20, ..Options::default() };
    let db = Db::open(dir.path(), opts)?;
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
        ("sorted", load_fact(&db, "fact_sorted", &fk, &sorted, args)?),
        ("scattered", load_fact(&db, "fact_scattered", &fk, &scattered, args)?),
    ];
    drop((fk, sorted, scattered));
    db.flush()?;
    if args.csv {
        println!("layout,selectivity,mode,ms,ms_min,ms_max,chunks_total,chunks_skipped,pages_skipped,rows_probed,rows_matched,filter_fpr");
    } else {
        println!(
            "loaded 2 x {} fact rows (9 columns, {} rows/chunk, {} rows/page) + {} dimension rows in {:.1} s; median of {} rotating runs after a warm-up",
            args.rows,
            args.chunk_rows,
            args.page_rows,
            DIM_ROWS,
            t0.elapsed().as_secs_f64(),
            args.reps
        );
        println!(
            "{:<9} {:>6} {:<15} {:>8} {:>8} {:>8} {:>6} {:>7} {:>6} {:>9} {:>9} {:>8} {:>8} {:<13} {:>8}",
            "layout", "sel", "mode", "ms", "min", "max", "chunks", "skipped", "pages", "probed",
            "matched", "fpr", "cfg_fpr", "filter", "speedup"
        );
    }
    for (lname, fact) in &layouts {
        if args.only.as_ref().is_some_and(|(l, _)| l != lname) {
            continue;
        }
        for &s in &SELECTIVITY {
            if args.only.as_ref().is_some_and(|(_, sel)| sel.is_some_and(|x| x != s)) {
                continue;
            }
            join_case(args, lname, s, &dim, fact)?;
        }
        if args.only.as_ref().is_none_or(|(_, sel)| sel.is_none()) {
            scan_cases(args, lname, fact)?;
        }
    }
    Ok(())
}

/// One layout and selectivity: every join mode, timed in rotation.
fn join_case(
    args: &Args,
    lname: &str,
    s: f64,
    dim: &Table<'_>,
    fact: &Table<'_>,
) -> siftdb::Result<()> {
    let hi = ((s * (DIM_ROWS / 100) as f64).round() as u64).max(1) - 1;
    let build = BuildSide {
        table: dim,
        key: "key".into(),
        predicates: vec![between("grp", Value::U64(0), Value::U64(hi))],
        projection: vec!["attr".into()],
    };
    let probe = ProbeSide {
        table: fact,
        key: "fk".into(),
        projection: (0..8).map(|j| format!("p{j}")).collect(),
    };
    let results = measure(
        JoinMode::ALL.len(),
        args.reps,
        |i| {
            let opts =
                JoinOptions { mode: JoinMode::ALL[i], filter: args.filter, ..Default::default() };
            hash_join(&build, &probe, &opts)
        },
        |i, r, base| {
            assert_eq!(
                (r.rows, r.checksum),
                (base.rows, base.checksum),
                "{lname} {s} {}: result differs from no_filter",
                JoinMode::ALL[i].name()
            )
        },
    )?;
    let base_ms = results[0].1.median;
    for (mode, (r, t)) in JoinMode::ALL.iter().zip(&results) {
        let c = &r.counters;
        let fpr = c.observed_fpr();
        let fpr_s = if fpr.is_finite() { format!("{fpr:.5}") } else { String::new() };
        let row = Row {
            layout: lname,
            sel: format!("{s}"),
            mode: mode.name(),
            t,
            chunks: (c.chunks_total, c.chunks_skipped()),
            pages_skipped: c.pages_skipped_minmax,
            probed: c.rows_probed,
            matched: c.rows_matched,
            fpr: fpr_s,
            cfg_fpr: c.configured_fpr,
            filter: c.filter_kind,
            speedup: base_ms / t.median,
        };
        row.print(args.csv);
    }
    Ok(())
}

/// Scans of the fact table: a point predicate (`fk = 4242`) and a 1% range (`fk BETWEEN 0 AND
/// 999`), every column projected, once as a full scan filtered by the caller and once with
/// the predicate pushed into the scan (chunk min/max, chunk filters, page min/max, late
/// materialisation).
fn scan_cases(args: &Args, lname: &str, fact: &Table<'_>) -> siftdb::Result<()> {
    let projection: Vec<String> = fact.schema().fields.iter().map(|f| f.name.clone()).collect();
    let cases = [
        ("point", 1.0 / DIM_ROWS as f64, eq("fk", Value::U64(4242))),
        ("range", 0.01, between("fk", Value::U64(0), Value::U64(DIM_ROWS / 100 - 1))),
    ];
    for (name, sel, pred) in cases {
        let modes = [format!("scan_{name}_full"), format!("scan_{name}_pushdown")];
        let results = measure(
            2,
            args.reps,
            |i| {
                if i == 1 {
                    let spec =
                        ScanSpec { predicates: vec![pred.clone()], projection: projection.clone() };
                    let r = scan(fact, &spec)?;
                    Ok((r.row_ids.len() as u64, scan_checksum(&r), r.counters))
                } else {
                    // The caller filters a full scan: every chunk and page decoded.
                    let spec = ScanSpec { predicates: vec![], projection: projection.clone() };
                    let r = scan(fact, &spec)?;
                    let keep: Vec<usize> = (0..r.row_ids.len())
                        .filter(|&k| pred.matches(&r.columns[0].get(k)))
                        .collect();
                    let kept = ScanResult {
                        columns: r
                            .columns
                            .iter()
                            .map(|c| match &c.data {
                                ColumnData::U64(v) => Column::new(ColumnData::U64(
                                    keep.iter().map(|&k| v[k]).collect(),
                                )),
                                _ => unreachable!("the fact table is all u64"),
                            })
                            .collect(),
                        row_ids: keep.iter().map(|&k| r.row_ids[k]).collect(),
                        counters: r.counters,
                    };
                    Ok((kept.row_ids.len() as u64, scan_checksum(&kept), kept.counters))
                }
            },
            |i, r, base| {
                assert_eq!((r.0, r.1), (base.0, base.1), "{lname} {}: rows differ", modes[i])
            },
        )?;
        let base_ms = results[0].1.median;
        for (mode, ((rows, _, c), t)) in modes.iter().zip(&results) {
            let row = Row {
                layout: lname,
                sel: format!("{sel}"),
                mode,
                t,
                chunks: (c.chunks_total, c.chunks_skipped()),
                pages_skipped: c.pages_skipped_minmax,
                probed: c.rows_decoded[0],
                matched: *rows,
                fpr: String::new(),
                cfg_fpr: 0.0,
                filter: if c.filters_probed > 0 { "chunk_sbbf" } else { "none" },
                speedup: base_ms / t.median,
            };
            row.print(args.csv);
        }
    }
    Ok(())
}

/// An order-independent checksum of a scan's rows (row ids and every value).
fn scan_checksum(r: &ScanResult) -> u64 {
    let mut sum = 0u64;
    for (k, &row) in r.row_ids.iter().enumerate() {
        let mut h = siftdb::filter::hash::mix64(row, 1);
        for (j, c) in r.columns.iter().enumerate() {
            if let Value::U64(v) = c.get(k) {
                h = h.wrapping_add(siftdb::filter::hash::mix64(v, j as u64 + 2));
            }
        }
        sum = sum.wrapping_add(h);
    }
    sum
}

/// One printed result line.
struct Row<'a> {
    layout: &'a str,
    sel: String,
    mode: &'a str,
    t: &'a Timing,
    chunks: (u64, u64),
    pages_skipped: u64,
    probed: u64,
    matched: u64,
    fpr: String,
    cfg_fpr: f64,
    filter: &'a str,
    speedup: f64,
}

impl Row<'_> {
    fn print(&self, csv: bool) {
        let t = self.t;
        if csv {
            println!(
                "{},{},{},{:.2},{:.2},{:.2},{},{},{},{},{},{}",
                self.layout,
                self.sel,
                self.mode,
                t.median,
                t.min,
                t.max,
                self.chunks.0,
                self.chunks.1,
                self.pages_skipped,
                self.probed,
                self.matched,
                self.fpr
            );
        } else {
            println!(
                "{:<9} {:>6} {:<15} {:>8.1} {:>8.1} {:>8.1} {:>6} {:>7} {:>6} {:>9} {:>9} {:>8} {:>8.5} {:<13} {:>7.2}x",
                self.layout,
                format!("{}%", self.sel.parse::<f64>().unwrap_or(0.0) * 100.0),
                self.mode,
                t.median,
                t.min,
                t.max,
                self.chunks.0,
                self.chunks.1,
                self.pages_skipped,
                self.probed,
                self.matched,
                self.fpr,
                self.cfg_fpr,
                self.filter,
                self.speedup
            );
        }
    }
}
