//! Reading a transaction's view of a range: [`TxCursor`] merges the buffered writes of one
//! keyspace (a copy taken when the cursor is made: it sees the writes made before it) over a
//! [`DbCursor`] at the transaction's snapshot, in both directions; [`TxIterator`] is a
//! double-ended iterator made of two such cursors meeting in the middle.
//!
//! The merge keeps one invariant on the database cursor `base`: moving forward it sits on the
//! first entry whose key is `>=` the key shown, moving backward on the last one `<=` it; a
//! change of direction re-seeks it. The buffered keys are found by a `BTreeMap` range search
//! per step. A key buffered by the transaction shows its buffered state (merged onto the
//! snapshot's value when only operands were written); a snapshot key under a buffered range
//! deletion is hidden.
//!
//! Under serializable isolation every positioning and step widens a range slot of the read
//! set (src/txn/read_set.rs): a seek starts a new slot from its target to the key it lands on
//! (to the bound when it lands on nothing), `next`/`prev` extend the slot to the key reached.

use super::read_set::{max_upper, min_lower, KeyRange};
use super::write_set::{KeyspaceWrites, PointWrite};
use super::Shared;
use crate::db::DbCursor;
use crate::error::Result;
use std::ops::Bound;

/// A seekable cursor over a transaction's view of one keyspace: the snapshot with the
/// transaction's own writes merged in, moving both ways (the methods of [`DbCursor`]). It
/// starts on no entry. Taken from [`crate::Transaction::cursor`].
pub struct TxCursor<'a> {
    tx: &'a Shared,
    keyspace: u32,
    base: DbCursor,
    writes: KeyspaceWrites,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// The entry shown.
    cur: Option<(Vec<u8>, Vec<u8>)>,
    forward: bool,
    /// The read-set slot the current run of moves widens, and its range (serializable only).
    slot: Option<(usize, KeyRange)>,
}

impl std::fmt::Debug for TxCursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxCursor")
            .field("keyspace", &self.keyspace)
            .field("cur", &self.cur)
            .finish()
    }
}

/// The next buffered key of `writes` strictly or not past `from` in the direction of travel,
/// within `lower..upper` (the copy holds only keys inside them). `None` when the range is
/// empty (a `BTreeMap` range with crossed bounds would panic).
fn next_buffered<'w>(
    writes: &'w KeyspaceWrites,
    from: &Bound<Vec<u8>>,
    forward: bool,
) -> Option<(&'w Vec<u8>, &'w PointWrite)> {
    if forward {
        writes.points.range::<[u8], _>((crate::version::borrowed(from), Bound::Unbounded)).next()
    } else {
        writes
            .points
            .range::<[u8], _>((Bound::Unbounded, crate::version::borrowed(from)))
            .next_back()
    }
}

impl<'a> TxCursor<'a> {
    pub(crate) fn new(
        tx: &'a Shared,
        keyspace: u32,
        base: DbCursor,
        writes: KeyspaceWrites,
        (lower, upper): KeyRange,
    ) -> TxCursor<'a> {
        TxCursor { tx, keyspace, base, writes, lower, upper, cur: None, forward: true, slot: None }
    }

    /// Another cursor over the same view and bounds, positioned nowhere.
    fn twin(&self) -> TxCursor<'a> {
        let bounds = (self.lower.clone(), self.upper.clone());
        TxCursor::new(self.tx, self.keyspace, self.base.twin(), self.writes.clone(), bounds)
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.cur.is_some()
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.0.as_slice())
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.1.as_slice())
    }

    /// Positions on the first entry whose key is `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.forward = true;
        let r = self.base.seek(key).and_then(|()| self.find(Bound::Included(key.to_vec())));
        self.track_new(Bound::Included(key.to_vec()), true);
        r
    }

    /// Positions on the last entry whose key is `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) -> Result<()> {
        self.forward = false;
        let r =
            self.base.seek_for_prev(key).and_then(|()| self.find(Bound::Included(key.to_vec())));
        self.track_new(Bound::Included(key.to_vec()), false);
        r
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.forward = true;
        let r = self.base.seek_to_first().and_then(|()| self.find(Bound::Unbounded));
        self.track_new(self.lower.clone(), true);
        r
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.forward = false;
        let r = self.base.seek_to_last().and_then(|()| self.find(Bound::Unbounded));
        self.track_new(self.upper.clone(), false);
        r
    }

    /// Moves to the next entry (no-op when not valid).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        let Some((k, _)) = self.cur.take() else { return Ok(()) };
        let r = self.step(k, true);
        self.track_extend(true);
        r
    }

    /// Moves to the previous entry (no-op when not valid).
    pub fn prev(&mut self) -> Result<()> {
        let Some((k, _)) = self.cur.take() else { return Ok(()) };
        let r = self.step(k, false);
        self.track_extend(false);
        r
    }

    fn step(&mut self, k: Vec<u8>, forward: bool) -> Result<()> {
        if self.forward != forward {
            self.forward = forward;
            if forward {
                self.base.seek(&k)?;
            } else {
                self.base.seek_for_prev(&k)?;
            }
        }
        if self.base.valid() && self.base.key() == k.as_slice() {
            if forward {
                self.base.next()?;
            } else {
                self.base.prev()?;
            }
        }
        self.find(Bound::Excluded(k))
    }

    /// Shows the first visible entry in the direction of travel, starting from the base
    /// cursor's position and from buffered keys past `from`.
    fn find(&mut self, mut from: Bound<Vec<u8>>) -> Result<()> {
        self.cur = None;
        loop {
            let b = self.base.valid().then(|| self.base.key().to_vec());
            let o = next_buffered(&self.writes, &from, self.forward).map(|(k, w)| (k.clone(), w));
            let key = match (&b, &o) {
                (None, None) => return Ok(()),
                (Some(b), None) => b.clone(),
                (None, Some(o)) => o.0.clone(),
                (Some(b), Some(o)) if (b <= &o.0) == self.forward => b.clone(),
                (_, Some(o)) => o.0.clone(),
            };
            let on_base = b.as_deref() == Some(key.as_slice());
            let value = match o.filter(|o| o.0 == key) {
                Some((_, w)) => {
                    let snap = on_base.then(|| self.base.value());
                    let w = w.clone();
                    super::resolve(self.tx, &key, &w, snap.map(<[u8]>::to_vec))?
                }
                None if self.writes.range_covers(&key) => None,
                None => Some(self.base.value().to_vec()),
            };
            if let Some(v) = value {
                self.cur = Some((key, v));
                return Ok(());
            }
            if on_base {
                if self.forward {
                    self.base.next()?;
                } else {
                    self.base.prev()?;
                }
            }
            from = Bound::Excluded(key);
        }
    }

    /// Where a move in the given direction reached: the key shown, or the bound.
    fn reached(&self, forward: bool) -> Bound<Vec<u8>> {
        match (&self.cur, forward) {
            (Some((k, _)), _) => Bound::Included(k.clone()),
            (None, true) => self.upper.clone(),
            (None, false) => self.lower.clone(),
        }
    }

    /// Starts a new read-set slot for a seek from `from` in the given direction.
    fn track_new(&mut self, from: Bound<Vec<u8>>, forward: bool) {
        if !self.tx.tracks_reads() {
            return;
        }
        let to = self.reached(forward);
        let range = if forward { (from, to) } else { (to, from) };
        let mut st = self.tx.state.lock();
        let slot = st.reads.new_slot(self.keyspace);
        st.reads.set_range(slot, range.clone());
        self.slot = Some((slot, range));
    }

    /// Widens the current slot to where a step in the given direction reached.
    fn track_extend(&mut self, forward: bool) {
        if !self.tx.tracks_reads() {
            return;
        }
        let reached = self.reached(forward);
        let Some((slot, (lo, hi))) = self.slot.take() else { return };
        let range =
            if forward { (lo, max_upper(hi, reached)) } else { (min_lower(lo, reached), hi) };
        self.tx.state.lock().reads.set_range(slot, range.clone());
        self.slot = Some((slot, range));
    }
}

/// Iterator over `(key, value)` pairs of a range of a transaction's view (the snapshot with
/// its own writes merged in), ascending from the front, descending from the back; the ends
/// never yield an entry twice. It sees the writes the transaction made before it was created.
#[derive(Debug)]
pub struct TxIterator<'a> {
    front: TxCursor<'a>,
    back: Option<TxCursor<'a>>,
    front_yielded: bool,
    back_yielded: bool,
    /// The last keys each end yielded.
    front_last: Option<Vec<u8>>,
    back_last: Option<Vec<u8>>,
    done: bool,
}

impl<'a> TxIterator<'a> {
    /// An iterator from `front`, positioned on its first entry (an unreadable first block
    /// fails here).
    pub(crate) fn new(mut front: TxCursor<'a>) -> Result<TxIterator<'a>> {
        front.seek_to_first()?;
        Ok(TxIterator {
            front,
            back: None,
            front_yielded: false,
            back_yielded: false,
            front_last: None,
            back_last: None,
            done: false,
        })
    }

    fn fail<T>(&mut self, r: Result<T>) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        match r {
            Ok(_) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for TxIterator<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.front_yielded {
            let r = self.front.next();
            if let Some(e) = self.fail(r) {
                return Some(e);
            }
        }
        self.front_yielded = true;
        let key = self.front.key();
        let met = self.back_last.as_deref().is_some_and(|b| key >= b);
        if !self.front.valid() || met {
            self.done = true;
            return None;
        }
        self.front_last = Some(key.to_vec());
        Some(Ok((key.to_vec(), self.front.value().to_vec())))
    }
}

impl DoubleEndedIterator for TxIterator<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.back.is_none() {
            let mut back = self.front.twin();
            if let Some(e) = self.fail(back.seek_to_last()) {
                return Some(e);
            }
            self.back = Some(back);
        }
        let back = self.back.as_mut()?;
        if self.back_yielded {
            if let Err(e) = back.prev() {
                self.done = true;
                return Some(Err(e));
            }
        }
        self.back_yielded = true;
        let key = back.key();
        let met = self.front_last.as_deref().is_some_and(|f| key <= f);
        if !back.valid() || met {
            self.done = true;
            return None;
        }
        self.back_last = Some(key.to_vec());
        Some(Ok((key.to_vec(), back.value().to_vec())))
    }
}
