//! [`GrafiteView`]: a serialized Grafite filter queried in place, and the validation that makes
//! that safe on bytes from disk (docs/format.md#grafite, reading rules).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use super::elias_fano::{self, Seq};
use super::shape::{hash_params, low_bits, universe, Shape};
use super::{image, Grafite, FIXED_PARAMS};
use crate::envelope::{self, LeWords, ParamReader, Words};
use crate::error::Result;
use crate::{FilterKind, RangeFilter};

/// A Grafite filter over borrowed envelope bytes: the payload is read in place, never copied.
#[derive(Debug, Clone, Copy)]
pub struct GrafiteView<'a> {
    shape: Shape,
    prefix: &'a [u8],
    pub(super) low: LeWords<'a, u64>,
    pub(super) high: LeWords<'a, u64>,
    samples: LeWords<'a, u64>,
}

impl<'a> GrafiteView<'a> {
    /// Parses and validates a serialized Grafite filter. Every field is checked against the
    /// others and the payload (lengths, the high bitvector's popcount, zero padding, every select
    /// sample), so a query can neither panic nor read out of bounds afterwards. Corrupt bytes
    /// are [`crate::FilterError::Corruption`] naming the field; another filter kind is
    /// [`crate::FilterError::InvalidArgument`].
    pub fn parse(bytes: &'a [u8]) -> Result<GrafiteView<'a>> {
        let env = envelope::decode_kind(bytes, FilterKind::Grafite)?;
        let mut r = ParamReader::new(&env);
        let seed = r.u64("seed")?;
        let bits_per_key = r.f64("bits_per_key")?;
        let max_range = r.u64("max_range")?;
        let num_images = r.u64("num_images")?;
        let universe_stored = r.u64("universe")?;
        let num_codes = r.u64("num_codes")?;
        let high_bits = r.u64("high_bits")?;
        let num_samples = r.u64("num_samples")?;
        let low_bits_stored = r.u8("low_bits")? as u32;
        let sample_bits = r.u8("sample_bits")? as u32;
        let window = r.u8("window")?;
        let prefix_len = r.u8("prefix_len")? as usize;
        let bad = |what: String| ParamReader::new(&env).invalid(what);
        // The prefix is the rest of the block, exactly `prefix_len` bytes.
        let prefix = match env.params.get(FIXED_PARAMS..) {
            Some(prefix) if prefix.len() == prefix_len => prefix,
            _ => {
                return Err(bad(format!(
                    "params are {} bytes, prefix_len {prefix_len} implies {}",
                    env.params.len(),
                    FIXED_PARAMS + prefix_len
                )))
            }
        };

        if !(4.0..=40.0).contains(&bits_per_key) {
            return Err(bad(format!("bits_per_key {bits_per_key} not in 4.0..=40.0")));
        }
        if max_range == 0 {
            return Err(bad("max_range is 0".into()));
        }
        if !(1..=image::MAX_WIDTH).contains(&window) {
            return Err(bad(format!("window {window} not in 1..=8")));
        }
        let r_expected = universe(num_images, bits_per_key);
        if universe_stored != r_expected {
            return Err(bad(format!(
                "universe {universe_stored} != {r_expected} implied by num_images {num_images} \
                 and bits_per_key {bits_per_key}"
            )));
        }
        if num_codes > num_images || (num_codes == 0) != (num_images == 0) {
            return Err(bad(format!(
                "num_codes {num_codes} impossible for num_images {num_images}"
            )));
        }
        let l = low_bits(num_images, universe_stored);
        if low_bits_stored > 63 || low_bits_stored != l {
            return Err(bad(format!("low_bits {low_bits_stored} != floor(log2(r / n)) = {l}")));
        }
        let ef = elias_fano::Shape::new(num_codes, universe_stored, l)
            .ok_or_else(|| bad("high bitvector length overflows".into()))?;
        if high_bits != ef.high_bits {
            return Err(bad(format!(
                "high_bits {high_bits} != num_codes + zeros = {}",
                ef.high_bits
            )));
        }
        if num_samples != ef.num_samples() {
            return Err(bad(format!("num_samples {num_samples} != {}", ef.num_samples())));
        }
        if sample_bits != ef.sample_bits {
            return Err(bad(format!("sample_bits {sample_bits} != {}", ef.sample_bits)));
        }

        let low_words = ef.low_words().ok_or_else(|| bad("low part length overflows".into()))?;
        let words = [low_words, ef.high_words(), ef.sample_words()];
        let total = words.iter().try_fold(0u64, |a, &w| a.checked_add(w));
        if total.and_then(|t| t.checked_mul(8)) != Some(env.payload.len() as u64) {
            return Err(bad(format!(
                "payload is {} bytes, params imply {low_words} + {} + {} words",
                env.payload.len(),
                ef.high_words(),
                ef.sample_words()
            )));
        }
        let (low_bytes, rest) = env.payload.split_at(low_words as usize * 8);
        let (high_bytes, sample_bytes) = rest.split_at(ef.high_words() as usize * 8);
        let low = LeWords::new(low_bytes, low_words, "grafite low bits")?;
        let high = LeWords::new(high_bytes, ef.high_words(), "grafite high bits")?;
        let samples = LeWords::new(sample_bytes, ef.sample_words(), "grafite select samples")?;
        elias_fano::validate_high(&ef, &high, &samples).map_err(bad)?;

        let (mul, add) = hash_params(seed);
        let shape = Shape {
            seed,
            bits_per_key,
            max_range,
            num_images,
            universe: universe_stored,
            mul,
            add,
            window,
            ef,
        };
        Ok(GrafiteView { shape, prefix, low, high, samples })
    }

    fn seq(&self) -> Seq<'_, LeWords<'a, u64>> {
        Seq { shape: &self.shape.ef, low: &self.low, high: &self.high, samples: &self.samples }
    }

    /// Inclusive byte-key range query (see [`Grafite::may_contain_range`]).
    pub fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.shape.contains_bytes(&self.seq(), self.prefix, lo, hi)
    }

    /// Inclusive range query over images.
    pub fn may_contain_range_u64(&self, lo: u64, hi: u64) -> bool {
        self.shape.contains_u64(&self.seq(), lo, hi)
    }

    /// The FPR bound for an empty range of `range_len` images: `min(1, range_len n / r)`.
    pub fn expected_fpr(&self, range_len: u64) -> f64 {
        self.shape.expected_fpr(range_len)
    }

    /// The bound for this byte-key query (see [`Grafite::expected_fpr_for`]).
    pub fn expected_fpr_for(&self, lo: &[u8], hi: &[u8]) -> f64 {
        self.shape.expected_fpr_for(self.prefix, lo, hi)
    }

    /// The bound promised at build time: `expected_fpr(max_range)`.
    pub fn guaranteed_fpr(&self) -> f64 {
        self.expected_fpr(self.shape.max_range)
    }

    /// Distinct images the filter was built from (`n`).
    pub fn num_keys(&self) -> u64 {
        self.shape.num_images
    }

    /// Bytes of the payload the view reads.
    pub fn memory_bytes(&self) -> usize {
        (self.low.word_count() + self.high.word_count() + self.samples.word_count()) * 8
    }

    /// An owned copy.
    pub fn to_owned_filter(&self) -> Grafite {
        Grafite {
            shape: self.shape,
            prefix: self.prefix.to_vec(),
            low: self.low.to_vec(),
            high: self.high.to_vec(),
            samples: self.samples.to_vec(),
        }
    }
}

impl RangeFilter for GrafiteView<'_> {
    fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        GrafiteView::may_contain_range(self, lo, hi)
    }
    fn may_contain_range_u64(&self, lo: u64, hi: u64) -> bool {
        GrafiteView::may_contain_range_u64(self, lo, hi)
    }
    fn expected_fpr(&self, range_len: u64) -> f64 {
        GrafiteView::expected_fpr(self, range_len)
    }
}
