//! The split-block Bloom filter of Apache Parquet, bit-for-bit.
//!
//! Theory: a blocked Bloom filter (Putze, Sanders, Singler 2007) whose 256-bit blocks are split
//! (Broder and Mitzenmacher 2004, section 2.1) into eight 32-bit words; a key sets exactly one
//! bit in each word of its block. Eight probes in one 32-byte block make the FPR
//! `sum_i Pois(i; 256/b) * (1 - (1 - 1/32)^i)^8` at `b` bits per key
//! ([`math::split_block_fpr`]), about 0.5% at 11.5 bits per key.
//!
//! Algorithm (parquet-format `BloomFilter.md`, fixed by that specification):
//! * the hash is XXH64 with seed 0 of the value's plain encoding ([`SplitBlockBloom::hash`] and
//!   the typed helpers), NOT the crate's XXH3 [`crate::hash_key`];
//! * the block is `((h >> 32) * z) >> 32` for `z` blocks;
//! * with `x = h as u32`, word `i` of the block gets bit `(x * SALT[i]) >> 27` (wrapping u32).
//!
//! Because the hash differs from the rest of the crate, `insert(&[u8])` / `contains(&[u8])` are
//! overridden to hash with XXH64, and `insert_hash` / `contains_hash` expect that XXH64 value.
//! Probing this filter with an XXH3 hash of a key inserted by value gives false negatives, so
//! the engine, which hashes once with XXH3, must not use this kind as an SST filter.
//!
//! Sizing: the formula works for any `z >= 1`, and this crate reads any positive multiple of 32
//! bytes. Parquet writers (parquet-mr, Arrow C++, arrow-rs) size the bitset as a power of two
//! between 32 bytes and 128 MiB, and Arrow C++ rejects other sizes on read, so every filter this
//! crate sizes (`from_shape`, the builder) has a power-of-two byte count in that range; a request
//! above 128 MiB is an invalid argument rather than a silently clamped, weaker filter.
//!
//! Encoding (kind tag 4, docs/format.md#split-block-bloom): params `num_blocks:u64
//! keys_inserted:u64`; payload the Parquet bitset verbatim: `8 * num_blocks` little-endian u32
//! words, word `i` of block `b` at word index `8 b + i`.

use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::error::{FilterError, Result};
use crate::prefetch::prefetch_read;
use crate::{math, BloomShape, FillInfo, Filter, FilterKind, InsertFilter, SetOps};

/// The eight odd salts of the Parquet specification, one per word of a block.
pub const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];
/// Bytes per block (256 bits).
pub const BLOCK_BYTES: usize = 32;
/// Smallest bitset Parquet writers produce.
pub const MIN_WRITER_BYTES: u64 = 32;
/// Largest bitset Parquet writers produce (128 MiB).
pub const MAX_WRITER_BYTES: u64 = 128 << 20;
/// Probes per key: one per word, fixed by the format.
const PROBES: u32 = 8;
/// Keys whose blocks are computed and prefetched together by the batch operations.
const BATCH: usize = 16;

/// One 256-bit block of eight 32-bit words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(32))]
struct SBlock([u32; 8]);

impl Words<u32> for [SBlock] {
    #[inline(always)]
    fn word_count(&self) -> usize {
        self.len() * 8
    }
    #[inline(always)]
    fn word(&self, i: usize) -> u32 {
        self[i / 8].0[i % 8]
    }
}

/// A Parquet split-block Bloom filter. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitBlockBloom {
    keys_inserted: u64,
    blocks: Vec<SBlock>,
}

/// The block of a hash: `((h >> 32) * z) >> 32`. No overflow for `z <= 2^32`.
#[inline(always)]
fn block_of(hash: u64, num_blocks: u64) -> usize {
    (((hash >> 32) * num_blocks) >> 32) as usize
}

/// The eight one-bit word masks of a hash.
#[inline(always)]
fn mask(hash: u64) -> [u32; 8] {
    let x = hash as u32;
    SALT.map(|s| 1u32 << (x.wrapping_mul(s) >> 27))
}

/// The membership test shared by the owned filter and its zero-copy view.
#[inline(always)]
fn probe<W: Words<u32> + ?Sized>(words: &W, block: usize, hash: u64) -> bool {
    let base = block * 8;
    let mut missing = 0u32;
    for (i, m) in mask(hash).into_iter().enumerate() {
        missing |= m & !words.word(base + i);
    }
    missing == 0
}

#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn validate_blocks(num_blocks: u64) -> std::result::Result<(), String> {
    let max_blocks = crate::sizing::MAX_BITS / 256;
    if num_blocks == 0 || num_blocks > max_blocks {
        return Err(format!("num_blocks {num_blocks} is not in 1..={max_blocks}"));
    }
    Ok(())
}

impl SplitBlockBloom {
    /// Number of 256-bit blocks.
    pub fn num_blocks(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Number of bits in the table (`256 * num_blocks`).
    pub fn num_bits(&self) -> u64 {
        self.num_blocks() * 256
    }

    /// The split-block formula's FPR at the current load (`keys_inserted`).
    pub fn theoretical_fpr(&self) -> f64 {
        if self.keys_inserted == 0 {
            return 0.0;
        }
        math::split_block_fpr(8, 32, self.keys_inserted as f64 / self.num_blocks() as f64)
    }

    /// Reads a serialized split-block filter into an owned one (copies the payload; use
    /// [`SplitBlockBloomView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<SplitBlockBloom> {
        let env = envelope::decode_kind(bytes, FilterKind::SplitBlockBloom)?;
        let view = SplitBlockBloomView::parse(&env)?;
        Ok(SplitBlockBloom {
            keys_inserted: view.keys_inserted,
            blocks: blocks_from_le(env.payload),
        })
    }

    #[inline(always)]
    fn block_index(&self, hash: u64) -> usize {
        block_of(hash, self.blocks.len() as u64)
    }

    #[inline(always)]
    fn set(&mut self, block: usize, hash: u64) {
        for (w, m) in self.blocks[block].0.iter_mut().zip(mask(hash)) {
            *w |= m;
        }
        self.keys_inserted += 1;
    }

    fn same_shape(&self, other: &SplitBlockBloom) -> Result<()> {
        if self.blocks.len() != other.blocks.len() {
            return Err(FilterError::invalid(format!(
                "split-block shapes differ: {} vs {} blocks",
                self.blocks.len(),
                other.blocks.len()
            )));
        }
        Ok(())
    }
}

/// Blocks from little-endian bitset bytes; `bytes.len()` is a multiple of 32.
#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn blocks_from_le(bytes: &[u8]) -> Vec<SBlock> {
    let (blocks, _) = bytes.as_chunks::<BLOCK_BYTES>();
    blocks
        .iter()
        .map(|b| {
            let mut words = [0u32; 8];
            for (w, le) in words.iter_mut().zip(b.as_chunks::<4>().0) {
                *w = u32::from_le_bytes(*le);
            }
            SBlock(words)
        })
        .collect()
}

impl BloomShape for SplitBlockBloom {
    /// Rounds `num_bits` up to a power-of-two byte count of at least 32 bytes, as Parquet writers
    /// do. `probes` must be 8; more than 128 MiB is an invalid argument.
    fn from_shape(num_bits: u64, probes: u32) -> Result<SplitBlockBloom> {
        if probes != PROBES {
            return Err(FilterError::invalid(format!(
                "split-block filters set 8 bits per key, not {probes}"
            )));
        }
        if num_bits == 0 || num_bits > MAX_WRITER_BYTES * 8 {
            return Err(FilterError::invalid(format!(
                "num_bits {num_bits} is not in 1..=2^30 (128 MiB)"
            )));
        }
        let bytes = num_bits.div_ceil(8).max(MIN_WRITER_BYTES).next_power_of_two();
        Ok(SplitBlockBloom {
            keys_inserted: 0,
            blocks: vec![SBlock::default(); (bytes / 32) as usize],
        })
    }

    fn probes_for_bits_per_key(_bits_per_key: f64) -> u32 {
        PROBES
    }

    /// [`math::split_block_fpr`] with `256 / bits_per_key` keys per block.
    fn theoretical_fpr(bits_per_key: f64, _probes: u32) -> f64 {
        if bits_per_key <= 0.0 {
            return 1.0;
        }
        math::split_block_fpr(8, 32, 256.0 / bits_per_key)
    }
}

impl Filter for SplitBlockBloom {
    /// `hash` must be [`SplitBlockBloom::hash`] of the value (XXH64, seed 0).
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        probe(self.blocks.as_slice(), self.block_index(hash), hash)
    }

    /// Hashes `key` with XXH64 (seed 0), as Parquet does, not with the crate's XXH3.
    fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(Self::hash(key))
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.resize(hashes.len(), false);
        // Sliding prefetch window: the line of key j + BATCH is requested while key j is probed.
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
            *answer = probe(self.blocks.as_slice(), b, h);
        }
    }

    fn kind(&self) -> FilterKind {
        FilterKind::SplitBlockBloom
    }

    fn memory_bytes(&self) -> usize {
        self.blocks.len() * BLOCK_BYTES
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params = ParamWriter::new().u64(self.num_blocks()).u64(self.keys_inserted).finish();
        envelope::encode(FilterKind::SplitBlockBloom, &params, |out| {
            for b in &self.blocks {
                envelope::write_words(&b.0, out);
            }
        })
    }
}

impl InsertFilter for SplitBlockBloom {
    /// `hash` must be [`SplitBlockBloom::hash`] of the value (XXH64, seed 0).
    #[inline]
    fn insert_hash(&mut self, hash: u64) {
        self.set(self.block_index(hash), hash);
    }

    /// Hashes `key` with XXH64 (seed 0), as Parquet does, not with the crate's XXH3.
    fn insert(&mut self, key: &[u8]) {
        self.insert_hash(Self::hash(key))
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

    /// `estimated_fpr` is the mean over blocks of `prod_i (popcount(word_i) / 32)`: a query
    /// needs its one bit set in each of the eight words of a uniformly random block.
    fn info(&self) -> FillInfo {
        let mut bits_set = 0u64;
        let mut fpr_sum = 0.0;
        for b in &self.blocks {
            let mut p = 1.0;
            for w in b.0 {
                bits_set += w.count_ones() as u64;
                p *= w.count_ones() as f64 / 32.0;
            }
            fpr_sum += p;
        }
        FillInfo {
            keys_inserted: self.keys_inserted,
            bits: self.num_bits(),
            bits_set,
            estimated_fpr: fpr_sum / self.blocks.len() as f64,
        }
    }
}

impl SetOps for SplitBlockBloom {
    fn union_with(&mut self, other: &SplitBlockBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, b) in self.blocks.iter_mut().zip(&other.blocks) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x |= y;
            }
        }
        self.keys_inserted += other.keys_inserted;
        Ok(())
    }

    fn intersect_with(&mut self, other: &SplitBlockBloom) -> Result<()> {
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

/// A split-block filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct SplitBlockBloomView<'a> {
    num_blocks: u64,
    keys_inserted: u64,
    words: LeWords<'a, u32>,
}

impl<'a> SplitBlockBloomView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `SplitBlockBloom`.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<SplitBlockBloomView<'a>> {
        let mut r = ParamReader::new(env);
        let num_blocks = r.u64("num_blocks")?;
        let keys_inserted = r.u64("keys_inserted")?;
        r.finish()?;
        validate_blocks(num_blocks).map_err(|e| ParamReader::new(env).invalid(e))?;
        // num_blocks <= 2^32 here, so the word count cannot overflow.
        let words = LeWords::new(env.payload, num_blocks * 8, "split_block_bloom payload")?;
        Ok(SplitBlockBloomView { num_blocks, keys_inserted, words })
    }

    /// Keys inserted into the filter this was serialized from.
    pub fn keys_inserted(&self) -> u64 {
        self.keys_inserted
    }

    /// `hash` must be [`SplitBlockBloom::hash`] of the value. `false`: certainly absent.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        probe(&self.words, block_of(hash, self.num_blocks), hash)
    }

    /// Starts loading the 32-byte block `contains_hash(hash)` reads (a hint: see
    /// [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        if self.num_blocks > 0 {
            prefetch_read(self.words.ptr(block_of(hash, self.num_blocks) * 8));
        }
    }

    /// Hashes `value` with XXH64 (seed 0) and probes.
    #[inline]
    pub fn contains(&self, value: &[u8]) -> bool {
        self.contains_hash(SplitBlockBloom::hash(value))
    }
}

mod parquet;
#[cfg(test)]
mod tests;
