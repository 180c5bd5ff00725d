//! The manifest: an append-only log of [`VersionEdit`]s (one WAL-framed record each) that
//! describes which table files are live on which level, plus the engine's counters. `CURRENT`
//! names the live manifest. Format and crash-safety argument: docs/format.md#manifest.
//!
//! Life cycle: [`Manifest::create`] writes a new manifest whose first edit is a full snapshot
//! and installs it through `CURRENT`; [`Manifest::append`] logs one more edit durably and rolls
//! the manifest over (a new one from a snapshot of the state, then the old one removed) once it
//! grows large; [`recover`] replays the manifest `CURRENT` names. There is no way to reopen a
//! manifest for appending: after recovery the engine starts a new one from
//! [`RecoveredState::snapshot_edit`] (which also drops any torn tail of the old one).

mod edit;

#[cfg(test)]
mod tests;

pub use edit::{FileMeta, KeyspaceRecord, VersionEdit, MAX_LEVELS};

use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::storage::{join, Storage};
use crate::wal::{WalReader, WalWriter};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// An open manifest being appended to.
#[derive(Debug)]
pub struct Manifest {
    writer: WalWriter,
    /// The state the manifest describes: its snapshot with every appended edit applied (what
    /// the next open would recover from it, and what a rollover's snapshot records).
    state: RecoveredState,
    /// Bytes of the manifest's first record, the snapshot.
    snapshot_bytes: u64,
    /// Bytes of the manifest file.
    size: u64,
    /// Why the manifest accepts no more edits (a rollover failed or an edit was refused);
    /// failed appends of the log itself are remembered by `writer`.
    failed: Option<String>,
}

/// What [`Manifest::append`] needs to roll the manifest over.
pub struct Rollover<'a> {
    /// The file system of the database.
    pub storage: &'a dyn Storage,
    /// The database directory.
    pub dir: &'a Path,
    /// The engine's file-number allocator (WALs, tables and manifests share its numbers): a new
    /// manifest takes its number from it.
    pub next_file: &'a AtomicU64,
    /// `Options::max_manifest_file_size`.
    pub max_file_size: u64,
}

impl Manifest {
    /// Writes `MANIFEST-<number>` in `dir` holding `snapshot` (which must set the log number,
    /// next file number and last sequence, and describe every live file), syncs it, then makes it
    /// the live manifest: `CURRENT.tmp` is written and synced, renamed over `CURRENT`, and the
    /// directory synced. A crash at any point leaves `CURRENT` naming either the old manifest or
    /// this complete one. Removing the old manifest is the caller's job.
    pub fn create(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        snapshot: &VersionEdit,
    ) -> Result<Manifest> {
        let mut check = RecoveredState::empty(number);
        check.apply(snapshot)?;
        if snapshot.log_number.is_none()
            || snapshot.next_file_number.is_none()
            || snapshot.last_sequence.is_none()
        {
            return Err(Error::invalid(
                "a manifest snapshot must set log_number, next_file_number and last_sequence",
            ));
        }
        let path = join(dir, &filename::manifest_name(number));
        let mut writer = WalWriter::new(storage.create(&path)?);
        let snapshot_bytes = writer.add_record(&snapshot.encode())?;
        if crate::testing::enabled("manifest.create_sync") {
            writer.sync()?;
        }
        // Make the manifest's own entry durable before CURRENT can point at it.
        if crate::testing::enabled("manifest.create_sync_dir") {
            storage.sync_dir(dir)?;
        }
        set_current(storage, dir, number)?;
        Ok(Manifest { writer, state: check, snapshot_bytes, size: snapshot_bytes, failed: None })
    }

    /// A manifest that refuses every edit with [`Error::ReadOnly`] carrying `why` and writes
    /// nothing (the manifest of a database opened read-only).
    pub(crate) fn read_only(why: &str) -> Manifest {
        Manifest {
            writer: WalWriter::read_only(why),
            state: RecoveredState::empty(0),
            snapshot_bytes: 0,
            size: 0,
            failed: Some(why.to_string()),
        }
    }

    /// Appends `edit` and syncs it, then rolls the manifest over if it has grown past
    /// [`Manifest::rollover_size`]: a new manifest numbered from `env.next_file` holding a
    /// snapshot of the state is written and made current ([`Manifest::create`]), and the old
    /// file removed. The edit is checked against the state first: one that recovery would
    /// reject is refused before it reaches the file. After an error the manifest accepts
    /// nothing more ([`Error::ReadOnly`]) and whether the edit is durable is unknown to the
    /// caller (it is durable when only the rollover failed, in whichever manifest `CURRENT`
    /// names: both hold it).
    pub fn append(&mut self, edit: &VersionEdit, env: &Rollover<'_>) -> Result<()> {
        if let Some(why) = &self.failed {
            return Err(Error::ReadOnly(format!("the manifest failed earlier: {why}")));
        }
        let checked = self.state.apply(edit).and_then(|()| match self.state.misnumbered_file() {
            Some(what) => Err(Error::invalid(what)),
            None => Ok(()),
        });
        if let Err(e) = checked {
            // The state may be partly changed: nothing more may be appended or snapshotted.
            let why = format!("a version edit recovery would reject was refused: {e}");
            self.failed = Some(why.clone());
            return Err(Error::invalid(why));
        }
        self.size = self.writer.add_record(&edit.encode())?;
        if crate::testing::enabled("manifest.append_sync") {
            self.writer.sync()?;
        }
        if self.size > self.rollover_size(env.max_file_size) {
            self.roll_over(env)?;
        }
        Ok(())
    }

    /// The size past which the manifest rolls over: `max_file_size`, but at least twice its
    /// snapshot, so rolling over never costs more than the edits appended since (a database of
    /// many files whose snapshot alone passes `max_file_size` would otherwise roll over at
    /// every edit).
    pub fn rollover_size(&self, max_file_size: u64) -> u64 {
        max_file_size.max(self.snapshot_bytes.saturating_mul(2))
    }

    /// The live blob files the manifest describes, with their garbage.
    pub fn blobs(&self) -> &BTreeMap<u64, crate::sst::blob::BlobMeta> {
        &self.state.blobs
    }

    /// Number of the manifest file.
    pub fn number(&self) -> u64 {
        self.state.manifest_number
    }

    /// Replaces this manifest by a new one holding a snapshot of its state. Every appended edit
    /// is already synced here, so a crash anywhere leaves `CURRENT` naming a manifest that
    /// holds every edit: the old one, or the new complete one (`Manifest::create`); the old
    /// file is removed only once `CURRENT` names the new one durably. A failure leaves the
    /// manifest refusing further edits: after a failed rename or directory sync of `CURRENT`
    /// the engine cannot know which manifest the next open reads, so no later edit has a
    /// durable place; and a failed write or sync of the new files is a failing device, which
    /// the engine never retries (docs/format.md#manifest).
    fn roll_over(&mut self, env: &Rollover<'_>) -> Result<()> {
        let number = env.next_file.fetch_add(1, Ordering::SeqCst);
        let mut snapshot = self.state.snapshot_edit();
        // Above every number handed out, this manifest's and those of files a running flush or
        // compaction is writing but no edit names yet.
        let next = env.next_file.load(Ordering::SeqCst).max(self.state.next_file_number);
        snapshot.next_file_number = Some(next);
        match Manifest::create(env.storage, env.dir, number, &snapshot) {
            Ok(new) => {
                let old = std::mem::replace(self, new);
                // Best effort: a manifest `CURRENT` does not name is removed by the next open.
                let _ = env.storage.remove(&join(env.dir, &filename::manifest_name(old.number())));
                Ok(())
            }
            Err(e) => {
                let name = filename::manifest_name(number);
                self.failed = Some(format!("rolling the manifest over to {name} failed: {e}"));
                Err(e)
            }
        }
    }
}

/// Points `CURRENT` at manifest `number`: write and sync `CURRENT.tmp`, rename it over `CURRENT`,
/// sync the directory.
fn set_current(storage: &dyn Storage, dir: &Path, number: u64) -> Result<()> {
    let tmp = join(dir, filename::CURRENT_TMP);
    let mut f = storage.create(&tmp)?;
    f.append(format!("{}\n", filename::manifest_name(number)).as_bytes())?;
    if crate::testing::enabled("current.sync") {
        f.sync()?;
    }
    drop(f);
    storage.rename(&tmp, &join(dir, filename::CURRENT))?;
    if crate::testing::enabled("current.sync_dir") {
        storage.sync_dir(dir)?;
    }
    Ok(())
}

/// The database state a manifest describes.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveredState {
    /// Number of the manifest that was replayed.
    pub manifest_number: u64,
    /// Live files per level (`MAX_LEVELS` entries), keyed by file number.
    pub levels: Vec<BTreeMap<u64, FileMeta>>,
    /// WALs numbered below this are obsolete.
    pub log_number: u64,
    /// The next unused file number.
    pub next_file_number: u64,
    /// The largest sequence number made durable in a table.
    pub last_sequence: u64,
    /// Live keyspaces other than the default, by id (each as its last tag-6 edit recorded it).
    pub keyspaces: BTreeMap<u32, KeyspaceRecord>,
    /// Ids of dropped keyspaces (never reused).
    pub dropped_keyspaces: BTreeSet<u32>,
    /// The default keyspace's TTL and compaction filter name (its last tag-8 record).
    pub default_lifecycle: crate::keyspace_options::Lifecycle,
    /// Live blob files by number, with their garbage so far (a file whose values are all
    /// garbage leaves the set: it is obsolete).
    pub blobs: BTreeMap<u64, crate::sst::blob::BlobMeta>,
    /// Edits replayed.
    pub edits: usize,
    /// Whether a torn last edit was dropped.
    pub torn_tail: bool,
}

impl RecoveredState {
    /// The state of a database with no files, as recovery starts it (and as a new database is).
    pub fn empty(manifest_number: u64) -> RecoveredState {
        RecoveredState {
            manifest_number,
            levels: vec![BTreeMap::new(); MAX_LEVELS],
            log_number: 0,
            next_file_number: 0,
            last_sequence: 0,
            keyspaces: BTreeMap::new(),
            dropped_keyspaces: BTreeSet::new(),
            default_lifecycle: Default::default(),
            blobs: BTreeMap::new(),
            edits: 0,
            torn_tail: false,
        }
    }

    /// Applies an edit: keyspaces created or updated (an id must not be dropped, a name not
    /// taken by another id), deletions (each must name a live file at that level), additions
    /// (each number must not be live anywhere, its keyspace must be live), keyspaces dropped
    /// (no file of theirs may remain), then the counters it sets. On error the state may be
    /// partly changed.
    pub fn apply(&mut self, edit: &VersionEdit) -> Result<()> {
        for k in &edit.keyspaces {
            if self.dropped_keyspaces.contains(&k.id) {
                return Err(Error::invalid(format!("edit recreates dropped keyspace id {}", k.id)));
            }
            let taken = self.keyspaces.values().any(|o| o.id != k.id && o.name == k.name)
                || k.name == crate::keyspace_options::DEFAULT_KEYSPACE_NAME;
            if taken {
                let msg =
                    format!("edit names keyspace {} {:?}, a name already taken", k.id, k.name);
                return Err(Error::invalid(msg));
            }
            self.keyspaces.insert(k.id, k.clone());
        }
        for &(level, number) in &edit.deleted {
            let files = self.levels.get_mut(level as usize);
            if files.and_then(|f| f.remove(&number)).is_none() {
                let msg = format!("edit deletes file {number}, which is not live at level {level}");
                return Err(Error::invalid(msg));
            }
        }
        for (level, meta) in &edit.added {
            if self.levels.iter().any(|f| f.contains_key(&meta.number)) {
                return Err(Error::invalid(format!("edit adds live file {} again", meta.number)));
            }
            if meta.keyspace != 0 && !self.keyspaces.contains_key(&meta.keyspace) {
                let msg = format!(
                    "edit adds file {} of keyspace {}, which is not live",
                    meta.number, meta.keyspace
                );
                return Err(Error::invalid(msg));
            }
            let Some(files) = self.levels.get_mut(*level as usize) else {
                return Err(Error::invalid(format!("edit adds a file at level {level}")));
            };
            files.insert(meta.number, meta.clone());
        }
        for b in &edit.blob_files {
            let live = self.levels.iter().any(|f| f.contains_key(&b.number));
            if live || self.blobs.contains_key(&b.number) {
                return Err(Error::invalid(format!("edit adds live file {} again", b.number)));
            }
            if b.keyspace != 0 && !self.keyspaces.contains_key(&b.keyspace) {
                let msg = format!(
                    "edit adds blob file {} of keyspace {}, which is not live",
                    b.number, b.keyspace
                );
                return Err(Error::invalid(msg));
            }
            if b.count == 0 {
                return Err(Error::invalid(format!(
                    "edit adds blob file {} of no values",
                    b.number
                )));
            }
            let meta =
                crate::sst::blob::BlobMeta { garbage_count: 0, garbage_bytes: 0, ..b.clone() };
            self.blobs.insert(b.number, meta);
        }
        for &(number, count, bytes) in &edit.blob_garbage {
            let Some(b) = self.blobs.get_mut(&number) else {
                let msg = format!("edit adds garbage to blob file {number}, which is not live");
                return Err(Error::invalid(msg));
            };
            b.garbage_count = b.garbage_count.saturating_add(count);
            b.garbage_bytes = b.garbage_bytes.saturating_add(bytes);
            if b.garbage_count > b.count || b.garbage_bytes > b.bytes {
                let msg = format!(
                    "edit makes blob file {number}'s garbage ({} values, {} bytes) exceed its \
                     contents ({} values, {} bytes)",
                    b.garbage_count, b.garbage_bytes, b.count, b.bytes
                );
                return Err(Error::invalid(msg));
            }
            if b.all_garbage() {
                self.blobs.remove(&number);
            }
        }
        for &id in &edit.dropped_keyspaces {
            self.keyspaces.remove(&id);
            self.dropped_keyspaces.insert(id);
            // A dropped keyspace's blob files go with its tables.
            self.blobs.retain(|_, b| b.keyspace != id);
            let left = self.levels.iter().flat_map(|l| l.values()).find(|f| f.keyspace == id);
            if let Some(f) = left {
                let msg = format!("edit drops keyspace {id} but leaves its file {}", f.number);
                return Err(Error::invalid(msg));
            }
        }
        if let Some(life) = &edit.default_lifecycle {
            self.default_lifecycle = life.clone();
        }
        self.log_number = edit.log_number.unwrap_or(self.log_number);
        self.next_file_number = edit.next_file_number.unwrap_or(self.next_file_number);
        self.last_sequence = edit.last_sequence.unwrap_or(self.last_sequence);
        self.edits += 1;
        Ok(())
    }

    /// What is wrong if a live file's number is not below the next file number (recovery's
    /// check of a whole manifest, which [`Manifest::append`] makes after every edit).
    fn misnumbered_file(&self) -> Option<String> {
        let max_file = self.levels.iter().filter_map(|f| f.keys().next_back()).max();
        let max_file = max_file.max(self.blobs.keys().next_back());
        let next = self.next_file_number;
        max_file
            .filter(|&&n| n >= next)
            .map(|n| format!("live file {n} is not below next file number {next}"))
    }

    /// One edit that recreates this state (for the first record of a new manifest).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit {
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            ..VersionEdit::default()
        };
        for (level, files) in self.levels.iter().enumerate() {
            edit.added.extend(files.values().map(|f| (level as u32, f.clone())));
        }
        edit.keyspaces = self.keyspaces.values().cloned().collect();
        edit.dropped_keyspaces = self.dropped_keyspaces.iter().copied().collect();
        edit.default_lifecycle =
            (!self.default_lifecycle.is_empty()).then(|| self.default_lifecycle.clone());
        edit.blob_files = self.blobs.values().cloned().collect();
        edit.blob_garbage = (self.blobs.values())
            .filter(|b| b.garbage_count > 0)
            .map(|b| (b.number, b.garbage_count, b.garbage_bytes))
            .collect();
        edit
    }

    /// The id the next created keyspace gets: one above every id ever created or dropped.
    pub fn next_keyspace_id(&self) -> u32 {
        let live = self.keyspaces.keys().next_back().copied().unwrap_or(0);
        let dropped = self.dropped_keyspaces.iter().next_back().copied().unwrap_or(0);
        live.max(dropped) + 1
    }
}

/// Replays the manifest named by `dir/CURRENT`. `Ok(None)` when there is no `CURRENT` (no
/// database here). A torn last edit is dropped (an edit applies entirely or not at all);
/// anything else wrong is [`Error::Corruption`] naming `CURRENT` or the manifest.
pub fn recover(storage: &dyn Storage, dir: &Path) -> Result<Option<RecoveredState>> {
    let current = join(dir, filename::CURRENT);
    if !storage.exists(&current)? {
        return Ok(None);
    }
    let bad_current = |what: String| Error::corruption(what, Some(0)).in_file(&current, 0);
    let file = storage.open(&current)?;
    // A manifest name is short; do not allocate for a garbage CURRENT of any size.
    if file.len() > 64 {
        return Err(bad_current(format!("CURRENT is {} bytes long", file.len())));
    }
    let content = file.read_at(0, file.len() as usize)?;
    let name = std::str::from_utf8(&content)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .ok_or_else(|| bad_current("CURRENT is not a manifest name and a newline".into()))?;
    let number = match filename::parse_file_name(name) {
        Some((FileKind::Manifest, n)) => n,
        _ => return Err(bad_current(format!("CURRENT names {name:?}, not a manifest"))),
    };
    let path = join(dir, name);
    if !storage.exists(&path)? {
        return Err(bad_current(format!("CURRENT names {name}, which does not exist")));
    }
    let mut reader = WalReader::new(storage.open(&path)?, &path);
    let mut state = RecoveredState::empty(number);
    let mut seen = [false; 3];
    loop {
        let start = reader.valid_len();
        let Some(record) = reader.next_record()? else { break };
        let index = state.edits;
        let fail = |e: Error| {
            let why = match e {
                Error::Corruption { what, offset: Some(at), .. } => {
                    format!("{what} (edit byte {at})")
                }
                Error::InvalidArgument(what) => what,
                other => other.to_string(),
            };
            let what = format!("version edit {index} (after log offset {start}): {why}");
            Error::corruption(what, Some(start)).in_file(&path, 0)
        };
        let edit = VersionEdit::decode(&record).map_err(fail)?;
        seen[0] |= edit.log_number.is_some();
        seen[1] |= edit.next_file_number.is_some();
        seen[2] |= edit.last_sequence.is_some();
        state.apply(&edit).map_err(fail)?;
    }
    state.torn_tail = reader.torn_tail();
    let end = reader.valid_len();
    let corrupt = |what: String| Error::corruption(what, Some(end)).in_file(&path, 0);
    if seen != [true; 3] {
        return Err(corrupt("manifest never sets log, next-file and sequence numbers".into()));
    }
    if let Some(what) = state.misnumbered_file() {
        return Err(corrupt(what));
    }
    Ok(Some(state))
}
