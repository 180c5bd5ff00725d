//! Grafite: a static range-emptiness filter with a false-positive bound that holds for every
//! key and query distribution.
//!
//! Costa, M., Ferragina, P. and Vinciguerra, G., "Grafite: Taming Adversarial Queries with
//! Optimal Range Filters", SIGMOD 2024 (arXiv:2311.15380).
//!
//! # Theory
//! Keys are integers ("images", see [`image`] for byte strings); `n` distinct ones. Pick a
//! reduced universe `r` and a hash into `[0, r)` that is locality-preserving inside each block of
//! `r` consecutive integers and 2-independent across blocks:
//!
//! `h(x) = ((a * floor(x / r) + b) mod p + x) mod r`, with `p = 2^61 - 1` and random `a, b`.
//!
//! All keys of one block get the same offset `t = (a * floor(x / r) + b) mod p`, so inside a
//! block `h` is a rotation: keys keep their distances (mod `r`), and a query range of length
//! `l <= r` in that block maps to one code interval of length `l` (two if it wraps past `r - 1`)
//! that holds the code of no key of the block unless the range holds the key. A key of another
//! block lands at a uniform code, independently of the query's block (2-independence), so it
//! falls in the query's `l` codes with probability `l / r`. A union bound over the `n` keys gives
//! `FPR <= l n / r`, whatever the keys and the queries, including "correlated" ranges that start
//! just past a key, which break filters that learn from the key distribution (SuRF, Rosetta's
//! prefix Bloom filters at short lengths).
//!
//! The filter stores the sorted distinct codes in an Elias-Fano sequence ([`elias_fano`]):
//! `log2(r / n) + 2` bits per key. With a budget of `B` bits per key, `r = n 2^(B - 2)`
//! (`floor(B)`), so the bound is `l / 2^(B - 2)` for a range of `l` images. A query is at most two
//! blocks, at most two intervals each, each one successor search.
//!
//! `max_range` (`L`) does not change the filter: the space is fixed by `B`, and `L` only records
//! which bound the builder promised (`guaranteed_fpr() = expected_fpr(L)`);
//! [`GrafiteBuilder::with_false_pos`] turns a target `eps` for ranges up to `L` into
//! `B = 2 + ceil(log2(L / eps))`, the paper's `n (log2(L / eps) + 2)` bits.
//!
//! # Encoding
//! Kind tag 13; params, payload and query are specified in docs/format.md#grafite.
//! [`crate::FilterView`] refuses this kind: it answers points, not ranges.

mod elias_fano;
mod image;
mod shape;
#[cfg(test)]
mod tests;
mod view;

pub use view::GrafiteView;

use crate::envelope::{self, ParamWriter};
use crate::error::{FilterError, Result};
use crate::{FilterKind, RangeFilter};
use shape::{hash_params, low_bits, universe, Shape};

/// Builder of a [`Grafite`]: bits per key, the range length the bound is promised for, seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrafiteBuilder {
    bits_per_key: f64,
    max_range: u64,
    seed: u64,
    /// The FPR target `bits_per_key` came from, kept to name it in errors.
    target_fpr: Option<f64>,
}

impl Default for GrafiteBuilder {
    /// 14 bits per key, ranges up to 16 images: `16 / 2^12 = 0.39%`.
    fn default() -> Self {
        GrafiteBuilder::new(14.0, 16)
    }
}

impl GrafiteBuilder {
    /// `bits_per_key` in `4.0..=40.0` (only its integer part counts), `max_range >= 1`; checked
    /// when building.
    pub fn new(bits_per_key: f64, max_range: u64) -> GrafiteBuilder {
        GrafiteBuilder { bits_per_key, max_range, seed: Grafite::DEFAULT_SEED, target_fpr: None }
    }

    /// The fewest bits per key that keep the FPR of ranges of up to `max_range` images at most
    /// `eps` (in `(0, 1]`): `B = 2 + ceil(log2(max_range / eps))`.
    pub fn with_false_pos(eps: f64, max_range: u64) -> GrafiteBuilder {
        let bits = 2.0 + (max_range as f64 / eps).log2().ceil();
        GrafiteBuilder { target_fpr: Some(eps), ..GrafiteBuilder::new(bits, max_range) }
    }

    /// Sets the bits per key.
    pub fn bits_per_key(mut self, bits_per_key: f64) -> GrafiteBuilder {
        (self.bits_per_key, self.target_fpr) = (bits_per_key, None);
        self
    }

    /// Sets the range length the bound is promised for (it does not change the filter).
    pub fn max_range(mut self, max_range: u64) -> GrafiteBuilder {
        self.max_range = max_range;
        self
    }

    /// Seeds the hash's `a, b` (default [`Grafite::DEFAULT_SEED`]). Same input, same bytes.
    pub fn seed(mut self, seed: u64) -> GrafiteBuilder {
        self.seed = seed;
        self
    }

    /// Builds from integer images in any order (duplicates removed). Byte-key queries on the
    /// result read a key's first 8 bytes big-endian (window `P = ""`, `w = 8`).
    pub fn build_u64(&self, images: &[u64]) -> Result<Grafite> {
        let mut sorted = images.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        self.build_from_sorted(&sorted, Vec::new(), 8)
    }

    /// Builds from byte keys in sorted order (duplicates allowed; unsorted is
    /// [`FilterError::InvalidArgument`]). Two passes: one picks the window, one maps keys to images.
    pub fn build_sorted_keys<'a, I>(&self, keys: I) -> Result<Grafite>
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone,
    {
        let keys = keys.into_iter();
        let (prefix, w) = image::choose(keys.clone())?.unwrap_or((Vec::new(), 1));
        let mut images: Vec<u64> = keys.map(|k| image::image(k, prefix.len(), w)).collect();
        images.dedup(); // non-decreasing: the image map is monotone
        self.build_from_sorted(&images, prefix, w)
    }

    fn check(&self) -> Result<()> {
        if let Some(eps) = self.target_fpr {
            if !(eps > 0.0 && eps <= 1.0) {
                return Err(FilterError::invalid(format!("grafite FPR {eps} is not in (0, 1]")));
            }
        }
        let b = self.bits_per_key;
        if !(4.0..=40.0).contains(&b) {
            let why = self.target_fpr.map_or(String::new(), |e| {
                format!(" (from FPR {e} for ranges of {})", self.max_range)
            });
            return Err(FilterError::invalid(format!(
                "grafite bits_per_key {b}{why} not in 4.0..=40.0"
            )));
        }
        if self.max_range == 0 {
            return Err(FilterError::invalid("grafite max_range 0 is not at least 1"));
        }
        Ok(())
    }

    fn build_from_sorted(&self, images: &[u64], prefix: Vec<u8>, w: u8) -> Result<Grafite> {
        self.check()?;
        let n = images.len() as u64;
        let universe = universe(n, self.bits_per_key);
        let (mul, add) = hash_params(self.seed);
        let mut shape = Shape {
            seed: self.seed,
            bits_per_key: self.bits_per_key,
            max_range: self.max_range,
            num_images: n,
            universe,
            mul,
            add,
            window: w,
            ef: elias_fano::Shape::new(0, universe, 0).expect("empty"),
        };
        let mut codes: Vec<u64> = images.iter().map(|&x| shape.code(x)).collect();
        codes.sort_unstable();
        codes.dedup(); // images of different blocks may share a code
        let built = elias_fano::build(&codes, universe, low_bits(n, universe));
        shape.ef = built.shape;
        Ok(Grafite { shape, prefix, low: built.low, high: built.high, samples: built.samples })
    }
}

/// A Grafite range filter (static: built once from a key set). See the module documentation.
///
/// Answers "may some key lie in `[lo, hi]`?" with no false negatives; for a range of `l` key
/// images that holds no key, "maybe" comes with probability at most `l / 2^(B - 2)` at `B` bits
/// per key, for any keys and any queries.
/// ```
/// use siftdb_filter::{GrafiteBuilder, GrafiteView, RangeFilter};
///
/// // Keys 0, 10, 20, ... as 8-byte big-endian strings.
/// let keys: Vec<[u8; 8]> = (0..1000u64).map(|i| (i * 10).to_be_bytes()).collect();
/// let f = GrafiteBuilder::new(14.0, 16).build_sorted_keys(keys.iter().map(|k| &k[..]))?;
/// let be = |x: u64| x.to_be_bytes();
/// assert!(f.may_contain_range(&be(45), &be(50))); // holds key 50: never a false negative
/// assert!(f.expected_fpr(9) <= 9.0 / 4096.0);      // [41, 49] is empty: "no" but for 0.2%
/// let bytes = f.to_bytes();
/// let view = GrafiteView::parse(&bytes)?;          // zero-copy reader over the envelope
/// assert!(view.may_contain_range_u64(50, 50));
/// # Ok::<(), siftdb_filter::FilterError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Grafite {
    shape: Shape,
    prefix: Vec<u8>,
    low: Vec<u64>,
    high: Vec<u64>,
    samples: Vec<u64>,
}

impl Grafite {
    /// Default seed of [`GrafiteBuilder`].
    pub const DEFAULT_SEED: u64 = 0x4752_4146_4954_4501;

    fn seq(&self) -> elias_fano::Seq<'_, [u64]> {
        elias_fano::Seq {
            shape: &self.shape.ef,
            low: &self.low,
            high: &self.high,
            samples: &self.samples,
        }
    }

    /// Inclusive byte-key range query (`lo > hi`: `false`).
    pub fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.shape.contains_bytes(&self.seq(), &self.prefix, lo, hi)
    }

    /// Inclusive range query over images (`lo > hi`: `false`).
    pub fn may_contain_range_u64(&self, lo: u64, hi: u64) -> bool {
        self.shape.contains_u64(&self.seq(), lo, hi)
    }

    /// The FPR bound for an empty range of `range_len` images: `min(1, range_len n / r)`.
    pub fn expected_fpr(&self, range_len: u64) -> f64 {
        self.shape.expected_fpr(range_len)
    }

    /// The bound for this byte-key query: [`Grafite::expected_fpr`] of its image range's length
    /// (0 when the bounds alone prove the range empty).
    pub fn expected_fpr_for(&self, lo: &[u8], hi: &[u8]) -> f64 {
        self.shape.expected_fpr_for(&self.prefix, lo, hi)
    }

    /// The bound promised at build time: `expected_fpr(max_range)`.
    pub fn guaranteed_fpr(&self) -> f64 {
        self.expected_fpr(self.shape.max_range)
    }

    /// Payload bits per distinct image (0 for the empty filter).
    pub fn bits_per_key(&self) -> f64 {
        match self.shape.num_images {
            0 => 0.0,
            n => self.memory_bytes() as f64 * 8.0 / n as f64,
        }
    }

    /// Distinct images the filter was built from (`n`).
    pub fn num_keys(&self) -> u64 {
        self.shape.num_images
    }

    /// The reduced universe `r`.
    pub fn universe(&self) -> u64 {
        self.shape.universe
    }

    /// The range length the bound was promised for (`L`).
    pub fn max_range(&self) -> u64 {
        self.shape.max_range
    }

    /// Bytes of the payload (the Elias-Fano words and select samples).
    pub fn memory_bytes(&self) -> usize {
        (self.low.len() + self.high.len() + self.samples.len()) * 8
    }

    /// The stable serialization (docs/format.md#grafite).
    pub fn to_bytes(&self) -> Vec<u8> {
        envelope::encode(FilterKind::Grafite, &write_params(&self.shape, &self.prefix), |out| {
            for part in [&self.low, &self.high, &self.samples] {
                envelope::write_words(part, out);
            }
        })
    }

    /// Reads a serialized Grafite filter into an owned one (copies the payload; use
    /// [`GrafiteView`] to query in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<Grafite> {
        GrafiteView::parse(bytes).map(|v| v.to_owned_filter())
    }
}

/// Bytes of the params block before the prefix.
const FIXED_PARAMS: usize = 68;

/// The params block: [`FIXED_PARAMS`] bytes of fixed fields, then the prefix.
fn write_params(s: &Shape, prefix: &[u8]) -> Vec<u8> {
    let mut p = ParamWriter::new()
        .u64(s.seed)
        .f64(s.bits_per_key)
        .u64(s.max_range)
        .u64(s.num_images)
        .u64(s.universe)
        .u64(s.ef.codes)
        .u64(s.ef.high_bits)
        .u64(s.ef.num_samples())
        .u8(s.ef.low_bits as u8)
        .u8(s.ef.sample_bits as u8)
        .u8(s.window)
        .u8(prefix.len() as u8)
        .finish();
    debug_assert_eq!(p.len(), FIXED_PARAMS);
    p.extend_from_slice(prefix);
    p
}

impl RangeFilter for Grafite {
    fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        Grafite::may_contain_range(self, lo, hi)
    }
    fn may_contain_range_u64(&self, lo: u64, hi: u64) -> bool {
        Grafite::may_contain_range_u64(self, lo, hi)
    }
    fn expected_fpr(&self, range_len: u64) -> f64 {
        Grafite::expected_fpr(self, range_len)
    }
}
