//! Range scans: a merge of every memtable and every SST whose range overlaps the scan, yielding
//! for each user key the newest version at or below the snapshot, and skipping tombstones.
//!
//! Sources: one per memtable (copied out in chunks that start small), one per L0 file, and one
//! per deeper level that walks that level's overlapping files in order, opening a file only
//! when the scan reaches it (a seek reads one block per level, not one per file).
//! Sources are merged by internal-key order (user key ascending, sequence descending). The
//! iterator holds the super-version it started from, so the memtables and files it reads stay
//! alive however the database changes meanwhile.

use super::{DbInner, SuperVersion};
use crate::batch::ValueKind;
use crate::error::Result;
use crate::ikey;
use crate::memtable::{MemKey, Memtable};
use crate::sst::TableIter;
use crate::version::TableFile;
use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Most entries taken from a memtable per refill. The skip list cannot be borrowed across
/// calls of an owning iterator, so the memtable source re-seeks after its last key once per
/// chunk (one O(log n) seek). The first chunk is `MEM_FIRST_CHUNK` entries and each refill
/// doubles it up to `MEM_CHUNK`: a short scan (a seek and a few `next`s) copies a few entries,
/// a long one amortises its seeks.
const MEM_CHUNK: usize = 256;
/// Entries in a memtable source's first chunk.
const MEM_FIRST_CHUNK: usize = 8;

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
    Mem {
        mem: Arc<Memtable>,
        buf: VecDeque<Entry>,
        resume: Option<MemKey>,
        exhausted: bool,
        chunk: usize,
    },
    Table {
        iter: TableIter,
        current: Option<Entry>,
    },
    /// The files of one level >= 1 (sorted, disjoint) that overlap the scan, read one at a
    /// time: a file is opened (and its first block read) only when the scan reaches it.
    Level {
        files: Vec<Arc<TableFile>>,
        /// Index in `files` of the file `iter` reads.
        at: usize,
        iter: TableIter,
        current: Option<Entry>,
    },
}

impl Source {
    fn mem(mem: Arc<Memtable>, start: Option<&[u8]>) -> Source {
        let mut s = Source::Mem {
            mem,
            buf: VecDeque::new(),
            resume: None,
            exhausted: false,
            chunk: MEM_FIRST_CHUNK,
        };
        s.refill(start);
        s
    }

    fn refill(&mut self, start: Option<&[u8]>) {
        if let Source::Mem { mem, buf, resume, exhausted, chunk } = self {
            if !buf.is_empty() || *exhausted {
                return;
            }
            let n = *chunk;
            *chunk = (n * 2).min(MEM_CHUNK);
            let items: Vec<(MemKey, Box<[u8]>)> = match resume.take() {
                None => mem.iter_from(start).take(n).collect(),
                Some(last) => mem.iter_after(&last).take(n).collect(),
            };
            *exhausted = items.len() < n;
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

    /// A level source over `files` (non-empty, sorted, disjoint), positioned at `start`.
    fn level(files: Vec<Arc<TableFile>>, start: Option<&[u8]>) -> Result<Source> {
        let mut iter = files[0].table()?.iter(true);
        match start {
            Some(k) => iter.seek(&ikey::lookup_key(k, ikey::MAX_SEQ))?,
            None => iter.seek_to_first()?,
        }
        let current = Self::read_table(&mut iter)?;
        let mut s = Source::Level { files, at: 0, iter, current };
        s.next_file_if_exhausted()?;
        Ok(s)
    }

    /// For a level source whose file is exhausted: moves to the next file's first entry (and on
    /// past empty files) until an entry is found or the files run out.
    fn next_file_if_exhausted(&mut self) -> Result<()> {
        if let Source::Level { files, at, iter, current } = self {
            while current.is_none() && *at + 1 < files.len() {
                *at += 1;
                *iter = files[*at].table()?.iter(true);
                iter.seek_to_first()?;
                *current = Self::read_table(iter)?;
            }
        }
        Ok(())
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
            Source::Table { current, .. } | Source::Level { current, .. } => current.as_ref(),
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
            Source::Level { iter, current, .. } => {
                let e = current.take();
                if e.is_some() {
                    iter.next()?;
                    *current = Self::read_table(iter)?;
                    self.next_file_if_exhausted()?;
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
        for (n, level) in sv.version.levels.iter().enumerate() {
            let files = level.iter().filter(|f| f.overlaps(start_ref, end_excl));
            if n == 0 {
                // L0 files may overlap each other: one source each.
                for file in files {
                    sources.push(Source::table(file.table()?.iter(true), start_ref)?);
                }
            } else {
                let files: Vec<Arc<TableFile>> = files.cloned().collect();
                if !files.is_empty() {
                    sources.push(Source::level(files, start_ref)?);
                }
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
    use crate::rng::SplitMix64;
    use crate::storage::MemStorage;
    use crate::{CompactionOptions, Db, Options};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    #[test]
    fn seeks_across_multi_file_levels_and_chunked_memtables_match_a_model() {
        // Small files: the compacted data spans many files per level, so seeks land in every
        // file and scans cross file boundaries; a final batch of writes stays in the memtable
        // (more than the first chunks, so its source refills with growing chunks).
        let storage = MemStorage::new();
        let opts = Options {
            storage: Some(Arc::new(storage)),
            memtable_size: 64 << 10,
            compaction: CompactionOptions {
                max_bytes_for_level_base: 256 << 10,
                target_file_size: 32 << 10,
                ..CompactionOptions::default()
            },
            ..Options::default()
        };
        let db = Db::open("/db", opts).unwrap();
        let mut rng = SplitMix64::new(9);
        let mut model = BTreeMap::new();
        for round in 0..2 {
            for i in 0..20_000u64 {
                let k = (rng.below(50_000) * 2).to_be_bytes().to_vec();
                let v = format!("v{round}-{i}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            if round == 0 {
                db.compact().unwrap();
                let files: Vec<usize> = (1..7).map(|l| db.stats().levels[l].files).collect();
                assert!(files.iter().any(|&n| n >= 3), "levels hold several files: {files:?}");
            }
        }
        for _ in 0..300 {
            let start = rng.below(100_002).to_be_bytes().to_vec(); // odd starts fall between keys
            let n = rng.below(40) as usize + 1;
            let got: Vec<(Vec<u8>, Vec<u8>)> =
                db.range(start.as_slice()..).unwrap().take(n).map(|kv| kv.unwrap()).collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> =
                model.range(start..).take(n).map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got, want);
        }
        let all: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(all.len(), model.len());
        assert!(all.iter().zip(&model).all(|((k, v), (mk, mv))| k == mk && v == mv));
    }

    #[test]
    fn prefix_successor_increments_last_non_ff_byte() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
