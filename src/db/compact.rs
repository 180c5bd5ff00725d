//! Compaction in the engine: the background compaction thread, `Db::compact` /
//! `Db::compact_range`, installing a compaction's manifest edit, deleting obsolete files and
//! the L0 write throttle.
//!
//! Threads: flushes and compactions run on separate threads, so a long compaction never keeps
//! a memtable from being flushed (the flush thread only needs the manifest lock, held for one
//! edit). Compactions are serialised by `DbInner::compaction_lock` (the background thread and
//! manual calls take it per job), so the picker never sees two jobs claim the same files.
//!
//! Crash safety: outputs are written and synced, the directory synced, then ONE manifest edit
//! adds every output and deletes every input. A crash before the edit is durable leaves the
//! old file set (the outputs are orphans that the next open deletes); after, the new one.
//!
//! Closing: a running job (background or manual) polls `DbInner::is_closing` per entry
//! merged; once the database is closing it stops, removes its outputs and installs nothing
//! (`job::closing`). That is no failure: the database's state is the one before the job, so
//! no background error is recorded, and `Db::close` waits for at most one entry of merging
//! per range, not for the whole compaction.
//!
//! Obsolete files: inputs removed by an installed edit go to `DbInner::obsolete`. A file there
//! is deleted once the list holds the only reference to it (`Arc::strong_count == 1`): no
//! version a reader or iterator still holds names it, and the manifest no longer does; its
//! table is then dropped from the table cache (a reader that took it earlier finishes on its
//! handle, and nothing can ask the cache for it again: lookups go through a version). A purge
//! never waits for a holder: it leaves a file still held for a later purge.
//!
//! Holders: no obsolete file outlives its last holder for want of a purge (nor waits for a
//! further flush or compaction):
//! - flush and compaction jobs drop the versions they took before their own purge; a flush
//!   holds none from its install on;
//! - outside a job the background threads hold a version only under `bg_lock` (the compaction
//!   picker, the flush thread's look at its queue). The purges that end `Db::compact`,
//!   `Db::compact_range`, `Db::drop_keyspace` and `Db::wait_for_compactions` run under
//!   `bg_lock` ([`purge_obsolete_settled`]) after their edits are installed, and a background
//!   job (under `compaction_lock`) either ended before those edits or works on a version that
//!   no longer names the files they made obsolete. So when these calls return, only readers
//!   (iterators, lookups, concurrent calls and writes) and a flush still writing its tables
//!   can hold a file they made obsolete;
//! - any other holder (an iterator, a point lookup's read section, a user call such as `stats`,
//!   a pick that overlapped a job's purge) lets go without purging: the compaction thread purges
//!   on each wake-up (at least every 200 ms) while a list is non-empty.
//!
//! Files still referenced at close are orphans to the next open, which deletes them.

use super::keyspace::Layout;
use super::plan::{absent_share, l0_runs_beside, tree_shape};
use super::{flush, DbInner, SuperVersion};
use crate::compaction::collapse::compaction_operator;
use crate::compaction::job::{self, JobEnv, JobSpec, OutputLayout};
use crate::compaction::picker::{key_at, OwnedKeyAt};
use crate::compaction::{pick, pick_level, Pick};
use crate::error::{Error, Result};
use crate::filename;
use crate::filter_plan::LevelMove;
use crate::limits::NUM_LEVELS;
use crate::manifest::VersionEdit;
use crate::options::CompactionOptions;
use crate::version::{TableFile, Version};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Starts the background compaction thread.
pub(crate) fn spawn_compactor(inner: Arc<DbInner>) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("siftdb-compact".into())
        .spawn(move || inner.run_background("compaction", || compaction_loop(&inner)))
        .map_err(|e| Error::io("spawning the compaction thread", e))
}

/// How long writes must have stopped before L0 stops waiting for bytes
/// (`CompactionOptions::l0_min_base_ratio`) and compacts at the trigger alone.
pub(crate) const L0_SETTLE_AFTER: Duration = Duration::from_secs(1);

fn next_pick(inner: &DbInner) -> Option<Pick> {
    next_pick_settling(inner, false)
}

/// The next automatic compaction. L0's wait for bytes saves rewrites while writes go on; once
/// they stop (or with `settle`, for a caller waiting for the tree to settle), the L0 files it
/// left would cost every later lookup a probe each, so the trigger alone applies. Likewise once
/// scans have paid for them ([`scans_paid_for_l0`]).
fn next_pick_settling(inner: &DbInner, settle: bool) -> Option<Pick> {
    if !inner.opts.compaction.auto || inner.life.is_read_only() {
        return None;
    }
    let v = inner.super_version().version.clone();
    let opts = &inner.opts.compaction;
    let settled;
    let wait_over = |v: &Version| settle || writes_idle(inner) || scans_paid_for_l0(inner, v);
    let opts = if opts.l0_min_base_ratio > 0.0 && wait_over(&v) {
        settled = CompactionOptions { l0_min_base_ratio: 0.0, ..opts.clone() };
        &settled
    } else {
        opts
    };
    pick(v.levels(), opts, &inner.opts.filter_policy).or_else(|| ttl_pick(inner, &v))
}

/// Whether no write has been published for [`L0_SETTLE_AFTER`] (as the picker observes it: it
/// runs at least every 200 ms while the compaction thread waits).
fn writes_idle(inner: &DbInner) -> bool {
    let seq = inner.visible_seq.load(Ordering::Acquire);
    let mut seen = inner.seq_seen.lock();
    if seen.0 != seq {
        *seen = (seq, Instant::now());
        return false;
    }
    seen.1.elapsed() >= L0_SETTLE_AFTER
}

/// Whether scans have paid for the L0 files that wait for bytes
/// (`CompactionOptions::l0_min_base_ratio`): since the picker last saw L0's file set change,
/// iterators and cursors have read at least as many bytes of L0 data blocks (blocks x
/// `block_size`) as compacting L0 into its base level would rewrite (L0's bytes and the base
/// level's). A point lookup asks an L0 file's filter and rarely reads it, so waiting costs it
/// little; a scan reads a block of every L0 file at each positioning, so a scan-heavy workload
/// pays for the wait on every scan while the writes that are to fill L0 trickle in (YCSB E
/// after a load: 8 waiting L0 files, 12 blocks read per scan against RocksDB's 6). Once the
/// scans have read what the compaction writes, compacting is the cheaper choice from then on
/// (a rent-or-buy rule: at most twice the cost of the better choice in hindsight).
fn scans_paid_for_l0(inner: &DbInner, v: &Version) -> bool {
    let levels = v.levels();
    let Some(l0) = levels.first() else { return false };
    if l0.len() < inner.opts.compaction.l0_compaction_trigger.max(1) {
        return false;
    }
    let shape = (l0.len(), l0.iter().map(|f| f.meta.number).sum::<u64>());
    let read = inner.reads.scan_level(0).data_blocks_read;
    let mut mark = inner.l0_scan_mark.lock();
    if mark.0 != shape {
        *mark = (shape, read);
        return false;
    }
    let base = crate::compaction::picker::output_level(levels, 0, &inner.opts.compaction);
    let bytes = |l: usize| levels.get(l).map_or(0, |f| crate::compaction::picker::level_bytes(f));
    let rewrite = bytes(0) + bytes(base);
    read.saturating_sub(mark.1).saturating_mul(inner.opts.block_size as u64) >= rewrite
}

/// Whether `f` holds entries past its keyspace's TTL (its oldest write time, a table
/// property), at `now`.
fn holds_expired(
    inner: &DbInner,
    set: &super::keyspace::KeyspaceSet,
    f: &TableFile,
    now: u64,
) -> bool {
    let Some((oldest, _)) = f.info.write_times else { return false };
    super::ttl::ttl_ms(&inner.opts, set, f.meta.keyspace)
        .is_some_and(|ttl| crate::compaction_filter::expired_at(oldest, ttl, now))
}

/// TTL compaction (RocksDB's `ttl`, design.md#ttl): when no level is over its size, a file
/// holding expired entries is compacted anyway (into the next level, or rewritten in place at
/// the deepest), so expired data does not hold disk forever. Only while no snapshot is live:
/// then the compaction drops every expired entry it reads, and the file it writes no longer
/// qualifies (a snapshot could keep them and make the pick repeat).
fn ttl_pick(inner: &DbInner, v: &Version) -> Option<Pick> {
    if !inner.snapshots.lock().is_empty() {
        return None;
    }
    let set = inner.keyspaces.load();
    if inner.opts.ttl.is_none() && set.live.values().all(|k| k.options.ttl.is_none()) {
        return None;
    }
    let now = super::ttl::now_ms(&inner.opts);
    let deepest = deepest_level(v)?;
    for (level, files) in v.levels().iter().enumerate() {
        let Some(f) = files.iter().find(|f| holds_expired(inner, &set, f, now)) else { continue };
        if level == deepest && level > 0 {
            return Some(Pick {
                level,
                output_level: level,
                inputs: vec![f.meta.number],
                next_inputs: vec![],
                trivial_move: false,
                bottommost: true,
                score: 0.0,
            });
        }
        let with = (&inner.opts.compaction, &inner.opts.filter_policy);
        let range = Some((f.meta.smallest(), f.meta.largest()));
        if let Some(mut p) = crate::compaction::picker::pick_level(v.levels(), level, with, range) {
            p.trivial_move = false; // a move would keep the expired entries
            return Some(p);
        }
    }
    None
}

fn compaction_loop(inner: &DbInner) {
    loop {
        {
            let mut g = inner.bg_lock.lock();
            loop {
                if inner.is_closing() {
                    return;
                }
                if next_pick(inner).is_some() {
                    break;
                }
                // After the pick's version is dropped: the catch-all of the module
                // documentation's "Holders".
                purge_pending(inner);
                inner.bg_cv.wait_for(&mut g, Duration::from_millis(200));
            }
        }
        let r = {
            let _c = inner.compaction_lock.lock();
            match next_pick(inner) {
                Some(p) => run_pick(inner, &p),
                None => Ok(()),
            }
        };
        if let Err(e) = r {
            fail(inner, &e);
        }
        let _g = inner.bg_lock.lock();
        inner.bg_cv.notify_all();
    }
}

/// Records a failed compaction: the database turns read-only, unless the job was stopped because
/// the database is closing (module documentation; it installed nothing and left no file).
fn fail(inner: &DbInner, e: &Error) {
    if !inner.is_closing() {
        inner.set_bg_error(e);
    }
}

/// Runs one picked compaction against the current version and installs it. The caller holds
/// `compaction_lock`.
pub(crate) fn run_pick(inner: &DbInner, p: &Pick) -> Result<()> {
    let sv = inner.super_version();
    let v = sv.version.clone();
    let writes = super::plan::writes_of(&sv);
    drop(sv);
    let get = |level: usize, n: u64| {
        v.file(level, n)
            .cloned()
            .ok_or_else(|| Error::invalid(format!("compaction input {n} is not at level {level}")))
    };
    let inputs: Vec<Arc<TableFile>> =
        p.inputs.iter().map(|&n| get(p.level, n)).collect::<Result<_>>()?;
    let next: Vec<Arc<TableFile>> =
        p.next_inputs.iter().map(|&n| get(p.output_level, n)).collect::<Result<_>>()?;
    let c = &inner.counters;
    // A moved file keeps its blocks, so a move is only trivial between levels configured with
    // the same compression: every file of a level then has that level's compression.
    let same_compression = inner.opts.compression_for_level(p.level)
        == inner.opts.compression_for_level(p.output_level);
    if p.trivial_move && same_compression {
        let f = inputs[0].clone();
        let edit = VersionEdit {
            next_file_number: Some(inner.next_file.load(Ordering::SeqCst)),
            added: vec![(p.output_level as u32, f.meta.clone())],
            deleted: vec![(p.level as u32, f.meta.number)],
            ..VersionEdit::default()
        };
        install(inner, &edit, &[(p.level, f.meta.number)], &[(p.output_level, f)])?;
        c.trivial_moves.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    // Runs newest first: L0 files one by one (already newest first), then the level runs.
    let mut runs: Vec<Vec<Arc<TableFile>>> = Vec::new();
    if p.level == 0 {
        runs.extend(inputs.iter().map(|f| vec![f.clone()]));
    } else {
        runs.push(inputs.clone());
    }
    if !next.is_empty() {
        runs.push(next.clone());
    }
    let l0_run_keys = inner.l0_run_keys.load(Ordering::Relaxed);
    let l0_inputs = if p.level == 0 { inputs.len() } else { 0 };
    let l0_runs = l0_runs_beside(&v, l0_inputs, 0);
    // Planned on the tree as this compaction leaves it: a first compaction into an empty level
    // makes it the deepest, weighted as such (`filter_plan::level_weights`), not as a level of its few keys.
    let moved = LevelMove {
        from: p.level,
        to: p.output_level,
        entries: inputs.iter().map(|f| f.meta.entries).sum(),
        bytes: inputs.iter().map(|f| f.meta.size).sum(),
    };
    let absent = absent_share(inner);
    let mut shape =
        tree_shape(&inner.opts, &v, (l0_runs, l0_run_keys), absent, Some(moved), writes);
    // The output level weighs at least the keys written into it (a level below the deepest is
    // weighed at its capacity, which an overfull one exceeds).
    let written: u64 = runs.iter().flatten().map(|f| f.meta.entries).sum();
    if let Some(keys) = shape.levels.get_mut(p.output_level) {
        *keys = keys.max(written as f64);
    }
    let recorded: Vec<&str> =
        runs.iter().flatten().filter_map(|f| f.info.merge_operator.as_deref()).collect();
    let (merge_operator, merge_operator_name) =
        compaction_operator(inner.opts.merge_operator.as_ref(), &recorded)?;
    // Each keyspace's outputs get its persisted options (also for a keyspace never opened
    // since the database was reopened).
    let set = inner.keyspaces.load_full();
    let layout = |ks: u32| {
        let l = Layout::of_output(&inner.opts, &set, ks, p.output_level, p.bottommost);
        OutputLayout {
            table: l.table,
            filter: l.compaction_filter(p.output_level, &shape),
            partition_bytes: inner.opts.partition_filters.then_some(inner.opts.metadata_block_size),
            index_partition_bytes: inner
                .opts
                .partition_index
                .then_some(inner.opts.metadata_block_size),
            blob_threshold: l.blob_threshold,
        }
    };
    let keyspaces: BTreeSet<u32> = runs.iter().flatten().map(|f| f.meta.keyspace).collect();
    let spec = JobSpec {
        runs,
        snapshots: inner.snapshots.lock().keys().copied().collect(),
        bottommost: p.bottommost,
        target_file_size: inner.opts.compaction.target_file_size,
        merge_operator: merge_operator.clone(),
        merge_operator_name,
        layouts: keyspaces.iter().copied().map(|ks| (ks, layout(ks))).collect(),
        default_layout: layout(crate::ikey::DEFAULT_KEYSPACE),
        max_subcompactions: inner.opts.max_subcompactions,
        scan_filters: crate::sst::ScanFilterSpec::of(&inner.opts),
        retention: {
            let now = super::ttl::now_ms(&inner.opts);
            let all =
                keyspaces.iter().map(|&ks| (ks, super::ttl::retention(&inner.opts, &set, ks, now)));
            all.filter(|(_, r)| !r.is_none()).collect()
        },
        ttl_merge_operator: super::ttl::operator_for(merge_operator.as_ref(), Some(1)),
        output_level: p.output_level,
        grandparent_starts: {
            let below = v.levels().get(p.output_level + 1).map(Vec::as_slice).unwrap_or(&[]);
            let mut starts: Vec<(u32, Vec<u8>)> =
                below.iter().map(|f| (f.meta.keyspace, f.meta.smallest_key.clone())).collect();
            starts.sort();
            starts
        },
        blob_gc_files: {
            // The oldest `blob_gc_age_cutoff` share of the live blob files (RocksDB's rule).
            let blobs = v.blobs();
            let n = (blobs.len() as f64 * inner.opts.blob_gc_age_cutoff).floor() as usize;
            blobs.keys().take(n).copied().collect()
        },
    };
    let new_number = || inner.new_file_number();
    let closing = || inner.is_closing();
    let begin_close = || {
        inner.life.begin_close();
    };
    let env = JobEnv {
        storage: &*inner.storage,
        dir: &inner.dir,
        new_file_number: &new_number,
        tables: &inner.tables,
        closing: &closing,
        begin_close: &begin_close,
    };
    let res = job::run(&env, spec)?;
    let mut deleted: Vec<(usize, u64)> = inputs.iter().map(|f| (p.level, f.meta.number)).collect();
    deleted.extend(next.iter().map(|f| (p.output_level, f.meta.number)));
    let added: Vec<(usize, Arc<TableFile>)> =
        res.outputs.iter().map(|f| (p.output_level, f.clone())).collect();
    let edit = VersionEdit {
        next_file_number: Some(inner.next_file.load(Ordering::SeqCst)),
        added: added.iter().map(|(l, f)| (*l as u32, f.meta.clone())).collect(),
        deleted: deleted.iter().map(|&(l, n)| (l as u32, n)).collect(),
        blob_files: res.blob_files.iter().map(|(m, _)| m.clone()).collect(),
        blob_garbage: res.blob_garbage.iter().map(|(&n, &(c, b))| (n, c, b)).collect(),
        ..VersionEdit::default()
    };
    // On failure the outputs stay on disk: a failed manifest append or sync does not mean the
    // edit is absent (its bytes may be in the file), so deleting them could leave the manifest
    // naming missing files. If the edit did not land, the next open deletes them as orphans.
    // (Found by tests/reliability_io_errors.rs.) Their tables leave the table cache: no version
    // names them, so nothing would ever evict them.
    if let Err(e) = install(inner, &edit, &deleted, &added) {
        for f in &res.outputs {
            inner.tables.evict(f.meta.number);
        }
        return Err(e);
    }
    c.blob_relocated.fetch_add(res.blob_relocated, Ordering::Relaxed);
    c.compactions.fetch_add(1, Ordering::Relaxed);
    c.compaction_bytes_read.fetch_add(res.bytes_read, Ordering::Relaxed);
    c.compaction_bytes_written.fetch_add(res.bytes_written, Ordering::Relaxed);
    c.filter_fallbacks.fetch_add(res.filter_fallbacks, Ordering::Relaxed);
    c.subcompactions.fetch_add(res.subcompactions, Ordering::Relaxed);
    inner.obsolete.lock().extend(inputs.into_iter().chain(next));
    // The version this job started from names the inputs: release it first, or the purge
    // below finds every input still referenced and leaves it on disk until the next job.
    drop(v);
    purge_obsolete(inner);
    Ok(())
}

/// Appends `edit` to the manifest and swaps in the version it describes. A failed append turns
/// the database read-only (the edit's durability is unknown).
fn install(
    inner: &DbInner,
    edit: &VersionEdit,
    deleted: &[(usize, u64)],
    added: &[(usize, Arc<TableFile>)],
) -> Result<()> {
    let mut manifest = inner.manifest.lock();
    // Stamp the next file number under the manifest lock: the flush thread allocates numbers
    // and appends its own edits concurrently, and edits must never lower the recorded number
    // below a file an earlier edit added (recovery rejects that; found by the I/O-error sweep).
    let mut edit = edit.clone();
    edit.next_file_number = Some(inner.next_file.load(Ordering::SeqCst));
    // The edit's fsync ("manifest.append_sync") must precede the deletion of the inputs;
    // "compaction.manifest_sync" is the compaction's own switch for it (src/testing.rs).
    let appended =
        crate::testing::within("compaction.manifest_sync", "manifest.append_sync", || {
            manifest.append(&edit, &inner.manifest_rollover())
        });
    if let Err(e) = appended {
        inner.set_bg_error(&e);
        return Err(e);
    }
    let live_blobs: Vec<u64> = manifest.blobs().keys().copied().collect();
    let mut gone = Vec::new();
    inner.install_super_version(|cur| SuperVersion {
        mem: cur.mem.clone(),
        imm: cur.imm.clone(),
        version: Arc::new(cur.version.apply(deleted, added).with_blobs(live_blobs, &mut gone)),
    });
    drop(manifest);
    inner.obsolete_blobs.lock().extend(gone);
    Ok(())
}

/// Deletes obsolete files no version references any more (module documentation), dropping
/// their tables from the table cache first. Nothing can reopen such a file afterwards: tables
/// are looked up only through a version's `TableFile`, and the list holds the last one.
pub(crate) fn purge_obsolete(inner: &DbInner) {
    // Super-versions retired by installs and no longer readable free their versions first.
    inner.tables.sections().reclaim();
    let mut gone = Vec::new();
    inner.obsolete.lock().retain(|f| {
        if Arc::strong_count(f) > 1 {
            return true;
        }
        gone.push(f.meta.number);
        false
    });
    // Each file is in the list once, so only this call deletes the ones it took out.
    inner.tables.evict_all(&gone);
    for number in gone {
        let _ = inner.storage.remove(&inner.dir.join(filename::sst_name(number)));
    }
    // Blob files: the manifest edit that made them obsolete is durable (they leave a version
    // only after it), and no version holds them any more, so no reader can follow a reference
    // into them.
    inner.obsolete_blobs.lock().retain(|b| {
        if Arc::strong_count(b) > 1 {
            return true;
        }
        inner.tables.blobs().evict(b.number);
        let _ = inner.storage.remove(&inner.dir.join(filename::blob_name(b.number)));
        false
    });
}

/// [`purge_obsolete`] if a file waits in an obsolete list.
fn purge_pending(inner: &DbInner) {
    if !inner.obsolete.lock().is_empty() || !inner.obsolete_blobs.lock().is_empty() {
        purge_obsolete(inner);
    }
}

/// [`purge_obsolete`] under `bg_lock`: no background pick or flush-queue check (which hold a
/// version only under that lock) is in progress, so every obsolete file that no reader or
/// running flush holds is deleted (module documentation, "Holders"). The caller holds no
/// version and not `bg_lock`.
pub(crate) fn purge_obsolete_settled(inner: &DbInner) {
    let _g = inner.bg_lock.lock();
    purge_obsolete(inner);
}

/// Compacts everything into one sorted run on the deepest non-empty level (L1 at least),
/// without tombstones or shadowed versions (unless live snapshots need them).
pub(crate) fn compact_all(inner: &DbInner) -> Result<()> {
    compact_range(inner, None, None)
}

/// [`compact_range_jobs`], then deletes the obsolete files no reader holds any more (also
/// those a reader still held when an earlier job finished), so a manual compaction leaves no
/// replaced file on disk once its readers are done.
pub(crate) fn compact_range(
    inner: &DbInner,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    let r = compact_range_jobs(inner, start, end);
    purge_obsolete_settled(inner);
    r
}

/// Compacts the files overlapping `[start, end]` (`None` = unbounded) level by level down to
/// the deepest non-empty level, then rewrites the files of that level in the range that still
/// hold tombstones or shadowed versions.
fn compact_range_jobs(inner: &DbInner, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
    flush::flush_and_wait(inner)?;
    let _c = inner.compaction_lock.lock();
    inner.check_writable()?;
    // A failed compaction turns the database read-only, as it does on the background thread:
    // a failed fsync of an output or of the directory is never retried. (Found by
    // tests/reliability_io_errors.rs once its workload compacted explicitly.) Once the
    // database is closing no further job starts, and a running one stops (`fail`).
    let run_pick = |inner: &DbInner, p: &Pick| {
        if inner.is_closing() {
            return Err(job::closing());
        }
        run_pick(inner, p).inspect_err(|e| fail(inner, e))
    };
    let policy = &inner.opts.filter_policy;
    for level in 0..NUM_LEVELS - 1 {
        let v = inner.super_version().version.clone();
        let Some(deepest) = deepest_level(&v) else { return Ok(()) };
        if level >= deepest.max(1) {
            break;
        }
        let (lo, hi) = bounds(&v, start, end);
        let with = (&inner.opts.compaction, policy);
        if let Some(mut p) = pick_level(v.levels(), level, with, Some((key_at(&lo), key_at(&hi)))) {
            if level + 1 == deepest.max(1) {
                // Moving a file onto the last level keeps its garbage; rewrite it instead.
                p.trivial_move = false;
            }
            run_pick(inner, &p)?;
        }
    }
    let v = inner.super_version().version.clone();
    let Some(bottom) = deepest_level(&v) else { return Ok(()) };
    let (lo, hi) = bounds(&v, start, end);
    let set = inner.keyspaces.load();
    let now = super::ttl::now_ms(&inner.opts);
    let garbage: Vec<u64> = v.levels()[bottom]
        .iter()
        .filter(|f| crate::compaction::picker::overlaps(&f.meta, key_at(&lo), key_at(&hi)))
        .filter(|f| {
            // Operands at the bottom fold into Puts when an operator is configured.
            let operands = f.info.merges > 0 && inner.opts.merge_operator.is_some();
            f.info.deletions > 0
                || holds_expired(inner, &set, f, now)
                || f.info.range_deletions > 0
                || f.meta.entries > f.info.distinct_keys
                || operands
        })
        .map(|f| f.meta.number)
        .collect();
    for n in garbage {
        let p = Pick {
            level: bottom,
            output_level: bottom,
            inputs: vec![n],
            next_inputs: vec![],
            trivial_move: false,
            bottommost: true,
            score: 0.0,
        };
        run_pick(inner, &p)?;
    }
    Ok(())
}

fn deepest_level(v: &Version) -> Option<usize> {
    (0..NUM_LEVELS).rev().find(|&l| !v.levels()[l].is_empty())
}

/// Inclusive key bounds: the given ones (keys of the default keyspace), or the extremes of the
/// current files (across every keyspace).
fn bounds(v: &Version, start: Option<&[u8]>, end: Option<&[u8]>) -> (OwnedKeyAt, OwnedKeyAt) {
    let all = v.levels().iter().flatten().map(|f| &f.meta);
    let (lo, hi) = crate::compaction::picker::key_range(all);
    let at = |k: &[u8]| (crate::ikey::DEFAULT_KEYSPACE, k.to_vec());
    (start.map_or(lo, at), end.map_or(hi, at))
}

/// Waits until no compaction is due (auto compaction) and none is running, then deletes the
/// obsolete files no reader or running flush holds (as [`purge_obsolete_settled`]: this holds
/// `bg_lock`, and no job runs).
pub(crate) fn wait_for_compactions(inner: &DbInner) -> Result<()> {
    let mut g = inner.bg_lock.lock();
    loop {
        inner.check_writable()?;
        // Settled: L0 too, which the compaction thread takes up once writes have been idle
        // for `L0_SETTLE_AFTER`.
        if next_pick_settling(inner, true).is_none() {
            if let Some(_c) = inner.compaction_lock.try_lock() {
                purge_obsolete(inner);
                return Ok(());
            }
        }
        inner.bg_cv.wait_for(&mut g, Duration::from_millis(20));
    }
}

/// The L0 write throttle: with `l0_slowdown_writes_trigger` L0 files a write batch waits 1 ms;
/// (each threshold taken as at least `l0_compaction_trigger`)
/// with `l0_stop_writes_trigger` it waits until compaction brings L0 below that. Only with
/// automatic compaction (otherwise nothing would ever release a stop).
pub(crate) fn throttle(inner: &DbInner) -> Result<()> {
    let o = &inner.opts.compaction;
    if !o.auto {
        return Ok(());
    }
    // Thresholds below the compaction trigger would stop writes with no compaction due to
    // release them: both are raised to at least the trigger.
    let slowdown = o.l0_slowdown_writes_trigger.max(o.l0_compaction_trigger);
    let stop = o.l0_stop_writes_trigger.max(o.l0_compaction_trigger);
    let l0 = || inner.super_version().version.levels()[0].len();
    let n = l0();
    if n < slowdown {
        return Ok(());
    }
    let start = Instant::now();
    if n >= stop {
        let mut g = inner.bg_lock.lock();
        while l0() >= stop && !inner.is_closing() {
            inner.check_writable()?;
            inner.bg_cv.wait_for(&mut g, Duration::from_millis(10));
        }
        inner.counters.l0_stops.fetch_add(1, Ordering::Relaxed);
    } else {
        std::thread::sleep(Duration::from_millis(1));
        inner.counters.l0_slowdowns.fetch_add(1, Ordering::Relaxed);
    }
    let us = start.elapsed().as_micros() as u64;
    inner.counters.l0_stall_micros.fetch_add(us, Ordering::Relaxed);
    inner.counters.write_stall_micros.fetch_add(us, Ordering::Relaxed);
    Ok(())
}
