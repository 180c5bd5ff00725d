//! The cache-line blocked Bloom filter: every key lives in one 512-bit block.
//!
//! Theory (Putze, Sanders, Singler 2007, "Cache-, hash- and space-efficient Bloom filters"): the
//! table is an array of 512-bit blocks, one 64-byte cache line each. A key picks one block and
//! sets `k` bits inside it, so a query touches one cache line instead of `k`. The price is a
//! higher FPR than the standard layout at equal memory, because the number of keys per block is
//! Poisson distributed and the fullest blocks dominate: `FPR = sum_i Pois(i; 512/b) * f(i)` with
//! `f(i) = (1 - (1 - 1/512)^(k i))^k` at `b` bits per key ([`math::blocked_bloom_fpr`]). The
//! optimal `k` is therefore below the textbook `b ln 2` ([`math::blocked_optimal_probes`]).
//! This is the layout of RocksDB's `FastLocalBloom` (filter format_version 5).
//!
//! Hashing: the block is `fastrange64(h, num_blocks)`, which is driven by the high bits of `h`.
//! The in-block positions come from an independent re-mix `x = fmix64(h + BIT_SEED)`: probe `i`
//! takes the top 9 bits of `x * C^i` (wrapping, `C` odd; the powers are precomputed so the `k`
//! multiplications are independent). The `h2 + i * stride` sequence is deliberately not used:
//! reduced to 512 positions only 18 bits of `(h2, stride)` matter, so two keys of a block that
//! agree on them share every probe, and a stride with factors of two repeats positions. Each
//! probe here takes the top bits of a full 64-bit product instead.
//!
//! Encoding (kind tag 2, docs/format.md#blocked-bloom): params `num_blocks:u64 probes:u32
//! keys_inserted:u64`; payload `8 * num_blocks` little-endian u64 words, bit `p` (0..512) of
//! block `b` being bit `p % 64` of word `8 b + p / 64`.

use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::error::{FilterError, Result};
use crate::hash::{fast_range64, mix64};
use crate::prefetch::prefetch_read;
use crate::{math, BloomShape, FillInfo, Filter, FilterKind, InsertFilter, SetOps};

/// Bits per block: one 64-byte cache line.
pub const BLOCK_BITS: u32 = 512;
/// Seed of the re-mix that yields the in-block bit positions.
const BIT_SEED: u64 = 0xB10C_4ED5_EED5_0B17;
/// Odd multiplier advancing the in-block position generator (2^64 / golden ratio).
const BIT_STEP: u64 = 0x9E37_79B9_7F4A_7C15;
/// Most probes a key may set.
const MAX_PROBES: u32 = 24;
/// Keys whose blocks are computed and prefetched together by the batch operations.
const BATCH: usize = 16;

/// One 512-bit block. The alignment makes every block of the owned filter exactly one cache
/// line, so a probe never touches two lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(64))]
struct Block([u64; 8]);

/// A cache-line blocked Bloom filter. See the module documentation for the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedBloom {
    probes: u32,
    keys_inserted: u64,
    blocks: Vec<Block>,
}

/// The block of a key hash.
#[inline(always)]
fn block_of(hash: u64, num_blocks: u64) -> usize {
    fast_range64(hash, num_blocks) as usize
}

/// `BIT_STEP^i` for `i < MAX_PROBES`: probe `i` multiplies the re-mixed hash by its own power,
/// so the probes are independent multiplications rather than one dependent chain.
const STEP_POWERS: [u64; MAX_PROBES as usize] = {
    let mut p = [1u64; MAX_PROBES as usize];
    let mut i = 1;
    while i < p.len() {
        p[i] = p[i - 1].wrapping_mul(BIT_STEP);
        i += 1;
    }
    p
};

/// The in-block bit positions (0..512) of a key: the top 9 bits of `x * BIT_STEP^i`,
/// `x = fmix64(hash + BIT_SEED)`. Probes may coincide (drawn with replacement, as the formula
/// assumes).
#[inline(always)]
fn positions(hash: u64, probes: u32) -> impl Iterator<Item = usize> {
    let x = mix64(hash, BIT_SEED);
    STEP_POWERS[..probes as usize].iter().map(move |&c| (x.wrapping_mul(c) >> 55) as usize)
}

/// The membership test shared by the owned filter and its zero-copy view, over the key's block.
#[inline(always)]
fn probe(block: &[u64; 8], probes: u32, hash: u64) -> bool {
    // Branch-free: every probe reads the same (already loaded) line; no early exit to mispredict.
    // `p < 512`, so `p / 64 < 8` and the index needs no bounds check.
    let mut found = 1u64;
    for p in positions(hash, probes) {
        found &= block[p / 64] >> (p % 64);
    }
    found & 1 == 1
}

#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn validate_shape(num_blocks: u64, probes: u32) -> std::result::Result<(), String> {
    let max_blocks = crate::sizing::MAX_BITS / BLOCK_BITS as u64;
    if num_blocks == 0 || num_blocks > max_blocks {
        return Err(format!("num_blocks {num_blocks} is not in 1..={max_blocks}"));
    }
    if probes == 0 || probes > MAX_PROBES {
        return Err(format!("probes {probes} is not in 1..={MAX_PROBES}"));
    }
    Ok(())
}

impl BlockedBloom {
    /// Number of 512-bit blocks.
    pub fn num_blocks(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Number of bits in the table (`512 * num_blocks`).
    pub fn num_bits(&self) -> u64 {
        self.num_blocks() * BLOCK_BITS as u64
    }

    /// Bits set per key (all inside the key's block).
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// The blocked formula's FPR at this filter's current load (`keys_inserted`).
    pub fn theoretical_fpr(&self) -> f64 {
        if self.keys_inserted == 0 {
            return 0.0;
        }
        let keys_per_block = self.keys_inserted as f64 / self.num_blocks() as f64;
        math::blocked_bloom_fpr(BLOCK_BITS, keys_per_block, self.probes)
    }

    /// Reads a serialized blocked Bloom filter into an owned one (copies the payload; use
    /// [`BlockedBloomView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<BlockedBloom> {
        let view =
            BlockedBloomView::parse(&envelope::decode_kind(bytes, FilterKind::BlockedBloom)?)?;
        let words = view.words.to_vec();
        let blocks = words.as_chunks::<8>().0.iter().map(|&c| Block(c)).collect();
        Ok(BlockedBloom { probes: view.probes, keys_inserted: view.keys_inserted, blocks })
    }

    #[inline(always)]
    fn block_index(&self, hash: u64) -> usize {
        block_of(hash, self.blocks.len() as u64)
    }

    fn same_shape(&self, other: &BlockedBloom) -> Result<()> {
        if self.blocks.len() != other.blocks.len() || self.probes != other.probes {
            return Err(FilterError::invalid(format!(
                "blocked Bloom shapes differ: {} blocks/{} probes vs {} blocks/{} probes",
                self.blocks.len(),
                self.probes,
                other.blocks.len(),
                other.probes
            )));
        }
        Ok(())
    }
}

impl BloomShape for BlockedBloom {
    /// Rounds `num_bits` up to whole 512-bit blocks.
    fn from_shape(num_bits: u64, probes: u32) -> Result<BlockedBloom> {
        let num_blocks = num_bits.div_ceil(BLOCK_BITS as u64);
        validate_shape(num_blocks, probes).map_err(FilterError::invalid)?;
        Ok(BlockedBloom {
            probes,
            keys_inserted: 0,
            blocks: vec![Block::default(); num_blocks as usize],
        })
    }

    /// The probe count minimising the blocked formula (below the textbook `b ln 2`).
    fn probes_for_bits_per_key(bits_per_key: f64) -> u32 {
        math::blocked_optimal_probes(BLOCK_BITS, bits_per_key, MAX_PROBES)
    }

    /// [`math::blocked_bloom_fpr`] with `512 / bits_per_key` keys per block.
    fn theoretical_fpr(bits_per_key: f64, probes: u32) -> f64 {
        if bits_per_key <= 0.0 {
            return 1.0;
        }
        math::blocked_bloom_fpr(BLOCK_BITS, BLOCK_BITS as f64 / bits_per_key, probes)
    }
}

impl Filter for BlockedBloom {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        probe(&self.blocks[self.block_index(hash)].0, self.probes, hash)
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.resize(hashes.len(), false);
        // The blocks of the first BATCH keys are computed and their lines requested before any
        // probe; from then on, probing key j requests the line of key j + BATCH, so BATCH cache
        // misses stay in flight (Boost.Bloom's bulk mode, as a sliding window).
        let mut ring = [0usize; BATCH];
        for (slot, &h) in ring.iter_mut().zip(hashes) {
            *slot = self.block_index(h);
            prefetch_read(&self.blocks[*slot]);
        }
        for (j, (&h, answer)) in hashes.iter().zip(out.iter_mut()).enumerate() {
            let b = ring[j % BATCH];
            if let Some(&ahead) = hashes.get(j + BATCH) {
                ring[j % BATCH] = self.block_index(ahead);
                prefetch_read(&self.blocks[ring[j % BATCH]]);
            }
            *answer = probe(&self.blocks[b].0, self.probes, h);
        }
    }

    fn kind(&self) -> FilterKind {
        FilterKind::BlockedBloom
    }

    fn memory_bytes(&self) -> usize {
        self.blocks.len() * 64
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params = ParamWriter::new()
            .u64(self.num_blocks())
            .u32(self.probes)
            .u64(self.keys_inserted)
            .finish();
        envelope::encode(FilterKind::BlockedBloom, &params, |out| {
            for b in &self.blocks {
                envelope::write_words(&b.0, out);
            }
        })
    }
}

impl BlockedBloom {
    #[inline(always)]
    fn set(&mut self, block: usize, hash: u64) {
        let words = &mut self.blocks[block].0;
        for p in positions(hash, self.probes) {
            words[p / 64] |= 1 << (p % 64);
        }
        self.keys_inserted += 1;
    }
}

impl InsertFilter for BlockedBloom {
    #[inline]
    fn insert_hash(&mut self, hash: u64) {
        self.set(self.block_index(hash), hash);
    }

    fn insert_batch(&mut self, hashes: &[u64]) {
        // Same sliding prefetch window as `contains_batch`.
        let mut ring = [0usize; BATCH];
        for (slot, &h) in ring.iter_mut().zip(hashes) {
            *slot = self.block_index(h);
            prefetch_read(&self.blocks[*slot]);
        }
        for (j, &h) in hashes.iter().enumerate() {
            let b = ring[j % BATCH];
            if let Some(&ahead) = hashes.get(j + BATCH) {
                ring[j % BATCH] = self.block_index(ahead);
                prefetch_read(&self.blocks[ring[j % BATCH]]);
            }
            self.set(b, h);
        }
    }

    /// `estimated_fpr` is the mean over blocks of `(popcount / 512)^k`: a query lands in a
    /// uniformly random block and needs `k` set bits there.
    fn info(&self) -> FillInfo {
        let mut bits_set = 0u64;
        let mut fpr_sum = 0.0;
        for b in &self.blocks {
            let ones: u32 = b.0.iter().map(|w| w.count_ones()).sum();
            bits_set += ones as u64;
            fpr_sum += (ones as f64 / BLOCK_BITS as f64).powi(self.probes as i32);
        }
        FillInfo {
            keys_inserted: self.keys_inserted,
            bits: self.num_bits(),
            bits_set,
            estimated_fpr: fpr_sum / self.blocks.len() as f64,
        }
    }
}

impl SetOps for BlockedBloom {
    fn union_with(&mut self, other: &BlockedBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, b) in self.blocks.iter_mut().zip(&other.blocks) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x |= y;
            }
        }
        self.keys_inserted += other.keys_inserted;
        Ok(())
    }

    fn intersect_with(&mut self, other: &BlockedBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, b) in self.blocks.iter_mut().zip(&other.blocks) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x &= y;
            }
        }
        self.keys_inserted = self.keys_inserted.min(other.keys_inserted);
        Ok(())
    }
}

/// A blocked Bloom filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct BlockedBloomView<'a> {
    num_blocks: u64,
    probes: u32,
    keys_inserted: u64,
    words: LeWords<'a, u64>,
}

impl<'a> BlockedBloomView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `BlockedBloom`.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<BlockedBloomView<'a>> {
        let mut r = ParamReader::new(env);
        let num_blocks = r.u64("num_blocks")?;
        let probes = r.u32("probes")?;
        let keys_inserted = r.u64("keys_inserted")?;
        r.finish()?;
        validate_shape(num_blocks, probes).map_err(|e| ParamReader::new(env).invalid(e))?;
        // num_blocks <= 2^31 here, so the word count cannot overflow.
        let words = LeWords::new(env.payload, num_blocks * 8, "blocked_bloom payload")?;
        Ok(BlockedBloomView { num_blocks, probes, keys_inserted, words })
    }

    /// Keys inserted into the filter this was serialized from.
    pub fn keys_inserted(&self) -> u64 {
        self.keys_inserted
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let base = block_of(hash, self.num_blocks) * 8;
        let block: [u64; 8] = std::array::from_fn(|j| self.words.word(base + j));
        probe(&block, self.probes, hash)
    }

    /// Starts loading the 64-byte block `contains_hash(hash)` reads (a hint: see
    /// [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        if self.num_blocks > 0 {
            prefetch_read(self.words.ptr(block_of(hash, self.num_blocks) * 8));
        }
    }
}

#[cfg(test)]
mod tests;
