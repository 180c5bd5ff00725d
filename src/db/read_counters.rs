//! Read-path counters that do not make cores share cache lines.
//!
//! Every `get` bumps `gets` and a handful of per-level filter/block counters. Kept as one set of
//! atomics, every lookup on every core would write the same cache lines, and two reader threads
//! would spend their time passing those lines back and forth (issue 12 measured 2 threads at
//! 1.17-1.6x one thread on 2 cores). Instead the counters live in `stripe::COPIES` copies, each
//! on cache lines of its own; a thread bumps the copy `stripe::index` gave it, which it owns
//! alone (so a bump is a plain load and store) unless more threads than copies run, and a read
//! of the counters sums the copies. The rules are in src/stripe.rs.

use crate::limits::NUM_LEVELS;
use crate::sst::{ReadCounters, ReadStats, ScanCounters};
use crate::stripe::{self, COPIES};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One thread's copy. Aligned to 128 bytes: Intel's adjacent-line prefetcher pulls cache lines
/// in pairs, so 64-byte alignment could still couple two stripes.
#[repr(align(128))]
pub(crate) struct Stripe {
    /// Point lookups served (`Db::get`, snapshots, `multi_get` keys).
    pub gets: AtomicU64,
    /// Point lookups that found a value.
    pub gets_found: AtomicU64,
    /// SST read counters per level.
    pub levels: [ReadCounters; NUM_LEVELS],
    /// Cursor positionings (seek, seek_for_prev, seek_to_first/last; RocksDB
    /// `rocksdb.number.db.seek`): each iterator or cursor positioning counts one.
    pub seeks: AtomicU64,
    /// Data blocks read by iterators and cursors, per level (cache hits, misses, file reads);
    /// the filter fields stay zero.
    pub scan_levels: [ReadCounters; NUM_LEVELS],
    /// This copy's index (`crate::stripe`).
    index: usize,
}

impl Stripe {
    fn new(index: usize) -> Stripe {
        Stripe {
            gets: AtomicU64::new(0),
            gets_found: AtomicU64::new(0),
            levels: std::array::from_fn(|_| ReadCounters::in_stripe(index)),
            seeks: AtomicU64::new(0),
            scan_levels: std::array::from_fn(|_| ReadCounters::in_stripe(index)),
            index,
        }
    }

    /// Adds `n` to `c`, one of this copy's own counters (`gets`, `gets_found`, `seeks`).
    #[inline]
    pub fn add(&self, c: &AtomicU64, n: u64) {
        stripe::add(self.index, c, n);
    }
}

/// The striped counters of one database.
pub(crate) struct StripedReadCounters {
    stripes: Box<[Stripe]>,
}

impl StripedReadCounters {
    pub fn new() -> StripedReadCounters {
        StripedReadCounters { stripes: (0..COPIES).map(Stripe::new).collect() }
    }

    /// The calling thread's copy.
    #[inline]
    pub fn local(&self) -> &Stripe {
        &self.stripes[stripe::index()]
    }

    /// `gets` summed over the stripes.
    pub fn gets(&self) -> u64 {
        self.stripes.iter().map(|s| s.gets.load(Relaxed)).sum()
    }

    /// `gets_found` summed over the stripes.
    pub fn gets_found(&self) -> u64 {
        self.stripes.iter().map(|s| s.gets_found.load(Relaxed)).sum()
    }

    /// `seeks` summed over the stripes.
    pub fn seeks(&self) -> u64 {
        self.stripes.iter().map(|s| s.seeks.load(Relaxed)).sum()
    }

    /// Level `level`'s scan counters summed over the stripes.
    pub fn scan_level(&self, level: usize) -> ReadStats {
        self.stripes
            .iter()
            .fold(ReadStats::default(), |acc, s| acc.plus(&s.scan_levels[level].snapshot()))
    }

    /// Level `level`'s SST counters summed over the stripes.
    pub fn level(&self, level: usize) -> ReadStats {
        self.stripes
            .iter()
            .fold(ReadStats::default(), |acc, s| acc.plus(&s.levels[level].snapshot()))
    }
}

/// Table cursors count into the scan counters of the stripe of the thread that reads the block.
impl ScanCounters for StripedReadCounters {
    fn counters(&self, level: usize) -> &ReadCounters {
        &self.local().scan_levels[level]
    }
}

impl std::fmt::Debug for StripedReadCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripedReadCounters").field("gets", &self.gets()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_stripe_is_on_cache_lines_of_its_own() {
        assert_eq!(std::mem::align_of::<Stripe>(), 128);
        assert_eq!(std::mem::size_of::<Stripe>() % 128, 0);
    }

    #[test]
    fn sums_lose_no_bump_from_owners_and_threads_sharing_a_copy() {
        // 3 * STRIPES threads alive at once: some own a copy (plain adds), the rest share the
        // last one (atomic adds); a lost update on either path would show in the sums.
        let threads = 3 * crate::stripe::STRIPES;
        let c = Arc::new(StripedReadCounters::new());
        let barrier = Arc::new(std::sync::Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (c, b) = (c.clone(), barrier.clone());
                std::thread::spawn(move || {
                    b.wait();
                    for _ in 0..1000 {
                        let s = c.local();
                        s.add(&s.gets, 1);
                        s.levels[2].add(&s.levels[2].filter_checks, 2);
                        s.scan_levels[3].bump(&s.scan_levels[3].data_blocks_read);
                    }
                })
            })
            .collect();
        for t in handles {
            t.join().unwrap();
        }
        assert_eq!(c.gets(), threads as u64 * 1000);
        assert_eq!(c.level(2).filter_checks, threads as u64 * 2000);
        assert_eq!(c.scan_level(3).data_blocks_read, threads as u64 * 1000);
        assert_eq!(c.level(1).filter_checks, 0);
        assert_eq!(c.gets_found(), 0);
    }
}
