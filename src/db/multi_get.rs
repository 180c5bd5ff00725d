//! Batched point lookups (`Db::multi_get`, `Snapshot::multi_get`).
//!
//! Same answers as one `get` per key at the same snapshot, with the work reordered:
//! 1. the keys are copied into one buffer, every key is hashed once, and the keys are visited
//!    in key order (ties by position);
//! 2. the memtables answer what they hold, newest first, each searching its skip list for the
//!    keys its filter lets through with the searches interleaved (`SkipList::seek_many`);
//! 3. then the SSTs in rounds. The sources are each L0 file, newest first, then each deeper
//!    level. A round takes every pending key down the sources as a single `get` would, probing
//!    filters, to the first source that may hold it (a file whose filter says "maybe" and whose
//!    index names a block): the key stops there for this round. The probes of a file run back
//!    to back, each starting the load of the filter line of a key further on. Then the round's
//!    blocks are fetched: cache hits at once, a block two keys need once, and the device reads
//!    of files read with `O_DIRECT` all together, up to 32 in flight (io_uring,
//!    src/storage/uring.rs), whatever their level; each key is then finished on the block it
//!    was handed (`group.rs`). A key the source does not resolve (a filter false positive, or
//!    merge operands only) goes on from the next source in the next round, so nearly every key
//!    needs one round, and a batch about one wave of reads;
//! 4. a key leaves the pending set at the first source that holds a value or a tombstone of it,
//!    exactly where a single `get` would stop; merge operands met before it are collected per
//!    key (the key stays pending) and merged when it leaves, or after the last level;
//! 5. range tombstones apply as in a single `get` (src/db/read.rs): each file's covering
//!    tombstones are read for every pending key in its range before its filter is probed, and
//!    a version older than the newest covering tombstone seen so far is deleted.
//!
//! An error while reading one key's block (a corrupt block, an I/O error) is that key's result;
//! the other keys are unaffected, as if each had been looked up alone.
//!
//! With [`ReadOptions::multi_get_threads`](crate::ReadOptions::multi_get_threads) above 1, a
//! batch of at least [`MIN_KEYS_PER_THREAD`] keys per thread is cut in key order into
//! contiguous parts, run on the process's worker pool (one thread per core), each looked up as above
//! at the same snapshot and super-version: the answers are those of one thread, since every
//! key's answer depends only on that snapshot. Cutting in key order keeps the keys that share
//! a block in one part.

mod group;

use super::read::ReadAt;
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::filter::hash_key;
use crate::limits::NUM_LEVELS;
use crate::memtable::{MemLookup, Memtable};
use crate::merge::{Operands, SharedMergeOperator};
use crate::sst::ReadCounters;

/// One key's answer.
type Answer = Result<Option<Vec<u8>>>;

/// Fewest keys a part of a parallel batch takes: below this, handing the part to a pool
/// thread and waiting for it (waking a sleeping worker) is a visible part of the part's
/// lookups (about 5 µs a key from disk).
pub(crate) const MIN_KEYS_PER_THREAD: usize = 64;

/// The values of `keys` of `keyspace` at `at`, in the order of `keys`, on up to `threads`
/// threads (already validated: 1 to [`crate::limits::MAX_MULTI_GET_THREADS`]).
pub(crate) fn multi_get(
    inner: &DbInner,
    keyspace: u32,
    keys: &[&[u8]],
    at: ReadAt,
    threads: usize,
) -> Vec<Answer> {
    if inner.life.check_open().is_err() {
        return keys.iter().map(|_| Err(crate::Error::Closed)).collect();
    }
    let counters = inner.reads.local();
    counters.add(&counters.gets, keys.len() as u64);
    let sv = inner.sv.load();
    let snapshot = at.sequence(inner); // after the super-version: see ReadAt
    let ttl = super::ttl::read_ttl(inner, keyspace);
    let wrapped = ttl
        .and_then(|t| super::ttl::operator_for(inner.opts.merge_operator.as_ref(), Some(t.ttl_ms)));
    let merge_op =
        if ttl.is_some() { wrapped.as_ref() } else { inner.opts.merge_operator.as_ref() };
    let parts = threads.min(keys.len() / MIN_KEYS_PER_THREAD).max(1);
    let answers = if parts == 1 {
        lookup_all(&sv, &counters.levels, keyspace, keys, snapshot, (merge_op, ttl))
    } else {
        let lookup = |part: &[&[u8]]| {
            let levels = &inner.reads.local().levels;
            lookup_all(&sv, levels, keyspace, part, snapshot, (merge_op, ttl))
        };
        lookup_parallel(keys, parts, &lookup)
    };
    let found = answers.iter().filter(|a| matches!(a, Ok(Some(_)))).count();
    counters.add(&counters.gets_found, found as u64);
    answers
}

/// Runs `lookup` on `parts` contiguous parts of `keys` in key order, on the process's worker
/// pool (rayon's global pool, a thread per core, kept between calls: a thread started per call
/// begins on its parent's core and waits there until the parent blocks, so the two parts ran
/// one after the other), and returns the answers in the order of `keys`. A panic in a part is
/// resumed on the caller, as the single-threaded lookup would raise it.
fn lookup_parallel(
    keys: &[&[u8]],
    parts: usize,
    lookup: &(dyn Fn(&[&[u8]]) -> Vec<Answer> + Sync),
) -> Vec<Answer> {
    use rayon::prelude::*;
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| crate::ikey::compare_bytes(keys[a], keys[b]).then(a.cmp(&b)));
    let sorted: Vec<&[u8]> = order.iter().map(|&i| keys[i]).collect();
    let chunk = sorted.len().div_ceil(parts);
    let answered: Vec<Vec<Answer>> = sorted.par_chunks(chunk).map(lookup).collect();
    // Each part answers every key of it, in order: back to the callers' positions.
    let mut placed: Vec<(usize, Answer)> =
        order.into_iter().zip(answered.into_iter().flatten()).collect();
    placed.sort_unstable_by_key(|&(i, _)| i);
    placed.into_iter().map(|(_, answer)| answer).collect()
}

/// Keys still looking for their version, and the answers of the others.
struct Batch<'a> {
    keyspace: u32,
    keys: &'a [&'a [u8]],
    hashes: Vec<u64>,
    snapshot: u64,
    /// Positions of unresolved keys, in key order.
    pending: Vec<usize>,
    /// Per key: the first source (position in the round's runs) not yet looked at.
    next_run: Vec<usize>,
    /// Per key: the newest range tombstone covering it among the sources read so far.
    covered: Vec<u64>,
    answers: Vec<Option<Answer>>,
    /// Device reads are deferred and made together (io_uring is usable on this thread).
    batch_reads: bool,
    /// Merge operands collected per key (newest first), with the configured operator.
    operands: Vec<Operands<'a>>,
    /// Keys whose value is in a blob file, with its reference: read after the walk, grouped
    /// by file in offset order (`read_blobs`).
    blobs: Vec<(usize, crate::sst::blob::BlobRef)>,
    /// The blob files those references are read from.
    blob_store: Option<std::sync::Arc<crate::sst::blob::BlobStore>>,
}

impl Batch<'_> {
    /// Reads the values of the keys found as blob references, one blob file at a time in
    /// offset order (each file opened once, its reads moving forward), and answers them.
    fn read_blobs(&mut self) {
        let Some(store) = self.blob_store.take() else { return };
        let mut blobs = std::mem::take(&mut self.blobs);
        blobs.sort_by_key(|(_, r)| (r.file, r.offset));
        for (i, r) in blobs {
            let answer = store.get(&r).and_then(|v| self.operands[i].finish(self.keys[i], Some(v)));
            self.answers[i] = Some(answer);
        }
    }

    /// Drops the keys marked in `done` from `pending`.
    fn retire(&mut self, done: &mut Vec<bool>) {
        let mut slot = 0;
        self.pending.retain(|_| {
            slot += 1;
            !done[slot - 1]
        });
        done.clear();
        done.resize(self.pending.len(), false);
    }
}

fn lookup_all(
    sv: &SuperVersion,
    reads: &[ReadCounters; NUM_LEVELS],
    keyspace: u32,
    keys: &[&[u8]],
    snapshot: u64,
    (merge_operator, ttl): (Option<&SharedMergeOperator>, Option<super::ttl::ReadTtl>),
) -> Vec<Answer> {
    // The keys copied back to back: the callers' keys lie wherever they were allocated (a
    // Python batch's are objects scattered over the heap), and every source the walk visits
    // reads them again after a block's worth of other data has gone through the CPU's caches.
    // A profile of a 1,000-key batch had a stall on the first load of each key's bytes in
    // each table (4% of the time); packed, a batch's keys stay in the core's cache.
    let mut packed = Vec::with_capacity(keys.iter().map(|k| k.len()).sum());
    for k in keys {
        packed.extend_from_slice(k);
    }
    let mut at = 0;
    let keys: Vec<&[u8]> = keys
        .iter()
        .map(|k| {
            at += k.len();
            &packed[at - k.len()..at]
        })
        .collect();
    let keys = &keys[..];
    let mut pending: Vec<usize> = (0..keys.len()).collect();
    pending.sort_by(|&a, &b| crate::ikey::compare_bytes(keys[a], keys[b]).then(a.cmp(&b)));
    let mut b = Batch {
        keyspace,
        keys,
        hashes: keys.iter().map(|k| hash_key(k)).collect(),
        snapshot,
        pending,
        next_run: vec![0; keys.len()],
        covered: vec![0; keys.len()],
        answers: (0..keys.len()).map(|_| None).collect(),
        batch_reads: crate::storage::uring::not_refused(),
        operands: (0..keys.len()).map(|_| Operands::with_ttl(merge_operator, ttl)).collect(),
        blobs: Vec::new(),
        blob_store: None,
    };

    // The memtables, newest first, each asked for every key no newer one resolved (a key's
    // answer depends only on the sources it passes, so memtable by memtable gives each key
    // the walk a single `get` makes); a memtable's skip-list searches run interleaved.
    let mut done = vec![false; b.pending.len()];
    let (mut asked, mut probes, mut positions) = (Vec::new(), Vec::new(), Vec::new());
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        asked.clear();
        asked.extend(b.pending.iter().enumerate().filter(|&(slot, _)| !done[slot]));
        probes.clear();
        probes.extend(asked.iter().map(|&(_, &i)| (keys[i], b.hashes[i])));
        mem.positions(keyspace, snapshot, &probes, &mut positions);
        for (&(slot, &i), &position) in asked.iter().zip(&positions) {
            let covering = mem.max_covering_tombstone(keyspace, keys[i], snapshot);
            b.covered[i] = b.covered[i].max(covering);
            let ops = &mut b.operands[i];
            let (key, covered) = (keys[i], b.covered[i]);
            match Memtable::lookup_at(position, keyspace, key, true, &mut ops.list, covered) {
                MemLookup::Found(v) => b.answers[i] = Some(ops.finish(keys[i], Some(v))),
                MemLookup::Deleted => b.answers[i] = Some(ops.finish(keys[i], None)),
                MemLookup::Absent => continue,
            }
            done[slot] = true;
        }
    }
    b.retire(&mut done);

    // The sources below the memtables, newest first: each L0 file (they overlap), then each
    // deeper level (a sorted run of disjoint files).
    let version = &sv.version;
    let mut runs: Vec<group::Run<'_>> =
        version.levels()[0].iter().map(|f| group::Run::L0(f)).collect();
    runs.extend(
        (1..NUM_LEVELS).filter(|&l| !version.levels()[l].is_empty()).map(group::Run::Level),
    );
    let mut scratch = group::Scratch::default();
    // Each round takes every pending key to the first source its filter does not exclude, or
    // past the last source: it resolves the key or moves its next source further down.
    while !b.pending.is_empty() {
        b.round(version, &runs, reads, &mut done, &mut scratch);
        b.retire(&mut done);
    }
    b.read_blobs();
    // Keys no level resolved: their operands (if any) merge onto no base.
    let Batch { answers, operands, .. } = b;
    answers
        .into_iter()
        .zip(operands)
        .zip(keys)
        .map(|((a, ops), key)| a.unwrap_or_else(|| ops.finish(key, None)))
        .collect()
}
