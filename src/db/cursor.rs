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
//! - Merge operands: forward, a newest visible version that is an operand makes the cursor
//!   read on through the key's older versions, collecting operands until a Put (base), a
//!   Delete or the next key (no base), and show their merge (a copy, like a backward entry).
//!   Backward, the key's versions arrive oldest first: a Put or Delete resets the collected
//!   operands, an operand is added, and the newest state decides. Each operand's source table
//!   must record the configured operator's name (`crate::merge`).
//!
//! A cursor reads one keyspace. The keyspaces occupy consecutive internal-key ranges, so the
//! merge meets the cursor's keyspace as one run: an entry of a larger keyspace ends a forward
//! walk, one of a smaller keyspace a backward walk, exactly as the bounds do.
//! - Range tombstones: at its first positioning the cursor collects the tombstones visible at
//!   its snapshot from every memtable and from every file in its range that has any, and
//!   fragments them; a version older than the newest tombstone covering its key counts as a
//!   tombstone in both directions.

use super::iter::merge::Merge;
use super::iter::scan_probe::{FileVerdict, ScanProbe};
use super::iter::source::{FileRun, IKey, Source};
use super::read_counters::StripedReadCounters;
use super::SuperVersion;
use crate::batch::ValueKind;
use crate::error::Result;
use crate::merge::{Operands, SharedMergeOperator};
use crate::options::ReadOptions;
use crate::prefix::PrefixExtractor;
use crate::range_del::{Fragments, RangeTombstone};
use crate::sst::{CacheFill, ScanCounters};
use crate::version::{borrowed, TableFile};
use std::ops::Bound;
use std::sync::Arc;

/// Levels whose overlapping files a prefix scan finds (and prefetches the filters of) before
/// asking them: every level a tree normally has; deeper ones are searched when reached.
const PREFETCH_LEVELS: usize = crate::limits::NUM_LEVELS;

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
/// let mut c = db.cursor()?;
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
    /// The database's counters: positionings, and the data blocks each level's files read.
    reads: Arc<StripedReadCounters>,
    merge: Merge,
    keyspace: u32,
    snapshot: u64,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    valid: bool,
    forward: bool,
    /// Forward: the key being skipped, or the key shown when `merged`. Backward: the key
    /// shown (with `saved_value`).
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    /// Forward: the entry shown is a merge result held in `saved_key`/`saved_value` (the
    /// merge sits past the key's operands).
    merged: bool,
    config: CursorConfig,
    /// The range tombstones visible at `snapshot`, collected at the first positioning
    /// (`None`: there are none, the common case, which allocates nothing).
    tombstones: Option<Arc<Fragments>>,
    tombstones_loaded: bool,
}

/// What a cursor takes from the database's options.
#[derive(Clone)]
pub(crate) struct CursorConfig {
    /// The operator that merges operands (`Options::merge_operator`).
    pub merge_op: Option<SharedMergeOperator>,
    /// The prefix extractor of the prefix filters (`Options::prefix_extractor`).
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Count the scan filters' answers (off for the back end of a double-ended scan, which
    /// asks the same files again).
    count_filters: bool,
    /// The database's life cycle: a cursor of a closed database moves no more.
    life: Arc<super::Lifecycle>,
    /// Put the data blocks read from disk in the block cache ([`ReadOptions::fill_cache`]).
    fill_cache: bool,
    /// How many bytes of blocks one cursor puts in the block cache (a quarter of its
    /// capacity) before it reads around it (src/sst/cache_fill.rs says why).
    fill_budget: usize,
    /// The keyspace's TTL state (src/db/ttl.rs): an expired version counts as a tombstone,
    /// and values shown lose their write time (`merge_op` then strips the operands' times).
    ttl: Option<super::ttl::ReadTtl>,
}

impl CursorConfig {
    /// The configuration of a cursor over `keyspace` of the database `inner`.
    pub(crate) fn of(inner: &super::DbInner, keyspace: u32) -> CursorConfig {
        let ttl = super::ttl::read_ttl(inner, keyspace);
        CursorConfig {
            merge_op: super::ttl::operator_for(
                inner.opts.merge_operator.as_ref(),
                ttl.map(|t| t.ttl_ms),
            ),
            ttl,
            prefix_extractor: inner.opts.prefix_extractor.clone(),
            count_filters: true,
            life: inner.life.clone(),
            fill_cache: true,
            fill_budget: inner.opts.block_cache_bytes / 4,
        }
    }

    /// This configuration with the read options `opts`.
    pub(crate) fn reading(self, opts: &ReadOptions) -> CursorConfig {
        CursorConfig { fill_cache: opts.fill_cache, ..self }
    }
}

impl DbCursor {
    /// A cursor over `sv` at `snapshot`, restricted to user keys of `keyspace` within
    /// `lower..upper`. A range with both ends leaves out the memtables and files its scan
    /// filters prove empty there (src/db/iter/scan_probe.rs), counting their checks.
    pub(crate) fn new(
        sv: Arc<SuperVersion>,
        reads: Arc<StripedReadCounters>,
        keyspace: u32,
        snapshot: u64,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        config: CursorConfig,
    ) -> DbCursor {
        let filters = (config.prefix_extractor.as_deref(), config.count_filters);
        let bounds = (borrowed(&lower), borrowed(&upper));
        let sources = Self::sources(&sv, &reads, keyspace, bounds, filters);
        Self::with_sources(sv, reads, keyspace, snapshot, (lower, upper), config, sources)
    }

    /// A cursor over `sources`, which [`DbCursor::sources`] chose for the same arguments.
    pub(crate) fn with_sources(
        sv: Arc<SuperVersion>,
        reads: Arc<StripedReadCounters>,
        keyspace: u32,
        snapshot: u64,
        (lower, upper): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        config: CursorConfig,
        mut sources: Vec<Source>,
    ) -> DbCursor {
        let fill = match config.fill_cache {
            true => CacheFill::budget(config.fill_budget),
            false => CacheFill::Never,
        };
        sources.iter_mut().for_each(|s| s.fill_cache_as(&fill));
        DbCursor {
            merge: Merge::new(sources),
            sv,
            reads,
            keyspace,
            snapshot,
            lower,
            upper,
            valid: false,
            forward: true,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            merged: false,
            config,
            tombstones: None,
            tombstones_loaded: false,
        }
    }

    /// The memtables and the runs of files overlapping `lower..upper` that the scan filters
    /// (asked with the prefix `extractor`) do not rule out, counting the filters' answers in
    /// the calling thread's stripe if `count`. Empty when nothing can hold an entry of the
    /// range: no cursor is needed then.
    pub(crate) fn sources(
        sv: &Arc<SuperVersion>,
        reads: &Arc<StripedReadCounters>,
        keyspace: u32,
        (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
        (extractor, count): (Option<&dyn PrefixExtractor>, bool),
    ) -> Vec<Source> {
        let probe = ScanProbe::new(keyspace, lower, upper, extractor);
        // A sorted level's files overlapping a key range are consecutive: found by binary
        // search (a linear scan compared keys with every file of the level, 13% of a short
        // scan's time in a profile). Only the first and the last can lack an entry in the
        // range (each file between holds its own smallest key, which lies inside), so only
        // they are asked, each as a source of its own.
        let overlapping = |n: usize| sv.version.overlapping_in_level(n, keyspace, lower, upper);
        // With one prefix to ask, the prefix-filter lines of every file to be asked start
        // loading first, before the memtables are asked, so the probes below overlap their
        // cache misses instead of waiting for one after another (the probes were 37% of an
        // absent-prefix scan's time). The spans found here are not searched for again.
        let mut spans = [const { None }; PREFETCH_LEVELS];
        if let Some(p) = probe.as_ref().filter(|p| p.has_prefix()) {
            let levels = sv.version.levels();
            for f in levels.first().into_iter().flatten() {
                if f.overlaps(keyspace, lower, upper) {
                    p.prefetch_file(f);
                }
            }
            for (n, span) in spans.iter_mut().enumerate().take(levels.len()).skip(1) {
                let r = overlapping(n);
                if r.start < r.end {
                    p.prefetch_file(&levels[n][r.start]);
                    p.prefetch_file(&levels[n][r.end - 1]);
                }
                *span = Some(r);
            }
        }
        let mut sources = Vec::new();
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            if !probe.as_ref().is_some_and(|p| p.skips_mem(mem)) {
                sources.push(Source::mem(mem.clone()));
            }
        }
        // Cloned per file source only: a scan whose files are all ruled out writes no
        // reference count.
        let counters = || -> Arc<dyn ScanCounters> { reads.clone() };
        let stripe = reads.local();
        // One file alone as a source, unless its filters rule it out.
        let single = |sources: &mut Vec<Source>, level: usize, i: usize| {
            let run = FileRun::new(&sv.version, level, i..i + 1);
            let Some(p) = &probe else {
                sources.push(Source::files(run, counters()));
                return;
            };
            let c = count.then(|| &stripe.scan_levels[level]);
            match p.check_file(&sv.version.levels()[level][i], c) {
                FileVerdict::Skip => {}
                FileVerdict::Passed if count => {
                    let check = p.pending(lower, upper);
                    sources.push(Source::checked_files(run, counters(), check));
                }
                _ => sources.push(Source::files(run, counters())),
            }
        };
        for (n, level) in sv.version.levels().iter().enumerate() {
            let overlaps = |f: &Arc<TableFile>| f.overlaps(keyspace, lower, upper);
            if n == 0 {
                // L0 files may overlap each other: one source each.
                for (i, _) in level.iter().enumerate().filter(|(_, f)| overlaps(f)) {
                    single(&mut sources, 0, i);
                }
                continue;
            }
            let std::ops::Range { start: first, mut end } =
                spans.get_mut(n).and_then(Option::take).unwrap_or_else(|| overlapping(n));
            if first >= end {
                continue;
            }
            debug_assert!(level[first..end].iter().all(overlaps));
            let mut begin = first;
            let mut last = None;
            if probe.is_some() {
                single(&mut sources, n, begin);
                begin += 1;
                if end > begin {
                    last = Some(end - 1);
                    end -= 1;
                }
            }
            if begin < end {
                sources.push(Source::files(FileRun::new(&sv.version, n, begin..end), counters()));
            }
            if let Some(i) = last {
                single(&mut sources, n, i);
            }
        }
        sources
    }

    /// Another cursor over the same data, snapshot and bounds, positioned nowhere.
    pub(crate) fn twin(&self) -> DbCursor {
        // The same sources, asked again but not counted again: the scan's filter answers
        // were counted once, by this cursor.
        let config = CursorConfig { count_filters: false, ..self.config.clone() };
        let mut t = DbCursor::new(
            self.sv.clone(),
            self.reads.clone(),
            self.keyspace,
            self.snapshot,
            self.lower.clone(),
            self.upper.clone(),
            config,
        );
        t.tombstones = self.tombstones.clone();
        t.tombstones_loaded = self.tombstones_loaded;
        t
    }

    /// Collects the range tombstones of the cursor's keyspace (once): memtables, then the
    /// keyspace's files overlapping the bounds whose tables hold any (no other file is opened).
    fn load_tombstones(&mut self) -> Result<()> {
        if self.tombstones_loaded {
            return Ok(());
        }
        // Tombstones only hide the sources' entries: with every source ruled out by the scan
        // filters there is nothing to hide (and a scan of an absent prefix costs no more).
        if self.merge.is_empty() {
            self.tombstones_loaded = true;
            return Ok(());
        }
        let ks = self.keyspace;
        let mut list: Vec<RangeTombstone> = Vec::new();
        for mem in std::iter::once(&self.sv.mem).chain(self.sv.imm.iter()) {
            list.extend(mem.range_tombstones(ks).clipped(None, None, self.snapshot));
        }
        for f in self.sv.version.range_deletion_files() {
            if f.overlaps(ks, borrowed(&self.lower), borrowed(&self.upper)) {
                list.extend(f.table()?.range_tombstones().clipped(None, None, self.snapshot));
            }
        }
        let fragments = Fragments::new(&list);
        self.tombstones = (!fragments.is_empty()).then(|| Arc::new(fragments));
        self.tombstones_loaded = true;
        Ok(())
    }

    /// The entry's kind as the cursor treats it: a version covered by a visible range
    /// tombstone counts as a tombstone, and so does an expired version of a TTL keyspace
    /// (src/db/ttl.rs; an unreadable write time is reported when the value is shown).
    fn effective_kind(
        tombstones: &Option<Arc<Fragments>>,
        e: &super::iter::source::Entry,
        snapshot: u64,
        ttl: Option<super::ttl::ReadTtl>,
    ) -> ValueKind {
        match tombstones {
            Some(t) if t.covers(&e.user_key, e.seq, snapshot) => ValueKind::Delete,
            _ if matches!(e.kind, ValueKind::Put | ValueKind::Merge)
                && ttl.is_some_and(|t| t.expired(&e.value).unwrap_or(false)) =>
            {
                ValueKind::Delete
            }
            _ => e.kind,
        }
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        match (self.valid, self.forward && !self.merged) {
            (false, _) => &[],
            (true, true) => &self.merge.entry().expect("valid forward cursor").user_key,
            (true, false) => &self.saved_key,
        }
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        match (self.valid, self.forward && !self.merged) {
            (false, _) => &[],
            (true, true) => &self.merge.entry().expect("valid forward cursor").value,
            (true, false) => &self.saved_value,
        }
    }

    /// Counts a positioning in the calling thread's stripe (`rocksdb.number.db.seek`).
    fn count_seek(&self) {
        let stripe = self.reads.local();
        stripe.add(&stripe.seeks, 1);
    }

    /// Positions on the first entry whose key is `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.check_open()?;
        self.count_seek();
        let r = self.load_tombstones().and_then(|()| self.seek_inner(key));
        self.check(r)
    }

    /// Positions on the last entry whose key is `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) -> Result<()> {
        self.check_open()?;
        self.count_seek();
        let r = self.load_tombstones().and_then(|()| self.seek_for_prev_inner(key));
        self.check(r)
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.check_open()?;
        self.count_seek();
        if self.merge.is_empty() {
            (self.forward, self.valid) = (true, false);
            return Ok(());
        }
        if let Err(e) = self.load_tombstones() {
            return self.check(Err(e));
        }
        let r = match self.lower.clone() {
            Bound::Included(k) | Bound::Excluded(k) => self.seek_inner(&k),
            // The smallest user key: the first entry of the keyspace.
            Bound::Unbounded => self.seek_inner(b""),
        };
        self.check(r)
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.check_open()?;
        self.count_seek();
        if let Err(e) = self.load_tombstones() {
            return self.check(Err(e));
        }
        let r = match self.upper.clone() {
            Bound::Included(k) | Bound::Excluded(k) => self.seek_for_prev_inner(&k),
            Bound::Unbounded => {
                self.forward = false;
                // The last entry before the next keyspace's first possible key (no entry has
                // sequence MAX_SEQ, so none equals it).
                let r = match self.keyspace.checked_add(1) {
                    Some(next) => self.merge.seek_for_prev(IKey::first_of(next, b"")),
                    None => self.merge.seek_to_last(),
                };
                r.and_then(|()| self.find_prev())
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
        self.check_open()?;
        let r = self.next_inner();
        self.check(r)
    }

    /// Moves to the previous entry (no-op when not valid).
    pub fn prev(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        self.check_open()?;
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
        self.merge.seek(IKey {
            keyspace: self.keyspace,
            user_key: &key,
            seq,
            kind: crate::ikey::LOOKUP_KIND,
        })?;
        self.find_next(false)
    }

    fn seek_for_prev_inner(&mut self, key: &[u8]) -> Result<()> {
        self.forward = false;
        let key = match &self.upper {
            Bound::Included(u) | Bound::Excluded(u) if key > u.as_slice() => u.clone(),
            _ => key.to_vec(),
        };
        self.merge.seek_for_prev(IKey::last_of(self.keyspace, &key))?;
        self.find_prev()
    }

    fn next_inner(&mut self) -> Result<()> {
        if self.forward {
            // A merged entry's key is in `saved_key` already, and the merge is past its
            // operands; the skip below passes over its remaining versions.
            if !self.merged {
                let key = &self.merge.entry().expect("valid forward cursor").user_key;
                self.saved_key.clear();
                self.saved_key.extend_from_slice(key);
                self.merge.next()?;
            }
        } else {
            // The merge sits before the shown key's versions: re-seek to its first version,
            // then skip them (`saved_key` already holds the key).
            self.forward = true;
            self.merge.seek(IKey::first_of(self.keyspace, &self.saved_key))?;
        }
        self.find_next(true)
    }

    fn prev_inner(&mut self) -> Result<()> {
        if self.forward {
            // Re-seek to the last entry before the shown key's first version.
            let key = match self.merged {
                true => self.saved_key.clone(),
                false => self.merge.entry().expect("valid forward cursor").user_key.clone(),
            };
            self.forward = false;
            let ks = self.keyspace;
            self.merge.seek_for_prev(IKey::first_of(ks, &key))?;
            while self.merge.entry().is_some_and(|e| (e.keyspace, &e.user_key) >= (ks, &key)) {
                self.merge.prev()?; // only a version at MAX_SEQ, which no write gets
            }
        }
        self.find_prev()
    }

    /// Forward from the merge's position to the newest visible version of the first key that
    /// is live, inside the bounds, and (when `skipping`) after `saved_key`.
    fn find_next(&mut self, mut skipping: bool) -> Result<()> {
        self.valid = false;
        self.merged = false;
        while let Some(e) = self.merge.entry() {
            let ks = self.keyspace;
            if e.keyspace > ks || (e.keyspace == ks && past_upper(&self.upper, &e.user_key)) {
                return Ok(()); // entries come in key order: nothing further is in range
            }
            let inside = e.keyspace == self.keyspace && !below_lower(&self.lower, &e.user_key);
            if inside && e.seq <= self.snapshot {
                let skipped = skipping && e.user_key <= self.saved_key;
                match Self::effective_kind(&self.tombstones, e, self.snapshot, self.config.ttl) {
                    // Sources never yield range tombstones (iter/source.rs rejects them) nor
                    // blob references (it reads their values).
                    ValueKind::Delete | ValueKind::RangeDelete | ValueKind::BlobIndex => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(&e.user_key);
                        skipping = true;
                    }
                    ValueKind::Put if !skipped && self.config.ttl.is_some() => {
                        // Shown from the saved copy, without its write time.
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(&e.user_key);
                        self.saved_value = crate::write_time::strip(e.value.clone())?;
                        self.valid = true;
                        self.merged = true;
                        return Ok(());
                    }
                    ValueKind::Put if !skipped => {
                        self.valid = true;
                        return Ok(());
                    }
                    ValueKind::Merge if !skipped => return self.merge_forward(),
                    ValueKind::Put | ValueKind::Merge => {}
                }
            }
            self.merge.next()?;
        }
        Ok(())
    }

    /// The merge sits on the newest visible version of a key, an operand: collects it and the
    /// older operands up to a Put (the base), a Delete or the next key (no base), and shows
    /// their merge from `saved_key`/`saved_value`. The merge is left past the operands.
    fn merge_forward(&mut self) -> Result<()> {
        let op = self.config.merge_op.clone();
        let mut ops = Operands::with_ttl(op.as_ref(), self.config.ttl);
        let e = self.merge.entry().expect("on an operand");
        self.saved_key.clear();
        self.saved_key.extend_from_slice(&e.user_key);
        ops.check_source(self.merge.merge_operator(), &self.saved_key)?;
        ops.list.push(e.value.clone());
        self.merge.next()?;
        // Versions after the first visible one are older, hence visible too.
        let base = loop {
            let ks = self.keyspace;
            let same_key =
                self.merge.entry().filter(|e| e.keyspace == ks && e.user_key == self.saved_key);
            let Some(e) = same_key else {
                break None;
            };
            match Self::effective_kind(&self.tombstones, e, self.snapshot, self.config.ttl) {
                ValueKind::Put => break Some(e.value.clone()),
                ValueKind::Delete | ValueKind::RangeDelete | ValueKind::BlobIndex => break None,
                ValueKind::Merge => {
                    ops.check_source(self.merge.merge_operator(), &self.saved_key)?;
                    let e = self.merge.entry().expect("on an operand");
                    ops.list.push(e.value.clone());
                }
            }
            self.merge.next()?;
        };
        self.saved_value = ops.finish(&self.saved_key, base)?.unwrap_or_default();
        self.valid = true;
        self.merged = true;
        Ok(())
    }

    /// Backward from the merge's position: the newest visible version of the last live key
    /// inside the bounds (merged with the operands below it, if it is one), copied into
    /// `saved_key`/`saved_value`; the merge ends on the last entry of the key before it (or
    /// off the start).
    fn find_prev(&mut self) -> Result<()> {
        self.valid = false;
        self.merged = false;
        // The key in `saved_key` once `have`; its versions arrive oldest first.
        let mut have = false;
        // Its newest version seen so far is a Put or an operand.
        let mut live = false;
        // The value below the collected operands (None: none, or deleted).
        let mut base: Option<Vec<u8>> = None;
        // Operands above `base`, oldest first, with their sources' recorded operator names.
        let mut ops: Vec<(Vec<u8>, Option<String>)> = Vec::new();
        while let Some(e) = self.merge.entry() {
            let ks = self.keyspace;
            if e.keyspace < ks || (e.keyspace == ks && below_lower(&self.lower, &e.user_key)) {
                break; // entries come in key order: nothing earlier is in range
            }
            let inside = e.keyspace == self.keyspace && !past_upper(&self.upper, &e.user_key);
            if inside && e.seq <= self.snapshot {
                if have && e.user_key != self.saved_key {
                    if live {
                        break; // the candidate's newest visible version was the last one seen
                    }
                    have = false;
                }
                if !have {
                    have = true;
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(&e.user_key);
                    base = None;
                    ops.clear();
                }
                match Self::effective_kind(&self.tombstones, e, self.snapshot, self.config.ttl) {
                    ValueKind::Put => {
                        base = Some(e.value.clone());
                        ops.clear();
                        live = true;
                    }
                    ValueKind::Delete | ValueKind::RangeDelete | ValueKind::BlobIndex => {
                        base = None;
                        ops.clear();
                        live = false;
                    }
                    ValueKind::Merge => {
                        let value = e.value.clone();
                        ops.push((value, self.merge.merge_operator().map(str::to_string)));
                        live = true;
                    }
                }
            }
            self.merge.prev()?;
        }
        if !live {
            return Ok(());
        }
        self.saved_value = if ops.is_empty() {
            match (base, self.config.ttl) {
                (Some(b), Some(_)) => crate::write_time::strip(b)?,
                (b, _) => b.unwrap_or_default(),
            }
        } else {
            let mut merging = Operands::with_ttl(self.config.merge_op.as_ref(), self.config.ttl);
            for (value, recorded) in ops.into_iter().rev() {
                merging.check_source(recorded.as_deref(), &self.saved_key)?;
                merging.list.push(value); // newest first
            }
            merging.finish(&self.saved_key, base)?.unwrap_or_default()
        };
        self.valid = true;
        Ok(())
    }

    /// Fails with [`crate::Error::Closed`] (leaving the cursor on no entry) once the database is
    /// closing.
    fn check_open(&mut self) -> Result<()> {
        let r = self.config.life.check_open();
        self.check(r)
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
