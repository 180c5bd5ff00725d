//! Range scans: [`DbIterator`], an iterator both ways over the entries of a range at a
//! snapshot. Each end is a [`DbCursor`] (src/db/cursor.rs) over the same super-version and
//! bounds; the back cursor is built on the first `next_back`, so a forward-only scan pays for
//! one. The ends meet in the middle: an end stops when its next key is not strictly beyond the
//! last key the other end yielded. A range that no memtable or file can hold (the scan filters
//! ruled each out, or none overlaps it) builds no cursor at all: the scan of an absent prefix
//! costs its filter probes and little else.
//!
//! The iterator holds the super-version it started from, so the memtables and files it reads
//! stay alive however the database changes meanwhile.

pub(crate) mod merge;
pub(crate) mod scan_probe;
pub(crate) mod source;

use super::cursor::{CursorConfig, DbCursor};
use super::read::ReadAt;
use super::DbInner;
use crate::error::Result;
use crate::options::ReadOptions;
use crate::version::owned;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Iterator over `(key, value)` pairs of a range at a snapshot, in ascending key order from
/// the front and descending from the back (`.rev()`); the two ends never yield an entry twice.
/// Yields an error (and then ends) if a block read fails or is corrupt.
///
/// ```
/// use siftdb::{Db, Options};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path().join("db"), Options::default())?;
/// for (k, v) in [("user/1", "ann"), ("user/2", "bo"), ("user/3", "cy"), ("zone/1", "eu")] {
///     db.put(k, v)?;
/// }
/// // A prefix, newest-key first; `?` on each item surfaces I/O or corruption errors.
/// let mut names = Vec::new();
/// for item in db.prefix("user/")?.rev() {
///     let (_key, value) = item?;
///     names.push(String::from_utf8(value).unwrap());
/// }
/// assert_eq!(names, ["cy", "bo", "ann"]);
/// // Any `RangeBounds` of keys; both ends at once never yield an entry twice.
/// let mut it = db.range::<&str, _>("user/2"..)?;
/// assert_eq!(it.next().unwrap()?.0, b"user/2");
/// assert_eq!(it.next_back().unwrap()?.0, b"zone/1");
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct DbIterator {
    /// `None` for a range no source can hold (the iterator is `done` from the start).
    front: Option<DbCursor>,
    back: Option<DbCursor>,
    /// Whether the front cursor's current entry was yielded (it starts on an entry not yet
    /// yielded). Likewise for the back cursor.
    front_yielded: bool,
    back_yielded: bool,
    done: bool,
    /// The database's life cycle: an iterator of a closed database ends with
    /// [`crate::Error::Closed`].
    life: Arc<super::Lifecycle>,
}

impl DbIterator {
    pub(crate) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        inner: Arc<DbInner>,
        keyspace: u32,
        range: &R,
        at: ReadAt,
        opts: &ReadOptions,
    ) -> Result<DbIterator> {
        fn key<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<&[u8]> {
            b.map(|k| k.as_ref())
        }
        let bounds = (key(range.start_bound()), key(range.end_bound()));
        Self::build(&inner, keyspace, bounds, at, opts)
    }

    pub(crate) fn with_prefix(
        inner: Arc<DbInner>,
        keyspace: u32,
        prefix: &[u8],
        at: ReadAt,
        opts: &ReadOptions,
    ) -> Result<DbIterator> {
        // The first key past the prefix, on the stack for prefixes of usual lengths (the scan
        // of an absent prefix otherwise spends a tenth of its time allocating its bounds).
        let mut buf = [0u8; 64];
        let heap;
        let end = match crate::prefix::successor_len(prefix) {
            Some(n) if n <= buf.len() => {
                buf[..n].copy_from_slice(&prefix[..n]);
                buf[n - 1] += 1;
                Bound::Excluded(&buf[..n])
            }
            Some(_) => {
                heap = crate::prefix::successor(prefix);
                heap.as_deref().map_or(Bound::Unbounded, Bound::Excluded)
            }
            None => Bound::Unbounded,
        };
        Self::build(&inner, keyspace, (Bound::Included(prefix), end), at, opts)
    }

    /// Builds the front cursor and positions it on the first entry, so that an unreadable
    /// first block fails the call that made the iterator. The bounds are copied only when a
    /// cursor is built.
    fn build(
        inner: &DbInner,
        keyspace: u32,
        (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
        at: ReadAt,
        opts: &ReadOptions,
    ) -> Result<DbIterator> {
        // The super-version before the sequence (design.md#concurrency, rule 2).
        // Borrowed (no reference count written) until a cursor needs to own it.
        inner.life.check_open()?;
        let sv = inner.sv.load();
        let snapshot = at.sequence(inner);
        let extractor = inner.opts.prefix_extractor.as_deref();
        let bounds = (lower, upper);
        let sources = DbCursor::sources(&sv, &inner.reads, keyspace, bounds, (extractor, true));
        let mut it = DbIterator {
            front: None,
            back: None,
            front_yielded: false,
            back_yielded: false,
            done: sources.is_empty(),
            life: inner.life.clone(),
        };
        if sources.is_empty() {
            // Counted as the positioning a cursor would have made.
            let stripe = inner.reads.local();
            stripe.add(&stripe.seeks, 1);
            return Ok(it);
        }
        let (reads, config) =
            (inner.reads.clone(), CursorConfig::of(inner, keyspace).reading(opts));
        let bounds = (owned(lower), owned(upper));
        let sv = arc_swap::Guard::into_inner(sv);
        let front = DbCursor::with_sources(sv, reads, keyspace, snapshot, bounds, config, sources);
        it.front.insert(front).seek_to_first()?;
        Ok(it)
    }

    /// The front cursor (built unless the iterator was done from the start).
    fn front(&mut self) -> &mut DbCursor {
        self.front.as_mut().expect("an iterator with no cursor is done")
    }

    /// Moves the front end and checks it against the back end.
    fn advance_front(&mut self) -> Result<bool> {
        if self.front_yielded {
            self.front().next()?;
        }
        self.front_yielded = true;
        let front = self.front.as_ref().expect("an iterator with no cursor is done");
        let back = self.back.as_ref().filter(|_| self.back_yielded);
        Ok(front.valid() && back.is_none_or(|b| front.key() < b.key()))
    }

    /// Moves the back end and checks it against the front end.
    fn advance_back(&mut self) -> Result<bool> {
        match &mut self.back {
            Some(b) if self.back_yielded => b.prev()?,
            Some(_) => {}
            None => {
                let mut b = self.front().twin();
                b.seek_to_last()?;
                self.back = Some(b);
            }
        }
        self.back_yielded = true;
        let b = self.back.as_ref().expect("back cursor built");
        let front = self.front.as_ref().filter(|_| self.front_yielded);
        Ok(b.valid() && front.is_none_or(|f| b.key() > f.key()))
    }

    /// Turns the outcome of a move into the iterator's item, ending the iteration on the end
    /// of either side or an error.
    fn item(&mut self, moved: Result<bool>, back: bool) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        match moved {
            Ok(true) => {
                let c = if back { &self.back } else { &self.front };
                let c = c.as_ref().expect("a cursor that moved");
                Some(Ok((c.key().to_vec(), c.value().to_vec())))
            }
            Ok(false) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Err(e) = self.life.check_open() {
            self.done = true;
            return Some(Err(e));
        }
        let moved = self.advance_front();
        self.item(moved, false)
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Err(e) = self.life.check_open() {
            self.done = true;
            return Some(Err(e));
        }
        let moved = self.advance_back();
        self.item(moved, true)
    }
}

#[cfg(test)]
mod tests;
