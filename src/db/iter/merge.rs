//! [`Merge`]: the sources of a scan merged into one cursor over internal keys, movable both
//! ways (LevelDB's `MergingIterator`).
//!
//! Moving forward, the current entry is the smallest of the sources' entries and every other
//! source sits on its first entry after it; moving backward, the current entry is the largest
//! and every other source sits on its last entry before it. A change of direction re-seeks
//! every source except the current one to the other side of the current key, which restores
//! that invariant; then the current source steps. Internal keys are unique across sources (a
//! sequence number is written once), so "after" and "before" are strict.
//!
//! The number of sources is small (memtables, L0 files, one per deeper level), so the
//! smallest or largest is found by a linear scan rather than a heap.

use super::source::{Entry, IKey, Source};
use crate::error::Result;
use std::cmp::Ordering;

/// A merging cursor. After an error it is off the end (invalid).
pub(crate) struct Merge {
    sources: Vec<Source>,
    /// Index of the source holding the current entry.
    current: Option<usize>,
    forward: bool,
}

impl Merge {
    pub fn new(sources: Vec<Source>) -> Merge {
        Merge { sources, current: None, forward: true }
    }

    /// Whether it merges no source at all (scan filters ruled every one out).
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The current entry, if on one.
    pub fn entry(&self) -> Option<&Entry> {
        self.current.and_then(|i| self.sources[i].peek())
    }

    /// The recorded merge operator name of the current entry's source (see
    /// [`Source::merge_operator`]).
    pub fn merge_operator(&self) -> Option<&str> {
        self.current.and_then(|i| self.sources[i].merge_operator())
    }

    /// Positions on the first entry `>= target`.
    pub fn seek(&mut self, target: IKey<'_>) -> Result<()> {
        self.all(true, |s| s.seek(target))
    }

    /// Positions on the last entry `<= target`.
    pub fn seek_for_prev(&mut self, target: IKey<'_>) -> Result<()> {
        self.all(false, |s| s.seek_for_prev(target))
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.all(false, Source::seek_to_last)
    }

    /// Moves to the next entry in internal-key order (no-op when not on an entry).
    pub fn next(&mut self) -> Result<()> {
        self.step(true)
    }

    /// Moves to the previous entry in internal-key order (no-op when not on an entry).
    pub fn prev(&mut self) -> Result<()> {
        self.step(false)
    }

    fn all(&mut self, forward: bool, mut f: impl FnMut(&mut Source) -> Result<()>) -> Result<()> {
        self.current = None;
        self.forward = forward;
        for s in &mut self.sources {
            f(s)?;
        }
        self.pick();
        Ok(())
    }

    fn step(&mut self, forward: bool) -> Result<()> {
        let Some(cur) = self.current else { return Ok(()) };
        let r = self.step_inner(cur, forward);
        if r.is_err() {
            self.current = None;
        }
        r
    }

    fn step_inner(&mut self, cur: usize, forward: bool) -> Result<()> {
        if self.forward != forward {
            let (head, rest) = self.sources.split_at_mut(cur);
            let (here, tail) = rest.split_first_mut().expect("current source exists");
            let key = here.peek().expect("current entry").ikey();
            for s in head.iter_mut().chain(tail) {
                if forward {
                    s.seek(key)?;
                    if s.peek().is_some_and(|e| e.cmp_to(key) == Ordering::Equal) {
                        s.next()?;
                    }
                } else {
                    s.seek_for_prev(key)?;
                    if s.peek().is_some_and(|e| e.cmp_to(key) == Ordering::Equal) {
                        s.prev()?;
                    }
                }
            }
            self.forward = forward;
        }
        if forward {
            self.sources[cur].next()?;
        } else {
            self.sources[cur].prev()?;
        }
        self.pick();
        Ok(())
    }

    /// Sets `current` to the source with the smallest entry (forward) or the largest
    /// (backward); on a tie the earlier source, which is the newer one.
    fn pick(&mut self) {
        let want = if self.forward { Ordering::Less } else { Ordering::Greater };
        let mut best: Option<(usize, &Entry)> = None;
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(e) = s.peek() {
                if best.is_none_or(|(_, b)| e.cmp_to(b.ikey()) == want) {
                    best = Some((i, e));
                }
            }
        }
        self.current = best.map(|(i, _)| i);
    }
}
