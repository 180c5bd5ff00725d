//! The commit check of an optimistic transaction: "does any version newer than the read
//! sequence exist" for a key or a range (design.md#transactions).
//!
//! It runs inside the group-commit leader under the writer lock (src/db/write.rs
//! `write_checked`), on a super-version holding every write up to the last sequence: nothing
//! can commit between the check and the transaction's own sequence numbers. Every kind of
//! version counts (put, delete, merge operand, range tombstone), whoever wrote it.
//!
//! Cost: a point key costs, per memtable, a filter probe and (on a "maybe") one skip-list
//! seek, plus a lookup of its covering range tombstones; per file whose `largest_seq` is above
//! the read sequence and whose key range holds the key, a tombstone lookup, a filter probe and
//! (on a "maybe") one block seek. Files entirely older than the read sequence (nearly all of
//! them, for a short transaction) are skipped on their metadata. A range costs a walk of the
//! versions inside it in every memtable and in the newer files overlapping it, stopped at the
//! first newer version: never a whole memtable.

use crate::db::iter::source::{FileRun, IKey, Source};
use crate::db::{DbInner, SuperVersion};
use crate::error::Result;
use crate::filter::hash_key;
use crate::range_del::Fragments;
use crate::sst::{FilterVerdict, ScanCounters};
use crate::version::TableFile;
use std::ops::Bound;
use std::sync::Arc;

/// A newer version found: the key, or the range `[key, end)` of a newer range tombstone.
pub(crate) type Found = (Vec<u8>, Option<Vec<u8>>);

/// The first version of `key` of `keyspace` newer than `read_seq`, if any.
pub(crate) fn check_key(
    inner: &DbInner,
    sv: &SuperVersion,
    keyspace: u32,
    key: &[u8],
    read_seq: u64,
) -> Result<Option<Found>> {
    let hash = hash_key(key);
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        if mem.max_covering_tombstone(keyspace, key, u64::MAX) > read_seq {
            return Ok(Some((key.to_vec(), None)));
        }
        if mem.newest_seq_of(keyspace, key, hash).is_some_and(|s| s > read_seq) {
            return Ok(Some((key.to_vec(), None)));
        }
    }
    let point = (Bound::Included(key), Bound::Included(key));
    for (level, index, file) in files_overlapping(sv, keyspace, point) {
        if file.meta.largest_seq <= read_seq || !file.may_contain_key(keyspace, key) {
            continue;
        }
        let counters = &inner.reads.local().levels[level];
        let maybe = file.with_table(|t| {
            if t.max_covering_tombstone(key, u64::MAX) > read_seq {
                return None;
            }
            Some(!matches!(
                t.probe_filter_in_range(keyspace, key, hash, counters),
                FilterVerdict::Absent
            ))
        })?;
        let newer = match maybe {
            None => true, // a newer range tombstone covers the key
            Some(false) => false,
            Some(true) => {
                newer_in_file(inner, sv, (level, index), keyspace, point, read_seq)?.is_some()
            }
        };
        if newer {
            return Ok(Some((key.to_vec(), None)));
        }
    }
    Ok(None)
}

/// The first version of a key of `keyspace` within `lo..hi` newer than `read_seq`, or a newer
/// range tombstone overlapping it.
pub(crate) fn check_range(
    inner: &DbInner,
    sv: &SuperVersion,
    keyspace: u32,
    (lo, hi): (Bound<&[u8]>, Bound<&[u8]>),
    read_seq: u64,
) -> Result<Option<Found>> {
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        if let Some(found) = newer_tombstone(&mem.range_tombstones(keyspace), (lo, hi), read_seq) {
            return Ok(Some(found));
        }
        if let Some(key) = mem.newer_in_range(keyspace, lo, hi, read_seq) {
            return Ok(Some((key, None)));
        }
    }
    for (level, index, file) in files_overlapping(sv, keyspace, (lo, hi)) {
        if file.meta.largest_seq <= read_seq || !file.overlaps(keyspace, lo, hi) {
            continue;
        }
        if file.info.range_deletions > 0 {
            let found =
                file.with_table(|t| newer_tombstone(t.range_tombstones(), (lo, hi), read_seq))?;
            if found.is_some() {
                return Ok(found);
            }
        }
        let at = (level, index);
        if let Some(key) = newer_in_file(inner, sv, at, keyspace, (lo, hi), read_seq)? {
            return Ok(Some((key, None)));
        }
    }
    Ok(None)
}

/// `(level, index, file)` of every L0 file and of the files of deeper levels whose key ranges
/// may overlap `lo..hi` of `keyspace` (found by binary search; L0 files are filtered by the
/// caller).
fn files_overlapping<'a>(
    sv: &'a SuperVersion,
    keyspace: u32,
    (lo, hi): (Bound<&[u8]>, Bound<&[u8]>),
) -> impl Iterator<Item = (usize, usize, &'a Arc<TableFile>)> + 'a {
    let levels = sv.version.levels();
    let ranges: Vec<std::ops::Range<usize>> = (0..levels.len())
        .map(|n| match n {
            0 => 0..levels.first().map_or(0, Vec::len),
            _ => sv.version.overlapping_in_level(n, keyspace, lo, hi),
        })
        .collect();
    ranges.into_iter().enumerate().flat_map(move |(n, r)| r.map(move |i| (n, i, &levels[n][i])))
}

/// The first tombstone fragment of `frags` overlapping `lo..hi` with a sequence number above
/// `read_seq`, clipped to the range's lower end. A fragment `[s, e)` overlaps when `e` is past
/// the lower bound and `s` within the upper one (an excluded lower bound is taken as included:
/// at worst a false conflict, never a missed one).
fn newer_tombstone(
    frags: &Fragments,
    (lo, hi): (Bound<&[u8]>, Bound<&[u8]>),
    read_seq: u64,
) -> Option<Found> {
    frags.fragments().iter().find_map(|f| {
        let newest = f.seqs.first().copied().unwrap_or(0);
        let after_lo = match lo {
            Bound::Included(l) | Bound::Excluded(l) => f.end.as_slice() > l,
            Bound::Unbounded => true,
        };
        let before_hi = match hi {
            Bound::Included(h) => f.start.as_slice() <= h,
            Bound::Excluded(h) => f.start.as_slice() < h,
            Bound::Unbounded => true,
        };
        (newest > read_seq && after_lo && before_hi).then(|| {
            let start = match lo {
                Bound::Included(l) | Bound::Excluded(l) if l > f.start.as_slice() => l.to_vec(),
                _ => f.start.clone(),
            };
            (start, Some(f.end.clone()))
        })
    })
}

/// The first user key of `keyspace` within `lo..hi` that has a version newer than `read_seq`
/// in `file`, reading only the blocks of that range.
fn newer_in_file(
    inner: &DbInner,
    sv: &SuperVersion,
    (level, index): (usize, usize),
    keyspace: u32,
    (lo, hi): (Bound<&[u8]>, Bound<&[u8]>),
    read_seq: u64,
) -> Result<Option<Vec<u8>>> {
    let counters: Arc<dyn ScanCounters> = inner.reads.clone();
    let mut source = Source::files(FileRun::new(&sv.version, level, index..index + 1), counters);
    let start = match lo {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => &[],
    };
    source.seek(IKey::first_of(keyspace, start))?;
    while let Some(e) = source.peek() {
        let within = e.keyspace == keyspace
            && match hi {
                Bound::Included(h) => e.user_key.as_slice() <= h,
                Bound::Excluded(h) => e.user_key.as_slice() < h,
                Bound::Unbounded => true,
            };
        if !within {
            return Ok(None);
        }
        let skipped = matches!(lo, Bound::Excluded(l) if e.user_key.as_slice() == l);
        if !skipped && e.seq > read_seq {
            return Ok(Some(e.user_key.clone()));
        }
        source.next()?;
    }
    Ok(None)
}
