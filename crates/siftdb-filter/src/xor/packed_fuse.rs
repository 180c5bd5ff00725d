//! The binary fuse filter with fingerprints of any width from 1 to 32 bits, bit-packed: FPR
//! `2^-w` at about `1.075 w` bits per key (4-wise) or `1.125 w` (3-wise) for every `w`, where
//! [`super::BinaryFuse`] offers only 8 and 16. It is what lets each level of an LSM tree have
//! its own width (Pebble ships 16/16/16/12/10/8/4 from L0 to L6), chosen by hand or by the
//! engine's allocation (`StaticFilterKind::PackedBinaryFuse`).
//!
//! Same layout, hashing and construction as the byte-wide filters (`fuse_layout.rs`,
//! `peel.rs`); only the fingerprint store differs. Encoding (kind tag 16,
//! docs/format.md#packed-binary-fuse): params `seed:u64 keys:u64 segment_length:u32
//! segment_count:u32 arity:u8 fingerprint_bits:u8`; payload `ceil(slots * w / 8)` bytes holding
//! fingerprint `i` in bits `i w .. (i + 1) w` of the little-endian bit string, then 7 zero bytes,
//! so that every fingerprint is read with one unaligned 64-bit load.

use super::fuse_layout::{Arity, FuseArity, FuseLayout};
use super::peel::{self, Layout};
use super::DEFAULT_SEED;
use crate::envelope::{self, Envelope, ParamReader, ParamWriter};
use crate::error::{FilterError, Result};
use crate::hash::mix64;
use crate::prefetch::prefetch_read;
use crate::{Filter, FilterKind};

/// Widest fingerprint: a field plus its bit offset within its first byte must fit the 64-bit
/// load (`7 + 32 <= 64`), and FPR `2^-32` is the engine's smallest.
pub(super) const MAX_FINGERPRINT_BITS: u32 = 32;

/// Zero bytes after the packed fingerprints: the load of the last one reads 8 bytes from the
/// byte holding its first bit.
const TAIL: usize = 7;

/// The layout of either arity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Three(FuseLayout<3>),
    Four(FuseLayout<4>),
}

impl Shape {
    fn slots(self) -> usize {
        match self {
            Shape::Three(l) => l.slots(),
            Shape::Four(l) => l.slots(),
        }
    }

    fn arity(self) -> u8 {
        match self {
            Shape::Three(_) => 3,
            Shape::Four(_) => 4,
        }
    }

    fn segments(self) -> (u32, u32) {
        match self {
            Shape::Three(l) => (l.segment_length, l.segment_count),
            Shape::Four(l) => (l.segment_length, l.segment_count),
        }
    }
}

/// A binary fuse filter with `w`-bit fingerprints, `1 <= w <= 32`, and 3 or 4 slots per key.
///
/// ```
/// use siftdb_filter::prelude::*;
/// use siftdb_filter::{hash_keys, FilterView, PackedBinaryFuse};
/// let keys = hash_keys(&["apple", "banana", "cherry"]);
/// let f = PackedBinaryFuse::build(&keys, 12).unwrap(); // FPR 2^-12
/// assert!(f.contains(b"apple"));
/// assert_eq!(f.fingerprint_bits(), 12);
/// let bytes = f.to_bytes();
/// assert_eq!(PackedBinaryFuse::from_bytes(&bytes).unwrap(), f);
/// assert!(FilterView::parse(&bytes).unwrap().contains(b"banana"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedBinaryFuse {
    seed: u64,
    keys: u64,
    bits: u32,
    shape: Shape,
    /// The payload: packed fingerprints, then [`TAIL`] zero bytes.
    packed: Vec<u8>,
}

impl PackedBinaryFuse {
    /// The width whose FPR `2^-w` is nearest `fpr` on a log scale, `round(log2(1/fpr))`,
    /// clamped to `1..=32` (so an FPR above `2^-0.5`, nearer no filter than 1 bit, gives 1: the
    /// engine leaves such a level unfiltered instead).
    pub fn bits_for_fpr(fpr: f64) -> u32 {
        if fpr.is_nan() || fpr >= 0.5 {
            return 1;
        }
        ((1.0 / fpr).log2().round() as u32).clamp(1, MAX_FINGERPRINT_BITS)
    }

    /// Builds the 4-wise filter (the smaller arity) with `fingerprint_bits`-bit fingerprints
    /// over the distinct values of `hashes`.
    pub fn build(hashes: &[u64], fingerprint_bits: u32) -> Result<PackedBinaryFuse> {
        PackedBinaryFuse::build_with(hashes, fingerprint_bits, 4, DEFAULT_SEED)
    }

    /// Builds the filter of `arity` (3 or 4) slots per key with `fingerprint_bits`-bit
    /// fingerprints (1..=32), trying the seeds derived from `seed` in a fixed order. Fails with
    /// [`FilterError::InvalidArgument`] for another arity or width or above 2^31 distinct keys, and
    /// with [`FilterError::Full`] after 100 failed attempts.
    pub fn build_with(
        hashes: &[u64],
        fingerprint_bits: u32,
        arity: u32,
        seed: u64,
    ) -> Result<PackedBinaryFuse> {
        if !(1..=MAX_FINGERPRINT_BITS).contains(&fingerprint_bits) {
            return Err(FilterError::invalid(format!(
                "fingerprint_bits {fingerprint_bits} is out of range: 1..={MAX_FINGERPRINT_BITS}"
            )));
        }
        let bits = fingerprint_bits;
        let kind = FilterKind::PackedBinaryFuse;
        let (seed, keys, shape, fps) = match arity {
            3 | 4 if hashes.is_empty() => {
                let shape = if arity == 3 {
                    Shape::Three(FuseLayout::EMPTY)
                } else {
                    Shape::Four(FuseLayout::EMPTY)
                };
                (0, 0, shape, Vec::new())
            }
            3 => {
                let b = peel::construct::<3, FuseLayout<3>>(hashes, seed, kind)?;
                let fps =
                    peel::assign_with(&b.layout, &b.order, &b.which, |h| fingerprint(h, bits));
                (b.seed, b.keys, Shape::Three(b.layout), fps)
            }
            4 => {
                let b = peel::construct::<4, FuseLayout<4>>(hashes, seed, kind)?;
                let fps =
                    peel::assign_with(&b.layout, &b.order, &b.which, |h| fingerprint(h, bits));
                (b.seed, b.keys, Shape::Four(b.layout), fps)
            }
            _ => {
                return Err(FilterError::invalid(format!("arity {arity} is out of range: 3 or 4")))
            }
        };
        Ok(PackedBinaryFuse { seed, keys: keys as u64, bits, shape, packed: pack(&fps, bits) })
    }

    /// Fingerprint width in bits; the FPR is `2^-fingerprint_bits`.
    pub fn fingerprint_bits(&self) -> u32 {
        self.bits
    }

    /// Slots per key: 3 or 4.
    pub fn arity(&self) -> u32 {
        u32::from(self.shape.arity())
    }

    /// The false-positive rate, `2^-fingerprint_bits`.
    pub fn fpr(&self) -> f64 {
        2f64.powi(-(self.bits as i32))
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

    /// Fingerprint bits per distinct key (`slots * w / keys`); 0 for the empty filter.
    pub fn bits_per_key(&self) -> f64 {
        if self.keys == 0 {
            return 0.0;
        }
        (self.shape.slots() as f64 * f64::from(self.bits)) / self.keys as f64
    }

    /// Reads a serialized filter into an owned one (copies the payload; use
    /// [`PackedBinaryFuseView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<PackedBinaryFuse> {
        let env = envelope::decode_kind(bytes, FilterKind::PackedBinaryFuse)?;
        let v = PackedBinaryFuseView::parse(&env)?;
        let packed = v.packed.to_vec();
        Ok(PackedBinaryFuse { seed: v.seed, keys: v.keys, bits: v.bits, shape: v.shape, packed })
    }
}

impl Filter for PackedBinaryFuse {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        probe(&self.packed, self.shape, self.bits, mix64(hash, self.seed))
    }

    fn kind(&self) -> FilterKind {
        FilterKind::PackedBinaryFuse
    }

    fn memory_bytes(&self) -> usize {
        self.packed.len()
    }

    fn to_bytes(&self) -> Vec<u8> {
        let (segment_length, segment_count) = self.shape.segments();
        let params = ParamWriter::new()
            .u64(self.seed)
            .u64(self.keys)
            .u32(segment_length)
            .u32(segment_count)
            .u8(self.shape.arity())
            .u8(self.bits as u8)
            .finish();
        envelope::encode(self.kind(), &params, |out| out.extend_from_slice(&self.packed))
    }
}

/// A packed binary fuse filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct PackedBinaryFuseView<'a> {
    seed: u64,
    keys: u64,
    bits: u32,
    shape: Shape,
    packed: &'a [u8],
}

impl<'a> PackedBinaryFuseView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind tag 16: the arity is 3
    /// or 4, the width 1..=32, the layout valid as for the byte-wide filters, the payload
    /// exactly the packed fingerprints plus 7 zero bytes, with zero bits past the last
    /// fingerprint. Every violation is [`FilterError::Corruption`].
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<PackedBinaryFuseView<'a>> {
        let kind = FilterKind::PackedBinaryFuse;
        if env.kind != kind {
            return Err(FilterError::invalid(format!("expected {kind}, found {}", env.kind)));
        }
        let mut r = ParamReader::new(env);
        let seed = r.u64("seed")?;
        let keys = r.u64("keys")?;
        let segment_length = r.u32("segment_length")?;
        let segment_count = r.u32("segment_count")?;
        let arity = r.u8("arity")?;
        let bits = u32::from(r.u8("fingerprint_bits")?);
        r.finish()?;
        let invalid = |what: String| ParamReader::new(env).invalid(what);
        if !(1..=MAX_FINGERPRINT_BITS).contains(&bits) {
            return Err(invalid(format!("fingerprint_bits {bits} is not in 1..=32")));
        }
        let shape = match arity {
            3 => {
                let l = FuseLayout::<3> { segment_length, segment_count };
                l.validate().map_err(invalid)?;
                Shape::Three(l)
            }
            4 => {
                let l = FuseLayout::<4> { segment_length, segment_count };
                l.validate().map_err(invalid)?;
                Shape::Four(l)
            }
            _ => return Err(invalid(format!("arity {arity} is not 3 or 4"))),
        };
        let slots = shape.slots() as u64;
        if (keys == 0) != (slots == 0) || keys > slots {
            return Err(invalid(format!("keys {keys} with {slots} slots")));
        }
        // In u64: up to 2^32 - 1 slots of 32 bits do not fit a 32-bit usize. Once the payload
        // holds them, every bit index fits u64 and every byte index the payload's usize.
        let data = (slots * u64::from(bits)).div_ceil(8);
        if env.payload.len() as u64 != data + TAIL as u64 {
            return Err(FilterError::corruption(
                format!(
                    "{kind} payload is {} bytes, parameters imply {} ({slots} fingerprints of \
                     {bits} bits, then {TAIL} zero bytes)",
                    env.payload.len(),
                    data + TAIL as u64
                ),
                None,
            ));
        }
        let used_in_last = (slots * u64::from(bits) % 8) as u32;
        // `data` is at most the payload's length (checked above), so the split succeeds.
        let clean = env.payload.split_at_checked(data as usize).is_some_and(|(body, tail)| {
            let stray_bits =
                used_in_last != 0 && body.last().is_some_and(|&b| b >> used_in_last != 0);
            !stray_bits && tail.iter().all(|&b| b == 0)
        });
        if !clean {
            return Err(FilterError::corruption(
                format!("{kind} payload has nonzero bits after the last fingerprint"),
                None,
            ));
        }
        Ok(PackedBinaryFuseView { seed, keys, bits, shape, packed: env.payload })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        probe(self.packed, self.shape, self.bits, mix64(hash, self.seed))
    }

    /// Starts loading the fingerprints `contains_hash(hash)` reads (a hint: see
    /// [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        let h = mix64(hash, self.seed);
        match self.shape {
            Shape::Three(l) => prefetch_fields(self.packed, &l, self.bits, h),
            Shape::Four(l) => prefetch_fields(self.packed, &l, self.bits, h),
        }
    }

    /// Fingerprint width in bits.
    pub fn fingerprint_bits(&self) -> u32 {
        self.bits
    }

    /// The false-positive rate, `2^-fingerprint_bits`.
    pub fn fpr(&self) -> f64 {
        2f64.powi(-(self.bits as i32))
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

/// The fingerprint of a seed-mixed hash: the low `bits` bits of `h ^ (h >> 32)` (for 8 and 16
/// bits, the byte-wide filters' fingerprint).
#[inline(always)]
fn fingerprint(h: u64, bits: u32) -> u32 {
    ((h ^ (h >> 32)) & mask(bits)) as u32
}

#[inline(always)]
fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// Bytes holding `slots` packed fingerprints of `bits` bits (of a filter being built: it fits
/// memory, so the product fits usize).
fn packed_len(slots: usize, bits: u32) -> usize {
    (slots * bits as usize).div_ceil(8)
}

/// The byte holding the first bit of fingerprint `i` and the bit's offset in it. The bit index
/// is computed in u64: on a 32-bit target `i * bits` can pass `usize::MAX` while the byte index
/// (at most the payload's length) cannot.
#[inline(always)]
fn bit_position(i: usize, bits: u32) -> (usize, u32) {
    let bit = i as u64 * u64::from(bits);
    ((bit / 8) as usize, (bit % 8) as u32)
}

/// Packs `fps` (each below `2^bits`) into the payload: the bit string, then [`TAIL`] zeros.
fn pack(fps: &[u32], bits: u32) -> Vec<u8> {
    let mut out = vec![0u8; packed_len(fps.len(), bits) + TAIL];
    for (i, &fp) in fps.iter().enumerate() {
        let (at, shift) = bit_position(i, bits);
        let word = u64::from_le_bytes(out[at..at + 8].try_into().expect("8 bytes"));
        let word = word | (u64::from(fp) << shift);
        out[at..at + 8].copy_from_slice(&word.to_le_bytes());
    }
    out
}

/// Fingerprint `i` of a payload (its length checked by the parser or set by [`pack`]: `i <
/// slots` of `packed_len(slots, bits) + TAIL` bytes, so the 8 bytes read lie inside it).
#[inline(always)]
fn field(packed: &[u8], i: usize, bits: u32) -> u32 {
    let (at, shift) = bit_position(i, bits);
    let word = u64::from_le_bytes(packed[at..at + 8].try_into().expect("8 bytes"));
    ((word >> shift) & mask(bits)) as u32
}

#[inline(always)]
fn probe(packed: &[u8], shape: Shape, bits: u32, h: u64) -> bool {
    match shape {
        Shape::Three(l) => probe_layout(packed, &l, bits, h),
        Shape::Four(l) => probe_layout(packed, &l, bits, h),
    }
}

#[inline(always)]
fn probe_layout<const N: usize>(packed: &[u8], l: &FuseLayout<N>, bits: u32, h: u64) -> bool
where
    Arity<N>: FuseArity,
{
    if l.slots() == 0 {
        return false;
    }
    let x = l.positions(h).iter().fold(0, |x, &p| x ^ field(packed, p, bits));
    fingerprint(h, bits) == x
}

#[inline(always)]
fn prefetch_fields<const N: usize>(packed: &[u8], l: &FuseLayout<N>, bits: u32, h: u64)
where
    Arity<N>: FuseArity,
{
    if l.slots() == 0 {
        return;
    }
    for p in l.positions(h) {
        prefetch_read(packed[bit_position(p, bits).0..].as_ptr());
    }
}
