//! The construction shared by the xor and binary fuse layouts: hypergraph peeling, then
//! assignment of the fingerprints in reverse peeling order (module documentation of
//! [`super`] for the theory). Generic over the arity `N` (slots per key, 3 or 4): every loop
//! over a key's slots runs over a `[usize; N]`, so each arity compiles to its own unrolled code.

use super::{attempt_seed, partition_by_top_bits, sorted_distinct, Fingerprint};
use super::{MAX_ATTEMPTS, MAX_KEYS};
use crate::envelope::{LeWords, Words};
use crate::error::{FilterError, Result};
use crate::hash::mix64;
use crate::prefetch::prefetch_read;
use crate::FilterKind;
use std::borrow::Cow;

/// Where a layout puts a key's `N` slots.
///
/// Invariant every implementation keeps: for every `h`, the `N` positions are distinct and less
/// than [`Layout::slots`]. The probe relies on the bound (no index out of range, even for a
/// layout read from untrusted bytes: the parsers validate the parameters that imply it), the
/// construction on the distinctness.
pub(super) trait Layout<const N: usize> {
    /// Number of fingerprint slots.
    fn slots(&self) -> usize;
    /// The `N` slots of a seed-mixed key hash.
    fn positions(&self, h: u64) -> [usize; N];
    /// Whether peeling pushes with a branch rather than branch-free. Branch-free wins when a
    /// key's slots are near each other (binary fuse: the slots stay in cache, so mispredictions
    /// dominate); with slots spread over the whole array (xor) the loads miss the cache and a
    /// predicted branch lets the CPU overlap those misses, where the data-dependent stack top
    /// of the branch-free push serialises them.
    const BRANCHY_PUSH: bool = false;
}

/// How a filter type sizes and lays out its array, for [`construct`].
pub(super) trait Sizing<const N: usize>: Layout<N> + Copy {
    /// The layout for `n` distinct keys (`n >= 1`).
    fn for_keys(n: usize) -> Self;
    /// The layout attempt number `attempt` uses (same size as `self`, the base layout).
    fn for_attempt(self, _attempt: u32) -> Self {
        self
    }
    /// Top bits by which the mixed keys are ordered before peeling (0: none), so the counting
    /// pass walks the array front to back when the first slot grows with the hash.
    fn locality_bits(self) -> u32 {
        0
    }
}

/// A successful construction: the seed of the successful attempt, the distinct key count, the
/// layout and the peeling order.
pub(super) struct Built<L> {
    pub seed: u64,
    pub keys: usize,
    pub layout: L,
    /// The mixed key hashes in peeling order.
    pub order: Vec<u64>,
    /// For each key of `order`, the index (0..N) of the position it was peeled from.
    pub which: Vec<u8>,
}

/// Runs the attempts of a build over non-empty `hashes`.
///
/// Deduplication is optimistic: the first attempt runs on the input as given. Two equal hashes
/// share all their slots, so neither can ever be peeled: a successful peel proves the input
/// distinct. After a failure the input is sorted and deduplicated once; if that removed anything
/// the attempt counter restarts on the distinct set, so a set builds the same filter whether or
/// not its input repeated keys.
pub(super) fn construct<const N: usize, L: Sizing<N>>(
    hashes: &[u64],
    seed: u64,
    kind: FilterKind,
) -> Result<Built<L>> {
    let mut keys: Cow<[u64]> = Cow::Borrowed(hashes);
    let mut checked_distinct = false;
    if keys.len() > MAX_KEYS {
        keys = Cow::Owned(sorted_distinct(hashes));
        checked_distinct = true;
        if keys.len() > MAX_KEYS {
            return Err(FilterError::invalid(format!(
                "{} keys exceed the {kind} maximum",
                keys.len()
            )));
        }
    }
    let mut base = L::for_keys(keys.len());
    let mut mixed = Vec::new();
    let mut which = Vec::with_capacity(keys.len());
    let mut attempt = 0;
    while attempt < MAX_ATTEMPTS {
        let layout = base.for_attempt(attempt);
        let s = attempt_seed(seed, attempt);
        partition_by_top_bits(&keys, layout.locality_bits(), |h| mix64(h, s), &mut mixed);
        if peel(&layout, &mut mixed, &mut which) {
            return Ok(Built { seed: s, keys: keys.len(), layout, order: mixed, which });
        }
        attempt += 1;
        if !checked_distinct {
            checked_distinct = true;
            let distinct = sorted_distinct(&keys);
            if distinct.len() < keys.len() {
                base = L::for_keys(distinct.len());
                keys = Cow::Owned(distinct);
                attempt = 0;
            }
        }
    }
    Err(FilterError::Full(format!(
        "{kind} construction failed for {} keys after {MAX_ATTEMPTS} seeds",
        keys.len()
    )))
}

/// `WRAP[i] = i mod N` for `i < 8`: the position index `(j + t) mod N` of a peeled key's other
/// slots (`j < N`, `0 < t < N`, so `j + t <= 6`), from a table instead of a division or a branch
/// the predictor cannot learn.
struct Wrap<const N: usize>;

impl<const N: usize> Wrap<N> {
    const TABLE: [u8; 8] = {
        assert!(N >= 2 && N <= 4, "a slot's state byte holds index xors of 2 bits");
        let mut t = [0u8; 8];
        let mut i = 0;
        while i < 8 {
            t[i] = (i % N) as u8;
            i += 1;
        }
        t
    };
}

/// The positions padded to four entries, so that an index masked with `& 3` needs no bounds
/// check (entries `N..4` are never selected: indices come from [`Wrap`] or a state byte, < N).
#[inline(always)]
fn padded<const N: usize>(ps: [usize; N]) -> [usize; 4] {
    let mut out = [0usize; 4];
    out[..N].copy_from_slice(&ps);
    out
}

/// Peels the hypergraph of `keys` (distinct seed-mixed hashes) under `layout`.
///
/// On success returns `true` with `keys` rewritten in peeling order and `which[i]` the index
/// (0..N) of the position `keys[i]` was peeled from. Returns `false` (`keys` then holds an
/// unspecified permutation of a prefix) when the hypergraph has a 2-core, or a slot is hit by
/// more than 63 keys, which only a degenerate layout or repeated keys allow; the caller retries
/// with another seed.
///
/// Each slot keeps one byte `count << 2 | jx`, where `jx` is the xor of the position indices
/// (0..N, N <= 4, so 2 bits) under which its keys reach it, and the xor of their hashes: a slot
/// with count 1 names its only key and the index it was reached by, with no search and no list.
/// The hot loops are branch-free apart from the loop tests: a slot is written to the stack
/// unconditionally and the stack top advances by 0 or 1, because whether a slot's count drops
/// to 1 is a coin flip the branch predictor cannot learn.
pub(super) fn peel<const N: usize, L: Layout<N>>(
    layout: &L,
    keys: &mut [u64],
    which: &mut Vec<u8>,
) -> bool {
    let wrap = Wrap::<N>::TABLE;
    let m = layout.slots();
    let (mut state, mut xors) = (vec![0u8; m], vec![0u64; m]);
    // Same-length slices: one bounds check covers both arrays.
    let (state, xors) = (&mut state[..m], &mut xors[..m]);
    let mut overflow = false;
    for &k in keys.iter() {
        for (j, p) in layout.positions(k).into_iter().enumerate() {
            // The count wrapped from 63 to 0 iff the new byte is below 4 (the xor with `j`
            // touches the low two bits only).
            let st = state[p].wrapping_add(4) ^ j as u8;
            state[p] = st;
            overflow |= st < 4;
            xors[p] ^= k;
        }
    }
    if overflow {
        return false;
    }
    // A slot enters the stack when its count is 1 at the start or falls from 2 to 1; counts only
    // fall, so each slot enters at most once and `m` entries suffice. The speculative write
    // before a non-advance lands at `top <= m - 1` (at least one slot has left by then).
    let mut stack = vec![0u32; m];
    let mut top = 0;
    for (s, &st) in state.iter().enumerate() {
        stack[top] = s as u32;
        top += usize::from(st >> 2 == 1);
    }
    // The keys are now held by `xors`, so `keys` is free to receive the peeling order.
    which.clear();
    which.resize(keys.len(), 0);
    let which = &mut which[..keys.len()];
    let mut peeled = 0;
    while top > 0 && peeled < keys.len() {
        top -= 1;
        let s = stack[top] as usize;
        let st = state[s];
        if st >> 2 != 1 {
            continue; // emptied since it was stacked
        }
        let k = xors[s];
        let j = usize::from(st & 3); // 0..N: the index `k` reaches `s` by
        keys[peeled] = k;
        which[peeled] = j as u8;
        peeled += 1;
        // Detach `k` from its other slots. Slot `s` keeps count 1 and is never read again: it
        // has left the stack and its count cannot fall from 2 to 1 to re-enter it.
        let ps = padded(layout.positions(k));
        for t in 1..N {
            let o = wrap[j + t];
            let p = ps[usize::from(o & 3)];
            let st = state[p];
            if L::BRANCHY_PUSH {
                if st >> 2 == 2 {
                    stack[top] = p as u32;
                    top += 1;
                }
            } else {
                stack[top] = p as u32;
                top += usize::from(st >> 2 == 2);
            }
            state[p] = st.wrapping_sub(4) ^ o;
            xors[p] ^= k;
        }
    }
    peeled == keys.len()
}

/// Fills the fingerprint array from a peeling order: replayed in reverse, each key's peeled slot
/// is still zero and its other slots are final, so setting the peeled slot to `fp` xor the
/// others makes the key's xor equal its fingerprint for good.
pub(super) fn assign<const N: usize, L: Layout<N>, W: Fingerprint>(
    layout: &L,
    order: &[u64],
    which: &[u8],
) -> Vec<W> {
    assign_with(layout, order, which, W::from_hash)
}

/// [`assign`] with the fingerprint function `fp` (of a seed-mixed hash) and any fingerprint
/// type: the packed filter assigns `u32` values of its width, then packs them.
pub(super) fn assign_with<const N: usize, L: Layout<N>, T>(
    layout: &L,
    order: &[u64],
    which: &[u8],
    fp: impl Fn(u64) -> T,
) -> Vec<T>
where
    T: Copy + Default + std::ops::BitXor<Output = T>,
{
    let mut fps = vec![T::default(); layout.slots()];
    for (&k, &j) in order.iter().zip(which).rev() {
        let ps = layout.positions(k);
        let x = ps.iter().fold(fp(k), |x, &p| x ^ fps[p]);
        fps[padded(ps)[usize::from(j & 3)]] = x; // j < N: a padding entry is never picked
    }
    fps
}

/// The membership test shared by every owned filter and view of the family: `h` is the
/// seed-mixed key hash. An empty array (the empty set) answers `false`.
#[inline(always)]
pub(super) fn probe<const N: usize, W: Fingerprint, S: Words<W> + ?Sized, L: Layout<N>>(
    fps: &S,
    layout: &L,
    h: u64,
) -> bool {
    if layout.slots() == 0 {
        return false;
    }
    let x = layout.positions(h).iter().fold(W::default(), |x, &p| x ^ fps.word(p));
    W::from_hash(h) == x
}

/// Starts loading the `N` fingerprints [`probe`] reads for `h` (a hint; no-op when empty).
#[inline(always)]
pub(super) fn prefetch<const N: usize, W: Fingerprint, L: Layout<N>>(
    fps: &LeWords<'_, W>,
    layout: &L,
    h: u64,
) {
    if layout.slots() == 0 {
        return;
    }
    for p in layout.positions(h) {
        prefetch_read(fps.ptr(p));
    }
}
