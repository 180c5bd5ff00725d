//! [`Db::destroy`]: deleting a database (RocksDB's `DestroyDB`), and nothing else.
//!
//! Rules, in the order they are checked (design.md#tool-safety):
//! 1. The directory must be a siftdb database: it has a `CURRENT` file naming a manifest that
//!    reads back without error. Anything else is [`Error::NotADatabase`] and nothing is touched
//!    (no file is read for writing, not even the LOCK file is created).
//! 2. The database must not be open: destroy takes the LOCK itself, so an open `Db` (in this
//!    process or another) makes it fail with [`Error::Locked`], again touching nothing.
//! 3. Only names siftdb produces are deleted ([`crate::filename::parse_file_name`]: `CURRENT`,
//!    `CURRENT.tmp`, `LOCK`, `MANIFEST-nnnnnn`, `nnnnnn.log`, `nnnnnn.sst`). Every other entry,
//!    file or subdirectory, stays; the directory itself is removed only if it is then empty.
//!
//! Crash safety: files go in an order that leaves, at every step, a directory that is either
//! still a database (`CURRENT` and its manifest are deleted after every table and WAL, so a
//! second `destroy` finishes the job) or what an interrupted creation leaves (a manifest and
//! LOCK without `CURRENT`, which `Db::open` accepts as a new, empty database).

use super::Db;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::manifest;
use crate::options::Options;
use crate::storage::{FsStorage, Storage};
use std::path::Path;
use std::sync::Arc;

impl Db {
    /// Deletes the siftdb database in directory `path` on the real file system: its tables,
    /// WALs, manifests, `CURRENT` and `LOCK`, then the directory if nothing else is left in it.
    /// Refuses, touching nothing, a directory that is not a siftdb database
    /// ([`Error::NotADatabase`]: no `CURRENT`, or a manifest that does not read back) and a
    /// database that is open ([`Error::Locked`]). Files siftdb did not name are never deleted.
    pub fn destroy(path: impl AsRef<Path>) -> Result<()> {
        destroy(&FsStorage::new(), path.as_ref())
    }

    /// [`Db::destroy`] through the file system of `opts.storage` (the real one when `None`);
    /// the other fields of `opts` are not used.
    pub fn destroy_with(path: impl AsRef<Path>, opts: &Options) -> Result<()> {
        let storage: Arc<dyn Storage> =
            opts.storage.clone().unwrap_or_else(|| Arc::new(FsStorage::new()));
        destroy(&*storage, path.as_ref())
    }
}

/// Deletion rank of a siftdb file: lower goes first (module doc, crash safety).
fn rank(kind: FileKind, number: u64, live_manifest: u64) -> u8 {
    match kind {
        FileKind::Sst | FileKind::Blob | FileKind::Wal | FileKind::CurrentTmp => 0,
        FileKind::Manifest if number != live_manifest => 0,
        FileKind::Current => 1,
        FileKind::Manifest => 2,
        FileKind::Lock => 3,
    }
}

fn destroy(storage: &dyn Storage, dir: &Path) -> Result<()> {
    let not_db = |why: String| Error::NotADatabase { dir: dir.to_path_buf(), why };
    if !storage.exists(dir)? {
        return Err(not_db("it does not exist".into()));
    }
    let state = match manifest::recover(storage, dir) {
        Ok(Some(state)) => state,
        Ok(None) => return Err(not_db(format!("it has no {} file", filename::CURRENT))),
        Err(e) => return Err(not_db(format!("its manifest does not read back ({e})"))),
    };
    // Held until every file is gone, so no `Db::open` can start in between. Deleting a locked
    // file is allowed (POSIX locks belong to the open file, not the name).
    let lock = storage.lock(&dir.join(filename::LOCK))?;
    let mut ours: Vec<(u8, String)> = storage
        .list(dir)?
        .into_iter()
        .filter_map(|name| {
            let (kind, n) = filename::parse_file_name(&name)?;
            Some((rank(kind, n, state.manifest_number), name))
        })
        .collect();
    ours.sort();
    for (_, name) in &ours {
        storage.remove(&dir.join(name))?;
    }
    drop(lock);
    if storage.list(dir)?.is_empty() {
        storage.remove_dir(dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletion_order_keeps_the_live_manifest_and_current_until_the_data_is_gone() {
        let live = 9;
        let r = |k, n| rank(k, n, live);
        assert!(r(FileKind::Sst, 12) < r(FileKind::Current, 0));
        assert!(r(FileKind::Wal, 13) < r(FileKind::Current, 0));
        assert!(r(FileKind::Manifest, 3) < r(FileKind::Current, 0));
        assert!(r(FileKind::Current, 0) < r(FileKind::Manifest, live));
        assert!(r(FileKind::Manifest, live) < r(FileKind::Lock, 0));
    }
}
