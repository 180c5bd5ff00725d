//! Sizing of Bloom-family filters: a builder that turns a target FPR or a bits-per-key budget and
//! an expected key count into a concrete shape (bits, probes), using each layout's own formula.

use crate::error::{FilterError, Result};
use crate::math;
use std::marker::PhantomData;

/// Largest table any Bloom-family filter will allocate: 2^40 bits (128 GiB). Requests beyond it
/// are invalid arguments rather than allocation failures.
pub const MAX_BITS: u64 = 1 << 40;

/// What a filter is sized from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sizing {
    /// A target false-positive rate in `(0, 1)`.
    FalsePositiveRate(f64),
    /// A memory budget in bits per expected key, in `(0, 1024]`.
    BitsPerKey(f64),
}

/// A Bloom-family layout that can be sized.
pub trait BloomShape: Sized {
    /// A filter of at least `num_bits` bits (a layout rounds up to its block or word size) with
    /// `probes` bits set per key. Invalid shapes are [`FilterError::InvalidArgument`].
    fn from_shape(num_bits: u64, probes: u32) -> Result<Self>;

    /// The probe count this layout uses at `bits_per_key` (the textbook `round(b ln 2)` unless
    /// the layout's own formula says otherwise).
    fn probes_for_bits_per_key(bits_per_key: f64) -> u32 {
        math::standard_optimal_probes(bits_per_key)
    }

    /// The layout's theoretical FPR at `bits_per_key` with `probes`.
    fn theoretical_fpr(bits_per_key: f64, probes: u32) -> f64 {
        math::standard_bloom_fpr(bits_per_key, probes)
    }

    /// A builder targeting false-positive rate `fpr`.
    fn with_false_pos(fpr: f64) -> BloomBuilder<Self> {
        BloomBuilder { sizing: Sizing::FalsePositiveRate(fpr), _f: PhantomData }
    }

    /// A builder spending `bits_per_key` bits per expected key.
    fn with_bits_per_key(bits_per_key: f64) -> BloomBuilder<Self> {
        BloomBuilder { sizing: Sizing::BitsPerKey(bits_per_key), _f: PhantomData }
    }
}

/// Sizes a filter of layout `F`; finish with [`BloomBuilder::expected_items`].
#[derive(Debug, Clone, Copy)]
pub struct BloomBuilder<F> {
    sizing: Sizing,
    _f: PhantomData<F>,
}

impl<F: BloomShape> BloomBuilder<F> {
    /// A builder from an explicit [`Sizing`].
    pub fn new(sizing: Sizing) -> BloomBuilder<F> {
        BloomBuilder { sizing, _f: PhantomData }
    }

    /// The bits per key and probe count this builder would choose.
    pub fn shape_per_key(&self) -> Result<(f64, u32)> {
        let bpk = match self.sizing {
            Sizing::BitsPerKey(b) => {
                if !(b.is_finite() && b > 0.0 && b <= 1024.0) {
                    return Err(FilterError::invalid(format!(
                        "bits per key {b} is not in (0, 1024]"
                    )));
                }
                b
            }
            Sizing::FalsePositiveRate(p) => {
                if !(p.is_finite() && p > 0.0 && p < 1.0) {
                    return Err(FilterError::invalid(format!(
                        "false-positive rate {p} is not in (0, 1)"
                    )));
                }
                bits_per_key_for_fpr::<F>(p)?
            }
        };
        Ok((bpk, F::probes_for_bits_per_key(bpk)))
    }

    /// The filter for `n` keys (`n = 0` sizes for one key).
    pub fn expected_items(self, n: u64) -> Result<F> {
        let (bpk, probes) = self.shape_per_key()?;
        let bits = (n.max(1) as f64 * bpk).ceil();
        if bits > MAX_BITS as f64 {
            return Err(FilterError::invalid(format!(
                "{n} keys at {bpk:.2} bits/key need {bits} bits, above the 2^40 limit"
            )));
        }
        F::from_shape((bits as u64).max(1), probes)
    }
}

/// Smallest bits-per-key (to 1/1000) at which layout `F`, with its own probe choice, reaches
/// `fpr`: bisection over `[0.1, 1024]`, the FPR being decreasing in bits per key.
fn bits_per_key_for_fpr<F: BloomShape>(fpr: f64) -> Result<f64> {
    let fpr_at = |b: f64| F::theoretical_fpr(b, F::probes_for_bits_per_key(b));
    let (mut lo, mut hi) = (0.1f64, 1024.0f64);
    if fpr_at(hi) > fpr {
        return Err(FilterError::invalid(format!(
            "false-positive rate {fpr} is unreachable for this layout within 1024 bits/key"
        )));
    }
    while hi - lo > 1e-3 {
        let mid = 0.5 * (lo + hi);
        if fpr_at(mid) <= fpr {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}
