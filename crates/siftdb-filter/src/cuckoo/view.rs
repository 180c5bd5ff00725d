//! [`CuckooView`]: a serialized cuckoo filter probed in place, and the parameter checks shared
//! with [`super::Cuckoo::from_bytes`].

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use super::layout::Geometry;
use crate::envelope::{Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::error::Result;
use crate::prefetch::prefetch_read;

/// The persisted parameters, in params-block order (docs/format.md#cuckoo).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Params {
    pub geometry: Geometry,
    pub items: u64,
    pub seed: u64,
}

impl Params {
    pub fn write(&self) -> Vec<u8> {
        ParamWriter::new()
            .u8(self.geometry.fp_bits as u8)
            .u8(self.geometry.bucket_log2 as u8)
            .u64(self.items)
            .u64(self.seed)
            .finish()
    }
}

/// A cuckoo filter probed over its serialized bytes without copying the table.
#[derive(Debug, Clone, Copy)]
pub struct CuckooView<'a> {
    pub(super) params: Params,
    pub(super) words: LeWords<'a, u64>,
}

impl<'a> CuckooView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `Cuckoo`: the widths are
    /// valid, the item count fits the slots, the payload is exactly the implied number of words
    /// and the bits past the table in the last word are zero.
    pub fn parse(env: &Envelope<'a>) -> Result<CuckooView<'a>> {
        let mut r = ParamReader::new(env);
        let fp_bits = r.u8("fingerprint_bits")?;
        let bucket_log2 = r.u8("bucket_log2")?;
        let items = r.u64("items")?;
        let seed = r.u64("seed")?;
        r.finish()?;
        let invalid = |what: String| ParamReader::new(env).invalid(what);
        let geometry = Geometry::new(fp_bits as u32, bucket_log2 as u32).map_err(invalid)?;
        if items > geometry.slots() {
            return Err(invalid(format!("items {items} exceed {} slots", geometry.slots())));
        }
        let words = LeWords::new(env.payload, geometry.word_count(), "cuckoo payload")?;
        let last = words.word(words.word_count() - 1);
        if last & geometry.spare_mask() != 0 {
            return Err(invalid("bits past the table in the last payload word are set".into()));
        }
        Ok(CuckooView { params: Params { geometry, items, seed }, words })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.params.geometry.probe(&self.words, hash)
    }

    /// Starts loading both candidate buckets of `hash` (a hint: see
    /// [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        let g = &self.params.geometry;
        let i1 = g.index(hash);
        prefetch_read(self.words.ptr(g.word_of(i1)));
        prefetch_read(self.words.ptr(g.word_of(g.alt(i1, g.fingerprint(hash)))));
    }

    /// Fingerprints stored (counting duplicates).
    pub fn len(&self) -> u64 {
        self.params.items
    }

    /// True when no fingerprint is stored.
    pub fn is_empty(&self) -> bool {
        self.params.items == 0
    }

    /// Probes a batch with both candidate buckets of a group of keys prefetched first.
    pub fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        let g = &self.params.geometry;
        batch(
            g,
            hashes,
            out,
            |b| prefetch_read(self.words.ptr(g.word_of(b))),
            |h| self.contains_hash(h),
        );
    }
}

/// Keys whose buckets are prefetched together by the batch probes.
const BATCH: usize = 8;

/// Batch probing shared by the owned filter and the view: for each group of [`BATCH`] hashes,
/// prefetch both candidate buckets of every key, then probe them in order.
pub(super) fn batch(
    g: &Geometry,
    hashes: &[u64],
    out: &mut Vec<bool>,
    prefetch: impl Fn(u64),
    probe: impl Fn(u64) -> bool,
) {
    out.clear();
    out.reserve(hashes.len());
    for chunk in hashes.chunks(BATCH) {
        for &h in chunk {
            let i1 = g.index(h);
            prefetch(i1);
            prefetch(g.alt(i1, g.fingerprint(h)));
        }
        out.extend(chunk.iter().map(|&h| probe(h)));
    }
}
