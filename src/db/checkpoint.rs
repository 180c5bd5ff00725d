//! `Db::checkpoint(dir)`: a consistent, openable copy of the database in a new directory, as
//! RocksDB's `Checkpoint::CreateCheckpoint` makes one: finished SSTs hard-linked (copied across
//! file systems), the live WALs copied, and a new manifest describing exactly those files.
//!
//! Consistency: the copy is taken while holding the writer lock (no write is acknowledged
//! meanwhile) and the manifest lock (no flush or compaction installs meanwhile), after syncing
//! the WAL: the checkpoint holds every write acknowledged before the call and none after it.
//! To keep that pause short the memtable is flushed first, so the WALs copied under the locks
//! hold only the writes since. Opening the checkpoint replays those WALs as any open does.
//!
//! Crash safety of the copy: every file is synced, the directory synced, and CURRENT is written
//! last (`Manifest::create`), so an interrupted checkpoint is a directory without a valid
//! CURRENT, which `Db::open` refuses to treat as a database with data (and `Db::destroy` as
//! one at all); the caller removes it.

use super::{flush, DbInner};
use crate::error::{Error, Result};
use crate::filename;
use crate::manifest::{Manifest, VersionEdit};
use std::path::Path;
use std::sync::atomic::Ordering;

pub(crate) fn checkpoint(inner: &DbInner, target: &Path) -> Result<()> {
    let storage = &*inner.storage;
    if storage.exists(target)? {
        return Err(Error::invalid(format!(
            "checkpoint directory {} already exists; a checkpoint is written to a new directory",
            target.display()
        )));
    }
    flush::flush_and_wait(inner)?;
    let mut w = inner.writer.lock();
    inner.check_writable()?;
    if let Err(e) = w.wal.sync() {
        inner.set_bg_error(&e);
        return Err(e);
    }
    let manifest = inner.manifest.lock();
    let sv = inner.super_version();
    // The new directory's own entry, and those of any parents made for it, must survive a
    // power loss too.
    crate::storage::create_dir_all_durably(storage, target)?;

    let mut edit = VersionEdit::default();
    for (level, files) in sv.version.levels().iter().enumerate() {
        for f in files {
            let name = filename::sst_name(f.meta.number);
            storage.link_or_copy(&inner.dir.join(&name), &target.join(&name))?;
            edit.added.push((level as u32, f.meta.clone()));
        }
    }
    // The live blob files, with their garbage so far (under the manifest lock, the set the
    // version's tables refer to).
    for b in manifest.blobs().values() {
        let name = filename::blob_name(b.number);
        storage.link_or_copy(&inner.dir.join(&name), &target.join(&name))?;
        edit.blob_files.push(b.clone());
        if b.garbage_count > 0 {
            edit.blob_garbage.push((b.number, b.garbage_count, b.garbage_bytes));
        }
    }
    // The WALs of the memtables not yet flushed (the active one and any frozen ones), so the
    // checkpoint's open replays exactly the writes no table holds.
    let mut wals: Vec<u64> =
        std::iter::once(&sv.mem).chain(sv.imm.iter()).map(|m| m.wal_number()).collect();
    wals.sort_unstable();
    wals.dedup();
    for &n in &wals {
        let name = filename::wal_name(n);
        crate::storage::copy_file(storage, &inner.dir.join(&name), &target.join(&name))?;
    }
    let manifest_number = inner.new_file_number();
    edit.log_number = Some(wals[0]);
    edit.next_file_number = Some(inner.next_file.load(Ordering::SeqCst));
    edit.last_sequence = Some(w.last_seq);
    let keyspaces = inner.keyspaces.load();
    edit.keyspaces = keyspaces.records();
    edit.dropped_keyspaces = keyspaces.dropped.iter().copied().collect();
    edit.default_lifecycle = super::open::default_lifecycle(&inner.opts);
    storage.sync_dir(target)?;
    Manifest::create(storage, target, manifest_number, &edit)?;
    drop(manifest);
    drop(w);
    Ok(())
}
