//! The range-deletion block (format version 3): a table's range tombstones, fragmented, in the
//! data-block layout (src/sst/block.rs) with a restart point per entry.
//! docs/format.md#range-deletion-block, has the byte table.
//!
//! ```text
//! range_del_block := block of entries, in internal-key order:
//!   key   = internal key (start, seq, RangeDelete)     start of a fragment, inclusive; in the
//!                                                       table's keyspace (format v3 key flag)
//!   value = end user key                               end of the fragment, exclusive
//! ```
//! The writer stores fragments: any two entries have the same `[start, end)` or disjoint ones.
//! The reader does not rely on it: it checks each entry (kind RangeDelete, `start < end`,
//! strictly increasing keys) and fragments what it read again (idempotent on a well-formed
//! block), so a block that passes its CRC but was written badly still answers correctly.

use crate::error::{Error, Result};
use crate::ikey::{self, ValueKind};
use crate::range_del::{Fragments, RangeTombstone};
use crate::sst::block::{Block, BlockBuilder};
use std::cmp::Ordering;
use std::sync::Arc;

/// The block contents for `frags` and the number of entries written.
pub fn encode(frags: &Fragments, keyspace: u32) -> (Vec<u8>, u64) {
    let mut b = BlockBuilder::new(1);
    let mut n = 0;
    for t in frags.tombstones() {
        b.add(&ikey::encode_in(keyspace, &t.start, t.seq, ValueKind::RangeDelete), &t.end);
        n += 1;
    }
    (b.finish(), n)
}

/// Parses block contents into fragments and the number of entries read. Any malformed entry is
/// [`Error::Corruption`] naming it; never a panic.
pub fn decode(raw: Vec<u8>) -> Result<(Fragments, u64)> {
    let block = Arc::new(Block::new(raw)?);
    let limit = block.size();
    let mut it = block.iter();
    it.seek_to_first()?;
    let mut list: Vec<RangeTombstone> = Vec::new();
    let mut prev: Vec<u8> = Vec::new();
    while it.valid() {
        // Every entry takes at least one byte: more entries than bytes is a loop.
        if list.len() > limit {
            return Err(Error::corruption("range-deletion block does not end", None));
        }
        let key = it.key();
        let (start, seq, kind) = ikey::decode(key)?;
        if kind != ValueKind::RangeDelete {
            return Err(Error::corruption(
                format!("range-deletion block entry {} has kind {kind:?}", list.len()),
                None,
            ));
        }
        if start >= it.value() {
            return Err(Error::corruption(
                format!("range-deletion block entry {} ends at or before its start", list.len()),
                None,
            ));
        }
        if !list.is_empty() && ikey::compare(&prev, key) != Ordering::Less {
            return Err(Error::corruption(
                format!("range-deletion block entry {} is out of order", list.len()),
                None,
            ));
        }
        list.push(RangeTombstone { start: start.to_vec(), end: it.value().to_vec(), seq });
        prev.clear();
        prev.extend_from_slice(key);
        it.next()?;
    }
    let n = list.len() as u64;
    Ok((Fragments::new(&list), n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone { start: start.into(), end: end.into(), seq }
    }

    #[test]
    fn block_round_trips_fragmented_tombstones() {
        let f = Fragments::new(&[t("a", "k", 3), t("c", "z", 8), t("c", "d", 5)]);
        let (raw, n) = encode(&f, 0);
        assert_eq!(n, f.len() as u64);
        let (back, m) = decode(raw).unwrap();
        assert_eq!((back, m), (f, n));
    }

    #[test]
    fn malformed_entries_are_corruption() {
        let bad = |entries: &[(Vec<u8>, &[u8])]| {
            let mut b = BlockBuilder::new(1);
            for (k, v) in entries {
                b.add(k, v);
            }
            decode(b.finish()).unwrap_err()
        };
        let rd = |k: &[u8], s| ikey::encode(k, s, ValueKind::RangeDelete);
        assert!(bad(&[(ikey::encode(b"a", 1, ValueKind::Put), b"b")]).to_string().contains("kind"));
        assert!(bad(&[(rd(b"b", 1), b"a")]).to_string().contains("before its start"));
        assert!(bad(&[(rd(b"b", 1), b"c"), (rd(b"a", 1), b"c")]).to_string().contains("order"));
        assert!(decode(vec![1, 2, 3]).unwrap_err().is_corruption());
    }
}
