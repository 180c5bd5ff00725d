//! The two-bit Bloom filter: every key sets `k` bits (default 2) inside ONE machine word, with one
//! atomic OR. It is the engine's memtable filter, filled lock-free by concurrent writers.
//!
//! # Theory
//! The table is `W = 2^L` words of `w` bits (`w` = 32 by default, or 64). A key's 64-bit hash
//! picks one word and `k` bit positions inside it (with replacement: two positions may coincide).
//! This is a blocked Bloom filter whose block is one word (Putze, Sanders, Singler 2007,
//! "Cache-, hash- and space-efficient Bloom filters"): word loads are Poisson with mean
//! `lambda = n / W`, and the false-positive rate is
//! `FPR = sum_i Pois(i; lambda) * (1 - (1 - 1/w)^(k i))^k` ([`math::blocked_bloom_fpr`]).
//!
//! With `k = 1` the layout is the classic one-bit filter, `FPR = 1 - (1 - 1/m)^n ~ 1 - e^(-n/m)`.
//! Floe ("Two Bits Are Better Than One: making bloom filters 2x more accurate", floedb.ai, 2026)
//! observed that setting TWO bits in the same `u32` costs the same single memory access and
//! single atomic OR, yet halves the rate: at 2^21 bits and 262,144 keys (8 bits per key) they
//! measured 11.68% with one bit and 5.69% with two. This implementation measures 11.75% and
//! 5.77% there. For `k >= 2` the blocked formula is slightly optimistic: it uses `(E[X]/w)^k`
//! for a word's rate where the exact value is `E[(X/w)^k]` (`X` its popcount; Jensen), 5.69%
//! against an exact 5.76% at this load (the tests compute the exact occupancy model).

//! # Choosing `k` (bits per key in the word)
//! The default stays at Floe's `k = 2` at every budget, and sizing through [`BloomShape`] keeps
//! it. In a 32-bit word the rate-optimal `k` grows with the budget: at 8 bits/key `k = 4` gives
//! 4.07% against 5.69%, at 16 bits/key `k = 5` gives 0.74% against 1.94%. The price of a larger
//! `k` is a faster-filling word: a memtable that receives more keys than it was sized for (the
//! common case, since the filter is sized before the key count is known) degrades more gently
//! with `k = 2` (16.3% at 4 bits/key, against 18.1% for `k = 4`), and the flush rule sees that
//! in [`FillInfo::estimated_fpr`]. Callers with a firm key count and a generous budget should
//! configure a larger `k` through [`TwoBitConfig`].
//!
//! # Hash derivation (docs/format.md#two-bit-bloom)
//! * word index = `fastrange64(h, 2^L)`, i.e. the top `L` bits of `h`;
//! * positions: `s = log2(w)` (5 or 6); if `k * s + L <= 64` the source is `h` itself, else
//!   `mix64(h, POSITION_SEED)`; position `i` is bits `[i*s, (i+1)*s)` of the source.
//!
//! # Concurrency
//! [`TwoBitBloom::insert_hash_atomic`] and [`TwoBitBloom::insert_batch_atomic`] take `&self` and
//! are safe from many threads; see `table.rs` for why `Ordering::Relaxed` suffices. No shared
//! counter is touched on that path (a contended cache line would cost more than the insert), so
//! `info().keys_inserted` counts only `&mut` inserts plus what the owner reports through
//! [`TwoBitBloom::add_keys_inserted`] / [`TwoBitBloom::set_keys_inserted`].

mod config;
mod table;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fpr;
mod view;

pub use config::{TwoBitConfig, MAX_BITS_PER_KEY_IN_WORD};
pub use view::TwoBitBloomView;

use crate::envelope;
use crate::error::{FilterError, Result};
use crate::sizing::MAX_BITS;
use crate::{math, BloomShape, FillInfo, Filter, FilterKind, InsertFilter, SetOps};
use config::Layout;
use std::sync::atomic::{AtomicU64, Ordering};
use table::Table;

/// Keys whose words are computed and prefetched together by the batch operations.
const BATCH: usize = 16;

/// The membership test shared by the owned filter and the view: all of the mask's bits set.
#[inline(always)]
fn hit(word: u64, mask: u64) -> bool {
    word & mask == mask
}

/// The two-bit (Floe) Bloom filter: `2^L` words of 32 (or 64) bits; a key sets `k` bits
/// (default 2) inside one word with one atomic OR, and a query loads that one word.
///
/// FPR is the blocked formula with one word per block,
/// `sum_i Pois(i; n/W) * (1 - (1 - 1/w)^(k i))^k` (about 1% optimistic for `k >= 2`): 5.7% at
/// 8 bits per key in u32 words with `k = 2`, against 11.75% for the one-bit baseline
/// ([`TwoBitBloom::one_bit`]).
///
/// Choosing `k`: the default stays at Floe's 2 at every budget. A larger `k` lowers the rate when
/// the key count is known and the budget generous (8 bits/key: 4.07% at `k = 4`; 16 bits/key:
/// 0.74% at `k = 5` against 1.94%), but fills words faster, so a filter that receives more keys
/// than it was sized for (a memtable usually does) degrades faster (4 bits/key: 16.3% at `k = 2`,
/// 18.1% at `k = 4`). Configure it through [`TwoBitConfig`].
///
/// `Send + Sync`: share it (e.g. in an `Arc`) and call [`TwoBitBloom::insert_hash_atomic`] from
/// many threads while others call `contains_hash`.
pub struct TwoBitBloom {
    layout: Layout,
    table: Table,
    /// Only `&mut` inserts and the owner's reports touch this; never the concurrent path.
    keys_inserted: AtomicU64,
}

impl TwoBitBloom {
    /// A filter of at least `num_bits` bits in Floe's configuration (32-bit words, two bits per
    /// key); the word count is rounded up to a power of two.
    pub fn new(num_bits: u64) -> Result<TwoBitBloom> {
        TwoBitBloom::with_config(TwoBitConfig::FLOE, num_bits)
    }

    /// The one-bit baseline (`k = 1`, 32-bit words) with at least `num_bits` bits.
    pub fn one_bit(num_bits: u64) -> Result<TwoBitBloom> {
        TwoBitBloom::with_config(TwoBitConfig::ONE_BIT, num_bits)
    }

    /// A filter of at least `num_bits` bits (`1..=2^40`) in configuration `config`; the word
    /// count is rounded up to a power of two (so up to twice the bits asked for).
    pub fn with_config(config: TwoBitConfig, num_bits: u64) -> Result<TwoBitBloom> {
        config.validate()?;
        if num_bits == 0 || num_bits > MAX_BITS {
            return Err(FilterError::invalid(format!("num_bits {num_bits} is not in 1..=2^40")));
        }
        let words = num_bits.div_ceil(config.word_bits as u64).next_power_of_two();
        let layout = Layout::new(config, words.trailing_zeros()).map_err(FilterError::invalid)?;
        Ok(TwoBitBloom::from_parts(layout, Table::zeroed(config.word_bits, words as usize), 0))
    }

    fn from_parts(layout: Layout, table: Table, keys_inserted: u64) -> TwoBitBloom {
        TwoBitBloom { layout, table, keys_inserted: AtomicU64::new(keys_inserted) }
    }

    /// The word width and bits per key.
    pub fn config(&self) -> TwoBitConfig {
        self.layout.config
    }

    /// Number of words (a power of two).
    pub fn num_words(&self) -> u64 {
        self.layout.num_words()
    }

    /// Number of bits in the table (`num_words * word_bits`).
    pub fn num_bits(&self) -> u64 {
        self.layout.num_words() * self.layout.config.word_bits as u64
    }

    /// Adds a key hash from any thread, without a lock: one Relaxed `fetch_or` of the key's mask
    /// on its word. Does not count the key (see [`TwoBitBloom::add_keys_inserted`]).
    #[inline]
    pub fn insert_hash_atomic(&self, hash: u64) {
        let (i, mask) = self.layout.locate(hash);
        self.table.or_atomic(i, mask);
    }

    /// [`TwoBitBloom::insert_hash_atomic`] for many hashes: each group's words are computed and
    /// prefetched before the ORs. Does not count the keys.
    pub fn insert_batch_atomic(&self, hashes: &[u64]) {
        self.table.insert_batch_atomic(&self.layout, hashes);
    }

    /// Adds `n` to the reported key count (the owner, e.g. the memtable, knows how many keys it
    /// inserted through the atomic path). Saturates at `u64::MAX`.
    pub fn add_keys_inserted(&self, n: u64) {
        // fetch_update never fails with a closure returning Some.
        let _ = self
            .keys_inserted
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| Some(c.saturating_add(n)));
    }

    /// Sets the reported key count to `n`.
    pub fn set_keys_inserted(&self, n: u64) {
        self.keys_inserted.store(n, Ordering::Relaxed);
    }

    /// The layout's theoretical FPR at the current reported key count: the blocked formula with
    /// `keys_inserted / num_words` keys per word (about 1% optimistic for `k >= 2`; see the
    /// module documentation). [`InsertFilter::info`]'s estimate, from the bits, is exact.
    pub fn theoretical_fpr(&self) -> f64 {
        let n = self.keys_inserted.load(Ordering::Relaxed);
        let lambda = n as f64 / self.layout.num_words() as f64;
        let c = self.layout.config;
        math::blocked_bloom_fpr(c.word_bits, lambda, c.bits_per_key_in_word)
    }

    /// Reads a serialized two-bit filter into an owned one (copies the payload; use
    /// [`TwoBitBloomView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<TwoBitBloom> {
        let view = TwoBitBloomView::parse(&envelope::decode_kind(bytes, FilterKind::TwoBitBloom)?)?;
        Ok(view.to_owned_filter())
    }

    fn same_shape(&self, other: &TwoBitBloom) -> Result<()> {
        if self.layout != other.layout {
            return Err(FilterError::invalid(format!(
                "two-bit Bloom shapes differ: {:?} x 2^{} words vs {:?} x 2^{} words",
                self.layout.config,
                self.layout.log2_words,
                other.layout.config,
                other.layout.log2_words
            )));
        }
        Ok(())
    }
}

impl BloomShape for TwoBitBloom {
    /// At least `num_bits` bits in 32-bit words (word count rounded up to a power of two),
    /// `probes` bits per key in the word (`1..=8`).
    fn from_shape(num_bits: u64, probes: u32) -> Result<TwoBitBloom> {
        let config = TwoBitConfig { word_bits: 32, bits_per_key_in_word: probes };
        TwoBitBloom::with_config(config, num_bits)
    }

    /// Always Floe's 2 (see "Choosing `k`" in the module documentation).
    fn probes_for_bits_per_key(_bits_per_key: f64) -> u32 {
        TwoBitConfig::FLOE.bits_per_key_in_word
    }

    /// The blocked formula for one 32-bit word per block: `blocked_bloom_fpr(32, 32 / bpk, k)`.
    fn theoretical_fpr(bits_per_key: f64, probes: u32) -> f64 {
        if bits_per_key <= 0.0 {
            return 1.0;
        }
        math::blocked_bloom_fpr(32, 32.0 / bits_per_key, probes)
    }
}

impl Filter for TwoBitBloom {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        let (i, mask) = self.layout.locate(hash);
        hit(self.table.load(i), mask)
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        self.table.contains_batch(&self.layout, hashes, out);
    }

    fn kind(&self) -> FilterKind {
        FilterKind::TwoBitBloom
    }

    fn memory_bytes(&self) -> usize {
        self.table.len() * (self.layout.config.word_bits as usize / 8)
    }

    /// Serializes a Relaxed snapshot of the words. Keys inserted concurrently with this call
    /// may or may not be included; the engine serializes only after the memtable is immutable.
    fn to_bytes(&self) -> Vec<u8> {
        let params = view::encode_params(&self.layout, self.keys_inserted.load(Ordering::Relaxed));
        envelope::encode(FilterKind::TwoBitBloom, &params, |out| self.table.write_payload(out))
    }
}

impl InsertFilter for TwoBitBloom {
    /// Adds a key hash through exclusive access (no atomic read-modify-write) and counts it.
    #[inline]
    fn insert_hash(&mut self, hash: u64) {
        let (i, mask) = self.layout.locate(hash);
        self.table.or_mut(i, mask);
        let count = self.keys_inserted.get_mut();
        *count = count.saturating_add(1);
    }

    fn insert_batch(&mut self, hashes: &[u64]) {
        self.table.insert_batch_mut(&self.layout, hashes);
        let count = self.keys_inserted.get_mut();
        *count = count.saturating_add(hashes.len() as u64);
    }

    /// `estimated_fpr` is computed from the bits alone: the mean over words of
    /// `(popcount(word) / word_bits)^k`, exactly the probability that a random query's word has
    /// all `k` of its independent positions set. `keys_inserted` is the reported count (see the
    /// module documentation).
    fn info(&self) -> FillInfo {
        let hist = self.table.popcount_histogram();
        let c = self.layout.config;
        let words = self.layout.num_words() as f64;
        let mut bits_set = 0u64;
        let mut fpr_sum = 0.0;
        for (pop, &count) in hist.iter().enumerate() {
            bits_set += pop as u64 * count;
            let p = pop as f64 / c.word_bits as f64;
            fpr_sum += count as f64 * p.powi(c.bits_per_key_in_word as i32);
        }
        FillInfo {
            keys_inserted: self.keys_inserted.load(Ordering::Relaxed),
            bits: self.num_bits(),
            bits_set,
            estimated_fpr: fpr_sum / words,
        }
    }
}

impl SetOps for TwoBitBloom {
    fn union_with(&mut self, other: &TwoBitBloom) -> Result<()> {
        self.combine(other, false)?;
        let theirs = other.keys_inserted.load(Ordering::Relaxed);
        let ours = self.keys_inserted.get_mut();
        *ours = ours.saturating_add(theirs);
        Ok(())
    }

    fn intersect_with(&mut self, other: &TwoBitBloom) -> Result<()> {
        self.combine(other, true)?;
        let theirs = other.keys_inserted.load(Ordering::Relaxed);
        let ours = self.keys_inserted.get_mut();
        *ours = (*ours).min(theirs);
        Ok(())
    }
}

impl TwoBitBloom {
    fn combine(&mut self, other: &TwoBitBloom, and: bool) -> Result<()> {
        self.same_shape(other)?;
        if !self.table.combine(&other.table, and) {
            // Unreachable when the layouts are equal (the layout fixes width and length), but a
            // typed error is cheaper to reason about than a panic.
            return Err(FilterError::invalid("two-bit Bloom tables differ in width or length"));
        }
        Ok(())
    }
}

impl Clone for TwoBitBloom {
    /// A copy of a Relaxed snapshot of the words.
    fn clone(&self) -> TwoBitBloom {
        let keys = self.keys_inserted.load(Ordering::Relaxed);
        TwoBitBloom::from_parts(self.layout, self.table.snapshot(), keys)
    }
}

impl PartialEq for TwoBitBloom {
    /// Same configuration, word count, reported key count and words.
    fn eq(&self, other: &TwoBitBloom) -> bool {
        self.layout == other.layout
            && self.keys_inserted.load(Ordering::Relaxed)
                == other.keys_inserted.load(Ordering::Relaxed)
            && self.table.same_words(&other.table)
    }
}

impl Eq for TwoBitBloom {}

impl std::fmt::Debug for TwoBitBloom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoBitBloom")
            .field("config", &self.layout.config)
            .field("num_words", &self.layout.num_words())
            .field("keys_inserted", &self.keys_inserted.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
