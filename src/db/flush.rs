//! Flush: an immutable memtable becomes an L0 SST, installed by one manifest edit.
//!
//! Order of durable steps (design.md#flush): write the SST and fsync it; fsync the directory
//! so its entry exists after a crash; append the version edit (new file, new log number) to the
//! manifest and fsync it; only then swap the in-memory version and delete WALs older than the
//! edit's log number. A crash before the manifest edit leaves an orphan SST that the next open
//! deletes, and the WAL still holds the data.
//!
//! Flush filter rule: with the two-bit policy, the memtable's own filter (filled lock-free as
//! writes arrived) is written as is when (a) its FPR estimated from its bits is at most the
//! policy's FPR at the configured bits per key and (b) it is at most twice the size that bits
//! per key gives for the keys actually flushed (a memtable of large values would otherwise carry
//! an oversized filter to disk). Otherwise a filter of the right size is rebuilt from the keys,
//! as is every flush filter of another kind (a blocked Bloom filter where the plan's floor
//! takes L0 off the two-bit one: `filter_plan::flush_filter`).
//! `Stats::flush_filter_as_is` / `flush_filter_rebuilt` count the two cases.

use super::keyspace::Layout;
use super::{DbInner, SuperVersion};
use crate::compaction::collapse::{collapse, Version};
use crate::error::Result;
use crate::filename;
use crate::filter::prelude::*;
use crate::filter::{BlockedBloom, StandardBloom, TwoBitBloom};
use crate::filter_plan::flush::two_bit_as_planned;
use crate::filter_plan::{self, flush_filter_bits, L0Filter};
use crate::ikey::{self, ValueKind};
use crate::manifest::{FileMeta, Rollover, VersionEdit};
use crate::memtable::Memtable;
use crate::options::FilterConfig;
use crate::range_del::Fragments;
use crate::sst::{FilterBlockSource, TableBuilder};
use crate::version::TableFile;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Starts the background flush thread.
pub(crate) fn spawn_flusher(inner: Arc<DbInner>) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("siftdb-flush".into())
        .spawn(move || inner.run_background("flush", || flush_loop(&inner)))
        .map_err(|e| crate::Error::io("spawning the flush thread", e))
}

fn flush_loop(inner: &DbInner) {
    loop {
        let next = {
            let mut g = inner.bg_lock.lock();
            loop {
                if inner.is_closing() {
                    return;
                }
                if !inner.life.is_read_only() {
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

/// Freezes the active memtable (if it holds anything) and waits until every memtable frozen by
/// then is flushed: every write acknowledged before the call is then in an SST.
///
/// Only those memtables are waited for, not an empty immutable list: under a steady stream of
/// writes new memtables are frozen as fast as old ones are flushed, and waiting for the list to
/// drain starved `Db::flush`, `Db::compact` and `Db::checkpoint` for as long as the writer ran
/// (tests/checkpoint.rs, a checkpoint during writes in two keyspaces).
pub(crate) fn flush_and_wait(inner: &DbInner) -> Result<()> {
    super::write::rotate_if_nonempty(inner)?;
    let frozen: Vec<Arc<Memtable>> = inner.super_version().imm.clone();
    let mut g = inner.bg_lock.lock();
    loop {
        inner.check_writable()?;
        let imm = inner.super_version().imm.clone();
        if !imm.iter().any(|m| frozen.iter().any(|f| Arc::ptr_eq(f, m))) {
            return Ok(());
        }
        inner.bg_cv.wait_for(&mut g, std::time::Duration::from_millis(100));
    }
}

/// One L0 table being written: its keyspace, number and builder.
struct L0Output {
    keyspace: u32,
    number: u64,
    builder: TableBuilder,
    distinct: u64,
    /// The memtable's range tombstones of `keyspace`: an operand chain ends at a version they
    /// delete (see [`add_collapsed`]).
    tombstones: Fragments,
    /// The keyspace's blob threshold, and the blob file its large values go to (made at the
    /// first one).
    blob_threshold: Option<u32>,
    blob: Option<crate::sst::blob::BlobWriter>,
}

impl L0Output {
    /// Adds `(key, seq, kind)` with `value`; a Put of a value at or above the blob threshold
    /// goes to the blob file and the table gets a `BlobIndex` entry referring to it.
    fn add(
        &mut self,
        inner: &DbInner,
        made: &mut Vec<u64>,
        ikey_buf: &mut Vec<u8>,
        (key, seq, kind): (&[u8], u64, ValueKind),
        value: &[u8],
    ) -> Result<()> {
        ikey_buf.clear();
        if kind == ValueKind::Put && self.blob_threshold.is_some_and(|t| value.len() >= t as usize)
        {
            let w = match &mut self.blob {
                Some(w) => w,
                none => {
                    let number = inner.new_file_number();
                    made.push(number);
                    let w = crate::sst::blob::BlobWriter::create(
                        &*inner.storage,
                        &inner.dir,
                        number,
                        self.keyspace,
                    )?;
                    none.insert(w)
                }
            };
            let r = w.add(key, value)?.encode();
            ikey::encode_in_into(ikey_buf, self.keyspace, key, seq, ValueKind::BlobIndex);
            return self.builder.add(ikey_buf, &r);
        }
        ikey::encode_in_into(ikey_buf, self.keyspace, key, seq, kind);
        self.builder.add(ikey_buf, value)
    }
}

/// What a flush wrote: the L0 tables, and the blob files their references name.
pub(crate) struct FlushOutput {
    /// The tables, in key order.
    pub files: Vec<Arc<TableFile>>,
    /// The blob files (synced).
    pub blobs: Vec<crate::sst::blob::BlobMeta>,
    /// Bytes of the blob files.
    pub blob_file_bytes: u64,
}

/// Writes `mem` to new L0 SSTs, one per keyspace it holds (files never mix keyspaces), each
/// built with its keyspace's options; entries of keyspaces no longer live (dropped) are
/// discarded. Syncs the files and the directory and returns the open table files, in key order.
pub(crate) fn write_l0_tables(inner: &DbInner, mem: &Memtable) -> Result<FlushOutput> {
    let mut made: Vec<u64> = Vec::new();
    let r = write_l0_tables_inner(inner, mem, &mut made);
    if r.is_err() {
        for n in made {
            inner.tables.evict(n);
            let _ = inner.storage.remove(&inner.dir.join(filename::sst_name(n)));
            let _ = inner.storage.remove(&inner.dir.join(filename::blob_name(n)));
        }
    }
    r
}

fn write_l0_tables_inner(
    inner: &DbInner,
    mem: &Memtable,
    made: &mut Vec<u64>,
) -> Result<FlushOutput> {
    let set = inner.keyspaces.load_full();
    let mut blobs: Vec<(crate::sst::blob::BlobMeta, u64)> = Vec::new();
    let mut out: Option<L0Output> = None;
    let mut summaries: Vec<(u32, u64, crate::sst::TableSummary)> = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    let mut ikey_buf: Vec<u8> = Vec::new();
    // Versions no reader can see are not written (the rule of compaction/job.rs): for each user
    // key the newest, and for each live snapshot s the newest with sequence <= s. Sound because
    // a frozen memtable's writes were all published before it was frozen (rotation and publication
    // both happen under the writer lock), so a snapshot taken after this list is read sees the
    // newest version of every key here; and a read without a snapshot loads its super-version
    // before its sequence, so it still reads the memtable it started with (design.md#concurrency).
    // Tombstones stay: older levels may hold what they delete.
    // Merge operands: a stripe (compaction/collapse.rs) whose newest version is an operand is
    // buffered to the end of its key and collapsed with the operator, as compaction does, but
    // never as the bottommost level (older tables may hold the key), and after dropping the
    // versions a range tombstone deletes for every reader (compaction/job.rs `emit`), so no
    // operand is ever merged onto what a tombstone deleted.
    let snapshots: std::collections::BTreeSet<u64> =
        inner.snapshots.lock().keys().copied().collect();
    let op = inner.opts.merge_operator.as_deref();
    // TTL and compaction filters (design.md#compaction-filters): per keyspace, at one time.
    let now = super::ttl::now_ms(&inner.opts);
    let ttl_op = super::ttl::operator_for(inner.opts.merge_operator.as_ref(), Some(1));
    let max_snapshot = snapshots.last().copied();
    let mut retention = crate::compaction_filter::Retention::default();
    let mut newer = u64::MAX;
    let mut operands: Option<Vec<Version>> = None;
    let op_of = |r: &crate::compaction_filter::Retention| match r.ttl_ms {
        Some(_) => ttl_op.as_deref(),
        None => op,
    };
    mem.for_each(|keyspace, key, seq, kind, value| {
        if !set.is_live(keyspace) {
            return Ok(()); // a dropped keyspace: never written, never read
        }
        if out.as_ref().is_none_or(|o| o.keyspace != keyspace) {
            if let Some(mut o) = out.take() {
                if let Some(versions) = operands.take() {
                    add_collapsed(
                        &mut o,
                        &last,
                        versions,
                        &snapshots,
                        op_of(&retention),
                        &retention,
                    )?;
                }
                summaries.push(finish_l0(inner, mem, o, &mut blobs)?);
            }
            let number = inner.new_file_number();
            made.push(number);
            let path = inner.dir.join(filename::sst_name(number));
            let file = inner.storage.create_immutable(&path)?;
            let layout = Layout::of(&inner.opts, &set, keyspace, 0);
            let mut builder = TableBuilder::new(file, layout.table)?;
            builder.set_scan_filters(crate::sst::ScanFilterSpec::of(&inner.opts));
            // Recorded only if the table gets operands; "" when none is configured (a WAL
            // replayed without an operator: the operands' operator is unknown).
            builder.set_merge_operator(op.map_or("", |op| op.name()));
            let tombstones = mem.range_tombstones(keyspace);
            retention = super::ttl::retention(&inner.opts, &set, keyspace, now);
            builder.set_write_times(retention.ttl_ms.is_some());
            out = Some(L0Output {
                keyspace,
                number,
                builder,
                distinct: 0,
                tombstones,
                blob_threshold: layout.blob_threshold,
                blob: None,
            });
        }
        let o = out.as_mut().expect("an output is open");
        let first_of_key = o.distinct == 0 || last.as_slice() != key;
        if first_of_key {
            if let Some(versions) = operands.take() {
                add_collapsed(o, &last, versions, &snapshots, op_of(&retention), &retention)?;
            }
            o.distinct += 1;
            last.clear();
            last.extend_from_slice(key);
        } else if let Some(versions) = &mut operands {
            versions.push(Version { seq, kind, value: value.to_vec() });
            return Ok(());
        } else if snapshots.range(seq..newer).next().is_none() {
            newer = seq;
            return Ok(());
        }
        newer = seq;
        if kind == ValueKind::Merge {
            operands = Some(vec![Version { seq, kind, value: value.to_vec() }]);
            return Ok(());
        }
        // The lifecycle rule: the key's newest version, seen by no snapshot.
        let (mut kind, mut value) = (kind, std::borrow::Cow::Borrowed(value));
        if first_of_key && kind == ValueKind::Put && max_snapshot.is_none_or(|s| seq > s) {
            if retention.expired(&value) {
                (kind, value) = (ValueKind::Delete, Default::default());
            } else {
                match retention.decide(0, key, &value, crate::EntryKind::Value) {
                    crate::Decision::Keep => {}
                    crate::Decision::Change(v) => value = v.into(),
                    crate::Decision::Remove => {
                        (kind, value) = (ValueKind::Delete, Default::default())
                    }
                }
            }
        }
        o.add(inner, made, &mut ikey_buf, (key, seq, kind), &value)
    })?;
    if let Some(mut o) = out.take() {
        if let Some(versions) = operands.take() {
            add_collapsed(&mut o, &last, versions, &snapshots, op_of(&retention), &retention)?;
        }
        summaries.push(finish_l0(inner, mem, o, &mut blobs)?);
    }
    // A keyspace with range tombstones but no point entry here still gets a table: older
    // levels may hold what its tombstones delete.
    for keyspace in mem.range_tombstone_keyspaces() {
        if !set.is_live(keyspace) || summaries.iter().any(|(ks, _, _)| *ks == keyspace) {
            continue;
        }
        let number = inner.new_file_number();
        made.push(number);
        let path = inner.dir.join(filename::sst_name(number));
        let file = inner.storage.create_immutable(&path)?;
        let layout = Layout::of(&inner.opts, &set, keyspace, 0);
        let builder = TableBuilder::new(file, layout.table)?;
        let tombstones = Fragments::default(); // only used for point entries
        let o = L0Output {
            keyspace,
            number,
            builder,
            distinct: 0,
            tombstones,
            blob_threshold: None,
            blob: None,
        };
        summaries.push(finish_l0(inner, mem, o, &mut blobs)?);
    }
    if crate::testing::enabled("flush.sync_dir") && !summaries.is_empty() {
        inner.storage.sync_dir(&inner.dir)?;
    }
    let mut files = Vec::with_capacity(summaries.len());
    for (keyspace, number, summary) in summaries {
        let table = inner.tables.open(number)?;
        let meta = FileMeta {
            number,
            size: summary.file_size,
            smallest_key: summary.smallest_key,
            largest_key: summary.largest_key,
            smallest_seq: summary.smallest_seq,
            largest_seq: summary.largest_seq,
            entries: summary.entries,
            keyspace,
            global_seq: None,
            stored_keyspace: None,
        };
        files.push(Arc::new(TableFile::new(meta, &table, inner.tables.clone())));
    }
    let blob_file_bytes = blobs.iter().map(|(_, size)| size).sum();
    let blobs = blobs.into_iter().map(|(meta, _)| meta).collect();
    Ok(FlushOutput { files, blobs, blob_file_bytes })
}

/// Finishes one L0 table with its filter (module documentation, "Flush filter rule").
fn finish_l0(
    inner: &DbInner,
    mem: &Memtable,
    mut o: L0Output,
    blobs: &mut Vec<(crate::sst::blob::BlobMeta, u64)>,
) -> Result<(u32, u64, crate::sst::TableSummary)> {
    // The blob file is synced before the table that refers to it; the directory sync and the
    // manifest edit naming both follow.
    if let Some(w) = o.blob.take() {
        blobs.push(w.finish()?);
    }
    let set = inner.keyspaces.load();
    let layout = Layout::of(&inner.opts, &set, o.keyspace, 0);
    let v = inner.super_version().version.clone();
    let shape = super::plan::live_shape(
        inner,
        &v,
        super::plan::l0_runs_beside(&v, 0, 1),
        crate::filter_plan::Writes::Ongoing,
    );
    let planned = filter_plan::l0_filter(&layout.policy, &shape);
    let mut builder = o.builder;
    builder.set_keyspace(o.keyspace);
    // The keyspace's range tombstones all go to its table (design.md#range-tombstones):
    // older levels may hold what they delete.
    for t in mem.range_tombstones(o.keyspace).tombstones() {
        builder.add_range_tombstone(t)?;
    }
    let source = filter_block_source(inner, planned, mem, o.distinct);
    Ok((o.keyspace, o.number, builder.finish(source)?))
}

/// Adds the versions of `key` that survive [`collapse`] (`versions`: from a stripe whose newest
/// version is an operand to the key's last, newest first) to `o`'s table.
///
/// First the versions that every reader able to see them finds deleted by one of the
/// memtable's range tombstones are dropped, as compaction does (compaction/job.rs `emit`): the
/// oldest reader of a version is the first snapshot at or above it, else the current state,
/// and a tombstone newer than the version and visible to that reader is visible to every newer
/// one. Without this, the operands after a `delete_range` would be merged onto the values and
/// operands it deleted into one Put newer than the tombstone, resurrecting them. The
/// tombstones themselves are all written to the table (`finish_l0`).
fn add_collapsed(
    o: &mut L0Output,
    key: &[u8],
    mut versions: Vec<Version>,
    snapshots: &std::collections::BTreeSet<u64>,
    op: Option<&dyn crate::merge::MergeOperator>,
    retention: &crate::compaction_filter::Retention,
) -> Result<()> {
    // The lifecycle rule (design.md#compaction-filters), as compaction/job.rs `emit` applies
    // it: only to the key's newest version, when no live snapshot can see it.
    let unseen = |seq: u64| snapshots.last().is_none_or(|&s| seq > s);
    // The first expired version only the current state reads becomes a tombstone, as a
    // read treats it (src/db/ttl.rs).
    for v in versions.iter_mut().take_while(|v| unseen(v.seq)) {
        if matches!(v.kind, ValueKind::Put | ValueKind::Merge) && retention.expired(&v.value) {
            v.kind = ValueKind::Delete;
            v.value.clear();
            break;
        }
    }
    let covering = o.tombstones.covering_seqs(key);
    if !covering.is_empty() {
        versions.retain(|v| {
            let oldest_reader = snapshots.range(v.seq..).next().copied().unwrap_or(u64::MAX);
            !covering.iter().any(|&t| t > v.seq && t <= oldest_reader)
        });
    }
    let mut k = Vec::with_capacity(key.len() + ikey::TRAILER_LEN);
    let head_kind = versions.first().map(|v| v.kind);
    let mut keep = collapse(key, versions, snapshots, false, op);
    if let Some(v) = keep.first_mut() {
        if v.kind == ValueKind::Put && unseen(v.seq) {
            let kind = match head_kind {
                Some(ValueKind::Merge) => crate::EntryKind::MergeResult,
                _ => crate::EntryKind::Value,
            };
            match retention.decide(0, key, &v.value, kind) {
                crate::Decision::Keep => {}
                crate::Decision::Change(value) => v.value = value,
                crate::Decision::Remove => {
                    v.kind = ValueKind::Delete;
                    v.value.clear();
                }
            }
        }
    }
    for v in keep {
        k.clear();
        ikey::encode_in_into(&mut k, o.keyspace, key, v.seq, v.kind);
        o.builder.add(&k, &v.value)?;
    }
    Ok(())
}

/// Chooses the filter block of a flushed table (module documentation, "Flush filter rule").
/// The memtable's filter covers every keyspace it holds, so it is written as is only when the
/// memtable holds one keyspace and it is the filter `planned` wants
/// (`filter_plan::flush::two_bit_as_planned`); otherwise each table's filter is rebuilt from its
/// own keys, a two-bit one with `planned.nearest` at the power of two nearest its bits
/// (`flush_filter_bits`).
fn filter_block_source(
    inner: &DbInner,
    planned: L0Filter,
    mem: &Memtable,
    distinct: u64,
) -> FilterBlockSource {
    let nearest = planned.nearest;
    match planned.config {
        FilterConfig::None => FilterBlockSource::None,
        FilterConfig::TwoBitBloom { bits_per_key } => {
            let f = mem.filter();
            let info = f.info();
            let as_planned = two_bit_as_planned(
                bits_per_key,
                nearest,
                (info.bits, info.estimated_fpr),
                distinct,
            );
            if !mem.holds_several_keyspaces() && as_planned {
                inner.counters.flush_filter_as_is.fetch_add(1, Ordering::Relaxed);
                FilterBlockSource::Bytes(f.to_bytes())
            } else {
                inner.counters.flush_filter_rebuilt.fetch_add(1, Ordering::Relaxed);
                FilterBlockSource::Build(Box::new(move |hashes: &[u64]| {
                    let n = hashes.len() as u64;
                    let mut f = if nearest {
                        TwoBitBloom::from_shape(flush_filter_bits(bits_per_key, n), 2)?
                    } else {
                        TwoBitBloom::with_bits_per_key(bits_per_key).expected_items(n)?
                    };
                    f.insert_batch(hashes);
                    Ok(f.to_bytes())
                }))
            }
        }
        FilterConfig::BlockedBloom { bits_per_key } => {
            inner.counters.flush_filter_rebuilt.fetch_add(1, Ordering::Relaxed);
            FilterBlockSource::Build(Box::new(move |hashes: &[u64]| {
                let mut f = BlockedBloom::with_bits_per_key(bits_per_key)
                    .expected_items(hashes.len() as u64)?;
                f.insert_batch(hashes);
                Ok(f.to_bytes())
            }))
        }
        FilterConfig::StandardBloom { bits_per_key } => {
            inner.counters.flush_filter_rebuilt.fetch_add(1, Ordering::Relaxed);
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
    let FlushOutput { mut files, blobs, blob_file_bytes } = write_l0_tables(inner, mem)?;
    let mut manifest = inner.manifest.lock();
    // A keyspace dropped while the tables were written (its drop edit holds the manifest lock,
    // as this one now does) must not get them: they become obsolete at once.
    let set = inner.keyspaces.load();
    let (live, dead): (Vec<_>, Vec<_>) =
        files.drain(..).partition(|f| set.is_live(f.meta.keyspace));
    let files = live;
    let (blobs, dead_blobs): (Vec<_>, Vec<_>) =
        blobs.into_iter().partition(|b| set.is_live(b.keyspace));
    let file_size: u64 = files.iter().map(|f| f.meta.size).sum::<u64>() + blob_file_bytes;
    // WALs below the oldest memtable still unflushed after this one are obsolete. The
    // super-version is not kept past this: held across the install, it would name the files a
    // concurrent compaction makes obsolete and hide them from that compaction's purge and from
    // this flush's own (src/db/compact.rs, "Holders").
    let log_number = {
        let sv = inner.super_version();
        let older = sv.imm.iter().rev().find(|m| !Arc::ptr_eq(m, mem));
        older.map_or(sv.mem.wal_number(), |m| m.wal_number())
    };
    let edit = VersionEdit {
        log_number: Some(log_number),
        next_file_number: Some(inner.next_file.load(Ordering::SeqCst)),
        last_sequence: Some(inner.visible_seq.load(Ordering::Acquire)),
        added: files.iter().map(|f| (0, f.meta.clone())).collect(),
        blob_files: blobs,
        ..VersionEdit::default()
    };
    manifest.append(&edit, &inner.manifest_rollover())?;
    let live_blobs: Vec<u64> = manifest.blobs().keys().copied().collect();
    let mut gone_blobs = Vec::new();
    inner.install_super_version(|cur| {
        // Every flushed file is newer than the L0 files before it; among themselves they hold
        // disjoint keyspaces, so their order does not matter.
        let added: Vec<(usize, Arc<TableFile>)> = files.iter().map(|f| (0, f.clone())).collect();
        SuperVersion {
            mem: cur.mem.clone(),
            imm: cur.imm.iter().filter(|m| !Arc::ptr_eq(m, mem)).cloned().collect(),
            version: Arc::new(
                cur.version.apply(&[], &added).with_blobs(live_blobs.clone(), &mut gone_blobs),
            ),
        }
    });
    drop(manifest);
    inner.obsolete.lock().extend(dead);
    inner.obsolete_blobs.lock().extend(gone_blobs);
    for b in dead_blobs {
        let _ = inner.storage.remove(&inner.dir.join(filename::blob_name(b.number)));
    }
    inner.l0_run_keys.store(mem.len(), Ordering::Relaxed);
    inner.counters.flushes.fetch_add(1, Ordering::Relaxed);
    inner.counters.flush_bytes_written.fetch_add(file_size, Ordering::Relaxed);
    delete_obsolete_wals(inner, log_number);
    super::compact::purge_obsolete(inner);
    Ok(())
}

impl DbInner {
    /// What `Manifest::append` needs to roll the manifest over (every caller appends with it,
    /// so the manifest rolls over whatever kind of edit makes it large).
    pub(crate) fn manifest_rollover(&self) -> Rollover<'_> {
        Rollover {
            storage: &*self.storage,
            dir: &self.dir,
            next_file: &self.next_file,
            max_file_size: self.opts.max_manifest_file_size,
        }
    }
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
