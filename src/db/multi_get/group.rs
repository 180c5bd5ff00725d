//! One group of a batched lookup: the pending keys of one L0 file, or of all files of a deeper
//! level. Three passes, so that the group's device reads are in flight together:
//! 1. per file: range tombstones, then every key's filter, then the survivors' data-block
//!    handles through the index; each distinct block is fetched (a cache hit is kept at once;
//!    a device read is listed; other reads are made at once);
//! 2. the listed device reads, all together (`storage::direct::read_batch`);
//! 3. per file: the read blocks are verified and cached, and each key is finished on the
//!    block it was handed (a cache too small to keep them does not matter).
//!
//! Errors stay per key: a file that cannot be opened fails the keys in its range, a failed
//! read or a corrupt block fails the keys that needed that block.

use super::{Answer, Batch};
use crate::error::Error;
use crate::sst::format::BlockHandle;
use crate::sst::Block;
use crate::sst::{BlockFetch, FilterVerdict, GetResult, ReadCounters, Table};
use crate::storage::direct::{self, BatchRead, SpanBytes};
use crate::storage::RandomAccessFile;
use crate::version::TableFile;
use std::ops::Range;
use std::sync::Arc;

/// A data block fetched for the group.
enum Fetched {
    /// In memory.
    Ready(Arc<Block>),
    /// Waiting for device read number `n` of the group.
    Device(usize),
    /// Its read or verification failed.
    Failed(Error),
}

/// A distinct data block the group needs: its file (position in the group) and handle.
struct Fetch {
    file: usize,
    handle: BlockHandle,
    state: Fetched,
}

/// A key past a file's filter with a data block to read.
struct Want {
    slot: usize,
    file: usize,
    positive: bool,
    fetch: usize,
}

/// Buffers reused across the groups of one batch.
#[derive(Default)]
pub(super) struct Scratch {
    verdicts: Vec<FilterVerdict>,
    fetches: Vec<Fetch>,
    wants: Vec<Want>,
    /// The file, offset and length of each device read.
    reads: Vec<(Arc<dyn RandomAccessFile>, u64, usize)>,
}

impl Batch<'_> {
    /// Looks up the keys `pending[range]` of each `(file, range)` of `group` (disjoint ranges;
    /// the files of one L0 file or of one level). Resolved keys are marked in `done`.
    pub(super) fn probe_group(
        &mut self,
        group: &[(&TableFile, Range<usize>)],
        counters: &ReadCounters,
        done: &mut [bool],
        s: &mut Scratch,
    ) {
        s.fetches.clear();
        s.wants.clear();
        s.reads.clear();
        for (f, (file, range)) in group.iter().enumerate() {
            let opened =
                file.with_table(|t| self.find_blocks(t, f, range.clone(), counters, done, s));
            if let Err(e) = opened {
                self.fail_all(range.clone(), &e, done);
            }
        }
        if s.wants.is_empty() {
            return;
        }
        let mut results: Vec<Option<std::io::Result<SpanBytes>>> = if s.reads.is_empty() {
            Vec::new()
        } else {
            let reqs: Vec<BatchRead<'_>> = s
                .reads
                .iter()
                .map(|(file, offset, len)| BatchRead {
                    fd: file.direct_fd().expect("only files read with O_DIRECT are deferred"),
                    offset: *offset,
                    len: *len,
                })
                .collect();
            direct::read_batch(&reqs)
        };
        // Wants are in file order (pass 1 went file by file).
        let mut w = 0;
        while w < s.wants.len() {
            let f = s.wants[w].file;
            let end = w + s.wants[w..].partition_point(|x| x.file == f);
            let (file, _) = &group[f];
            let finished = file.with_table(|t| {
                self.finish(t, f, w..end, counters, done, &mut s.fetches, &s.wants, &mut results)
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

    /// `e` is the answer of every key of `range` (each would have met it alone).
    fn fail_all(&mut self, range: Range<usize>, e: &Error, done: &mut [bool]) {
        for slot in range {
            self.answers[self.pending[slot]] = Some(Err(e.duplicate()));
            done[slot] = true;
        }
    }

    /// Pass 1 for `table` (file `f` of the group): tombstones, filters, block handles, fetches.
    fn find_blocks(
        &mut self,
        table: &Table,
        f: usize,
        range: Range<usize>,
        counters: &ReadCounters,
        done: &mut [bool],
        s: &mut Scratch,
    ) {
        for &i in &self.pending[range.clone()] {
            // Before the filter, and whatever it says.
            let t = table.max_covering_tombstone(self.keys[i], self.snapshot);
            self.covered[i] = self.covered[i].max(t);
        }
        s.verdicts.clear();
        s.verdicts.extend(
            self.pending[range.clone()].iter().map(|&i| {
                table.probe_filter(self.keyspace, self.keys[i], self.hashes[i], counters)
            }),
        );
        for (slot, verdict) in range.zip(s.verdicts.iter()) {
            let FilterVerdict::Maybe { positive } = *verdict else { continue };
            let i = self.pending[slot];
            let h =
                match table.data_block_handle(self.keyspace, self.keys[i], self.snapshot, counters)
                {
                    Ok(Some(h)) => h,
                    Ok(None) => continue, // past the last block: not in this table
                    Err(e) => {
                        self.answers[i] = Some(Err(e));
                        done[slot] = true;
                        continue;
                    }
                };
            // Keys are in order, so the keys of one block are neighbours.
            let shared = s.fetches.last().is_some_and(|x| x.file == f && x.handle == h);
            if shared {
                table.count_shared_block(counters);
            } else {
                let state = match table.fetch_data_block(h, counters, self.batch_reads) {
                    Ok(BlockFetch::Ready(b)) => Fetched::Ready(b),
                    Ok(BlockFetch::Device { file, offset, len }) => {
                        s.reads.push((file, offset, len));
                        Fetched::Device(s.reads.len() - 1)
                    }
                    Err(e) => Fetched::Failed(e),
                };
                s.fetches.push(Fetch { file: f, handle: h, state });
            }
            s.wants.push(Want { slot, file: f, positive, fetch: s.fetches.len() - 1 });
        }
    }

    /// Pass 3 for `table` (file `f`): installs its device reads and finishes `wants[range]`.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        table: &Table,
        f: usize,
        range: Range<usize>,
        counters: &ReadCounters,
        done: &mut [bool],
        fetches: &mut [Fetch],
        wants: &[Want],
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
        for want in &wants[range] {
            let fetch = &fetches[want.fetch];
            let i = self.pending[want.slot];
            let answer = match &fetch.state {
                Fetched::Ready(block) => {
                    let first = (fetch.handle, Arc::clone(block));
                    match self.finish_key(table, i, want.positive, counters, first) {
                        Some(answer) => answer,
                        None => continue,
                    }
                }
                Fetched::Failed(e) => Err(e.duplicate()),
                Fetched::Device(_) => unreachable!("every device read of the file was installed"),
            };
            self.answers[i] = Some(answer);
            done[want.slot] = true;
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
        let args = (self.snapshot, positive, true, self.covered[i]);
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
            Ok(GetResult::Deleted) => Some(ops.finish(key, None)),
            Err(e) => Some(Err(e)),
        }
    }
}
