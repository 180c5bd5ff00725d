//! [`Version`]: an immutable snapshot of which SST files make up each level.
//!
//! A version is never modified; a flush or compaction builds a new one and swaps it in under a
//! short lock (`Arc<Version>`), so readers holding the old one keep a consistent view and the
//! files it names stay on disk until the last reader drops it (whether a file is open is the
//! table cache's business: [`TableFile::table`] opens it on demand).
//!
//! Invariants: level 0 files are ordered newest first and may overlap; every deeper level is
//! sorted by smallest `(keyspace, user key)` and its files' key ranges are disjoint. A file
//! holds one keyspace.

mod brief_index;
mod probe_entry;

use crate::error::{Error, Result};
use crate::filter::FilterKind;
use crate::ikey::key_prefix;
use crate::manifest::FileMeta;
use crate::sst::Table;
use crate::table_cache::{Slot, TableCache};
use brief_index::BriefIndex;
pub(crate) use probe_entry::ProbeEntry;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use crate::limits::NUM_LEVELS;

/// Checks that a replayed manifest's file set (`levels[l]`: the files of level `l`, by number)
/// is one a [`Version`] can serve, before any of it is used: no file on a level at or beyond
/// [`NUM_LEVELS`] (the manifest format allows 16; a table there would be unreadable, and the
/// cleanup at open would delete it as an orphan), and the files of each sorted level (L1+)
/// have disjoint `(keyspace, user key)` ranges (a level search finds at most one candidate
/// file, so an overlap hides keys). A violation is corruption of `manifest`.
pub fn check_recovered_levels(levels: &[BTreeMap<u64, FileMeta>], manifest: &Path) -> Result<()> {
    let corrupt = |what: String| {
        Err(Error::Corruption { file: Some(manifest.to_path_buf()), offset: None, what })
    };
    for (level, files) in levels.iter().enumerate() {
        if level >= NUM_LEVELS {
            if let Some(meta) = files.values().next() {
                return corrupt(format!(
                    "table {} is at level {level}, but this build has levels 0..={} only \
                     ({} tables at that level)",
                    crate::filename::sst_name(meta.number),
                    NUM_LEVELS - 1,
                    files.len()
                ));
            }
            continue;
        }
        if level == 0 {
            continue;
        }
        let mut sorted: Vec<&FileMeta> = files.values().collect();
        sorted.sort_by(|a, b| a.smallest().cmp(&b.smallest()));
        for pair in sorted.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.largest() >= b.smallest() {
                return corrupt(format!(
                    "tables {} and {} of level {level} overlap (keyspace {} keys \"{}\"..=\"{}\" and \
                     keyspace {} keys \"{}\"..=\"{}\")",
                    crate::filename::sst_name(a.number),
                    crate::filename::sst_name(b.number),
                    a.keyspace,
                    a.smallest_key.escape_ascii(),
                    a.largest_key.escape_ascii(),
                    b.keyspace,
                    b.smallest_key.escape_ascii(),
                    b.largest_key.escape_ascii(),
                ));
            }
        }
    }
    Ok(())
}

/// Facts about a table that statistics and compaction need without opening it, taken from the
/// table when it was first opened (written, or verified at `Db::open`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableInfo {
    /// Tombstones among the entries.
    pub deletions: u64,
    /// Distinct user keys.
    pub distinct_keys: u64,
    /// Kind of the filter block (`None`: no filter, or a kind this build cannot read).
    pub filter_kind: Option<FilterKind>,
    /// Bytes of memory the filter occupies while the table is open.
    pub filter_memory_bytes: u64,
    /// The FPR the filter was built for (`LevelStats::built_fpr`): fixed by its parameters
    /// where they fix it (`FilterView::parameter_fpr`), else estimated from its kind and bits
    /// per key (`FilterKind::fpr_at`); `None` without a usable filter.
    pub filter_fpr: Option<f64>,
    /// Merge operands among the entries.
    pub merges: u64,
    /// The recorded merge operator name of the table's operands (see
    /// [`crate::sst::TableProperties::merge_operator`]); `None` without operands.
    pub merge_operator: Option<String>,
    /// Range tombstones in the range-deletion block (scans open only tables that have some to
    /// collect them).
    pub range_deletions: u64,
    /// Oldest and newest write time of the entries of a TTL keyspace's table
    /// ([`crate::sst::TableProperties::write_times`]).
    pub write_times: Option<(u64, u64)>,
}

impl TableInfo {
    /// See [`TableInfo::filter_fpr`].
    fn filter_fpr(table: &Table) -> Option<f64> {
        let from_parameters = table.filter().and_then(|v| v.parameter_fpr());
        from_parameters.or_else(|| {
            let keys = table.properties().distinct_keys.max(1);
            let bits = table.filter_memory_bytes() as f64 * 8.0 / keys as f64;
            table.filter_kind().and_then(|k| k.fpr_at(bits, keys))
        })
    }

    /// The facts of an open table.
    pub fn of(table: &Table) -> TableInfo {
        let p = table.properties();
        TableInfo {
            deletions: p.deletions,
            distinct_keys: p.distinct_keys,
            filter_kind: table.filter_kind(),
            filter_memory_bytes: table.filter_memory_bytes() as u64,
            filter_fpr: Self::filter_fpr(table),
            merges: p.merges,
            merge_operator: p.merge_operator.clone(),
            range_deletions: p.range_deletions,
            write_times: p.write_times,
        }
    }
}

/// An SST file of a version: its manifest metadata, and the table cache that opens it.
pub struct TableFile {
    /// What the manifest records about the file.
    pub meta: FileMeta,
    /// Table facts kept while the file is closed.
    pub info: TableInfo,
    tables: Arc<TableCache>,
    /// This file's place in the table cache (its open table, if any).
    slot: Arc<Slot>,
    /// `(keyspace, key_prefix(largest user key))` (also in [`Version`]'s per-level arrays):
    /// a level's binary search decides most steps on it instead of following
    /// `meta.largest_key` to its heap bytes.
    largest_brief: Brief,
    /// The same of the smallest user key, for the search's last check.
    smallest_brief: Brief,
}

/// `(keyspace, key_prefix(user key))` packed as `keyspace << 64 | prefix`: ordered as the keys
/// it abbreviates, weakly (`key_prefix` in src/ikey.rs): a smaller or larger brief decides
/// a comparison, an equal one does not.
type Brief = u128;

/// Below 2^96: a keyspace over an 8-byte prefix ([`below`] relies on it).
fn brief(keyspace: u32, user_key: &[u8]) -> Brief {
    ((keyspace as u128) << 64) | key_prefix(user_key) as u128
}

/// The first of a level's files (their largest keys' briefs `largest_briefs`, sorted) whose
/// largest key is `>=` the key briefed `target`; `largest_below(i)` compares file `i`'s
/// largest key with the key in full, and is called only on equal briefs, by a binary search
/// over their run (keys like `user0000…` can give every file of a level the same brief).
#[inline]
fn first_ending_at_or_after(
    largest_briefs: &[Brief],
    target: Brief,
    largest_below: impl Fn(usize) -> bool,
) -> usize {
    let lo = first_at_or_after(largest_briefs, target);
    first_ending_at_or_after_from(largest_briefs, lo, target, largest_below)
}

/// [`first_ending_at_or_after`] over a level's largest briefs, counting those below `target`
/// with the level's search tree.
#[inline]
fn first_ending_in(
    index: &BriefIndex,
    target: Brief,
    largest_below: impl Fn(usize) -> bool,
) -> usize {
    first_ending_at_or_after_from(
        index.briefs(),
        index.first_at_or_after(target),
        target,
        largest_below,
    )
}

/// [`first_ending_at_or_after`] given `lo`, the count of `largest_briefs` below `target`.
#[inline]
fn first_ending_at_or_after_from(
    largest_briefs: &[Brief],
    lo: usize,
    target: Brief,
    largest_below: impl Fn(usize) -> bool,
) -> usize {
    if largest_briefs.get(lo) != Some(&target) {
        return lo;
    }
    let hi = lo + largest_briefs[lo..].partition_point(|&b| b == target);
    let (mut left, mut right) = (lo, hi);
    while left < right {
        let mid = left + (right - left) / 2;
        if largest_below(mid) {
            left = mid + 1;
        } else {
            right = mid;
        }
    }
    left
}

/// `briefs.partition_point(|&b| b < target)` (`briefs` sorted) without a branch per step: a
/// search over a level's files goes left or right at random, and the branchy search (std's,
/// on u128 keys) mispredicted about half its steps, most of the level search's time in a 10M
/// readmissing profile.
#[inline]
fn first_at_or_after(briefs: &[Brief], target: Brief) -> usize {
    let (mut base, mut size) = (0, briefs.len());
    if size == 0 {
        return 0;
    }
    // Invariant: the answer lies in [base, base + size].
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        // `briefs[mid] < target` turned into a mask.
        base += half & below(briefs[mid], target).wrapping_neg();
        size -= half;
    }
    base + usize::from(briefs[base] < target)
}

/// 1 if `brief < target`, else 0, without a branch: the sign of their difference, which cannot
/// wrap because briefs are below 2^96. (LLVM compiled `if`, `select_unpredictable` and a mask
/// of the comparison itself into a branch, which mispredicts half the time in a level search.)
#[inline(always)]
fn below(brief: Brief, target: Brief) -> usize {
    (brief.wrapping_sub(target) >> 127) as usize
}

/// Whether a file's smallest key (briefed `smallest`) is `<=` the key briefed `target`;
/// `smallest_at_or_before` compares in full, called only on equal briefs.
#[inline]
fn at_or_before(
    smallest: Brief,
    target: Brief,
    smallest_at_or_before: impl FnOnce() -> bool,
) -> bool {
    match smallest.cmp(&target) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => smallest_at_or_before(),
    }
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableFile").field("meta", &self.meta).field("info", &self.info).finish()
    }
}

impl TableFile {
    /// The file described by `meta`, whose open table `table` gives its [`TableInfo`]; later
    /// lookups go through `tables`.
    pub fn new(meta: FileMeta, table: &Table, tables: Arc<TableCache>) -> TableFile {
        let slot = tables.slot(meta.number);
        let largest_brief = brief(meta.keyspace, &meta.largest_key);
        let smallest_brief = brief(meta.keyspace, &meta.smallest_key);
        TableFile { meta, info: TableInfo::of(table), tables, slot, largest_brief, smallest_brief }
    }

    /// The open table, from the table cache or reopened (an I/O or corruption error if the
    /// file cannot be read). Holding this `TableFile` (through a version) keeps the file on
    /// disk, so the reopen never races its deletion.
    pub fn table(&self) -> Result<Arc<Table>> {
        self.tables.table(&self.slot, self.meta.number)
    }

    /// Calls `f` with the open table, borrowed: the point-lookup path, which then takes no
    /// lock and writes no reference count when the table is open (src/table_cache.rs).
    pub fn with_table<R>(&self, f: impl FnOnce(&Table) -> R) -> Result<R> {
        self.tables.with_table(&self.slot, self.meta.number, f)
    }

    /// [`TableFile::with_table`] inside a point lookup's read section, if any
    /// ([`TableCache::with_table_in`]).
    #[inline]
    pub(crate) fn with_table_in<R>(
        &self,
        section: Option<&crate::read_section::Section<'_>>,
        f: impl FnOnce(&Table) -> R,
    ) -> Result<R> {
        self.tables.with_table_in(section, &self.slot, self.meta.number, f)
    }

    /// Starts loading the filter lines a probe of `key_hash` reads, if the table is open and
    /// holds its filter itself ([`Table::prefetch_filter`]); otherwise nothing.
    #[inline]
    pub fn prefetch_filter(&self, key_hash: u64) {
        // From the slot's probe hint if it has one: the filter's lines start loading without
        // waiting for the loads of the table and its filter (at 50M keys a missing-key lookup
        // is a chain of dependent loads from the level search to the filter's lines).
        if !self.slot.prefetch_filter(key_hash) {
            TableCache::peek(&self.slot, |t| t.prefetch_filter(key_hash));
        }
    }

    /// The probe hint of the file's open table, if any (what a level's probe entry copies).
    #[inline]
    pub(crate) fn probe_hint(&self) -> Option<crate::filter::ProbeHint> {
        self.slot.probe_hint()
    }

    /// Starts loading the line of the file's prefix filter that a probe of `prefix_hash`
    /// reads, if the table is open and has one; otherwise nothing. A hint only.
    #[inline]
    pub(crate) fn prefetch_prefix_filter(&self, prefix_hash: u64) {
        TableCache::peek(&self.slot, |t| t.scan_filters().prefetch_prefix(prefix_hash));
    }

    /// Whether `user_key` of `keyspace` lies inside the file's key range.
    pub fn may_contain_key(&self, keyspace: u32, user_key: &[u8]) -> bool {
        let key = (keyspace, user_key);
        self.meta.smallest() <= key && key <= self.meta.largest()
    }

    /// Whether the file's key range intersects the user keys of `keyspace` within `lower` and
    /// `upper` (an excluded lower bound is taken as included: a superset).
    pub fn overlaps(&self, keyspace: u32, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> bool {
        self.ends_at_or_after(keyspace, lower) && self.starts_at_or_before(keyspace, upper)
    }

    /// Whether the file's largest key is at or after `lower` of `keyspace`. In a sorted level
    /// this is false for a prefix of the files, then true (`partition_point`).
    pub fn ends_at_or_after(&self, keyspace: u32, lower: Bound<&[u8]>) -> bool {
        match lower {
            Bound::Included(s) | Bound::Excluded(s) => self.meta.largest() >= (keyspace, s),
            Bound::Unbounded => self.meta.keyspace >= keyspace,
        }
    }

    /// Whether the file's smallest key is within `upper` of `keyspace`. In a sorted level this
    /// is true for a prefix of the files, then false.
    pub fn starts_at_or_before(&self, keyspace: u32, upper: Bound<&[u8]>) -> bool {
        match upper {
            Bound::Excluded(e) => self.meta.smallest() < (keyspace, e),
            Bound::Included(i) => self.meta.smallest() <= (keyspace, i),
            Bound::Unbounded => self.meta.keyspace <= keyspace,
        }
    }
}

/// `b` with its key borrowed (the form [`TableFile::overlaps`] and
/// [`Version::overlapping_in_level`] take).
pub(crate) fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// `b` with its key copied (the form a cursor keeps).
pub(crate) fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    b.map(<[u8]>::to_vec)
}

/// The files of every level at one point in time.
///
/// Cache-line aligned, so no other heap object (nor a neighbouring allocation's malloc
/// header) shares a line with the fields every lookup reads: a version on a line another
/// thread writes made two-thread lookups slower by a quarter in some processes, depending on
/// where the heap put it (docs/results/2026-11-29-50m-lz4/README.md#probe-entries).
#[derive(Clone, Default)]
#[repr(align(64))]
pub struct Version {
    /// `levels[0]` newest first; deeper levels sorted by smallest key, disjoint. Private, so
    /// that every change goes through `reindex` (read it with [`Version::levels`]).
    levels: Vec<Vec<Arc<TableFile>>>,
    /// `largest_brief` of every file of `levels[i]`, in the same order, with a search tree
    /// over them (src/version/brief_index.rs): the level search runs over these contiguous
    /// arrays, not over the files (one pointer chase per step, most of the search's time in a
    /// 10M-key readmissing profile). Rebuilt with the level (`reindex`).
    largest_briefs: Vec<BriefIndex>,
    /// Per file of `levels[i]`, in the same order: its smallest key's brief and a copy of its
    /// filter's probe hint (src/version/probe_entry.rs). Rebuilt with the level; shared by the
    /// versions that share the level, so a hint a lookup learned outlives other levels' edits.
    probe_entries: Vec<Arc<[ProbeEntry]>>,
    /// The files of `levels[i]` that hold range tombstones, in level order (rebuilt with the
    /// level): a scan collects tombstones from these without visiting every file.
    range_deletion_files: Vec<Vec<Arc<TableFile>>>,
    /// The live blob files (design.md#key-value-separation). A blob file leaves the set when
    /// the manifest edit that makes all its values garbage is installed; it is deleted once no
    /// version holding it is left (the engine's obsolete list watches the handle's count), so a
    /// reader of an older version still finds every value its tables refer to.
    blobs: BTreeMap<u64, Arc<BlobHandle>>,
}

/// A live blob file, shared by every version that holds it.
#[derive(Debug)]
pub struct BlobHandle {
    /// Its file number.
    pub number: u64,
}

impl Version {
    /// A version of `levels` in any order: L0 is sorted newest first (by largest sequence
    /// number, then file number), deeper levels by smallest key.
    pub fn from_levels(mut levels: Vec<Vec<Arc<TableFile>>>) -> Version {
        levels.resize(levels.len().max(NUM_LEVELS), Vec::new());
        // Newest first by sequence number, then file number: an ingested file's number may be
        // below that of the flush its ingestion forced (numbers are taken before the flush),
        // while its sequence number is above every entry of that flush.
        levels[0].sort_by_key(|t| std::cmp::Reverse((t.meta.largest_seq, t.meta.number)));
        for files in levels.iter_mut().skip(1) {
            files.sort_by(|a, b| a.meta.smallest().cmp(&b.meta.smallest()));
        }
        let mut v = Version {
            levels,
            largest_briefs: Vec::new(),
            probe_entries: Vec::new(),
            range_deletion_files: Vec::new(),
            blobs: BTreeMap::new(),
        };
        for level in 0..v.levels.len() {
            v.reindex(level);
        }
        v
    }

    /// The files of every level: `levels()[0]` newest first, deeper levels sorted by smallest
    /// key and disjoint.
    #[inline]
    pub fn levels(&self) -> &[Vec<Arc<TableFile>>] {
        &self.levels
    }

    /// The file of sorted level `level >= 1` whose range may hold `user_key` of `keyspace`, by
    /// binary search (levels are sorted by `(keyspace, user key)`).
    pub fn find_in_level(
        &self,
        level: usize,
        keyspace: u32,
        user_key: &[u8],
    ) -> Option<&Arc<TableFile>> {
        self.find_in_level_entry(level, keyspace, user_key).map(|(file, _)| file)
    }

    /// [`Version::find_in_level`], with the file's probe entry (its filter's probe hint, for a
    /// prefetch before the file itself is loaded). The search reads only the level's arrays
    /// unless briefs tie (module documentation of src/version/probe_entry.rs).
    pub(crate) fn find_in_level_entry(
        &self,
        level: usize,
        keyspace: u32,
        user_key: &[u8],
    ) -> Option<(&Arc<TableFile>, &ProbeEntry)> {
        debug_assert!(level > 0, "L0 is not a sorted level");
        let key = (keyspace, user_key);
        let target = brief(keyspace, user_key);
        let files = &self.levels[level];
        let entries = &self.probe_entries[level];
        // A key briefed outside the level's span is in none of its files (briefs are monotone
        // in the key): an empty level, or one of the disjoint levels a compaction to one run
        // leaves (at 100M keys, L3 and L4 side by side), costs two compares, not a search.
        let (first, last) = (entries.first()?, self.largest_briefs[level].briefs().last()?);
        if target < first.smallest_brief || target > *last {
            return None;
        }
        // Briefs order keys weakly: files whose largest brief is smaller end before the key;
        // among the (rare) files whose largest brief equals the key's, the key bytes decide.
        // (In a 10M-key readmissing profile this search was a third of the time, mostly
        // pointer chasing to the files and their keys' heap bytes, and memcmp.)
        let i =
            first_ending_in(&self.largest_briefs[level], target, |i| files[i].meta.largest() < key);
        let entry = entries.get(i)?;
        at_or_before(entry.smallest_brief, target, || files[i].meta.smallest() <= key)
            .then(|| (&files[i], entry))
    }

    /// The files of sorted level `level >= 1` that overlap the user keys of `keyspace` within
    /// `lower..upper` (as [`TableFile::overlaps`]), consecutive in a sorted level: found on the
    /// briefs as in [`Version::find_in_level`] (a search over the files compared heap keys
    /// with memcmp: a third of an absent-prefix scan's time in a profile).
    pub fn overlapping_in_level(
        &self,
        level: usize,
        keyspace: u32,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
    ) -> std::ops::Range<usize> {
        debug_assert!(level > 0, "L0 is not a sorted level");
        let files = &self.levels[level];
        if files.is_empty() {
            return 0..0;
        }
        let index = &self.largest_briefs[level];
        let briefs = index.briefs();
        let first = match lower {
            Bound::Included(l) | Bound::Excluded(l) => {
                let full = (keyspace, l);
                first_ending_in(index, brief(keyspace, l), |i| files[i].meta.largest() < full)
            }
            Bound::Unbounded => briefs.partition_point(|&b| b < brief(keyspace, &[])),
        };
        let end = match upper {
            // Files are disjoint: those before the first file ending at or after `u` lie
            // within the bound, those after it start beyond `u`; it decides on its own start.
            // A short range ends in `first`'s file or soon after: galloping from `first`
            // finds it in a step or two where a binary search over the level takes log2(files)
            // hard-to-predict steps (a fifth of an absent-prefix scan in a profile). A file
            // whose brief is greater ends after `u` in full, so the search stops at it.
            Bound::Included(u) | Bound::Excluded(u) => {
                let target = brief(keyspace, u);
                let rest = &briefs[first..];
                let mut span = 1;
                while span < rest.len() && rest[span - 1] <= target {
                    span *= 2;
                }
                let rest = &rest[..span.min(rest.len())];
                let full = (keyspace, u);
                let j = first
                    + first_ending_at_or_after(rest, target, |i| {
                        files[first + i].meta.largest() < full
                    });
                let starts_within = files.get(j).is_some_and(|f| {
                    at_or_before(f.smallest_brief, target, || {
                        f.starts_at_or_before(keyspace, upper)
                    })
                });
                j + usize::from(starts_within)
            }
            Bound::Unbounded => briefs.partition_point(|&b| (b >> 64) as u32 <= keyspace),
        };
        first..end.max(first)
    }

    /// The files of each level that hold range tombstones (`levels()` order within a level).
    pub fn range_deletion_files(&self) -> impl Iterator<Item = &Arc<TableFile>> {
        self.range_deletion_files.iter().flatten()
    }

    /// Rebuilds `largest_briefs[level]` and `range_deletion_files[level]` from `levels[level]`.
    fn reindex(&mut self, level: usize) {
        if self.largest_briefs.len() < self.levels.len() {
            self.largest_briefs.resize(self.levels.len(), BriefIndex::default());
            self.probe_entries.resize(self.levels.len(), Arc::from([]));
            self.range_deletion_files.resize(self.levels.len(), Vec::new());
        }
        let files = &self.levels[level];
        // L0's files overlap and are kept newest first: it is never searched by brief.
        self.largest_briefs[level] = match level {
            0 => BriefIndex::default(),
            _ => BriefIndex::new(files.iter().map(|f| f.largest_brief).collect()),
        };
        self.probe_entries[level] =
            files.iter().map(|f| ProbeEntry::new(f.smallest_brief, f.slot.probe_hint())).collect();
        self.range_deletion_files[level] =
            files.iter().filter(|f| f.info.range_deletions > 0).cloned().collect();
    }

    /// A new version with `file` added to `level` at its place in the level's order (the
    /// table cache learns the file's level: L0 tables may pin their index and filter).
    pub fn with_file(&self, level: usize, file: Arc<TableFile>) -> Version {
        file.tables.note_level(file.meta.number, level);
        let mut v = self.clone();
        if level == 0 {
            v.levels[0].insert(0, file);
        } else {
            let files = &mut v.levels[level];
            let i = files.partition_point(|f| f.meta.smallest() < file.meta.smallest());
            files.insert(i, file);
        }
        v.reindex(level);
        v
    }

    /// A new version without the files `deleted` ((level, number) pairs) and with `added` at
    /// their levels (one compaction's edit, applied as a whole).
    pub fn apply(&self, deleted: &[(usize, u64)], added: &[(usize, Arc<TableFile>)]) -> Version {
        let mut v = self.clone();
        for &(level, number) in deleted {
            v.levels[level].retain(|f| f.meta.number != number);
            v.reindex(level);
        }
        for (level, file) in added {
            v = v.with_file(*level, file.clone());
        }
        v
    }

    /// The live blob files, by number.
    pub fn blobs(&self) -> &BTreeMap<u64, Arc<BlobHandle>> {
        &self.blobs
    }

    /// This version with the blob files of `live` (the manifest's set after an edit): the
    /// handles of files still live are kept, new ones made; the handles of files that left the
    /// set are appended to `gone`.
    pub fn with_blobs(
        mut self,
        live: impl IntoIterator<Item = u64>,
        gone: &mut Vec<Arc<BlobHandle>>,
    ) -> Version {
        let mut old = std::mem::take(&mut self.blobs);
        for number in live {
            let h = old.remove(&number).unwrap_or_else(|| Arc::new(BlobHandle { number }));
            self.blobs.insert(number, h);
        }
        gone.extend(old.into_values());
        self
    }

    /// The file with `number` at `level`, if present.
    pub fn file(&self, level: usize, number: u64) -> Option<&Arc<TableFile>> {
        self.levels[level].iter().find(|f| f.meta.number == number)
    }
}

#[cfg(test)]
mod level_search_tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// `(keyspace, user key)`.
    type Key = (u32, Vec<u8>);

    /// A random user key: short or long, often sharing an 8-byte prefix with others.
    fn key(rng: &mut SplitMix64) -> Vec<u8> {
        let mut k = b"prefix0".to_vec();
        k.push(b'0' + rng.below(3) as u8);
        k.truncate(rng.below(10) as usize);
        for _ in 0..rng.below(3) {
            k.push(rng.below(4) as u8);
        }
        k
    }

    #[test]
    fn the_brief_search_finds_the_file_a_full_key_search_finds() {
        let mut rng = SplitMix64::new(23);
        for round in 0..300 {
            // Disjoint files over sorted distinct (keyspace, key) pairs: each file takes a run.
            let mut keys: Vec<(u32, Vec<u8>)> =
                (0..40).map(|_| (rng.below(2) as u32, key(&mut rng))).collect();
            keys.sort();
            keys.dedup();
            let mut files: Vec<(Key, Key)> = Vec::new();
            let mut at = 0;
            while at < keys.len() {
                let len = 1 + rng.below(4) as usize;
                let end = (at + len).min(keys.len()) - 1;
                // Files never span keyspaces.
                let end = (at..=end).take_while(|&j| keys[j].0 == keys[at].0).last().unwrap();
                files.push((keys[at].clone(), keys[end].clone()));
                at = end + 1 + rng.below(2) as usize; // sometimes a gap
            }
            let largest: Vec<Brief> = files.iter().map(|(_, (ks, k))| brief(*ks, k)).collect();
            for _ in 0..50 {
                let (ks, k) = (rng.below(2) as u32, key(&mut rng));
                let target = brief(ks, &k);
                let probe = (ks, k.as_slice());
                let want = files
                    .iter()
                    .position(|(_, (lks, lk))| (*lks, lk.as_slice()) >= probe)
                    .filter(|&i| (files[i].0 .0, files[i].0 .1.as_slice()) <= probe);
                let i = first_ending_at_or_after(&largest, target, |i| {
                    (files[i].1 .0, files[i].1 .1.as_slice()) < probe
                });
                let got = (i < files.len()).then_some(i).filter(|&i| {
                    let (sks, sk) = &files[i].0;
                    at_or_before(brief(*sks, sk), target, || (*sks, sk.as_slice()) <= probe)
                });
                assert_eq!(got, want, "round {round}: {probe:?} in {files:?}");
            }
        }
    }

    #[test]
    fn branchless_search_agrees_with_partition_point_at_every_length_and_target() {
        let mut rng = SplitMix64::new(12);
        for len in 0..70 {
            // Few distinct values, so runs of equal briefs occur at every length.
            let mut briefs: Vec<Brief> = (0..len).map(|_| rng.below(20) as Brief * 3).collect();
            briefs.sort();
            for target in 0..64 {
                let want = briefs.partition_point(|&b| b < target);
                assert_eq!(first_at_or_after(&briefs, target), want, "{target} in {briefs:?}");
            }
        }
        // Briefs at the ends of their range (the comparison is the sign of a difference).
        let ends =
            [brief(0, &[]), brief(0, &[0xff; 8]), brief(u32::MAX, &[]), brief(!0, &[0xff; 8])];
        for len in 0..=4 {
            for target in ends.iter().flat_map(|&e| [e.saturating_sub(1), e, e + 1]) {
                let briefs = &ends[..len];
                let want = briefs.partition_point(|&b| b < target);
                assert_eq!(first_at_or_after(briefs, target), want, "{target:#x} in {briefs:x?}");
            }
        }
    }

    #[test]
    fn files_sharing_one_brief_are_binary_searched_by_full_key() {
        // 1024 files whose keys all share their first 8 bytes: one brief for the whole level.
        let largest: Vec<Vec<u8>> = (0..1024u32)
            .map(|i| [b"user0000".as_slice(), &(2 * i).to_be_bytes()].concat())
            .collect();
        let briefs: Vec<Brief> = largest.iter().map(|k| brief(0, k)).collect();
        assert!(briefs.windows(2).all(|w| w[0] == w[1]));
        for probe in [0u32, 1, 777, 2047, 2048] {
            let key = [b"user0000".as_slice(), &probe.to_be_bytes()].concat();
            let compares = std::cell::Cell::new(0);
            let i = first_ending_at_or_after(&briefs, brief(0, &key), |i| {
                compares.set(compares.get() + 1);
                largest[i] < key
            });
            assert_eq!(i, largest.partition_point(|k| *k < key), "probe {probe}");
            assert!(compares.get() <= 11, "{} full-key compares for 1024 files", compares.get());
        }
    }
}
