//! `siftdb wal dump FILE` and `siftdb manifest dump FILE`: the records of a write-ahead log (one
//! line per batch, then one per entry) or of a manifest (one line per version edit), read only.
//! Damage other than a torn tail is a corruption error naming the file and offset (as recovery
//! reports it); a torn tail is printed as such.

use crate::sst_dump::show_key;
use clap::Args;
use siftdb::inspect::ikey::ValueKind;
use siftdb::inspect::manifest::VersionEdit;
use siftdb::inspect::wal::decode_batch;
use siftdb::inspect::wal::read_wal;
use siftdb::storage::{FsStorage, Storage};
use siftdb::Result;
use std::path::PathBuf;

/// A log file to print.
#[derive(Args)]
pub struct LogDumpArgs {
    /// The file (`NNNNNN.log` for `wal dump`, `MANIFEST-NNNNNN` for `manifest dump`).
    file: PathBuf,
    /// Print values too (`wal dump`).
    #[arg(long)]
    values: bool,
}

pub fn wal(args: &LogDumpArgs) -> Result<()> {
    let storage = FsStorage::new();
    let rec = read_wal(storage.open(&args.file)?, &args.file)?;
    let mut entries = 0usize;
    for record in &rec.records {
        let batch = decode_batch(record)?;
        println!("batch seq {} ({} entries)", batch.first_seq, batch.records.len());
        for (i, r) in batch.records.iter().enumerate() {
            let seq = batch.first_seq + i as u64;
            match (r.kind, args.values) {
                // Never in a WAL: batches refuse the kind (it exists in SSTs only).
                (ValueKind::BlobIndex, _) => println!("  @{seq}{} BlobIndex", ks(r.keyspace)),
                (ValueKind::Put, true) => {
                    println!(
                        "  @{seq}{} Put {} => {}",
                        ks(r.keyspace),
                        show_key(r.key),
                        show_key(r.value)
                    )
                }
                (ValueKind::Put, false) => {
                    println!(
                        "  @{seq}{} Put {} ({} value bytes)",
                        ks(r.keyspace),
                        show_key(r.key),
                        r.value.len()
                    )
                }
                (ValueKind::Delete, _) => {
                    println!("  @{seq}{} Delete {}", ks(r.keyspace), show_key(r.key))
                }
                (ValueKind::Merge, true) => {
                    let (k, v) = (show_key(r.key), show_key(r.value));
                    println!("  @{seq}{} Merge {k} <= {v}", ks(r.keyspace))
                }
                (ValueKind::Merge, false) => {
                    let (k, n) = (show_key(r.key), r.value.len());
                    println!("  @{seq}{} Merge {k} ({n} operand bytes)", ks(r.keyspace))
                }
                (ValueKind::RangeDelete, _) => {
                    let (a, b) = (show_key(r.key), show_key(r.value));
                    println!("  @{seq}{} DeleteRange [{a}, {b})", ks(r.keyspace))
                }
            }
        }
        entries += batch.records.len();
    }
    println!(
        "{} batches, {entries} entries, {} of {} bytes valid{}",
        rec.records.len(),
        rec.valid_len,
        rec.file_len,
        if rec.torn_tail { " (torn tail: recovery drops the rest)" } else { "" }
    );
    Ok(())
}

/// " [keyspace N]" for a record of a keyspace other than the default, else nothing.
fn ks(id: u32) -> String {
    if id == 0 {
        String::new()
    } else {
        format!(" [keyspace {id}]")
    }
}

pub fn manifest(args: &LogDumpArgs) -> Result<()> {
    let storage = FsStorage::new();
    let rec = read_wal(storage.open(&args.file)?, &args.file)?;
    for (i, record) in rec.records.iter().enumerate() {
        let e = VersionEdit::decode(record)?;
        let mut line = format!("edit {i}:");
        if let Some(n) = e.log_number {
            line += &format!(" log_number {n}");
        }
        if let Some(n) = e.next_file_number {
            line += &format!(" next_file {n}");
        }
        if let Some(n) = e.last_sequence {
            line += &format!(" last_seq {n}");
        }
        println!("{line}");
        for k in &e.keyspaces {
            let o = &k.options;
            println!(
                "  keyspace {} {:?}: flush filter {:?}, static filter {:?} {:?}, compression {:?}, \
                 block size {}",
                k.id,
                k.name,
                o.filter_policy.flush,
                o.filter_policy.compaction,
                o.filter_policy.allocation,
                o.compression,
                o.block_size
            );
            if let Some(t) = o.blob_threshold {
                println!("  keyspace {} blob threshold {t} bytes", k.id);
            }
        }
        for id in &e.dropped_keyspaces {
            println!("  keyspace {id} dropped");
        }
        for (level, number) in &e.deleted {
            println!("  - L{level} {number:06}.sst");
        }
        for b in &e.blob_files {
            println!(
                "  + {:06}.blob keyspace {}, {} values, {} value bytes",
                b.number, b.keyspace, b.count, b.bytes
            );
        }
        for (number, count, bytes) in &e.blob_garbage {
            println!("  ~ {number:06}.blob garbage +{count} values, +{bytes} bytes");
        }
        for (level, m) in &e.added {
            println!(
                "  + L{level} {:06}.sst keyspace {}, {} bytes, {} entries, keys {}..{}, seq {}..={}{}{}",
                m.number,
                m.keyspace,
                m.size,
                m.entries,
                show_key(&m.smallest_key),
                show_key(&m.largest_key),
                m.smallest_seq,
                m.largest_seq,
                // An ingested file: its entries are stored at 0 and read at this sequence.
                m.global_seq.map_or(String::new(), |g| format!(", ingested at global seq {g}")),
                // An adopted file: its keys carry this id and are read as `keyspace`'s.
                m.stored_keyspace.map_or(String::new(), |s| format!(", keys stored as keyspace {s}"))
            );
        }
    }
    println!(
        "{} edits{}",
        rec.records.len(),
        if rec.torn_tail { " (torn tail: recovery drops the rest)" } else { "" }
    );
    Ok(())
}
