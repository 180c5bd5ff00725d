//! Keyspaces (column families): named, independently configured key spaces in one database,
//! sharing its WAL, sequence numbers, memtables and levels (design.md#keyspaces).
//!
//! A keyspace is an id in the internal key (src/ikey.rs), so the keyspaces occupy disjoint
//! internal-key ranges of one LSM tree; flush and compaction cut their output files at keyspace
//! boundaries and write each file with its keyspace's options. This file holds the registry of
//! live keyspaces ([`KeyspaceSet`], published through an `ArcSwap` and replaced under the
//! manifest lock), creating, reopening and dropping them, and the [`Keyspace`] handle, whose
//! reads and writes run through the same code paths as `Db`'s with the keyspace id threaded in.

use super::handle::{read_methods, write_methods, ReadView};
use super::read::ReadAt;
use super::{compact, DbInner, Snapshot, SuperVersion};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filter_plan::{level_filter, LevelFilter, TreeShape};
use crate::ikey::DEFAULT_KEYSPACE;
use crate::keyspace_options::{validate_name, KeyspaceOptions, DEFAULT_KEYSPACE_NAME};
use crate::manifest::{KeyspaceRecord, RecoveredState, VersionEdit};
use crate::options::{FilterPolicy, Options};
use crate::sst::TableOptions;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A live keyspace other than the default.
#[derive(Debug, Clone)]
pub(crate) struct LiveKeyspace {
    pub name: Arc<str>,
    /// Its options; the compaction filter is set only once the keyspace was opened in this
    /// process (the manifest records its name alone).
    pub options: KeyspaceOptions,
    /// The recorded compaction filter name (empty: none).
    pub filter_name: String,
}

/// The keyspaces of a database: live ones other than the default, and the ids of dropped ones.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyspaceSet {
    pub live: BTreeMap<u32, LiveKeyspace>,
    pub dropped: BTreeSet<u32>,
}

impl KeyspaceSet {
    /// The keyspaces a recovered manifest describes.
    pub fn recovered(state: &RecoveredState) -> KeyspaceSet {
        let live = state
            .keyspaces
            .values()
            .map(|r| {
                let k = LiveKeyspace {
                    name: r.name.as_str().into(),
                    options: r.options.clone(),
                    filter_name: r.filter_name.clone(),
                };
                (r.id, k)
            })
            .collect();
        KeyspaceSet { live, dropped: state.dropped_keyspaces.clone() }
    }

    /// Whether `id` is the default keyspace or a live one.
    pub fn is_live(&self, id: u32) -> bool {
        id == DEFAULT_KEYSPACE || self.live.contains_key(&id)
    }

    fn id_of(&self, name: &str) -> Option<u32> {
        self.live.iter().find(|(_, k)| &*k.name == name).map(|(&id, _)| id)
    }

    /// One above every id ever created or dropped (ids are never reused).
    fn next_id(&self) -> Result<u32> {
        let live = self.live.keys().next_back().copied().unwrap_or(0);
        let dropped = self.dropped.iter().next_back().copied().unwrap_or(0);
        live.max(dropped)
            .checked_add(1)
            .ok_or_else(|| Error::invalid("every keyspace id (2^32 - 1) has been used"))
    }

    /// The tag-6 records of the live keyspaces (a manifest snapshot carries them).
    pub fn records(&self) -> Vec<KeyspaceRecord> {
        let record = |(&id, k): (&u32, &LiveKeyspace)| KeyspaceRecord {
            id,
            name: k.name.to_string(),
            options: k.options.clone(),
            filter_name: k.filter_name.clone(),
        };
        self.live.iter().map(record).collect()
    }
}

/// How the files of one keyspace are written: block layout, and filters.
pub(crate) struct Layout {
    pub table: TableOptions,
    /// Filter policy: the flush filter for L0 files, the static one for compaction outputs.
    pub policy: FilterPolicy,
    /// Values of at least this many bytes go to blob files (design.md#key-value-separation).
    pub blob_threshold: Option<u32>,
}

impl Layout {
    /// The layout of `keyspace`'s files written to `level` (its persisted options, or the
    /// database options for the default keyspace and for ids no longer live).
    pub fn of(opts: &Options, set: &KeyspaceSet, keyspace: u32, level: usize) -> Layout {
        Layout::of_output(opts, set, keyspace, level, false)
    }

    /// [`Layout::of`] for the outputs of a compaction that is `bottommost` or not
    /// ([`TableOptions::for_output`]).
    pub fn of_output(
        opts: &Options,
        set: &KeyspaceSet,
        keyspace: u32,
        level: usize,
        bottommost: bool,
    ) -> Layout {
        let base = TableOptions::for_output(opts, level, bottommost);
        match set.live.get(&keyspace) {
            Some(k) => {
                let o = &k.options;
                let mut table = base;
                table.block_size = o.block_size;
                table.compression = o.compression.into();
                Layout { table, policy: o.filter_policy.clone(), blob_threshold: o.blob_threshold }
            }
            None => Layout {
                table: base,
                policy: opts.filter_policy.clone(),
                blob_threshold: opts.blob_threshold,
            },
        }
    }

    /// The static filter of compaction outputs at `level` in a tree of `shape`.
    pub fn compaction_filter(&self, level: usize, shape: &TreeShape) -> LevelFilter {
        level_filter(&self.policy, level.max(1), shape)
    }
}

/// Opens keyspace `name`, creating it if missing; persists `options` if they differ from the
/// recorded ones. `reserved_ok` admits siftdb's own `__` names.
pub(crate) fn open_keyspace(
    inner: &Arc<DbInner>,
    name: &str,
    options: KeyspaceOptions,
    reserved_ok: bool,
) -> Result<Keyspace> {
    validate_name(name, reserved_ok)?;
    options.validate()?;
    if name == DEFAULT_KEYSPACE_NAME {
        if options != KeyspaceOptions::from(&inner.opts) {
            return Err(Error::invalid(
                "keyspace \"default\" takes its options from Options; open it with \
                 KeyspaceOptions::from(&options)",
            ));
        }
        return Ok(Keyspace::new(inner.clone(), DEFAULT_KEYSPACE, name.into()));
    }
    inner.check_writable()?;
    let mut manifest = inner.manifest.lock();
    let set = inner.keyspaces.load_full();
    let (id, existing) = match set.id_of(name) {
        Some(id) => (id, set.live.get(&id).cloned()),
        None => (set.next_id()?, None),
    };
    let filter_name = options.filter_name().to_string();
    if let Some(k) = &existing {
        // Values of a TTL keyspace carry their write time; others do not.
        if k.options.ttl.is_some() != options.ttl.is_some() {
            return Err(Error::invalid(format!(
                "keyspace {name:?} was created {} a TTL and cannot be reopened {} one: its \
                 values are stored {} a write time (the TTL's duration may change)",
                if k.options.ttl.is_some() { "with" } else { "without" },
                if options.ttl.is_some() { "with" } else { "without" },
                if k.options.ttl.is_some() { "with" } else { "without" },
            )));
        }
    }
    let recorded_same = existing.as_ref().is_some_and(|k| {
        k.filter_name == filter_name
            && KeyspaceOptions { compaction_filter: None, ..k.options.clone() }
                == KeyspaceOptions { compaction_filter: None, ..options.clone() }
    });
    if !recorded_same {
        let edit = VersionEdit {
            keyspaces: vec![KeyspaceRecord {
                id,
                name: name.to_string(),
                options: options.clone(),
                filter_name: filter_name.clone(),
            }],
            ..VersionEdit::default()
        };
        if let Err(e) = manifest.append(&edit, &inner.manifest_rollover()) {
            inner.set_bg_error(&e);
            return Err(e);
        }
    }
    let same_filter = existing.as_ref().is_some_and(|k| {
        match (&k.options.compaction_filter, &options.compaction_filter) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    });
    if !recorded_same || !same_filter {
        let mut next = (*set).clone();
        next.live.insert(id, LiveKeyspace { name: name.into(), options, filter_name });
        inner.keyspaces.store(Arc::new(next));
    }
    drop(manifest);
    Ok(Keyspace::new(inner.clone(), id, name.into()))
}

/// Drops keyspace `name`: one manifest edit records the drop and removes every file of the
/// keyspace (files hold one keyspace, so this frees its space as soon as no reader holds
/// them); its memtable entries are discarded at flush.
pub(crate) fn drop_keyspace(inner: &DbInner, name: &str) -> Result<()> {
    validate_name(name, true)?;
    if name == DEFAULT_KEYSPACE_NAME {
        return Err(Error::invalid("keyspace \"default\" cannot be dropped"));
    }
    inner.check_writable()?;
    // No compaction runs meanwhile: none can install outputs of the dropped keyspace.
    let _c = inner.compaction_lock.lock();
    let mut manifest = inner.manifest.lock();
    let set = inner.keyspaces.load_full();
    let id =
        set.id_of(name).ok_or_else(|| Error::invalid(format!("no keyspace named {name:?}")))?;
    let version = inner.super_version().version.clone();
    let mut deleted = Vec::new();
    let mut removed = Vec::new();
    for (level, files) in version.levels().iter().enumerate() {
        for f in files.iter().filter(|f| f.meta.keyspace == id) {
            deleted.push((level, f.meta.number));
            removed.push(f.clone());
        }
    }
    drop(version);
    let edit = VersionEdit {
        next_file_number: Some(inner.next_file.load(Ordering::SeqCst)),
        deleted: deleted.iter().map(|&(l, n)| (l as u32, n)).collect(),
        dropped_keyspaces: vec![id],
        ..VersionEdit::default()
    };
    if let Err(e) = manifest.append(&edit, &inner.manifest_rollover()) {
        inner.set_bg_error(&e);
        return Err(e);
    }
    let mut next = (*set).clone();
    next.live.remove(&id);
    next.dropped.insert(id);
    inner.keyspaces.store(Arc::new(next));
    // The drop's replay removed the keyspace's blob files from the manifest's set: they leave
    // the version too, and are deleted once no reader holds them.
    let live_blobs: Vec<u64> = manifest.blobs().keys().copied().collect();
    let mut gone_blobs = Vec::new();
    inner.install_super_version(|cur| SuperVersion {
        mem: cur.mem.clone(),
        imm: cur.imm.clone(),
        version: Arc::new(cur.version.apply(&deleted, &[]).with_blobs(live_blobs, &mut gone_blobs)),
    });
    drop(manifest);
    inner.obsolete.lock().extend(removed);
    inner.obsolete_blobs.lock().extend(gone_blobs);
    compact::purge_obsolete_settled(inner);
    Ok(())
}

/// A handle on one keyspace of a database (from [`crate::Db::keyspace`]): the `Db` read and
/// write methods, confined to the keyspace. `Clone`, `Send` and `Sync`. After the keyspace is
/// dropped every call returns [`Error::InvalidArgument`]` ("keyspace 'x' was dropped")`; after
/// the database is closed, [`Error::Closed`]. A batch naming it is refused by any other
/// database.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use siftdb::{Db, KeyspaceOptions, Options, WriteBatch};
/// let db = Db::open(dir.path(), Options::default())?;
/// let users = db.keyspace("users", KeyspaceOptions::default())?;
/// users.put("k", "in users")?;
/// db.put("k", "in default")?; // the same key in another keyspace: independent
/// assert_eq!(users.get("k")?, Some(b"in users".to_vec()));
///
/// let mut batch = WriteBatch::new(); // atomic across keyspaces
/// batch.put_in(&users, "a", "1").put("a", "2");
/// db.write(batch)?;
/// let keys: Vec<Vec<u8>> = users.scan()?.map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, vec![b"a".to_vec(), b"k".to_vec()]);
///
/// db.drop_keyspace("users")?;
/// assert!(users.get("k").is_err());
/// assert_eq!(db.keyspace_names(), vec!["default".to_string()]);
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Clone)]
pub struct Keyspace {
    inner: Arc<DbInner>,
    id: u32,
    name: Arc<str>,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace").field("id", &self.id).field("name", &self.name).finish()
    }
}

impl Keyspace {
    fn new(inner: Arc<DbInner>, id: u32, name: Arc<str>) -> Keyspace {
        Keyspace { inner, id, name }
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The keyspace's id (in its database; never reused).
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn name_arc(&self) -> &Arc<str> {
        &self.name
    }

    /// Whether this handle belongs to the database whose state is `inner`.
    pub(crate) fn belongs_to(&self, inner: &Arc<DbInner>) -> bool {
        Arc::ptr_eq(&self.inner, inner)
    }

    /// The open database this handle belongs to ([`DbInner::instance`]).
    pub(crate) fn db_instance(&self) -> u64 {
        self.inner.instance
    }

    /// Fails if the database was closed or the keyspace dropped.
    pub(crate) fn check_live(&self) -> Result<()> {
        self.inner.life.check_open()?;
        if self.inner.keyspaces.load().is_live(self.id) {
            Ok(())
        } else {
            Err(Error::invalid(format!("keyspace '{}' was dropped", self.name)))
        }
    }

    /// A snapshot of the current state, reading this keyspace (see [`crate::Db::snapshot`]).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::take(&self.inner, Some(self.clone()))
    }

    read_methods!("now");
    write_methods!();

    /// Where reads through the handle go: its keyspace, as of each call.
    fn read_view(&self) -> Result<ReadView<'_>> {
        self.check_live()?;
        Ok(ReadView { inner: &self.inner, keyspace: self.id, at: ReadAt::Latest })
    }

    /// The keyspace writes through the handle go to.
    fn keyspace_ref(&self) -> Option<&Keyspace> {
        Some(self)
    }

    /// The shared state, for the engine's modules outside `db` (src/ingest/).
    pub(crate) fn inner_arc(&self) -> &Arc<DbInner> {
        &self.inner
    }

    fn db_inner(&self) -> &Arc<DbInner> {
        &self.inner
    }
}

/// The names of the live keyspaces, "default" first, then by id (creation order).
pub(crate) fn names(inner: &DbInner) -> Vec<String> {
    let set = inner.keyspaces.load();
    std::iter::once(DEFAULT_KEYSPACE_NAME.to_string())
        .chain(set.live.values().map(|k| k.name.to_string()))
        .collect()
}

/// Fails unless every keyspace handle `batch` names belongs to this database and is live (a
/// foreign handle or a dropped keyspace fails the whole batch).
pub(crate) fn check_batch(inner: &DbInner, batch: &WriteBatch) -> Result<()> {
    if batch.keyspaces().is_empty() {
        return Ok(());
    }
    if let Some(k) = batch.keyspaces().iter().find(|k| k.db != inner.instance) {
        return Err(Error::invalid(format!("keyspace '{}' belongs to another database", k.name)));
    }
    let set = inner.keyspaces.load();
    match batch.keyspaces().iter().find(|k| !set.is_live(k.id)) {
        Some(k) => Err(Error::invalid(format!("keyspace '{}' was dropped", k.name))),
        None => Ok(()),
    }
}

/// A handle on live keyspace `name` (`"default"` included), without creating it.
pub(crate) fn existing(inner: &Arc<DbInner>, name: &str) -> Option<Keyspace> {
    if name == DEFAULT_KEYSPACE_NAME {
        return Some(Keyspace::new(inner.clone(), DEFAULT_KEYSPACE, name.into()));
    }
    let id = inner.keyspaces.load().id_of(name)?;
    Some(Keyspace::new(inner.clone(), id, name.into()))
}
