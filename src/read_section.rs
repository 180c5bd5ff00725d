//! Read sections: a point lookup reads the current super-version and its open tables through
//! plain pointers, with no locked instruction, and whatever it may be reading is freed only
//! after it leaves (design.md#concurrency).
//!
//! Why: arc-swap's `load` protects a pointer with an `xchg` on the thread's debt slot and its
//! guard's drop with a `lock cmpxchg`; a lookup takes two guards (the super-version and the
//! table), four full barriers. At 100M keys they were 10% of a missing-key lookup on two threads
//! and reading both through plain pointers made it 6% faster (a build that never freed them,
//! docs/results/2026-11-30-read-sections/).
//!
//! How: each thread that owns a stripe index ([`crate::stripe`]) has one counter per database,
//! odd while it is inside a section. Entering is a plain store of the next (odd) value and a
//! compiler fence; leaving stores the next (even) value. Whoever unlinks an object a section may
//! read (a new super-version published, a table evicted) first makes the new state visible,
//! then [`ReadSections::retire`]s the old object: a `membarrier(2)` forces a full barrier on
//! every running thread of the process, after which each thread either has its odd counter
//! visible or will see the new state in its next loads (the asymmetric Dekker pattern). The
//! object is dropped once every counter that was odd has moved on.
//!
//! Invariants:
//! 1. A pointer read through a [`Published`] inside a section is used only while the section
//!    lasts (the borrow ties it to the [`Section`]).
//! 2. The value a [`Published`] points to is owned by an `Arc` that stays alive until it has been
//!    replaced or cleared there AND then passed to [`ReadSections::retire`] of the same
//!    `ReadSections` the readers enter.
//! 3. Without `membarrier` (another OS, an old kernel, a sandbox refusing it), or for a thread
//!    without a stripe of its own, or inside a section already open on the same thread (a merge
//!    operator reading the database), [`ReadSections::enter`] returns `None` and the caller takes
//!    the arc-swap path; retired objects are then dropped at once, since no section can hold them.
//!    `SIFTDB_NO_MEMBARRIER` in the environment forces that path (to measure one against the
//!    other).

use crate::stripe::{self, PaddedCounter};
use parking_lot::Mutex;
use std::marker::PhantomData;
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, OnceLock};

/// An unlinked object and the sections that may still read it: (stripe index, odd counter).
struct Retired {
    _object: Box<dyn Send>,
    waiting_on: Vec<(usize, u64)>,
}

/// The read sections of one database (module documentation).
pub(crate) struct ReadSections {
    /// Per stripe index: that thread's section counter, odd inside a section.
    counters: Box<[PaddedCounter]>,
    retired: Mutex<Vec<Retired>>,
    /// Whether `retired` is non-empty: read by every section's exit, written rarely.
    pending: AtomicBool,
    /// `membarrier` works in this process (invariant 3).
    enabled: bool,
}

impl ReadSections {
    pub fn new() -> ReadSections {
        ReadSections {
            counters: (0..stripe::STRIPES).map(|_| PaddedCounter::default()).collect(),
            retired: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            enabled: membarrier::available(),
        }
    }

    /// Opens a section on the calling thread, or `None` when it must take the locked path
    /// (invariant 3).
    #[inline]
    pub fn enter(&self) -> Option<Section<'_>> {
        if !self.enabled {
            return None;
        }
        let index = stripe::index();
        let counter = &self.counters.get(index)?.0;
        // Only this thread writes its counter (it owns the index): a plain load and store.
        let v = counter.load(Ordering::Relaxed);
        if v & 1 == 1 {
            return None; // nested in a section of this thread
        }
        counter.store(v + 1, Ordering::Relaxed);
        // The store must not be reordered after the loads the section makes by the compiler;
        // the CPU's reordering is undone by the retirer's membarrier.
        compiler_fence(Ordering::SeqCst);
        Some(Section { sections: self, index, _not_send: PhantomData })
    }

    /// Drops `object` once no section that might read it is open. Call it after the state that
    /// no longer reaches `object` is visible (invariant 2).
    pub fn retire<T: Send + 'static>(&self, object: T) {
        if !self.enabled {
            return; // no section can be reading it (invariant 3)
        }
        fence(Ordering::SeqCst);
        if !membarrier::everywhere() {
            // No barrier, no way to know which sections may hold it: leaking it is the only
            // safe choice (after `available()` said yes the kernel does not refuse it, short
            // of a sandbox changing its mind).
            std::mem::forget(object);
            return;
        }
        fence(Ordering::SeqCst);
        let waiting_on: Vec<(usize, u64)> = self
            .counters
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.0.load(Ordering::Acquire)))
            .filter(|&(_, v)| v & 1 == 1)
            .collect();
        if waiting_on.is_empty() {
            drop(object);
            return;
        }
        // Waiting only on the calling thread's own section (a table evicted by a lookup's
        // miss): its exit comes after the store of `pending` below on the same thread, sees it
        // and reclaims; no second barrier is needed.
        let me = stripe::index();
        let only_mine = waiting_on.iter().all(|&(i, _)| i == me);
        self.retired.lock().push(Retired { _object: Box::new(object), waiting_on });
        self.pending.store(true, Ordering::SeqCst);
        // A reader leaving now may have read `pending` as false before the store above while
        // its counter's new value still sat in its store buffer (we read it odd): neither side
        // would reclaim. A second barrier everywhere settles it: the reader either shows its
        // new counter to the loads below or reads `pending` as true and reclaims itself.
        if !only_mine && membarrier::everywhere() {
            fence(Ordering::SeqCst);
            self.reclaim();
        }
    }

    /// Drops the retired objects no open section can still read: run by retirers, by readers
    /// leaving while something is retired, and before obsolete files are purged (a retired
    /// super-version still names the files its version held).
    pub fn reclaim(&self) {
        let ready: Vec<Retired> = {
            // Blocking: a reader that gave up here could be the last one that could free it.
            let mut retired = self.retired.lock();
            let (ready, waiting): (Vec<_>, Vec<_>) = retired.drain(..).partition(|r| {
                r.waiting_on.iter().all(|&(i, v)| self.counters[i].0.load(Ordering::Acquire) != v)
            });
            *retired = waiting;
            self.pending.store(!retired.is_empty(), Ordering::Release);
            ready
        };
        drop(ready); // outside the lock: a super-version's drop can be long
    }

    /// Drops every retired object. Only when no section can be open (the database is being
    /// dropped): a retired super-version holds the table cache that holds these sections.
    pub fn drain(&self) {
        let all = std::mem::take(&mut *self.retired.lock());
        self.pending.store(false, Ordering::Release);
        drop(all);
    }

    #[cfg(test)]
    fn retired_count(&self) -> usize {
        self.retired.lock().len()
    }
}

/// An open read section (module documentation); not `Send`: it is the calling thread's.
pub(crate) struct Section<'a> {
    sections: &'a ReadSections,
    index: usize,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Section<'_> {
    #[inline]
    fn drop(&mut self) {
        let counter = &self.sections.counters[self.index].0;
        // Release: the section's loads are done before a retirer sees the counter move.
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Release);
        // The load of `pending` must not move above the store (the compiler may move it; the
        // CPU's move is undone by the retirer's second barrier: `retire`).
        compiler_fence(Ordering::SeqCst);
        // Rarely true, and then only until the objects waiting are freed: the lock and the
        // counters' loads are paid by readers only while a retire is pending.
        if self.sections.pending.load(Ordering::Relaxed) {
            self.sections.reclaim();
        }
    }
}

/// The value of an `Arc` held elsewhere, readable inside a section without touching the count
/// (invariant 2 says who keeps it alive).
#[derive(Debug)]
pub(crate) struct Published<T> {
    ptr: AtomicPtr<T>,
}

impl<T> Default for Published<T> {
    fn default() -> Self {
        Published { ptr: AtomicPtr::new(std::ptr::null_mut()) }
    }
}

impl<T> Published<T> {
    /// Points readers at `arc`'s value.
    pub fn set(&self, arc: &Arc<T>) {
        self.ptr.store(Arc::as_ptr(arc).cast_mut(), Ordering::Release);
    }

    /// Points readers at nothing.
    pub fn clear(&self) {
        self.ptr.store(std::ptr::null_mut(), Ordering::Release);
    }

    /// The value, for as long as `section` is open.
    #[inline]
    pub fn get<'s>(&self, _section: &'s Section<'_>) -> Option<&'s T> {
        let p = self.ptr.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was set from a live `Arc` that is retired only after the
        // pointer stops naming it (invariant 2); this section was open before that retire's
        // membarrier or sees the new pointer, so the retire waits for it to close, and the
        // borrow cannot outlive it (invariant 1).
        unsafe { p.as_ref() }
    }
}

mod membarrier {
    //! `membarrier(2)`'s private expedited command: a full memory barrier on every running
    //! thread of the process (Linux 4.14 and later, after the process registers).

    use super::OnceLock;

    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    mod sys {
        const QUERY: libc::c_int = 0;
        const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
        const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

        fn call(cmd: libc::c_int) -> libc::c_long {
            // SAFETY: membarrier takes three integers and touches no memory of ours.
            unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_uint, 0 as libc::c_int) }
        }

        pub fn register() -> bool {
            let supported = call(QUERY);
            supported >= 0
                && supported & libc::c_long::from(PRIVATE_EXPEDITED) != 0
                && call(REGISTER_PRIVATE_EXPEDITED) == 0
        }

        pub fn everywhere() -> bool {
            // It fails only unregistered (EPERM), as in a child of `fork`, whose memory map
            // starts unregistered: register again and retry once.
            call(PRIVATE_EXPEDITED) == 0
                || (call(REGISTER_PRIVATE_EXPEDITED) == 0 && call(PRIVATE_EXPEDITED) == 0)
        }
    }

    #[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
    mod sys {
        pub fn register() -> bool {
            false
        }
        pub fn everywhere() -> bool {
            false
        }
    }

    static REGISTERED: OnceLock<bool> = OnceLock::new();

    /// Whether [`everywhere`] works (registering the process on the first call).
    pub fn available() -> bool {
        *REGISTERED
            .get_or_init(|| std::env::var_os("SIFTDB_NO_MEMBARRIER").is_none() && sys::register())
    }

    /// A full barrier on every running thread of the process (only after `available()`);
    /// false if the kernel refused it.
    pub fn everywhere() -> bool {
        sys::everywhere()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, AtomicUsize};
    use std::sync::Barrier;

    /// Counts its drops, and marks itself dead so a reader that sees it after its drop fails.
    struct Canary {
        alive: AtomicU64,
        /// Unique per canary: a reader that sees it change saw its memory reused.
        id: AtomicU64,
        drops: Arc<AtomicUsize>,
    }

    const ALIVE: u64 = 0x5eed_a11e;

    impl Drop for Canary {
        fn drop(&mut self) {
            self.alive.store(0, Ordering::Relaxed);
            self.id.store(u64::MAX, Ordering::Relaxed);
            self.drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn canary(drops: &Arc<AtomicUsize>) -> Arc<Canary> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = AtomicU64::new(NEXT.fetch_add(1, Ordering::Relaxed));
        Arc::new(Canary { alive: AtomicU64::new(ALIVE), id, drops: drops.clone() })
    }

    #[test]
    fn a_retired_object_outlives_the_sections_open_at_its_retirement_and_no_longer() {
        let sections = Arc::new(ReadSections::new());
        let drops = Arc::new(AtomicUsize::new(0));
        if !sections.enabled {
            // Invariant 3: no section opens, and a retired object goes at once.
            assert!(sections.enter().is_none());
            sections.retire(canary(&drops));
            assert_eq!(drops.load(Ordering::Relaxed), 1);
            return;
        }
        // The reader reports what it got instead of asserting, so a failure cannot leave the
        // other thread waiting at a barrier.
        let (tx, rx) = std::sync::mpsc::channel();
        let retired = Arc::new(Barrier::new(2));
        let reader = {
            let (sections, retired) = (sections.clone(), retired.clone());
            std::thread::spawn(move || {
                let s = sections.enter();
                let nested = sections.enter();
                tx.send((s.is_some(), nested.is_none())).unwrap();
                drop(nested);
                retired.wait();
                drop(s);
            })
        };
        let (got, nested_refused) = rx.recv().unwrap();
        sections.retire(canary(&drops));
        let while_open = (drops.load(Ordering::Relaxed), sections.retired_count());
        retired.wait();
        reader.join().unwrap();
        if !got {
            // Every stripe taken by other threads of the test process: no section, so the
            // object went at once.
            assert_eq!(while_open, (1, 0));
            return;
        }
        assert!(nested_refused, "nested sections take the locked path");
        assert_eq!(while_open, (0, 1), "dropped under an open section");
        // The reader's exit reclaimed it.
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        assert_eq!(sections.retired_count(), 0);
        // No section open: the next one goes at once.
        sections.retire(canary(&drops));
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn readers_never_see_a_published_value_dropped_while_a_writer_replaces_it() {
        let sections = Arc::new(ReadSections::new());
        let drops = Arc::new(AtomicUsize::new(0));
        let published = Arc::new(Published::<Canary>::default());
        let mut current = canary(&drops);
        published.set(&current);
        let (stop, reads) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let no_stripe = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (sections, published) = (sections.clone(), published.clone());
                let (stop, reads, no_stripe) = (stop.clone(), reads.clone(), no_stripe.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let Some(s) = sections.enter() else {
                            no_stripe.store(true, Ordering::Relaxed);
                            return;
                        };
                        let c = published.get(&s).expect("always published");
                        // Hold it a while, so writers retire (and the allocator reuses) it
                        // under the section if the section does not protect it.
                        let id = c.id.load(Ordering::Relaxed);
                        for _ in 0..256 {
                            assert_eq!(c.alive.load(Ordering::Relaxed), ALIVE, "read after drop");
                            assert_eq!(c.id.load(Ordering::Relaxed), id, "memory reused");
                        }
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // Replace until both the replacements and the reads inside sections are many.
        let mut replacements = 0;
        let reading = |readers: &[std::thread::JoinHandle<()>]| {
            sections.enabled
                && reads.load(Ordering::Relaxed) < 20_000
                && !readers.iter().any(|r| r.is_finished()) // a failed reader ends the test
        };
        while replacements < 2_000 || reading(&readers) {
            let next = canary(&drops);
            published.set(&next);
            let old = std::mem::replace(&mut current, next);
            sections.retire(old);
            replacements += 1;
        }
        stop.store(true, Ordering::Relaxed);
        readers.into_iter().for_each(|r| r.join().unwrap());
        sections.drain();
        assert_eq!(drops.load(Ordering::Relaxed), replacements, "every retired value dropped once");
        if sections.enabled && !no_stripe.load(Ordering::Relaxed) {
            assert!(reads.load(Ordering::Relaxed) > 0, "the readers ran inside sections");
        }
        drop(current);
    }
}
