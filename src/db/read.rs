//! Point lookups and the stats snapshot.
//!
//! A `get` hashes the key once and walks: the active memtable, the immutable memtables newest
//! first, the L0 files newest first (those whose key range holds the key), then the one file of
//! each deeper level whose range holds it. In every SST the filter is probed with that hash
//! before any index or data block is read. The first version found (value or tombstone) at or
//! below the snapshot decides; merge operands found before it are collected on the way (the
//! walk goes on past them, through memtables and levels alike) and merged onto it. A range
//! tombstone hides what it covers (design.md, "Range tombstones: the lookup rule"): every
//! source's covering tombstones are consulted BEFORE its filter (a filter knows point keys
//! only), and a version older than the newest covering tombstone seen so far (in its own or a
//! newer source) is deleted, which ends the walk like a Delete.

use super::stats::{KeyspaceStats, LevelStats, Stats};
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::filter::hash_key;
use crate::limits::NUM_LEVELS;
use crate::memtable::MemLookup;
use crate::merge::Operands;
use crate::options::{FilterConfig, Options};
use crate::sst::{FilterVerdict, GetResult, ReadCounters, Table};
use crate::version::TableFile;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Which sequence a read sees.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ReadAt {
    /// Everything published when the read starts (`Db::get` and friends).
    Latest,
    /// A registered snapshot's sequence.
    Snapshot(u64),
}

impl ReadAt {
    /// The sequence to read at. For `Latest`, call this only AFTER the super-version was
    /// loaded (design.md, "Read-path concurrency", rule 2): then every version the read may
    /// need is reachable from that super-version, even if a flush or compaction installs a
    /// newer one without the versions no snapshot protects.
    pub fn sequence(self, inner: &DbInner) -> u64 {
        match self {
            ReadAt::Latest => inner.visible_seq.load(Ordering::Acquire),
            ReadAt::Snapshot(seq) => seq,
        }
    }
}

/// The value of `key` of `keyspace` at `at`.
pub(crate) fn get(
    inner: &DbInner,
    keyspace: u32,
    key: &[u8],
    at: ReadAt,
) -> Result<Option<Vec<u8>>> {
    point_lookup(inner, keyspace, key, at, true)
}

/// Whether `key` of `keyspace` has a value at `at`: [`get`] without copying the value out.
pub(crate) fn contains_key(inner: &DbInner, keyspace: u32, key: &[u8], at: ReadAt) -> Result<bool> {
    Ok(point_lookup(inner, keyspace, key, at, false)?.is_some())
}

fn point_lookup(
    inner: &DbInner,
    keyspace: u32,
    key: &[u8],
    at: ReadAt,
    copy_value: bool,
) -> Result<Option<Vec<u8>>> {
    inner.life.check_open()?;
    // The thread's own counter stripe and a borrowed super-version: no cache line that another
    // core's lookups write (design.md, "Read-path concurrency").
    let counters = inner.reads.local();
    counters.add(&counters.gets, 1);
    let sv = inner.sv.load();
    let snapshot = at.sequence(inner);
    let mut operands = Operands::new(inner.opts.merge_operator.as_ref());
    let result = lookup(&sv, &counters.levels, keyspace, key, snapshot, copy_value, &mut operands)?;
    if result.is_some() {
        counters.add(&counters.gets_found, 1);
    }
    Ok(result)
}

/// What one source said about a key, merge operands aside.
enum Step {
    /// A Put: the base value.
    Base(Vec<u8>),
    /// A Delete: no base, and nothing older counts.
    Deleted,
    /// No Put or Delete here: look in older sources.
    Continue,
}

fn lookup(
    sv: &SuperVersion,
    reads: &[ReadCounters; NUM_LEVELS],
    keyspace: u32,
    key: &[u8],
    snapshot: u64,
    copy_value: bool,
    ops: &mut Operands<'_>,
) -> Result<Option<Vec<u8>>> {
    // Walk newest to oldest. Merge operands are collected on the way (newest first) until a
    // Put (the base), a Delete (no base) or the end (no base); then they are merged.
    let hash = hash_key(key);
    let finish = |ops: &Operands<'_>, base| ops.finish(key, base);
    // The newest range tombstone covering `key` at the snapshot among the sources read so far.
    let mut covered_below = 0u64;
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        covered_below = covered_below.max(mem.max_covering_tombstone(keyspace, key, snapshot));
        let ops_list = &mut ops.list;
        match mem.lookup(keyspace, key, hash, snapshot, copy_value, ops_list, covered_below) {
            MemLookup::Found(v) => return finish(ops, Some(v)),
            MemLookup::Deleted => return finish(ops, None),
            MemLookup::Absent => {}
        }
    }
    let mut in_table = |table: &Table, counters: &ReadCounters| -> Result<Step> {
        // Before the filter, and whatever it says.
        covered_below = covered_below.max(table.max_covering_tombstone(key, snapshot));
        let r = match table.probe_filter_in_range(keyspace, key, hash, counters) {
            FilterVerdict::Absent => return Ok(Step::Continue),
            FilterVerdict::Maybe { positive } => {
                let before = ops.list.len();
                let r = table.get_past_filter(
                    keyspace,
                    key,
                    snapshot,
                    counters,
                    positive,
                    copy_value,
                    &mut ops.list,
                    covered_below,
                )?;
                if ops.list.len() > before {
                    ops.check_source(Some(table.merge_operator_name()), key)?;
                }
                r
            }
        };
        Ok(match r {
            GetResult::Found(v) => Step::Base(v),
            GetResult::Deleted => Step::Deleted,
            GetResult::NotFound => Step::Continue,
        })
    };
    // Find the one file of each sorted level first and start loading its filter lines, so
    // the filters' cache misses overlap instead of following one another level by level (a
    // 10M-key readmissing profile spent most of its time in them). L0 files are few and are
    // probed in order; their filters are prefetched too.
    let l0 = || sv.version.levels()[0].iter().filter(|f| f.may_contain_key(keyspace, key));
    l0().for_each(|f| f.prefetch_filter(hash));
    let mut deeper: [Option<&Arc<TableFile>>; NUM_LEVELS] = [None; NUM_LEVELS];
    for (level, slot) in deeper.iter_mut().enumerate().skip(1) {
        *slot = sv.version.find_in_level(level, keyspace, key);
        if let Some(file) = slot {
            file.prefetch_filter(hash);
        }
    }
    for file in l0() {
        match file.with_table(|t| in_table(t, &reads[0]))?? {
            Step::Base(v) => return finish(ops, Some(v)),
            Step::Deleted => return finish(ops, None),
            Step::Continue => {}
        }
    }
    for (file, level_reads) in deeper.iter().zip(reads).skip(1) {
        if let Some(file) = file {
            match file.with_table(|t| in_table(t, level_reads))?? {
                Step::Base(v) => return finish(ops, Some(v)),
                Step::Deleted => return finish(ops, None),
                Step::Continue => {}
            }
        }
    }
    finish(ops, None)
}

/// Builds the [`Stats`] snapshot.
pub(crate) fn stats(inner: &DbInner) -> Stats {
    let sv = inner.super_version();
    let c = &inner.counters;
    // The plan of the next compaction output: beside the L0 files there are now.
    let l0 = super::compact::l0_runs_beside(&sv.version, 0, 0);
    let shape = super::compact::tree_shape(
        &inner.opts,
        &sv.version,
        (l0, inner.l0_run_keys.load(Ordering::Relaxed)),
        super::compact::absent_share(inner),
        None,
    );
    let levels = (0..NUM_LEVELS)
        .map(|level| {
            let files = &sv.version.levels()[level];
            let mut kinds: Vec<String> = Vec::new();
            for f in files {
                let k = f.info.filter_kind.map_or("none", |k| k.name()).to_string();
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            LevelStats {
                level,
                files: files.len(),
                bytes: files.iter().map(|f| f.meta.size).sum(),
                entries: files.iter().map(|f| f.meta.entries).sum(),
                filter_kinds: kinds,
                filter_bytes: files.iter().map(|f| f.info.filter_memory_bytes).sum(),
                configured_fpr: configured_fpr(&inner.opts, level, &shape),
                built_fpr: level_built_fpr(level, files),
                reads: inner.reads.level(level),
                scan_reads: inner.reads.scan_level(level),
            }
        })
        .collect();
    let (hits, misses, usage) = match &inner.cache {
        Some(cache) => (cache.hits(), cache.misses(), cache.usage() as u64),
        None => (0, 0, 0),
    };
    Stats {
        gets: inner.reads.gets(),
        gets_found: inner.reads.gets_found(),
        seeks: inner.reads.seeks(),
        memtable_bytes: std::iter::once(&sv.mem)
            .chain(sv.imm.iter())
            .map(|m| m.approximate_bytes() as u64)
            .sum(),
        immutable_memtables: sv.imm.len(),
        levels,
        keyspaces: keyspace_stats(inner, &sv),
        flushes: c.flushes.load(Ordering::Relaxed),
        flush_filter_as_is: c.flush_filter_as_is.load(Ordering::Relaxed),
        flush_filter_rebuilt: c.flush_filter_rebuilt.load(Ordering::Relaxed),
        block_cache_hits: hits,
        block_cache_misses: misses,
        block_cache_bytes: usage,
        table_cache_hits: inner.tables.hits(),
        table_cache_misses: inner.tables.misses(),
        table_cache_open_tables: inner.tables.open_tables(),
        write_stall_micros: c.write_stall_micros.load(Ordering::Relaxed),
        write_groups: c.write_groups.load(Ordering::Relaxed),
        write_batches: c.write_batches.load(Ordering::Relaxed),
        wal_syncs: c.wal_syncs.load(Ordering::Relaxed),
        user_bytes: c.user_bytes.load(Ordering::Relaxed),
        flush_bytes_written: c.flush_bytes_written.load(Ordering::Relaxed),
        compactions: c.compactions.load(Ordering::Relaxed),
        trivial_moves: c.trivial_moves.load(Ordering::Relaxed),
        subcompactions: c.subcompactions.load(Ordering::Relaxed),
        compaction_bytes_read: c.compaction_bytes_read.load(Ordering::Relaxed),
        compaction_bytes_written: c.compaction_bytes_written.load(Ordering::Relaxed),
        filter_fallbacks: c.filter_fallbacks.load(Ordering::Relaxed),
        l0_slowdowns: c.l0_slowdowns.load(Ordering::Relaxed),
        l0_stops: c.l0_stops.load(Ordering::Relaxed),
        l0_stall_micros: c.l0_stall_micros.load(Ordering::Relaxed),
    }
}

/// File figures per live keyspace.
fn keyspace_stats(inner: &DbInner, sv: &SuperVersion) -> Vec<KeyspaceStats> {
    let set = inner.keyspaces.load();
    let ids = std::iter::once((0, crate::keyspace_options::DEFAULT_KEYSPACE_NAME.to_string()))
        .chain(set.live.iter().map(|(&id, k)| (id, k.name.to_string())));
    ids.map(|(id, name)| {
        let mut s = KeyspaceStats { name, ..KeyspaceStats::default() };
        for f in sv.version.levels().iter().flatten().filter(|f| f.meta.keyspace == id) {
            s.files += 1;
            s.bytes += f.meta.size;
            s.entries += f.meta.entries;
            let k = f.info.filter_kind.map_or("none", |k| k.name()).to_string();
            if !s.filter_kinds.contains(&k) {
                s.filter_kinds.push(k);
            }
        }
        s
    })
    .collect()
}

/// The FPR the filters of `level`'s `files` were built for (see `LevelStats::built_fpr`).
fn level_built_fpr(level: usize, files: &[Arc<crate::version::TableFile>]) -> Option<f64> {
    let (mut sum, mut weight) = (0.0, 0.0);
    for f in files {
        let Some(fpr) = f.info.filter_fpr else { continue };
        let w = if level == 0 { 1.0 } else { f.meta.entries as f64 };
        sum += w * fpr;
        weight += w;
    }
    (weight > 0.0).then(|| sum / weight)
}

/// The FPR the options configure for `level` (see `LevelStats::configured_fpr`).
pub(crate) fn configured_fpr(
    opts: &Options,
    level: usize,
    shape: &crate::compaction::TreeShape,
) -> Option<f64> {
    use crate::filter::prelude::*;
    use crate::filter::{BlockedBloom, StandardBloom, TwoBitBloom};
    if level == 0 {
        return match crate::compaction::flush_filter(&opts.filter_policy, shape) {
            FilterConfig::None => None,
            FilterConfig::TwoBitBloom { bits_per_key: b } => {
                Some(<TwoBitBloom as BloomShape>::theoretical_fpr(b, 2))
            }
            FilterConfig::BlockedBloom { bits_per_key: b } => {
                Some(<BlockedBloom as BloomShape>::theoretical_fpr(
                    b,
                    <BlockedBloom as BloomShape>::probes_for_bits_per_key(b),
                ))
            }
            FilterConfig::StandardBloom { bits_per_key: b } => {
                Some(<StandardBloom as BloomShape>::theoretical_fpr(
                    b,
                    <StandardBloom as BloomShape>::probes_for_bits_per_key(b),
                ))
            }
        };
    }
    let lf = crate::compaction::level_filter(&opts.filter_policy, level, shape);
    (lf.kind != crate::options::StaticFilterKind::None).then_some(lf.fpr)
}
