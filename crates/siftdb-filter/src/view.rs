//! [`FilterView`]: any serialized filter, probed in place over borrowed bytes.
//!
//! This is what the engine holds for an SST's filter block: the block's bytes stay where they
//! were read, and `contains_hash` dispatches on the kind tag to that filter's probe code.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::blocked::BlockedBloomView;
use crate::counting::CountingBloomView;
use crate::cuckoo::CuckooView;
use crate::envelope::{self, Envelope};
use crate::error::{FilterError, Result};
use crate::ribbon::{BumpedRibbonView, RibbonView};
use crate::scalable::ScalableBloomView;
use crate::split_block::{SplitBlockBloom, SplitBlockBloomView};
use crate::standard::StandardBloomView;
use crate::two_bit::TwoBitBloomView;
use crate::xor::{BinaryFuseView, PackedBinaryFuseView, XorView};
use crate::{Filter, FilterKind};

/// A serialized filter of any kind, probed without copying its payload. Not `Copy`: a scalable
/// Bloom filter's view holds a small `Vec` of stage views.
#[derive(Debug, Clone)]
pub struct FilterView<'a> {
    bytes: &'a [u8],
    inner: Inner<'a>,
}

#[derive(Debug, Clone)]
enum Inner<'a> {
    Standard(StandardBloomView<'a>),
    Cuckoo(CuckooView<'a>),
    Counting(CountingBloomView<'a>),
    Scalable(ScalableBloomView<'a>),
    Ribbon(RibbonView<'a>),
    BumpedRibbon(BumpedRibbonView<'a>),
    Blocked(BlockedBloomView<'a>),
    SplitBlock(SplitBlockBloomView<'a>),
    Xor8(XorView<'a, u8>),
    Xor16(XorView<'a, u16>),
    BinaryFuse8(BinaryFuseView<'a, u8>),
    BinaryFuse16(BinaryFuseView<'a, u16>),
    BinaryFuse4Wise8(BinaryFuseView<'a, u8, 4>),
    BinaryFuse4Wise16(BinaryFuseView<'a, u16, 4>),
    PackedFuse(PackedBinaryFuseView<'a>),
    TwoBit(TwoBitBloomView<'a>),
}

impl<'a> FilterView<'a> {
    /// The FPR the filter's own parameters fix, where they fix it alone: Ribbon's (`2^-r`, or
    /// its mix of `r` and `r + 1` result bits), xor's and binary fuse's `2^-8` or `2^-16`, and
    /// the packed binary fuse filter's `2^-w`.
    /// `None` for the Bloom kinds and cuckoo, whose FPR also depends on how many keys were
    /// added (the engine estimates those from bits per key: `compaction::built_fpr`).
    pub fn parameter_fpr(&self) -> Option<f64> {
        match &self.inner {
            Inner::Ribbon(v) => Some(v.fpr()),
            Inner::BumpedRibbon(v) => Some(v.fpr()),
            Inner::Xor8(_) | Inner::BinaryFuse8(_) | Inner::BinaryFuse4Wise8(_) => {
                Some(1.0 / 256.0)
            }
            Inner::Xor16(_) | Inner::BinaryFuse16(_) | Inner::BinaryFuse4Wise16(_) => {
                Some(1.0 / 65536.0)
            }
            Inner::PackedFuse(v) => Some(v.fpr()),
            _ => None,
        }
    }

    /// Parses and validates a serialized filter. Corrupt or truncated bytes are
    /// [`crate::FilterError::Corruption`]; a valid envelope of an unknown kind is
    /// [`crate::FilterError::UnknownKind`]; a range filter ([`crate::Grafite`]) is
    /// [`crate::FilterError::InvalidArgument`]: it answers ranges, not points (read it with
    /// [`crate::GrafiteView::parse`]).
    pub fn parse(bytes: &'a [u8]) -> Result<FilterView<'a>> {
        let env = envelope::decode(bytes)?;
        Ok(FilterView { bytes, inner: Self::parse_inner(&env)? })
    }

    fn parse_inner(env: &Envelope<'a>) -> Result<Inner<'a>> {
        Ok(match env.kind {
            FilterKind::StandardBloom => Inner::Standard(StandardBloomView::parse(env)?),
            FilterKind::Cuckoo => Inner::Cuckoo(CuckooView::parse(env)?),
            FilterKind::CountingBloom => Inner::Counting(CountingBloomView::parse(env)?),
            FilterKind::ScalableBloom => Inner::Scalable(ScalableBloomView::parse(env)?),
            FilterKind::Ribbon => Inner::Ribbon(RibbonView::parse(env)?),
            FilterKind::BumpedRibbon => Inner::BumpedRibbon(BumpedRibbonView::parse(env)?),
            FilterKind::BlockedBloom => Inner::Blocked(BlockedBloomView::parse(env)?),
            FilterKind::SplitBlockBloom => Inner::SplitBlock(SplitBlockBloomView::parse(env)?),
            FilterKind::Xor8 => Inner::Xor8(XorView::parse(env)?),
            FilterKind::Xor16 => Inner::Xor16(XorView::parse(env)?),
            FilterKind::BinaryFuse8 => Inner::BinaryFuse8(BinaryFuseView::parse(env)?),
            FilterKind::BinaryFuse16 => Inner::BinaryFuse16(BinaryFuseView::parse(env)?),
            FilterKind::BinaryFuse4Wise8 => Inner::BinaryFuse4Wise8(BinaryFuseView::parse(env)?),
            FilterKind::BinaryFuse4Wise16 => Inner::BinaryFuse4Wise16(BinaryFuseView::parse(env)?),
            FilterKind::PackedBinaryFuse => Inner::PackedFuse(PackedBinaryFuseView::parse(env)?),
            FilterKind::TwoBitBloom => Inner::TwoBit(TwoBitBloomView::parse(env)?),
            FilterKind::Grafite => {
                return Err(FilterError::invalid(
                    "a grafite filter is a range filter: read it with GrafiteView::parse",
                ))
            }
        })
    }
}

impl FilterView<'_> {
    /// Asks the CPU to start loading the cache lines `contains_hash(hash)` will read, and
    /// returns at once. Issue it for several filters (say one per LSM level) before probing
    /// any of them, and their cache misses overlap instead of following one another. A hint
    /// only: it never changes an answer. Counting and scalable Bloom filters ignore it.
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        match &self.inner {
            Inner::Standard(v) => v.prefetch_hash(hash),
            Inner::Cuckoo(v) => v.prefetch_hash(hash),
            Inner::Counting(_) | Inner::Scalable(_) => {}
            Inner::Ribbon(v) => v.prefetch_hash(hash),
            Inner::BumpedRibbon(v) => v.prefetch_hash(hash),
            Inner::Blocked(v) => v.prefetch_hash(hash),
            Inner::SplitBlock(v) => v.prefetch_hash(hash),
            Inner::Xor8(v) => v.prefetch_hash(hash),
            Inner::Xor16(v) => v.prefetch_hash(hash),
            Inner::BinaryFuse8(v) => v.prefetch_hash(hash),
            Inner::BinaryFuse16(v) => v.prefetch_hash(hash),
            Inner::BinaryFuse4Wise8(v) => v.prefetch_hash(hash),
            Inner::BinaryFuse4Wise16(v) => v.prefetch_hash(hash),
            Inner::PackedFuse(v) => v.prefetch_hash(hash),
            Inner::TwoBit(v) => v.prefetch_hash(hash),
        }
    }

    /// Where a probe reads, as plain numbers ([`crate::ProbeHint`]), for the kinds that
    /// have one (Ribbon, and bumped Ribbon's first layer); `None` for the others and for an
    /// empty filter.
    pub fn probe_hint(&self) -> Option<crate::ProbeHint> {
        match &self.inner {
            Inner::Ribbon(v) => v.probe_hint(),
            Inner::BumpedRibbon(v) => v.probe_hint(),
            _ => None,
        }
    }

    /// Bytes the parsed view requested from the allocator beyond the bytes it borrows: one
    /// buffer at most (a scalable filter's stage list, a bumped Ribbon's layer list; nothing for
    /// the other kinds). The allocator's own header and rounding are the caller's to model.
    pub fn heap_request_bytes(&self) -> usize {
        match &self.inner {
            Inner::Scalable(v) => v.heap_request_bytes(),
            Inner::BumpedRibbon(v) => v.heap_request_bytes(),
            _ => 0,
        }
    }
}

impl Filter for FilterView<'_> {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        match &self.inner {
            Inner::Standard(v) => v.contains_hash(hash),
            Inner::Cuckoo(v) => v.contains_hash(hash),
            Inner::Counting(v) => v.contains_hash(hash),
            Inner::Scalable(v) => v.contains_hash(hash),
            Inner::Ribbon(v) => v.contains_hash(hash),
            Inner::BumpedRibbon(v) => v.contains_hash(hash),
            Inner::Blocked(v) => v.contains_hash(hash),
            Inner::SplitBlock(v) => v.contains_hash(hash),
            Inner::Xor8(v) => v.contains_hash(hash),
            Inner::Xor16(v) => v.contains_hash(hash),
            Inner::BinaryFuse8(v) => v.contains_hash(hash),
            Inner::BinaryFuse16(v) => v.contains_hash(hash),
            Inner::BinaryFuse4Wise8(v) => v.contains_hash(hash),
            Inner::BinaryFuse4Wise16(v) => v.contains_hash(hash),
            Inner::PackedFuse(v) => v.contains_hash(hash),
            Inner::TwoBit(v) => v.contains_hash(hash),
        }
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        match &self.inner {
            Inner::Counting(v) => v.contains_batch(hashes, out),
            Inner::Cuckoo(v) => v.contains_batch(hashes, out),
            _ => {
                out.clear();
                out.extend(hashes.iter().map(|&h| self.contains_hash(h)));
            }
        }
    }

    /// Hashes `key` as the filter's kind requires: XXH3 ([`crate::hash_key`]) for every
    /// kind except the Parquet split-block filter, which takes XXH64 with seed 0.
    fn contains(&self, key: &[u8]) -> bool {
        match &self.inner {
            Inner::SplitBlock(v) => v.contains_hash(SplitBlockBloom::hash(key)),
            _ => self.contains_hash(crate::hash_key(key)),
        }
    }

    fn kind(&self) -> FilterKind {
        match &self.inner {
            Inner::Standard(_) => FilterKind::StandardBloom,
            Inner::Cuckoo(_) => FilterKind::Cuckoo,
            Inner::Counting(_) => FilterKind::CountingBloom,
            Inner::Scalable(_) => FilterKind::ScalableBloom,
            Inner::Ribbon(_) => FilterKind::Ribbon,
            Inner::BumpedRibbon(_) => FilterKind::BumpedRibbon,
            Inner::Blocked(_) => FilterKind::BlockedBloom,
            Inner::SplitBlock(_) => FilterKind::SplitBlockBloom,
            Inner::Xor8(_) => FilterKind::Xor8,
            Inner::Xor16(_) => FilterKind::Xor16,
            Inner::BinaryFuse8(_) => FilterKind::BinaryFuse8,
            Inner::BinaryFuse16(_) => FilterKind::BinaryFuse16,
            Inner::BinaryFuse4Wise8(_) => FilterKind::BinaryFuse4Wise8,
            Inner::BinaryFuse4Wise16(_) => FilterKind::BinaryFuse4Wise16,
            Inner::PackedFuse(_) => FilterKind::PackedBinaryFuse,
            Inner::TwoBit(_) => FilterKind::TwoBitBloom,
        }
    }

    fn memory_bytes(&self) -> usize {
        self.bytes.len()
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.bytes.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;
    use crate::{
        hash_key, BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom,
        CountingBloom, Cuckoo, PackedBinaryFuse, Ribbon, ScalableBloom, StandardBloom, TwoBitBloom,
        TwoBitConfig, Xor16, Xor8,
    };

    /// Serialized filters of every kind holding `keys` (an empty slice: the empty filters).
    fn every_kind(keys: &[u64]) -> Vec<Vec<u8>> {
        let n = keys.len().max(1) as u64;
        let bloom = |mut f: Box<dyn InsertFilter>| {
            keys.iter().for_each(|&h| f.insert_hash(h));
            f.to_bytes()
        };
        let mut cuckoo = Cuckoo::with_false_pos(0.01).expected_items(n).unwrap();
        keys.iter().for_each(|&h| cuckoo.insert_hash(h).unwrap());
        vec![
            bloom(Box::new(StandardBloom::with_false_pos(0.01).expected_items(n).unwrap())),
            bloom(Box::new(BlockedBloom::with_false_pos(0.01).expected_items(n).unwrap())),
            bloom(Box::new(SplitBlockBloom::with_false_pos(0.01).expected_items(n).unwrap())),
            bloom(Box::new(CountingBloom::with_false_pos(0.01).expected_items(n).unwrap())),
            bloom(Box::new(TwoBitBloom::with_config(TwoBitConfig::FLOE, n * 10).unwrap())),
            bloom(Box::new(ScalableBloom::new(n, 0.01).unwrap())),
            cuckoo.to_bytes(),
            Ribbon::build(keys).unwrap().to_bytes(),
            Xor8::build(keys).unwrap().to_bytes(),
            Xor16::build(keys).unwrap().to_bytes(),
            BinaryFuse8::build(keys).unwrap().to_bytes(),
            BinaryFuse16::build(keys).unwrap().to_bytes(),
            BinaryFuse4Wise8::build(keys).unwrap().to_bytes(),
            BinaryFuse4Wise16::build(keys).unwrap().to_bytes(),
            PackedBinaryFuse::build(keys, 11).unwrap().to_bytes(),
            PackedBinaryFuse::build_with(keys, 5, 3, 1).unwrap().to_bytes(),
        ]
    }

    #[test]
    fn prefetch_hash_never_changes_an_answer_of_any_kind_even_when_empty() {
        for n in [0u64, 1, 3000] {
            let keys: Vec<u64> = (0..n).map(|i| hash_key(&i.to_le_bytes())).collect();
            let others: Vec<u64> = (n..n + 3000).map(|i| hash_key(&i.to_le_bytes())).collect();
            for bytes in every_kind(&keys) {
                let view = FilterView::parse(&bytes).unwrap();
                let before: Vec<bool> = others.iter().map(|&h| view.contains_hash(h)).collect();
                for &h in keys.iter().chain(&others) {
                    view.prefetch_hash(h);
                }
                for &h in &keys {
                    view.prefetch_hash(h);
                    assert!(view.contains_hash(h), "{} with {n} keys", view.kind());
                }
                let after: Vec<bool> = others.iter().map(|&h| view.contains_hash(h)).collect();
                assert_eq!(before, after, "{} with {n} keys", view.kind());
            }
        }
    }
}
