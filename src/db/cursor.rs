//! [`DbCursor`]: a seekable cursor over the user keys visible at one sequence number, moving
//! both ways, with RocksDB's iterator semantics (LevelDB's `DBIter`).
//!
//! Below it, [`Merge`] yields every version of every key in internal-key order (user key
//! ascending, newest version first). The cursor turns that into user entries:
//! - Forward, the merge sits on the entry the cursor shows: the first version of its key with
//!   `seq <= snapshot`, which is the newest visible one because versions come newest first.
//!   A step skips the remaining versions of that key, tombstoned keys and versions newer than
//!   the snapshot.
//! - Backward, versions of one key arrive oldest first, so the cursor walks back over all of a
//!   key's visible versions, remembering the last (newest) one, and stops when the key changes:
//!   the merge then sits on the last entry of the previous key, and the entry shown is a copy.
//!   A newest visible version that is a tombstone hides the key.
//! - A change of direction re-seeks the merge to the other side of the current key.
//! - Range tombstones: at its first positioning the cursor collects the tombstones visible at
//!   its snapshot from every memtable and from every file in its range that has any, and
//!   fragments them; a version older than the newest tombstone covering its key counts as a
//!   tombstone in both directions.

use super::iter::merge::Merge;
use super::iter::source::{IKey, Source};
use super::SuperVersion;
use crate::batch::ValueKind;
use crate::error::Result;
use crate::range_del::{Fragments, RangeTombstone};
use std::ops::Bound;
use std::sync::Arc;

/// A cursor over the entries visible at one moment (taken from [`crate::Db::cursor`] or
/// [`crate::Snapshot::cursor`]). It starts on no entry: position it with a seek. A method that
/// fails returns the error and leaves the cursor invalid; a later seek may retry.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// for k in ["a", "c", "e"] {
///     db.put(k, k)?;
/// }
/// let mut c = db.cursor();
/// c.seek_for_prev(b"d")?; // the last key <= "d"
/// assert_eq!(c.key(), b"c");
/// c.prev()?;
/// assert_eq!(c.key(), b"a");
/// c.next()?; // direction changes are exact
/// assert_eq!(c.key(), b"c");
/// c.seek_to_last()?;
/// assert_eq!((c.key(), c.value()), (&b"e"[..], &b"e"[..]));
/// c.next()?;
/// assert!(!c.valid());
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct DbCursor {
    sv: Arc<SuperVersion>,
    merge: Merge,
    snapshot: u64,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    valid: bool,
    forward: bool,
    /// Forward: the key being skipped. Backward: the key shown (with `saved_value`).
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    /// The range tombstones visible at `snapshot`, collected at the first positioning.
    tombstones: Option<Arc<Fragments>>,
}

impl DbCursor {
    /// A cursor over `sv` at `snapshot`, restricted to user keys within `lower..upper`.
    pub(crate) fn new(
        sv: Arc<SuperVersion>,
        snapshot: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> DbCursor {
        let start = match &lower {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.as_slice()),
            Bound::Unbounded => None,
        };
        let end_excl = match &upper {
            Bound::Excluded(k) => Some(k.as_slice()),
            _ => None,
        };
        let mut sources = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            sources.push(Source::mem(mem.clone()));
        }
        for (n, level) in sv.version.levels.iter().enumerate() {
            let files: Vec<_> = level.iter().filter(|f| f.overlaps(start, end_excl)).collect();
            if n == 0 {
                // L0 files may overlap each other: one source each.
                sources.extend(files.into_iter().map(|f| Source::files(vec![f.clone()])));
            } else if !files.is_empty() {
                sources.push(Source::files(files.into_iter().cloned().collect()));
            }
        }
        DbCursor {
            merge: Merge::new(sources),
            sv,
            snapshot,
            lower,
            upper,
            valid: false,
            forward: true,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            tombstones: None,
        }
    }

    /// Another cursor over the same data, snapshot and bounds, positioned nowhere.
    pub(crate) fn twin(&self) -> DbCursor {
        let mut t =
            DbCursor::new(self.sv.clone(), self.snapshot, self.lower.clone(), self.upper.clone());
        t.tombstones = self.tombstones.clone();
        t
    }

    /// Collects the range tombstones (once): memtables, then the files overlapping the bounds
    /// whose tables hold any (no other file is opened).
    fn load_tombstones(&mut self) -> Result<()> {
        if self.tombstones.is_some() {
            return Ok(());
        }
        let start = match &self.lower {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.as_slice()),
            Bound::Unbounded => None,
        };
        let end_excl = match &self.upper {
            Bound::Excluded(k) => Some(k.as_slice()),
            _ => None,
        };
        let mut list: Vec<RangeTombstone> = Vec::new();
        for mem in std::iter::once(&self.sv.mem).chain(self.sv.imm.iter()) {
            list.extend(mem.range_tombstones().clipped(None, None, self.snapshot));
        }
        for f in self.sv.version.levels.iter().flatten() {
            if f.info.range_deletions > 0 && f.overlaps(start, end_excl) {
                list.extend(f.table()?.range_tombstones().clipped(None, None, self.snapshot));
            }
        }
        self.tombstones = Some(Arc::new(Fragments::new(&list)));
        Ok(())
    }

    /// The entry's kind as the cursor treats it: a version covered by a visible range
    /// tombstone counts as a tombstone.
    fn effective_kind(
        tombstones: &Option<Arc<Fragments>>,
        e: &super::iter::source::Entry,
        snapshot: u64,
    ) -> ValueKind {
        match tombstones {
            Some(t) if !t.is_empty() && t.covers(&e.user_key, e.seq, snapshot) => ValueKind::Delete,
            _ => e.kind,
        }
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        match (self.valid, self.forward) {
            (false, _) => &[],
            (true, true) => &self.merge.entry().expect("valid forward cursor").user_key,
            (true, false) => &self.saved_key,
        }
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        match (self.valid, self.forward) {
            (false, _) => &[],
            (true, true) => &self.merge.entry().expect("valid forward cursor").value,
            (true, false) => &self.saved_value,
        }
    }

    /// Positions on the first entry whose key is `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        let r = self.load_tombstones().and_then(|()| self.seek_inner(key));
        self.check(r)
    }

    /// Positions on the last entry whose key is `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) -> Result<()> {
        let r = self.load_tombstones().and_then(|()| self.seek_for_prev_inner(key));
        self.check(r)
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) -> Result<()> {
        if let Err(e) = self.load_tombstones() {
            return self.check(Err(e));
        }
        let r = match self.lower.clone() {
            Bound::Included(k) | Bound::Excluded(k) => self.seek_inner(&k),
            Bound::Unbounded => {
                self.forward = true;
                self.merge.seek_to_first().and_then(|()| self.find_next(false))
            }
        };
        self.check(r)
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) -> Result<()> {
        if let Err(e) = self.load_tombstones() {
            return self.check(Err(e));
        }
        let r = match self.upper.clone() {
            Bound::Included(k) | Bound::Excluded(k) => self.seek_for_prev_inner(&k),
            Bound::Unbounded => {
                self.forward = false;
                self.merge.seek_to_last().and_then(|()| self.find_prev())
            }
        };
        self.check(r)
    }

    /// Moves to the next entry (no-op when not valid).
    // A cursor, not an `Iterator`: entries are borrowed from it through `key()`/`value()`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        let r = self.next_inner();
        self.check(r)
    }

    /// Moves to the previous entry (no-op when not valid).
    pub fn prev(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        let r = self.prev_inner();
        self.check(r)
    }

    fn seek_inner(&mut self, key: &[u8]) -> Result<()> {
        self.forward = true;
        let key = match &self.lower {
            Bound::Included(l) | Bound::Excluded(l) if key < l.as_slice() => l.clone(),
            _ => key.to_vec(),
        };
        let seq = self.snapshot.min(crate::ikey::MAX_SEQ);
        self.merge.seek(IKey { user_key: &key, seq, kind: ValueKind::Put })?;
        self.find_next(false)
    }

    fn seek_for_prev_inner(&mut self, key: &[u8]) -> Result<()> {
        self.forward = false;
        let key = match &self.upper {
            Bound::Included(u) | Bound::Excluded(u) if key > u.as_slice() => u.clone(),
            _ => key.to_vec(),
        };
        self.merge.seek_for_prev(IKey::last_of(&key))?;
        self.find_prev()
    }

    fn next_inner(&mut self) -> Result<()> {
        if self.forward {
            let key = &self.merge.entry().expect("valid forward cursor").user_key;
            self.saved_key.clear();
            self.saved_key.extend_from_slice(key);
            self.merge.next()?;
        } else {
            // The merge sits before the shown key's versions: re-seek to its first version,
            // then skip them (`saved_key` already holds the key).
            self.forward = true;
            self.merge.seek(IKey::first_of(&self.saved_key))?;
        }
        self.find_next(true)
    }

    fn prev_inner(&mut self) -> Result<()> {
        if self.forward {
            // Re-seek to the last entry before the shown key's first version.
            let key = self.merge.entry().expect("valid forward cursor").user_key.clone();
            self.forward = false;
            self.merge.seek_for_prev(IKey::first_of(&key))?;
            while self.merge.entry().is_some_and(|e| e.user_key >= key) {
                self.merge.prev()?; // only a version at MAX_SEQ, which no write gets
            }
        }
        self.find_prev()
    }

    /// Forward from the merge's position to the newest visible version of the first key that
    /// is live, inside the bounds, and (when `skipping`) after `saved_key`.
    fn find_next(&mut self, mut skipping: bool) -> Result<()> {
        self.valid = false;
        while let Some(e) = self.merge.entry() {
            if past_upper(&self.upper, &e.user_key) {
                return Ok(()); // entries come in key order: nothing further is in range
            }
            if !below_lower(&self.lower, &e.user_key) && e.seq <= self.snapshot {
                match Self::effective_kind(&self.tombstones, e, self.snapshot) {
                    // Sources never yield range tombstones (iter/source.rs rejects them).
                    ValueKind::Delete | ValueKind::RangeDelete => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(&e.user_key);
                        skipping = true;
                    }
                    ValueKind::Put => {
                        if !(skipping && e.user_key <= self.saved_key) {
                            self.valid = true;
                            return Ok(());
                        }
                    }
                }
            }
            self.merge.next()?;
        }
        Ok(())
    }

    /// Backward from the merge's position: the newest visible version of the last live key
    /// inside the bounds, copied into `saved_key`/`saved_value`; the merge ends on the last
    /// entry of the key before it (or off the start).
    fn find_prev(&mut self) -> Result<()> {
        self.valid = false;
        let mut pending = ValueKind::Delete; // Put once saved_key holds a live candidate
        while let Some(e) = self.merge.entry() {
            if below_lower(&self.lower, &e.user_key) {
                break; // entries come in key order: nothing earlier is in range
            }
            if !past_upper(&self.upper, &e.user_key) && e.seq <= self.snapshot {
                if pending == ValueKind::Put && e.user_key < self.saved_key {
                    break; // the candidate's newest visible version was the last one seen
                }
                pending = Self::effective_kind(&self.tombstones, e, self.snapshot);
                self.saved_key.clear();
                self.saved_value.clear();
                if pending == ValueKind::Put {
                    self.saved_key.extend_from_slice(&e.user_key);
                    self.saved_value.extend_from_slice(&e.value);
                }
            }
            self.merge.prev()?;
        }
        self.valid = pending == ValueKind::Put;
        Ok(())
    }

    fn check(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.valid = false;
        }
        r
    }
}

fn past_upper(upper: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match upper {
        Bound::Included(u) => key > u.as_slice(),
        Bound::Excluded(u) => key >= u.as_slice(),
        Bound::Unbounded => false,
    }
}

fn below_lower(lower: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match lower {
        Bound::Included(l) => key < l.as_slice(),
        Bound::Excluded(l) => key <= l.as_slice(),
        Bound::Unbounded => false,
    }
}
