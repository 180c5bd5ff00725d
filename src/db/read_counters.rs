//! Read-path counters that do not make cores share cache lines.
//!
//! Every `get` bumps `gets` and a handful of per-level filter/block counters. Kept as one set of
//! atomics, every lookup on every core would write the same cache lines, and two reader threads
//! would spend their time passing those lines back and forth (issue 12 measured 2 threads at
//! 1.17-1.6x one thread on 2 cores). Instead the counters live in [`STRIPES`] copies, each on
//! cache lines of its own; a thread always bumps the copy [`stripe_index`] gave it (round robin
//! over threads at their first lookup), and a read of the counters sums the copies.
//!
//! Invariants: a bump is still an atomic `fetch_add`, so two threads that share a stripe (more
//! threads than stripes) lose nothing; a sum read while lookups run is a moment's approximation,
//! as any relaxed counter is, and exact once they stop.

use crate::sst::{ReadCounters, ReadStats, ScanCounters};
use crate::version::NUM_LEVELS;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Copies of the counters. A power of two; more than the cores of a typical machine, so
/// threads of one process rarely share one.
pub(crate) const STRIPES: usize = 32;

/// One thread's copy. Aligned to 128 bytes: Intel's adjacent-line prefetcher pulls cache lines
/// in pairs, so 64-byte alignment could still couple two stripes.
#[repr(align(128))]
#[derive(Default)]
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
}

/// The striped counters of one database.
pub(crate) struct StripedReadCounters {
    stripes: Box<[Stripe]>,
}

/// Hands out stripe numbers to threads in order of their first lookup (any database).
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Relaxed) % STRIPES;
}

/// The stripe the calling thread bumps.
#[inline]
pub(crate) fn stripe_index() -> usize {
    STRIPE.with(|s| *s)
}

impl StripedReadCounters {
    pub fn new() -> StripedReadCounters {
        StripedReadCounters { stripes: (0..STRIPES).map(|_| Stripe::default()).collect() }
    }

    /// The calling thread's copy.
    #[inline]
    pub fn local(&self) -> &Stripe {
        &self.stripes[stripe_index()]
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

/// One counter spread over [`STRIPES`] cache-line-padded copies, summed when read (for a
/// count bumped on the read path outside the per-level counters, e.g. table-cache hits).
pub(crate) struct StripedCounter {
    stripes: Box<[PaddedCounter]>,
}

#[repr(align(128))]
#[derive(Default)]
struct PaddedCounter(AtomicU64);

impl StripedCounter {
    pub fn new() -> StripedCounter {
        StripedCounter { stripes: (0..STRIPES).map(|_| PaddedCounter::default()).collect() }
    }

    /// Adds `n` to the calling thread's copy.
    #[inline]
    pub fn add(&self, n: u64) {
        self.stripes[stripe_index()].0.fetch_add(n, Relaxed);
    }

    /// The total over all copies.
    pub fn sum(&self) -> u64 {
        self.stripes.iter().map(|s| s.0.load(Relaxed)).sum()
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
    fn sums_lose_no_bump_from_many_threads_sharing_stripes() {
        // 3 * STRIPES threads: every stripe is shared by several threads, so a lost update
        // from a non-atomic bump would show in the sum.
        let c = Arc::new(StripedReadCounters::new());
        let threads: Vec<_> = (0..3 * STRIPES)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        let s = c.local();
                        s.gets.fetch_add(1, Relaxed);
                        s.levels[2].filter_checks.fetch_add(2, Relaxed);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(c.gets(), 3 * STRIPES as u64 * 1000);
        assert_eq!(c.level(2).filter_checks, 3 * STRIPES as u64 * 2000);
        assert_eq!(c.level(1).filter_checks, 0);
        assert_eq!(c.gets_found(), 0);
    }

    #[test]
    fn a_thread_keeps_its_stripe() {
        let (a, b) = std::thread::spawn(|| (stripe_index(), stripe_index())).join().unwrap();
        assert_eq!(a, b);
        assert!(a < STRIPES);
    }
}
