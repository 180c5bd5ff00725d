//! `siftdb stats DB`: the level table of a database on disk, read from its manifest, table files
//! and WALs without opening the database (nothing is written: no WAL replay into a memtable, no
//! new manifest, and the directory lock is not taken, so it also works beside a running
//! process). The `WAL` row counts the entries of the WALs numbered at or above the manifest's log
//! number: writes not flushed to a table yet, which recovery would replay.

use siftdb::inspect::filename;
use siftdb::inspect::filename::FileKind;
use siftdb::inspect::ikey::ValueKind;
use siftdb::inspect::manifest;
use siftdb::inspect::sst::Table;
use siftdb::inspect::wal::decode_batch;
use siftdb::inspect::wal::read_wal;
use siftdb::storage::{FsStorage, Storage};
use siftdb::{Error, Result};
use std::path::{Path, PathBuf};

/// The unflushed WALs of a database, summed.
#[derive(Default)]
struct WalSummary {
    files: u64,
    bytes: u64,
    entries: u64,
    deletions: u64,
}

/// Reads every WAL numbered `>= log_number` in `dir` (read only; a torn tail, which a process
/// still writing or a crash leaves, ends the count of its file as recovery would).
fn wal_summary(storage: &dyn Storage, dir: &Path, log_number: u64) -> Result<WalSummary> {
    let mut sum = WalSummary::default();
    for name in storage.list(dir)? {
        let Some((FileKind::Wal, n)) = filename::parse_file_name(&name) else { continue };
        if n < log_number {
            continue;
        }
        let path = dir.join(&name);
        let rec = read_wal(storage.open(&path)?, &path)?;
        sum.files += 1;
        sum.bytes += rec.file_len;
        for (i, record) in rec.records.iter().enumerate() {
            let batch = decode_batch(record).map_err(|e| Error::Corruption {
                file: Some(path.clone()),
                offset: None,
                what: format!("WAL record {i} holds a malformed write batch: {e}"),
            })?;
            sum.entries += batch.records.len() as u64;
            sum.deletions +=
                batch.records.iter().filter(|r| r.kind == ValueKind::Delete).count() as u64;
        }
    }
    Ok(sum)
}

/// `println!` that ends the command quietly when stdout is closed (e.g. piped into `head`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($t)*).is_err() {
            return Ok(());
        }
    }};
}

/// Arguments of `stats`.
#[derive(clap::Args, Debug, Clone)]
pub struct StatsArgs {
    /// Database directory.
    db: PathBuf,
}

pub fn run(args: &StatsArgs) -> Result<()> {
    let storage = FsStorage::new();
    let state = manifest::recover(&storage, &args.db)?
        .ok_or_else(|| Error::invalid(format!("no database in {}", args.db.display())))?;
    say!(
        "database {}: manifest {} ({} edits), log number {}, next file {}, last sequence {}",
        args.db.display(),
        state.manifest_number,
        state.edits,
        state.log_number,
        state.next_file_number,
        state.last_sequence
    );
    say!(
        "{:<6} {:>5} {:>12} {:>10} {:>10} {:<18} {:>10} {:>9} {:>10}",
        "level",
        "files",
        "bytes",
        "entries",
        "tombstones",
        "filter",
        "filter_KiB",
        "bits/key",
        "fpr"
    );
    let (mut total_bytes, mut total_entries, mut total_filter) = (0u64, 0u64, 0u64);
    for (level, files) in state.levels.iter().enumerate() {
        if files.is_empty() {
            continue;
        }
        let (mut bytes, mut entries, mut dels, mut fbytes) = (0u64, 0u64, 0u64, 0u64);
        let mut kinds: Vec<String> = Vec::new();
        // The FPR each filter's parameters fix (Ribbon, xor, binary fuse), weighted by entries.
        let (mut fpr_sum, mut fpr_entries) = (0.0, 0u64);
        for meta in files.values() {
            let path = args.db.join(filename::sst_name(meta.number));
            let t = Table::open(storage.open(&path)?, meta.number, None, &path)?;
            let p = t.properties();
            bytes += meta.size;
            entries += p.entries;
            dels += p.deletions;
            fbytes += p.filter_bytes;
            if let Some(fpr) = t.filter().and_then(|f| f.parameter_fpr()) {
                fpr_sum += fpr * p.entries as f64;
                fpr_entries += p.entries;
            }
            let k = t.filter_kind().map_or("none".to_string(), |k| k.name().to_string());
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        let bpk = if entries == 0 { 0.0 } else { fbytes as f64 * 8.0 / entries as f64 };
        let fpr = match fpr_entries {
            0 => "-".to_string(),
            n => format!("{:.4}%", fpr_sum / n as f64 * 100.0),
        };
        say!(
            "{:<6} {:>5} {:>12} {:>10} {:>10} {:<18} {:>10.1} {:>9.2} {:>10}",
            format!("L{level}"),
            files.len(),
            bytes,
            entries,
            dels,
            kinds.join("+"),
            fbytes as f64 / 1024.0,
            bpk,
            fpr
        );
        total_bytes += bytes;
        total_entries += entries;
        total_filter += fbytes;
    }
    let wal = wal_summary(&storage, &args.db, state.log_number)?;
    say!(
        "{:<6} {:>5} {:>12} {:>10} {:>10} {:<18} {:>10} {:>9} {:>10}",
        "WAL",
        wal.files,
        wal.bytes,
        wal.entries,
        wal.deletions,
        "-",
        "-",
        "-",
        "-"
    );
    total_bytes += wal.bytes;
    total_entries += wal.entries;
    if !state.blobs.is_empty() {
        // Blob files (design.md#key-value-separation): their values, and how much of them no
        // table refers to any more.
        let mut file_bytes = 0u64;
        for b in state.blobs.values() {
            file_bytes += storage.open(&args.db.join(filename::blob_name(b.number)))?.len();
        }
        let values: u64 = state.blobs.values().map(|b| b.count - b.garbage_count).sum();
        let bytes: u64 = state.blobs.values().map(|b| b.bytes).sum();
        let garbage: u64 = state.blobs.values().map(|b| b.garbage_bytes).sum();
        say!(
            "{:<6} {:>5} {:>12} {:>10} {:>10} {:<18} {:>10} {:>9} {:>10}",
            "blob",
            state.blobs.len(),
            file_bytes,
            values,
            "-",
            format!("garbage {:.1}%", garbage as f64 * 100.0 / bytes.max(1) as f64),
            "-",
            "-",
            "-"
        );
        total_bytes += file_bytes;
    }
    say!(
        "total: {total_bytes} bytes, {total_entries} entries ({} in the WAL, not yet flushed), \
         {:.1} KiB of filters",
        wal.entries,
        total_filter as f64 / 1024.0
    );
    say!("(read-amplification counters live in a running process: see Db::stats)");
    Ok(())
}
