//! Batched point lookups (`Db::multi_get`, `Snapshot::multi_get`).
//!
//! Same answers as one `get` per key at the same snapshot, with the work reordered:
//! 1. every key is hashed once, and the keys are visited in key order (ties by position);
//! 2. the memtables answer what they hold;
//! 3. then level by level (each L0 file newest first, then one run per deeper level), every
//!    pending key's filter is probed before any block is read, so the probes of a file run back
//!    to back on its filter's cache lines, and the surviving keys then read their index entry
//!    and data block in key order (neighbours hit the block a predecessor just cached);
//! 4. a key leaves the pending set at the first level that holds a version of it (a value or a
//!    tombstone), exactly where a single `get` would stop;
//! 5. range tombstones apply as in a single `get` (src/db/read.rs): each file's covering
//!    tombstones are read for every pending key in its range before its filter is probed, and
//!    a version older than the newest covering tombstone seen so far is deleted.
//!
//! An error while reading one key's block (a corrupt block, an I/O error) is that key's result;
//! the other keys are unaffected, as if each had been looked up alone.

use super::read::ReadAt;
use super::{DbInner, SuperVersion};
use crate::error::Result;
use crate::filter::hash_key;
use crate::memtable::MemLookup;
use crate::sst::{FilterVerdict, GetResult, ReadCounters, Table};
use crate::version::{TableFile, NUM_LEVELS};
use std::sync::atomic::Ordering;

/// One key's answer.
type Answer = Result<Option<Vec<u8>>>;

/// The values of `keys` at `at`, in the order of `keys`.
pub(crate) fn multi_get(inner: &DbInner, keys: &[&[u8]], at: ReadAt) -> Vec<Answer> {
    let counters = inner.reads.local();
    counters.gets.fetch_add(keys.len() as u64, Ordering::Relaxed);
    let sv = inner.sv.load();
    let snapshot = at.sequence(inner); // after the super-version: see ReadAt
    let answers = lookup_all(&sv, &counters.levels, keys, snapshot);
    let found = answers.iter().filter(|a| matches!(a, Ok(Some(_)))).count();
    counters.gets_found.fetch_add(found as u64, Ordering::Relaxed);
    answers
}

/// Keys still looking for their version, and the answers of the others.
struct Batch<'a> {
    keys: &'a [&'a [u8]],
    hashes: Vec<u64>,
    snapshot: u64,
    /// Positions of unresolved keys, in key order.
    pending: Vec<usize>,
    /// Per key: the newest range tombstone covering it among the sources read so far.
    covered: Vec<u64>,
    answers: Vec<Option<Answer>>,
}

impl Batch<'_> {
    /// [`Batch::probe_table`] of `file`'s table; if the table cannot be opened, that error is
    /// the answer of every key in `range` (each would have met it alone).
    fn probe_file(
        &mut self,
        file: &TableFile,
        counters: &ReadCounters,
        range: std::ops::Range<usize>,
        done: &mut [bool],
        verdicts: &mut Vec<FilterVerdict>,
    ) {
        match file
            .with_table(|table| self.probe_table(table, counters, range.clone(), done, verdicts))
        {
            Ok(()) => {}
            Err(e) => {
                for slot in range {
                    self.answers[self.pending[slot]] = Some(Err(e.duplicate()));
                    done[slot] = true;
                }
            }
        }
    }

    /// Looks the keys `pending[range]` (all within `table`'s level) up in `table`: filters
    /// first, then blocks for the survivors. Resolved keys are marked in `done`.
    fn probe_table(
        &mut self,
        table: &Table,
        counters: &ReadCounters,
        range: std::ops::Range<usize>,
        done: &mut [bool],
        verdicts: &mut Vec<FilterVerdict>,
    ) {
        for &i in &self.pending[range.clone()] {
            // Before the filter, and whatever it says.
            let t = table.max_covering_tombstone(self.keys[i], self.snapshot);
            self.covered[i] = self.covered[i].max(t);
        }
        verdicts.clear();
        verdicts.extend(
            self.pending[range.clone()]
                .iter()
                .map(|&i| table.probe_filter(self.keys[i], self.hashes[i], counters)),
        );
        for (slot, verdict) in range.zip(verdicts.iter()) {
            let FilterVerdict::Maybe { positive } = *verdict else { continue };
            let i = self.pending[slot];
            let answer =
                match table.get_versioned(self.keys[i], self.snapshot, counters, positive, true) {
                    Ok((GetResult::NotFound, _)) => continue,
                    Ok((GetResult::Found(v), seq)) if seq > self.covered[i] => Ok(Some(v)),
                    Ok((GetResult::Found(_) | GetResult::Deleted, _)) => Ok(None),
                    Err(e) => Err(e),
                };
            self.answers[i] = Some(answer);
            done[slot] = true;
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
    keys: &[&[u8]],
    snapshot: u64,
) -> Vec<Answer> {
    let mut pending: Vec<usize> = (0..keys.len()).collect();
    pending.sort_by(|&a, &b| keys[a].cmp(keys[b]).then(a.cmp(&b)));
    let mut b = Batch {
        keys,
        hashes: keys.iter().map(|k| hash_key(k)).collect(),
        snapshot,
        pending,
        covered: vec![0; keys.len()],
        answers: (0..keys.len()).map(|_| None).collect(),
    };

    let mut done = vec![false; b.pending.len()];
    for (slot, &i) in b.pending.iter().enumerate() {
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            b.covered[i] = b.covered[i].max(mem.max_covering_tombstone(keys[i], snapshot));
            match mem.lookup_versioned(keys[i], b.hashes[i], snapshot, true) {
                (MemLookup::Found(v), seq) if seq > b.covered[i] => {
                    b.answers[i] = Some(Ok(Some(v)))
                }
                (MemLookup::Found(_) | MemLookup::Deleted, _) => b.answers[i] = Some(Ok(None)),
                (MemLookup::Absent, _) => continue,
            }
            done[slot] = true;
            break;
        }
    }
    b.retire(&mut done);

    let mut verdicts = Vec::new();
    // L0 files overlap: each one, newest first, sees every pending key in its range.
    for file in &sv.version.levels[0] {
        if b.pending.is_empty() {
            break;
        }
        let lo = b.pending.partition_point(|&i| keys[i] < file.meta.smallest_key.as_slice());
        let hi = b.pending.partition_point(|&i| keys[i] <= file.meta.largest_key.as_slice());
        if lo < hi {
            b.probe_file(file, &reads[0], lo..hi, &mut done, &mut verdicts);
            b.retire(&mut done);
        }
    }
    // Deeper levels are sorted runs of disjoint files: the pending keys (sorted) split into
    // consecutive groups, one per file.
    for (level, level_reads) in reads.iter().enumerate().skip(1) {
        if b.pending.is_empty() {
            break;
        }
        let mut slot = 0;
        while slot < b.pending.len() {
            let key = keys[b.pending[slot]];
            let Some(file) = sv.version.find_in_level(level, key) else {
                slot += 1;
                continue;
            };
            let end = slot
                + b.pending[slot..]
                    .partition_point(|&i| keys[i] <= file.meta.largest_key.as_slice());
            b.probe_file(file, level_reads, slot..end, &mut done, &mut verdicts);
            slot = end;
        }
        b.retire(&mut done);
    }
    b.answers.into_iter().map(|a| a.unwrap_or(Ok(None))).collect()
}
