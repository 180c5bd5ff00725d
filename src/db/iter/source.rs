//! The sources a scan merges, each a cursor over internal keys that moves both ways: one per
//! memtable (entries copied out in chunks), and one per run of sorted, disjoint files (an L0
//! file alone, or the overlapping files of a deeper level, opened only when the cursor reaches
//! them: a seek reads one block per level, not one per file).

use super::scan_probe::PendingCheck;
use crate::batch::ValueKind;
use crate::error::Result;
use crate::ikey;
use crate::memtable::{MemEntry, MemKey, Memtable};
use crate::sst::{CacheFill, ScanCounters, TableIter};
use crate::version::{TableFile, Version};
use std::cmp::{Ordering, Reverse};
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

/// Most entries taken from a memtable per refill. The skip list cannot be borrowed across
/// calls of an owning iterator, so the memtable source re-seeks after its last key once per
/// chunk (one O(log n) seek). The first chunk after a seek or a change of direction is
/// `MEM_FIRST_CHUNK` entries and each refill doubles it up to `MEM_CHUNK`: a short scan (a seek
/// and a few steps) copies a few entries, a long one amortises its seeks.
const MEM_CHUNK: usize = 256;
/// Entries in a memtable source's first chunk.
const MEM_FIRST_CHUNK: usize = 8;
/// Largest buffers (key plus value capacity) a memtable source keeps for reuse, so that the
/// spare entries (at most `MEM_CHUNK`, one refill's worth) hold at most 16 MiB after a scan passed
/// large values.
const MAX_SPARE_BYTES: usize = 64 << 10;

/// A position in internal-key order: keyspace ascending, user key ascending, then sequence
/// number descending, then kind descending (docs/format.md#internal-keys).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IKey<'a> {
    pub keyspace: u32,
    pub user_key: &'a [u8],
    pub seq: u64,
    pub kind: ValueKind,
}

impl IKey<'_> {
    /// The first internal key of `user_key` of `keyspace` (its newest possible version).
    pub fn first_of(keyspace: u32, user_key: &[u8]) -> IKey<'_> {
        IKey { keyspace, user_key, seq: ikey::MAX_SEQ, kind: ikey::LOOKUP_KIND }
    }

    /// The last internal key of `user_key` of `keyspace` (its oldest possible version).
    pub fn last_of(keyspace: u32, user_key: &[u8]) -> IKey<'_> {
        IKey { keyspace, user_key, seq: 0, kind: ValueKind::Delete }
    }

    fn order(&self) -> (u32, &[u8], Reverse<u64>, Reverse<ValueKind>) {
        (self.keyspace, self.user_key, Reverse(self.seq), Reverse(self.kind))
    }

    fn encode(&self) -> Vec<u8> {
        ikey::encode_in(self.keyspace, self.user_key, self.seq, self.kind)
    }

    fn mem_key(&self) -> MemKey {
        MemKey {
            keyspace: self.keyspace,
            user_key: self.user_key.into(),
            seq: self.seq,
            kind: self.kind,
        }
    }

    /// `(keyspace, user key)`: the order files are compared in.
    fn key_at(&self) -> (u32, &[u8]) {
        (self.keyspace, self.user_key)
    }
}

/// One decoded entry.
#[derive(Debug)]
pub(crate) struct Entry {
    pub keyspace: u32,
    pub user_key: Vec<u8>,
    pub seq: u64,
    pub kind: ValueKind,
    pub value: Vec<u8>,
}

impl Entry {
    /// An entry with empty buffers, to be overwritten (the sources reuse entries).
    fn empty() -> Entry {
        Entry { keyspace: 0, user_key: Vec::new(), seq: 0, kind: ValueKind::Put, value: Vec::new() }
    }

    pub fn ikey(&self) -> IKey<'_> {
        IKey { keyspace: self.keyspace, user_key: &self.user_key, seq: self.seq, kind: self.kind }
    }

    /// Internal-key order between this entry and `other`.
    pub fn cmp_to(&self, other: IKey<'_>) -> Ordering {
        self.ikey().order().cmp(&other.order())
    }
}

/// A source cursor. `peek` is the entry it is on; `None` means it ran off either end.
pub(crate) enum Source {
    Mem {
        mem: Arc<Memtable>,
        /// Entries from the current one onwards in the direction of travel (front = current).
        buf: VecDeque<Entry>,
        forward: bool,
        /// True when the skip list has nothing beyond `buf`'s last entry in that direction.
        exhausted: bool,
        chunk: usize,
        /// Entries already passed, their buffers reused by the next refill (a long scan
        /// allocates nothing per entry once the first chunks are read).
        spare: Vec<Entry>,
    },
    /// Sorted, disjoint files (one for an L0 file).
    Files {
        files: FileRun,
        /// Index in `files` of the file `iter` reads.
        at: usize,
        /// Boxed: a table cursor is large next to the memtable variant.
        iter: Option<Box<TableIter>>,
        current: Option<Entry>,
        /// Where the files' cursors count their block reads.
        counters: Arc<dyn ScanCounters>,
        /// A scan filter's "maybe" for this (single-file) source, settled at the first
        /// forward seek (src/db/iter/scan_probe.rs).
        check: Option<Box<PendingCheck>>,
        /// Which data blocks the files' cursors read go in the block cache.
        fill: CacheFill,
    },
}

/// Consecutive files `start..end` of one level of a version, held through the version: one
/// reference count taken per source instead of one per file. A cursor over an open-ended range
/// covers about half of a level's files, and two threads seeking at once would otherwise pass
/// those files' shared counts back and forth twice per file on every seek.
#[derive(Clone)]
pub struct FileRun {
    version: Arc<Version>,
    level: usize,
    start: usize,
    end: usize,
}

impl FileRun {
    /// Files `range` of `level` of `version` (`range` within the level).
    pub fn new(version: &Arc<Version>, level: usize, range: std::ops::Range<usize>) -> FileRun {
        debug_assert!(range.start < range.end && range.end <= version.levels()[level].len());
        FileRun { version: Arc::clone(version), level, start: range.start, end: range.end }
    }
}

impl std::ops::Deref for FileRun {
    type Target = [Arc<TableFile>];

    fn deref(&self) -> &[Arc<TableFile>] {
        &self.version.levels()[self.level][self.start..self.end]
    }
}

impl Source {
    /// A memtable source, positioned nowhere.
    pub fn mem(mem: Arc<Memtable>) -> Source {
        Source::Mem {
            mem,
            buf: VecDeque::new(),
            forward: true,
            exhausted: true,
            chunk: 0,
            spare: Vec::new(),
        }
    }

    /// A source over `files` (non-empty, sorted by key, disjoint), positioned nowhere; no file
    /// is opened until a seek reaches it.
    pub fn files(files: FileRun, counters: Arc<dyn ScanCounters>) -> Source {
        Source::Files {
            files,
            at: 0,
            iter: None,
            current: None,
            counters,
            check: None,
            fill: CacheFill::Always,
        }
    }

    /// [`Source::files`] over a file whose scan filter answered "maybe": the first forward
    /// seek counts whether the file held an entry in the range.
    pub fn checked_files(
        files: FileRun,
        counters: Arc<dyn ScanCounters>,
        check: PendingCheck,
    ) -> Source {
        let check = Some(Box::new(check));
        let fill = CacheFill::Always;
        Source::Files { files, at: 0, iter: None, current: None, counters, check, fill }
    }

    /// Makes a files source put the blocks it reads in the block cache as `with` admits them.
    pub(crate) fn fill_cache_as(&mut self, with: &CacheFill) {
        if let Source::Files { fill, .. } = self {
            *fill = with.clone();
        }
    }

    /// The merge operator name recorded by the table the current entry comes from (`""` if
    /// unknown); `None` for a memtable, whose operands the configured operator wrote.
    pub fn merge_operator(&self) -> Option<&str> {
        match self {
            Source::Mem { .. } => None,
            Source::Files { files, at, .. } => {
                Some(files.get(*at).and_then(|f| f.info.merge_operator.as_deref()).unwrap_or(""))
            }
        }
    }

    pub fn peek(&self) -> Option<&Entry> {
        match self {
            Source::Mem { buf, .. } => buf.front(),
            Source::Files { current, .. } => current.as_ref(),
        }
    }

    /// Positions on the first entry `>= target`.
    pub fn seek(&mut self, target: IKey<'_>) -> Result<()> {
        match self {
            Source::Mem { .. } => {
                self.mem_restart(true, Bound::Included(&target.mem_key()));
                Ok(())
            }
            Source::Files { files, .. } => {
                let i = files.partition_point(|f| f.meta.largest() < target.key_at());
                self.open_file(i, |it| it.seek(&target.encode()))?;
                self.skip_empty_files(true)?;
                if let Source::Files { check: check @ Some(_), current, counters, files, .. } = self
                {
                    let first = current.as_ref().map(Entry::ikey);
                    check.take().expect("some").settle(first, counters.counters(files.level));
                }
                Ok(())
            }
        }
    }

    /// Positions on the last entry `<= target`.
    pub fn seek_for_prev(&mut self, target: IKey<'_>) -> Result<()> {
        match self {
            Source::Mem { .. } => {
                self.mem_restart(false, Bound::Included(&target.mem_key()));
                Ok(())
            }
            Source::Files { files, check, .. } => {
                *check = None; // settled only by a forward seek
                let i = files.partition_point(|f| f.meta.smallest() <= target.key_at());
                if i == 0 {
                    self.open_file(files_len(self), |_| Ok(()))?; // nothing at or before
                    return Ok(());
                }
                self.open_file(i - 1, |it| it.seek_for_prev(&target.encode()))?;
                self.skip_empty_files(false)
            }
        }
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) -> Result<()> {
        match self {
            Source::Mem { .. } => {
                self.mem_restart(false, Bound::Unbounded);
                Ok(())
            }
            Source::Files { files, check, .. } => {
                *check = None;
                let last = files.len() - 1;
                self.open_file(last, TableIter::seek_to_last)?;
                self.skip_empty_files(false)
            }
        }
    }

    /// Moves to the next entry (no-op when off either end).
    pub fn next(&mut self) -> Result<()> {
        self.step(true)
    }

    /// Moves to the previous entry (no-op when off either end).
    pub fn prev(&mut self) -> Result<()> {
        self.step(false)
    }

    fn step(&mut self, fwd: bool) -> Result<()> {
        match self {
            Source::Mem { buf, forward, spare, .. } => {
                let Some(cur) = buf.front() else { return Ok(()) };
                if *forward != fwd {
                    // Turn round: re-read from the current entry in the new direction.
                    let from = cur.ikey().mem_key();
                    self.mem_restart(fwd, Bound::Excluded(&from));
                    return Ok(());
                }
                let popped = buf.pop_front().expect("current entry");
                let last = buf.is_empty().then(|| popped.ikey().mem_key());
                if popped.user_key.capacity() + popped.value.capacity() <= MAX_SPARE_BYTES {
                    spare.push(popped);
                }
                if let Some(last) = last {
                    self.mem_refill(&last);
                }
                Ok(())
            }
            Source::Files { iter, current, .. } => {
                let Some(it) = iter.as_mut().filter(|_| current.is_some()) else { return Ok(()) };
                if fwd {
                    it.next()?;
                } else {
                    it.prev()?;
                }
                read_into(it, current)?;
                self.skip_empty_files(fwd)
            }
        }
    }

    /// Empties a memtable source's buffer and fills it with the first chunk from `from` in the
    /// given direction.
    fn mem_restart(&mut self, fwd: bool, from: Bound<&MemKey>) {
        if let Source::Mem { buf, forward, exhausted, chunk, .. } = self {
            buf.clear();
            *forward = fwd;
            *exhausted = false;
            *chunk = MEM_FIRST_CHUNK;
        }
        self.mem_fill(from);
    }

    /// Refills an empty buffer with the chunk after `last` (the entry just left).
    fn mem_refill(&mut self, last: &MemKey) {
        if matches!(self, Source::Mem { exhausted: false, .. }) {
            self.mem_fill(Bound::Excluded(last));
        }
    }

    fn mem_fill(&mut self, from: Bound<&MemKey>) {
        if let Source::Mem { mem, buf, forward, exhausted, chunk, spare } = self {
            let n = *chunk;
            *chunk = (n * 2).min(MEM_CHUNK);
            let before = buf.len();
            let mut take = |e: MemEntry<'_>| {
                let mut entry = spare.pop().unwrap_or_else(Entry::empty);
                entry.keyspace = e.keyspace();
                entry.seq = e.seq();
                entry.kind = e.kind();
                entry.user_key.clear();
                entry.user_key.extend_from_slice(e.key());
                entry.value.clear();
                entry.value.extend_from_slice(e.value());
                buf.push_back(entry);
            };
            if *forward {
                mem.entries_asc(from).take(n).for_each(&mut take);
            } else {
                mem.entries_desc(from).take(n).for_each(&mut take);
            }
            *exhausted = buf.len() - before < n;
        }
    }

    /// Opens file `i` of a files source and positions it with `position`; `i` past the last
    /// file leaves the source off the end.
    fn open_file(
        &mut self,
        i: usize,
        position: impl FnOnce(&mut TableIter) -> Result<()>,
    ) -> Result<()> {
        if let Source::Files { files, at, iter, current, counters, fill, .. } = self {
            *current = None;
            *at = i;
            let Some(file) = files.get(i) else {
                *iter = None;
                return Ok(());
            };
            let level = files.level;
            let table = file.table()?;
            let mut it =
                Box::new(table.iter_filling(fill.clone()).counting(counters.clone(), level));
            position(&mut it)?;
            *current = read(&mut it)?;
            *iter = Some(it);
        }
        Ok(())
    }

    /// For a files source whose file is exhausted in the direction of travel: moves into the
    /// neighbouring file (and on past empty ones) until an entry is found or the files run out.
    fn skip_empty_files(&mut self, fwd: bool) -> Result<()> {
        loop {
            let Source::Files { files, at, current, .. } = self else { return Ok(()) };
            if current.is_some() {
                return Ok(());
            }
            if fwd && *at + 1 < files.len() {
                let next = *at + 1;
                self.open_file(next, TableIter::seek_to_first)?;
            } else if !fwd && *at > 0 && *at <= files.len() {
                let before = *at - 1;
                self.open_file(before, TableIter::seek_to_last)?;
            } else {
                return Ok(());
            }
        }
    }
}

fn files_len(s: &Source) -> usize {
    match s {
        Source::Files { files, .. } => files.len(),
        Source::Mem { .. } => 0,
    }
}

fn read(iter: &mut TableIter) -> Result<Option<Entry>> {
    let mut entry = None;
    read_into(iter, &mut entry)?;
    Ok(entry)
}

/// [`read`] into `slot`, reusing the buffers of the entry it holds: a step of a scan then
/// allocates nothing (malloc and free were about a tenth of a Python full scan's samples).
/// `slot` is `None` off the end, and after an error.
fn read_into(iter: &mut TableIter, slot: &mut Option<Entry>) -> Result<()> {
    let r = fill_entry(iter, slot);
    if r.is_err() {
        *slot = None;
    }
    r
}

/// [`read_into`]'s work; on an error `slot` may hold a partly overwritten entry.
fn fill_entry(iter: &mut TableIter, slot: &mut Option<Entry>) -> Result<()> {
    if !iter.valid() {
        *slot = None;
        return Ok(());
    }
    let (keyspace, user_key, seq, kind) = ikey::decode_in(iter.key())?;
    if kind == ValueKind::RangeDelete {
        return Err(crate::Error::corruption("range tombstone among a data block's entries", None));
    }
    let e = slot.get_or_insert_with(Entry::empty);
    e.keyspace = keyspace;
    e.seq = seq;
    e.user_key.clear();
    e.user_key.extend_from_slice(user_key);
    // A blob reference reads as the Put of its value: everything above the sources (cursor,
    // merge, transactions) sees only inline kinds (design.md#key-value-separation).
    if kind == ValueKind::BlobIndex {
        e.value = iter.table().read_blob(iter.value())?;
        e.kind = ValueKind::Put;
    } else {
        e.kind = kind;
        e.value.clear();
        e.value.extend_from_slice(iter.value());
    }
    Ok(())
}
