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
//! takes the top 9 bits of `x * C^i` (wrapping, `C` odd), i.e. `x` is multiplied by `C` after
//! each probe. The weak `h2 + i * stride` sequence is deliberately not used: inside a 512-bit
//! block it repeats positions and correlates probes of different keys.
//!
//! Encoding (kind tag 2, design.md "blocked_bloom (tag 2)"): params `num_blocks:u64 probes:u32
//! keys_inserted:u64`; payload `8 * num_blocks` little-endian u64 words, bit `p` (0..512) of
//! block `b` being bit `p % 64` of word `8 b + p / 64`.

use crate::error::{Error, Result};
use crate::filter::codec::{self, Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::filter::hash::{fast_range64, mix64};
use crate::filter::prefetch::prefetch_read;
use crate::filter::{math, BloomShape, FillInfo, Filter, FilterKind, InsertFilter, SetOps};

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

impl Words<u64> for [Block] {
    #[inline(always)]
    fn word_count(&self) -> usize {
        self.len() * 8
    }
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        self[i / 8].0[i % 8]
    }
}

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

/// The key's in-block pattern as eight word masks: bit `p` of the block is bit `p % 64` of
/// `mask[p / 64]`. Probes may coincide (they are drawn with replacement, as the formula assumes).
#[inline(always)]
fn pattern(hash: u64, probes: u32) -> [u64; 8] {
    let mut mask = [0u64; 8];
    let mut x = mix64(hash, BIT_SEED);
    for _ in 0..probes {
        let p = (x >> 55) as usize; // top 9 bits: 0..512
        mask[p / 64] |= 1 << (p % 64);
        x = x.wrapping_mul(BIT_STEP);
    }
    mask
}

/// The membership test shared by the owned filter and its zero-copy view.
#[inline(always)]
fn probe<W: Words<u64> + ?Sized>(words: &W, block: usize, probes: u32, hash: u64) -> bool {
    let mask = pattern(hash, probes);
    let base = block * 8;
    // Branch-free over the eight words: one cache line, no early exit to mispredict.
    let mut missing = 0u64;
    for (j, m) in mask.iter().enumerate() {
        missing |= m & !words.word(base + j);
    }
    missing == 0
}

fn validate_shape(num_blocks: u64, probes: u32) -> std::result::Result<(), String> {
    let max_blocks = crate::filter::sizing::MAX_BITS / BLOCK_BITS as u64;
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
    pub fn from_bytes(bytes: &[u8]) -> Result<BlockedBloom> {
        let view = BlockedBloomView::parse(&codec::decode_kind(bytes, FilterKind::BlockedBloom)?)?;
        let words = view.words.to_vec();
        let blocks = words.chunks_exact(8).map(|c| Block(c.try_into().expect("8 words"))).collect();
        Ok(BlockedBloom { probes: view.probes, keys_inserted: view.keys_inserted, blocks })
    }

    #[inline(always)]
    fn block_index(&self, hash: u64) -> usize {
        block_of(hash, self.blocks.len() as u64)
    }

    fn same_shape(&self, other: &BlockedBloom) -> Result<()> {
        if self.blocks.len() != other.blocks.len() || self.probes != other.probes {
            return Err(Error::invalid(format!(
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
        validate_shape(num_blocks, probes).map_err(Error::invalid)?;
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
        probe(self.blocks.as_slice(), self.block_index(hash), self.probes, hash)
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.reserve(hashes.len());
        let mut idx = [0usize; BATCH];
        for chunk in hashes.chunks(BATCH) {
            // Every block of the group first, with its line requested, then the probes: up to
            // BATCH cache misses are in flight at once.
            for (slot, &h) in idx.iter_mut().zip(chunk) {
                *slot = self.block_index(h);
                prefetch_read(&self.blocks[*slot]);
            }
            for (&b, &h) in idx.iter().zip(chunk) {
                out.push(probe(self.blocks.as_slice(), b, self.probes, h));
            }
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
        codec::encode(FilterKind::BlockedBloom, &params, |out| {
            for b in &self.blocks {
                codec::write_words(&b.0, out);
            }
        })
    }
}

impl BlockedBloom {
    #[inline(always)]
    fn set(&mut self, block: usize, hash: u64) {
        let mask = pattern(hash, self.probes);
        for (w, m) in self.blocks[block].0.iter_mut().zip(mask) {
            *w |= m;
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
        let mut idx = [0usize; BATCH];
        for chunk in hashes.chunks(BATCH) {
            for (slot, &h) in idx.iter_mut().zip(chunk) {
                *slot = self.block_index(h);
                prefetch_read(&self.blocks[*slot]);
            }
            for (&b, &h) in idx.iter().zip(chunk) {
                self.set(b, h);
            }
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
        probe(&self.words, block_of(hash, self.num_blocks), self.probes, hash)
    }
}

#[cfg(test)]
mod tests;
