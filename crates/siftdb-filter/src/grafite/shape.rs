//! The hash and the query of a Grafite filter over its integer images: everything but the
//! payload words and the byte-key prefix, shared by [`super::Grafite`] and
//! [`super::GrafiteView`]. The math is in the parent module's documentation.

use super::{elias_fano, image};
use crate::envelope::Words;
use crate::rng::SplitMix64;

/// The Mersenne prime `2^61 - 1` of the block hash.
const P61: u64 = (1 << 61) - 1;

/// `r = n 2^(floor(B) - 2)`, clamped to `1..=u64::MAX`.
pub(super) fn universe(n: u64, bits_per_key: f64) -> u64 {
    let shift = bits_per_key.floor() as u32 - 2;
    ((n as u128) << shift).clamp(1, u64::MAX as u128) as u64
}

/// `l = floor(log2(r / n))` (0 for the empty set).
pub(super) fn low_bits(n: u64, universe: u64) -> u32 {
    universe.checked_div(n).map_or(0, |q| 63 - q.max(1).leading_zeros())
}

/// The hash's `a` in `[1, p)` and `b` in `[0, p)`: SplitMix64 of the seed, two draws by
/// multiply-shift ([`SplitMix64::below`]).
pub(super) fn hash_params(seed: u64) -> (u64, u64) {
    let mut rng = SplitMix64::new(seed);
    let a = 1 + rng.below(P61 - 1);
    (a, rng.below(P61))
}

/// `v mod (2^61 - 1)` for `v < 2^126`.
fn mod_p61(v: u128) -> u64 {
    let v = (v & P61 as u128) + (v >> 61); // < 2^65 + 2^61
    let v = ((v & P61 as u128) + (v >> 61)) as u64; // < 2^61 + 16
    if v >= P61 {
        v - P61
    } else {
        v
    }
}

/// Everything but the payload words and the prefix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Shape {
    pub(super) seed: u64,
    pub(super) bits_per_key: f64,
    pub(super) max_range: u64,
    /// `n`, distinct images.
    pub(super) num_images: u64,
    /// `r`.
    pub(super) universe: u64,
    /// The hash's `a` and `b`, derived from the seed.
    pub(super) mul: u64,
    pub(super) add: u64,
    /// `w`, image bytes.
    pub(super) window: u8,
    pub(super) ef: elias_fano::Shape,
}

impl Shape {
    /// `h(x) = ((a * floor(x / r) + b) mod p + x) mod r`.
    pub(super) fn code(&self, x: u64) -> u64 {
        let r = self.universe;
        let q = x / r;
        let t = mod_p61(self.mul as u128 * q as u128 + self.add as u128) % r;
        let (sum, over) = t.overflowing_add(x - q * r); // both < r: the true sum is < 2r
        if over || sum >= r {
            sum.wrapping_sub(r)
        } else {
            sum
        }
    }

    pub(super) fn expected_fpr(&self, range_len: u64) -> f64 {
        (range_len as f64 * self.num_images as f64 / self.universe as f64).min(1.0)
    }

    /// The range query in image space, `[lo, hi]` inclusive.
    pub(super) fn contains_u64<T: Words<u64> + ?Sized>(
        &self,
        seq: &elias_fano::Seq<'_, T>,
        lo: u64,
        hi: u64,
    ) -> bool {
        let r = self.universe;
        if lo > hi || self.num_images == 0 {
            return false;
        }
        if hi - lo >= r {
            return true; // longer than r: no bound, answer "maybe"
        }
        // Split at the r-block boundary (a range no longer than r meets at most two blocks).
        let block_end = (lo / r * r).saturating_add(r - 1);
        let part = |x: u64, y: u64| {
            let (c, d) = (self.code(x), y - x);
            if d <= r - 1 - c {
                seq.any_in(c, c + d)
            } else {
                seq.any_in(c, r - 1) || seq.any_in(0, d - (r - c)) // wraps past r - 1
            }
        };
        if hi <= block_end {
            part(lo, hi)
        } else {
            part(lo, block_end) || part(block_end + 1, hi)
        }
    }

    pub(super) fn contains_bytes<T: Words<u64> + ?Sized>(
        &self,
        seq: &elias_fano::Seq<'_, T>,
        prefix: &[u8],
        lo: &[u8],
        hi: &[u8],
    ) -> bool {
        if lo > hi || self.num_images == 0 {
            return false;
        }
        match image::query_images(prefix, self.window, lo, hi) {
            Some((a, b)) => self.contains_u64(seq, a, b),
            None => false,
        }
    }

    pub(super) fn expected_fpr_for(&self, prefix: &[u8], lo: &[u8], hi: &[u8]) -> f64 {
        if lo > hi || self.num_images == 0 {
            return 0.0;
        }
        image::query_images(prefix, self.window, lo, hi)
            .map_or(0.0, |(a, b)| self.expected_fpr((b - a).saturating_add(1)))
    }
}
