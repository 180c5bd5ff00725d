//! All file I/O of the engine goes through [`Storage`], so tests can run the engine over an
//! in-memory file system that drops unsynced data, deletes files whose directory entry was never
//! synced, or fails the Nth operation.
//!
//! Durability model (what the engine may rely on, and what the in-memory implementation
//! simulates on a crash):
//! 1. Bytes appended to a file are durable only after [`WritableFile::sync`] returns `Ok`.
//! 2. A newly created, renamed or removed directory entry is durable only after
//!    [`Storage::sync_dir`] on its directory returns `Ok`.
//! 3. After a failed `sync` nothing is known about what reached the disk; the caller must not
//!    retry the sync and treat the data as possibly lost.

use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod direct;
pub mod fs;
pub mod mem;
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod mmap_log;
pub(crate) mod uring;

#[cfg(test)]
mod conformance;

pub use fs::FsStorage;
pub use mem::MemStorage;

/// A file open for appending (WAL, SST being written, manifest).
pub trait WritableFile: Send + Sync {
    /// Appends bytes at the end of the file.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Makes every appended byte durable (fdatasync).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far (the file's logical length).
    fn len(&self) -> u64;
    /// Ends appending: the file's length becomes [`WritableFile::len`] (an implementation that
    /// reserved space beyond it, as the mapped log does, gives it back); durable after the next
    /// [`WritableFile::sync`]. Later appends fail. Default: nothing to do.
    fn close(&mut self) -> Result<()> {
        Ok(())
    }
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file open for positional reads (SST, WAL and manifest during recovery).
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`. Reading past the end of the file is an error (a corruption
    /// error: the caller asked for bytes its metadata said exist).
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The file's length in bytes.
    fn len(&self) -> u64;
    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The whole file as one borrowed slice of exactly [`RandomAccessFile::len`] bytes, when
    /// the implementation holds it in memory (a memory-mapped file, an in-memory file); readers
    /// may then borrow block bytes instead of copying them. Default `None`: use the reads.
    fn as_bytes(&self) -> Option<&[u8]> {
        None
    }
    /// A hint that this reader is done with the file for a while: a memory-mapped file drops
    /// its pages from the process's page tables (they stay in the page cache, and a later
    /// read maps them again), so a one-pass reader such as compaction does not leave the
    /// whole file counted in the process's RSS. Default: nothing.
    fn release_pages(&self) {}
    /// The file descriptor when every read of this file is a device read with `O_DIRECT`
    /// ([`crate::Options::direct_reads`]): `Db::multi_get` then submits its block reads of
    /// such files together (src/storage/uring.rs). Default `None`.
    fn direct_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }
    /// Reads `len` bytes at `offset` into a new vector.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0; len];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
}

/// An exclusive lock on a database directory, released on drop.
pub trait DirLock: Send + Sync {}

/// The file-system operations the engine uses.
pub trait Storage: Send + Sync + 'static {
    /// Creates (or truncates) a file for appending. The new directory entry is durable only after
    /// [`Storage::sync_dir`].
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens an existing file for positional reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens a finished file that nobody will write, truncate or rename over while it is open
    /// (an SST after it was synced). An implementation may serve it from memory: see
    /// [`FsStorage::with_mmap`]. Default: [`Storage::open`].
    fn open_immutable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open(path)
    }
    /// Creates (or truncates) a file that will be written once, synced, and from then on only
    /// read (an SST written by a flush or a compaction). An implementation may write it with
    /// direct I/O: see [`FsStorage::with_direct_io`]. Default: [`Storage::create`].
    fn create_immutable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Creates (or truncates) a write-ahead log: appended to record by record, synced when a
    /// write asks for it, read only by recovery and tools. An implementation may append through
    /// a memory map: see [`FsStorage::with_mmap_wal`]. Default: [`Storage::create`].
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Checks that the file system holding `path` (an existing file siftdb created, the LOCK
    /// file) supports the I/O modes this storage was configured with, so that `Db::open` fails
    /// at once, with a clear error, instead of at the first SST read. Default: `Ok` (no special
    /// modes).
    fn check_io_modes(&self, path: &Path) -> Result<()> {
        let _ = path;
        Ok(())
    }
    /// Atomically replaces `to` with `from` (durable after `sync_dir`).
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Shortens a file to `len` bytes (used to cut a torn WAL tail).
    fn truncate(&self, path: &Path, len: u64) -> Result<()>;
    /// Names (not paths) of the files in `dir`.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Removes the directory `dir`, which must be empty (an I/O error otherwise: this never
    /// deletes a file). Used by [`crate::Db::destroy`] after it removed siftdb's own files.
    fn remove_dir(&self, dir: &Path) -> Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Makes every byte of an existing file durable (fsync through a new handle). Recovery
    /// uses it on the WALs it replays: a process killed before syncing leaves their tails with
    /// the OS only, and new synced writes must not outlive them (the no-hole rule).
    fn sync_file(&self, path: &Path) -> Result<()>;
    /// Takes the exclusive lock file `path`; fails with [`crate::Error::Locked`] if another
    /// handle holds it.
    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>>;

    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let f = self.open(path)?;
        f.read_at(0, f.len() as usize)
    }

    /// Makes `to` (which must not exist) hold the bytes of the immutable file `from`: a hard link
    /// where the file system can (`FsStorage`), else a copy; `to` is synced either way (its
    /// directory entry needs `sync_dir`). Checkpoints share finished SSTs this way.
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        copy_file(self, from, to)
    }
}

/// Copies `from` to `to` through `storage` and syncs the copy.
pub fn copy_file<S: Storage + ?Sized>(storage: &S, from: &Path, to: &Path) -> Result<()> {
    let bytes = storage.read_all(from)?;
    let mut out = storage.create(to)?;
    out.append(&bytes)?;
    out.sync()
}

/// Creates `dir` and its missing parents, then makes the entry of each directory it created
/// durable by syncing the directory holding it (`.` for a relative one-component path), top
/// down: a file later synced into `dir` then survives a power loss together with the path that
/// reaches it. Directories that existed before are left alone.
pub fn create_dir_all_durably<S: Storage + ?Sized>(storage: &S, dir: &Path) -> Result<()> {
    let mut created = Vec::new();
    for a in dir.ancestors() {
        if a.as_os_str().is_empty() || storage.exists(a)? {
            break;
        }
        created.push(a);
    }
    storage.create_dir_all(dir)?;
    for a in created.iter().rev() {
        match a.parent() {
            Some(p) if p.as_os_str().is_empty() => storage.sync_dir(Path::new("."))?,
            Some(p) => storage.sync_dir(p)?,
            None => {} // a file-system root has no entry to sync
        }
    }
    Ok(())
}

/// Joins a directory and a file name.
pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}
