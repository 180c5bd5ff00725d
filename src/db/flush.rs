//! Flush: an immutable memtable becomes an L0 SST, installed by one manifest edit.
//!
//! Order of durable steps (design.md, "Flush"): write the SST and fsync it; fsync the directory
//! so its entry exists after a crash; append the version edit (new file, new log number) to the
//! manifest and fsync it; only then swap the in-memory version and delete WALs older than the
//! edit's log number. A crash before the manifest edit leaves an orphan SST that the next open
//! deletes, and the WAL still holds the data.
//!
//! Flush filter rule: with the two-bit policy, the memtable's own filter (filled lock-free as
//! writes arrived) is written as is when (a) its FPR estimated from its bits is at most the
//! policy's FPR at the configured bits per key and (b) it is at most twice the size that bits
//! per key gives for the keys actually flushed (a memtable of large values would otherwise carry
//! an oversized filter to disk). Otherwise a filter of the right size is rebuilt from the keys.
//! `Stats::flush_filter_as_is` / `flush_filter_rebuilt` count the two cases.

use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::filename;
use crate::filter::prelude::*;
use crate::filter::{BlockedBloom, StandardBloom, TwoBitBloom};
use crate::ikey;
use crate::manifest::{FileMeta, VersionEdit};
use crate::memtable::Memtable;
use crate::options::{Compression, FilterConfig, Options};
use crate::sst::{self, FilterBlockSource, TableBuilder, TableOptions};
use crate::version::TableFile;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Starts the background flush thread.
pub(crate) fn spawn_flusher(inner: Arc<DbInner>) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("siftdb-flush".into())
        .spawn(move || flush_loop(&inner))
        .map_err(|e| crate::Error::io("spawning the flush thread", e))
}

fn flush_loop(inner: &DbInner) {
    loop {
        let next = {
            let mut g = inner.bg_lock.lock();
            loop {
                if inner.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                if inner.bg_error.lock().is_none() {
                    if let Some(m) = inner.super_version().imm.last().cloned() {
                        break m;
                    }
                }
                inner.bg_cv.wait(&mut g);
            }
        };
        if let Err(e) = flush_one(inner, &next) {
            inner.set_bg_error(&e);
        }
        let _g = inner.bg_lock.lock();
        inner.bg_cv.notify_all();
    }
}

/// Freezes the active memtable (if it holds anything) and waits until no immutable memtable is
/// left.
pub(crate) fn flush_and_wait(inner: &DbInner) -> Result<()> {
    super::write::rotate_if_nonempty(inner)?;
    let mut g = inner.bg_lock.lock();
    loop {
        inner.check_writable()?;
        if inner.super_version().imm.is_empty() {
            return Ok(());
        }
        inner.bg_cv.wait_for(&mut g, std::time::Duration::from_millis(100));
    }
}

/// Table options of files written to `level` (0 for flushes, the output level for compactions),
/// derived from the engine options.
pub(crate) fn table_options(opts: &Options, level: usize) -> TableOptions {
    TableOptions {
        block_size: opts.block_size,
        restart_interval: opts.block_restart_interval,
        compression: match opts.compression_for_level(level) {
            Compression::None => sst::Compression::None,
            Compression::Zstd(level) => sst::Compression::Zstd { level },
            Compression::Lz4 => sst::Compression::Lz4,
        },
    }
}

/// Writes `mem` to a new SST and syncs it and the directory. Returns the open table file.
pub(crate) fn write_l0_table(inner: &DbInner, mem: &Memtable) -> Result<Arc<TableFile>> {
    let number = inner.new_file_number();
    let path = inner.dir.join(filename::sst_name(number));
    let file = inner.storage.create_immutable(&path)?;
    let mut builder = TableBuilder::new(file, table_options(&inner.opts, 0))?;
    let mut distinct = 0u64;
    let mut last: Vec<u8> = Vec::new();
    let mut ikey_buf: Vec<u8> = Vec::new();
    // Versions no reader can see are not written (the rule of compaction/job.rs): for each user
    // key the newest, and for each live snapshot s the newest with sequence <= s. Sound because
    // a frozen memtable's writes were all published before it was frozen (rotation and publication
    // both happen under the writer lock), so a snapshot taken after this list is read sees the
    // newest version of every key here; and a read without a snapshot loads its super-version
    // before its sequence, so it still reads the memtable it started with (design.md,
    // "Read-path concurrency"). Tombstones stay: older levels may hold what they delete.
    let snapshots: std::collections::BTreeSet<u64> =
        inner.snapshots.lock().keys().copied().collect();
    let mut newer = u64::MAX;
    mem.for_each(|key, seq, kind, value| {
        let first_of_key = distinct == 0 || last.as_slice() != key;
        if first_of_key {
            distinct += 1;
            last.clear();
            last.extend_from_slice(key);
        } else if snapshots.range(seq..newer).next().is_none() {
            newer = seq;
            return Ok(());
        }
        newer = seq;
        ikey_buf.clear();
        ikey::encode_into(&mut ikey_buf, key, seq, kind);
        builder.add(&ikey_buf, value)
    })?;
    // Range tombstones all go to the table (design.md, "Range tombstones"): older levels may
    // hold what they delete.
    for t in mem.range_tombstones().tombstones() {
        builder.add_range_tombstone(t)?;
    }
    let source = flush_filter(inner, mem, distinct);
    let summary = builder.finish(source)?;
    if crate::testing::enabled("flush.sync_dir") {
        inner.storage.sync_dir(&inner.dir)?;
    }
    let table = inner.tables.open(number)?;
    let meta = FileMeta {
        number,
        size: summary.file_size,
        smallest_key: summary.smallest_key,
        largest_key: summary.largest_key,
        smallest_seq: summary.smallest_seq,
        largest_seq: summary.largest_seq,
        entries: summary.entries,
    };
    Ok(Arc::new(TableFile::new(meta, &table, inner.tables.clone())))
}

/// Chooses the filter block of a flushed table (module documentation, "Flush filter rule").
fn flush_filter(inner: &DbInner, mem: &Memtable, distinct: u64) -> FilterBlockSource {
    match inner.opts.filter_policy.flush {
        FilterConfig::None => FilterBlockSource::None,
        FilterConfig::TwoBitBloom { bits_per_key } => {
            let f = mem.filter();
            let target = <TwoBitBloom as BloomShape>::theoretical_fpr(bits_per_key, 2);
            let right_size_bits = bits_per_key * distinct.max(1) as f64;
            let info = f.info();
            if info.estimated_fpr <= target && (info.bits as f64) <= 2.0 * right_size_bits {
                inner.counters.flush_filter_as_is.fetch_add(1, Ordering::Relaxed);
                FilterBlockSource::Bytes(f.to_bytes())
            } else {
                inner.counters.flush_filter_rebuilt.fetch_add(1, Ordering::Relaxed);
                FilterBlockSource::Build(Box::new(move |hashes: &[u64]| {
                    let mut f = TwoBitBloom::with_bits_per_key(bits_per_key)
                        .expected_items(hashes.len() as u64)?;
                    f.insert_batch(hashes);
                    Ok(f.to_bytes())
                }))
            }
        }
        FilterConfig::BlockedBloom { bits_per_key } => {
            FilterBlockSource::Build(Box::new(move |hashes: &[u64]| {
                let mut f = BlockedBloom::with_bits_per_key(bits_per_key)
                    .expected_items(hashes.len() as u64)?;
                f.insert_batch(hashes);
                Ok(f.to_bytes())
            }))
        }
        FilterConfig::StandardBloom { bits_per_key } => {
            FilterBlockSource::Build(Box::new(move |hashes: &[u64]| {
                let mut f = StandardBloom::with_bits_per_key(bits_per_key)
                    .expected_items(hashes.len() as u64)?;
                f.insert_batch(hashes);
                Ok(f.to_bytes())
            }))
        }
    }
}

/// Flushes the memtable recovery replayed, before `Db::open` returns. The replayed records may
/// be durable only through a sync of their old WAL that cannot be trusted: if the previous
/// process's closing WAL sync failed (its error has nowhere to go), a new fsync of that file
/// returns success without making anything durable (Linux after a writeback error), and newer
/// synced writes would then outlive these older ones after a power loss: a hole. A fresh L0
/// table, synced and installed before any new write is accepted, is durable for certain.
/// (Found by tests/reliability_io_errors.rs.)
pub(crate) fn flush_recovered(inner: &DbInner) -> Result<()> {
    while let Some(m) = inner.super_version().imm.last().cloned() {
        flush_one(inner, &m)?;
    }
    Ok(())
}

/// Flushes the oldest immutable memtable `mem` and installs the result.
fn flush_one(inner: &DbInner, mem: &Arc<Memtable>) -> Result<()> {
    let file = write_l0_table(inner, mem)?;
    let file_size = file.meta.size;
    let mut manifest = inner.manifest.lock();
    let sv = inner.super_version();
    // WALs below the oldest memtable still unflushed after this one are obsolete.
    let log_number = sv
        .imm
        .iter()
        .rev()
        .find(|m| !Arc::ptr_eq(m, mem))
        .map_or(sv.mem.wal_number(), |m| m.wal_number());
    let edit = VersionEdit {
        log_number: Some(log_number),
        next_file_number: Some(inner.next_file.load(Ordering::SeqCst)),
        last_sequence: Some(inner.visible_seq.load(Ordering::Acquire)),
        added: vec![(0, file.meta.clone())],
        deleted: vec![],
    };
    manifest.append(&edit)?;
    inner.install_super_version(|cur| SuperVersion {
        mem: cur.mem.clone(),
        imm: cur.imm.iter().filter(|m| !Arc::ptr_eq(m, mem)).cloned().collect(),
        version: Arc::new(cur.version.with_file(0, file)),
    });
    drop(manifest);
    inner.counters.flushes.fetch_add(1, Ordering::Relaxed);
    inner.counters.flush_bytes_written.fetch_add(file_size, Ordering::Relaxed);
    delete_obsolete_wals(inner, log_number);
    super::compact::purge_obsolete(inner);
    Ok(())
}

/// Removes WAL files numbered below `log_number`. Failures are ignored: a leftover WAL is
/// skipped by recovery (its number is below the manifest's log number) and retried next time.
pub(crate) fn delete_obsolete_wals(inner: &DbInner, log_number: u64) {
    if let Ok(names) = inner.storage.list(&inner.dir) {
        for name in names {
            if let Some((filename::FileKind::Wal, n)) = filename::parse_file_name(&name) {
                if n < log_number {
                    let _ = inner.storage.remove(&inner.dir.join(&name));
                }
            }
        }
    }
}
