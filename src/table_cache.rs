//! [`TableCache`]: the open SSTs of a database, at most `Options::max_open_files` of them
//! (design.md#table-cache).
//!
//! A version names its files by metadata only ([`crate::version::TableFile`]: key range, size,
//! entries and the few table facts statistics need); a get, scan or compaction asks for the open
//! [`Table`] when it reaches a file, and a miss reopens the file (footer, properties, index and
//! filter read and verified, as at `Db::open`). Eviction only drops the cache's reference, so a
//! reader that still holds a table keeps its descriptor, mapping, index and filter until it lets
//! go.
//!
//! Layout: every live file has one `Slot` (shared by the cache and the file's `TableFile`)
//! holding its open table, if any, in an `ArcSwapOption`, and a "referenced" bit. A hit is a
//! `load` of the slot (arc-swap's thread-local debt: no shared reference count is written), or
//! inside a point lookup's read section a plain read of the slot's published pointer
//! (src/read_section.rs: a table the slot gives up is retired, not dropped), plus a read of the
//! bit, written only when it is clear: a point lookup on a hot table writes no cache
//! line another core writes (design.md#concurrency). Replacement is CLOCK
//! (second chance), an approximation of LRU that needs no bookkeeping on hits: the open slots form
//! a ring; to make room, the hand clears set bits and evicts the first slot whose bit is clear.
//! Opens (misses) take one mutex for the ring and the slot map, never across I/O.
//!
//! Deletion invariant: a file is looked up only through a `TableFile` of a version, and a file
//! is deleted only once no version names it (`DbInner::obsolete`, src/db/compact.rs), so a
//! lookup never races the unlink of its file; the deleter then drops the file's slot here
//! ([`TableCache::evict`]), after which nothing can bring it back (no `TableFile` is left to
//! ask). A reader that opened the table before the unlink finishes on its handle (an unlinked
//! file stays readable through an open descriptor or a mapping).
//!
//! Index and filter blocks: a table is opened with the cache's [`MetaPolicy`]
//! (`cache_index_and_filter_blocks`), pinned when `pin_l0_filter_and_index_blocks_in_cache` is
//! set and its slot's level hint says level 0. Versions report each file's level as they add it
//! ([`TableCache::note_level`]); a change of hint that disagrees with the open table's pinning
//! closes the table, so its next use reopens it with the right residence.

use crate::error::{Error, Result};
use crate::filename;
use crate::filter::SharedProbeHint;
use crate::options::MIN_MAX_OPEN_FILES;
use crate::read_section::{Published, ReadSections, Section};
use crate::sst::BlockCache;
use crate::sst::{MetaPolicy, Table};
use crate::storage::Storage;
use crate::stripe::StripedCounter;
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// One file's place in the cache: its open table (if any) and its CLOCK bit.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    table: ArcSwapOption<Table>,
    /// The open table for point lookups inside a read section (src/read_section.rs): set after
    /// `table` gets a table, cleared before `table` gives it up, which then goes to
    /// [`ReadSections::retire`].
    published: Published<Table>,
    /// Set by a hit, cleared by the passing CLOCK hand (second chance).
    referenced: AtomicBool,
    /// The file is at level 0 (as last reported by a version): open it pinned when L0 pinning
    /// is on.
    level0: AtomicBool,
    /// Where a probe of the open table's filter reads (set when a table is installed, cleared
    /// when it is closed), so a lookup prefetches the filter's lines from the slot without
    /// first loading the table: see [`Slot::prefetch_filter`].
    hint: SharedProbeHint,
    /// The file's global sequence number if it was ingested (0: none), set before it is first
    /// opened ([`TableCache::set_global_seq`]) and applied at every open.
    global_seq: AtomicU64,
    /// An adopted file's keyspace ids, `stored << 32 | adopted` (0: none), set like
    /// `global_seq` ([`TableCache::set_adoption`]).
    adoption: AtomicU64,
}

impl Slot {
    /// Starts loading the filter lines a probe of `key_hash` reads, from the slot's probe hint;
    /// false when it has none (a closed table, or a filter kind without hints). A hint only.
    #[inline]
    pub(crate) fn prefetch_filter(&self, key_hash: u64) -> bool {
        self.hint.prefetch(key_hash)
    }

    /// The open table's probe hint, if any (what [`Slot::prefetch_filter`] uses).
    #[inline]
    pub(crate) fn probe_hint(&self) -> Option<crate::filter::ProbeHint> {
        self.hint.load()
    }

    /// Marks the slot recently used, writing the bit only when it is clear (a hot table's
    /// line is then only read by lookups).
    #[inline]
    fn touch(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }
}

/// The ring of open slots and the slot of every live file, under one mutex.
#[derive(Default)]
struct State {
    slots: HashMap<u64, Arc<Slot>>,
    /// Slots holding an open table, in CLOCK order.
    ring: Vec<Arc<Slot>>,
    hand: usize,
}

/// The open tables of one database. See the module documentation.
pub struct TableCache {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    block_cache: Option<Arc<BlockCache>>,
    /// Tables the cache may hold; `None` = unlimited (`max_open_files = -1`).
    limit: Option<usize>,
    state: Mutex<State>,
    /// Lookups that found their table open (striped: hits are the read path's hot case).
    hits: StripedCounter,
    /// Lookups that had to open their table.
    misses: AtomicU64,
    /// The point lookups' read sections: a table a slot gives up is retired through them.
    sections: ReadSections,
    /// Every `Table::open` made here (lookup misses and new tables).
    opens: AtomicU64,
    /// `Options::cache_index_and_filter_blocks`.
    cache_meta: bool,
    /// `Options::pin_l0_filter_and_index_blocks_in_cache`.
    pin_l0: bool,
    /// `Options::filters_on_huge_pages`.
    huge_page_filters: bool,
    /// The blob files of the same directory, through the same block cache: every table it
    /// opens follows its blob references there (design.md#key-value-separation).
    blobs: Arc<crate::sst::blob::BlobStore>,
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
    /// unlimited), and no more than half the process's soft descriptor limit now
    /// ([`descriptor_share`]). Other values below [`MIN_MAX_OPEN_FILES`] are an
    /// `InvalidArgument` error. Opened tables read data blocks through `block_cache`.
    pub fn new(
        storage: Arc<dyn Storage>,
        dir: PathBuf,
        block_cache: Option<Arc<BlockCache>>,
        max_open_files: i32,
    ) -> Result<TableCache> {
        let limit = match max_open_files {
            -1 => None,
            n if n >= MIN_MAX_OPEN_FILES => {
                let share = descriptor_share().unwrap_or(usize::MAX);
                Some((n as usize).min(share).max(MIN_MAX_OPEN_FILES as usize))
            }
            n => {
                return Err(Error::invalid(format!(
                    "Options::max_open_files = {n} is out of range: -1 (unlimited) or \
                     {MIN_MAX_OPEN_FILES}..={}",
                    i32::MAX
                )))
            }
        };
        let blobs = Arc::new(crate::sst::blob::BlobStore::new(
            storage.clone(),
            dir.clone(),
            block_cache.clone(),
        ));
        Ok(TableCache {
            blobs,
            storage,
            dir,
            block_cache,
            limit,
            state: Mutex::new(State::default()),
            hits: StripedCounter::new(),
            misses: AtomicU64::new(0),
            sections: ReadSections::new(),
            opens: AtomicU64::new(0),
            cache_meta: false,
            pin_l0: false,
            huge_page_filters: false,
        })
    }

    /// The blob files of the database's directory.
    pub(crate) fn blobs(&self) -> &Arc<crate::sst::blob::BlobStore> {
        &self.blobs
    }

    /// This cache with tables' index and filter blocks kept in the block cache
    /// (`cache_index_and_filter_blocks`), and those of level-0 tables pinned there (`pin_l0`).
    pub fn with_meta_policy(mut self, cache_index_and_filter_blocks: bool, pin_l0: bool) -> Self {
        self.cache_meta = cache_index_and_filter_blocks;
        self.pin_l0 = pin_l0 && cache_index_and_filter_blocks;
        self
    }

    /// This cache with the filters that tables hold put on huge pages
    /// (`Options::filters_on_huge_pages`).
    pub fn with_huge_page_filters(mut self, on: bool) -> Self {
        self.huge_page_filters = on;
        self
    }

    /// Records that file `number` is now at `level` (a version added it there). With L0
    /// pinning on, an open table whose pinning disagrees with its new level is closed, to be
    /// reopened with the right residence on its next use (readers holding it keep it).
    pub(crate) fn note_level(&self, number: u64, level: usize) {
        if !self.pin_l0 {
            return;
        }
        let l0 = level == 0;
        let dropped = {
            let mut st = self.state.lock();
            let slot = Arc::clone(st.slots.entry(number).or_default());
            if slot.level0.swap(l0, Ordering::Relaxed) == l0 {
                return;
            }
            match slot.table.load().as_deref() {
                Some(t) if t.meta_pinned() != l0 => {}
                _ => return,
            }
            if let Some(i) = st.ring.iter().position(|s| Arc::ptr_eq(s, &slot)) {
                st.ring.swap_remove(i);
            }
            slot.hint.set(None);
            slot.published.clear();
            slot.table.swap(None)
        };
        self.retire(dropped.into_iter().collect());
    }

    /// The slot of file `number` (created empty on first use). A `TableFile` keeps its own.
    pub(crate) fn slot(&self, number: u64) -> Arc<Slot> {
        self.state.lock().slots.entry(number).or_default().clone()
    }

    /// Calls `f` with file `number`'s open table (through its `slot`), opening the file on a
    /// miss. The hit path takes no lock and writes no shared counter or reference count.
    pub(crate) fn with_table<R>(
        &self,
        slot: &Arc<Slot>,
        number: u64,
        f: impl FnOnce(&Table) -> R,
    ) -> Result<R> {
        self.with_table_in(None, slot, number, f)
    }

    /// [`TableCache::with_table`] inside a read section, if `section`: a hit then reads the
    /// slot's published table with no locked instruction (src/read_section.rs).
    #[inline]
    pub(crate) fn with_table_in<R>(
        &self,
        section: Option<&Section<'_>>,
        slot: &Arc<Slot>,
        number: u64,
        f: impl FnOnce(&Table) -> R,
    ) -> Result<R> {
        if let Some(t) = section.and_then(|s| slot.published.get(s)) {
            slot.touch();
            self.hits.add(1);
            return Ok(f(t));
        }
        {
            let guard = slot.table.load();
            if let Some(t) = guard.as_deref() {
                slot.touch();
                self.hits.add(1);
                return Ok(f(t));
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let t = self.open_into(slot, number)?;
        Ok(f(&t))
    }

    /// Runs `f` on the slot's table if it is open, without counting a hit or touching the slot
    /// (for hints such as a filter prefetch, which must cost nothing when the table is closed).
    #[inline]
    pub(crate) fn peek(slot: &Slot, f: impl FnOnce(&Table)) {
        if let Some(t) = slot.table.load().as_deref() {
            f(t);
        }
    }

    /// File `number`'s open table as an owned handle (iterators and compaction, which keep it
    /// across many steps), opening the file on a miss.
    pub(crate) fn table(&self, slot: &Arc<Slot>, number: u64) -> Result<Arc<Table>> {
        if let Some(t) = slot.table.load_full() {
            slot.touch();
            self.hits.add(1);
            return Ok(t);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        self.open_into(slot, number)
    }

    #[cfg(test)]
    /// The open table of file `number`: from the cache, or opened on a miss. The caller must
    /// hold a `TableFile` naming the file (module documentation).
    pub fn get(&self, number: u64) -> Result<Arc<Table>> {
        let slot = self.slot(number);
        self.table(&slot, number)
    }

    /// Records that file `number` is an ingested table read at global sequence `seq` (the
    /// manifest's tag 9): every later open of it applies `seq`. Called before its first open.
    pub fn set_global_seq(&self, number: u64, seq: Option<u64>) {
        self.slot(number).global_seq.store(seq.unwrap_or(0), Ordering::Release);
    }

    /// Records that file `number` is an adopted table whose keys carry keyspace id `stored`
    /// and are read as `adopted` (the manifest's tag 12): every later open of it applies
    /// them. Called before its first open.
    pub fn set_adoption(&self, number: u64, ids: Option<(u32, u32)>) {
        let packed = ids.map_or(0, |(stored, adopted)| (stored as u64) << 32 | adopted as u64);
        self.slot(number).adoption.store(packed, Ordering::Release);
    }

    /// Opens file `number` (a table just written, or one verified at `Db::open`) and makes it
    /// the open table of its slot, without counting a lookup.
    pub fn open(&self, number: u64) -> Result<Arc<Table>> {
        let slot = self.slot(number);
        self.open_into(&slot, number)
    }

    /// Opens the file (outside any lock) and installs it in `slot`, unless another thread
    /// installed one meanwhile (then that one is returned and ours closed). Evicts by CLOCK if
    /// the cache is over its limit.
    fn open_into(&self, slot: &Arc<Slot>, number: u64) -> Result<Arc<Table>> {
        let path = self.dir.join(filename::sst_name(number));
        let file = self.storage.open_immutable(&path)?;
        let policy = MetaPolicy {
            cache_index_and_filter_blocks: self.cache_meta,
            pin: self.pin_l0 && slot.level0.load(Ordering::Relaxed),
            huge_page_filters: self.huge_page_filters,
        };
        let mut table = Table::open_with(file, number, self.block_cache.clone(), &path, policy)?;
        let g = slot.global_seq.load(Ordering::Acquire);
        table.set_global_seq((g > 0).then_some(g));
        let a = slot.adoption.load(Ordering::Acquire);
        if a != 0 {
            table.adopt_keyspace((a >> 32) as u32, a as u32)?;
        }
        table.set_blob_store(self.blobs.clone());
        let table = Arc::new(table);
        self.opens.fetch_add(1, Ordering::Relaxed);
        let mut evicted: Vec<Arc<Table>> = Vec::new();
        let result = {
            let mut st = self.state.lock();
            if let Some(existing) = slot.table.load_full() {
                existing
            } else {
                // Installed with a clear bit, as CLOCK inserts: a table earns its second chance
                // by a hit. (Set here, one eviction sweep could clear every bit, including a
                // hot table's, and then evict that table before any reader could set it again.)
                slot.table.store(Some(Arc::clone(&table)));
                slot.published.set(&table);
                slot.hint.set(table.probe_hint());
                slot.referenced.store(false, Ordering::Relaxed);
                st.ring.push(Arc::clone(slot));
                if let Some(limit) = self.limit {
                    evict_over(&mut st, limit, &mut evicted);
                }
                table
            }
        };
        self.retire(evicted); // closes the evicted files once no section reads them
        Ok(result)
    }

    /// Forgets file `number` (its file is being deleted): its table leaves the cache and its
    /// slot the map. Readers still holding the table keep it.
    pub fn evict(&self, number: u64) {
        self.evict_all(&[number]);
    }

    /// [`TableCache::evict`] of each of `numbers`, their tables retired together (one
    /// `membarrier` for a compaction's inputs, not one per file).
    pub fn evict_all(&self, numbers: &[u64]) {
        let dropped: Vec<Arc<Table>> = {
            let mut st = self.state.lock();
            let mut dropped = Vec::new();
            for number in numbers {
                let Some(slot) = st.slots.remove(number) else { continue };
                if let Some(i) = st.ring.iter().position(|s| Arc::ptr_eq(s, &slot)) {
                    st.ring.swap_remove(i);
                }
                slot.hint.set(None);
                slot.published.clear();
                dropped.extend(slot.table.swap(None));
            }
            dropped
        };
        self.retire(dropped);
    }

    /// Closes `tables`, tables their slots gave up, once no read section can be reading them.
    fn retire(&self, tables: Vec<Arc<Table>>) {
        if !tables.is_empty() {
            self.sections.retire(tables);
        }
    }

    /// The read sections of point lookups (src/read_section.rs).
    pub(crate) fn sections(&self) -> &ReadSections {
        &self.sections
    }

    /// Lookups that found their table open.
    pub fn hits(&self) -> u64 {
        self.hits.sum()
    }

    /// Lookups that had to open their table.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    /// Every table open made by the cache: misses, plus new tables and the ones `Db::open`
    /// verifies.
    pub fn opens(&self) -> u64 {
        self.opens.load(Ordering::Relaxed)
    }

    /// Tables the cache holds open now (readers may hold a few evicted ones besides).
    pub fn open_tables(&self) -> usize {
        self.state.lock().ring.len()
    }

    /// Bytes the open tables hold in memory outside the block cache (see
    /// [`Table::held_memory_bytes`] and [`Table::reader_memory_bytes`]). Tables evicted but
    /// still held by a running scan or compaction are not counted.
    pub fn held_memory(&self) -> HeldMemory {
        let st = self.state.lock();
        let mut m = HeldMemory::default();
        for slot in &st.ring {
            if let Some(t) = slot.table.load().as_deref() {
                let (filter, index) = t.held_memory_bytes();
                m.filters += filter as u64;
                m.indexes += index as u64;
                m.readers += t.reader_memory_bytes() as u64;
                m.pinned_tables += t.meta_pinned() as usize;
            }
        }
        m
    }

    #[cfg(test)]
    /// The most tables the cache holds (`None` = unlimited).
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }
}

/// What the open tables hold outside the block cache ([`TableCache::held_memory`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldMemory {
    /// Filter blocks held by tables (not those in the block cache, pinned or not).
    pub filters: u64,
    /// Index blocks with their search summaries, and loaded range tombstones.
    pub indexes: u64,
    /// The rest of each open table: the reader itself, its properties and path, and its
    /// digested zstd compression dictionary (format version 8).
    pub readers: u64,
    /// Open tables whose index and filter are pinned in the block cache.
    pub pinned_tables: usize,
}

/// Half the process's soft limit on open descriptors (`RLIMIT_NOFILE`), the most tables a
/// limited cache keeps open; `None` where there is no limit or it cannot be read. The other
/// half is left for the WAL, manifest, LOCK and directory handles, tables a running scan or
/// compaction still holds after the cache evicted them, and the application's own files. The
/// default `max_open_files` is this share itself, so it works under any `ulimit -n` instead of
/// failing with "Too many open files".
pub(crate) fn descriptor_share() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit only writes the struct passed by pointer.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
        if !ok || lim.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        Some(usize::try_from(lim.rlim_cur / 2).unwrap_or(usize::MAX))
    }
    #[cfg(not(unix))]
    None
}

/// CLOCK: while more than `limit` slots are open, advance the hand; a slot with its bit set
/// gets a second chance (bit cleared), the first with a clear bit is evicted. Terminates: one
/// sweep clears every bit, the next evicts.
fn evict_over(st: &mut State, limit: usize, evicted: &mut Vec<Arc<Table>>) {
    while st.ring.len() > limit {
        if st.hand >= st.ring.len() {
            st.hand = 0;
        }
        let slot = &st.ring[st.hand];
        if slot.referenced.swap(false, Ordering::Relaxed) {
            st.hand += 1;
        } else {
            slot.hint.set(None);
            slot.published.clear();
            evicted.extend(slot.table.swap(None));
            st.ring.swap_remove(st.hand);
        }
    }
}

/// A test table: file `number` in `/db` of `storage`, holding `user_keys` (sorted; each a put
/// of `v` at sequence 1), with a Ribbon filter over them when `ribbon`.
#[cfg(test)]
pub(crate) fn write_test_table(
    storage: &crate::storage::MemStorage,
    number: u64,
    user_keys: &[&[u8]],
    ribbon: bool,
) {
    use crate::filter::prelude::*;
    use crate::sst::{FilterBlockSource, TableBuilder, TableOptions};
    let path = std::path::Path::new("/db").join(filename::sst_name(number));
    let mut b = TableBuilder::new(storage.create(&path).unwrap(), TableOptions::default()).unwrap();
    for k in user_keys {
        b.add(&crate::ikey::encode(k, 1, crate::ikey::ValueKind::Put), b"v").unwrap();
    }
    let filter = if ribbon {
        let hashes: Vec<u64> = user_keys.iter().map(|k| crate::filter::hash_key(k)).collect();
        FilterBlockSource::Bytes(crate::filter::Ribbon::build(&hashes).unwrap().to_bytes())
    } else {
        FilterBlockSource::None
    };
    b.finish(filter).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;
    use std::path::Path;

    fn write_tables(storage: &MemStorage, n: u64) {
        for number in 1..=n {
            write_test_table(storage, number, &[&number.to_be_bytes()], false);
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
    fn an_open_table_with_a_ribbon_filter_leaves_a_probe_hint_in_its_slot_until_closed() {
        use crate::filter::hash_key;
        let storage = MemStorage::new();
        storage.create_dir_all(Path::new("/db")).unwrap();
        // Tables 1..=19 carry a Ribbon filter over their key; table 20 has none.
        for number in 1..=20u64 {
            write_test_table(&storage, number, &[&number.to_be_bytes()], number != 20);
        }
        let c = cache(&storage, 16).unwrap();
        let hint = |n: u64| c.slot(n).hint.load();
        assert_eq!(hint(1), None, "nothing is open yet");
        let t1 = c.get(1).unwrap();
        assert!(hint(1).is_some());
        assert_eq!(hint(1), t1.probe_hint(), "the hint is the open table's");
        assert!(c.slot(1).prefetch_filter(hash_key(&1u64.to_be_bytes())));
        drop(t1);
        c.get(20).unwrap();
        assert_eq!(hint(20), None, "a table without a filter gives no hint");
        assert!(!c.slot(20).prefetch_filter(0));
        // Opening 2..=19 through 16 slots evicts some tables (CLOCK): their hints go.
        for n in 2..=19 {
            c.get(n).unwrap();
        }
        assert_eq!(c.open_tables(), 16);
        let mut closed = 0;
        for n in 1..=19u64 {
            let open = c.slot(n).table.load().is_some();
            closed += usize::from(!open);
            assert_eq!(hint(n).is_some(), open, "table {n}: a hint exactly while open");
        }
        assert!(closed >= 3, "{closed} of 19 closed");
        // A file being deleted: its slot's hint goes with its table.
        let open = (1..=19).find(|&n| hint(n).is_some()).unwrap();
        let slot = c.slot(open);
        c.evict(open);
        assert_eq!(slot.hint.load(), None);
    }

    #[test]
    fn a_table_used_between_misses_is_never_evicted() {
        // CLOCK's second chance: the hot table's bit is set again before the hand comes back.
        let storage = MemStorage::new();
        storage.create_dir_all(Path::new("/db")).unwrap();
        write_tables(&storage, 200);
        let c = cache(&storage, 16).unwrap();
        c.get(1).unwrap();
        let opens_of_hot = |c: &TableCache| c.misses();
        let mut hot_misses = 0;
        for n in 2..=200 {
            c.get(n).unwrap();
            let before = opens_of_hot(&c);
            c.get(1).unwrap();
            hot_misses += opens_of_hot(&c) - before;
            assert!(c.open_tables() <= 16);
        }
        assert_eq!(hot_misses, 0, "the hot table was evicted");
        assert_eq!(c.misses(), 200, "every cold table missed once, the hot one once");
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
