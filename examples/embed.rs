//! Embedding siftdb as a key-value store.
//!
//! ```text
//! cargo run --release --example embed [DIRECTORY]
//! ```
//!
//! Opens a database (in DIRECTORY, or in a temporary directory removed at exit), then walks
//! through the API: put, get, delete, an atomic write batch, range and prefix scans, a snapshot,
//! the stats, and finally a close and reopen that shows the data persisted.

use siftdb::{Db, Options, Result, WriteBatch, WriteOptions};
use std::path::PathBuf;

/// Shows a value (or its absence) as text.
fn show(v: Option<Vec<u8>>) -> String {
    match v {
        Some(bytes) => format!("{:?}", String::from_utf8_lossy(&bytes)),
        None => "(absent)".to_string(),
    }
}

/// Prints every entry an iterator yields, one per line.
fn print_entries(label: &str, it: siftdb::DbIterator) -> Result<()> {
    println!("{label}:");
    for entry in it {
        let (k, v) = entry?; // a damaged block surfaces here as Error::Corruption
        println!("    {} = {}", String::from_utf8_lossy(&k), String::from_utf8_lossy(&v));
    }
    Ok(())
}

fn main() -> Result<()> {
    // The directory: the first argument, or a fresh temporary one (kept alive by `_tmp`).
    let _tmp;
    let dir = match std::env::args_os().nth(1) {
        Some(p) => PathBuf::from(p),
        None => {
            let t = tempfile::tempdir().map_err(|e| siftdb::Error::io("creating a temp dir", e))?;
            let p = t.path().to_path_buf();
            _tmp = t;
            p
        }
    };
    println!("opening a database in {}", dir.display());

    // `Options::default()` creates the database if missing; every field documents its default.
    // Here the memtable is made small only so that this short example produces an SST file.
    let opts = Options { memtable_size: 1 << 20, ..Options::default() };
    let db = Db::open(&dir, opts.clone())?;

    // Single writes. Keys and values are arbitrary bytes (up to 64 KiB and 64 MiB).
    db.put("user:1:name", "Ada")?;
    db.put("user:1:lang", "Rust")?;
    db.put("user:2:name", "Grace")?;
    db.put("user:2:lang", "COBOL")?;
    db.put("config:theme", "dark")?;
    println!("get user:1:name -> {}", show(db.get("user:1:name")?));

    // Deletes write a tombstone; the key reads as absent from then on.
    db.delete("config:theme")?;
    println!("after delete, get config:theme -> {}", show(db.get("config:theme")?));

    // A write batch is atomic: all of its records become visible together, and after a crash
    // either all of them are recovered or none. Here: move user 2 to a new id.
    let mut batch = WriteBatch::new();
    batch.delete("user:2:name").delete("user:2:lang");
    batch.put("user:3:name", "Grace").put("user:3:lang", "COBOL");
    db.write(batch)?;
    println!("batch applied: user:2 -> user:3");

    // Durability is chosen per write. The default is buffered (the OS writes the log back when
    // it likes: survives a process crash, not a power loss). `sync: true` returns only after the
    // log is fsynced, and also makes every earlier buffered write durable.
    db.write_opt(
        {
            let mut b = WriteBatch::new();
            b.put("account:balance", "100");
            b
        },
        WriteOptions { sync: true },
    )?;
    println!("synced write of account:balance done");

    // Scans return entries in key order; `range` takes any Rust range of keys.
    print_entries("range user:1 .. user:3 (end excluded)", db.range("user:1".."user:3")?)?;
    print_entries("prefix user:", db.prefix("user:")?)?;

    // A snapshot is a consistent read view: later writes are invisible through it.
    let snap = db.snapshot();
    db.put("account:balance", "40")?;
    println!(
        "account:balance now {}, in the snapshot taken before {}",
        show(db.get("account:balance")?),
        show(snap.get("account:balance")?)
    );
    drop(snap); // releasing a snapshot lets the engine discard the versions it pinned

    // Enough writes to fill a memtable: it is frozen and flushed to an L0 SST in the background.
    // `flush()` forces the same for whatever is left and waits for it.
    for i in 0..20_000u32 {
        db.put(format!("bulk:{i:06}"), format!("value number {i}"))?;
    }
    db.flush()?;
    println!("loaded 20000 bulk keys and flushed");

    // Point lookups of keys that are not there are answered by the SSTs' filters, mostly
    // without reading a data block. The stats show it per level.
    // `Stats::since` gives the counters of one phase.
    let before = db.stats();
    for i in 0..10_000u32 {
        let _ = db.get(format!("bulk:{i:06}x"))?; // never present, inside the key range
    }
    let stats = db.stats().since(&before);
    println!(
        "10000 lookups of missing keys: {} flushes so far, {} gets ({} found)",
        stats.flushes, stats.gets, stats.gets_found
    );
    print!("{}", stats.read_amp_table(stats.gets));
    for (name, value) in stats.tickers() {
        println!("    {name:<42} {value}");
    }

    // Dropping the handle closes the database: the flush thread stops and the directory lock is
    // released. Unflushed writes are in the write-ahead log and are replayed by the next open.
    db.put("written:last", "just before close")?;
    drop(db);
    println!("closed; reopening");

    let db = Db::open(&dir, opts)?;
    println!("after reopen:");
    for key in ["user:1:name", "user:2:name", "user:3:name", "account:balance", "written:last"] {
        println!("    get {key} -> {}", show(db.get(key)?));
    }
    println!("    bulk keys present: {}", db.prefix("bulk:")?.count());
    Ok(())
}
