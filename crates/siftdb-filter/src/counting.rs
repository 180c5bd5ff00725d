//! The counting Bloom filter (Fan, Cao, Almeida, Broder 2000, "Summary Cache"): a standard Bloom
//! filter whose bits are replaced by small counters, so that keys can be removed as well as added.
//!
//! A key's `k` counters sit at the positions a [`crate::StandardBloom`] of the same shape
//! would set (Kirsch-Mitzenmacher double hashing, shared code). Insert increments each of them,
//! remove decrements them, and a key may be present iff all `k` are non-zero, so the FPR is the
//! standard `(1 - e^(-k n / m))^k` with `m` counting counters. Counters are 4 bits wide, as Fan et
//! al. recommend: with `k = (m/n) ln 2` the chance that any counter ever exceeds 15 is below
//! `1.37e-15 * m`. A counter that does reach 15 *saturates*: its true count is then unknown, so it
//! never decrements again (decrementing it could fall below the count of the keys still hashed
//! there and create a false negative). The price is that such a counter never clears.
//!
//! # The removal caveat
//! Removal is only sound for keys that were inserted. Removing a key that was never inserted but
//! happens to be a false positive decrements counters that belong to other keys and can create
//! false negatives for them. The filter can only detect the case it can see: removing a key it
//! says is absent is refused ([`FilterError::InvalidArgument`], filter unchanged). Callers that cannot
//! guarantee membership must check against the authoritative set first.
//!
//! Encoding (kind tag 5, docs/format.md#counting-bloom): params `num_counters:u64 probes:u32
//! keys_inserted:u64`; payload `ceil(num_counters / 16)` little-endian u64 words, counter `c`
//! being bits `4 (c % 16) .. 4 (c % 16) + 4` of word `c / 16`; unused high nibbles are zero.

use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::error::{FilterError, Result};
use crate::prefetch::prefetch_read;
use crate::sizing::MAX_BITS;
use crate::standard::{positions, MAX_PROBES};
use crate::SetOps;
use crate::{hash_key, math, BloomShape, FillInfo, Filter, FilterKind, InsertFilter};

/// Counters per u64 word.
const PER_WORD: u64 = 16;
/// Largest value of a counter; a counter holding it is saturated and never decrements.
const SATURATED: u64 = 15;
/// Most counters a filter may hold: 2^38, i.e. the same 128 GiB table limit as the bit filters.
const MAX_COUNTERS: u64 = MAX_BITS / 4;
/// Keys whose positions are computed and prefetched together by the batch operations.
const BATCH: usize = 8;

/// A counting Bloom filter with 4-bit saturating counters. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountingBloom {
    num_counters: u64,
    probes: u32,
    keys_inserted: u64,
    words: Vec<u64>,
}

/// Counter `c` of a packed table.
#[inline(always)]
fn counter<W: Words<u64> + ?Sized>(words: &W, c: u64) -> u64 {
    (words.word((c / PER_WORD) as usize) >> ((c % PER_WORD) * 4)) & 0xF
}

/// The membership test shared by the owned filter and its zero-copy view.
#[inline(always)]
fn probe<W: Words<u64> + ?Sized>(words: &W, num_counters: u64, probes: u32, hash: u64) -> bool {
    positions(hash, num_counters, probes).all(|c| counter(words, c) != 0)
}

#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn validate_shape(num_counters: u64, probes: u32) -> std::result::Result<(), String> {
    if num_counters == 0 || num_counters > MAX_COUNTERS {
        return Err(format!("num_counters {num_counters} is not in 1..=2^38"));
    }
    if probes == 0 || probes > MAX_PROBES {
        return Err(format!("probes {probes} is not in 1..={MAX_PROBES}"));
    }
    Ok(())
}

/// Mask of the counters of the last word that lie beyond `num_counters` (always zero).
fn unused_mask(num_counters: u64) -> u64 {
    match num_counters % PER_WORD {
        0 => 0,
        used => !0u64 << (used * 4),
    }
}

/// Counter-wise `min(a + b, 15)` of two packed words.
fn saturating_add_word(a: u64, b: u64) -> u64 {
    (0..PER_WORD).fold(0, |acc, i| {
        let s = i * 4;
        acc | (((a >> s) & 0xF) + ((b >> s) & 0xF)).min(SATURATED) << s
    })
}

/// Counter-wise `min(a, b)` of two packed words.
fn min_word(a: u64, b: u64) -> u64 {
    (0..PER_WORD).fold(0, |acc, i| {
        let s = i * 4;
        acc | ((a >> s) & 0xF).min((b >> s) & 0xF) << s
    })
}

impl CountingBloom {
    /// Number of counters in the table.
    pub fn num_counters(&self) -> u64 {
        self.num_counters
    }

    /// Counters incremented per key.
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// An upper bound on how many times `hash` was inserted (net of removals): the smallest of
    /// its counters (15 means "15 or more"). Zero means certainly absent.
    pub fn count_estimate(&self, hash: u64) -> u8 {
        positions(hash, self.num_counters, self.probes)
            .map(|c| counter(self.words.as_slice(), c))
            .min()
            .unwrap_or(0) as u8
    }

    /// Removes one occurrence of a key hash. If the filter says the key is absent, returns
    /// [`FilterError::InvalidArgument`] and changes nothing. Otherwise decrements each of the key's
    /// counters except saturated ones (value 15), whose true count is unknown.
    ///
    /// Only remove keys that were inserted: removing a false positive silently corrupts the
    /// filter for other keys (see the module documentation).
    pub fn remove_hash(&mut self, hash: u64) -> Result<()> {
        if !self.contains_hash(hash) {
            return Err(FilterError::invalid("key is not in the filter"));
        }
        for c in positions(hash, self.num_counters, self.probes) {
            let (w, shift) = ((c / PER_WORD) as usize, (c % PER_WORD) * 4);
            let v = (self.words[w] >> shift) & 0xF;
            // A key probing the same counter twice decrements it twice; v > 0 keeps a removed
            // false positive from borrowing into the neighbouring counter.
            if v != SATURATED && v != 0 {
                self.words[w] -= 1 << shift;
            }
        }
        self.keys_inserted = self.keys_inserted.saturating_sub(1);
        Ok(())
    }

    /// [`CountingBloom::remove_hash`] of [`hash_key`]`(key)`.
    pub fn remove(&mut self, key: &[u8]) -> Result<()> {
        self.remove_hash(hash_key(key))
    }

    /// The standard formula `(1 - e^(-k n / m))^k` at the current net key count.
    pub fn theoretical_fpr(&self) -> f64 {
        if self.keys_inserted == 0 {
            return 0.0;
        }
        math::standard_bloom_fpr(self.num_counters as f64 / self.keys_inserted as f64, self.probes)
    }

    /// Reads a serialized counting Bloom filter into an owned one (copies the payload; use
    /// [`CountingBloomView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<CountingBloom> {
        let view =
            CountingBloomView::parse(&envelope::decode_kind(bytes, FilterKind::CountingBloom)?)?;
        Ok(CountingBloom {
            num_counters: view.num_counters,
            probes: view.probes,
            keys_inserted: view.keys_inserted,
            words: view.words.to_vec(),
        })
    }

    fn same_shape(&self, other: &CountingBloom) -> Result<()> {
        if self.num_counters != other.num_counters || self.probes != other.probes {
            return Err(FilterError::invalid(format!(
                "counting Bloom shapes differ: {} counters/{} probes vs {} counters/{} probes",
                self.num_counters, self.probes, other.num_counters, other.probes
            )));
        }
        Ok(())
    }

    fn prefetch(&self, hashes: &[u64]) {
        for &h in hashes {
            for c in positions(h, self.num_counters, self.probes) {
                prefetch_read(&self.words[(c / PER_WORD) as usize]);
            }
        }
    }
}

impl BloomShape for CountingBloom {
    /// `num_bits` is the number of counters (each 4 bits wide): sizing by "bits per key" sizes
    /// counters per key, and the FPR formulas apply unchanged.
    fn from_shape(num_bits: u64, probes: u32) -> Result<CountingBloom> {
        validate_shape(num_bits, probes).map_err(FilterError::invalid)?;
        Ok(CountingBloom {
            num_counters: num_bits,
            probes,
            keys_inserted: 0,
            words: vec![0; num_bits.div_ceil(PER_WORD) as usize],
        })
    }
}

impl Filter for CountingBloom {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        probe(self.words.as_slice(), self.num_counters, self.probes, hash)
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.reserve(hashes.len());
        for chunk in hashes.chunks(BATCH) {
            self.prefetch(chunk);
            out.extend(chunk.iter().map(|&h| self.contains_hash(h)));
        }
    }

    fn kind(&self) -> FilterKind {
        FilterKind::CountingBloom
    }

    fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params = ParamWriter::new()
            .u64(self.num_counters)
            .u32(self.probes)
            .u64(self.keys_inserted)
            .finish();
        envelope::encode(FilterKind::CountingBloom, &params, |out| {
            envelope::write_words(&self.words, out)
        })
    }
}

impl InsertFilter for CountingBloom {
    #[inline]
    fn insert_hash(&mut self, hash: u64) {
        for c in positions(hash, self.num_counters, self.probes) {
            let (w, shift) = ((c / PER_WORD) as usize, (c % PER_WORD) * 4);
            if (self.words[w] >> shift) & 0xF != SATURATED {
                self.words[w] += 1 << shift;
            }
        }
        self.keys_inserted += 1;
    }

    fn insert_batch(&mut self, hashes: &[u64]) {
        for chunk in hashes.chunks(BATCH) {
            self.prefetch(chunk);
            for &h in chunk {
                self.insert_hash(h);
            }
        }
    }

    /// `bits` counts counters and `bits_set` non-zero counters; the estimate is `fill^k`.
    fn info(&self) -> FillInfo {
        let bits_set: u64 = self.words.iter().map(|&w| nonzero_nibbles(w)).sum();
        let fill = bits_set as f64 / self.num_counters as f64;
        FillInfo {
            keys_inserted: self.keys_inserted,
            bits: self.num_counters,
            bits_set,
            estimated_fpr: fill.powi(self.probes as i32),
        }
    }
}

/// Number of non-zero 4-bit counters in a word: OR each nibble's bits into its low bit.
fn nonzero_nibbles(w: u64) -> u64 {
    let x = w | (w >> 1);
    let x = x | (x >> 2);
    (x & 0x1111_1111_1111_1111).count_ones() as u64
}

impl SetOps for CountingBloom {
    /// Counter-wise saturating add: the multiset sum, exact for counters below 15.
    fn union_with(&mut self, other: &CountingBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, &b) in self.words.iter_mut().zip(&other.words) {
            *a = saturating_add_word(*a, b);
        }
        self.keys_inserted += other.keys_inserted;
        Ok(())
    }

    /// Counter-wise min: every key counted in both inputs keeps all its counters non-zero.
    fn intersect_with(&mut self, other: &CountingBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, &b) in self.words.iter_mut().zip(&other.words) {
            *a = min_word(*a, b);
        }
        self.keys_inserted = self.keys_inserted.min(other.keys_inserted);
        Ok(())
    }
}

/// A counting Bloom filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct CountingBloomView<'a> {
    num_counters: u64,
    probes: u32,
    keys_inserted: u64,
    words: LeWords<'a, u64>,
}

impl<'a> CountingBloomView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `CountingBloom`.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<CountingBloomView<'a>> {
        let mut r = ParamReader::new(env);
        let num_counters = r.u64("num_counters")?;
        let probes = r.u32("probes")?;
        let keys_inserted = r.u64("keys_inserted")?;
        r.finish()?;
        validate_shape(num_counters, probes).map_err(|e| ParamReader::new(env).invalid(e))?;
        let count = num_counters.div_ceil(PER_WORD);
        let words = LeWords::new(env.payload, count, "counting_bloom payload")?;
        if words.word(count as usize - 1) & unused_mask(num_counters) != 0 {
            return Err(FilterError::corruption(
                "counting_bloom payload: unused counters are set",
                None,
            ));
        }
        Ok(CountingBloomView { num_counters, probes, keys_inserted, words })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        probe(&self.words, self.num_counters, self.probes, hash)
    }

    /// Prefetches then probes, like [`CountingBloom`]'s batch lookup.
    pub fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.reserve(hashes.len());
        for chunk in hashes.chunks(BATCH) {
            for &h in chunk {
                for c in positions(h, self.num_counters, self.probes) {
                    prefetch_read(self.words.ptr((c / PER_WORD) as usize));
                }
            }
            out.extend(chunk.iter().map(|&h| self.contains_hash(h)));
        }
    }

    /// Keys inserted net of removals, as recorded when the filter was serialized.
    pub fn keys_inserted(&self) -> u64 {
        self.keys_inserted
    }
}

#[cfg(test)]
mod tests;
