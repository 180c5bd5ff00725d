//! [`Doorkeeper`]: which data blocks read from files enter a block cache that is full
//! ([`crate::options::CacheAdmission::SecondMiss`], design.md#block-cache).
//!
//! Once the cache is full every insert evicts. Under reads spread over many more blocks than the
//! cache holds, almost no inserted block is read again before it is evicted, and each insert
//! costs the lookup the shard's lock and list work, the eviction, and a cold buffer: the evicted
//! block's buffer is reused for the next decode, which then writes into memory no cache level
//! holds. So a block goes into a full cache only on its second miss within a window of recent
//! misses: the doorkeeper of TinyLFU (Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient
//! Cache Admission Policy", ACM TOS 2017). A block read twice in a short span (a hot key, the
//! head of a skewed distribution, a range scanned again) is admitted at its second miss; a
//! block read once is decoded into a warm buffer and dropped. While the cache is not yet full
//! every block is admitted, so a cache larger than the data fills on first reads as before.
//!
//! The window is a direct-mapped table of 32-bit fingerprints of block keys, two slots per
//! 4 KiB of cache capacity (at least 1,024): a miss whose slot holds its own fingerprint clears
//! it and is admitted; any other miss stores its fingerprint there. A stored fingerprint lasts
//! until another miss lands on its slot, about as many misses as there are slots, so a block
//! missed again within about twice the blocks the cache holds is admitted. A block whose
//! fingerprint collides with a stored one (2^-32 per slot) is admitted one miss early: the
//! rule only chooses what to cache, never what a read returns.
//!
//! Slots are relaxed atomics without a lock: two threads missing the same block at once may
//! both store, or both admit (the cache then replaces one copy with the other); either way one
//! block is admitted one miss early or late.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

/// Slots per byte of cache capacity: two per 4 KiB block.
const BYTES_PER_SLOT: usize = 2048;
/// Fewest slots (a small cache still remembers a thousand misses).
const MIN_SLOTS: usize = 1024;
/// Most slots (64 MiB of table for caches of 32 GiB and more).
const MAX_SLOTS: usize = 1 << 24;

/// See the module documentation.
pub(crate) struct Doorkeeper {
    slots: Box<[AtomicU32]>,
    /// Set once the cache has evicted a block: admission applies from then on (a cache that
    /// has filled once stays full but for deleted files' blocks, which age out).
    full: AtomicBool,
}

impl Doorkeeper {
    /// A doorkeeper for a cache of `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Doorkeeper {
        let n = (capacity / BYTES_PER_SLOT).clamp(MIN_SLOTS, MAX_SLOTS).next_power_of_two();
        Doorkeeper {
            slots: (0..n).map(|_| AtomicU32::new(0)).collect(),
            full: AtomicBool::new(false),
        }
    }

    /// Records that the cache evicted a block (it is full).
    pub(crate) fn note_eviction(&self) {
        if !self.full.load(Relaxed) {
            self.full.store(true, Relaxed);
        }
    }

    /// Whether the block `(file, offset)`, just read from its file, goes into the cache.
    pub(crate) fn admits(&self, file: u64, offset: u64) -> bool {
        if !self.full.load(Relaxed) {
            return true;
        }
        // The key combined as the cache's shard choice combines it (file numbers and offsets
        // below 2^32 do not overlap), then MurmurHash3's full fmix64: the slot and fingerprint
        // bits do not follow the shard's.
        let mut x = file.rotate_left(32) ^ offset;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        let slot = &self.slots[(x as usize) & (self.slots.len() - 1)];
        // Never 0, the empty slot.
        let fingerprint = ((x >> 32) as u32) | 1;
        if slot.load(Relaxed) == fingerprint {
            slot.store(0, Relaxed);
            true
        } else {
            slot.store(fingerprint, Relaxed);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_is_admitted_until_the_first_eviction() {
        let d = Doorkeeper::new(1 << 20);
        assert!((0..10_000).all(|i| d.admits(7, i * 4096)));
        d.note_eviction();
        assert!(!d.admits(7, 1 << 40), "a first miss once full is not admitted");
    }

    #[test]
    fn a_second_miss_within_the_window_is_admitted_and_a_single_one_is_not() {
        let d = Doorkeeper::new(8 << 20); // 4,096 slots
        assert_eq!(d.slots.len(), 4096);
        d.note_eviction();
        // 1,000 blocks missed once, then again: each second miss finds its own fingerprint
        // unless a later first miss took its slot. With 1,000 keys in 4,096 slots, the
        // expected number of blocks whose slot another of them took is about
        // sum over keys of 1 - (1 - 1/4096)^999 ~= 1000 * 0.216 ~= 216 (binomial-ish, sd ~ 13):
        // bound it at 300 (over 6 sd) and admit at least 700.
        let first: Vec<bool> = (0..1000).map(|i| d.admits(3, i * 4096)).collect();
        assert!(first.iter().all(|&a| !a));
        let second = (0..1000).filter(|&i| d.admits(3, i * 4096)).count();
        assert!(second >= 700, "only {second} of 1,000 second misses admitted");
        // A block admitted had its slot cleared: its third miss starts over.
        let third = (0..1000).filter(|&i| d.admits(3, i * 4096)).count();
        assert!(third <= 1000 - second + 50, "{third} third misses admitted after {second}");
    }

    #[test]
    fn blocks_missed_once_each_are_almost_never_admitted() {
        let d = Doorkeeper::new(8 << 20);
        d.note_eviction();
        // 100,000 distinct blocks: a false admission needs a stored fingerprint equal to a new
        // block's (2^-31 per miss, the low bit being forced): expected 5e-5.
        let admitted = (0..100_000u64).filter(|&i| d.admits(i / 997, (i % 997) * 4096)).count();
        assert_eq!(admitted, 0);
    }

    #[test]
    fn the_table_scales_with_the_capacity_within_its_bounds() {
        assert_eq!(Doorkeeper::new(0).slots.len(), MIN_SLOTS);
        assert_eq!(Doorkeeper::new(32 << 20).slots.len(), 16 * 1024);
        assert_eq!(Doorkeeper::new(1 << 40).slots.len(), MAX_SLOTS);
        // The table's bytes, as `Options::block_cache_admission` states them: capacity / 512.
        let d = Doorkeeper::new(32 << 20);
        assert_eq!(d.slots.len() * std::mem::size_of::<AtomicU32>(), (32 << 20) / 512);
    }
}
