//! Partitioned filters (format version 4; docs/format.md#partitioned-filter): instead of one
//! filter envelope over all of a table's user keys, the filter block is a *top-level partition
//! index* over *filter partitions*, each an ordinary filter envelope over the distinct user keys
//! of a contiguous run of data blocks. A point lookup reads the small top-level block and then
//! one partition, so a large table's filter never has to be in memory (or re-read) whole.
//!
//! ```text
//! partitioned_filter := partition+ top_level
//! partition          := framed(filter envelope)   compression 0, over a run of data blocks
//! top_level          := framed(block)             restart interval 1; one entry per partition:
//!                                                 key = index separator of its last data block,
//!                                                 value = block_handle of the partition
//! ```
//!
//! *No false negative.* A lookup of user key `u` seeks the top-level block with
//! `T = (u, MAX_SEQ)`, the smallest internal key of `u`, and probes the first partition `p`
//! whose separator `S_p >= T`. Every partition holds the hash of every user key that has an
//! entry in any of its data blocks (a key whose versions span a partition boundary is in
//! both). If the table holds an entry of `u`, let `e` be the first; `p` holds `e`: every
//! partition before `p` ends at a separator `< T <= e`, so `e` is not in it; and if `e` were in
//! a later partition, `T <= S_p < e` (a separator sorts before the next block's first key), so
//! `S_p` would have user key `u` and a sequence number above `e`'s; a separator is either the
//! last key of `p`'s last block, an entry of `u` before `e` (contradiction), or a shortened key
//! whose user key lies strictly between two adjacent blocks' user keys and so is no user key of
//! the table (contradiction). Past the last separator the table holds no entry of `u` at all.

use crate::error::{Error, Result};
use crate::sst::block::Block;
use crate::sst::format::BlockHandle;
use crate::sst::index::IndexSearch;
use crate::sst::meta::{IndexEntry, MetaKind};
use std::ops::Range;

/// A closure that builds one serialized filter envelope from user-key hashes; called once per
/// partition.
pub type PartitionBuildFn = Box<dyn FnMut(&[u64]) -> Result<Vec<u8>> + Send>;

/// How a table builder partitions its filter ([`crate::sst::FilterBlockSource::Partitioned`]).
pub struct PartitionedFilterSource {
    /// Builds one partition's filter from its keys' hashes.
    pub build: PartitionBuildFn,
    /// Bits per key the filter spends (estimates a partition's size before it is built).
    pub bits_per_key: f64,
    /// A partition is cut at the first data-block boundary where its estimated size reaches
    /// this many bytes (`Options::metadata_block_size`).
    pub partition_bytes: usize,
}

impl std::fmt::Debug for PartitionedFilterSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionedFilterSource")
            .field("bits_per_key", &self.bits_per_key)
            .field("partition_bytes", &self.partition_bytes)
            .finish()
    }
}

/// One partition the builder writes: the hashes it covers and its last data block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartitionCut {
    /// Range into the builder's hashes (one per distinct user key, in key order).
    pub(crate) hashes: Range<usize>,
    /// Index of the partition's last data block (its separator keys the top-level entry).
    pub(crate) last_block: usize,
}

/// Cuts data blocks into partitions. `blocks[i]` is block `i`'s range of hashes: the hash of
/// its first entry's user key (shared with the previous block when that key's versions span the
/// boundary) up to one past its last's. A partition covers `blocks[s].start..blocks[e].end`, so
/// it holds every user key of its blocks. It is cut after the first block at which its
/// estimate (`keys * bits_per_key / 8`) reaches `partition_bytes`; the last one ends the table.
pub(crate) fn plan(
    blocks: &[Range<usize>],
    bits_per_key: f64,
    partition_bytes: usize,
) -> Vec<PartitionCut> {
    let mut cuts = Vec::new();
    let mut start: Option<usize> = None;
    for (i, b) in blocks.iter().enumerate() {
        let s = *start.get_or_insert(b.start);
        let estimate = (b.end - s) as f64 * bits_per_key / 8.0;
        if estimate >= partition_bytes as f64 || i + 1 == blocks.len() {
            cuts.push(PartitionCut { hashes: s..b.end, last_block: i });
            start = None;
        }
    }
    cuts
}

/// The top-level block of a partitioned filter with its prefix search, as held by the table or
/// cached (an entry of kind `Filter`: it replaces the whole filter, and is counted where that
/// was).
#[derive(Debug)]
pub(crate) struct PartitionIndex {
    entry: IndexEntry,
}

impl PartitionIndex {
    /// Wraps a verified top-level block of `partitions` entries. The writer stores one restart
    /// per entry in one keyspace, so the prefix search must build; anything else is corruption.
    pub(crate) fn new(block: Block, partitions: u64) -> Result<PartitionIndex> {
        let entry = IndexEntry::new(block);
        let n = entry.block.num_restarts() as u64;
        if n != partitions {
            return Err(Error::corruption(
                format!("filter partition index has {n} entries, properties say {partitions}"),
                None,
            ));
        }
        if entry.search.is_none() {
            return Err(Error::corruption(
                "filter partition index is not one restart per entry of one keyspace",
                None,
            ));
        }
        Ok(PartitionIndex { entry })
    }

    /// The partition to probe for a lookup whose smallest internal key is `target` (module
    /// documentation): its position and handle, or `None` past the last separator (the table
    /// holds no entry of that user key).
    pub(crate) fn partition_for(&self, target: &[u8]) -> Result<Option<(usize, BlockHandle)>> {
        let block = &self.entry.block;
        let search: &IndexSearch = self.entry.search.as_ref().expect("checked in new");
        let i = search.seek(block, target)?;
        if i == block.num_restarts() {
            return Ok(None);
        }
        self.handle(i).map(|h| Some((i, h)))
    }

    /// Number of partitions.
    pub(crate) fn len(&self) -> usize {
        self.entry.block.num_restarts()
    }

    /// The handle of partition `i` (`i < len()`): the summary's copy, or else the block's.
    pub(crate) fn handle(&self, i: usize) -> Result<BlockHandle> {
        if let Some(h) = self.entry.search.as_ref().and_then(|s| s.handle(i)) {
            return Ok(h);
        }
        let block = &self.entry.block;
        let (_, value, _) = block.restart_entry_at(block.restart_point(i)?)?;
        BlockHandle::decode(value)
    }
}

impl PartitionIndex {
    /// Bytes of the block's contents and its prefixes (the statistics' filter size).
    pub(crate) fn payload_bytes(&self) -> usize {
        self.entry.payload_bytes()
    }
}

impl MetaKind for PartitionIndex {
    const KIND: crate::cache::EntryKind = crate::cache::EntryKind::Filter;
    fn memory_bytes(&self) -> usize {
        crate::heap::arc_bytes::<PartitionIndex>() + self.entry.inner_heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_cuts_at_block_boundaries_once_the_estimate_is_reached() {
        // 10 keys per block, 8 bits per key: 10 bytes per block; cut at >= 25 bytes.
        let blocks: Vec<Range<usize>> = (0..7).map(|i| i * 10..i * 10 + 10).collect();
        let cuts = plan(&blocks, 8.0, 25);
        let got: Vec<(Range<usize>, usize)> =
            cuts.iter().map(|c| (c.hashes.clone(), c.last_block)).collect();
        assert_eq!(got, vec![(0..30, 2), (30..60, 5), (60..70, 6)]);
    }

    #[test]
    fn a_key_spanning_a_partition_boundary_is_in_both_partitions() {
        // Block 1 starts with the last key of block 0 (hash 9): its versions span the boundary.
        let blocks = vec![0..10, 9..20, 19..30];
        let cuts = plan(&blocks, 8.0, 1);
        let ranges: Vec<Range<usize>> = cuts.iter().map(|c| c.hashes.clone()).collect();
        assert_eq!(ranges, vec![0..10, 9..20, 19..30]);
    }

    #[test]
    fn a_small_filter_is_one_partition() {
        assert_eq!(plan(&[0..3, 3..6], 10.0, 4096).len(), 1);
        assert!(plan(&[], 10.0, 4096).is_empty());
    }
}
