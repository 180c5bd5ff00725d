//! Which memtables and files a bounded scan can skip by their scan filters
//! (design.md#scan-filters): the prefix filters, when every key of the range has one extracted
//! prefix, and the range filters, when the range has both ends.
//!
//! Invariant: a skipped memtable or file holds no point entry in the range, so the scan returns
//! the same entries with filters on or off. Range tombstones are not affected: the cursor
//! collects them from every overlapping file itself (`DbCursor::load_tombstones`).

use super::source::IKey;
use crate::memtable::Memtable;
use crate::prefix::{common_prefix, PrefixExtractor};
use crate::sst::ReadCounters;
use crate::version::{owned, TableFile};
use std::ops::Bound;

/// What the filters said about one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileVerdict {
    /// A filter proved the file holds no entry in the range.
    Skip,
    /// A filter answered "maybe": the first positioning finds out whether it was right.
    Passed,
    /// No usable filter (none written, another extractor, or the table would not open).
    Unchecked,
}

/// A scan's range as its filters see it.
pub(crate) struct ScanProbe<'a> {
    keyspace: u32,
    lo: &'a [u8],
    hi: &'a [u8],
    /// The prefix every key of the range has, with the extractor that proved it and the
    /// prefix's hash (hashed once, asked of every file).
    prefix: Option<(&'a dyn PrefixExtractor, &'a [u8], u64)>,
}

impl<'a> ScanProbe<'a> {
    /// The probe of a range of `keyspace`; `None` unless both ends are given.
    pub(crate) fn new(
        keyspace: u32,
        lower: Bound<&'a [u8]>,
        upper: Bound<&'a [u8]>,
        extractor: Option<&'a dyn PrefixExtractor>,
    ) -> Option<ScanProbe<'a>> {
        let (Bound::Included(lo) | Bound::Excluded(lo)) = lower else { return None };
        let (hi, hi_excluded) = match upper {
            Bound::Included(h) => (h, false),
            Bound::Excluded(h) => (h, true),
            Bound::Unbounded => return None,
        };
        let prefix = extractor
            .and_then(|e| common_prefix(e, lo, hi, hi_excluded).map(|p| (e, p)))
            .map(|(e, p)| (e as &dyn PrefixExtractor, p, crate::filter::hash_key(p)));
        Some(ScanProbe { keyspace, lo, hi, prefix })
    }

    /// Whether `mem` certainly holds no entry of the range: it is empty (a visible write
    /// counts its entry before it is published, as for `Memtable::lookup`; this spares the
    /// Bloom probe's cache miss in the usual state after a flush), its prefix Bloom says no,
    /// or one skip-list search finds none.
    pub(crate) fn skips_mem(&self, mem: &Memtable) -> bool {
        if mem.is_empty() {
            return true;
        }
        if let Some((extractor, p, _)) = self.prefix {
            if mem.may_hold_prefix(extractor, p) == Some(false) {
                return true;
            }
        }
        !mem.has_entry_in(self.keyspace, self.lo, self.hi)
    }

    /// Starts loading the line of `file`'s prefix filter this probe will read, when the range
    /// has one prefix ([`Self::check_file`] then asks it); otherwise nothing.
    #[inline]
    pub(crate) fn prefetch_file(&self, file: &TableFile) {
        if let Some((_, _, hash)) = self.prefix {
            file.prefetch_prefix_filter(hash);
        }
    }

    /// Whether the range has one extracted prefix, so its files' prefix filters are asked.
    pub(crate) fn has_prefix(&self) -> bool {
        self.prefix.is_some()
    }

    /// Asks `file`'s filters about the range; a skip is counted in `counters` (a check and a
    /// useful answer), a pass later by [`PendingCheck::settle`].
    pub(crate) fn check_file(
        &self,
        file: &TableFile,
        counters: Option<&ReadCounters>,
    ) -> FileVerdict {
        // Borrowed from the table cache: no reference count written per file and scan.
        let verdict = file.with_table(|table| {
            let filters = table.scan_filters();
            let by_prefix = self.prefix.and_then(|(e, _, h)| filters.may_hold_prefix_hash(e, h));
            if by_prefix == Some(false) {
                return FileVerdict::Skip; // the range filter's answer would not matter
            }
            match (by_prefix, filters.may_hold_range(self.lo, self.hi)) {
                (_, Some(false)) => FileVerdict::Skip,
                (None, None) => FileVerdict::Unchecked,
                _ => FileVerdict::Passed,
            }
        });
        let Ok(verdict) = verdict else { return FileVerdict::Unchecked };
        if let (FileVerdict::Skip, Some(c)) = (verdict, counters) {
            c.bump(&c.filter_checks);
            c.bump(&c.filter_useful);
        }
        verdict
    }

    /// The check a passed file's source settles at its first positioning.
    pub(crate) fn pending(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> PendingCheck {
        PendingCheck { keyspace: self.keyspace, lower: owned(lower), upper: owned(upper) }
    }
}

/// A filter "maybe" whose truth is not known yet: known once the file's source is positioned
/// on the range's first entry (it then holds an entry in the range, or the answer was a false
/// positive).
#[derive(Debug)]
pub(crate) struct PendingCheck {
    keyspace: u32,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
}

impl PendingCheck {
    /// Counts the check: a positive, and a true one when `first` (the source's entry after a
    /// forward seek to the range's start) lies in the range.
    pub(crate) fn settle(&self, first: Option<IKey<'_>>, counters: &ReadCounters) {
        let in_range = first.is_some_and(|k| {
            let above = match &self.lower {
                Bound::Included(l) => k.user_key >= l.as_slice(),
                Bound::Excluded(l) => k.user_key > l.as_slice(),
                Bound::Unbounded => true,
            };
            let below = match &self.upper {
                Bound::Included(u) => k.user_key <= u.as_slice(),
                Bound::Excluded(u) => k.user_key < u.as_slice(),
                Bound::Unbounded => true,
            };
            k.keyspace == self.keyspace && above && below
        });
        counters.bump(&counters.filter_checks);
        counters.bump(&counters.filter_positive);
        if in_range {
            counters.bump(&counters.filter_true_positive);
        }
    }
}
