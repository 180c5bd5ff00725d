//! The binary fuse layout (Graf and Lemire 2022), for arity 3 and 4: `segment_count + N - 1`
//! segments of `segment_length` (a power of two) slots; a key picks a window of `N` consecutive
//! segments and has one slot in each. The locality of the windows lets peeling succeed with far
//! fewer slots than the xor filter's independent blocks (Walzer's spatially coupled
//! hypergraphs): about `1.125 n` for `N = 3` and `1.075 n` for `N = 4` at large `n`, against
//! `1.23 n`.
//!
//! Sizing (the paper's formulas; [`FuseArity`] holds the constants of each arity):
//! `segment_length = 2^floor(ln n / ln B + D)`, capped at 2^18;
//! `size_factor = max(F, a + b ln(n0) / ln n)`;
//! `segment_count = max(1, ceil(round(n * size_factor) / segment_length) - (N - 1))`.
//! For `n < 2` the formulas are evaluated at `n = 2` (`ln 1 = 0` would divide by zero).

use super::peel::{Layout, Sizing};
use super::Fingerprint;
use crate::hash::fast_range64;
use crate::FilterKind;

/// Largest segment length, from the paper (and its reference code's 18-bit cap).
pub(super) const MAX_SEGMENT_LENGTH: u32 = 1 << 18;

/// The arity `N` of a binary fuse filter, as a type: [`FuseArity`] is implemented for
/// `Arity<3>` (3-wise, kind tags 10 and 11) and `Arity<4>` (4-wise, tags 14 and 15) only, since
/// each arity's kind tags are part of the format and its sizing constants were fitted by the
/// paper's authors.
pub struct Arity<const N: usize>;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Arity<3> {}
    impl Sealed for super::Arity<4> {}
}

/// The sizing constants and kind tags of one binary fuse arity (sealed: 3 and 4).
///
/// Sources: Graf and Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters", JEA 27
/// (2022), and the authors' reference code, which spells the formulas out (FastFilter/
/// fastfilter_cpp `src/xorfilter/xor_binary_fuse_filter.h`, `calculateSegmentLength` and
/// `calculateSizeFactor`; the same constants in FastFilter/xor_singleheader
/// `include/binaryfusefilter.h`). docs/format.md#binary-fuse4, cites them.
pub trait FuseArity: sealed::Sealed {
    /// `B` of `segment_length = 2^floor(ln n / ln B + D)`.
    const SEGMENT_BASE: f64;
    /// `D` of the segment length formula.
    const SEGMENT_SHIFT: f64;
    /// `F`, the size factor's floor: the large-`n` peeling threshold plus a margin.
    const FACTOR_FLOOR: f64;
    /// `a` of `size_factor = max(F, a + b ln(n0) / ln n)`.
    const FACTOR_BASE: f64;
    /// `b` of the size factor.
    const FACTOR_SLOPE: f64;
    /// `n0` of the size factor.
    const FACTOR_PIVOT: f64;
    /// The kind tag of the filter of this arity with `W`-bit fingerprints.
    fn kind<W: Fingerprint>() -> FilterKind;
}

impl FuseArity for Arity<3> {
    const SEGMENT_BASE: f64 = 3.33;
    const SEGMENT_SHIFT: f64 = 2.25;
    const FACTOR_FLOOR: f64 = 1.125;
    const FACTOR_BASE: f64 = 0.875;
    const FACTOR_SLOPE: f64 = 0.25;
    const FACTOR_PIVOT: f64 = 1e6;
    fn kind<W: Fingerprint>() -> FilterKind {
        W::FUSE_KIND
    }
}

impl FuseArity for Arity<4> {
    const SEGMENT_BASE: f64 = 2.91;
    const SEGMENT_SHIFT: f64 = -0.5;
    const FACTOR_FLOOR: f64 = 1.075;
    const FACTOR_BASE: f64 = 0.77;
    const FACTOR_SLOPE: f64 = 0.305;
    const FACTOR_PIVOT: f64 = 6e5;
    fn kind<W: Fingerprint>() -> FilterKind {
        W::FUSE4_KIND
    }
}

/// `segment_count + N - 1` segments of `segment_length` slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FuseLayout<const N: usize> {
    pub(super) segment_length: u32,
    pub(super) segment_count: u32,
}

impl<const N: usize> FuseLayout<N>
where
    Arity<N>: FuseArity,
{
    /// The empty filter's layout: no segments, no slots.
    pub(super) const EMPTY: FuseLayout<N> = FuseLayout { segment_length: 0, segment_count: 0 };

    /// The same array cut into segments of half the length: `2 * segment_count + N - 1` of them
    /// (`(2c + N - 1) L/2 = (c + N - 1) L` slots when `L` is even).
    ///
    /// Odd-numbered build attempts use this layout. Just after the formula doubles the segment
    /// length (3-wise: n about 3,400, 11,200, ...) the array holds few long segments and a single
    /// attempt fails with probability up to 0.98 (measured at n = 11,504: 97 of 100 seeds;
    /// FastFilter xor_singleheader issue 77), while the halved layout of the same size fails in
    /// about 3%. Alternating keeps the size and makes 100 attempts ample at every n.
    fn halved(self) -> FuseLayout<N> {
        if self.segment_length < 2 {
            return self;
        }
        FuseLayout {
            segment_length: self.segment_length / 2,
            segment_count: 2 * self.segment_count + (N as u32 - 1),
        }
    }

    /// Checks parameters read from bytes: together with a payload of [`Layout::slots`] words,
    /// they guarantee every position is in range (see [`Layout::positions`]).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub(super) fn validate(self) -> std::result::Result<(), String> {
        let FuseLayout { segment_length: len, segment_count: count } = self;
        if len == 0 && count == 0 {
            return Ok(()); // the empty filter
        }
        if !len.is_power_of_two() || len > MAX_SEGMENT_LENGTH {
            return Err(format!("segment_length {len} is not a power of two <= 2^18"));
        }
        let slots = (u64::from(count) + N as u64 - 1) * u64::from(len);
        if count == 0 || slots > u64::from(u32::MAX) {
            return Err(format!(
                "segment_count {count} is not in 1..=2^32/segment_length - {}",
                N - 1
            ));
        }
        Ok(())
    }
}

impl<const N: usize> Sizing<N> for FuseLayout<N>
where
    Arity<N>: FuseArity,
{
    /// The paper's sizing (module documentation), for `n >= 1`.
    fn for_keys(n: usize) -> FuseLayout<N> {
        let ln_n = (n.max(2) as f64).ln();
        let exponent = (ln_n / Arity::<N>::SEGMENT_BASE.ln() + Arity::<N>::SEGMENT_SHIFT).floor();
        // A negative exponent (4-wise below n = 3) saturates to 0 in the cast: one-slot segments.
        let max_exponent = MAX_SEGMENT_LENGTH.trailing_zeros();
        let segment_length = 1u32 << (exponent as u32).min(max_exponent);
        let size_factor = f64::max(
            Arity::<N>::FACTOR_FLOOR,
            Arity::<N>::FACTOR_BASE
                + Arity::<N>::FACTOR_SLOPE * Arity::<N>::FACTOR_PIVOT.ln() / ln_n,
        );
        let capacity = (n as f64 * size_factor).round() as u64;
        let segments =
            capacity.div_ceil(u64::from(segment_length)).saturating_sub(N as u64 - 1).max(1);
        FuseLayout { segment_length, segment_count: segments as u32 }
    }

    /// Even attempts use the base layout, odd ones [`FuseLayout::halved`].
    fn for_attempt(self, attempt: u32) -> FuseLayout<N> {
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

impl<const N: usize> Layout<N> for FuseLayout<N>
where
    Arity<N>: FuseArity,
{
    #[inline(always)]
    fn slots(&self) -> usize {
        (self.segment_count as usize + N - 1) * self.segment_length as usize
    }

    /// `h0 = fastrange64(h, segment_count * L)` (segment `s`, any offset); slot `j >= 1` is
    /// `(h0 + j L) ^ (o_j & (L - 1))` with `o_1 = h >> 18`, `o_2 = h` (the 3-wise formulas of
    /// tags 10 and 11, unchanged) and `o_3 = (h * 0x9E3779B97F4A7C15 mod 2^64) >> 46`. With `L`
    /// a power of two, xor-ing an offset below `L` keeps a slot inside its aligned segment, so
    /// the `N` slots lie in segments `s, s + 1, ..., s + N - 1`: distinct, and below
    /// `(segment_count + N - 1) * L`.
    ///
    /// Why `o_3` is a product: `h0` is a function of the top bits of `h` (about `log2(cL)` of
    /// them, up to 32), so keys sharing slot 0 share those bits, and bits 36..53 of `h` as `o_3`
    /// would confine their slot 3 to a fraction of the segment at large `n` (a sixteenth at a
    /// million keys). An odd multiple of `h` (a Weyl step per unit of `h`) has top bits spread
    /// over the whole segment for any such keys.
    #[inline(always)]
    fn positions(&self, h: u64) -> [usize; N] {
        let len = self.segment_length as u64;
        let mask = len.wrapping_sub(1);
        let h0 = fast_range64(h, self.segment_count as u64 * len);
        // Entries beyond `N` are dead code for the 3-wise layout and compiled away.
        let offsets = [0, h >> 18, h, h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 46];
        let mut p = [0usize; N];
        for (j, slot) in p.iter_mut().enumerate() {
            *slot = ((h0 + j as u64 * len) ^ (offsets[j] & mask)) as usize;
        }
        p
    }
}
