//! Batched point lookups (`Db::multi_get`, `Snapshot::multi_get`).
//!
//! Same answers as one `get` per key at the same snapshot, with the work reordered:
//! 1. every key is hashed once, and the keys are visited in key order (ties by position);
//! 2. the memtables answer what they hold;
//! 3. then level by level (each L0 file newest first, then one run per deeper level), every
//!    pending key's filter is probed before any block is read, so the probes of a file run back
//!    to back on its filter's cache lines; the surviving keys then find their data block
//!    through the index, and the blocks are fetched before any key is finished: cache hits at
//!    once, a block two keys need once, and the device reads of files read with `O_DIRECT`
//!    together, up to 32 in flight (io_uring, src/storage/uring.rs); each key is then finished
//!    on the block it was handed (`group.rs`). An L0 file is one such group; a deeper level is
//!    one group over all its files, since its files split the pending keys between them;
//! 4. a key leaves the pending set at the first level that holds a value or a tombstone of it,
//!    exactly where a single `get` would stop; merge operands met before it are collected per
//!    key (the key stays pending) and merged when it leaves, or after the last level;
//! 5. range tombstones apply as in a single `get` (src/db/read.rs): each file's covering
//!    tombstones are read for every pending key in its range before its filter is probed, and
//!    a version older than the newest covering tombstone seen so far is deleted.
//!
//! An error while reading one key's block (a corrupt block, an I/O error) is that key's result;
//! the other keys are unaffected, as if each had been looked up alone.

mod group;

use super::read::ReadAt;
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::filter::hash_key;
use crate::memtable::MemLookup;
use crate::merge::{Operands, SharedMergeOperator};
use crate::sst::ReadCounters;
use crate::version::NUM_LEVELS;
use std::sync::atomic::Ordering;

/// One key's answer.
type Answer = Result<Option<Vec<u8>>>;

/// The values of `keys` of `keyspace` at `at`, in the order of `keys`.
pub(crate) fn multi_get(inner: &DbInner, keyspace: u32, keys: &[&[u8]], at: ReadAt) -> Vec<Answer> {
    let counters = inner.reads.local();
    counters.gets.fetch_add(keys.len() as u64, Ordering::Relaxed);
    let sv = inner.sv.load();
    let snapshot = at.sequence(inner); // after the super-version: see ReadAt
    let merge_op = inner.opts.merge_operator.as_ref();
    let answers = lookup_all(&sv, &counters.levels, keyspace, keys, snapshot, merge_op);
    let found = answers.iter().filter(|a| matches!(a, Ok(Some(_)))).count();
    counters.gets_found.fetch_add(found as u64, Ordering::Relaxed);
    answers
}

/// Keys still looking for their version, and the answers of the others.
struct Batch<'a> {
    keyspace: u32,
    keys: &'a [&'a [u8]],
    hashes: Vec<u64>,
    snapshot: u64,
    /// Positions of unresolved keys, in key order.
    pending: Vec<usize>,
    /// Per key: the newest range tombstone covering it among the sources read so far.
    covered: Vec<u64>,
    answers: Vec<Option<Answer>>,
    /// Device reads are deferred and made together (io_uring is usable on this thread).
    batch_reads: bool,
    /// Merge operands collected per key (newest first), with the configured operator.
    operands: Vec<Operands<'a>>,
}

impl Batch<'_> {
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
    merge_operator: Option<&SharedMergeOperator>,
) -> Vec<Answer> {
    let mut pending: Vec<usize> = (0..keys.len()).collect();
    pending.sort_by(|&a, &b| keys[a].cmp(keys[b]).then(a.cmp(&b)));
    let mut b = Batch {
        keyspace,
        keys,
        hashes: keys.iter().map(|k| hash_key(k)).collect(),
        snapshot,
        pending,
        covered: vec![0; keys.len()],
        answers: (0..keys.len()).map(|_| None).collect(),
        batch_reads: crate::storage::uring::available(),
        operands: (0..keys.len()).map(|_| Operands::new(merge_operator)).collect(),
    };

    let mut done = vec![false; b.pending.len()];
    for (slot, &i) in b.pending.iter().enumerate() {
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            let covering = mem.max_covering_tombstone(keyspace, keys[i], snapshot);
            b.covered[i] = b.covered[i].max(covering);
            let ops = &mut b.operands[i];
            let (key, hash, covered) = (keys[i], b.hashes[i], b.covered[i]);
            match mem.lookup(keyspace, key, hash, snapshot, true, &mut ops.list, covered) {
                MemLookup::Found(v) => b.answers[i] = Some(ops.finish(keys[i], Some(v))),
                MemLookup::Deleted => b.answers[i] = Some(ops.finish(keys[i], None)),
                MemLookup::Absent => continue,
            }
            done[slot] = true;
            break;
        }
    }
    b.retire(&mut done);

    let mut scratch = group::Scratch::default();
    // L0 files overlap: each one, newest first, sees every pending key in its range.
    for file in &sv.version.levels[0] {
        if b.pending.is_empty() {
            break;
        }
        let lo = b.pending.partition_point(|&i| (keyspace, keys[i]) < file.meta.smallest());
        let hi = b.pending.partition_point(|&i| (keyspace, keys[i]) <= file.meta.largest());
        if lo < hi {
            b.probe_group(&[(&**file, lo..hi)], &reads[0], &mut done, &mut scratch);
            b.retire(&mut done);
        }
    }
    // Deeper levels are sorted runs of disjoint files: the pending keys (sorted) split into
    // consecutive groups, one per file, all probed as one group.
    let mut files = Vec::new();
    for (level, level_reads) in reads.iter().enumerate().skip(1) {
        if b.pending.is_empty() {
            break;
        }
        files.clear();
        let mut slot = 0;
        while slot < b.pending.len() {
            let key = keys[b.pending[slot]];
            let Some(file) = sv.version.find_in_level(level, keyspace, key) else {
                slot += 1;
                continue;
            };
            let end = slot
                + b.pending[slot..]
                    .partition_point(|&i| (keyspace, keys[i]) <= file.meta.largest());
            files.push((&**file, slot..end));
            slot = end;
        }
        b.probe_group(&files, level_reads, &mut done, &mut scratch);
        b.retire(&mut done);
    }
    // Keys no level resolved: their operands (if any) merge onto no base.
    let Batch { answers, operands, .. } = b;
    answers
        .into_iter()
        .zip(operands)
        .zip(keys)
        .map(|((a, ops), key)| a.unwrap_or_else(|| ops.finish(key, None)))
        .collect()
}
