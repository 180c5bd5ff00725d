//! Encoding of a [`TwoBitBloom`] (kind tag 3, docs/format.md#two-bit-bloom) and the
//! zero-copy [`TwoBitBloomView`].
//!
//! ```text
//! params  := word_bits:u8 bits_per_key_in_word:u8 log2_words:u8 keys_inserted:u64   (11 bytes)
//! payload := 2^log2_words words of word_bits bits, little-endian
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use super::table::{AtomicU32, AtomicU64, Table};
use super::{hit, Layout, TwoBitBloom, TwoBitConfig, BATCH};
use crate::envelope::{Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::error::Result;
use crate::prefetch::prefetch_read;

/// The parameter block of a filter with `layout` and `keys_inserted`.
pub(super) fn encode_params(layout: &Layout, keys_inserted: u64) -> Vec<u8> {
    // Each of the three fields is at most 64 and fits a byte (validated by `Layout::new`).
    ParamWriter::new()
        .u8(layout.config.word_bits as u8)
        .u8(layout.config.bits_per_key_in_word as u8)
        .u8(layout.log2_words as u8)
        .u64(keys_inserted)
        .finish()
}

/// The payload words, borrowed, at the width the parameters name.
#[derive(Debug, Clone, Copy)]
enum ViewWords<'a> {
    W32(LeWords<'a, u32>),
    W64(LeWords<'a, u64>),
}

impl ViewWords<'_> {
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        match self {
            ViewWords::W32(w) => w.word(i) as u64,
            ViewWords::W64(w) => w.word(i),
        }
    }

    #[inline(always)]
    fn ptr(&self, i: usize) -> *const u8 {
        match self {
            ViewWords::W32(w) => w.ptr(i),
            ViewWords::W64(w) => w.ptr(i),
        }
    }
}

/// A two-bit Bloom filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct TwoBitBloomView<'a> {
    layout: Layout,
    keys_inserted: u64,
    words: ViewWords<'a>,
}

impl<'a> TwoBitBloomView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `TwoBitBloom`. Bad
    /// parameters (a word width other than 32/64, `k` outside `1..=8`, a table above 2^40 bits)
    /// and a payload of the wrong length are [`crate::FilterError::Corruption`].
    pub fn parse(env: &Envelope<'a>) -> Result<TwoBitBloomView<'a>> {
        let mut r = ParamReader::new(env);
        let word_bits = r.u8("word_bits")? as u32;
        let bits_per_key_in_word = r.u8("bits_per_key_in_word")? as u32;
        let log2_words = r.u8("log2_words")? as u32;
        let keys_inserted = r.u64("keys_inserted")?;
        let config = TwoBitConfig { word_bits, bits_per_key_in_word };
        let layout = Layout::new(config, log2_words).map_err(|e| r.invalid(e))?;
        r.finish()?;
        let count = layout.num_words();
        let what = "two_bit_bloom payload";
        let words = if word_bits == 32 {
            ViewWords::W32(LeWords::new(env.payload, count, what)?)
        } else {
            ViewWords::W64(LeWords::new(env.payload, count, what)?)
        };
        Ok(TwoBitBloomView { layout, keys_inserted, words })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let (i, mask) = self.layout.locate(hash);
        hit(self.words.word(i), mask)
    }

    /// Starts loading the word `contains_hash(hash)` reads (a hint: see
    /// [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        prefetch_read(self.words.ptr(self.layout.index(hash)));
    }

    /// Probes many hashes, prefetching each group's words before probing them; `out` is
    /// cleared and receives one answer per hash.
    pub fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.resize(hashes.len(), false);
        for (hs, os) in hashes.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            for &h in hs {
                prefetch_read(self.words.ptr(self.layout.index(h)));
            }
            for (o, &h) in os.iter_mut().zip(hs) {
                *o = self.contains_hash(h);
            }
        }
    }

    /// The word width and bits per key.
    pub fn config(&self) -> TwoBitConfig {
        self.layout.config
    }

    /// Number of bits in the table.
    pub fn num_bits(&self) -> u64 {
        self.layout.num_words() * self.layout.config.word_bits as u64
    }

    /// The key count recorded when the filter was serialized.
    pub fn keys_inserted(&self) -> u64 {
        self.keys_inserted
    }

    /// An owned copy of the filter (copies the payload).
    pub fn to_owned_filter(&self) -> TwoBitBloom {
        let table = match &self.words {
            ViewWords::W32(w) => Table::W32(w.to_vec().into_iter().map(AtomicU32::new).collect()),
            ViewWords::W64(w) => Table::W64(w.to_vec().into_iter().map(AtomicU64::new).collect()),
        };
        TwoBitBloom::from_parts(self.layout, table, self.keys_inserted)
    }
}
