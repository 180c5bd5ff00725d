//! [`TableCache`]: the open SSTs of a database, at most `Options::max_open_files` of them, in
//! least-recently-used order (design.md, "Table cache").
//!
//! A version names its files by metadata only ([`crate::version::TableFile`]: key range, size,
//! entries and the few table facts statistics need); a get, scan or compaction asks this cache
//! for the open [`Table`] when it reaches a file, and a miss reopens the file (footer,
//! properties, index and filter read and verified, as at `Db::open`). Values are `Arc<Table>`:
//! eviction only drops the cache's reference, so a reader that still holds a table keeps its
//! descriptor, mapping, index and filter until it lets go.
//!
//! Deletion invariant: a file is looked up only through a `TableFile` of a version, and a file
//! is deleted only once no version names it (`DbInner::obsolete`, src/db/compact.rs), so a
//! lookup never races the unlink of its file; the deleter then erases the file's entry here
//! ([`TableCache::evict`]), after which nothing can bring it back (no `TableFile` is left to
//! ask). A reader that opened the table before the unlink finishes on its handle (an unlinked
//! file stays readable through an open descriptor or a mapping).
//!
//! Thread safety: entries live in a sharded [`Cache`] (one `parking_lot::Mutex` per shard,
//! held for the map lookup and LRU splice only, never across I/O), so concurrent lookups of
//! different files rarely meet on a lock. Two threads missing on the same file may both open
//! it; the second insert replaces the first, and both handles stay valid.

use crate::cache::{BlockCache, Cache, ENTRY_OVERHEAD};
use crate::error::{Error, Result};
use crate::filename;
use crate::options::MIN_MAX_OPEN_FILES;
use crate::sst::Table;
use crate::storage::Storage;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Most shards of a table cache; a smaller cache gets fewer so that each shard holds at least
/// [`MIN_MAX_OPEN_FILES`] tables (a shard evicts on its own, so tiny shards would evict while
/// others have room).
const MAX_SHARDS: usize = 16;

/// The open tables of one database. See the module documentation.
pub struct TableCache {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    block_cache: Option<Arc<BlockCache>>,
    /// Keyed `(file number, 0)`; each table charged 1 (+ the cache's entry overhead), so the
    /// byte capacity counts tables.
    tables: Cache<Table>,
    /// Tables the cache may hold; `None` = unlimited (`max_open_files = -1`).
    limit: Option<usize>,
    /// Every `Table::open` made here (lookup misses and new tables).
    opens: AtomicU64,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("dir", &self.dir)
            .field("limit", &self.limit)
            .field("open_tables", &self.open_tables())
            .finish()
    }
}

impl TableCache {
    /// A cache of the tables in `dir` holding at most `max_open_files` of them (`-1` =
    /// unlimited). Other values below [`MIN_MAX_OPEN_FILES`] are an `InvalidArgument` error.
    /// Opened tables read data blocks through `block_cache`.
    pub fn new(
        storage: Arc<dyn Storage>,
        dir: PathBuf,
        block_cache: Option<Arc<BlockCache>>,
        max_open_files: i32,
    ) -> Result<TableCache> {
        let limit = match max_open_files {
            -1 => None,
            n if n >= MIN_MAX_OPEN_FILES => Some(n as usize),
            n => {
                return Err(Error::invalid(format!(
                    "Options::max_open_files = {n} is out of range: -1 (unlimited) or \
                     {MIN_MAX_OPEN_FILES}..={}",
                    i32::MAX
                )))
            }
        };
        let per_entry = 1 + ENTRY_OVERHEAD;
        let tables = match limit {
            None => Cache::with_shards(usize::MAX, MAX_SHARDS),
            Some(n) => {
                // Every shard holds exactly `n / shards` tables, so the total never exceeds n.
                let shards = (n / MIN_MAX_OPEN_FILES as usize).clamp(1, MAX_SHARDS);
                Cache::with_shards(shards * (n / shards) * per_entry, shards)
            }
        };
        Ok(TableCache { storage, dir, block_cache, tables, limit, opens: AtomicU64::new(0) })
    }

    /// The open table of file `number`: from the cache (marked most recently used), or opened
    /// and inserted on a miss, evicting the least recently used table of its shard if full.
    /// The caller must hold a `TableFile` naming the file (module documentation).
    pub fn get(&self, number: u64) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(number, 0) {
            return Ok(t);
        }
        self.open(number)
    }

    /// Opens file `number` (a table just written, or one verified at `Db::open`) and inserts it
    /// without counting a lookup.
    pub fn open(&self, number: u64) -> Result<Arc<Table>> {
        let path = self.dir.join(filename::sst_name(number));
        let file = self.storage.open_immutable(&path)?;
        let table = Arc::new(Table::open(file, number, self.block_cache.clone(), &path)?);
        self.opens.fetch_add(1, Ordering::Relaxed);
        let mut evicted = Vec::new();
        self.tables.insert_evicting(number, 0, Arc::clone(&table), 1, &mut evicted);
        drop(evicted); // closes the evicted files, outside the shard lock
        Ok(table)
    }

    /// Drops file `number`'s table from the cache (its file is being deleted). Readers still
    /// holding it keep it.
    pub fn evict(&self, number: u64) {
        self.tables.erase(number, 0);
    }

    /// Lookups that found their table open.
    pub fn hits(&self) -> u64 {
        self.tables.hits()
    }

    /// Lookups that had to open their table.
    pub fn misses(&self) -> u64 {
        self.tables.misses()
    }

    /// Every table open made by the cache: misses, plus new tables and the ones `Db::open`
    /// verifies.
    pub fn opens(&self) -> u64 {
        self.opens.load(Ordering::Relaxed)
    }

    /// Tables the cache holds open now (readers may hold a few evicted ones besides).
    pub fn open_tables(&self) -> usize {
        self.tables.len()
    }

    /// The most tables the cache holds (`None` = unlimited). May be a little below
    /// `max_open_files`: each shard holds an equal whole number of tables.
    pub fn limit(&self) -> Option<usize> {
        let per_entry = 1 + ENTRY_OVERHEAD;
        self.limit.map(|_| self.tables.capacity() / per_entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::{FilterBlockSource, TableBuilder, TableOptions};
    use crate::storage::MemStorage;
    use std::path::Path;

    fn write_tables(storage: &MemStorage, n: u64) {
        for number in 1..=n {
            let path = Path::new("/db").join(filename::sst_name(number));
            let file = storage.create(&path).unwrap();
            let mut b = TableBuilder::new(file, TableOptions::default()).unwrap();
            let key = crate::ikey::encode(&number.to_be_bytes(), 1, crate::ikey::ValueKind::Put);
            b.add(&key, b"v").unwrap();
            b.finish(FilterBlockSource::None).unwrap();
        }
    }

    fn cache(storage: &MemStorage, max_open_files: i32) -> Result<TableCache> {
        TableCache::new(Arc::new(storage.clone()), "/db".into(), None, max_open_files)
    }

    #[test]
    fn holds_at_most_max_open_files_and_reopens_on_a_miss() {
        let storage = MemStorage::new();
        storage.create_dir_all(Path::new("/db")).unwrap();
        write_tables(&storage, 100);
        let c = cache(&storage, 32).unwrap();
        assert_eq!(c.limit(), Some(32));
        for round in 0..3 {
            for n in 1..=100 {
                let t = c.get(n).unwrap();
                assert_eq!(t.file_number(), n);
                assert!(c.open_tables() <= 32, "round {round}: {} open", c.open_tables());
            }
        }
        assert_eq!(c.hits() + c.misses(), 300);
        assert!(c.misses() > 100, "a cycle over 100 files through 32 slots must miss");
        assert_eq!(c.opens(), c.misses());
        // A table used right now is a hit.
        let before = c.hits();
        c.get(100).unwrap();
        assert_eq!(c.hits(), before + 1);
    }

    #[test]
    fn an_evicted_table_stays_usable_by_its_holder() {
        let storage = MemStorage::new();
        storage.create_dir_all(Path::new("/db")).unwrap();
        write_tables(&storage, 40);
        let c = cache(&storage, 16).unwrap();
        let held = c.get(1).unwrap();
        c.evict(1);
        for n in 2..=40 {
            c.get(n).unwrap();
        }
        storage.remove(&Path::new("/db").join(filename::sst_name(1))).unwrap();
        let mut it = held.iter(false);
        it.seek_to_first().unwrap();
        assert!(it.valid());
        assert_eq!(crate::ikey::user_key(it.key()), 1u64.to_be_bytes());
        // Once evicted and deleted, a lookup reports the missing file instead of a stale table.
        assert!(c.get(1).is_err());
    }

    #[test]
    fn unlimited_keeps_every_table_and_small_limits_are_rejected() {
        let storage = MemStorage::new();
        storage.create_dir_all(Path::new("/db")).unwrap();
        write_tables(&storage, 50);
        let c = cache(&storage, -1).unwrap();
        assert_eq!(c.limit(), None);
        for n in 1..=50 {
            c.get(n).unwrap();
        }
        assert_eq!(c.open_tables(), 50);
        for bad in [0, -2, 1, 15, i32::MIN] {
            let e = cache(&storage, bad).unwrap_err().to_string();
            assert!(e.contains("max_open_files") && e.contains(&bad.to_string()), "{e}");
        }
        assert_eq!(cache(&storage, 16).unwrap().limit(), Some(16));
    }
}
