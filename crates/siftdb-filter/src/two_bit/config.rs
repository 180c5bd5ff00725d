//! [`TwoBitConfig`] and the layout: the map from a key hash to a word index and a bit mask,
//! shared by the owned filter and its view (docs/format.md#two-bit-bloom).

use crate::error::{FilterError, Result};
use crate::hash::{fast_range64, mix64};
use crate::sizing::MAX_BITS;

/// Seed of the re-mix that supplies bit positions when `k * s + L` exceeds the 64 hash bits.
pub(super) const POSITION_SEED: u64 = 0x7B17_B100_F10E_2B17;
/// Most bits a key may set in its word.
pub const MAX_BITS_PER_KEY_IN_WORD: u32 = 8;

/// Word width and bits per key of a [`TwoBitBloom`](super::TwoBitBloom).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TwoBitConfig {
    /// Bits per word: 32 or 64. Defaults to 32 (Floe). 64-bit words lower the FPR at the same
    /// bits per key (a word holds more keys, so loads vary less) at the cost of 8-byte atomics.
    pub word_bits: u32,
    /// Bits each key sets inside its word, `1..=8`. Defaults to 2 (Floe); 1 is the one-bit
    /// baseline. See [`TwoBitBloom`](super::TwoBitBloom) for the trade-off.
    pub bits_per_key_in_word: u32,
}

impl TwoBitConfig {
    /// Floe's configuration: 32-bit words, two bits per key. The default.
    pub const FLOE: TwoBitConfig = TwoBitConfig { word_bits: 32, bits_per_key_in_word: 2 };
    /// The one-bit baseline: 32-bit words, one bit per key (a plain `k = 1` Bloom filter).
    pub const ONE_BIT: TwoBitConfig = TwoBitConfig { word_bits: 32, bits_per_key_in_word: 1 };

    /// [`FilterError::InvalidArgument`] unless `word_bits` is 32 or 64 and `bits_per_key_in_word` is
    /// in `1..=8`.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn validate(&self) -> Result<()> {
        self.check().map_err(FilterError::invalid)
    }

    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub(super) fn check(&self) -> std::result::Result<(), String> {
        if self.word_bits != 32 && self.word_bits != 64 {
            return Err(format!("word_bits {} is not 32 or 64", self.word_bits));
        }
        if !(1..=MAX_BITS_PER_KEY_IN_WORD).contains(&self.bits_per_key_in_word) {
            return Err(format!(
                "bits_per_key_in_word {} is not in 1..={MAX_BITS_PER_KEY_IN_WORD}",
                self.bits_per_key_in_word
            ));
        }
        Ok(())
    }

    /// Largest `log2(word count)` keeping the table within the 2^40-bit limit.
    fn max_log2_words(&self) -> u32 {
        MAX_BITS.trailing_zeros() - self.word_bits.trailing_zeros()
    }
}

impl Default for TwoBitConfig {
    fn default() -> TwoBitConfig {
        TwoBitConfig::FLOE
    }
}

/// A validated shape, and the hash-to-(word, mask) map shared by the owned filter and the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) config: TwoBitConfig,
    pub(super) log2_words: u32,
    /// `k * s + L > 64`: positions come from `mix64(h, POSITION_SEED)` instead of `h`.
    pub(super) remix: bool,
}

impl Layout {
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub(super) fn new(
        config: TwoBitConfig,
        log2_words: u32,
    ) -> std::result::Result<Layout, String> {
        config.check()?;
        if log2_words > config.max_log2_words() {
            return Err(format!(
                "log2_words {log2_words} exceeds {} for {}-bit words (2^40-bit limit)",
                config.max_log2_words(),
                config.word_bits
            ));
        }
        let pos_bits = config.word_bits.trailing_zeros();
        let remix = config.bits_per_key_in_word * pos_bits + log2_words > 64;
        Ok(Layout { config, log2_words, remix })
    }

    pub(super) fn num_words(&self) -> u64 {
        1 << self.log2_words
    }

    /// The word index of hash `h`: `fastrange64(h, 2^L)`, i.e. its top `L` bits.
    #[inline(always)]
    pub(super) fn index(&self, h: u64) -> usize {
        fast_range64(h, 1 << self.log2_words) as usize
    }

    /// The word index of hash `h` and the mask of its `k` bits in that word.
    #[inline(always)]
    pub(super) fn locate(&self, h: u64) -> (usize, u64) {
        let index = self.index(h);
        let word_bits = self.config.word_bits as u64;
        let pos_bits = self.config.word_bits.trailing_zeros();
        let mut src = if self.remix { mix64(h, POSITION_SEED) } else { h };
        let bit = |x: u64| 1u64 << (x & (word_bits - 1));
        // Straight-line code for Floe's k = 2 and the one-bit k = 1 (a well-predicted branch);
        // the loop computes the same masks for every k.
        let mask = match self.config.bits_per_key_in_word {
            1 => bit(src),
            2 => bit(src) | bit(src >> pos_bits),
            k => {
                let mut mask = 0u64;
                for _ in 0..k {
                    mask |= bit(src);
                    src >>= pos_bits;
                }
                mask
            }
        };
        (index, mask)
    }
}
