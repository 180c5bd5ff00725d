//! The bit-packed bucket table and the partial-key hash derivation, shared by the owned filter,
//! its relocation search and its zero-copy view. docs/format.md#cuckoo is the format.
//!
//! Table layout: bucket `i` is the `4 f`-bit field at bit offset `i * 4 f` of the payload's bit
//! stream (bit `p` of the stream is bit `p % 64` of u64 word `p / 64`); slot `s` of a bucket is
//! its `f`-bit lane at bucket bit `s * f`. A lane holding 0 is empty. With `f = 12` a bucket is
//! 48 bits and may straddle two words; with 8 or 16 it never does.

use crate::envelope::Words;
use crate::hash::mix64;

/// Slots per bucket (`b` in the paper).
pub const SLOTS: u32 = 4;
/// Fingerprint widths the filter supports.
pub const FINGERPRINT_BITS: [u32; 3] = [8, 12, 16];
/// Largest table: 2^32 buckets (2^34 slots, 32 GiB at 16 bits). Bucket indexes then use at most
/// the low 32 bits of the key hash and fingerprints the top 16, so the two never overlap.
pub const MAX_BUCKET_LOG2: u32 = 32;
/// Seed of the re-mix `H(fp)` that gives a fingerprint's bucket offset (`i2 = i1 ^ H(fp)`).
const ALT_SEED: u64 = 0x5EED_C0C0_A17B_0C4E;

/// The derived constants of one (fingerprint width, bucket count) pair. Every value here is a
/// pure function of the two persisted parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Fingerprint width `f` in bits: 8, 12 or 16.
    pub fp_bits: u32,
    /// log2 of the bucket count.
    pub bucket_log2: u32,
    /// `4 f`, bits per bucket.
    bucket_bits: u32,
    /// Low `4 f` bits set.
    bucket_mask: u64,
    /// Bit 0 of every lane set (`0x0001_0001_0001_0001` for f = 16).
    lane_lo: u64,
    /// Top bit of every lane set.
    lane_hi: u64,
    /// Low `f` bits set.
    fp_mask: u64,
    /// `buckets - 1`.
    index_mask: u64,
}

impl Geometry {
    /// Validates the two parameters; the error text names the bad one.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn new(fp_bits: u32, bucket_log2: u32) -> Result<Geometry, String> {
        if !FINGERPRINT_BITS.contains(&fp_bits) {
            return Err(format!("fingerprint bits {fp_bits} is not one of 8, 12, 16"));
        }
        if bucket_log2 > MAX_BUCKET_LOG2 {
            return Err(format!("bucket count 2^{bucket_log2} exceeds 2^{MAX_BUCKET_LOG2}"));
        }
        let bucket_bits = SLOTS * fp_bits;
        let bucket_mask = if bucket_bits == 64 { u64::MAX } else { (1 << bucket_bits) - 1 };
        let lane_lo = (0..SLOTS).fold(0u64, |acc, s| acc | 1 << (s * fp_bits));
        Ok(Geometry {
            fp_bits,
            bucket_log2,
            bucket_bits,
            bucket_mask,
            lane_lo,
            lane_hi: lane_lo << (fp_bits - 1),
            fp_mask: (1 << fp_bits) - 1,
            index_mask: (1u64 << bucket_log2) - 1,
        })
    }

    /// Number of buckets, `2^bucket_log2`.
    pub fn buckets(&self) -> u64 {
        1 << self.bucket_log2
    }

    /// Number of slots, `4 * buckets`.
    pub fn slots(&self) -> u64 {
        self.buckets() * SLOTS as u64
    }

    /// Bits of table payload, `slots * f`.
    pub fn table_bits(&self) -> u64 {
        self.slots() * self.fp_bits as u64
    }

    /// u64 words of payload, `ceil(table_bits / 64)`.
    pub fn word_count(&self) -> u64 {
        self.table_bits().div_ceil(64)
    }

    /// The fingerprint of a key hash: its top `f` bits, with 0 (the empty marker) mapped to 1.
    #[inline(always)]
    pub fn fingerprint(&self, hash: u64) -> u64 {
        let fp = hash >> (64 - self.fp_bits);
        fp + (fp == 0) as u64
    }

    /// The first candidate bucket: the low `bucket_log2` bits of the key hash.
    #[inline(always)]
    pub fn index(&self, hash: u64) -> u64 {
        hash & self.index_mask
    }

    /// The other candidate bucket of a fingerprint stored in bucket `i`: `i ^ H(fp)`, where
    /// `H(fp) = mix64(fp, ALT_SEED) & (buckets - 1)`, forced to 1 when it is 0 and there are at
    /// least two buckets. Because the offset depends only on `fp`, the map is an involution:
    /// `alt(alt(i, fp), fp) = i`, which is what lets a fingerprint move without its key. Forcing
    /// a non-zero offset gives every key two distinct buckets whenever two exist.
    #[inline(always)]
    pub fn alt(&self, bucket: u64, fp: u64) -> u64 {
        let off = mix64(fp, ALT_SEED) & self.index_mask;
        bucket ^ (off | (off == 0) as u64 & self.index_mask)
    }

    /// Reads bucket `i` (`i < buckets`) as a `4 f`-bit value, lane `s` in bits `[s f, (s+1) f)`.
    #[inline(always)]
    pub fn read<W: Words<u64> + ?Sized>(&self, words: &W, bucket: u64) -> u64 {
        let pos = bucket * self.bucket_bits as u64;
        let (w, sh) = ((pos / 64) as usize, (pos % 64) as u32);
        let mut v = words.word(w) >> sh;
        if sh + self.bucket_bits > 64 {
            v |= words.word(w + 1) << (64 - sh);
        }
        v & self.bucket_mask
    }

    /// Writes bucket `i` (the inverse of [`Geometry::read`]); `v` must fit in `4 f` bits.
    #[inline(always)]
    pub fn write(&self, words: &mut [u64], bucket: u64, v: u64) {
        let pos = bucket * self.bucket_bits as u64;
        let (w, sh) = ((pos / 64) as usize, (pos % 64) as u32);
        words[w] = (words[w] & !(self.bucket_mask << sh)) | (v << sh);
        if sh + self.bucket_bits > 64 {
            let carried = 64 - sh;
            words[w + 1] = (words[w + 1] & !(self.bucket_mask >> carried)) | (v >> carried);
        }
    }

    /// Word index holding the first bit of bucket `i`, for prefetching.
    #[inline(always)]
    pub fn word_of(&self, bucket: u64) -> usize {
        (bucket * self.bucket_bits as u64 / 64) as usize
    }

    /// Lanes of `bucket` equal to `fp`, as a non-zero mask whose lowest set bit is the top bit of
    /// the lowest matching lane, or 0 when no lane matches.
    ///
    /// SWAR zero-lane test on `x = bucket ^ (fp in every lane)`: `(x - lo) & !x & hi`. If no lane
    /// of `x` is zero, no subtraction borrows across lanes and a lane's top bit can only be set in
    /// `x_lane - 1` if it was set in `x_lane`, so the result is 0. If some lane is zero, the lowest
    /// such lane receives no borrow, becomes all ones, and its top bit survives. Higher lanes may
    /// be flagged spuriously after a borrow, so only the lowest flag names a lane; any flag at all
    /// is exact.
    #[inline(always)]
    pub fn matches(&self, bucket: u64, fp: u64) -> u64 {
        let x = bucket ^ (fp * self.lane_lo);
        x.wrapping_sub(self.lane_lo) & !x & self.lane_hi
    }

    /// The lowest lane of `bucket` holding `fp` (0 finds an empty slot), if any.
    #[inline(always)]
    pub fn find(&self, bucket: u64, fp: u64) -> Option<u32> {
        let m = self.matches(bucket, fp);
        (m != 0).then(|| m.trailing_zeros() / self.fp_bits)
    }

    /// Lane `s` of a bucket value.
    #[inline(always)]
    pub fn lane(&self, bucket: u64, s: u32) -> u64 {
        (bucket >> (s * self.fp_bits)) & self.fp_mask
    }

    /// `bucket` with lane `s` replaced by `fp`.
    #[inline(always)]
    pub fn with_lane(&self, bucket: u64, s: u32, fp: u64) -> u64 {
        let sh = s * self.fp_bits;
        (bucket & !(self.fp_mask << sh)) | (fp << sh)
    }

    /// Number of occupied (non-zero) lanes in a bucket value.
    pub fn occupied(&self, bucket: u64) -> u32 {
        (0..SLOTS).filter(|&s| self.lane(bucket, s) != 0).count() as u32
    }

    /// Bits of the last payload word beyond the table, which must be zero.
    pub fn spare_mask(&self) -> u64 {
        match self.table_bits() % 64 {
            0 => 0,
            used => !0u64 << used,
        }
    }

    /// The membership test shared by the owned filter and its view: is the key's fingerprint in
    /// either candidate bucket?
    #[inline(always)]
    pub fn probe<W: Words<u64> + ?Sized>(&self, words: &W, hash: u64) -> bool {
        let fp = self.fingerprint(hash);
        let i1 = self.index(hash);
        self.matches(self.read(words, i1), fp) != 0
            || self.matches(self.read(words, self.alt(i1, fp)), fp) != 0
    }
}

/// FPR of a cuckoo filter with `f`-bit fingerprints at load `alpha` (occupied / total slots):
/// a query compares its fingerprint with the `2 b alpha = 8 alpha` fingerprints expected in its
/// two buckets, so FPR = `1 - (1 - p)^(8 alpha)` (Fan et al. 2014, section 5.1), about
/// `8 alpha / 2^f`. `p` is the chance that two fingerprints are equal: with 0 remapped to 1, the
/// value 1 has probability `2 / 2^f` and every other non-zero value `1 / 2^f`, so
/// `p = ((2^f - 2) + 4) / 4^f = (2^f + 2) / 4^f`.
pub fn cuckoo_fpr(fp_bits: u32, alpha: f64) -> f64 {
    let q = (fp_bits as f64).exp2();
    let p = (q + 2.0) / (q * q);
    1.0 - (1.0 - p).powf(2.0 * SLOTS as f64 * alpha)
}
