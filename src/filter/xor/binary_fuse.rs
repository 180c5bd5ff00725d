//! The binary fuse filter (Graf and Lemire 2022): `segment_count + 2` segments of
//! `segment_length` (a power of two) slots; a key picks a window of three consecutive segments
//! and has one slot in each. The locality of the windows lets peeling succeed at about `1.125 n`
//! slots for large `n` (Walzer's spatially coupled hypergraphs), against `1.23 n` for the xor
//! filter's three independent blocks.
//!
//! Sizing (the paper's formulas, arity 3): `segment_length = 2^floor(ln n / ln 3.33 + 2.25)`,
//! capped at 2^18; `size_factor = max(1.125, 0.875 + 0.25 ln(10^6) / ln n)`;
//! `segment_count = max(1, ceil(round(n * size_factor) / segment_length) - 2)`. For `n < 2` the
//! formulas are evaluated at `n = 2` (`ln 1 = 0` would divide by zero).
//!
//! Encoding (kind tags 10 and 11, design.md "binary_fuse8 / binary_fuse16"): params `seed:u64
//! keys:u64 segment_length:u32 segment_count:u32`; payload `(segment_count + 2) *
//! segment_length` fingerprints (u8, or u16 little-endian).

use super::peel::{self, Layout, Sizing};
use super::xor_filter::bits_per_key;
use super::{Fingerprint, DEFAULT_SEED};
use crate::error::{Error, Result};
use crate::filter::codec::{self, Envelope, LeWords, ParamReader, ParamWriter};
use crate::filter::hash::{fast_range64, mix64};
use crate::filter::{Filter, FilterKind, StaticFilter};

/// Largest segment length, from the paper.
const MAX_SEGMENT_LENGTH: u32 = 1 << 18;

/// `segment_count + 2` segments of `segment_length` slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FuseLayout {
    pub(super) segment_length: u32,
    pub(super) segment_count: u32,
}

impl Sizing for FuseLayout {
    /// The paper's sizing (module documentation), for `n >= 1`.
    fn for_keys(n: usize) -> FuseLayout {
        let ln_n = (n.max(2) as f64).ln();
        let exponent = (ln_n / 3.33f64.ln() + 2.25).floor() as u32;
        let segment_length = 1u32 << exponent.min(MAX_SEGMENT_LENGTH.trailing_zeros());
        let size_factor = f64::max(1.125, 0.875 + 0.25 * 1e6f64.ln() / ln_n);
        let capacity = (n as f64 * size_factor).round() as u64;
        let segments = capacity.div_ceil(u64::from(segment_length)).saturating_sub(2).max(1);
        FuseLayout { segment_length, segment_count: segments as u32 }
    }

    /// Even attempts use the base layout, odd ones [`FuseLayout::halved`].
    fn for_attempt(self, attempt: u32) -> FuseLayout {
        if attempt % 2 == 1 {
            self.halved()
        } else {
            self
        }
    }

    /// Keys ordered by their top `ceil(log2(segment_count + 1))` bits (at most 16) reach the
    /// segments in order: `h0` grows with the hash.
    fn locality_bits(self) -> u32 {
        (u32::BITS - self.segment_count.leading_zeros()).min(16)
    }
}

impl FuseLayout {
    /// The same array cut into segments of half the length: `2 * segment_count + 2` of them.
    ///
    /// Odd-numbered build attempts use this layout. Just after the formula doubles the segment
    /// length (n about 3,400, 11,200, ...) the array holds few long segments and a single attempt
    /// fails with probability up to 0.98 (measured at n = 11,504: 97 of 100 seeds; FastFilter
    /// xor_singleheader issue 77), while the halved layout of the same size fails in about 3%.
    /// Alternating keeps the size and makes 100 attempts ample at every n.
    fn halved(self) -> FuseLayout {
        if self.segment_length < 2 {
            return self;
        }
        FuseLayout {
            segment_length: self.segment_length / 2,
            segment_count: 2 * self.segment_count + 2,
        }
    }

    /// Checks parameters read from bytes: together with a payload of [`Layout::slots`] words,
    /// they guarantee every position is in range (see [`Layout::positions`]).
    pub(super) fn validate(self) -> std::result::Result<(), String> {
        let FuseLayout { segment_length: len, segment_count: count } = self;
        if len == 0 && count == 0 {
            return Ok(()); // the empty filter
        }
        if !len.is_power_of_two() || len > MAX_SEGMENT_LENGTH {
            return Err(format!("segment_length {len} is not a power of two <= 2^18"));
        }
        if count == 0 || (u64::from(count) + 2) * u64::from(len) > u64::from(u32::MAX) {
            return Err(format!("segment_count {count} is not in 1..=2^32/segment_length - 2"));
        }
        Ok(())
    }
}

impl Layout for FuseLayout {
    #[inline(always)]
    fn slots(&self) -> usize {
        (self.segment_count as usize + 2) * self.segment_length as usize
    }

    /// `h0 = fastrange64(h, segment_count * L)` (segment `s`, any offset);
    /// `h1 = (h0 + L) ^ ((h >> 18) & (L - 1))`, `h2 = (h0 + 2L) ^ (h & (L - 1))`. With `L` a
    /// power of two, xor-ing an offset below `L` keeps a slot inside its aligned segment, so the
    /// three slots lie in segments `s`, `s + 1`, `s + 2`: distinct, and below
    /// `(segment_count + 2) * L`.
    #[inline(always)]
    fn positions(&self, h: u64) -> [usize; 3] {
        let len = self.segment_length as u64;
        let mask = len.wrapping_sub(1);
        let h0 = fast_range64(h, self.segment_count as u64 * len);
        let h1 = (h0 + len) ^ ((h >> 18) & mask);
        let h2 = (h0 + 2 * len) ^ (h & mask);
        [h0 as usize, h1 as usize, h2 as usize]
    }
}

/// A binary fuse filter with `W`-bit fingerprints ([`super::BinaryFuse8`],
/// [`super::BinaryFuse16`]). See the module documentation for the layout.
///
/// ```
/// use siftdb::filter::prelude::*;
/// use siftdb::filter::{hash_keys, BinaryFuse8, FilterView};
/// let f = BinaryFuse8::build(&hash_keys(&["apple", "banana", "cherry"])).unwrap();
/// assert!(f.contains(b"apple"));
/// let bytes = f.to_bytes();
/// assert_eq!(BinaryFuse8::from_bytes(&bytes).unwrap(), f);
/// assert!(FilterView::parse(&bytes).unwrap().contains(b"banana"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryFuse<W> {
    seed: u64,
    keys: u64,
    layout: FuseLayout,
    fps: Vec<W>,
}

impl<W: Fingerprint> BinaryFuse<W> {
    /// Builds the filter over the distinct values of `hashes`, trying the seeds derived from
    /// `seed` in a fixed order. Fails with [`Error::FilterFull`] after 100 failed
    /// attempts, and with [`Error::InvalidArgument`] above 2^31 distinct keys.
    pub fn build_with_seed(hashes: &[u64], seed: u64) -> Result<BinaryFuse<W>> {
        if hashes.is_empty() {
            let layout = FuseLayout { segment_length: 0, segment_count: 0 };
            return Ok(BinaryFuse { seed: 0, keys: 0, layout, fps: Vec::new() });
        }
        let built = peel::construct::<FuseLayout>(hashes, seed, W::FUSE_KIND)?;
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

    /// Segments a key's window may start in (the array has two more).
    pub fn segment_count(&self) -> u32 {
        self.layout.segment_count
    }

    /// Fingerprint bits per distinct key (`slots * BITS / keys`); 0 for the empty filter.
    pub fn bits_per_key(&self) -> f64 {
        bits_per_key::<W>(self.fps.len(), self.keys)
    }

    /// Reads a serialized binary fuse filter into an owned one (copies the payload; use
    /// [`BinaryFuseView`] to probe in place).
    pub fn from_bytes(bytes: &[u8]) -> Result<BinaryFuse<W>> {
        let view = BinaryFuseView::<W>::parse(&codec::decode_kind(bytes, W::FUSE_KIND)?)?;
        let (seed, keys, layout) = (view.seed, view.keys, view.layout);
        Ok(BinaryFuse { seed, keys, layout, fps: view.fps.to_vec() })
    }
}

impl<W: Fingerprint> Filter for BinaryFuse<W> {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        peel::probe(self.fps.as_slice(), &self.layout, mix64(hash, self.seed))
    }

    fn kind(&self) -> FilterKind {
        W::FUSE_KIND
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
        codec::encode(W::FUSE_KIND, &params, |out| codec::write_words(&self.fps, out))
    }
}

impl<W: Fingerprint> StaticFilter for BinaryFuse<W> {
    fn build(hashes: &[u64]) -> Result<BinaryFuse<W>> {
        BinaryFuse::build_with_seed(hashes, DEFAULT_SEED)
    }
}

/// A binary fuse filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct BinaryFuseView<'a, W> {
    seed: u64,
    keys: u64,
    layout: FuseLayout,
    fps: LeWords<'a, W>,
}

impl<'a, W: Fingerprint> BinaryFuseView<'a, W> {
    /// Checks the parameters and payload of a decoded envelope of kind `W::FUSE_KIND`: the
    /// segment length must be a power of two (which keeps every slot in range), the empty filter
    /// has no segments, and a non-empty one at least as many slots as keys.
    pub fn parse(env: &Envelope<'a>) -> Result<BinaryFuseView<'a, W>> {
        if env.kind != W::FUSE_KIND {
            return Err(Error::invalid(format!("expected {}, found {}", W::FUSE_KIND, env.kind)));
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
        let what = if W::BITS == 8 { "binary_fuse8 payload" } else { "binary_fuse16 payload" };
        let fps = LeWords::new(env.payload, slots, what)?;
        Ok(BinaryFuseView { seed, keys, layout, fps })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        peel::probe(&self.fps, &self.layout, mix64(hash, self.seed))
    }

    /// Starts loading the three fingerprints `contains_hash(hash)` reads (a hint: see
    /// [`crate::filter::FilterView::prefetch_hash`]).
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

fn r_invalid(env: &Envelope<'_>, what: String) -> Error {
    ParamReader::new(env).invalid(what)
}
