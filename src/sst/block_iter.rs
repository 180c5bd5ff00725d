//! [`BlockIter`]: iteration both ways and seeks over one [`Block`].
//!
//! Backward steps (LevelDB's `block.cc`): keys are prefix-compressed, so an entry's key can only
//! be rebuilt by decoding forward from the restart point before it. `prev` binary-searches the
//! restart array for the last restart point before the current entry, then decodes forward until
//! the entry that ends where the current one starts: at most `restart_interval` entries per step.
//!
//! Safety against malformed blocks (which pass the CRC only through a writer bug or a CRC
//! collision): every varint and every length is checked against the entry area before use, a
//! restart entry must have `shared = 0`, a key must be at least an internal-key trailer long,
//! and every step strictly advances the offset (an entry is at least 3 bytes), so iteration
//! terminates after at most `len / 3` steps. Any violation is `Error::Corruption` with the
//! offset inside the block; the iterator is then invalid.

use crate::error::{Error, Result};
use crate::ikey;
use crate::sst::block::{Block, Entry};
use std::cmp::Ordering;
use std::sync::Arc;

/// A cursor over the entries of a block, in key order. Holds the block by `Arc`, so it stays
/// valid after the block cache evicts the block.
#[derive(Debug)]
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the next entry to decode (meaningful while valid).
    next: usize,
    /// Offset of the current entry (meaningful while valid; where `prev` stops).
    cur: usize,
    key: Vec<u8>,
    value: (usize, usize),
    valid: bool,
}

/// Longest key buffer a dropped cursor hands on to the thread's next one.
const SPARE_KEY_MAX: usize = 1024;

thread_local! {
    /// The key buffer of the thread's last dropped cursor: a point lookup makes a cursor per
    /// block it reads, and allocating and freeing its key buffer each time was a visible part
    /// of a `multi_get` profile's allocator time.
    static SPARE_KEY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Drop for BlockIter {
    fn drop(&mut self) {
        if self.key.capacity() <= SPARE_KEY_MAX {
            let key = std::mem::take(&mut self.key);
            // During thread teardown the slot may be gone: the buffer is then simply freed.
            let _ = SPARE_KEY.try_with(|spare| spare.set(key));
        }
    }
}

impl BlockIter {
    pub(crate) fn new(block: Arc<Block>) -> BlockIter {
        let mut key = SPARE_KEY.try_with(std::cell::Cell::take).unwrap_or_default();
        key.clear();
        BlockIter { block, next: 0, cur: 0, key, value: (0, 0), valid: false }
    }

    /// Moves the cursor to `block`, positioned nowhere (its key buffer kept); returns the
    /// block it iterated.
    pub(crate) fn switch_to(&mut self, block: Arc<Block>) -> Arc<Block> {
        self.valid = false;
        self.key.clear();
        (self.next, self.cur, self.value) = (0, 0, (0, 0));
        std::mem::replace(&mut self.block, block)
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (an internal key). Empty when not valid.
    pub fn key(&self) -> &[u8] {
        if self.valid {
            &self.key
        } else {
            &[]
        }
    }

    /// Where [`BlockIter::value`] lies in the block's data (empty when not valid).
    pub(crate) fn value_range(&self) -> std::ops::Range<usize> {
        if self.valid {
            self.value.0..self.value.0 + self.value.1
        } else {
            0..0
        }
    }

    /// The current value. Empty when not valid.
    pub fn value(&self) -> &[u8] {
        if self.valid {
            &self.block.data()[self.value.0..self.value.0 + self.value.1]
        } else {
            &[]
        }
    }

    #[inline]
    fn entry_at(&self, off: usize) -> Result<Entry> {
        self.block.entry_at(off)
    }

    /// Decodes the entry at `off` into the cursor, extending the previous key.
    fn load(&mut self, off: usize) -> Result<()> {
        self.valid = false;
        if off >= self.block.restarts_offset() {
            return Ok(()); // past the last entry
        }
        let e = self.entry_at(off)?;
        if e.shared > self.key.len() {
            return Err(Error::corruption(
                format!("block entry shares {} bytes of a {}-byte key", e.shared, self.key.len()),
                Some(off as u64),
            ));
        }
        self.key.truncate(e.shared);
        self.key.extend_from_slice(&self.block.data()[e.delta.0..e.delta.0 + e.delta.1]);
        if self.key.len() < ikey::TRAILER_LEN {
            return Err(Error::corruption("block key shorter than 8 bytes", Some(off as u64)));
        }
        self.value = e.value;
        self.cur = off;
        self.next = e.end;
        self.valid = true;
        Ok(())
    }

    /// The full key stored at restart point `i` (borrowed from the block).
    fn restart_key(&self, i: usize) -> Result<&[u8]> {
        let off = self.block.restart_point(i)?;
        Ok(self.block.restart_entry_at(off)?.0)
    }

    /// Positions on the first entry (invalid if the block is empty).
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.key.clear();
        let r = self.load(0);
        self.fail_on_err(r)
    }

    /// Positions on the first entry whose key is `>=` `target` in internal-key order (invalid if
    /// none): binary search over restart points, then a linear scan of at most one interval.
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_inner(target);
        self.fail_on_err(r)
    }

    fn seek_inner(&mut self, target: &[u8]) -> Result<()> {
        self.valid = false;
        if self.block.restarts_offset() == 0 {
            return Ok(()); // empty block
        }
        // Invariant: the key at restart `left` is < target, or left == 0.
        let (mut left, mut right) = (0, self.block.num_restarts() - 1);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            if ikey::compare(self.restart_key(mid)?, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        self.key.clear();
        let start = self.block.restart_point(left)?;
        self.load(start)?;
        while self.valid && ikey::compare(&self.key, target) == Ordering::Less {
            self.load(self.next)?;
        }
        Ok(())
    }

    /// Positions on the entry at restart point `i` (invalid when `i` is the number of restart
    /// points, i.e. past the end).
    pub(crate) fn seek_to_restart(&mut self, i: usize) -> Result<()> {
        self.valid = false;
        self.key.clear();
        if i >= self.block.num_restarts() || self.block.restarts_offset() == 0 {
            return Ok(());
        }
        let r = self.block.restart_point(i).and_then(|off| self.load(off));
        self.fail_on_err(r)
    }

    /// Advances to the next entry (no-op when not valid).
    // A cursor, not an `Iterator`: entries are borrowed from it through `key()`/`value()`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        let r = self.load(self.next);
        self.fail_on_err(r)
    }

    /// Positions on the last entry (invalid if the block is empty).
    pub fn seek_to_last(&mut self) -> Result<()> {
        let r = self.seek_to_last_inner();
        self.fail_on_err(r)
    }

    fn seek_to_last_inner(&mut self) -> Result<()> {
        self.valid = false;
        if self.block.restarts_offset() == 0 {
            return Ok(()); // empty block
        }
        let end = self.block.restarts_offset();
        self.key.clear();
        self.load(self.block.restart_point(self.block.num_restarts() - 1)?)?;
        // Each load strictly advances `next`, so this ends within the last interval.
        while self.valid && self.next < end {
            self.load(self.next)?;
        }
        Ok(())
    }

    /// Positions on the last entry whose key is `<=` `target` in internal-key order (invalid if
    /// none): a `seek`, then one step back unless it landed on `target` itself.
    pub fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_for_prev_inner(target);
        self.fail_on_err(r)
    }

    fn seek_for_prev_inner(&mut self, target: &[u8]) -> Result<()> {
        self.seek_inner(target)?;
        if !self.valid {
            return self.seek_to_last_inner();
        }
        if ikey::compare(&self.key, target) == Ordering::Greater {
            self.prev_inner()?;
        }
        Ok(())
    }

    /// Moves to the previous entry (invalid before the first; no-op when not valid).
    pub fn prev(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        let r = self.prev_inner();
        self.fail_on_err(r)
    }

    fn prev_inner(&mut self) -> Result<()> {
        let target = self.cur;
        self.valid = false;
        // The last restart point strictly before the current entry. In a well-formed block the
        // restart offsets ascend, so this binary search is exact; in a corrupt one the forward
        // scan below fails to meet `target` and reports it.
        let (mut lo, mut hi) = (0, self.block.num_restarts());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.block.restart_point(mid)? < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return Ok(()); // the current entry was the first
        }
        self.key.clear();
        self.load(self.block.restart_point(lo - 1)?)?;
        // Offsets strictly increase, so this stops at `target` or past it.
        while self.valid && self.next < target {
            self.load(self.next)?;
        }
        if !self.valid || self.next != target {
            self.valid = false;
            return Err(Error::corruption(
                "block entries do not chain to the entry before this one",
                Some(target as u64),
            ));
        }
        Ok(())
    }

    fn fail_on_err(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.valid = false;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ikey::{encode, ValueKind};
    use crate::sst::block::BlockBuilder;

    fn key(i: u32) -> Vec<u8> {
        encode(format!("key{:06}", i * 2).as_bytes(), 7, ValueKind::Put)
    }

    fn build(n: u32, interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for i in 0..n {
            b.add(&key(i), format!("v{i}").as_bytes());
        }
        Arc::new(Block::new(b.finish()).unwrap())
    }

    #[test]
    fn block_round_trips_with_restarts_and_seeks() {
        for interval in [1, 3, 16] {
            let block = build(500, interval);
            assert_eq!(block.num_restarts(), 500usize.div_ceil(interval));
            let mut it = block.iter();
            it.seek_to_first().unwrap();
            for i in 0..500 {
                assert!(it.valid());
                assert_eq!(it.key(), key(i));
                assert_eq!(it.value(), format!("v{i}").as_bytes());
                it.next().unwrap();
            }
            assert!(!it.valid());
            for i in 0..500u32 {
                // Exact hit.
                it.seek(&key(i)).unwrap();
                assert_eq!(it.key(), key(i));
                // Between key(i) and key(i + 1): odd numbers are absent.
                let between = encode(format!("key{:06}", i * 2 + 1).as_bytes(), 7, ValueKind::Put);
                it.seek(&between).unwrap();
                if i == 499 {
                    assert!(!it.valid());
                } else {
                    assert_eq!(it.key(), key(i + 1));
                }
            }
            it.seek(b"\0\0\0\0\0\0\0\0").unwrap();
            assert_eq!(it.key(), key(0));
        }
    }

    /// The bytes of docs/format.md#worked-example, byte for byte.
    #[test]
    fn worked_example_of_format_md_matches_the_bytes() {
        let mut b = BlockBuilder::new(16);
        b.add(&encode(b"apple", 5, ValueKind::Put), b"red");
        b.add(&encode(b"apply", 3, ValueKind::Delete), b"");
        let raw = b.finish();
        let expected: &[u8] = &[
            0x00, 0x0d, 0x03, b'a', b'p', b'p', b'l', b'e', 0x01, 0x05, 0, 0, 0, 0, 0, 0, b'r',
            b'e', b'd', 0x04, 0x09, 0x00, b'y', 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
            0,
        ];
        assert_eq!(raw, expected);
        let (framed, _) =
            crate::sst::format::frame_block(&raw, crate::sst::Compression::None).unwrap();
        assert_eq!(framed[39..], [0x00, 0x14, 0x5e, 0x09, 0xe9]);
    }

    #[test]
    fn empty_block_iterates_nothing() {
        let block = build(0, 16);
        let mut it = block.iter();
        it.seek_to_first().unwrap();
        assert!(!it.valid());
        it.seek(&key(3)).unwrap();
        assert!(!it.valid());
    }

    #[test]
    fn malformed_blocks_are_corruption_not_panics() {
        assert!(Block::new(vec![1, 0]).is_err());
        assert!(Block::new(vec![0, 0, 0, 0]).is_err()); // zero restarts
        assert!(Block::new(vec![9, 0, 0, 0]).is_err()); // 9 restarts in 4 bytes
        let good = build(40, 4).data().to_vec();
        let mut rng = crate::rng::SplitMix64::new(3);
        for _ in 0..3000 {
            let mut bytes = good.clone();
            let n = 1 + rng.below(4);
            for _ in 0..n {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] = rng.next_u64() as u8;
            }
            let Ok(block) = Block::new(bytes) else { continue };
            let block = Arc::new(block);
            let mut it = block.iter();
            let mut steps = 0;
            if it.seek_to_first().is_ok() {
                while it.valid() && it.next().is_ok() {
                    steps += 1;
                    assert!(steps <= block.size());
                }
            }
            let _ = it.seek(&key(17));
        }
    }
}
