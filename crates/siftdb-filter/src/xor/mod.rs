//! The xor family of static filters: [`Xor8`] / [`Xor16`] (Graf and Lemire 2020, "Xor Filters:
//! Faster and Smaller Than Bloom and Cuckoo Filters"), and [`BinaryFuse8`] / [`BinaryFuse16`]
//! with their 4-wise variants [`BinaryFuse4Wise8`] / [`BinaryFuse4Wise16`] (Graf and Lemire
//! 2022, "Binary Fuse Filters: Fast and Smaller Than Xor Filters").
//!
//! # Theory
//! A filter over the key set `S` is an array `B` of `w`-bit fingerprints and `N` position
//! functions `h0, ..., h(N-1)` (into distinct slots; `N = 3`, or 4 for the 4-wise binary fuse
//! filters) such that for every `x` in `S` `fp(x) = B[h0(x)] ^ ... ^ B[h(N-1)(x)]`. A key
//! outside `S` passes only if its fingerprint happens to equal the xor of `N` effectively random
//! words: the false-positive rate is `2^-w` (about 0.39% for 8 bits, 0.0015% for 16 bits),
//! independent of the key count and of `N`.
//!
//! Each key is a hyperedge on `N` slots. The array is solved by *peeling*: a slot touched by
//! exactly one remaining key can be assigned last for that key, so the key is removed and pushed
//! on a stack; repeating until no key is left orders the keys so that, replayed in reverse, each
//! key's assigned slot is written after its other slots are final. Peeling succeeds with high
//! probability once the array is larger than a threshold: `1.23 n` for the xor filter's three
//! equal blocks, about `1.125 n` at large `n` for the 3-wise binary fuse layout, where the
//! slots of a key fall in consecutive segments of a window, and about `1.075 n` for the 4-wise
//! one. When peeling fails (the hypergraph has a 2-core) construction retries with a new seed,
//! at most [`MAX_ATTEMPTS`] times.
//!
//! # Hashing
//! Key hashes (XXH3-64, [`crate::hash_key`]) are re-mixed with the filter's seed by the
//! bijective [`mix64`]; positions and the fingerprint come from that mixed value `h`, and the
//! fingerprint is the low `w` bits of `h ^ (h >> 32)`. Because the mix is a bijection, distinct
//! key hashes stay distinct under every seed: duplicates are removed once, before the first
//! attempt. The byte layout is specified in docs/format.md#xor, "binary_fuse8 /
//! binary_fuse16", "binary_fuse4_8 / binary_fuse4_16", "packed_binary_fuse").
//!
//! [`PackedBinaryFuse`] is the binary fuse filter with fingerprints of any width from 1 to 32
//! bits, bit-packed (`packed_fuse.rs`), for FPRs between the byte widths.

mod binary_fuse;
mod fuse_layout;
mod packed_fuse;
mod peel;
mod xor_filter;

#[cfg(test)]
mod fuse4_tests;
#[cfg(test)]
mod packed_fuse_tests;
#[cfg(test)]
mod tests;

pub use binary_fuse::{BinaryFuse, BinaryFuseView};
pub use fuse_layout::{Arity, FuseArity};
pub use packed_fuse::{PackedBinaryFuse, PackedBinaryFuseView};
pub use xor_filter::{Xor, XorView};

use crate::envelope::Word;
use crate::hash::mix64;
use crate::FilterKind;
use std::ops::BitXor;

/// Seeds tried before construction gives up with [`crate::FilterError::Full`]. A single attempt
/// succeeds with probability well above 1/2 at every size, so 100 failures in a row mean the input
/// is not what it claims to be (or, for tiny sets, unlucky beyond 2^-100).
pub const MAX_ATTEMPTS: u32 = 100;

/// Seed used by [`crate::StaticFilter::build`].
pub const DEFAULT_SEED: u64 = 0x0005_1F7D_B0F1_17E5;

/// Most distinct keys a filter of this family holds: slot indices are 32-bit.
pub const MAX_KEYS: usize = 1 << 31;

/// [`Xor`] with 8-bit fingerprints: FPR 2^-8, about 9.84 bits per key.
pub type Xor8 = Xor<u8>;
/// [`Xor`] with 16-bit fingerprints: FPR 2^-16, about 19.7 bits per key.
pub type Xor16 = Xor<u16>;
/// [`BinaryFuse`] with 8-bit fingerprints: FPR 2^-8, about 9.0 bits per key at a million keys.
pub type BinaryFuse8 = BinaryFuse<u8>;
/// [`BinaryFuse`] with 16-bit fingerprints: FPR 2^-16, about 18.1 bits per key at a million keys.
pub type BinaryFuse16 = BinaryFuse<u16>;
/// 4-wise [`BinaryFuse`] with 8-bit fingerprints: FPR 2^-8, about 8.6 bits per key at a million
/// keys (size factor 1.075 instead of 1.125), four lookups per query.
pub type BinaryFuse4Wise8 = BinaryFuse<u8, 4>;
/// 4-wise [`BinaryFuse`] with 16-bit fingerprints: FPR 2^-16, about 17.2 bits per key at a
/// million keys.
pub type BinaryFuse4Wise16 = BinaryFuse<u16, 4>;
/// Zero-copy view of an [`Xor8`].
pub type Xor8View<'a> = XorView<'a, u8>;
/// Zero-copy view of an [`Xor16`].
pub type Xor16View<'a> = XorView<'a, u16>;
/// Zero-copy view of a [`BinaryFuse8`].
pub type BinaryFuse8View<'a> = BinaryFuseView<'a, u8>;
/// Zero-copy view of a [`BinaryFuse16`].
pub type BinaryFuse16View<'a> = BinaryFuseView<'a, u16>;
/// Zero-copy view of a [`BinaryFuse4Wise8`].
pub type BinaryFuse4Wise8View<'a> = BinaryFuseView<'a, u8, 4>;
/// Zero-copy view of a [`BinaryFuse4Wise16`].
pub type BinaryFuse4Wise16View<'a> = BinaryFuseView<'a, u16, 4>;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
}

/// A fingerprint width of the xor family (`u8` or `u16`). Sealed: the kind tags of each width are
/// part of the format.
pub trait Fingerprint: Word + BitXor<Output = Self> + sealed::Sealed {
    /// Width in bits; the filter's FPR is `2^-BITS`.
    const BITS: u32;
    /// The kind tag of the xor filter with this width.
    const XOR_KIND: FilterKind;
    /// The kind tag of the (3-wise) binary fuse filter with this width.
    const FUSE_KIND: FilterKind;
    /// The kind tag of the 4-wise binary fuse filter with this width.
    const FUSE4_KIND: FilterKind;
    /// The fingerprint of a seed-mixed key hash: the low bits of `h ^ (h >> 32)`.
    fn from_hash(h: u64) -> Self;
}

impl Fingerprint for u8 {
    const BITS: u32 = 8;
    const XOR_KIND: FilterKind = FilterKind::Xor8;
    const FUSE_KIND: FilterKind = FilterKind::BinaryFuse8;
    const FUSE4_KIND: FilterKind = FilterKind::BinaryFuse4Wise8;
    #[inline(always)]
    fn from_hash(h: u64) -> u8 {
        (h ^ (h >> 32)) as u8
    }
}

impl Fingerprint for u16 {
    const BITS: u32 = 16;
    const XOR_KIND: FilterKind = FilterKind::Xor16;
    const FUSE_KIND: FilterKind = FilterKind::BinaryFuse16;
    const FUSE4_KIND: FilterKind = FilterKind::BinaryFuse4Wise16;
    #[inline(always)]
    fn from_hash(h: u64) -> u16 {
        (h ^ (h >> 32)) as u16
    }
}

/// Slots per key of the binary fuse layout of `arity` (3 or 4; anything else is taken as 4)
/// built for `keys` distinct keys (the paper's sizing, `fuse_layout.rs`, with its rounding up to
/// whole segments): a filter's bits per key are this times its fingerprint width. About 1.077
/// (4-wise) or 1.13 (3-wise) at a million keys, more for smaller sets: 1.22 for 4-wise at 9,000
/// keys, 1.28 at 3,000.
pub(crate) fn fuse_slots_per_key(keys: f64, arity: u32) -> f64 {
    use peel::{Layout, Sizing};
    let n = if keys.is_finite() { keys.clamp(1.0, MAX_KEYS as f64) as usize } else { MAX_KEYS };
    let slots = match arity {
        3 => fuse_layout::FuseLayout::<3>::for_keys(n).slots(),
        _ => fuse_layout::FuseLayout::<4>::for_keys(n).slots(),
    };
    slots as f64 / n as f64
}

/// The seed of attempt `attempt` (0-based) of a build started with `seed`: a fixed sequence, so
/// a build is deterministic for its input and seed.
fn attempt_seed(seed: u64, attempt: u32) -> u64 {
    mix64(seed, u64::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The distinct values of `hashes`, sorted. Partitions by the top bits first (one counting-sort
/// pass) so the comparison sorts run on cache-sized buckets.
fn sorted_distinct(hashes: &[u64]) -> Vec<u64> {
    let mut keys = Vec::with_capacity(hashes.len());
    let offsets = partition_by_top_bits(hashes, bucket_bits(hashes.len()), |h| h, &mut keys);
    for w in offsets.windows(2) {
        keys[w[0]..w[1]].sort_unstable();
    }
    keys.dedup();
    keys
}

/// Top-bit count giving buckets of about 256 keys, at most 2^16 buckets.
fn bucket_bits(n: usize) -> u32 {
    (usize::BITS - (n / 256).leading_zeros()).min(16)
}

/// Writes `f(k)` for every key into `out` (replacing its contents), stably ordered by the top
/// `bits` bits of `f(k)` (a counting sort; `bits = 0` keeps the input order). Returns the
/// `2^bits + 1` bucket offsets.
///
/// `f` runs once per key: the first pass stores `f(k)` in input order in a scratch buffer while
/// counting the buckets, the second scatters the scratch buffer into `out`.
fn partition_by_top_bits(
    keys: &[u64],
    bits: u32,
    f: impl Fn(u64) -> u64,
    out: &mut Vec<u64>,
) -> Vec<usize> {
    if bits == 0 {
        out.clear();
        out.extend(keys.iter().map(|&k| f(k)));
        return vec![0, keys.len()];
    }
    let shift = 64 - bits;
    // counts[b + 1]: keys in bucket b; `v >> shift < 2^bits`, so the index is in range.
    let mut offsets = vec![0usize; (1 << bits) + 1];
    let mapped: Vec<u64> = keys
        .iter()
        .map(|&k| {
            let v = f(k);
            offsets[(v >> shift) as usize + 1] += 1;
            v
        })
        .collect();
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut next = offsets.clone();
    // The scatter writes every index below `keys.len()` once, so stale contents are harmless and
    // a fresh zeroed buffer (pages straight from the allocator) avoids a fill pass.
    if out.len() != keys.len() {
        *out = vec![0; keys.len()];
    }
    for v in mapped {
        let b = (v >> shift) as usize;
        out[next[b]] = v;
        next[b] += 1;
    }
    offsets
}
