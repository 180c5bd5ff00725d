//! The standard Ribbon filter with 128-bit coefficient rows, and (in `bumped.rs`) bumped Ribbon,
//! the default filter of compacted SSTs, built from the same banding and solution.
//!
//! Dillinger, P. C. and Walzer, S., "Ribbon filter: practically smaller than Bloom and Xor",
//! arXiv:2103.02515 (2021).
//!
//! # Theory
//! A static filter for a key set `S` of `n` keys can be built from a *retrieval* structure: a
//! table `Z` of `m` slots of `r` bits with `h(x) · Z = f(x)` over GF(2) for every `x` in `S`,
//! where `f(x)` is an `r`-bit fingerprint of the key and `h(x)` a 0/1 row selecting the slots to
//! XOR. A query for `y` computes `h(y) · Z` and compares it with `f(y)`: keys always match; for
//! a non-key `f(y)` is independent of `Z` and `h(y)`, so it matches with probability exactly
//! `2^-r`. The table has `m r` bits; with `m = (1 + ε) n` that is `(1 + ε) log2(1/FPR)` bits per
//! key against the information-theoretic `log2(1/FPR)`, and a Bloom filter's `1.44 log2(1/FPR)`.
//!
//! Ribbon makes `h(x)` a *band*: zero except for `w = 128` consecutive coefficients starting at a
//! random slot `s(x) <= m - w`, the first of which is 1. Sorted by start, the rows form a band
//! matrix, which on-the-fly Gaussian elimination ("banding", the paper's Algorithm 1; see
//! [`banding`]) reduces to upper-triangular form in expected `O(w)` word operations per key: a
//! row is XORed with the stored row of its leading slot and shifted to its next set bit until it
//! reaches a free slot (stored) or vanishes (consistent: implied by earlier rows; inconsistent:
//! construction fails). Back-substitution ([`solution`]) then fixes `Z` from the last slot down.
//!
//! # Overhead and failure
//! Banding fails when `ε` is too small for `w`. Measured (RocksDB's `ribbon_config.cc`, 1-in-20
//! failure chance per attempt), 128-bit rows need `m / n ≈ 1.036` at 2^17 slots, growing by
//! about 0.0038 per doubling: 1.047 at 1M keys, 1.074 at 100M. 64-bit rows need 1.094 already at
//! 2^17 slots (growing 0.0083 per doubling), which cannot meet this module's target of at most
//! `1.08 log2(1/FPR)` bits per key; hence `w = 128`, at the price of 128-bit arithmetic (two
//! u64 halves). A failed attempt is retried with a new seed, at most [`Ribbon::MAX_ATTEMPTS`]
//! times, then the build returns [`FilterError::Full`] and the engine falls back to a Bloom
//! filter.
//!
//! *Standard* rather than *homogeneous* Ribbon: homogeneous (all results zero) never fails, but
//! its FPR exceeds `2^-r` by an amount that grows with the free slots; standard Ribbon's FPR is
//! exactly `2^-r` and its rare failures cost only a retry.
//!
//! # Fractional bits per key
//! An integer `r` wastes up to a bit per key for a target like 1% (`log2 100 = 6.64`). As in
//! RocksDB, blocks of the solution carry either `k` or `k + 1` result columns: a key whose start
//! lies in an upper block checks `k + 1` bits, others `k`. The share of upper blocks is chosen so
//! the expected FPR meets the target; at 1% that is about 6.72 bits per slot.
//!
//! # Layout and encoding
//! The solution is stored interleaved by blocks of 128 slots (see [`solution`]), so a query
//! reads at most two adjacent blocks. Kind tag 12; params, payload and probe are specified in
//! docs/format.md#ribbon.

mod banding;
mod bumped;
#[cfg(test)]
mod bumped_tests;
mod bumping;
mod layer_chunks;
mod solution;
#[cfg(test)]
mod tests;

use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter};
use crate::error::{FilterError, Result};
use crate::hash::mix64;
use crate::prefetch::prefetch_read;
use crate::{Filter, FilterKind, StaticFilter};
use solution::{Layout, W};

pub use bumped::{BumpedRibbon, BumpedRibbonBuilder, BumpedRibbonView};
/// Key count up to which a bumped ribbon is a single standard ribbon layer.
pub(crate) const BUMPED_RIBBON_SINGLE_LAYER_KEYS: usize = bumping::LAST_LAYER_KEYS;

/// [`RibbonView::prefetch_hash`] from a probe hint's numbers, `(num_blocks, upper_start_block,
/// lower_columns)` for the layout, words at address `base` (see `solution::prefetch_at`); with
/// `thresholds` (a bumped ribbon's first layer: the address of its threshold words and its
/// `bucket_log2`), also the threshold word of the key's bucket.
#[inline(always)]
pub(crate) fn prefetch_hinted(
    base: usize,
    seed: u64,
    layout: (u64, u64, u32),
    hash: u64,
    thresholds: Option<(usize, u32)>,
) {
    let (num_blocks, upper_start_block, lower_columns) = layout;
    let layout = Layout { num_blocks, upper_start_block, lower_columns };
    solution::prefetch_at(base, &layout, seed, hash, thresholds);
}

/// Whether a hint's layout numbers are valid, checked both ways: `Layout::is_valid` (the hint
/// path's inline check) and `Layout::validate`; `None` if they disagree (tests).
#[cfg(test)]
pub(crate) fn hint_layout_valid(num_blocks: u64, upper: u64, lower_columns: u32) -> Option<bool> {
    let layout = Layout { num_blocks, upper_start_block: upper, lower_columns };
    (layout.is_valid() == layout.validate().is_ok()).then_some(layout.is_valid())
}

/// Step between the seeds of successive attempts (odd, so the seeds never repeat).
const SEED_STEP: u64 = 0x9E37_79B9_7F4A_7C15;
/// Keys whose blocks are prefetched together by [`Filter::contains_batch`].
const BATCH: usize = 8;

/// What the builder targets.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Fpr(f64),
    ResultBits(u32),
}

impl Target {
    /// An FPR target outside `[2^-32, 1/2]` or result bits outside `1..=32` are
    /// [`FilterError::InvalidArgument`].
    fn validate(&self) -> Result<()> {
        match *self {
            Target::Fpr(p) if !(2f64.powi(-32)..=0.5).contains(&p) => {
                Err(FilterError::invalid(format!("ribbon FPR {p} is not in [2^-32, 0.5]")))
            }
            Target::ResultBits(r) if !(1..=32).contains(&r) => {
                Err(FilterError::invalid(format!("ribbon result bits {r} not in 1..=32")))
            }
            _ => Ok(()),
        }
    }

    /// The layout of `num_blocks` blocks that meets the target.
    fn layout(&self, num_blocks: u64) -> Layout {
        match *self {
            Target::Fpr(p) => banding::layout_for_fpr(p, num_blocks),
            Target::ResultBits(r) => {
                Layout { num_blocks, upper_start_block: num_blocks, lower_columns: r }
            }
        }
    }
}

/// Builder of a [`Ribbon`]: the target FPR (or fixed result bits) and the seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RibbonBuilder {
    target: Target,
    seed: u64,
}

impl RibbonBuilder {
    /// Uses `seed` for the first construction attempt (default [`Ribbon::DEFAULT_SEED`]). The
    /// same keys and seed always give the same filter.
    pub fn seed(mut self, seed: u64) -> RibbonBuilder {
        self.seed = seed;
        self
    }

    /// Builds the filter of `hashes` (duplicates are removed; the empty set gives a filter that
    /// answers "no" to everything). An FPR target outside `[2^-32, 1/2]` or result bits outside
    /// `1..=32` are [`FilterError::InvalidArgument`]; a key count beyond 2^39 slots too.
    pub fn build(&self, hashes: &[u64]) -> Result<Ribbon> {
        self.target.validate()?;
        let mut seed = self.seed;
        let mut h1s = banding::mixed_sorted(hashes, seed);
        let n = h1s.len() as u64;
        let num_blocks = banding::num_blocks_for(n).ok_or_else(|| {
            FilterError::invalid(format!("{n} keys exceed the ribbon size limit"))
        })?;
        let layout = self.target.layout(num_blocks);
        let mut band = banding::Band { coeffs: Vec::new(), results: Vec::new() };
        for attempt in 0..Ribbon::MAX_ATTEMPTS {
            if attempt > 0 {
                seed = seed.wrapping_add(SEED_STEP);
                h1s = banding::mixed_sorted(hashes, seed);
            }
            if banding::band(&h1s, &layout, &mut band) {
                let words = solution::back_substitute(&band.coeffs, &band.results, &layout);
                return Ok(Ribbon { seed, num_keys: n, layout, words });
            }
        }
        Err(FilterError::Full(format!(
            "ribbon banding of {n} keys in {} slots failed {} times",
            layout.num_slots(),
            Ribbon::MAX_ATTEMPTS
        )))
    }
}

/// A standard Ribbon filter (static: built once from a key set). See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ribbon {
    seed: u64,
    num_keys: u64,
    layout: Layout,
    words: Vec<u64>,
}

impl Ribbon {
    /// Construction attempts (each with a fresh seed) before [`FilterError::Full`]. With slots
    /// sized for a 1-in-20 failure chance, ten failures in a row have probability about 1e-13.
    pub const MAX_ATTEMPTS: u32 = 10;
    /// Default seed of [`RibbonBuilder`].
    pub const DEFAULT_SEED: u64 = 0x5249_4242_4F4E_0001;

    /// A builder targeting false-positive rate `fpr` in `[2^-32, 1/2]`, reached with a mix of
    /// `floor(log2(1/fpr))` and one more result bits per slot.
    pub fn with_false_pos(fpr: f64) -> RibbonBuilder {
        RibbonBuilder { target: Target::Fpr(fpr), seed: Ribbon::DEFAULT_SEED }
    }

    /// A builder with exactly `bits` result bits per slot (`1..=32`): FPR `2^-bits`.
    pub fn with_result_bits(bits: u32) -> RibbonBuilder {
        RibbonBuilder { target: Target::ResultBits(bits), seed: Ribbon::DEFAULT_SEED }
    }

    /// The theoretical false-positive rate: `2^-r`, or the start-weighted mix of `2^-k` and
    /// `2^-(k+1)` for fractional bits. Zero for the empty filter.
    pub fn fpr(&self) -> f64 {
        self.layout.fpr()
    }

    /// Payload bits per distinct key (0 for the empty filter).
    pub fn bits_per_key(&self) -> f64 {
        if self.num_keys == 0 {
            0.0
        } else {
            (self.words.len() * 64) as f64 / self.num_keys as f64
        }
    }

    /// Distinct keys the filter was built from.
    pub fn num_keys(&self) -> u64 {
        self.num_keys
    }

    /// Slots `m` (a multiple of 128).
    pub fn num_slots(&self) -> u64 {
        self.layout.num_slots()
    }

    /// The seed of the successful construction attempt.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Reads a serialized ribbon filter into an owned one (copies the payload; use
    /// [`RibbonView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<Ribbon> {
        let view = RibbonView::parse(&envelope::decode_kind(bytes, FilterKind::Ribbon)?)?;
        Ok(Ribbon {
            seed: view.seed,
            num_keys: view.num_keys,
            layout: view.layout,
            words: view.words.to_vec(),
        })
    }
}

impl Filter for Ribbon {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        solution::probe(self.words.as_slice(), &self.layout, self.seed, hash)
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.reserve(hashes.len());
        let starts = self.layout.num_starts();
        for chunk in hashes.chunks(BATCH) {
            if starts > 0 {
                for &h in chunk {
                    // The query reads words from the start of its block to the end of the next
                    // block's columns (at most 2 * 33 units): prefetch both ends.
                    let (start, _, _) = solution::key_row(mix64(h, self.seed), starts);
                    let block = start / W;
                    let first = 2 * self.layout.first_unit(block) as usize;
                    let last = 2 * self.layout.first_unit(block + 2) as usize;
                    prefetch_read(&self.words[first]);
                    prefetch_read(&self.words[last.min(self.words.len()) - 1]);
                }
            }
            out.extend(chunk.iter().map(|&h| self.contains_hash(h)));
        }
    }

    fn kind(&self) -> FilterKind {
        FilterKind::Ribbon
    }

    fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn to_bytes(&self) -> Vec<u8> {
        let l = &self.layout;
        let params = ParamWriter::new()
            .u64(self.seed)
            .u64(self.num_keys)
            .u64(l.num_blocks)
            .u64(l.upper_start_block)
            .u8(l.lower_columns as u8)
            .u8(W as u8)
            .finish();
        envelope::encode(FilterKind::Ribbon, &params, |out| envelope::write_words(&self.words, out))
    }
}

impl StaticFilter for Ribbon {
    /// A ribbon filter at 1% FPR (fractional bits: about 7.0 bits per key at 1M keys).
    fn build(hashes: &[u64]) -> Result<Ribbon> {
        Ribbon::with_false_pos(0.01).build(hashes)
    }
}

/// A ribbon filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct RibbonView<'a> {
    seed: u64,
    num_keys: u64,
    layout: Layout,
    words: LeWords<'a, u64>,
}

impl<'a> RibbonView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `Ribbon`. After this the
    /// layout is valid and the payload holds exactly the words it implies, so no query can index
    /// out of bounds.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<RibbonView<'a>> {
        let mut r = ParamReader::new(env);
        let seed = r.u64("seed")?;
        let num_keys = r.u64("num_keys")?;
        let num_blocks = r.u64("num_blocks")?;
        let upper_start_block = r.u64("upper_start_block")?;
        let lower_columns = r.u8("lower_columns")? as u32;
        let coeff_bits = r.u8("coeff_bits")?;
        r.finish()?;
        let invalid = |what: String| ParamReader::new(env).invalid(what);
        if coeff_bits as u64 != W {
            return Err(invalid(format!("coeff_bits {coeff_bits} is not 128")));
        }
        let layout = Layout { num_blocks, upper_start_block, lower_columns };
        layout.validate().map_err(invalid)?;
        // An empty table must mean an empty key set (it answers "no" to everything), and no
        // table holds more keys than slots.
        if (num_blocks == 0) != (num_keys == 0) || num_keys > layout.num_slots() {
            return Err(invalid(format!("num_keys {num_keys} impossible in {num_blocks} blocks")));
        }
        let words = LeWords::new(env.payload, layout.total_words(), "ribbon payload")?;
        Ok(RibbonView { seed, num_keys, layout, words })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        solution::probe(&self.words, &self.layout, self.seed, hash)
    }

    /// Starts loading every cache line `contains_hash(hash)` reads: the key's block's columns
    /// and the next block's (a hint: see [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        solution::prefetch(&self.words, &self.layout, self.seed, hash);
    }

    /// The numbers a prefetch needs without the view ([`crate::ProbeHint`]); `None`
    /// for the empty filter.
    pub(crate) fn probe_hint(&self) -> Option<crate::ProbeHint> {
        (self.layout.num_blocks > 0).then(|| crate::ProbeHint::Ribbon {
            base: self.words.ptr(0) as usize,
            seed: self.seed,
            num_blocks: self.layout.num_blocks,
            upper_start_block: self.layout.upper_start_block,
            lower_columns: self.layout.lower_columns,
            thresholds: None,
        })
    }

    /// Distinct keys the filter was built from.
    pub fn num_keys(&self) -> u64 {
        self.num_keys
    }

    /// The theoretical false-positive rate (see [`Ribbon::fpr`]).
    pub fn fpr(&self) -> f64 {
        self.layout.fpr()
    }
}
