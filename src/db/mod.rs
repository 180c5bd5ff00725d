//! [`Db`]: the public storage engine. This file wires the parts together; each concern lives in
//! its own file: `open.rs` (recovery), `write.rs` (group commit, WAL, memtable rotation),
//! `flush.rs` (memtable -> L0 SST), `read.rs` (point lookups), `iter.rs` (range scans),
//! `stats.rs` (counters), `destroy.rs` (deleting a database and nothing else).
//!
//! Concurrency: readers take no lock and write no shared cache line (design.md#concurrency).
//! The current memtables and file levels form a [`SuperVersion`], replaced as a
//! whole: installers (memtable rotation, flush, compaction) serialise on `sv_install` and
//! publish through an `ArcSwap`; a point lookup borrows the current one through `arc_swap`'s
//! thread-local debt slots (no reference-count increment on the shared `Arc`), iterators and
//! snapshots of the structure take a full `Arc`. Read counters are striped per thread
//! (`read_counters.rs`). Writers are serialised by group commit: one
//! leader writes the WAL record of a whole group and applies it to the memtable, then publishes
//! the group's last sequence number with a Release store (`visible_seq`). A point lookup loads the
//! super-version FIRST and its sequence (Acquire) after it, as RocksDB's `GetImpl` does: the
//! versions it may need are then all reachable from the super-version it holds, even when a
//! flush or compaction meanwhile installs files without the versions no snapshot protects; a
//! write it misses (published into a newer memtable after the load) overlapped the read.

mod checkpoint;
pub(crate) mod compact;
pub(crate) mod cursor;
mod destroy;
pub(crate) mod flush;
mod handle;
pub(crate) mod iter;
pub(crate) mod keyspace;
mod lifecycle;
pub(crate) mod multi_get;
mod open;
mod pinned;
pub(crate) mod plan;
pub(crate) mod read;
pub(crate) mod ttl;
use read::ReadAt;
pub(crate) mod read_counters;
pub mod stats;
pub(crate) mod write;

pub use cursor::DbCursor;
pub use iter::DbIterator;
pub use keyspace::Keyspace;
pub use pinned::PinnedValue;
pub use stats::{KeyspaceStats, LevelStats, MemoryUsage, ReadStats, Stats};

use crate::error::{Error, Result};
use crate::ikey::DEFAULT_KEYSPACE as DEFAULT;
use crate::keyspace_options::KeyspaceOptions;
use crate::manifest::Manifest;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::read_section::Published;
use crate::sst::BlockCache;
use crate::storage::{DirLock, Storage};
use crate::version::Version;
use arc_swap::ArcSwap;
use handle::{read_methods, write_methods, ReadView};
pub(crate) use lifecycle::Lifecycle;
use parking_lot::{Condvar, Mutex};
use read_counters::StripedReadCounters;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The memtables and files a reader sees, replaced as a whole.
pub(crate) struct SuperVersion {
    /// The memtable receiving writes.
    pub mem: Arc<Memtable>,
    /// Frozen memtables waiting for flush, newest first.
    pub imm: Vec<Arc<Memtable>>,
    /// The SST files.
    pub version: Arc<Version>,
}

/// Engine-wide counters (atomics; `Db::stats` snapshots them).
/// Read-path counters are not here: they are striped per thread (`read_counters.rs`).
#[derive(Default)]
pub(crate) struct Counters {
    pub flushes: AtomicU64,
    pub flush_filter_as_is: AtomicU64,
    pub flush_filter_rebuilt: AtomicU64,
    pub write_stall_micros: AtomicU64,
    pub write_groups: AtomicU64,
    pub write_batches: AtomicU64,
    pub wal_syncs: AtomicU64,
    /// Key + value bytes of every write (the denominator of write amplification).
    pub user_bytes: AtomicU64,
    pub flush_bytes_written: AtomicU64,
    pub compactions: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub subcompactions: AtomicU64,
    pub blob_relocated: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub filter_fallbacks: AtomicU64,
    pub l0_slowdowns: AtomicU64,
    pub l0_stops: AtomicU64,
    pub l0_stall_micros: AtomicU64,
}

/// State shared by the `Db` handle, snapshots, iterators and the flush thread.
pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub storage: Arc<dyn Storage>,
    pub opts: Options,
    pub cache: Option<Arc<BlockCache>>,
    /// The open tables (at most `Options::max_open_files`); versions name files by metadata.
    pub tables: Arc<crate::table_cache::TableCache>,
    /// The current super-version. Read with `load` (a point lookup) or `super_version()`;
    /// replaced only through `install_super_version`.
    pub sv: ArcSwap<SuperVersion>,
    /// `sv`'s value for point lookups inside a read section (src/read_section.rs): set before
    /// `sv` takes a new super-version, whose predecessor is then retired through the table
    /// cache's read sections.
    pub sv_published: Published<SuperVersion>,
    /// Serialises super-version installs, each a read-modify-write of the current one (a
    /// rotation replaces `mem`, a flush `imm` and `version`, a compaction `version`).
    pub sv_install: Mutex<()>,
    /// Highest sequence number whose write is complete and visible to new reads.
    pub visible_seq: AtomicU64,
    /// Next file number to hand out (WALs, SSTs, manifests share the space).
    pub next_file: AtomicU64,
    pub write: write::WriteQueue,
    /// The WAL writer and sequence allocation; held only by the group-commit leader and by
    /// memtable rotation.
    pub writer: Mutex<write::WriterState>,
    /// The live manifest; held while an edit is appended and installed.
    pub manifest: Mutex<Manifest>,
    /// Signalled when an immutable memtable is queued (flush thread) and when one is flushed
    /// (stalled writers, `Db::flush`).
    pub bg_lock: Mutex<()>,
    pub bg_cv: Condvar,
    /// The last `visible_seq` the compaction picker saw and when it first saw it: writes are
    /// idle once it has not moved for `compact::L0_SETTLE_AFTER` (then L0 stops waiting for
    /// bytes, `CompactionOptions::l0_min_base_ratio`).
    pub seq_seen: Mutex<(u64, std::time::Instant)>,
    /// The L0 file set the compaction picker last saw (count, sum of file numbers) and the
    /// scans' L0 data-block reads then: once scans have read as many bytes of L0 blocks since
    /// as an L0 compaction would rewrite, L0 stops waiting for bytes (`compact::scans_paid_for_l0`).
    pub l0_scan_mark: Mutex<((usize, u64), u64)>,
    /// Open, read-only after a failure, closing, closed (lifecycle.rs): checked by every call
    /// of every handle; iterators and cursors hold it too.
    pub life: Arc<Lifecycle>,
    /// This open database among all opened in the process (never reused): a batch naming a
    /// keyspace handle of another database is refused.
    pub instance: u64,
    /// Live snapshots: sequence -> count (compaction keeps versions they can see).
    pub snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Point-lookup and scan counters, striped per thread (shared with open cursors).
    pub reads: Arc<StripedReadCounters>,
    pub counters: Counters,
    /// Keys of the last flushed memtable (before the first flush: the memtable size's
    /// estimate): the size of an L0 run to filter allocation (`plan::tree_shape`).
    pub l0_run_keys: AtomicU64,
    /// Held while a compaction runs (background or manual): one at a time.
    pub compaction_lock: Mutex<()>,
    /// Files removed from the version, deleted when nothing references them (compact.rs).
    pub obsolete: Mutex<Vec<Arc<crate::version::TableFile>>>,
    /// Blob files no longer live, deleted when no version holds them (compact.rs).
    pub obsolete_blobs: Mutex<Vec<Arc<crate::version::BlobHandle>>>,
    /// The live and dropped keyspaces; replaced (never modified) under the manifest lock.
    pub keyspaces: ArcSwap<keyspace::KeyspaceSet>,
    /// The directory lock, released when the database is closed (`None` after that, and for
    /// a read-only open, which takes none).
    pub lock: Mutex<Option<Box<dyn DirLock>>>,
}

/// The text of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic payload".into())
}

/// A fresh [`DbInner::instance`].
pub(crate) fn next_instance() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Drop for DbInner {
    fn drop(&mut self) {
        // A super-version waiting in the read sections holds files that hold the table cache
        // that holds the sections: a cycle, broken here, when no lookup can be running.
        self.tables.sections().drain();
    }
}

impl DbInner {
    /// The current super-version as an owned `Arc` (one reference-count increment: for
    /// iterators and background work; point lookups use `sv.load()`).
    pub fn super_version(&self) -> Arc<SuperVersion> {
        self.sv.load_full()
    }

    /// Replaces the super-version with `f(current)`, atomically with respect to other installs.
    pub fn install_super_version(&self, f: impl FnOnce(&SuperVersion) -> SuperVersion) {
        let _g = self.sv_install.lock();
        let cur = self.sv.load_full();
        let new = Arc::new(f(&cur));
        self.sv_published.set(&new);
        let old = self.sv.swap(new);
        self.tables.sections().retire(old);
    }

    pub fn new_file_number(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::SeqCst)
    }

    /// Fails with [`Error::ReadOnly`] if an earlier write or sync failed, with
    /// [`Error::Closed`] once the database is closing.
    pub fn check_writable(&self) -> Result<()> {
        self.life.check_writable()
    }

    /// Whether the database is closing or closed (background threads stop).
    pub fn is_closing(&self) -> bool {
        self.life.is_closing()
    }

    /// Runs a background thread's loop; a panic in it (a bug) turns the database read-only
    /// with an error naming the thread and the panic, and wakes every waiter, instead of
    /// leaving writers throttled or waiting forever for work the thread will never do.
    pub fn run_background(&self, thread: &str, body: impl FnOnce()) {
        let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) else {
            return;
        };
        let msg = panic_message(payload.as_ref());
        self.life
            .set_read_only(format!("the {thread} thread panicked ({msg}); reopen the database"));
        let _g = self.bg_lock.lock();
        self.bg_cv.notify_all();
    }

    /// Records a failure that leaves durable state unknown; the database turns read-only.
    pub fn set_bg_error(&self, err: &Error) {
        self.life.set_read_only(err.to_string());
        self.bg_cv.notify_all();
    }
}

/// An embedded siftdb database. `Send + Sync`: share it across threads by reference or `Arc`.
/// Dropping it closes it as [`Db::close`] does: unflushed writes stay in the WAL and are
/// replayed by the next open, the directory lock is released, and every [`Keyspace`],
/// [`Snapshot`], iterator and cursor taken from it fails from then on with [`Error::Closed`]
/// (design.md#life-cycle).
pub struct Db {
    inner: Arc<DbInner>,
    flusher: Option<JoinHandle<()>>,
    compactor: Option<JoinHandle<()>>,
    /// Set by the first `shutdown` (`close` or `Drop`).
    closed: bool,
}

/// A consistent read view at one sequence number. Reads through it see exactly the writes
/// acknowledged before it was taken. Dropping it lets compaction discard the versions it pinned.
///
/// ```
/// use siftdb::{Db, Options};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path().join("db"), Options::default())?;
/// db.put("a", "1")?;
/// let snap = db.snapshot();
/// db.put("a", "2")?;
/// db.put("b", "2")?;
/// db.flush()?; // flushes and compactions keep what a live snapshot can see
///
/// assert_eq!(snap.get("a")?, Some(b"1".to_vec()));
/// assert_eq!(snap.scan()?.count(), 1); // "b" came after the snapshot
/// assert_eq!(db.get("a")?, Some(b"2".to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct Snapshot {
    inner: Arc<DbInner>,
    seq: u64,
    /// The keyspace it reads (`None`: the default one).
    keyspace: Option<Keyspace>,
}

impl Db {
    /// Opens (or, with `create_if_missing`, creates) the database in directory `path`,
    /// replaying any WAL written since the last flush. The options are checked first
    /// ([`Options::validate`]): an out-of-range field fails before anything touches the disk.
    ///
    /// A panic in user code during recovery (the prefix extractor or merge operator replaying
    /// the WAL) is returned as [`Error::InvalidArgument`] carrying its message; the directory
    /// lock is released.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let recover = std::panic::AssertUnwindSafe(|| {
            let inner = open::open(path.as_ref(), opts)?;
            flush::flush_recovered(&inner)?;
            Ok(inner)
        });
        let inner = std::panic::catch_unwind(recover).unwrap_or_else(|payload| {
            Err(Error::invalid(format!(
                "opening {} panicked ({}): a prefix extractor or merge operator that panics on \
                 the recovered data is the usual cause",
                path.as_ref().display(),
                panic_message(payload.as_ref())
            )))
        })?;
        let flusher = flush::spawn_flusher(inner.clone())?;
        let compactor = compact::spawn_compactor(inner.clone())?;
        Ok(Db { inner, flusher: Some(flusher), compactor: Some(compactor), closed: false })
    }

    /// Opens the database in directory `path` for reads only, writing nothing: no LOCK file is
    /// taken or created, no WAL or manifest is started, a torn WAL tail is left in place (the
    /// replay ignores it, as [`Db::open`] does), no file is deleted and no background thread
    /// runs. Reads see everything [`Db::open`] would recover, including writes still only in
    /// the WALs. It works on a read-only file system, on a copy, and beside a process that has
    /// the database open for writing (it takes no lock); it then sees the state at its open,
    /// and a file that writer deletes later (compaction, WAL cleanup) makes the reads that need
    /// it fail with [`Error::Io`], never return a wrong answer. `create_if_missing` and
    /// `error_if_exists` are ignored: a directory without a database is
    /// [`Error::InvalidArgument`].
    ///
    /// Every write, flush, compaction, checkpoint, keyspace creation or drop and
    /// [`Db::sync_wal`] fails with [`Error::ReadOnly`] ("... opened read-only ..."); open
    /// existing keyspaces with [`Db::existing_keyspace`].
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let inner = open::open_read_only(path.as_ref(), opts)?;
        Ok(Db { inner, flusher: None, compactor: None, closed: false })
    }

    read_methods!("now");
    write_methods!();

    /// The shared state, for the layers built on the handle (transactions, src/txn/, which
    /// add `Db::transaction` from there so that db never imports them).
    pub(crate) fn inner(&self) -> &Arc<DbInner> {
        &self.inner
    }

    /// Where reads through the database go: the default keyspace, as of each call.
    fn read_view(&self) -> Result<ReadView<'_>> {
        Ok(ReadView { inner: &self.inner, keyspace: DEFAULT, at: ReadAt::Latest })
    }

    /// The keyspace writes through the database go to: the default one.
    fn keyspace_ref(&self) -> Option<&Keyspace> {
        None
    }

    fn db_inner(&self) -> &Arc<DbInner> {
        &self.inner
    }

    /// The shared state, for the engine's modules outside `db` (src/ingest/).
    pub(crate) fn inner_arc(&self) -> &Arc<DbInner> {
        &self.inner
    }

    /// The keyspace `name`, created if missing (design.md#keyspaces): its files are written
    /// with `options`, which are persisted; if they differ from the recorded ones the new ones
    /// are recorded and apply to files written from now on. Names are 1..=255 bytes; names
    /// starting with `__` are reserved for siftdb. `"default"` is the keyspace of `Db`'s own
    /// methods, whose options are the database's (`KeyspaceOptions::from(&options)`).
    pub fn keyspace(&self, name: &str, options: KeyspaceOptions) -> Result<Keyspace> {
        keyspace::open_keyspace(&self.inner, name, options, false)
    }

    /// [`Db::keyspace`] for the names starting with `__`, which siftdb reserves for its own
    /// crates' keyspaces (siftdb-query keeps table `t` in `__query/t`), so that no application
    /// keyspace can collide with them. Applications use [`Db::keyspace`].
    pub fn reserved_keyspace(&self, name: &str, options: KeyspaceOptions) -> Result<Keyspace> {
        keyspace::open_keyspace(&self.inner, name, options, true)
    }

    /// The live keyspace `name` without creating it (`None` if there is none).
    pub fn existing_keyspace(&self, name: &str) -> Option<Keyspace> {
        keyspace::existing(&self.inner, name)
    }

    /// The names of the live keyspaces: `"default"` first, then the others in creation order.
    pub fn keyspace_names(&self) -> Vec<String> {
        keyspace::names(&self.inner)
    }

    /// Drops keyspace `name`: one manifest edit records the drop and removes every file of the
    /// keyspace (their space is freed once no iterator or snapshot holds them); its unflushed
    /// writes are discarded. Handles on it fail from now on; a keyspace created later with the
    /// same name is new and empty. `"default"` cannot be dropped.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        keyspace::drop_keyspace(&self.inner, name)
    }

    /// A snapshot of the current state, reading the default keyspace; [`Snapshot::keyspace`]
    /// reads another keyspace at the same moment.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::take(&self.inner, None)
    }

    /// Freezes the current memtable and waits until every frozen memtable is in an L0 SST.
    pub fn flush(&self) -> Result<()> {
        flush::flush_and_wait(&self.inner)
    }

    /// Flushes the memtable, then compacts everything into one sorted run on the deepest
    /// non-empty level (at least L1), dropping tombstones and versions no live snapshot needs.
    /// The files it replaces are deleted before it returns, except those an iterator, a
    /// concurrent call or a flush still running holds: each of those is deleted soon after its
    /// last holder lets go (the compaction thread looks at least every 200 ms).
    pub fn compact(&self) -> Result<()> {
        compact::compact_all(&self.inner)
    }

    /// Flushes the memtable, then compacts the files overlapping `range` level by level down
    /// to the deepest non-empty level (files partly outside the range are rewritten whole).
    pub fn compact_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<()> {
        let b = |x: Bound<&K>| match x {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.as_ref().to_vec()),
            Bound::Unbounded => None,
        };
        let (lo, hi) = (b(range.start_bound()), b(range.end_bound()));
        compact::compact_range(&self.inner, lo.as_deref(), hi.as_deref())
    }

    /// Waits until automatic compaction has nothing left to do and no compaction runs. That
    /// includes L0 files left waiting for bytes (`CompactionOptions::l0_min_base_ratio`): they
    /// compact once writes have stopped for a second. Then deletes every replaced file that no
    /// iterator, concurrent call or running flush holds any more.
    pub fn wait_for_compactions(&self) -> Result<()> {
        compact::wait_for_compactions(&self.inner)
    }

    /// Writes a consistent, openable copy of the database to the new directory `dir` (it must
    /// not exist): finished SSTs hard-linked (copied across file systems), the live WALs copied,
    /// a new manifest. The copy holds every write acknowledged before the call and none after;
    /// writes and flushes pause while the WALs are copied (after a flush, so they are short).
    /// Open it with [`Db::open`] like any database; it shares no state with this one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = siftdb::Db::open(dir.path().join("db"), siftdb::Options::default())?;
    /// db.put("k", "v")?;
    /// db.checkpoint(dir.path().join("backup"))?;
    /// db.put("k", "changed")?;
    /// let copy = siftdb::Db::open(dir.path().join("backup"), siftdb::Options::default())?;
    /// assert_eq!(copy.get("k")?, Some(b"v".to_vec()));
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        checkpoint::checkpoint(&self.inner, dir.as_ref())
    }

    /// Where memory goes now: memtables, the block cache by entry kind, and what the open
    /// tables hold outside it (see [`MemoryUsage`]).
    pub fn memory_usage(&self) -> MemoryUsage {
        let sv = self.inner.super_version();
        let held = self.inner.tables.held_memory();
        let cache = self.inner.cache.as_ref().map(|c| c.usage_by_kind()).unwrap_or_default();
        MemoryUsage {
            memtables: std::iter::once(&sv.mem)
                .chain(sv.imm.iter())
                .map(|m| m.approximate_bytes() as u64)
                .sum(),
            block_cache: (cache.data + cache.index + cache.filter) as u64,
            block_cache_data: cache.data as u64,
            block_cache_index: cache.index as u64,
            block_cache_filter: cache.filter as u64,
            block_cache_pinned: cache.pinned as u64,
            block_cache_capacity: self.inner.opts.block_cache_bytes as u64,
            table_filters: held.filters,
            table_indexes: held.indexes,
            table_readers: held.readers,
            filter_arena_free: crate::huge_arena::free_bytes(),
            open_tables: self.inner.tables.open_tables(),
            pinned_tables: held.pinned_tables,
        }
    }

    /// A snapshot of the counters and per-level figures.
    pub fn stats(&self) -> Stats {
        stats::stats(&self.inner)
    }

    /// The directory of the database.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Makes every write acknowledged so far durable: fsyncs the WAL without writing a record
    /// (RocksDB's `SyncWAL`). A failure turns the database read-only, as a failed synced write
    /// does (the sync is never retried).
    pub fn sync_wal(&self) -> Result<()> {
        write::sync_wal(&self.inner)
    }

    /// Closes the database as dropping it does, but returns the error of the final WAL sync,
    /// which `Drop` can only ignore. `Ok` means every acknowledged write is durable.
    ///
    /// Closing refuses new calls through every handle taken from this `Db` ([`Keyspace`],
    /// [`Snapshot`], iterators, cursors) with [`Error::Closed`] (calls already past their check
    /// finish first), stops the background threads (a writer stalled for a flush gives up
    /// with `Closed`; its write was not acknowledged), deletes obsolete files, cuts and fsyncs
    /// the WAL, and releases the directory lock, so the database can be reopened at once even
    /// while such handles live.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    /// The closing of [`Db::close`]; once (`Drop` after `close` does nothing more).
    fn shutdown(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.inner.life.begin_close();
        {
            let _g = self.inner.bg_lock.lock();
            self.inner.bg_cv.notify_all();
        }
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        if let Some(h) = self.compactor.take() {
            let _ = h.join();
        }
        compact::purge_obsolete(&self.inner);
        // WAL bytes are already with the OS (appends are unbuffered writes or copies into a
        // shared map), so a clean close loses nothing; a final sync makes them durable too. The
        // log is closed first, so a mapped log's cut to its length is in that sync: the next
        // open starts a newer log, and a log that is not the newest must never come back from
        // a power loss ending in reserved zeros (design.md#wal-mmap).
        let synced = {
            let mut w = self.inner.writer.lock();
            w.wal.close().and_then(|()| w.wal.sync())
        };
        self.inner.lock.lock().take();
        self.inner.life.finish_close();
        synced
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // Errors have no one to go to here; `Db::close` returns them.
        let _ = self.shutdown();
    }
}

impl Snapshot {
    /// Registers a snapshot of the state published now (compaction keeps what it can see).
    pub(crate) fn take(inner: &Arc<DbInner>, keyspace: Option<Keyspace>) -> Snapshot {
        let mut snaps = inner.snapshots.lock();
        let seq = inner.visible_seq.load(Ordering::Acquire);
        *snaps.entry(seq).or_default() += 1;
        Snapshot { inner: inner.clone(), seq, keyspace }
    }

    /// Sequence number of the snapshot.
    pub fn sequence(&self) -> u64 {
        self.seq
    }

    /// The same moment of keyspace `ks` (a snapshot covers every keyspace of its database):
    /// reads through the returned snapshot go to `ks`. A handle of another database, or of a
    /// dropped keyspace, is [`Error::InvalidArgument`].
    pub fn keyspace(&self, ks: &Keyspace) -> Result<Snapshot> {
        if !ks.belongs_to(&self.inner) {
            return Err(Error::invalid(format!(
                "keyspace '{}' belongs to another database",
                ks.name()
            )));
        }
        ks.check_live()?;
        let mut snaps = self.inner.snapshots.lock();
        *snaps.entry(self.seq).or_default() += 1;
        Ok(Snapshot { inner: self.inner.clone(), seq: self.seq, keyspace: Some(ks.clone()) })
    }

    read_methods!("the snapshot");

    /// Where reads through the snapshot go: its keyspace at its sequence.
    fn read_view(&self) -> Result<ReadView<'_>> {
        let keyspace = match &self.keyspace {
            Some(ks) => {
                ks.check_live()?;
                ks.id()
            }
            None => DEFAULT,
        };
        Ok(ReadView { inner: &self.inner, keyspace, at: ReadAt::Snapshot(self.seq) })
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keyspace = self.keyspace.as_ref().map_or("default", |k| k.name());
        f.debug_struct("Snapshot")
            .field("sequence", &self.seq)
            .field("keyspace", &keyspace)
            .finish()
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.inner.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seq);
            }
        }
    }
}
