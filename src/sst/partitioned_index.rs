//! Partitioned index (format version 4; docs/format.md#partitioned-index): a table whose index
//! block would be larger than `Options::metadata_block_size` stores it as *index partitions*,
//! each an ordinary index block (restart interval 1) over a run of data blocks, and a
//! *top-level index* over them, which the footer's index handle names:
//!
//! ```text
//! partitioned_index := index_partition{index_partitions} top_level
//! index_partition   := framed(block)   restart interval 1; consecutive entries of the index
//! top_level         := framed(block)   restart interval 1; one entry per partition:
//!                                      key = its last separator, value = its block_handle
//! ```
//!
//! A seek for `target` takes the first top-level entry whose key is `>= target`, then the first
//! separator `>= target` in that partition: the separators of all partitions in order are the
//! whole index's, and a partition's top-level key is its largest separator, so every separator
//! of an earlier partition is `< target` and this partition holds one `>= target` (its last).
//! The answer is the whole index's answer, so lookups and scans read the same data blocks.
//!
//! The reader's side (where partitions live, the two-level cursor) is in
//! src/sst/reader/partitioned_index.rs.

use crate::error::Result;
use crate::sst::block::{Block, BlockBuilder};

/// Splits a finished index block (restart interval 1, as the builder writes it) into
/// partitions of about `bytes` bytes each, in order: `(last separator, partition contents)`.
/// A partition is cut once its size estimate reaches `bytes`.
pub(crate) fn split(index: &[u8], bytes: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let block = Block::new(index.to_vec())?;
    let mut parts = Vec::new();
    let mut part = BlockBuilder::new(1);
    let mut last: Vec<u8> = Vec::new();
    for i in 0..block.num_restarts() {
        let (key, value, _) = block.restart_entry_at(block.restart_point(i)?)?;
        part.add(key, value);
        last.clear();
        last.extend_from_slice(key);
        if part.size_estimate() >= bytes {
            parts.push((last.clone(), part.finish()));
        }
    }
    if !part.is_empty() {
        parts.push((last, part.finish()));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ikey::{encode, ValueKind};

    #[test]
    fn split_keeps_every_entry_in_order_and_keys_partitions_by_their_last_separator() {
        let mut b = BlockBuilder::new(1);
        let keys: Vec<Vec<u8>> =
            (0..100u32).map(|i| encode(format!("k{i:04}").as_bytes(), 1, ValueKind::Put)).collect();
        for (i, k) in keys.iter().enumerate() {
            b.add(k, &[i as u8; 3]);
        }
        let parts = split(&b.finish(), 200).unwrap();
        assert!(parts.len() > 5, "{}", parts.len());
        let mut seen = Vec::new();
        for (last, raw) in parts {
            let block = std::sync::Arc::new(Block::new(raw).unwrap());
            let mut it = block.iter();
            it.seek_to_first().unwrap();
            let mut key = Vec::new();
            while it.valid() {
                key = it.key().to_vec();
                seen.push(key.clone());
                it.next().unwrap();
            }
            assert_eq!(key, last);
        }
        assert_eq!(seen, keys);
    }
}
