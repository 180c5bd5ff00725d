//! The Rust side of the Python bindings' interoperability tests and filter benchmark:
//!
//! * `write-db DIR N`: writes a database the pytest suite reads from Python: keys
//!   `key000000`.. with values `value<i>` for `i < N`, every 7th deleted, keyspace `ks` holding
//!   `k<i>` -> `v<i>` for `i < 100`, flushed so the reads go through SSTs.
//! * `check-filter FILE N`: reads a filter written by Python (`Filter.save`) built from
//!   `hash_u64(arange(N))`, checks that it holds every key (no false negatives) and prints its
//!   kind and the false positives among the N keys `N..2N`.
//! * `write-filter FILE KIND N`: writes a `KIND` filter (`bumped_ribbon` or `blocked_bloom`) of
//!   the same keys for Python to read.
//! * `bench-filter N [RUNS]`: the Rust half of python/bench/vs_rocksdict.py: builds a bumped
//!   ribbon filter (FPR 1%) from N key hashes and probes N hashes (half present) with
//!   `contains_batch`, RUNS times (default 3); prints the median build and probe seconds. The
//!   script runs it once per run, between its Python runs, so both sides see the same load.

use siftdb::filter::prelude::*;
use siftdb::filter::{hash_key, BlockedBloom, BumpedRibbon, FilterView};
use siftdb::{Db, KeyspaceOptions, Options};
use std::process::ExitCode;
use std::time::Instant;

fn hashes(range: std::ops::Range<u64>) -> Vec<u64> {
    range.map(|i| hash_key(&i.to_le_bytes())).collect()
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, String> {
    args.get(i)
        .ok_or_else(|| format!("missing {what}"))?
        .parse()
        .map_err(|_| format!("{what} {:?} is not valid", args[i]))
}

fn write_db(dir: &str, n: u64) -> Result<(), String> {
    let e = |e: siftdb::Error| e.to_string();
    let db = Db::open(dir, Options::default()).map_err(e)?;
    for i in 0..n {
        db.put(format!("key{i:06}"), format!("value{i}")).map_err(e)?;
    }
    for i in (0..n).step_by(7) {
        db.delete(format!("key{i:06}")).map_err(e)?;
    }
    let ks = db.keyspace("ks", KeyspaceOptions::default()).map_err(e)?;
    for i in 0..100 {
        ks.put(format!("k{i}"), format!("v{i}")).map_err(e)?;
    }
    db.flush().map_err(e)?;
    db.close().map_err(e)
}

fn check_filter(file: &str, n: u64) -> Result<(), String> {
    let bytes = std::fs::read(file).map_err(|e| format!("reading {file}: {e}"))?;
    let view = FilterView::parse(&bytes).map_err(|e| e.to_string())?;
    if let Some(i) = hashes(0..n).iter().position(|&h| !view.contains_hash(h)) {
        return Err(format!("false negative: key {i} is not in the {} filter", view.kind()));
    }
    let fp = hashes(n..2 * n).iter().filter(|&&h| view.contains_hash(h)).count();
    println!("{} {fp}", view.kind());
    Ok(())
}

fn write_filter(file: &str, kind: &str, n: u64) -> Result<(), String> {
    let h = hashes(0..n);
    let bytes = match kind {
        "bumped_ribbon" => {
            BumpedRibbon::with_false_pos(0.01).build(&h).map_err(|e| e.to_string())?.to_bytes()
        }
        "blocked_bloom" => {
            let mut f =
                BlockedBloom::with_false_pos(0.01).expected_items(n).map_err(|e| e.to_string())?;
            f.insert_batch(&h);
            f.to_bytes()
        }
        other => return Err(format!("kind {other:?} is not bumped_ribbon or blocked_bloom")),
    };
    std::fs::write(file, bytes).map_err(|e| format!("writing {file}: {e}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench_filter(n: u64, runs: usize) -> Result<(), String> {
    let keys = hashes(0..n);
    // Half the probes hit, half miss, as in the Python half.
    let probes = hashes(n / 2..n / 2 + n);
    let (mut build, mut probe) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let f = BumpedRibbon::with_false_pos(0.01).build(&keys).map_err(|e| e.to_string())?;
        build.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut out = Vec::with_capacity(probes.len());
        f.contains_batch(&probes, &mut out);
        probe.push(t.elapsed().as_secs_f64());
        let hits = out.iter().filter(|&&b| b).count();
        if hits < (n / 2) as usize {
            return Err(format!("{hits} hits: a false negative"));
        }
    }
    println!("build {:.4} probe {:.4}", median(build), median(probe));
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.get(1).map(String::as_str) {
        Some("write-db") => arg::<String>(&args, 2, "DIR")
            .and_then(|d| Ok((d, arg::<u64>(&args, 3, "N")?)))
            .and_then(|(d, n)| write_db(&d, n)),
        Some("check-filter") => arg::<String>(&args, 2, "FILE")
            .and_then(|f| Ok((f, arg::<u64>(&args, 3, "N")?)))
            .and_then(|(f, n)| check_filter(&f, n)),
        Some("write-filter") => arg::<String>(&args, 2, "FILE").and_then(|f| {
            write_filter(&f, &arg::<String>(&args, 3, "KIND")?, arg::<u64>(&args, 4, "N")?)
        }),
        Some("bench-filter") => arg::<u64>(&args, 2, "N").and_then(|n| {
            let runs = if args.len() > 3 { arg::<usize>(&args, 3, "RUNS")? } else { 3 };
            bench_filter(n, runs)
        }),
        _ => Err("usage: siftdb-py-interop write-db DIR N | check-filter FILE N | \
                  write-filter FILE KIND N | bench-filter N [RUNS]"
            .into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("siftdb-py-interop: {e}");
            ExitCode::FAILURE
        }
    }
}
