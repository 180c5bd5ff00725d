//! Disk usage of a database with blob files after every key is overwritten twice
//! (design.md#key-value-separation): writes N keys with incompressible values of V bytes
//! (values at or above the blob threshold go to blob files), overwrites every key twice (each
//! pass in a new random order), runs one `compact()`, and prints the bytes of the database's
//! files against the live data (N keys and their newest values).
//!
//! ```sh
//! cargo run --release --example blob_disk -- 200000 4096 0.25
//! ```
//!
//! Arguments: keys (200,000), value bytes (4,096), `Options::blob_gc_age_cutoff` (0.25,
//! RocksDB's default). Automatic compaction runs as usual during the writes.

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Options};

/// Bytes of the database directory's files, and of its blob files alone.
fn disk_bytes(dir: &std::path::Path) -> std::io::Result<(u64, u64)> {
    let (mut all, mut blobs) = (0, 0);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let len = entry.metadata()?.len();
        all += len;
        if entry.file_name().to_string_lossy().ends_with(".blob") {
            blobs += len;
        }
    }
    Ok((all, blobs))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize| std::env::args().nth(i);
    let n: u64 = arg(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let value_size: usize = arg(2).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let cutoff: f64 = arg(3).and_then(|s| s.parse().ok()).unwrap_or(0.25);
    let opts =
        Options { blob_threshold: Some(1024), blob_gc_age_cutoff: cutoff, ..Options::default() };
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, opts)?;
    // The keys' orders and the values' bytes, reproducible.
    let mut rng = SplitMix64::new(1);
    let mut value = vec![0u8; value_size];
    let mut order: Vec<u64> = (0..n).collect();
    for pass in 0..3 {
        if pass > 0 {
            rng.shuffle(&mut order); // every key once per pass, in a new order
        }
        for &k in &order {
            rng.fill(&mut value);
            db.put(format!("key{k:013}"), &value)?;
        }
        let (all, blobs) = disk_bytes(&dir)?;
        println!("after pass {}: {all} bytes on disk, {blobs} in blob files", pass + 1);
    }
    db.compact()?;
    let stats = db.stats();
    let (all, blobs) = disk_bytes(&dir)?;
    let live = n * (16 + value_size as u64);
    println!("keys {n}, values {value_size} bytes, blob threshold 1024, gc age cutoff {cutoff}");
    println!("after compact(): {all} bytes on disk, {blobs} in {} blob files", stats.blob_files);
    println!(
        "blob garbage {} bytes, values relocated {}",
        stats.blob_garbage_bytes, stats.blob_relocated
    );
    println!("live data (keys and newest values): {live} bytes");
    println!("disk / live: {:.3}", all as f64 / live as f64);
    Ok(())
}
