//! The xor filter (Graf and Lemire 2020): `floor(1.23 n) + 32` slots in three equal blocks; a key
//! has one slot in each block.
//!
//! Encoding (kind tags 8 and 9, docs/format.md#xor): params `seed:u64 keys:u64
//! block_length:u32`; payload `3 * block_length` fingerprints (u8, or u16 little-endian).

use super::peel::{self, Layout, Sizing};
use super::{Fingerprint, DEFAULT_SEED, MAX_KEYS};
use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter};
use crate::error::{FilterError, Result};
use crate::hash::{fast_range32, mix64};
use crate::{Filter, FilterKind, StaticFilter};

/// Three blocks of `block` slots each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct XorLayout {
    pub(super) block: u32,
}

impl Sizing<3> for XorLayout {
    /// The paper's sizing: `floor(1.23 n) + 32` slots, rounded down to a multiple of 3.
    fn for_keys(n: usize) -> XorLayout {
        let capacity = (1.23 * n as f64).floor() as u64 + 32;
        XorLayout { block: (capacity / 3) as u32 }
    }
}

impl Layout<3> for XorLayout {
    const BRANCHY_PUSH: bool = true;

    #[inline(always)]
    fn slots(&self) -> usize {
        3 * self.block as usize
    }

    /// Slot `j` is `j * block + fastrange32(32 bits of h rotated by 21 j, block)`: in block `j`,
    /// so the three are distinct and below `3 * block`.
    #[inline(always)]
    fn positions(&self, h: u64) -> [usize; 3] {
        let b = self.block;
        let r0 = fast_range32(h as u32, b);
        let r1 = fast_range32(h.rotate_left(21) as u32, b);
        let r2 = fast_range32(h.rotate_left(42) as u32, b);
        let b = b as usize;
        [r0 as usize, b + r1 as usize, 2 * b + r2 as usize]
    }
}

/// An xor filter with `W`-bit fingerprints ([`super::Xor8`], [`super::Xor16`]). See the module
/// documentation for the layout.
///
/// ```
/// use siftdb_filter::prelude::*;
/// use siftdb_filter::{hash_keys, Xor16};
/// let hashes = hash_keys(&["apple", "banana", "apple"]); // duplicates are fine
/// let f = Xor16::build_with_seed(&hashes, 42).unwrap();
/// assert_eq!(f.len(), 2);
/// assert!(f.contains(b"banana"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xor<W> {
    seed: u64,
    keys: u64,
    layout: XorLayout,
    fps: Vec<W>,
}

impl<W: Fingerprint> Xor<W> {
    /// Builds the filter over the distinct values of `hashes`, trying the seeds derived from
    /// `seed` in a fixed order. Fails with [`FilterError::Full`] after 100 failed
    /// attempts, and with [`FilterError::InvalidArgument`] above 2^31 distinct keys.
    pub fn build_with_seed(hashes: &[u64], seed: u64) -> Result<Xor<W>> {
        if hashes.is_empty() {
            return Ok(Xor { seed: 0, keys: 0, layout: XorLayout { block: 0 }, fps: Vec::new() });
        }
        let built = peel::construct::<3, XorLayout>(hashes, seed, W::XOR_KIND)?;
        let fps = peel::assign(&built.layout, &built.order, &built.which);
        Ok(Xor { seed: built.seed, keys: built.keys as u64, layout: built.layout, fps })
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

    /// Fingerprint bits per distinct key (`slots * BITS / keys`); 0 for the empty filter.
    pub fn bits_per_key(&self) -> f64 {
        bits_per_key::<W>(self.fps.len(), self.keys)
    }

    /// Reads a serialized xor filter into an owned one (copies the payload; use [`XorView`] to
    /// probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<Xor<W>> {
        let view = XorView::<W>::parse(&envelope::decode_kind(bytes, W::XOR_KIND)?)?;
        Ok(Xor { seed: view.seed, keys: view.keys, layout: view.layout, fps: view.fps.to_vec() })
    }
}

pub(super) fn bits_per_key<W: Fingerprint>(slots: usize, keys: u64) -> f64 {
    if keys == 0 {
        0.0
    } else {
        (slots as f64 * W::BITS as f64) / keys as f64
    }
}

impl<W: Fingerprint> Filter for Xor<W> {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        peel::probe(self.fps.as_slice(), &self.layout, mix64(hash, self.seed))
    }

    fn kind(&self) -> FilterKind {
        W::XOR_KIND
    }

    fn memory_bytes(&self) -> usize {
        self.fps.len() * W::BYTES
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params =
            ParamWriter::new().u64(self.seed).u64(self.keys).u32(self.layout.block).finish();
        envelope::encode(W::XOR_KIND, &params, |out| envelope::write_words(&self.fps, out))
    }
}

impl<W: Fingerprint> StaticFilter for Xor<W> {
    fn build(hashes: &[u64]) -> Result<Xor<W>> {
        Xor::build_with_seed(hashes, DEFAULT_SEED)
    }
}

/// An xor filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct XorView<'a, W> {
    seed: u64,
    keys: u64,
    layout: XorLayout,
    fps: LeWords<'a, W>,
}

impl<'a, W: Fingerprint> XorView<'a, W> {
    /// Checks the parameters and payload of a decoded envelope of kind `W::XOR_KIND`.
    ///
    /// Any block length gives in-range slots (each is below `3 * block_length`, the payload
    /// length checked here); beyond that the parameters must be consistent: an empty filter has
    /// no slots, a non-empty one at least as many slots as keys.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<XorView<'a, W>> {
        if env.kind != W::XOR_KIND {
            return Err(FilterError::invalid(format!(
                "expected {}, found {}",
                W::XOR_KIND,
                env.kind
            )));
        }
        let mut r = ParamReader::new(env);
        let seed = r.u64("seed")?;
        let keys = r.u64("keys")?;
        let block = r.u32("block_length")?;
        r.finish()?;
        let slots = 3 * u64::from(block);
        if (keys == 0) != (block == 0) {
            return Err(r_invalid(env, format!("keys {keys} with block_length {block}")));
        }
        if keys > slots || keys > MAX_KEYS as u64 {
            return Err(r_invalid(env, format!("keys {keys} exceed {slots} slots")));
        }
        let what = if W::BITS == 8 { "xor8 payload" } else { "xor16 payload" };
        let fps = LeWords::new(env.payload, slots, what)?;
        Ok(XorView { seed, keys, layout: XorLayout { block }, fps })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        peel::probe(&self.fps, &self.layout, mix64(hash, self.seed))
    }

    /// Starts loading the three fingerprints `contains_hash(hash)` reads (a hint: see
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
