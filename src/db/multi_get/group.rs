//! One round of a batched lookup (see the parent module, point 3). Three passes, so that the
//! round's device reads are in flight together:
//! 1. source by source, for the pending keys not stopped at an earlier source this round: per
//!    file, range tombstones, then every key's filter, then the survivors' data-block handles
//!    through the index; a key with a handle stops there, and each distinct block is fetched
//!    (a cache hit is kept at once; a device read is submitted; other reads are made at once),
//!    and a key whose block is in memory is finished on it at once;
//! 2. the device reads, each submitted as pass 1 found it (`storage::direct::DirectBatch`),
//!    are waited for together;
//! 3. per file: the device-read blocks are verified and cached, and each key waiting for one
//!    is finished on the block it was handed (a cache too small to keep them does not matter).
//!
//! Errors stay per key: a file that cannot be opened fails the keys that reach it, a failed
//! read or a corrupt block fails the keys that needed that block.

use super::{Answer, Batch};
use crate::error::Error;
use crate::limits::NUM_LEVELS;
use crate::sst::format::BlockHandle;
use crate::sst::{buffers, Block};
use crate::sst::{BlockFetch, FilterVerdict, GetResult, ReadCounters, Table, ValueOut};
use crate::storage::direct::{DirectBatch, SpanBytes};
use crate::version::{TableFile, Version};
use std::sync::Arc;

/// A source of the SST part of a lookup, in the order a single `get` visits them.
pub(super) enum Run<'v> {
    /// One L0 file.
    L0(&'v TableFile),
    /// A deeper level (a sorted run of disjoint files).
    Level(usize),
}

/// A data block fetched in the round.
enum Fetched {
    /// In memory.
    Ready(Arc<Block>),
    /// Waiting for device read number `n` of the round.
    Device(usize),
    /// Was `Ready`, and every key that needed it has been finished on it: handed back so the
    /// next block read can reuse its buffer.
    Released,
    /// Its read or verification failed.
    Failed(Error),
}

/// A distinct data block the round needs: its file (position in the round's files) and handle.
struct Fetch {
    file: usize,
    handle: BlockHandle,
    state: Fetched,
}

impl Fetch {
    /// Lets go of the block if it is in memory ([`buffers::release`]); a device read's state is
    /// kept (its keys wait for pass 3).
    fn release(&mut self) {
        match std::mem::replace(&mut self.state, Fetched::Released) {
            Fetched::Ready(block) => buffers::release(block),
            other => self.state = other,
        }
    }
}

/// A key stopped at a file, with a data block to read.
struct Want {
    slot: usize,
    file: usize,
    positive: bool,
    fetch: usize,
}

/// Buffers reused across the rounds of one batch.
#[derive(Default)]
pub(super) struct Scratch {
    verdicts: Vec<FilterVerdict>,
    fetches: Vec<Fetch>,
    wants: Vec<Want>,
    /// The round's device reads, made when the first one is found.
    batch: Option<DirectBatch>,
    /// Per slot: the key stopped at a source this round (or was answered).
    stopped: Vec<bool>,
    /// The slots that reach the current source.
    reach: Vec<usize>,
    /// Keys of the current file waiting on a cached block being prefetched, oldest first.
    cold: std::collections::VecDeque<ColdKey>,
    /// The current file's keys its filter did not exclude: `(slot, positive)`.
    survivors: Vec<(usize, bool)>,
}

/// Keys between a filter line's prefetch and its probe: a probe costs a few nanoseconds once its
/// line is there, a line from DRAM about a hundred, so eight probes cover one load.
const FILTER_AHEAD: usize = 8;

/// A survivor's data block handle, found a key early, and its block cache probe
/// (`Table::probe_data_block`; `None` when it shares the block of the key before it).
struct Ahead {
    handle: crate::error::Result<Option<BlockHandle>>,
    probed: Option<Option<Arc<Block>>>,
}

/// A key whose block came from the block cache, finished [`PREFETCH_DEPTH`] keys later.
struct ColdKey {
    slot: usize,
    positive: bool,
    handle: BlockHandle,
    block: Arc<Block>,
}

/// Cache-hit keys in flight. A cached block is in memory but seldom in the CPU's caches, and
/// the search of it is a chain of dependent loads (the restart array, a restart entry, the
/// entries after it): finished at once, a key waited for each in turn (a tenth of a Python
/// `multi_get` batch's time). Its lines are prefetched instead, and the key is finished after
/// the next few keys' work, by which time they have arrived; four blocks (16 KiB) stay within
/// the core's caches.
const PREFETCH_DEPTH: usize = 4;

impl Batch<'_> {
    /// One round (see the module documentation) over `runs`; `reads` are the per-level
    /// counters. Keys resolved, or past the last source, are marked in `done`.
    pub(super) fn round<'v>(
        &mut self,
        version: &'v Version,
        runs: &[Run<'v>],
        reads: &[ReadCounters; NUM_LEVELS],
        done: &mut [bool],
        s: &mut Scratch,
    ) {
        s.fetches.iter_mut().for_each(Fetch::release);
        s.fetches.clear();
        s.wants.clear();
        s.batch = None;
        s.stopped.clear();
        s.stopped.resize(self.pending.len(), false);
        // The round's files: (file, level, position of its run).
        let mut files: Vec<(&'v TableFile, usize, usize)> = Vec::new();
        let mut reach = std::mem::take(&mut s.reach);
        for (r, run) in runs.iter().enumerate() {
            reach.clear();
            reach.extend(
                (0..self.pending.len())
                    .filter(|&slot| !s.stopped[slot] && self.next_run[self.pending[slot]] <= r),
            );
            let mut at = 0;
            while at < reach.len() {
                let key = (self.keyspace, self.keys[self.pending[reach[at]]]);
                let (file, level) = match run {
                    Run::L0(file) => (Some(*file), 0),
                    Run::Level(l) => (version.find_in_level(*l, key.0, key.1).map(|f| &**f), *l),
                };
                let Some(file) = file.filter(|f| f.may_contain_key(key.0, key.1)) else {
                    at += 1;
                    continue;
                };
                let end = at
                    + reach[at..].partition_point(|&slot| {
                        (self.keyspace, self.keys[self.pending[slot]]) <= file.meta.largest()
                    });
                files.push((file, level, r));
                let f = files.len() - 1;
                let slots = &reach[at..end];
                let opened =
                    file.with_table(|t| self.find_blocks(t, (f, r), slots, &reads[level], done, s));
                if let Err(e) = opened {
                    for &slot in slots {
                        self.answers[self.pending[slot]] = Some(Err(e.duplicate()));
                        done[slot] = true;
                        s.stopped[slot] = true;
                    }
                }
                at = end;
            }
        }
        s.reach = reach;
        // Keys that no source stopped went past the last one: no version below the memtables.
        for (slot, stopped) in s.stopped.iter().enumerate() {
            if !stopped {
                done[slot] = true;
            }
        }
        if s.wants.is_empty() {
            return;
        }
        let mut results: Vec<Option<std::io::Result<SpanBytes>>> =
            s.batch.take().map(DirectBatch::finish).unwrap_or_default();
        // Wants are in file order (pass 1 went file by file).
        let mut w = 0;
        while w < s.wants.len() {
            let f = s.wants[w].file;
            let end = w + s.wants[w..].partition_point(|x| x.file == f);
            let (file, level, r) = files[f];
            let finished = file.with_table(|t| {
                let wants = &s.wants[w..end];
                self.finish(t, f, r, wants, &reads[level], done, &mut s.fetches, &mut results)
            });
            if let Err(e) = finished {
                for want in &s.wants[w..end] {
                    self.answers[self.pending[want.slot]] = Some(Err(e.duplicate()));
                    done[want.slot] = true;
                }
            }
            w = end;
        }
    }

    /// Pass 1 for `table` (file `f` of the round, of run `r`) and the keys at `slots` that
    /// reach it: tombstones, filters, block handles, fetches. Marks the keys that stop here. A
    /// key whose block was just read (buffered or mapped) is finished at once, while the block
    /// is still in the CPU's caches: deferring it to pass 3 would touch each block again after a
    /// whole batch of others (a batch of 1,000 blocks is 4 MiB, past L2). A key whose block is
    /// a cache hit is finished [`PREFETCH_DEPTH`] keys later, its block's lines loading
    /// meanwhile, and every such key before this file is done. Only keys waiting for a device
    /// read go on to pass 3.
    fn find_blocks(
        &mut self,
        table: &Table,
        (f, r): (usize, usize),
        slots: &[usize],
        counters: &ReadCounters,
        done: &mut [bool],
        s: &mut Scratch,
    ) {
        for &i in slots.iter().map(|&slot| &self.pending[slot]) {
            // Before the filter, and whatever it says.
            let t = table.max_covering_tombstone(self.keys[i], self.snapshot);
            self.covered[i] = self.covered[i].max(t);
        }
        // Each probe waits on its filter line (a file's filter is seldom in the core's caches),
        // so the lines of the keys [`FILTER_AHEAD`] further on are loading meanwhile.
        for &slot in slots.iter().take(FILTER_AHEAD) {
            table.prefetch_filter(self.hashes[self.pending[slot]]);
        }
        s.verdicts.clear();
        s.verdicts.extend(slots.iter().enumerate().map(|(n, &slot)| {
            if let Some(&later) = slots.get(n + FILTER_AHEAD) {
                table.prefetch_filter(self.hashes[self.pending[later]]);
            }
            let i = self.pending[slot];
            table.probe_filter_in_range(self.keyspace, self.keys[i], self.hashes[i], counters)
        }));
        s.survivors.clear();
        s.survivors.extend(slots.iter().zip(&s.verdicts).filter_map(|(&slot, v)| match *v {
            FilterVerdict::Maybe { positive } => Some((slot, positive)),
            FilterVerdict::Absent => None,
        }));
        // Whether the last block fetched came from the block cache (a key sharing it waits
        // with the key that fetched it).
        let mut cold = false;
        // The next survivor's block handle, and its cache probe unless it shares the block of
        // the key before it, made one key early: the probe's cache misses (the cache's map and
        // entry) and, on a block cache miss, the load of the block's mapped bytes
        // (`Table::probe_data_block`) overlap this key's work instead of stalling its own.
        let mut ahead: Option<Ahead> = None;
        for at in 0..s.survivors.len() {
            let (slot, positive) = s.survivors[at];
            // The index search's loads for the keys after the next (whose handle is found
            // now), each a step further the nearer the key (`Table::prefetch_index`).
            for (ahead, stage) in [(5, 0), (4, 1), (3, 2), (2, 3)] {
                if let Some(&(next, _)) = s.survivors.get(at + ahead) {
                    table.prefetch_index(self.keyspace, self.keys[self.pending[next]], stage);
                }
            }
            let i = self.pending[slot];
            let Ahead { handle, probed } = ahead.take().unwrap_or_else(|| Ahead {
                handle: table.data_block_handle(
                    self.keyspace,
                    self.keys[i],
                    self.snapshot,
                    counters,
                ),
                probed: None,
            });
            if let Some(&(next, _)) = s.survivors.get(at + 1) {
                let key = self.keys[self.pending[next]];
                let next = table.data_block_handle(self.keyspace, key, self.snapshot, counters);
                // The block the last fetch will hold once this key is through.
                let last = match &handle {
                    Ok(Some(h)) => Some(*h),
                    _ => s.fetches.last().filter(|x| x.file == f).map(|x| x.handle),
                };
                let probed = match &next {
                    Ok(Some(h)) if last != Some(*h) => Some(table.probe_data_block(*h, counters)),
                    _ => None,
                };
                ahead = Some(Ahead { handle: next, probed });
            }
            let h = match handle {
                Ok(Some(h)) => h,
                Ok(None) => continue, // past the last block: not in this table
                Err(e) => {
                    self.answers[i] = Some(Err(e));
                    done[slot] = true;
                    s.stopped[slot] = true;
                    continue;
                }
            };
            s.stopped[slot] = true;
            // Keys are in order, so the keys of one block are neighbours.
            let shared = s.fetches.last().is_some_and(|x| x.file == f && x.handle == h);
            if shared {
                table.count_shared_block(counters);
            } else {
                // Keys come in key order, so no later key needs the last block if it was in
                // memory (its keys are finished): let go of it before the next read, which can
                // then decode into its buffer.
                if let Some(last) = s.fetches.last_mut() {
                    last.release();
                }
                let cached = probed.unwrap_or_else(|| table.probe_data_block(h, counters));
                cold = cached.is_some();
                let state = match cached {
                    Some(b) => {
                        b.prefetch();
                        Fetched::Ready(b)
                    }
                    None => match table.read_data_block(h, counters, self.batch_reads) {
                        Ok(BlockFetch::Ready(b)) => Fetched::Ready(b),
                        Ok(BlockFetch::Device { file, offset, len }) => {
                            if s.batch.is_none() {
                                s.batch = DirectBatch::new();
                            }
                            match &mut s.batch {
                                Some(batch) => Fetched::Device(batch.add(file, offset, len)),
                                // No ring for this batch (one is open on this thread): read now.
                                None => match table.install_read(h, None, counters) {
                                    Ok(b) => Fetched::Ready(b),
                                    Err(e) => Fetched::Failed(e),
                                },
                            }
                        }
                        Err(e) => Fetched::Failed(e),
                    },
                };
                s.fetches.push(Fetch { file: f, handle: h, state });
            }
            let fetch = s.fetches.len() - 1;
            match &s.fetches[fetch].state {
                Fetched::Device(_) => s.wants.push(Want { slot, file: f, positive, fetch }),
                Fetched::Ready(block) if cold => {
                    let block = Arc::clone(block);
                    s.cold.push_back(ColdKey { slot, positive, handle: h, block });
                    self.settle_cold(table, r, &mut s.cold, counters, done, PREFETCH_DEPTH);
                }
                state => self.settle(table, r, slot, positive, (h, state), counters, done),
            }
        }
        self.settle_cold(table, r, &mut s.cold, counters, done, 0);
    }

    /// Finishes the oldest keys of `cold` until at most `keep` wait.
    fn settle_cold(
        &mut self,
        table: &Table,
        r: usize,
        cold: &mut std::collections::VecDeque<ColdKey>,
        counters: &ReadCounters,
        done: &mut [bool],
        keep: usize,
    ) {
        while cold.len() > keep {
            let Some(k) = cold.pop_front() else { return };
            let state = Fetched::Ready(k.block);
            self.settle(table, r, k.slot, k.positive, (k.handle, &state), counters, done);
        }
    }

    /// Finishes the key at `slot` on its fetched block (`Ready` or `Failed`): answers it, or
    /// sends it on from run `r + 1` next round when the table does not resolve it.
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &mut self,
        table: &Table,
        r: usize,
        slot: usize,
        positive: bool,
        (handle, state): (BlockHandle, &Fetched),
        counters: &ReadCounters,
        done: &mut [bool],
    ) {
        let i = self.pending[slot];
        let answer = match state {
            Fetched::Ready(block) => {
                let first = (handle, Arc::clone(block));
                match self.finish_key(table, i, positive, counters, first) {
                    Some(answer) => answer,
                    None => {
                        self.next_run[i] = r + 1;
                        return;
                    }
                }
            }
            Fetched::Failed(e) => Err(e.duplicate()),
            Fetched::Device(_) | Fetched::Released => {
                unreachable!("only fetched blocks are settled, before they are released")
            }
        };
        self.answers[i] = Some(answer);
        done[slot] = true;
    }

    /// Pass 3 for `table` (file `f`, of run `r`): installs its device reads and finishes its
    /// `wants`; a key it does not resolve goes on from run `r + 1` next round.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        table: &Table,
        f: usize,
        r: usize,
        wants: &[Want],
        counters: &ReadCounters,
        done: &mut [bool],
        fetches: &mut [Fetch],
        results: &mut [Option<std::io::Result<SpanBytes>>],
    ) {
        for fetch in fetches.iter_mut().filter(|x| x.file == f) {
            if let Fetched::Device(n) = fetch.state {
                fetch.state = match table.install_read(fetch.handle, results[n].take(), counters) {
                    Ok(b) => Fetched::Ready(b),
                    Err(e) => Fetched::Failed(e),
                };
            }
        }
        for want in wants {
            let fetch = &fetches[want.fetch];
            let state = (fetch.handle, &fetch.state);
            self.settle(table, r, want.slot, want.positive, state, counters, done);
        }
    }

    /// Key `i`'s lookup in `table` from its first data block; `None` when the table does not
    /// resolve it (not found, or merge operands only: the key stays pending).
    fn finish_key(
        &mut self,
        table: &Table,
        i: usize,
        positive: bool,
        counters: &ReadCounters,
        first: (BlockHandle, Arc<Block>),
    ) -> Option<Answer> {
        let key = self.keys[i];
        let ops = &mut self.operands[i];
        let before = ops.list.len();
        let args = (self.snapshot, positive, ValueOut::Reference, self.covered[i]);
        let got = table.get_past_filter_from(
            self.keyspace,
            key,
            args,
            counters,
            &mut ops.list,
            Some(first),
        );
        let got = match got {
            Ok(r) if ops.list.len() > before => {
                ops.check_source(Some(table.merge_operator_name()), key).map(|()| r)
            }
            other => other,
        };
        match got {
            Ok(GetResult::NotFound) => None,
            Ok(GetResult::Found(v)) => Some(ops.finish(key, Some(v))),
            Ok(GetResult::FoundInBlock(v)) => Some(ops.finish(key, Some(v.as_bytes().to_vec()))),
            Ok(GetResult::Deleted) => Some(ops.finish(key, None)),
            // Read after the walk, with the other values of its blob file (`read_blobs`); the
            // placeholder answer is replaced then.
            Ok(GetResult::Blob(r)) => match table.blob_store() {
                Ok(store) => {
                    self.blobs.push((i, r));
                    self.blob_store.get_or_insert_with(|| Arc::clone(store));
                    Some(Ok(None))
                }
                Err(e) => Some(Err(e)),
            },
            Err(e) => Some(Err(e)),
        }
    }
}
