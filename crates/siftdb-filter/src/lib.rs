//! `siftdb-filter`: approximate-membership filters, usable on their own or inside the siftdb
//! engine (which re-exports this crate as `siftdb::filter`).
//!
//! # Choosing a filter
//! Bits per key are those of the algorithm at the stated FPR, from its sizing formula
//! ([`cost`]); `n` is the key count.
//!
//! | filter | inserts after build | deletes | bits/key at 1% | notes |
//! |---|---|---|---|---|
//! | [`StandardBloom`] | yes | no | 9.6 (`1.44 log2(1/FPR)`) | k probes anywhere in the array; the textbook baseline |
//! | [`BlockedBloom`] | yes | no | ~10 (`~1.5 log2(1/FPR)`) | all probes in one 64-byte cache line: one miss per query; batch probes prefetch |
//! | [`SplitBlockBloom`] | yes | no | ~10.5 (size rounded to 2^j bytes) | Parquet's format, readable by any Parquet reader; hashes with XXH64, not [`hash_key`] |
//! | [`TwoBitBloom`] | yes, lock-free from many threads | no | ~25 (k = 2; 5.7% at 8) | two bits in one u32 set by one atomic OR; the engine's memtable filter |
//! | [`CountingBloom`] | yes | yes | ~38 (4-bit counters) | removal of inserted keys |
//! | [`ScalableBloom`] | unbounded | no | grows | when the key count is unknown in advance |
//! | [`Cuckoo`] | yes, until full (an insert can fail) | yes | 12.6 (f = 12 at 95% load: `f / load`; FPR 0.2%) | 8/12/16-bit fingerprints, two buckets per key |
//! | [`Ribbon`] | no (static) | no | ~7.0 (`~1.05 log2(1/FPR)`, fractional bits) | near the `log2(1/FPR)` bound, 2 blocks per query; builds about 3x faster than bumped Ribbon |
//! | [`BumpedRibbon`] | no (static) | no | ~6.7 (`~1.01 log2(1/FPR)` at large n) | Ribbon's probe in fewer slots (BuRR): keys that do not fit a layer are bumped to the next; the engine's default filter of compacted SSTs |
//! | [`Xor8`] / [`Xor16`] | no (static) | no | 9.84 (FPR `2^-8`) / 19.7 (`2^-16`) | three lookups; 1.23 n slots |
//! | [`BinaryFuse8`] / [`BinaryFuse16`] | no (static) | no | ~9.0 / ~18.1 (`2^-8` / `2^-16`, large n) | xor filter in ~1.125 n slots at large n; builds faster |
//! | [`BinaryFuse4Wise8`] / [`BinaryFuse4Wise16`] | no (static) | no | ~8.6 / ~17.2 (`2^-8` / `2^-16`, large n) | 4-wise: ~1.075 n slots at large n, never more than 3-wise from a few hundred keys up; a fourth lookup |
//! | [`PackedBinaryFuse`] | no (static) | no | ~7.5 at `2^-7` (w = 7, large n) | any width 1..=32 bits, bit-packed: FPR `2^-w` at ~1.075 w bits/key; one filter per level width (Pebble's per-level fingerprints) |
//! | [`Grafite`] | no (static) | no | ~B (+0.13) for FPR `l / 2^(B-2)` on ranges of `l` keys | range emptiness ("any key in `[lo, hi]`?"), not points: [`RangeFilter`]; the bound holds for any keys and queries |
//!
//! Static filters (ribbon, bumped ribbon, xor, 3- and 4-wise binary fuse, packed binary fuse)
//! are built once from a fixed key set, as an SST's key set is once the file is written, and
//! come close to the `log2(1/FPR)` bits-per-key bound that a Bloom filter misses by 1.44x.
//! [`Grafite`] answers a different question, whether a key range holds a key, for scans. The
//! siftdb engine writes the two-bit filter at flush (no extra pass) and a bumped ribbon filter
//! at compaction. Measured figures for every row: `cargo run --release --example filter_table`
//! in the siftdb repository.
//!
//! The same choice in code, by what the key set allows:
//! ```
//! use siftdb_filter::prelude::*;
//! use siftdb_filter::{hash_key, BlockedBloom, Cuckoo, FilterView, Ribbon};
//!
//! let keys: Vec<u64> = (0..10_000u64).map(|i| hash_key(&i.to_le_bytes())).collect();
//!
//! // The set is known once and never changes (an SST, a shipped dictionary): a static filter,
//! // the fewest bits per key for the FPR.
//! let ribbon = Ribbon::with_false_pos(0.01).build(&keys)?;
//!
//! // Keys keep arriving: a Bloom filter sized for the expected count; blocked = one cache miss.
//! let mut bloom = BlockedBloom::with_false_pos(0.01).expected_items(10_000)?;
//! keys.iter().for_each(|&h| bloom.insert_hash(h));
//!
//! // Keys also leave: a cuckoo filter (an insert into a full table is an error, not a loss).
//! let mut cuckoo = Cuckoo::with_false_pos(0.01).expected_items(10_000)?;
//! for &h in &keys {
//!     cuckoo.insert_hash(h)?;
//! }
//! cuckoo.remove_hash(keys[0])?;
//!
//! // No false negatives, whichever was chosen; any of them reads back from bytes in place.
//! assert!(keys[1..].iter().all(|&h| ribbon.contains_hash(h) && bloom.contains_hash(h)));
//! assert!(keys[1..].iter().all(|&h| cuckoo.contains_hash(h)));
//! let bytes = ribbon.to_bytes();
//! assert!(FilterView::parse(&bytes)?.contains_hash(keys[0]));
//! # Ok::<(), siftdb_filter::FilterError>(())
//! ```
//!
//! # Hashing once
//! Keys are hashed once with [`hash_key`] (XXH3-64). Every filter takes that 64-bit hash through
//! `insert_hash` / `contains_hash`; `insert(&[u8])` / `contains(&[u8])` are conveniences on top.
//!
//! # Sizing
//! Bloom-family filters are sized before use, from a target FPR or a bits-per-key budget and the
//! expected number of keys, or from an explicit shape:
//! ```
//! use siftdb_filter::prelude::*;
//! use siftdb_filter::StandardBloom;
//! let mut f = StandardBloom::with_false_pos(0.01).expected_items(1000).unwrap();
//! f.insert(b"apple");
//! assert!(f.contains(b"apple"));
//! ```
//!
//! # Serialization
//! Every filter serializes with `to_bytes()` into one self-describing envelope (kind tag,
//! parameters, payload, CRC; see design.md). [`FilterView::parse`] reads any of them in place
//! from a borrowed `&[u8]` without copying the payload.

mod blocked;
#[cfg(test)]
mod conformance;
pub mod cost;
mod counting;
mod cuckoo;
mod envelope;
mod error;
mod grafite;
pub mod hash;
mod math;
mod prefetch;
mod ribbon;
pub mod rng;
mod scalable;
mod sizing;
mod split_block;
mod standard;
mod two_bit;
mod view;
mod xor;

pub use blocked::{BlockedBloom, BlockedBloomView};
pub use counting::{CountingBloom, CountingBloomView};
pub use cuckoo::{cuckoo_fpr, Cuckoo, CuckooBuilder, CuckooView};
pub use envelope::kind_tag;
pub use error::{FilterError, Result};
pub use grafite::{Grafite, GrafiteBuilder, GrafiteView};
pub use hash::{hash_key, hash_keys};
pub use prefetch::{ProbeHint, SharedProbeHint};
// The engine's batch paths (skip-list searches, Python key lists) overlap their cache misses
// with the same hint; not part of the filter API proper.
#[doc(hidden)]
pub use prefetch::prefetch_read;
pub use ribbon::{
    BumpedRibbon, BumpedRibbonBuilder, BumpedRibbonView, Ribbon, RibbonBuilder, RibbonView,
};
pub use scalable::{ScalableBloom, ScalableBloomView};
pub use sizing::{BloomBuilder, BloomShape, Sizing};
pub use split_block::{SplitBlockBloom, SplitBlockBloomView};
pub use standard::{StandardBloom, StandardBloomView};
pub use two_bit::{TwoBitBloom, TwoBitBloomView, TwoBitConfig, MAX_BITS_PER_KEY_IN_WORD};
pub use view::FilterView;
pub use xor::{
    Arity, BinaryFuse, BinaryFuse16, BinaryFuse16View, BinaryFuse4Wise16, BinaryFuse4Wise16View,
    BinaryFuse4Wise8, BinaryFuse4Wise8View, BinaryFuse8, BinaryFuse8View, BinaryFuseView,
    Fingerprint, FuseArity, PackedBinaryFuse, PackedBinaryFuseView, Xor, Xor16, Xor16View, Xor8,
    Xor8View, XorView,
};

/// Every filter this crate can serialize. The numeric tag is part of the on-disk format: a tag is
/// never reused, and a change to a filter's encoding takes a new tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FilterKind {
    /// [`StandardBloom`], tag 1.
    StandardBloom,
    /// [`BlockedBloom`], tag 2.
    BlockedBloom,
    /// `TwoBitBloom` (also its one-bit and other word configurations), tag 3.
    TwoBitBloom,
    /// [`SplitBlockBloom`] (Parquet), tag 4.
    SplitBlockBloom,
    /// `CountingBloom`, tag 5.
    CountingBloom,
    /// `ScalableBloom`, tag 6.
    ScalableBloom,
    /// `Cuckoo`, tag 7.
    Cuckoo,
    /// `Xor8`, tag 8.
    Xor8,
    /// `Xor16`, tag 9.
    Xor16,
    /// `BinaryFuse8`, tag 10.
    BinaryFuse8,
    /// `BinaryFuse16`, tag 11.
    BinaryFuse16,
    /// `Ribbon`, tag 12.
    Ribbon,
    /// [`Grafite`], tag 13: a range filter, read with [`GrafiteView`] (not [`FilterView`]).
    Grafite,
    /// `BinaryFuse4Wise8` (4-wise binary fuse, 8-bit fingerprints), tag 14.
    BinaryFuse4Wise8,
    /// `BinaryFuse4Wise16` (4-wise binary fuse, 16-bit fingerprints), tag 15.
    BinaryFuse4Wise16,
    /// [`PackedBinaryFuse`] (binary fuse, fingerprints of 1..=32 bits bit-packed), tag 16.
    PackedBinaryFuse,
    /// [`BumpedRibbon`] (bumped ribbon, BuRR), tag 17.
    BumpedRibbon,
}

impl FilterKind {
    /// Every kind, in tag order.
    pub const ALL: [FilterKind; 17] = [
        FilterKind::StandardBloom,
        FilterKind::BlockedBloom,
        FilterKind::TwoBitBloom,
        FilterKind::SplitBlockBloom,
        FilterKind::CountingBloom,
        FilterKind::ScalableBloom,
        FilterKind::Cuckoo,
        FilterKind::Xor8,
        FilterKind::Xor16,
        FilterKind::BinaryFuse8,
        FilterKind::BinaryFuse16,
        FilterKind::Ribbon,
        FilterKind::Grafite,
        FilterKind::BinaryFuse4Wise8,
        FilterKind::BinaryFuse4Wise16,
        FilterKind::PackedBinaryFuse,
        FilterKind::BumpedRibbon,
    ];

    /// The persisted tag.
    pub fn tag(self) -> u8 {
        match self {
            FilterKind::StandardBloom => 1,
            FilterKind::BlockedBloom => 2,
            FilterKind::TwoBitBloom => 3,
            FilterKind::SplitBlockBloom => 4,
            FilterKind::CountingBloom => 5,
            FilterKind::ScalableBloom => 6,
            FilterKind::Cuckoo => 7,
            FilterKind::Xor8 => 8,
            FilterKind::Xor16 => 9,
            FilterKind::BinaryFuse8 => 10,
            FilterKind::BinaryFuse16 => 11,
            FilterKind::Ribbon => 12,
            FilterKind::Grafite => 13,
            FilterKind::BinaryFuse4Wise8 => 14,
            FilterKind::BinaryFuse4Wise16 => 15,
            FilterKind::PackedBinaryFuse => 16,
            FilterKind::BumpedRibbon => 17,
        }
    }

    /// The kind with this tag, if any.
    pub fn from_tag(tag: u8) -> Option<FilterKind> {
        FilterKind::ALL.into_iter().find(|k| k.tag() == tag)
    }

    /// Snake-case name, as printed by the filter table and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            FilterKind::StandardBloom => "standard_bloom",
            FilterKind::BlockedBloom => "blocked_bloom",
            FilterKind::TwoBitBloom => "two_bit_bloom",
            FilterKind::SplitBlockBloom => "split_block_bloom",
            FilterKind::CountingBloom => "counting_bloom",
            FilterKind::ScalableBloom => "scalable_bloom",
            FilterKind::Cuckoo => "cuckoo",
            FilterKind::Xor8 => "xor8",
            FilterKind::Xor16 => "xor16",
            FilterKind::BinaryFuse8 => "binary_fuse8",
            FilterKind::BinaryFuse16 => "binary_fuse16",
            FilterKind::Ribbon => "ribbon",
            FilterKind::Grafite => "grafite",
            FilterKind::BinaryFuse4Wise8 => "binary_fuse4_8",
            FilterKind::BinaryFuse4Wise16 => "binary_fuse4_16",
            FilterKind::PackedBinaryFuse => "packed_binary_fuse",
            FilterKind::BumpedRibbon => "bumped_ribbon",
        }
    }

    /// The kind with this snake-case name.
    pub fn from_name(name: &str) -> Option<FilterKind> {
        FilterKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for FilterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The query side every filter offers.
///
/// Invariant shared by every implementation: after a key's hash was inserted (or was part of the
/// set a static filter was built from), `contains_hash` returns `true` for it. There are no false
/// negatives, ever; false positives occur at the filter's rate.
pub trait Filter: Send + Sync {
    /// `false` means the key is certainly absent; `true` means it may be present.
    fn contains_hash(&self, hash: u64) -> bool;

    /// [`Filter::contains_hash`] of [`hash_key`]`(key)`.
    fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(hash_key(key))
    }

    /// Probes many hashes at once; `out` is cleared and receives one answer per hash, in order.
    /// Bloom-family filters override this to compute all positions and prefetch before probing.
    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.extend(hashes.iter().map(|&h| self.contains_hash(h)));
    }

    /// Which kind of filter this is.
    fn kind(&self) -> FilterKind;

    /// Bytes of memory the filter's table occupies (payload, not the struct header).
    fn memory_bytes(&self) -> usize;

    /// The stable serialization (docs/format.md#filter-encoding).
    fn to_bytes(&self) -> Vec<u8>;
}

/// The query side of a range filter ([`Grafite`], [`GrafiteView`]): "may a key lie in
/// `[lo, hi]`?".
///
/// Invariant: if some key of the set lies in the inclusive range, the answer is `true`: no false
/// negatives, ever. An empty range answers `true` with at most [`RangeFilter::expected_fpr`] of
/// its length.
pub trait RangeFilter {
    /// Byte keys, inclusive bounds; `lo > hi` is the empty range (`false`).
    fn may_contain_range(&self, lo: &[u8], hi: &[u8]) -> bool;
    /// The same over the filter's integer key images.
    fn may_contain_range_u64(&self, lo: u64, hi: u64) -> bool;
    /// The false-positive bound for an empty range of `range_len` key images.
    fn expected_fpr(&self, range_len: u64) -> f64;
}

/// How full an insertable filter is and what that implies for its false-positive rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FillInfo {
    /// Keys inserted (counting duplicates; the filter cannot tell them apart).
    pub keys_inserted: u64,
    /// Bits (or counters) in the table.
    pub bits: u64,
    /// Bits (or non-zero counters) currently set.
    pub bits_set: u64,
    /// FPR estimated from the fill alone: for `k` probes, `(bits_set / bits)^k` for the standard
    /// layout, and the layout's own estimate for the others. Does not need the key count.
    pub estimated_fpr: f64,
}

impl FillInfo {
    /// Fraction of bits set.
    pub fn fill_ratio(&self) -> f64 {
        if self.bits == 0 {
            0.0
        } else {
            self.bits_set as f64 / self.bits as f64
        }
    }
}

/// Filters that accept keys one at a time after they are created (the Bloom family).
pub trait InsertFilter: Filter {
    /// Adds a key hash.
    fn insert_hash(&mut self, hash: u64);

    /// Adds [`hash_key`]`(key)`.
    fn insert(&mut self, key: &[u8]) {
        self.insert_hash(hash_key(key))
    }

    /// Adds many hashes; Bloom-family filters override this to prefetch before writing.
    fn insert_batch(&mut self, hashes: &[u64]) {
        for &h in hashes {
            self.insert_hash(h);
        }
    }

    /// Current fill and the FPR it implies.
    fn info(&self) -> FillInfo;
}

/// Union and intersection of two filters of the same kind and shape (bitwise OR / AND of the
/// tables). The union answers "maybe" for every key of either input; the intersection for every
/// key of both (and possibly more: its FPR is at most that of either input). Filters of different
/// shapes or seeds cannot be combined and return [`crate::FilterError::InvalidArgument`], leaving
/// `self` unchanged.
pub trait SetOps: Sized {
    /// `self := self ∪ other`.
    fn union_with(&mut self, other: &Self) -> Result<()>;
    /// `self := self ∩ other`.
    fn intersect_with(&mut self, other: &Self) -> Result<()>;
}

/// Filters built once from a fixed set of key hashes (xor, binary fuse, ribbon): the filters of
/// compacted SSTs, whose key set never changes after the file is written.
///
/// Contract: duplicates in `hashes` are removed, not an error; the empty set builds a filter that
/// answers "no" to everything; construction is deterministic for a given input and seed, and
/// retries with a new seed a bounded number of times before returning [`crate::FilterError::Full`].
pub trait StaticFilter: Filter + Sized {
    /// Builds the filter with the type's default parameters from key hashes.
    fn build(hashes: &[u64]) -> Result<Self>;
}

/// The traits, for `use siftdb_filter::prelude::*`.
pub mod prelude {
    pub use super::{BloomShape, Filter, InsertFilter, RangeFilter, SetOps, StaticFilter};
}
