//! Opening a database: lock, manifest recovery, table opening, WAL replay.
//!
//! Recovery steps (design.md#recovery):
//! 1. Take the LOCK file (a second open of the directory fails with `Error::Locked`).
//! 2. Replay the manifest named by CURRENT into the file set, log number, next file number and
//!    last sequence. No CURRENT: create a database (if allowed).
//! 3. Open every SST the manifest names (footer, index and filter are verified), one at a time
//!    through the table cache, which keeps at most `max_open_files` of them open.
//! 4. Replay, in order, every WAL numbered at or above the log number into one memtable. A torn
//!    final record of the newest WAL is dropped and the file truncated to its valid prefix; any
//!    other damage is a corruption error naming the file and offset.
//! 5. Start a new WAL, write a new manifest holding a snapshot of the state, point CURRENT at
//!    it, and delete the old manifest and any SST no version names (a flush that crashed before
//!    its manifest edit). The replayed memtable is queued as immutable, so the flush thread
//!    writes it to L0 and only then are the old WALs deleted.

use super::write::{new_memtable, WriteQueue, WriterState};
use super::{Counters, DbInner, SuperVersion};
use crate::batch::decode_batch;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::filter::hash_key;
use crate::filter_plan::TreeShape;
use crate::limits::NUM_LEVELS;
use crate::manifest::{self, Manifest, VersionEdit};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::sst::BlockCache;
use crate::storage::{DirLock, FsStorage, Storage};
use crate::table_cache::TableCache;
use crate::version::{TableFile, Version};
use crate::wal::{read_wal, WalWriter};
use parking_lot::{Condvar, Mutex};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Bytes of WAL assumed per replayed entry when sizing the recovery memtable's filter.
const WAL_BYTES_PER_ENTRY_GUESS: u64 = 32;

/// A directory without `CURRENT` is a new database only if it holds nothing but what an
/// interrupted creation leaves (LOCK, CURRENT.tmp, a manifest, WALs without a record: a
/// creation killed after the first WAL was made leaves it empty, or zero-filled to the mapped
/// WAL's preallocation). Foreign files, or tables and WALs holding a complete record (a
/// database whose CURRENT was lost), are an error, raised before anything is written (not even
/// the LOCK file), so the directory is left as it was.
fn refuse_foreign_directory(storage: &dyn Storage, dir: &Path) -> Result<()> {
    if storage.exists(&dir.join(filename::CURRENT))? {
        return Ok(());
    }
    for name in storage.list(dir)? {
        let data = match filename::parse_file_name(&name) {
            None => {
                return Err(Error::invalid(format!(
                    "{} is not a siftdb database: it holds {name:?} and no CURRENT file",
                    dir.display()
                )))
            }
            Some((FileKind::Sst | FileKind::Blob, _)) => true,
            Some((FileKind::Wal, _)) => wal_holds_data(storage, &dir.join(&name))?,
            Some(_) => false,
        };
        if data {
            return Err(Error::Corruption {
                file: Some(dir.join(filename::CURRENT)),
                offset: None,
                what: format!("CURRENT is missing but {name} holds data; refusing to start over"),
            });
        }
    }
    Ok(())
}

/// Whether a WAL holds something a creation never writes: a complete, CRC-valid record, or
/// damage the reader cannot call a torn tail (bytes it cannot account for count as data).
fn wal_holds_data(storage: &dyn Storage, path: &Path) -> Result<bool> {
    let file = storage.open(path)?;
    if file.is_empty() {
        return Ok(false);
    }
    Ok(read_wal(file, path).map_or(true, |rec| !rec.records.is_empty()))
}

/// The storage, block cache and table cache of an open database.
type EngineParts = (Arc<dyn Storage>, Option<Arc<BlockCache>>, Arc<TableCache>);

/// The storage and table cache of a database in `dir`, as `opts` configure them.
fn engine_parts(dir: &Path, opts: &Options) -> Result<EngineParts> {
    let storage: Arc<dyn Storage> = opts.storage.clone().unwrap_or_else(|| {
        Arc::new(
            FsStorage::with_mmap(opts.mmap_reads)
                .with_mmap_wal(opts.mmap_wal)
                .with_direct_io(opts.direct_reads, opts.direct_io_for_flush_and_compaction),
        )
    });
    // Built first: it rejects an out-of-range `max_open_files` before anything is written.
    let cache = (opts.block_cache_bytes > 0).then(|| {
        let second_miss = opts.block_cache_admission == crate::options::CacheAdmission::SecondMiss;
        Arc::new(BlockCache::new(opts.block_cache_bytes).with_second_miss_admission(second_miss))
    });
    let tables = Arc::new(
        TableCache::new(storage.clone(), dir.to_path_buf(), cache.clone(), opts.max_open_files)?
            .with_meta_policy(
                opts.cache_index_and_filter_blocks,
                opts.pin_l0_filter_and_index_blocks_in_cache,
            )
            .with_huge_page_filters(opts.filters_on_huge_pages),
    );
    Ok((storage, cache, tables))
}

/// What recovery (steps 2 to 4) reads from a database directory, before anything is written.
struct Recovered {
    state: manifest::RecoveredState,
    /// The directory's file names when recovery listed them.
    names: Vec<String>,
    /// Above every file number the manifest or the directory holds.
    next_file: u64,
    version: Version,
    /// The WALs replayed, oldest first.
    wals: Vec<u64>,
    /// Every record of `wals`, in one memtable.
    replayed: Arc<Memtable>,
    last_seq: u64,
    /// The newest WAL's torn tail: its path and valid length (the caller decides whether to cut
    /// it).
    torn_tail: Option<(PathBuf, u64)>,
    shape: TreeShape,
    l0_run_keys: u64,
}

/// The default keyspace's tag-8 record for a manifest snapshot (`None`: no TTL, no filter).
pub(crate) fn default_lifecycle(opts: &Options) -> Option<crate::keyspace_options::Lifecycle> {
    let life = crate::KeyspaceOptions::from(opts).lifecycle();
    (!life.is_empty()).then_some(life)
}

/// Opens every table `state` names and replays the WALs into one memtable. Reads only: an
/// error leaves the directory as it was.
fn recover_files(
    dir: &Path,
    opts: &Options,
    storage: &dyn Storage,
    tables: &Arc<TableCache>,
    state: manifest::RecoveredState,
    existed: bool,
) -> Result<Recovered> {
    // Values of a TTL keyspace carry their write time; others do not (design.md#ttl).
    let recorded_ttl = state.default_lifecycle.ttl_ms > 0;
    if existed && recorded_ttl != opts.ttl.is_some() {
        return Err(Error::invalid(format!(
            "the database's default keyspace was created {} a TTL and cannot be opened {} \
             Options::ttl: its values are stored {} a write time (the TTL's duration may change)",
            if recorded_ttl { "with" } else { "without" },
            if opts.ttl.is_some() { "with" } else { "without" },
            if recorded_ttl { "with" } else { "without" },
        )));
    }
    let names = storage.list(dir)?;
    let max_seen = names
        .iter()
        .filter_map(|n| filename::parse_file_name(n))
        .map(|(_, n)| n)
        .max()
        .unwrap_or(0);
    let next_file = state.next_file_number.max(max_seen + 1).max(1);

    // Tables: each is opened (and verified) once to take its `TableInfo`; the table cache
    // keeps the most recent `max_open_files` of them open.
    let manifest_path = dir.join(filename::manifest_name(state.manifest_number));
    crate::version::check_recovered_levels(&state.levels, &manifest_path)?;
    let mut levels = vec![Vec::new(); NUM_LEVELS];
    for (level, files) in state.levels.iter().enumerate() {
        for meta in files.values() {
            tables.note_level(meta.number, level); // before the open: L0 tables may be pinned
            tables.set_global_seq(meta.number, meta.global_seq);
            tables.set_adoption(meta.number, meta.stored_keyspace.map(|s| (s, meta.keyspace)));
            let table = tables.open(meta.number)?;
            let file = TableFile::new(meta.clone(), &table, tables.clone());
            levels[level].push(Arc::new(file));
        }
    }
    // L0 newest first (by largest sequence number, then file number); deeper levels by
    // smallest key.
    let version =
        Version::from_levels(levels).with_blobs(state.blobs.keys().copied(), &mut Vec::new());

    // WAL replay.
    let mut wals: Vec<u64> = names
        .iter()
        .filter_map(|n| filename::parse_file_name(n))
        .filter(|&(kind, n)| kind == FileKind::Wal && n >= state.log_number)
        .map(|(_, n)| n)
        .collect();
    wals.sort_unstable();
    // The WAL the manifest's log number names always exists (it is created and its entry synced
    // before any edit names it, and only WALs below it are deleted). If it is gone, an edit
    // that moved the log number on was lost (a damaged last manifest edit reads like a torn
    // one) after the WALs it made obsolete were deleted: their data is lost, so refuse to open.
    if existed && !wals.contains(&state.log_number) {
        return Err(Error::Corruption {
            file: Some(dir.join(filename::manifest_name(state.manifest_number))),
            offset: None,
            what: format!(
                "WAL {} named by the manifest's log number is missing (a manifest edit was lost)",
                state.log_number
            ),
        });
    }
    let wal_bytes: u64 = wals
        .iter()
        .map(|&n| storage.open(&dir.join(filename::wal_name(n))).map(|f| f.len()).unwrap_or(0))
        .sum();
    let replay_keys = (wal_bytes / WAL_BYTES_PER_ENTRY_GUESS).max(1024);
    // An L0 run is a memtable's keys: the mean of the L0 files if any, else the estimate.
    let l0 = &version.levels()[0];
    let l0_run_keys = match l0.len() as u64 {
        0 => super::write::expected_entries(opts, None),
        n => l0.iter().map(|f| f.meta.entries).sum::<u64>() / n,
    };
    // The replayed memtable will be one more L0 run.
    let l0_runs = super::plan::l0_runs_beside(&version, 0, 1);
    let shape = super::plan::tree_shape(
        opts,
        &version,
        (l0_runs, l0_run_keys),
        vec![],
        None,
        crate::filter_plan::Writes::Ongoing,
    );
    let replay_wal = wals.first().copied().unwrap_or(0);
    let replayed = Arc::new(new_memtable(opts, &shape, replay_wal, replay_keys));
    let mut last_seq = state.last_sequence;
    let mut torn_tail = None;
    for (i, &n) in wals.iter().enumerate() {
        let path = dir.join(filename::wal_name(n));
        let rec = read_wal(storage.open(&path)?, &path)?;
        if rec.torn_tail {
            if i + 1 != wals.len() {
                return Err(Error::Corruption {
                    file: Some(path),
                    offset: Some(rec.valid_len),
                    what: "incomplete record in a WAL that is not the newest".into(),
                });
            }
            torn_tail = Some((path.clone(), rec.valid_len));
        }
        for (r, record) in rec.records.iter().enumerate() {
            // The record passed its CRC, so a batch that does not decode was written wrong or
            // damaged in a way the CRC missed: corruption either way, never skipped.
            let batch = decode_batch(record).map_err(|e| Error::Corruption {
                file: Some(path.clone()),
                offset: None,
                what: format!("WAL record {r} holds a malformed write batch: {e}"),
            })?;
            for (j, entry) in batch.records.iter().enumerate() {
                let seq = batch.first_seq + j as u64;
                // Records of a dropped keyspace are replayed too and discarded at flush.
                let (kind, ks, key) = (entry.kind, entry.keyspace, entry.key);
                replayed.add_in(seq, kind, ks, key, hash_key(key), entry.value);
                last_seq = last_seq.max(seq);
            }
        }
    }
    Ok(Recovered {
        state,
        names,
        next_file,
        version,
        wals,
        replayed,
        last_seq,
        torn_tail,
        shape,
        l0_run_keys,
    })
}

/// What an open adds to the recovered state: where writes go and who holds the directory.
struct WritePath {
    wal: WalWriter,
    wal_number: u64,
    manifest: Manifest,
    next_file: u64,
    /// `None` for a read-only open, which takes no lock.
    lock: Option<Box<dyn DirLock>>,
    /// `Some` for a database that refuses writes from the start (`open_read_only`).
    read_only: Option<String>,
}

/// The engine state over `rec` (its replayed memtable queued as immutable) and `path`.
fn assemble(
    dir: &Path,
    opts: Options,
    (storage, cache, tables): EngineParts,
    rec: Recovered,
    path: WritePath,
) -> DbInner {
    let expected = super::write::expected_entries(&opts, None);
    let mem = Arc::new(new_memtable(&opts, &rec.shape, path.wal_number, expected));
    let imm = if rec.replayed.is_empty() { Vec::new() } else { vec![rec.replayed] };
    let last_seq = rec.last_seq;
    let sv = Arc::new(SuperVersion { mem, imm, version: Arc::new(rec.version) });
    let sv_published = crate::read_section::Published::default();
    sv_published.set(&sv);
    DbInner {
        dir: dir.to_path_buf(),
        storage,
        cache,
        tables,
        sv: arc_swap::ArcSwap::new(sv),
        sv_published,
        sv_install: Mutex::new(()),
        visible_seq: AtomicU64::new(last_seq),
        next_file: AtomicU64::new(path.next_file),
        write: WriteQueue::default(),
        writer: Mutex::new(WriterState { wal: path.wal, wal_number: path.wal_number, last_seq }),
        manifest: Mutex::new(path.manifest),
        bg_lock: Mutex::new(()),
        bg_cv: Condvar::new(),
        seq_seen: Mutex::new((0, std::time::Instant::now())),
        l0_scan_mark: Mutex::new(((0, 0), 0)),
        life: Arc::new(match path.read_only {
            Some(why) => super::Lifecycle::read_only(why),
            None => super::Lifecycle::open(),
        }),
        instance: super::next_instance(),
        snapshots: Mutex::new(BTreeMap::new()),
        reads: Arc::new(super::read_counters::StripedReadCounters::new()),
        counters: Counters::default(),
        l0_run_keys: AtomicU64::new(rec.l0_run_keys),
        compaction_lock: Mutex::new(()),
        obsolete: Mutex::new(Vec::new()),
        obsolete_blobs: Mutex::new(Vec::new()),
        keyspaces: arc_swap::ArcSwap::from_pointee(super::keyspace::KeyspaceSet::recovered(
            &rec.state,
        )),
        lock: Mutex::new(path.lock),
        opts,
    }
}

pub(crate) fn open(dir: &Path, opts: Options) -> Result<Arc<DbInner>> {
    let parts = engine_parts(dir, &opts)?;
    let storage = parts.0.clone();
    if opts.create_if_missing {
        crate::storage::create_dir_all_durably(&*storage, dir)?;
    }
    if !storage.exists(dir)? {
        return Err(Error::invalid(format!("database directory {} does not exist", dir.display())));
    }
    refuse_foreign_directory(&*storage, dir)?;
    let lock = storage.lock(&dir.join(filename::LOCK))?;
    // Direct I/O refused by the file system fails here, never silently falls back.
    storage.check_io_modes(&dir.join(filename::LOCK))?;

    let mut existed = false;
    let state = match manifest::recover(&*storage, dir)? {
        Some(state) => {
            existed = true;
            if opts.error_if_exists {
                return Err(Error::invalid(format!("database {} already exists", dir.display())));
            }
            state
        }
        None => {
            if !opts.create_if_missing {
                return Err(Error::invalid(format!("no database in {}", dir.display())));
            }
            manifest::RecoveredState::empty(0)
        }
    };
    let rec = recover_files(dir, &opts, &*storage, &parts.2, state, existed)?;

    // The torn tail of the newest WAL is cut only once every record decoded, so an open that
    // fails leaves the files as they were.
    if let Some((path, len)) = &rec.torn_tail {
        storage.truncate(path, *len)?;
    }
    // A killed process may have left the replayed records with the OS only, and a process
    // whose closing WAL sync failed may have left them nowhere: `Db::open` flushes them to a
    // fresh, synced L0 table before it accepts a write (`flush::flush_recovered`), so no newer
    // synced write can outlive them. (Syncing the old WALs here, as before, is not enough after
    // a failed sync: see flush_recovered.)

    // New WAL, then a new manifest holding a snapshot of everything.
    let mut next_file = rec.next_file;
    let wal_number = next_file;
    next_file += 1;
    let wal_path = dir.join(filename::wal_name(wal_number));
    // The new WAL's directory entry becomes durable with the manifest's directory sync below,
    // before `open` returns and any write can reach the WAL (a sync of its own here would be
    // redundant, which the power-loss sharpness test shows).
    let wal_file = storage.create_log(&wal_path)?;
    let manifest_number = next_file;
    next_file += 1;
    let log_number = if rec.replayed.is_empty() { wal_number } else { rec.wals[0] };
    let snapshot = VersionEdit {
        log_number: Some(log_number),
        next_file_number: Some(next_file),
        last_sequence: Some(rec.last_seq),
        added: rec
            .version
            .levels()
            .iter()
            .enumerate()
            .flat_map(|(l, files)| files.iter().map(move |f| (l as u32, f.meta.clone())))
            .collect(),
        keyspaces: rec.state.keyspaces.values().cloned().collect(),
        dropped_keyspaces: rec.state.dropped_keyspaces.iter().copied().collect(),
        default_lifecycle: default_lifecycle(&opts),
        blob_files: rec.state.snapshot_edit().blob_files,
        blob_garbage: rec.state.snapshot_edit().blob_garbage,
        ..VersionEdit::default()
    };
    let manifest = Manifest::create(&*storage, dir, manifest_number, &snapshot)?;

    // Remove what the new manifest does not name: old manifests, orphan SSTs, stale WALs.
    let live: std::collections::HashSet<u64> =
        rec.version.levels().iter().flatten().map(|f| f.meta.number).collect();
    for name in &rec.names {
        match filename::parse_file_name(name) {
            Some((FileKind::Manifest, n)) if n != manifest_number => {
                let _ = storage.remove(&dir.join(name));
            }
            Some((FileKind::Sst, n)) if !live.contains(&n) => {
                let _ = storage.remove(&dir.join(name));
            }
            // A blob file no manifest edit named (a flush or compaction that did not finish),
            // or one whose values were all garbage.
            Some((FileKind::Blob, n)) if !rec.state.blobs.contains_key(&n) => {
                let _ = storage.remove(&dir.join(name));
            }
            Some((FileKind::Wal, n)) if n < log_number => {
                let _ = storage.remove(&dir.join(name));
            }
            _ => {}
        }
    }

    let wal = WalWriter::new(wal_file);
    let path =
        WritePath { wal, wal_number, manifest, next_file, lock: Some(lock), read_only: None };
    Ok(Arc::new(assemble(dir, opts, parts, rec, path)))
}

/// Opens the database in `dir` for reads only (`Db::open_read_only`): recovery steps 2 to 4
/// without a single write. No LOCK is taken or created, a torn WAL tail is left in place (the
/// replay ignores it), no WAL or manifest is started, nothing is deleted. The database refuses
/// every write from the start (`DbInner::check_writable`), and its WAL writer and manifest
/// refuse appends as a second line.
pub(crate) fn open_read_only(dir: &Path, opts: Options) -> Result<Arc<DbInner>> {
    let parts = engine_parts(dir, &opts)?;
    let storage = parts.0.clone();
    let Some(state) = manifest::recover(&*storage, dir)? else {
        return Err(Error::invalid(format!("no database in {}", dir.display())));
    };
    // Direct I/O refused by the file system fails here, never silently falls back.
    storage.check_io_modes(&dir.join(filename::CURRENT))?;
    let rec = recover_files(dir, &opts, &*storage, &parts.2, state, true)?;
    let why = format!("{} was opened read-only (Db::open_read_only)", dir.display());
    let path = WritePath {
        wal: WalWriter::read_only(&why),
        // Never created: writes are refused before a memtable could name a WAL.
        wal_number: rec.next_file,
        manifest: Manifest::read_only(&why),
        next_file: rec.next_file,
        lock: None,
        read_only: Some(why),
    };
    Ok(Arc::new(assemble(dir, opts, parts, rec, path)))
}
