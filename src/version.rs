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

use crate::error::Result;
use crate::filter::FilterKind;
use crate::manifest::FileMeta;
use crate::sst::index::key_prefix;
use crate::sst::Table;
use crate::table_cache::{Slot, TableCache};
use std::sync::Arc;

/// Number of levels, L0..L6.
pub const NUM_LEVELS: usize = 7;

/// Facts about a table that statistics and compaction need without opening it, taken from the
/// table when it was first opened (written, or verified at `Db::open`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableInfo {
    /// Tombstones among the entries.
    pub deletions: u64,
    /// Distinct user keys.
    pub distinct_keys: u64,
    /// Kind of the filter block (`None`: no filter, or a kind this build cannot read).
    pub filter_kind: Option<FilterKind>,
    /// Bytes of memory the filter occupies while the table is open.
    pub filter_memory_bytes: u64,
    /// Merge operands among the entries.
    pub merges: u64,
    /// The recorded merge operator name of the table's operands (see
    /// [`crate::sst::TableProperties::merge_operator`]); `None` without operands.
    pub merge_operator: Option<String>,
    /// Range tombstones in the range-deletion block (scans open only tables that have some to
    /// collect them).
    pub range_deletions: u64,
}

impl TableInfo {
    /// The facts of an open table.
    pub fn of(table: &Table) -> TableInfo {
        let p = table.properties();
        TableInfo {
            deletions: p.deletions,
            distinct_keys: p.distinct_keys,
            filter_kind: table.filter_kind(),
            filter_memory_bytes: table.filter_memory_bytes() as u64,
            merges: p.merges,
            merge_operator: p.merge_operator.clone(),
            range_deletions: p.range_deletions,
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
    /// `(keyspace, key_prefix(largest user key))`, inline: a level's binary search decides
    /// most steps here instead of following `meta.largest_key` to its heap bytes.
    largest_brief: (u32, u64),
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
        let largest_brief = (meta.keyspace, key_prefix(&meta.largest_key));
        TableFile { meta, info: TableInfo::of(table), tables, slot, largest_brief }
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

    /// Starts loading the filter lines a probe of `key_hash` reads, if the table is open and
    /// holds its filter itself ([`Table::prefetch_filter`]); otherwise nothing.
    #[inline]
    pub fn prefetch_filter(&self, key_hash: u64) {
        TableCache::peek(&self.slot, |t| t.prefetch_filter(key_hash));
    }

    /// Whether `user_key` of `keyspace` lies inside the file's key range.
    pub fn may_contain_key(&self, keyspace: u32, user_key: &[u8]) -> bool {
        let key = (keyspace, user_key);
        self.meta.smallest() <= key && key <= self.meta.largest()
    }

    /// Whether the file's key range intersects the user keys `[start, end)` of `keyspace`
    /// (`None` = unbounded within the keyspace).
    pub fn overlaps(&self, keyspace: u32, start: Option<&[u8]>, end: Option<&[u8]>) -> bool {
        let after_start = match start {
            Some(s) => self.meta.largest() >= (keyspace, s),
            None => self.meta.keyspace >= keyspace,
        };
        let before_end = match end {
            Some(e) => self.meta.smallest() < (keyspace, e),
            None => self.meta.keyspace <= keyspace,
        };
        after_start && before_end
    }
}

/// The files of every level at one point in time.
#[derive(Clone, Default)]
pub struct Version {
    /// `levels[0]` newest first; deeper levels sorted by smallest key, disjoint.
    pub levels: Vec<Vec<Arc<TableFile>>>,
}

impl Version {
    /// A version with no files.
    pub fn empty() -> Version {
        Version { levels: vec![Vec::new(); NUM_LEVELS] }
    }

    /// The file of sorted level `level >= 1` whose range may hold `user_key` of `keyspace`, by
    /// binary search (levels are sorted by `(keyspace, user key)`).
    pub fn find_in_level(
        &self,
        level: usize,
        keyspace: u32,
        user_key: &[u8],
    ) -> Option<&Arc<TableFile>> {
        let key = (keyspace, user_key);
        let brief = (keyspace, key_prefix(user_key));
        let files = &self.levels[level];
        // Prefixes order keys weakly (`key_prefix` in src/sst/index.rs): a smaller or larger
        // brief decides the comparison; only equal briefs compare the key bytes. (In a 10M-key
        // readmissing profile this search was a third of the time, mostly the key bytes'
        // cache misses and memcmp.)
        let i = files.partition_point(|f| match f.largest_brief.cmp(&brief) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => f.meta.largest() < key,
        });
        files.get(i).filter(|f| f.meta.smallest() <= key)
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
        v
    }

    /// A new version without the files `deleted` ((level, number) pairs) and with `added` at
    /// their levels (one compaction's edit, applied as a whole).
    pub fn apply(&self, deleted: &[(usize, u64)], added: &[(usize, Arc<TableFile>)]) -> Version {
        let mut v = self.clone();
        for &(level, number) in deleted {
            v.levels[level].retain(|f| f.meta.number != number);
        }
        for (level, file) in added {
            v = v.with_file(*level, file.clone());
        }
        v
    }

    /// The file with `number` at `level`, if present.
    pub fn file(&self, level: usize, number: u64) -> Option<&Arc<TableFile>> {
        self.levels[level].iter().find(|f| f.meta.number == number)
    }
}
