//! The binary fuse filter (Graf and Lemire 2022) of arity `N` (3 or 4 slots per key) with
//! `W`-bit fingerprints: the owned filter, its zero-copy view and their encoding. The layout and
//! its sizing are in `fuse_layout.rs`.
//!
//! Encoding (kind tags 10 and 11 for `N = 3`, 14 and 15 for `N = 4`; docs/format.md#binary-fuse
//! and "binary_fuse4_8 / binary_fuse4_16"): params `seed:u64 keys:u64
//! segment_length:u32 segment_count:u32`; payload `(segment_count + N - 1) * segment_length`
//! fingerprints (u8, or u16 little-endian).

use super::fuse_layout::{Arity, FuseArity, FuseLayout};
use super::peel;
use super::peel::Layout;
use super::xor_filter::bits_per_key;
use super::{Fingerprint, DEFAULT_SEED};
use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter};
use crate::error::{FilterError, Result};
use crate::hash::mix64;
use crate::{Filter, FilterKind, StaticFilter};

/// A binary fuse filter with `W`-bit fingerprints and `N` slots per key: [`super::BinaryFuse8`],
/// [`super::BinaryFuse16`] (`N = 3`, the default) and [`super::BinaryFuse4Wise8`],
/// [`super::BinaryFuse4Wise16`] (`N = 4`: about 4.5% smaller at large `n`, one more memory
/// access per query). See `fuse_layout.rs` for the layout.
///
/// ```
/// use siftdb_filter::prelude::*;
/// use siftdb_filter::{hash_keys, BinaryFuse4Wise8, BinaryFuse8, FilterView};
/// let f = BinaryFuse8::build(&hash_keys(&["apple", "banana", "cherry"])).unwrap();
/// assert!(f.contains(b"apple"));
/// let bytes = f.to_bytes();
/// assert_eq!(BinaryFuse8::from_bytes(&bytes).unwrap(), f);
/// assert!(FilterView::parse(&bytes).unwrap().contains(b"banana"));
/// let f4 = BinaryFuse4Wise8::build(&hash_keys(&["apple", "banana"])).unwrap();
/// assert!(FilterView::parse(&f4.to_bytes()).unwrap().contains(b"banana"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryFuse<W, const N: usize = 3> {
    seed: u64,
    keys: u64,
    layout: FuseLayout<N>,
    fps: Vec<W>,
}

impl<W: Fingerprint, const N: usize> BinaryFuse<W, N>
where
    Arity<N>: FuseArity,
{
    /// Builds the filter over the distinct values of `hashes`, trying the seeds derived from
    /// `seed` in a fixed order. Fails with [`FilterError::Full`] after 100 failed
    /// attempts, and with [`FilterError::InvalidArgument`] above 2^31 distinct keys.
    pub fn build_with_seed(hashes: &[u64], seed: u64) -> Result<BinaryFuse<W, N>> {
        if hashes.is_empty() {
            let layout = FuseLayout::EMPTY;
            return Ok(BinaryFuse { seed: 0, keys: 0, layout, fps: Vec::new() });
        }
        let built = peel::construct::<N, FuseLayout<N>>(hashes, seed, Arity::<N>::kind::<W>())?;
        let fps = peel::assign(&built.layout, &built.order, &built.which);
        Ok(BinaryFuse { seed: built.seed, keys: built.keys as u64, layout: built.layout, fps })
    }

    /// The seed the filter was built with (the one of the successful attempt).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Distinct keys the filter was built from.
    pub fn len(&self) -> u64 {
        self.keys
    }

    /// True if the filter was built from no keys (it rejects everything).
    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }

    /// Slots per segment (a power of two; 0 for the empty filter).
    pub fn segment_length(&self) -> u32 {
        self.layout.segment_length
    }

    /// Segments a key's window may start in (the array has `N - 1` more).
    pub fn segment_count(&self) -> u32 {
        self.layout.segment_count
    }

    /// Fingerprint bits per distinct key (`slots * BITS / keys`); 0 for the empty filter.
    pub fn bits_per_key(&self) -> f64 {
        bits_per_key::<W>(self.fps.len(), self.keys)
    }

    /// Reads a serialized binary fuse filter into an owned one (copies the payload; use
    /// [`BinaryFuseView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<BinaryFuse<W, N>> {
        let env = envelope::decode_kind(bytes, Arity::<N>::kind::<W>())?;
        let view = BinaryFuseView::<W, N>::parse(&env)?;
        let (seed, keys, layout) = (view.seed, view.keys, view.layout);
        Ok(BinaryFuse { seed, keys, layout, fps: view.fps.to_vec() })
    }
}

impl<W: Fingerprint, const N: usize> Filter for BinaryFuse<W, N>
where
    Arity<N>: FuseArity,
{
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        peel::probe(self.fps.as_slice(), &self.layout, mix64(hash, self.seed))
    }

    fn kind(&self) -> FilterKind {
        Arity::<N>::kind::<W>()
    }

    fn memory_bytes(&self) -> usize {
        self.fps.len() * W::BYTES
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params = ParamWriter::new()
            .u64(self.seed)
            .u64(self.keys)
            .u32(self.layout.segment_length)
            .u32(self.layout.segment_count)
            .finish();
        envelope::encode(self.kind(), &params, |out| envelope::write_words(&self.fps, out))
    }
}

impl<W: Fingerprint, const N: usize> StaticFilter for BinaryFuse<W, N>
where
    Arity<N>: FuseArity,
{
    fn build(hashes: &[u64]) -> Result<BinaryFuse<W, N>> {
        BinaryFuse::build_with_seed(hashes, DEFAULT_SEED)
    }
}

/// A binary fuse filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct BinaryFuseView<'a, W, const N: usize = 3> {
    seed: u64,
    keys: u64,
    layout: FuseLayout<N>,
    fps: LeWords<'a, W>,
}

impl<'a, W: Fingerprint, const N: usize> BinaryFuseView<'a, W, N>
where
    Arity<N>: FuseArity,
{
    /// Checks the parameters and payload of a decoded envelope of this width and arity's kind:
    /// the segment length must be a power of two (which keeps every slot in range), the slot
    /// count must fit 32 bits, the empty filter has no segments, and a non-empty one at least as
    /// many slots as keys. Every violation is [`FilterError::Corruption`].
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<BinaryFuseView<'a, W, N>> {
        let kind = Arity::<N>::kind::<W>();
        if env.kind != kind {
            return Err(FilterError::invalid(format!("expected {kind}, found {}", env.kind)));
        }
        let mut r = ParamReader::new(env);
        let seed = r.u64("seed")?;
        let keys = r.u64("keys")?;
        let segment_length = r.u32("segment_length")?;
        let segment_count = r.u32("segment_count")?;
        r.finish()?;
        let layout = FuseLayout { segment_length, segment_count };
        layout.validate().map_err(|e| r_invalid(env, e))?;
        let slots = layout.slots() as u64;
        if (keys == 0) != (slots == 0) || keys > slots {
            return Err(r_invalid(env, format!("keys {keys} with {slots} slots")));
        }
        let fps = LeWords::new(env.payload, slots, &format!("{kind} payload"))?;
        Ok(BinaryFuseView { seed, keys, layout, fps })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        peel::probe(&self.fps, &self.layout, mix64(hash, self.seed))
    }

    /// Starts loading the `N` fingerprints `contains_hash(hash)` reads (a hint: see
    /// [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        peel::prefetch(&self.fps, &self.layout, mix64(hash, self.seed));
    }

    /// Distinct keys the filter was built from.
    pub fn len(&self) -> u64 {
        self.keys
    }

    /// True if the filter was built from no keys.
    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }
}

fn r_invalid(env: &Envelope<'_>, what: String) -> FilterError {
    ParamReader::new(env).invalid(what)
}
