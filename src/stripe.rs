//! Which copy of the striped read counters a thread writes, and how (design.md#concurrency).
//!
//! The read path's counters (src/db/read_counters.rs, the table cache's hits) live in
//! [`STRIPES`] cache-line-padded copies plus one more, [`SHARED`]. At its first lookup a thread
//! claims a copy of its own, the first free index from a round-robin start, and gives it back
//! when it exits. While it holds the claim it is the only writer of that index's counters in
//! every database, so [`add`] is a plain load and store: no `lock`-prefixed instruction, which
//! on x86 is a full barrier (three of them per lookup were 11% of a missing-key lookup's time
//! on a 1M-key database). Threads beyond [`STRIPES`] share [`SHARED`] and add atomically.
//!
//! Invariants:
//! 1. A stripe's counters are written only by the thread that got them for its own index
//!    (`StripedReadCounters::local`) and during that call: they are never handed to another
//!    thread. [`add`] checks the index anyway and adds atomically when it is not the caller's.
//! 2. Claims are made with `Acquire` and given back with `Release`, so a new owner's first
//!    load sees the previous owner's last store: no count is lost when owners change.
//! 3. Readers sum the copies with relaxed loads: a moment's approximation while lookups run,
//!    exact once they stop (as for any relaxed counter).

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Copies a thread can own. More than the cores of a typical machine, so reader threads rarely
/// go without.
pub(crate) const STRIPES: usize = 32;

/// The copy shared by threads that found no free one.
pub(crate) const SHARED: usize = STRIPES;

/// Copies in all: the owned ones and the shared one.
pub(crate) const COPIES: usize = STRIPES + 1;

/// The stripe of counters that belong to no striped set (a standalone `ReadCounters`): always
/// added to atomically.
pub(crate) const NONE: usize = usize::MAX;

/// `N` ownable indices and which are claimed (the process has one, `REGISTRY`).
#[cfg_attr(loom, allow(dead_code))] // the loom model (tests only) is its user there
struct Registry<const N: usize> {
    /// Whether each ownable index is claimed by a live thread.
    claimed: [AtomicBool; N],
    /// Where the next claim starts looking (spreads threads over the copies).
    next: AtomicUsize,
}

#[cfg_attr(loom, allow(dead_code))]
impl<const N: usize> Registry<N> {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Registry { claimed: [const { AtomicBool::new(false) }; N], next: AtomicUsize::new(0) }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Registry {
            claimed: std::array::from_fn(|_| AtomicBool::new(false)),
            next: AtomicUsize::new(0),
        }
    }

    /// A free index, now claimed (`Acquire`: invariant 2), or `N` when every one is taken.
    fn claim(&self) -> usize {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..N)
            .map(|k| (start + k) % N)
            .find(|&i| {
                let c = &self.claimed[i];
                c.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
            })
            .unwrap_or(N)
    }

    /// Gives back index `i` (from [`Registry::claim`]; `Release`: invariant 2).
    fn release(&self, i: usize) {
        if i < N {
            self.claimed[i].store(false, Ordering::Release);
        }
    }
}

#[cfg(not(loom))]
static REGISTRY: Registry<STRIPES> = Registry::new();

/// A thread's index, given back when the thread exits.
#[cfg(not(loom))]
struct Claim(usize);

#[cfg(not(loom))]
impl Drop for Claim {
    fn drop(&mut self) {
        REGISTRY.release(self.0);
    }
}

#[cfg(not(loom))]
thread_local! {
    static CLAIM: Claim = Claim(REGISTRY.claim());
}

/// The calling thread's copy: its own, or [`SHARED`] (also while the thread is exiting).
#[cfg(not(loom))]
#[inline]
pub(crate) fn index() -> usize {
    CLAIM.try_with(|c| c.0).unwrap_or(SHARED)
}

/// Under the model checker every thread shares (the model drives [`Registry`] itself).
#[cfg(loom)]
pub(crate) fn index() -> usize {
    SHARED
}

/// Adds `n` to `c`, a counter of copy `stripe`: a plain load and store when the calling thread
/// owns that copy (invariant 1), else an atomic add.
#[inline]
pub(crate) fn add(stripe: usize, c: &AtomicU64, n: u64) {
    add_as(index(), STRIPES, stripe, c, n);
}

/// [`add`] by the owner of index `me`, with `owned` ownable indices.
#[inline]
fn add_as<C: Counter>(me: usize, owned: usize, stripe: usize, c: &C, n: u64) {
    if stripe < owned && me == stripe {
        c.set(c.get().wrapping_add(n));
    } else {
        c.fetch_add(n);
    }
}

/// The counter operations [`add_as`] uses (std's atomics; loom's in the model).
trait Counter {
    fn get(&self) -> u64;
    fn set(&self, v: u64);
    fn fetch_add(&self, n: u64);
}

impl Counter for AtomicU64 {
    #[inline]
    fn get(&self) -> u64 {
        self.load(Ordering::Relaxed)
    }
    #[inline]
    fn set(&self, v: u64) {
        self.store(v, Ordering::Relaxed)
    }
    #[inline]
    fn fetch_add(&self, n: u64) {
        AtomicU64::fetch_add(self, n, Ordering::Relaxed);
    }
}

/// One counter spread over [`COPIES`] cache-line-padded copies, summed when read (for a
/// count bumped on the read path outside the per-level counters, e.g. table-cache hits).
pub(crate) struct StripedCounter {
    stripes: Box<[PaddedCounter]>,
}

/// A counter alone on its lines: two, as the adjacent-line prefetcher couples 64-byte lines in
/// pairs (also each thread's read-section counter, src/read_section.rs).
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct PaddedCounter(pub(crate) AtomicU64);

impl StripedCounter {
    pub fn new() -> StripedCounter {
        StripedCounter { stripes: (0..COPIES).map(|_| PaddedCounter::default()).collect() }
    }

    /// Adds `n` to the calling thread's copy.
    #[inline]
    pub fn add(&self, n: u64) {
        let i = index();
        add(i, &self.stripes[i].0, n);
    }

    /// The total over all copies.
    pub fn sum(&self) -> u64 {
        self.stripes.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn claims_are_distinct_until_all_are_taken_then_shared_and_a_release_frees_one() {
        let r = Registry::<STRIPES>::new();
        let mut got: Vec<usize> = (0..STRIPES).map(|_| r.claim()).collect();
        assert_eq!(r.claim(), SHARED, "every ownable index taken");
        got.sort_unstable();
        assert_eq!(got, (0..STRIPES).collect::<Vec<_>>());
        r.release(7);
        r.release(SHARED); // nothing to give back
        assert_eq!(r.claim(), 7);
        assert_eq!(r.claim(), SHARED);
    }

    #[test]
    fn a_thread_keeps_its_index() {
        let (a, b) = std::thread::spawn(|| (index(), index())).join().unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn threads_beyond_the_owned_copies_share_one_and_lose_no_count() {
        // Hold every ownable index with live threads, then add from more threads than that.
        let counters: Vec<AtomicU64> = (0..COPIES).map(|_| AtomicU64::new(0)).collect();
        let counters = std::sync::Arc::new(counters);
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2 * STRIPES));
        let threads: Vec<_> = (0..2 * STRIPES)
            .map(|_| {
                let (c, b) = (counters.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let i = index();
                    b.wait(); // all alive at once: at most STRIPES own an index
                    for _ in 0..10_000 {
                        add(i, &c[i], 1);
                    }
                    i
                })
            })
            .collect();
        let indices: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let owners = indices.iter().filter(|&&i| i < STRIPES).count();
        assert!(owners <= STRIPES);
        let mut owned: Vec<usize> = indices.iter().copied().filter(|&i| i < STRIPES).collect();
        owned.sort_unstable();
        owned.dedup();
        assert_eq!(owned.len(), owners, "no index owned by two live threads");
        let total: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, 2 * STRIPES as u64 * 10_000);
        assert!(indices.contains(&SHARED), "more threads than copies share one");
    }
}

/// Model checking of invariant 2 (`RUSTFLAGS="--cfg loom" cargo test --release --lib
/// stripe::loom_model`): an index passes from one thread to another, each adding to its counter
/// with plain loads and stores, and no count is lost in any interleaving or any value a Relaxed
/// load may return; without the Acquire/Release pair the model finds the lost count.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::atomic::AtomicU64 as LoomU64;
    use loom::sync::Arc;

    impl Counter for LoomU64 {
        fn get(&self) -> u64 {
            self.load(Ordering::Relaxed)
        }
        fn set(&self, v: u64) {
            self.store(v, Ordering::Relaxed)
        }
        fn fetch_add(&self, n: u64) {
            LoomU64::fetch_add(self, n, Ordering::Relaxed);
        }
    }

    /// Two threads take turns owning the one index of a registry: each claims it (yielding
    /// while the other holds it), adds twice, and gives it back; `release` is the registry's
    /// own or a Relaxed store (the broken variant).
    fn turns(release: fn(&Registry<1>, usize)) -> u64 {
        let r = Arc::new(Registry::<1>::new());
        let c = Arc::new(LoomU64::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (r, c) = (r.clone(), c.clone());
                loom::thread::spawn(move || {
                    let me = loop {
                        match r.claim() {
                            0 => break 0,
                            _ => loom::thread::yield_now(),
                        }
                    };
                    add_as(me, 1, 0, &*c, 1);
                    add_as(me, 1, 0, &*c, 1);
                    release(&r, me);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        c.load(Ordering::Relaxed)
    }

    #[test]
    fn an_index_passed_between_owners_loses_no_count() {
        loom::model(|| assert_eq!(turns(|r, i| r.release(i)), 4));
    }

    #[test]
    fn a_relaxed_release_loses_counts_and_the_model_finds_it() {
        let found = std::panic::catch_unwind(|| {
            loom::model(|| {
                let relaxed =
                    |r: &Registry<1>, i: usize| r.claimed[i].store(false, Ordering::Relaxed);
                assert_eq!(turns(relaxed), 4);
            })
        });
        assert!(found.is_err(), "loom must find the count a Relaxed release loses");
    }
}
