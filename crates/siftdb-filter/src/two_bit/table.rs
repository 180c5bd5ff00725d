//! The word table of a [`super::TwoBitBloom`]: a boxed slice of `AtomicU32` or `AtomicU64`.
//!
//! # Thread safety
//! Every operation taking `&self` is safe from any number of threads at once and takes no lock:
//! a writer sets a key's bits with one `fetch_or`, a reader tests them with one `load`. All of
//! them use `Ordering::Relaxed`, which is enough because of these invariants:
//!
//! 1. Bits only ever go from 0 to 1 while the table is shared (`&self` offers no way to clear a
//!    bit; clearing needs `&mut self`, i.e. no concurrent user). A `fetch_or` is a single atomic
//!    read-modify-write, so two writers hitting the same word never lose each other's bits,
//!    whatever the ordering.
//! 2. The filter never publishes anything else through its words: no pointer, length or flag is
//!    derived from them, so no other memory needs to become visible together with a bit.
//! 3. A reader that must see a particular writer's key (a `get` after the `put` returned) already
//!    has a happens-before edge to that insert from the memtable's own synchronization: the
//!    writer inserts into the filter before publishing the entry in the skip list (a Release
//!    store), and the reader found the memtable or the entry through an Acquire load. Relaxed
//!    accesses ordered before the Release are visible after the Acquire. A reader with no such
//!    edge may miss a concurrent insert, which is the same answer it would get had it run a
//!    moment earlier: linearizable per word, and never a false negative for a completed insert.
//!
//! The `&mut self` operations use `get_mut` (plain, non-atomic accesses): exclusive access
//! already rules out any concurrent user.
//!
//! Under `--cfg loom` the words are loom's atomics, so tests/loom_two_bit.rs can explore every
//! interleaving and every value a Relaxed load may return (loom has no `get_mut`; its `with_mut`
//! stands in).

use super::config::Layout;
use super::{hit, BATCH};
use crate::envelope::Word;
use crate::prefetch::prefetch_read;
#[cfg(loom)]
use loom::sync::atomic::Ordering;
#[cfg(loom)]
pub(super) use loom::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(not(loom))]
use std::sync::atomic::Ordering;
#[cfg(not(loom))]
pub(super) use std::sync::atomic::{AtomicU32, AtomicU64};

/// An atomic word type of the table; masks and values travel as `u64` (upper half zero for
/// 32-bit words).
pub(super) trait AtomicWord: Send + Sync + Sized {
    /// The plain word type of the payload.
    type Plain: Word + Into<u64>;
    /// A zero word.
    fn zero() -> Self;
    /// One Relaxed atomic OR.
    fn or_relaxed(&self, mask: u64);
    /// One Relaxed atomic load.
    fn load_relaxed(&self) -> u64;
    /// Runs `f` on the plain value through exclusive access.
    fn with_plain_mut<R>(&mut self, f: impl FnOnce(&mut Self::Plain) -> R) -> R;
    /// `mask` narrowed to the word type (masks never have bits above the word width).
    fn narrow(mask: u64) -> Self::Plain;
}

macro_rules! impl_atomic_word {
    ($atomic:ty, $plain:ty) => {
        impl AtomicWord for $atomic {
            type Plain = $plain;
            #[inline(always)]
            fn zero() -> Self {
                <$atomic>::new(0)
            }
            #[inline(always)]
            fn or_relaxed(&self, mask: u64) {
                self.fetch_or(mask as $plain, Ordering::Relaxed);
            }
            #[inline(always)]
            fn load_relaxed(&self) -> u64 {
                self.load(Ordering::Relaxed) as u64
            }
            #[inline(always)]
            fn with_plain_mut<R>(&mut self, f: impl FnOnce(&mut $plain) -> R) -> R {
                #[cfg(not(loom))]
                return f(self.get_mut());
                #[cfg(loom)]
                return self.with_mut(f);
            }
            #[inline(always)]
            fn narrow(mask: u64) -> $plain {
                mask as $plain
            }
        }
    };
}
impl_atomic_word!(AtomicU32, u32);
impl_atomic_word!(AtomicU64, u64);

/// The words, in one of the two supported widths.
pub(super) enum Table {
    /// 32-bit words (Floe's choice).
    W32(Box<[AtomicU32]>),
    /// 64-bit words.
    W64(Box<[AtomicU64]>),
}

/// Runs `$body` with `$t` bound to the slice of whichever width `$table` holds.
macro_rules! dispatch {
    ($table:expr, $t:ident => $body:expr) => {
        match $table {
            Table::W32($t) => $body,
            Table::W64($t) => $body,
        }
    };
}

fn zeroed<A: AtomicWord>(n: usize) -> Box<[A]> {
    (0..n).map(|_| A::zero()).collect()
}

fn popcount_histogram<A: AtomicWord>(words: &[A]) -> [u64; 65] {
    let mut hist = [0u64; 65];
    for w in words {
        hist[w.load_relaxed().count_ones() as usize] += 1;
    }
    hist
}

impl Table {
    /// `count` zero words of `word_bits` (32 or 64) bits.
    pub(super) fn zeroed(word_bits: u32, count: usize) -> Table {
        if word_bits == 32 {
            Table::W32(zeroed(count))
        } else {
            Table::W64(zeroed(count))
        }
    }

    /// Number of words.
    pub(super) fn len(&self) -> usize {
        dispatch!(self, t => t.len())
    }

    /// Word `i`, by one Relaxed load. `i < len()`.
    #[inline(always)]
    pub(super) fn load(&self, i: usize) -> u64 {
        dispatch!(self, t => t[i].load_relaxed())
    }

    /// Sets the bits of `mask` in word `i` with one Relaxed `fetch_or`. `i < len()`.
    #[inline(always)]
    pub(super) fn or_atomic(&self, i: usize, mask: u64) {
        dispatch!(self, t => t[i].or_relaxed(mask))
    }

    /// Sets the bits of `mask` in word `i` through exclusive access (no atomic RMW).
    #[inline(always)]
    pub(super) fn or_mut(&mut self, i: usize, mask: u64) {
        match self {
            Table::W32(t) => t[i].with_plain_mut(|w| *w |= AtomicU32::narrow(mask)),
            Table::W64(t) => t[i].with_plain_mut(|w| *w |= AtomicU64::narrow(mask)),
        }
    }

    /// [`Table::or_atomic`] for every hash: each group of `BATCH` words is located and
    /// prefetched before the ORs, so their cache misses overlap.
    pub(super) fn insert_batch_atomic(&self, layout: &Layout, hashes: &[u64]) {
        dispatch!(self, t => batch(t, layout, hashes, |w, mask| w.or_relaxed(mask)))
    }

    /// [`Table::or_mut`] for every hash, grouped and prefetched like the atomic batch.
    pub(super) fn insert_batch_mut(&mut self, layout: &Layout, hashes: &[u64]) {
        match self {
            Table::W32(t) => batch_mut(t, layout, hashes),
            Table::W64(t) => batch_mut(t, layout, hashes),
        }
    }

    /// Appends one membership answer per hash to `out`, grouped and prefetched.
    pub(super) fn contains_batch(&self, layout: &Layout, hashes: &[u64], out: &mut Vec<bool>) {
        let start = out.len();
        out.resize(start + hashes.len(), false);
        let out = &mut out[start..];
        dispatch!(self, t => {
            for (hs, os) in hashes.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
                for &h in hs {
                    prefetch_read(&t[layout.index(h)]);
                }
                for (o, &h) in os.iter_mut().zip(hs) {
                    let (i, mask) = layout.locate(h);
                    *o = hit(t[i].load_relaxed(), mask);
                }
            }
        })
    }

    /// `self[i] op= other[i]` for every word. Returns `false` (and changes nothing) if the two
    /// tables differ in width or length.
    pub(super) fn combine(&mut self, other: &Table, and: bool) -> bool {
        match (self, other) {
            (Table::W32(a), Table::W32(b)) if a.len() == b.len() => combine_words(a, b, and),
            (Table::W64(a), Table::W64(b)) if a.len() == b.len() => combine_words(a, b, and),
            _ => return false,
        }
        true
    }

    /// How many words have each popcount `0..=64`.
    pub(super) fn popcount_histogram(&self) -> [u64; 65] {
        dispatch!(self, t => popcount_histogram(t))
    }

    /// Appends every word little-endian (a Relaxed snapshot of each word).
    pub(super) fn write_payload(&self, out: &mut Vec<u8>) {
        match self {
            Table::W32(t) => {
                out.reserve(t.len() * 4);
                for w in t.iter() {
                    (w.load_relaxed() as u32).write_le(out);
                }
            }
            Table::W64(t) => {
                out.reserve(t.len() * 8);
                for w in t.iter() {
                    w.load_relaxed().write_le(out);
                }
            }
        }
    }

    /// True if both tables have the same width and words.
    pub(super) fn same_words(&self, other: &Table) -> bool {
        match (self, other) {
            (Table::W32(a), Table::W32(b)) => equal_words(a, b),
            (Table::W64(a), Table::W64(b)) => equal_words(a, b),
            _ => false,
        }
    }

    /// A copy (a Relaxed snapshot of each word).
    pub(super) fn snapshot(&self) -> Table {
        match self {
            Table::W32(t) => {
                Table::W32(t.iter().map(|w| AtomicU32::new(w.load_relaxed() as u32)).collect())
            }
            Table::W64(t) => {
                Table::W64(t.iter().map(|w| AtomicU64::new(w.load_relaxed())).collect())
            }
        }
    }
}

fn combine_words<A: AtomicWord>(a: &mut [A], b: &[A], and: bool) {
    for (x, y) in a.iter_mut().zip(b) {
        let y = A::narrow(y.load_relaxed());
        x.with_plain_mut(|x| {
            *x = if and { narrow_and::<A>(*x, y) } else { narrow_or::<A>(*x, y) };
        });
    }
}

fn narrow_or<A: AtomicWord>(x: A::Plain, y: A::Plain) -> A::Plain {
    A::narrow(x.into() | y.into())
}

fn narrow_and<A: AtomicWord>(x: A::Plain, y: A::Plain) -> A::Plain {
    A::narrow(x.into() & y.into())
}

fn equal_words<A: AtomicWord>(a: &[A], b: &[A]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.load_relaxed() == y.load_relaxed())
}

/// Applies `op(word, mask)` to every hash's word. Hashes go in groups of `BATCH`: a first pass
/// computes only the word indexes and prefetches them, a second computes the masks and applies
/// `op`, by which time the words' cache misses have overlapped.
#[inline(always)]
fn batch<A: AtomicWord>(t: &[A], layout: &Layout, hashes: &[u64], mut op: impl FnMut(&A, u64)) {
    for chunk in hashes.chunks(BATCH) {
        for &h in chunk {
            prefetch_read(&t[layout.index(h)]);
        }
        for &h in chunk {
            let (i, mask) = layout.locate(h);
            op(&t[i], mask);
        }
    }
}

fn batch_mut<A: AtomicWord>(t: &mut [A], layout: &Layout, hashes: &[u64]) {
    for chunk in hashes.chunks(BATCH) {
        for &h in chunk {
            prefetch_read(&t[layout.index(h)]);
        }
        for &h in chunk {
            let (i, mask) = layout.locate(h);
            t[i].with_plain_mut(|w| *w = narrow_or::<A>(*w, A::narrow(mask)));
        }
    }
}
