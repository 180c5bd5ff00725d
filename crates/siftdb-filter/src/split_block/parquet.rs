//! The Parquet side of [`SplitBlockBloom`]: the specification's value hash (XXH64, seed 0, over
//! the plain encoding) and the raw bitset as a Parquet file stores it.

use super::{blocks_from_le, validate_blocks, SplitBlockBloom, BLOCK_BYTES};
use crate::envelope;
use crate::error::{FilterError, Result};
use xxhash_rust::xxh64::xxh64;

impl SplitBlockBloom {
    /// The Parquet hash of a value's plain encoding: XXH64 with seed 0.
    #[inline]
    pub fn hash(value: &[u8]) -> u64 {
        xxh64(value, 0)
    }
    /// Hash of a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value. Parquet writers hash the raw bytes,
    /// without the 4-byte length prefix of the plain page encoding.
    #[inline]
    pub fn hash_bytes(value: &[u8]) -> u64 {
        Self::hash(value)
    }
    /// Hash of an INT32 value (4 bytes little-endian).
    #[inline]
    pub fn hash_i32(value: i32) -> u64 {
        Self::hash(&value.to_le_bytes())
    }
    /// Hash of an INT64 value (8 bytes little-endian).
    #[inline]
    pub fn hash_i64(value: i64) -> u64 {
        Self::hash(&value.to_le_bytes())
    }
    /// Hash of a UINT_64 value, which Parquet stores as INT64 with the same bits.
    #[inline]
    pub fn hash_u64(value: u64) -> u64 {
        Self::hash(&value.to_le_bytes())
    }
    /// Hash of a FLOAT value (IEEE-754 bits, 4 bytes little-endian; `0.0` and `-0.0` differ).
    #[inline]
    pub fn hash_f32(value: f32) -> u64 {
        Self::hash(&value.to_le_bytes())
    }
    /// Hash of a DOUBLE value (IEEE-754 bits, 8 bytes little-endian; `0.0` and `-0.0` differ).
    #[inline]
    pub fn hash_f64(value: f64) -> u64 {
        Self::hash(&value.to_le_bytes())
    }

    /// The bitset exactly as a Parquet file stores it after the `BloomFilterHeader`: every word
    /// little-endian, blocks in order.
    pub fn to_parquet_bitset(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.blocks.len() * BLOCK_BYTES);
        for b in &self.blocks {
            envelope::write_words(&b.0, &mut out);
        }
        out
    }

    /// A filter over a Parquet bitset. The length must be a positive multiple of 32 bytes (and
    /// at most 2^37 bytes); other lengths are [`FilterError::InvalidArgument`]. The key count is
    /// unknown and set to 0.
    pub fn from_parquet_bitset(bitset: &[u8]) -> Result<SplitBlockBloom> {
        if bitset.is_empty() || !bitset.len().is_multiple_of(BLOCK_BYTES) {
            return Err(FilterError::invalid(format!(
                "Parquet bitset of {} bytes is not a positive multiple of 32",
                bitset.len()
            )));
        }
        validate_blocks((bitset.len() / BLOCK_BYTES) as u64).map_err(FilterError::invalid)?;
        Ok(SplitBlockBloom { keys_inserted: 0, blocks: blocks_from_le(bitset) })
    }
}
