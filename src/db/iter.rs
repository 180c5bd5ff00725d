//! Range scans: a merge of every memtable and every SST whose range overlaps the scan, yielding
//! for each user key the newest version at or below the snapshot, and skipping tombstones.
//!
//! Sources are merged by internal-key order (user key ascending, sequence descending). The
//! iterator holds the super-version it started from, so the memtables and files it reads stay
//! alive however the database changes meanwhile.

use super::{DbInner, SuperVersion};
use crate::batch::ValueKind;
use crate::error::Result;
use crate::ikey;
use crate::memtable::{MemKey, Memtable};
use crate::sst::TableIter;
use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Entries taken from a memtable per refill. The skip list cannot be borrowed across calls of
/// an owning iterator, so the memtable source re-seeks after its last key every `MEM_CHUNK`
/// entries (one O(log n) seek per chunk).
const MEM_CHUNK: usize = 256;

/// One decoded entry.
struct Entry {
    user_key: Vec<u8>,
    seq: u64,
    kind: ValueKind,
    value: Vec<u8>,
}

impl Entry {
    /// Internal-key order: user key ascending, then sequence descending.
    fn before(&self, other: &Entry) -> bool {
        (self.user_key.as_slice(), std::cmp::Reverse(self.seq))
            < (other.user_key.as_slice(), std::cmp::Reverse(other.seq))
    }
}

enum Source {
    Mem { mem: Arc<Memtable>, buf: VecDeque<Entry>, resume: Option<MemKey>, exhausted: bool },
    Table { iter: TableIter, current: Option<Entry> },
}

impl Source {
    fn mem(mem: Arc<Memtable>, start: Option<&[u8]>) -> Source {
        let mut s = Source::Mem { mem, buf: VecDeque::new(), resume: None, exhausted: false };
        s.refill(start);
        s
    }

    fn refill(&mut self, start: Option<&[u8]>) {
        if let Source::Mem { mem, buf, resume, exhausted } = self {
            if !buf.is_empty() || *exhausted {
                return;
            }
            let items: Vec<(MemKey, Box<[u8]>)> = match resume.take() {
                None => mem.iter_from(start).take(MEM_CHUNK).collect(),
                Some(last) => mem.iter_after(&last).take(MEM_CHUNK).collect(),
            };
            *exhausted = items.len() < MEM_CHUNK;
            *resume = items.last().map(|(k, _)| k.clone());
            buf.extend(items.into_iter().map(|(k, v)| Entry {
                user_key: k.user_key.into_vec(),
                seq: k.seq,
                kind: k.kind,
                value: v.into_vec(),
            }));
        }
    }

    fn table(mut iter: TableIter, start: Option<&[u8]>) -> Result<Source> {
        match start {
            Some(k) => iter.seek(&ikey::lookup_key(k, ikey::MAX_SEQ))?,
            None => iter.seek_to_first()?,
        }
        let current = Self::read_table(&mut iter)?;
        Ok(Source::Table { iter, current })
    }

    fn read_table(iter: &mut TableIter) -> Result<Option<Entry>> {
        if !iter.valid() {
            return Ok(None);
        }
        let (user_key, seq, kind) = ikey::decode(iter.key())?;
        Ok(Some(Entry { user_key: user_key.to_vec(), seq, kind, value: iter.value().to_vec() }))
    }

    fn peek(&self) -> Option<&Entry> {
        match self {
            Source::Mem { buf, .. } => buf.front(),
            Source::Table { current, .. } => current.as_ref(),
        }
    }

    fn pop(&mut self) -> Result<Option<Entry>> {
        match self {
            Source::Mem { buf, .. } => {
                let e = buf.pop_front();
                self.refill(None);
                Ok(e)
            }
            Source::Table { iter, current } => {
                let e = current.take();
                if e.is_some() {
                    iter.next()?;
                    *current = Self::read_table(iter)?;
                }
                Ok(e)
            }
        }
    }
}

/// Iterator over `(key, value)` pairs of a range at a snapshot, in key order. Yields an error
/// (and then ends) if a block read fails or is corrupt.
pub struct DbIterator {
    _sv: Arc<SuperVersion>,
    sources: Vec<Source>,
    snapshot: u64,
    start_excluded: Option<Vec<u8>>,
    end: Bound<Vec<u8>>,
    last_key: Option<Vec<u8>>,
    done: bool,
}

impl DbIterator {
    pub(crate) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        inner: Arc<DbInner>,
        range: &R,
        snapshot: u64,
    ) -> Result<DbIterator> {
        let (start, start_excluded) = match range.start_bound() {
            Bound::Included(k) => (Some(k.as_ref().to_vec()), None),
            Bound::Excluded(k) => (Some(k.as_ref().to_vec()), Some(k.as_ref().to_vec())),
            Bound::Unbounded => (None, None),
        };
        let end = match range.end_bound() {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Self::build(&inner, start, start_excluded, end, snapshot)
    }

    pub(crate) fn with_prefix(
        inner: Arc<DbInner>,
        prefix: &[u8],
        snapshot: u64,
    ) -> Result<DbIterator> {
        let end = match prefix_successor(prefix) {
            Some(s) => Bound::Excluded(s),
            None => Bound::Unbounded,
        };
        Self::build(&inner, Some(prefix.to_vec()), None, end, snapshot)
    }

    fn build(
        inner: &DbInner,
        start: Option<Vec<u8>>,
        start_excluded: Option<Vec<u8>>,
        end: Bound<Vec<u8>>,
        snapshot: u64,
    ) -> Result<DbIterator> {
        let sv = inner.super_version();
        let start_ref = start.as_deref();
        let end_excl = match &end {
            Bound::Excluded(e) => Some(e.as_slice()),
            _ => None,
        };
        let mut sources = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            sources.push(Source::mem(mem.clone(), start_ref));
        }
        for level in &sv.version.levels {
            for file in level.iter().filter(|f| f.overlaps(start_ref, end_excl)) {
                sources.push(Source::table(file.table.iter(true), start_ref)?);
            }
        }
        Ok(DbIterator {
            _sv: sv,
            sources,
            snapshot,
            start_excluded,
            end,
            last_key: None,
            done: false,
        })
    }

    fn past_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Included(e) => key > e.as_slice(),
            Bound::Excluded(e) => key >= e.as_slice(),
            Bound::Unbounded => false,
        }
    }

    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let mut best: Option<usize> = None;
            for (i, s) in self.sources.iter().enumerate() {
                if let Some(e) = s.peek() {
                    if best.is_none_or(|b| e.before(self.sources[b].peek().expect("peeked"))) {
                        best = Some(i);
                    }
                }
            }
            let Some(i) = best else { return Ok(None) };
            let e = self.sources[i].pop()?.expect("peeked entry");
            // Entries arrive in key order, so the first one past the end ends the scan, whether
            // or not the snapshot can see it.
            if self.past_end(&e.user_key) {
                return Ok(None);
            }
            if e.seq > self.snapshot {
                continue;
            }
            if self.last_key.as_deref() == Some(e.user_key.as_slice()) {
                continue; // an older version of a key already decided
            }
            self.last_key = Some(e.user_key.clone());
            if self.start_excluded.as_deref() == Some(e.user_key.as_slice()) {
                continue;
            }
            if e.kind == ValueKind::Put {
                return Ok(Some((e.user_key, e.value)));
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
        match self.next_entry() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => {
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

/// The smallest key greater than every key starting with `prefix`, or `None` if there is none
/// (the prefix is empty or all 0xFF).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last != 0xFF {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::prefix_successor;

    #[test]
    fn prefix_successor_increments_last_non_ff_byte() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
