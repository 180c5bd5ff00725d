//! A table's scan filters (format version 5, design.md#scan-filters): a prefix filter over
//! the extracted prefixes of its user keys and a range filter over the keys themselves. The
//! builder side collects what they need as keys arrive ([`ScanFilterCollector`]); the reader
//! side holds them parsed while the table is open ([`ScanFilters`]).
//!
//! Both answer for the table's point entries only. Range tombstones are not in them, and need
//! not be: a scan collects tombstones from every overlapping file whether or not its filters
//! let it skip the file's entries.

use crate::error::Result;
use crate::filter::prelude::*;
use crate::filter::{hash_key, BlockedBloom, Grafite, GrafiteBuilder};
use crate::options::{Options, RangeFilterOptions};
use crate::prefix::PrefixExtractor;
use crate::sst::owned_filter::{OwnedFilter, TableFilter};
use std::sync::Arc;

/// Which scan filters a table builder writes.
#[derive(Debug, Clone, Default)]
pub struct ScanFilterSpec {
    /// A prefix filter of this many bits per distinct prefix (a blocked Bloom), built with
    /// this extractor.
    pub prefix: Option<(Arc<dyn PrefixExtractor>, f64)>,
    /// A range filter (Grafite) of this shape.
    pub range: Option<RangeFilterOptions>,
}

impl ScanFilterSpec {
    /// The scan filters new tables carry under `opts`.
    pub(crate) fn of(opts: &Options) -> ScanFilterSpec {
        ScanFilterSpec {
            prefix: opts.prefix_extractor.clone().map(|e| (e, opts.prefix_filter_bits_per_key)),
            range: opts.range_filter,
        }
    }

    /// Whether the spec asks for any filter.
    pub fn is_empty(&self) -> bool {
        self.prefix.is_none() && self.range.is_none()
    }
}

/// Collects, in key order, what a table's scan filters are built from.
pub(crate) struct ScanFilterCollector {
    spec: ScanFilterSpec,
    /// Hashes of the distinct extracted prefixes.
    prefix_hashes: Vec<u64>,
    last_prefix: Option<Vec<u8>>,
    /// The distinct user keys, concatenated, and where each ends (range filter only).
    keys: Vec<u8>,
    key_ends: Vec<usize>,
}

/// Serialized scan filters of one table, ready to be written.
pub(crate) struct BuiltScanFilters {
    /// The prefix filter's envelope and the extractor's name.
    pub prefix: Option<(Vec<u8>, String)>,
    /// The range filter's envelope.
    pub range: Option<Vec<u8>>,
}

impl ScanFilterCollector {
    pub(crate) fn new(spec: ScanFilterSpec) -> ScanFilterCollector {
        ScanFilterCollector {
            spec,
            prefix_hashes: Vec::new(),
            last_prefix: None,
            keys: Vec::new(),
            key_ends: Vec::new(),
        }
    }

    /// Adds the next distinct user key (strictly increasing).
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        if let Some((extractor, _)) = &self.spec.prefix {
            if let Some(p) = extractor.prefix(user_key) {
                // Keys sharing a prefix are adjacent (contract rule 2), so comparing with the
                // last one removes nearly every duplicate; the filter build removes the rest.
                if self.last_prefix.as_deref() != Some(p) {
                    self.prefix_hashes.push(hash_key(p));
                    self.last_prefix = Some(p.to_vec());
                }
            }
        }
        if self.spec.range.is_some() {
            self.keys.extend_from_slice(user_key);
            self.key_ends.push(self.keys.len());
        }
    }

    /// Builds the filters.
    pub(crate) fn finish(self) -> Result<BuiltScanFilters> {
        let prefix = match &self.spec.prefix {
            None => None,
            Some((extractor, bits_per_key)) => {
                let mut f = BlockedBloom::with_bits_per_key(*bits_per_key)
                    .expected_items(self.prefix_hashes.len().max(1) as u64)?;
                f.insert_batch(&self.prefix_hashes);
                Some((f.to_bytes(), extractor.name().to_string()))
            }
        };
        let range = match self.spec.range {
            None => None,
            Some(o) => {
                let starts = std::iter::once(0).chain(self.key_ends.iter().copied());
                let keys = starts.zip(self.key_ends.iter()).map(|(s, &e)| &self.keys[s..e]);
                let f = GrafiteBuilder::new(o.bits_per_key, o.max_range).build_sorted_keys(keys)?;
                Some(f.to_bytes())
            }
        };
        Ok(BuiltScanFilters { prefix, range })
    }
}

/// An open table's scan filters.
#[derive(Debug, Default)]
pub(crate) struct ScanFilters {
    /// The prefix filter and the name of the extractor that built it.
    prefix: Option<(OwnedFilter, String)>,
    /// The range filter, decoded (its envelope's CRC checked once, at open).
    range: Option<Grafite>,
}

impl ScanFilters {
    /// Adds the prefix filter read at open, built by the extractor named `name`. A filter of a
    /// kind this build does not know is dropped (scans then read the file); a corrupt block is
    /// an error.
    pub(crate) fn set_prefix(&mut self, bytes: Vec<u8>, name: String) -> Result<()> {
        self.prefix = match TableFilter::parse(bytes)? {
            TableFilter::Loaded(f) => Some((f, name)),
            TableFilter::Absent | TableFilter::Unknown { .. } => None,
        };
        Ok(())
    }

    /// Starts loading the cache line of the prefix filter that a probe of `prefix_hash` reads
    /// (whatever extractor built it: a hint never changes an answer).
    #[inline]
    pub(crate) fn prefetch_prefix(&self, prefix_hash: u64) {
        if let Some((filter, _)) = &self.prefix {
            filter.view().prefetch_hash(prefix_hash);
        }
    }

    /// Adds the range filter read at open (a corrupt block is an error).
    pub(crate) fn set_range(&mut self, bytes: &[u8]) -> Result<()> {
        self.range = Some(Grafite::from_bytes(bytes)?);
        Ok(())
    }

    /// Whether the table may hold a key whose prefix (extracted by `extractor`) hashes to
    /// `prefix_hash` (`filter::hash_key`: hashed once by the scan, asked of every table);
    /// `None` when the table has no prefix filter built by an extractor of that name.
    pub(crate) fn may_hold_prefix_hash(
        &self,
        extractor: &dyn PrefixExtractor,
        prefix_hash: u64,
    ) -> Option<bool> {
        let (filter, name) = self.prefix.as_ref()?;
        (name == extractor.name()).then(|| filter.view().contains_hash(prefix_hash))
    }

    /// Whether the table may hold a key in `[lo, hi]`; `None` without a range filter.
    pub(crate) fn may_hold_range(&self, lo: &[u8], hi: &[u8]) -> Option<bool> {
        Some(self.range.as_ref()?.may_contain_range(lo, hi))
    }

    /// Bytes of memory the filters hold.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.prefix.as_ref().map_or(0, |(f, n)| f.heap_bytes() + n.len())
            + self.range.as_ref().map_or(0, Grafite::memory_bytes)
    }
}
