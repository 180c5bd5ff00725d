//! Per-thread buffers of the data-block read path.
//!
//! A block-cache miss used to cost three heap round trips: a fresh vector for the file bytes,
//! one for the decompressed contents, and (once the cache was full) the `free` of the evicted
//! block, whose allocator header is cold by then. Here:
//! * the framed file bytes go to one scratch buffer per thread, reused for every read;
//! * evicted blocks that nobody else holds give their contents buffer back to a small
//!   per-thread pool, and the next decompression writes into it.
//!
//! A pooled buffer is used only if its capacity is within 1/8 of the requested size, and the
//! cache charges a block's capacity (`Block::arc_heap_bytes`), so recycling never hides memory
//! from the cache's byte budget. Big buffers are never kept (see [`SCRATCH_MAX`]).

use crate::sst::block::Block;
use std::cell::RefCell;
use std::sync::Arc;

/// Largest buffer kept per thread (scratch or pooled); larger blocks (huge values) get their
/// own allocation, so a thread does not pin a big buffer.
pub(crate) const SCRATCH_MAX: usize = 256 << 10;

/// Buffers kept in the pool per thread.
const POOL_MAX: usize = 4;

thread_local! {
    /// Framed bytes of the last block this thread read; grows to the largest block read.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Contents buffers of evicted blocks, ready for reuse.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's scratch buffer resized to `len` bytes (`len <= SCRATCH_MAX`).
/// `f` must not call `with_scratch` itself (it would find the buffer borrowed and panic).
pub(crate) fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    debug_assert!(len <= SCRATCH_MAX);
    SCRATCH.with(|s| {
        let mut buf = s.borrow_mut();
        buf.resize(len, 0);
        f(&mut buf)
    })
}

/// A vector with capacity at least `len`: a pooled one when one fits within 1/8 (its length
/// and bytes are an evicted block's: callers set the length and overwrite what they keep),
/// else a new, empty one.
pub(crate) fn take_buffer(len: usize) -> Vec<u8> {
    let pooled = POOL.with(|p| {
        let mut p = p.borrow_mut();
        let at = p.iter().position(|b| b.capacity() >= len && b.capacity() - len <= len / 8)?;
        Some(p.remove(at)) // keeps the pool in arrival order (see `recycle`)
    });
    // A new buffer gets its capacity rounded up to a multiple of `ROUND`, so that once pooled
    // it serves every request in a band of sizes: data blocks end one entry past the block
    // size, so their lengths spread over a value's length (4096..4220 bytes with 100-byte
    // values), and an exact capacity would fit only requests no larger than its first block.
    pooled.unwrap_or_else(|| Vec::with_capacity(len.next_multiple_of(ROUND)))
}

/// Capacity granularity of new contents buffers (within the 1/8 reuse slack for any block of
/// 2 KiB or more).
const ROUND: usize = 256;

/// Drops `evicted` (emptying it), keeping the buffers of blocks nobody else holds for reuse.
pub(crate) fn recycle(evicted: &mut Vec<Arc<Block>>) {
    evicted.drain(..).for_each(recycle_one);
}

/// Drops `block`, keeping its buffer for reuse if nobody else holds the block.
pub(crate) fn recycle_one(block: Arc<Block>) {
    let Ok(block) = Arc::try_unwrap(block) else { return };
    let data = block.into_data();
    if data.capacity() <= SCRATCH_MAX {
        POOL.with(|p| {
            // Oldest out: a full pool must not keep buffers that fit no request (the odd
            // short block at a table's end), or it stops recycling altogether.
            let mut p = p.borrow_mut();
            if p.len() == POOL_MAX {
                p.remove(0);
            }
            p.push(data);
        });
    }
}

/// Lets go of a block a lookup read: its buffer goes to this thread's pool when nobody else
/// holds the block (one the cache did not take: under second-miss admission, most blocks read
/// from files), else only the reference is dropped. Freeing such a buffer (4 KiB and more, past
/// the allocator's per-thread caches) and allocating the next one cost a tenth of a batched
/// lookup's time; reused, the next decode writes into memory the CPU's caches still hold.
pub(crate) fn release(block: Arc<Block>) {
    // A block the cache holds has a second reference: dropped without the exchange of
    // `Arc::try_unwrap`. Nothing can gain a reference to a block held once (no weak ones).
    if Arc::strong_count(&block) == 1 {
        recycle_one(block);
    }
}

/// A data block held by one lookup, [`release`]d when the lookup lets go of it.
pub(crate) struct HeldBlock(Option<Arc<Block>>);

impl HeldBlock {
    pub(crate) fn new(block: Arc<Block>) -> HeldBlock {
        HeldBlock(Some(block))
    }

    /// The shared block (to pin a value in it).
    pub(crate) fn arc(&self) -> &Arc<Block> {
        self.0.as_ref().expect("held until dropped")
    }
}

impl std::ops::Deref for HeldBlock {
    type Target = Arc<Block>;
    fn deref(&self) -> &Arc<Block> {
        self.arc()
    }
}

impl Drop for HeldBlock {
    fn drop(&mut self) {
        if let Some(block) = self.0.take() {
            release(block);
        }
    }
}

/// Runs `f` with this thread's (empty) eviction list, then recycles what `f` left in it.
pub(crate) fn with_evicted(f: impl FnOnce(&mut Vec<Arc<Block>>)) {
    thread_local! {
        static EVICTED: RefCell<Vec<Arc<Block>>> = const { RefCell::new(Vec::new()) };
    }
    // Take the list out of the cell so `f` and `recycle` run without a borrow held.
    let mut list = EVICTED.with(|e| std::mem::take(&mut *e.borrow_mut()));
    f(&mut list);
    recycle(&mut list);
    EVICTED.with(|e| *e.borrow_mut() = list);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_of(len: usize) -> Arc<Block> {
        // The smallest valid block (one restart at 0) padded to `len` bytes of capacity.
        let mut data = Vec::with_capacity(len);
        data.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        Arc::new(Block::new(data).unwrap())
    }

    #[test]
    fn evicted_unshared_buffers_are_reused_within_an_eighth() {
        let mut evicted = vec![block_of(4096)];
        let held = block_of(4000);
        evicted.push(Arc::clone(&held)); // still held elsewhere: not recycled
        recycle(&mut evicted);
        assert!(evicted.is_empty());
        let b = take_buffer(4000);
        assert_eq!(b.capacity(), 4096, "the pooled 4096-byte buffer serves 4000");
        // Nothing left in the pool: a fresh allocation, rounded up to a multiple of 256.
        assert_eq!(take_buffer(4000).capacity(), 4096);
        // Too large a buffer for the request is not used.
        recycle(&mut vec![block_of(8192)]);
        assert_eq!(take_buffer(1000).capacity(), 1024);
        assert_eq!(held.size(), 8);
    }

    #[test]
    fn a_fresh_buffer_once_recycled_serves_a_slightly_larger_block() {
        POOL.with(|p| p.borrow_mut().clear());
        let fresh = take_buffer(4100);
        assert_eq!(fresh.capacity(), 4352);
        let mut data = fresh;
        data.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        recycle(&mut vec![Arc::new(Block::new(data).unwrap())]);
        // A block one entry longer than the first, as data blocks are.
        assert_eq!(take_buffer(4220).capacity(), 4352, "the pooled buffer serves 4220");
    }

    #[test]
    fn a_full_pool_of_buffers_too_small_for_every_request_makes_way_for_new_ones() {
        POOL.with(|p| p.borrow_mut().clear());
        // Short blocks (a table's last ones) fill the pool; none fits a 4 KiB block.
        for _ in 0..POOL_MAX {
            recycle(&mut vec![block_of(2048)]);
        }
        recycle(&mut vec![block_of(4352)]);
        // A fresh buffer for 4000 bytes would have capacity 4096.
        assert_eq!(take_buffer(4000).capacity(), 4352, "the newest buffer was kept");
    }

    #[test]
    fn a_held_block_gives_its_buffer_back_only_when_nobody_else_holds_it() {
        POOL.with(|p| p.borrow_mut().clear());
        // Held by the cache too (a second reference): only the lookup's reference goes.
        let cached = block_of(4352);
        drop(HeldBlock::new(Arc::clone(&cached)));
        assert_eq!(Arc::strong_count(&cached), 1);
        assert_eq!(take_buffer(4000).capacity(), 4096, "nothing pooled: a fresh buffer");
        // Held by the lookup alone (a block the cache did not take): its buffer is pooled.
        drop(HeldBlock::new(block_of(4352)));
        assert_eq!(take_buffer(4000).capacity(), 4352, "the released block's buffer");
        release(cached);
        assert_eq!(take_buffer(4000).capacity(), 4352, "released once the cache let go");
    }

    #[test]
    fn scratch_has_the_requested_length() {
        with_scratch(100, |b| assert_eq!(b.len(), 100));
        with_scratch(10, |b| assert_eq!(b.len(), 10));
    }
}
