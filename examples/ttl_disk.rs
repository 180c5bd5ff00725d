//! Disk usage of a TTL keyspace before and after its entries expire (design.md#ttl): writes
//! N expired-to-be entries and M live ones, moves the clock past the TTL, runs one
//! `compact()`, and prints the bytes of the tables against what the live data alone takes
//! (the same M entries written to a fresh database and compacted).
//!
//! ```sh
//! cargo run --release --example ttl_disk -- 1000000 10000
//! ```

use siftdb::{CompactionOptions, Db, ManualClock, Options};
use std::sync::Arc;
use std::time::Duration;

fn table_bytes(db: &Db) -> u64 {
    db.stats().levels.iter().map(|l| l.bytes).sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, d: u64| std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (n, live) = (arg(1, 1_000_000), arg(2, 10_000));
    let ttl = Duration::from_secs(3600);
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let opts = || Options {
        ttl: Some(ttl),
        clock: Some(clock.clone()),
        compaction: CompactionOptions { auto: false, ..CompactionOptions::default() },
        ..Options::default()
    };
    let value = [7u8; 100];
    let tmp = tempfile::tempdir()?;
    let db = Db::open(tmp.path().join("ttl"), opts())?;
    for i in 0..n {
        db.put(format!("old{i:010}"), value)?;
    }
    db.flush()?;
    db.compact()?;
    let before = table_bytes(&db);
    clock.advance(ttl);
    for i in 0..live {
        db.put(format!("new{i:010}"), value)?;
    }
    db.flush()?;
    let with_expired = table_bytes(&db);
    db.compact()?;
    let after = table_bytes(&db);
    let reference = Db::open(tmp.path().join("live"), opts())?;
    for i in 0..live {
        reference.put(format!("new{i:010}"), value)?;
    }
    reference.flush()?;
    reference.compact()?;
    let needed = table_bytes(&reference);
    println!("entries written {n} (expire), {live} (live); 100-byte values, TTL {ttl:?}");
    println!("tables after the first {n}: {before} bytes");
    println!("tables once expired, before compaction: {with_expired} bytes");
    println!("tables after one compact(): {after} bytes");
    println!("live data alone (fresh database, compacted): {needed} bytes");
    println!("after / live: {:.3}", after as f64 / needed.max(1) as f64);
    Ok(())
}
