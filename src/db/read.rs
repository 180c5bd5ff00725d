//! Point lookups.
//!
//! A `get` hashes the key once and walks: the active memtable, the immutable memtables newest
//! first, the L0 files newest first (those whose key range holds the key), then the one file of
//! each deeper level whose range holds it. In every SST the filter is probed with that hash
//! before any index or data block is read. The first version found (value or tombstone) at or
//! below the snapshot decides; merge operands found before it are collected on the way (the
//! walk goes on past them, through memtables and levels alike) and merged onto it. A range
//! tombstone hides what it covers (design.md#range-tombstones-lookup-rule): every
//! source's covering tombstones are consulted BEFORE its filter (a filter knows point keys
//! only), and a version older than the newest covering tombstone seen so far (in its own or a
//! newer source) is deleted, which ends the walk like a Delete.

use super::{DbInner, PinnedValue, SuperVersion};
use crate::error::Result;
use crate::filter::hash_key;
use crate::limits::NUM_LEVELS;
use crate::memtable::MemLookup;
use crate::merge::Operands;
use crate::read_section::Section;
use crate::sst::{FilterVerdict, GetResult, ReadCounters, Table, ValueOut};
use crate::version::{ProbeEntry, TableFile};
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
    /// loaded (design.md#concurrency, rule 2): then every version the read may
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
    Ok(point_lookup(inner, keyspace, key, at, ValueOut::Copy)?.map(PinnedValue::into_vec))
}

/// [`get`] that leaves a value found in a table in its block.
pub(crate) fn get_pinned(
    inner: &DbInner,
    keyspace: u32,
    key: &[u8],
    at: ReadAt,
) -> Result<Option<PinnedValue>> {
    point_lookup(inner, keyspace, key, at, ValueOut::Pin)
}

/// Whether `key` of `keyspace` has a value at `at`: [`get`] without copying the value out.
pub(crate) fn contains_key(inner: &DbInner, keyspace: u32, key: &[u8], at: ReadAt) -> Result<bool> {
    Ok(point_lookup(inner, keyspace, key, at, ValueOut::Nothing)?.is_some())
}

fn point_lookup(
    inner: &DbInner,
    keyspace: u32,
    key: &[u8],
    at: ReadAt,
    out: ValueOut,
) -> Result<Option<PinnedValue>> {
    inner.life.check_open()?;
    // The thread's own counter stripe and a borrowed super-version: no cache line that another
    // core's lookups write (design.md#concurrency).
    let counters = inner.reads.local();
    counters.add(&counters.gets, 1);
    // Inside a read section the super-version and the open tables are read through plain
    // pointers (src/read_section.rs); without one, through arc-swap guards.
    let section = inner.tables.sections().enter();
    let guard;
    let sv: &SuperVersion = match section.as_ref().and_then(|s| inner.sv_published.get(s)) {
        Some(sv) => sv,
        None => {
            guard = inner.sv.load();
            &guard
        }
    };
    // The candidate files first: their filters' cache misses then overlap everything below.
    let hash = hash_key(key);
    let candidates = Candidates::find(sv, keyspace, key, hash);
    let snapshot = at.sequence(inner);
    let ttl = super::ttl::read_ttl(inner, keyspace);
    let wrapped;
    let (op, out) = match ttl {
        // Values carry their write time: read it even for `contains_key`, and copy it out
        // (the time is stripped from the value returned).
        Some(t) => {
            wrapped = super::ttl::operator_for(inner.opts.merge_operator.as_ref(), Some(t.ttl_ms));
            (wrapped.as_ref(), ValueOut::Copy)
        }
        None => (inner.opts.merge_operator.as_ref(), out),
    };
    let mut operands = Operands::with_ttl(op, ttl);
    let result = lookup(
        sv,
        section.as_ref(),
        &counters.levels,
        (keyspace, key, hash),
        &candidates,
        snapshot,
        out,
        &mut operands,
    )?;
    if result.is_some() {
        counters.add(&counters.gets_found, 1);
    }
    Ok(result)
}

/// What one source said about a key, merge operands aside.
enum Step {
    /// A Put: the base value.
    Base(PinnedValue),
    /// A Delete: no base, and nothing older counts.
    Deleted,
    /// No Put or Delete here: look in older sources.
    Continue,
}

/// The files of a super-version that may hold a key: the L0 files whose range holds it, and
/// the one file of each sorted level whose range holds it, with its probe entry.
struct Candidates<'a> {
    deeper: [Option<(&'a Arc<TableFile>, &'a ProbeEntry)>; NUM_LEVELS],
}

impl<'a> Candidates<'a> {
    /// Finds the candidate files and starts loading their filter lines, so the filters' cache
    /// misses overlap one another instead of following one another level by level (a 10M-key
    /// readmissing profile spent most of its time in them), and overlap the rest of the
    /// lookup's set-up and the memtables' search: a key found in a memtable never reads them.
    /// A sorted level's probe entry holds a copy of the file's filter hint: the prefetch
    /// starts straight after the level search, before the file and its slot are loaded
    /// (src/version/probe_entry.rs); an entry without one yet goes by the slot. L0 files are
    /// few and are probed in order; their filters are prefetched too.
    #[inline]
    fn find(sv: &'a SuperVersion, keyspace: u32, key: &[u8], hash: u64) -> Candidates<'a> {
        Candidates::l0(sv, keyspace, key).for_each(|f| f.prefetch_filter(hash));
        let mut deeper = [None; NUM_LEVELS];
        for (level, slot) in deeper.iter_mut().enumerate().skip(1) {
            *slot = sv.version.find_in_level_entry(level, keyspace, key);
            if let Some((file, entry)) = slot {
                if !entry.prefetch_filter(hash) {
                    file.prefetch_filter(hash);
                }
            }
        }
        Candidates { deeper }
    }

    /// The L0 files whose key range holds `key`, newest first.
    fn l0<'k>(
        sv: &'a SuperVersion,
        keyspace: u32,
        key: &'k [u8],
    ) -> impl Iterator<Item = &'a Arc<TableFile>> + 'k
    where
        'a: 'k,
    {
        sv.version.levels()[0].iter().filter(move |f| f.may_contain_key(keyspace, key))
    }
}

#[allow(clippy::too_many_arguments)]
fn lookup(
    sv: &SuperVersion,
    section: Option<&Section<'_>>,
    reads: &[ReadCounters; NUM_LEVELS],
    (keyspace, key, hash): (u32, &[u8], u64),
    candidates: &Candidates<'_>,
    snapshot: u64,
    out: ValueOut,
    ops: &mut Operands<'_>,
) -> Result<Option<PinnedValue>> {
    // Walk newest to oldest. Merge operands are collected on the way (newest first) until a
    // Put (the base), a Delete (no base) or the end (no base); then they are merged.
    // Without operands the base is the answer as it is (a pinned value stays pinned).
    let finish = |ops: &Operands<'_>, base: Option<PinnedValue>| {
        // In a TTL keyspace `finish` applies the expiry rule and strips the write time.
        if ops.list.is_empty() && !ops.has_ttl() {
            return Ok(base);
        }
        Ok(ops.finish(key, base.map(PinnedValue::into_vec))?.map(PinnedValue::owned))
    };
    let copy_value = out != ValueOut::Nothing;
    // The newest range tombstone covering `key` at the snapshot among the sources read so far.
    let mut covered_below = 0u64;
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        covered_below = covered_below.max(mem.max_covering_tombstone(keyspace, key, snapshot));
        let ops_list = &mut ops.list;
        match mem.lookup(keyspace, key, hash, snapshot, copy_value, ops_list, covered_below) {
            MemLookup::Found(v) => return finish(ops, Some(PinnedValue::owned(v))),
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
                    out,
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
            GetResult::Found(v) => Step::Base(PinnedValue::owned(v)),
            GetResult::FoundInBlock(v) => Step::Base(PinnedValue::in_block(v)),
            GetResult::Blob(r) => Step::Base(PinnedValue::owned(table.blob_store()?.get(&r)?)),
            GetResult::Deleted => Step::Deleted,
            GetResult::NotFound => Step::Continue,
        })
    };
    for file in Candidates::l0(sv, keyspace, key) {
        match file.with_table_in(section, |t| in_table(t, &reads[0]))?? {
            Step::Base(v) => return finish(ops, Some(v)),
            Step::Deleted => return finish(ops, None),
            Step::Continue => {}
        }
    }
    for (found, level_reads) in candidates.deeper.iter().zip(reads).skip(1) {
        if let Some((file, entry)) = found {
            let step = file.with_table_in(section, |t| in_table(t, level_reads))??;
            // The slot's line was just read: keeping the entry's copy current is nearly free.
            entry.refresh_hint(file.probe_hint());
            match step {
                Step::Base(v) => return finish(ops, Some(v)),
                Step::Deleted => return finish(ops, None),
                Step::Continue => {}
            }
        }
    }
    finish(ops, None)
}
