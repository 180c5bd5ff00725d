//! [`FsStorage`]: the [`Storage`] trait over the real file system (`std::fs`).
//!
//! Mapping of the durability model onto POSIX:
//! * `WritableFile::append` is one `write(2)` of the whole slice (no user-space buffer), so
//!   appended bytes survive a process crash; they survive a power loss only after
//!   `WritableFile::sync` (`fdatasync`, via [`File::sync_data`]).
//! * `Storage::sync_dir` opens the directory and calls `fsync` on it ([`File::sync_all`]),
//!   which makes creations, renames and removals in it durable.
//! * `Storage::lock` takes an advisory `flock`-style exclusive lock ([`File::try_lock`]) on the
//!   LOCK file. On Linux such a lock belongs to the open file description, so a second `lock` of
//!   the same path fails even inside one process. The lock is released when the guard drops:
//!   it unlocks explicitly before closing the file, because a forked child shares the open
//!   file description (and with it the lock) until it execs.
//!
//! * [`Storage::open_immutable`] (finished SSTs) maps the file read-only when the storage was
//!   built with [`FsStorage::with_mmap`]`(true)` on a 64-bit unix target; the table reader then
//!   borrows block bytes from the map ([`RandomAccessFile::as_bytes`]) instead of `pread`ing
//!   a copy. See the SAFETY paragraph in `open_immutable` for the one hazard.
//!
//! * With [`FsStorage::with_direct_io`], [`Storage::open_immutable`] reads with `O_DIRECT`
//!   (no map, no page cache) and [`Storage::create_immutable`] writes with `O_DIRECT`; see
//!   `storage::direct`. WALs, the manifest and CURRENT always use buffered I/O.
//!
//! Every `std::io::Error` becomes [`Error::Io`] whose context names the operation and the path.

use super::direct::{DirectReadFile, DirectWritableFile};
use super::{DirLock, RandomAccessFile, Storage, WritableFile};
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The real file system. Holds no state beyond its settings (whether finished SSTs are
/// memory-mapped, read or written with direct I/O): every method works on the paths it is
/// given.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsStorage {
    mmap: bool,
    mmap_wal: bool,
    direct_reads: bool,
    direct_writes: bool,
}

impl FsStorage {
    /// A handle on the real file system that reads every file with `pread`.
    pub fn new() -> FsStorage {
        FsStorage::default()
    }

    /// This handle with direct I/O for finished SSTs: `reads` opens them with `O_DIRECT` in
    /// [`Storage::open_immutable`] (and then no file is mapped), `writes` creates them with
    /// `O_DIRECT` in [`Storage::create_immutable`]. See [`crate::Options::direct_reads`].
    pub fn with_direct_io(self, reads: bool, writes: bool) -> FsStorage {
        FsStorage { direct_reads: reads, direct_writes: writes, ..self }
    }

    /// A handle that memory-maps the files opened with [`Storage::open_immutable`] when `mmap`
    /// is true and the target is 64-bit unix (elsewhere it is the same as [`FsStorage::new`]).
    /// See [`crate::Options::mmap_reads`] for the trade-off and the hazard.
    pub fn with_mmap(mmap: bool) -> FsStorage {
        FsStorage { mmap: mmap && MMAP_SUPPORTED, ..FsStorage::default() }
    }

    /// This handle appending write-ahead logs ([`Storage::create_log`]) through a shared
    /// memory map when `mmap_wal` is true and the target is 64-bit Linux (see
    /// [`crate::Options::mmap_wal`]). A file system that cannot reserve space with `fallocate`
    /// gets `write(2)` appends instead.
    pub fn with_mmap_wal(self, mmap_wal: bool) -> FsStorage {
        FsStorage { mmap_wal: mmap_wal && MMAP_WAL_SUPPORTED, ..self }
    }

    /// Whether this handle maps immutable files.
    pub fn mmap(&self) -> bool {
        self.mmap
    }
}

/// Mapping is used only where a file's length always fits the address space.
const MMAP_SUPPORTED: bool = cfg!(all(unix, target_pointer_width = "64"));

/// Where [`FsStorage::with_mmap_wal`] applies (`fallocate(2)` is Linux's).
const MMAP_WAL_SUPPORTED: bool = cfg!(all(target_os = "linux", target_pointer_width = "64"));

fn io_err(op: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{op} {}", path.display()), e)
}

/// A file open for appending; `len` counts the bytes written through this handle (the file was
/// created empty, so it is also the file's length).
struct FsWritableFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl WritableFile for FsWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file.write_all(data).map_err(|e| io_err("appending to", &self.path, e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| io_err("syncing", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// A file open for positional reads; the length is taken once, at open. `map`, when present,
/// covers exactly `len` bytes and serves every read.
struct FsRandomAccessFile {
    file: File,
    path: PathBuf,
    len: u64,
    map: Option<memmap2::Mmap>,
}

impl RandomAccessFile for FsRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if !matches!(end, Some(end) if end <= self.len) {
            return Err(Error::corruption(
                format!("read of {} bytes past the end of a {}-byte file", buf.len(), self.len),
                Some(offset),
            )
            .in_file(&self.path, 0));
        }
        if let Some(map) = &self.map {
            // In bounds: `end <= len == map.len()`, checked above.
            let at = offset as usize;
            buf.copy_from_slice(&map[at..at + buf.len()]);
            return Ok(());
        }
        self.file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                // The file shrank after it was opened: the bytes its metadata promised are gone.
                Error::corruption(
                    format!("short read of {} bytes (file shrank after open)", buf.len()),
                    Some(offset),
                )
                .in_file(&self.path, 0)
            } else {
                io_err("reading", &self.path, e)
            }
        })
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn as_bytes(&self) -> Option<&[u8]> {
        self.map.as_deref()
    }

    fn release_pages(&self) {
        if let Some(map) = &self.map {
            // SAFETY: `MADV_DONTNEED` on this read-only shared file mapping (memmap2's `map`
            // is `MAP_SHARED`) only unmaps its pages: the next access faults the same file
            // bytes in again, so every slice borrowed from the map keeps its contents (the
            // file is immutable while open: the `mmap_reads` contract). It never zeroes
            // anything, which only a private or anonymous mapping would see.
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

/// Holds the open LOCK file; dropping it releases the lock.
struct FsDirLock {
    file: File,
}

impl DirLock for FsDirLock {}

impl Drop for FsDirLock {
    fn drop(&mut self) {
        // Closing the descriptor alone is not enough: the lock belongs to the open file
        // description, and a child this process forked (another thread spawning a command)
        // shares it until the child execs or exits, keeping the directory locked after close.
        // Unlocking releases it for every descriptor of the description. An error leaves the
        // close to release it, as before.
        let _ = self.file.unlock();
    }
}

/// Creates (or truncates) `path` with `opts`, refusing a symbolic link at `path`
/// (`O_NOFOLLOW`): the engine writes only files it names in its own directory, and a link
/// planted under one of those names (`CURRENT.tmp`, a WAL) must not make it truncate and
/// overwrite the link's target.
fn create_no_follow(opts: &mut OpenOptions, path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    opts.create(true).truncate(true).custom_flags(libc::O_NOFOLLOW).open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            let why = format!("refusing to create {}: it is a symbolic link", path.display());
            Error::io(why, e)
        } else {
            io_err("creating", path, e)
        }
    })
}

impl Storage for FsStorage {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = create_no_follow(OpenOptions::new().write(true), path)?;
        Ok(Box::new(FsWritableFile { file, path: path.to_path_buf(), len: 0 }))
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        if self.mmap_wal {
            // Read and write: a shared writable map needs both.
            let file = create_no_follow(OpenOptions::new().read(true).write(true), path)?;
            let window = super::mmap_log::WINDOW_BYTES;
            return Ok(match super::mmap_log::MmapLogFile::new(file, path, window) {
                Ok(log) => Box::new(log),
                Err(file) => Box::new(FsWritableFile { file, path: path.to_path_buf(), len: 0 }),
            });
        }
        self.create(path)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| io_err("opening", path, e))?;
        let len = file.metadata().map_err(|e| io_err("reading metadata of", path, e))?.len();
        Ok(Arc::new(FsRandomAccessFile { file, path: path.to_path_buf(), len, map: None }))
    }

    fn open_immutable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        if self.direct_reads {
            return Ok(Arc::new(DirectReadFile::open(path)?));
        }
        let file = File::open(path).map_err(|e| io_err("opening", path, e))?;
        let len = file.metadata().map_err(|e| io_err("reading metadata of", path, e))?.len();
        // An empty file has nothing to map (and mmap(2) rejects a zero length).
        let map = if self.mmap && len > 0 {
            // SAFETY: `Mmap` hands out `&[u8]` into the mapping, which Rust assumes no one
            // changes while borrowed. Callers of `open_immutable` promise the file is finished:
            // siftdb never writes, truncates or renames over an SST after it is synced, it only
            // unlinks it, and an unlinked file stays mapped and intact until the map is dropped.
            // The remaining hazard is outside siftdb's control: another process that truncates
            // or rewrites the file in place while it is open makes accesses past the new end
            // raise SIGBUS (killing the process) and rewritten bytes appear under live borrows.
            // That is the same contract as RocksDB's `allow_mmap_reads`, and it is stated in
            // `Options::mmap_reads`, which turns mapping off. CRCs are still checked on every
            // block read from the map.
            let map = unsafe { memmap2::MmapOptions::new().len(len as usize).map(&file) };
            Some(map.map_err(|e| io_err("mapping", path, e))?)
        } else {
            None
        };
        Ok(Arc::new(FsRandomAccessFile { file, path: path.to_path_buf(), len, map }))
    }

    fn create_immutable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.direct_writes {
            return Ok(Box::new(DirectWritableFile::create(path)?));
        }
        self.create(path)
    }

    fn check_io_modes(&self, path: &Path) -> Result<()> {
        if self.direct_reads || self.direct_writes {
            super::direct::probe(path)?;
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to)
            .map_err(|e| Error::io(format!("renaming {} to {}", from.display(), to.display()), e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| io_err("removing", path, e))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let file =
            OpenOptions::new().write(true).open(path).map_err(|e| io_err("opening", path, e))?;
        file.set_len(len).map_err(|e| io_err("truncating", path, e))?;
        file.sync_all().map_err(|e| io_err("syncing truncated", path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io_err("listing", dir, e))? {
            let entry = entry.map_err(|e| io_err("listing", dir, e))?;
            // Names that are not UTF-8 cannot be siftdb files; skip them rather than fail.
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| io_err("checking existence of", path, e))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| io_err("creating directory", dir, e))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        // `remove_dir` (rmdir) fails on a non-empty directory: it cannot delete a file.
        std::fs::remove_dir(dir).map_err(|e| io_err("removing directory", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = File::open(dir).map_err(|e| io_err("opening directory", dir, e))?;
        d.sync_all().map_err(|e| io_err("syncing directory", dir, e))
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        let f = File::open(path).map_err(|e| io_err("opening", path, e))?;
        f.sync_all().map_err(|e| io_err("syncing", path, e))
    }

    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        match std::fs::hard_link(from, to) {
            Ok(()) => Ok(()),
            // Another file system (EXDEV) or one without hard links: copy instead.
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                super::copy_file(self, from, to)
            }
            Err(e) => Err(io_err("linking", to, e)),
        }
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_err("opening lock file", path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(FsDirLock { file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked(path.to_path_buf())),
            Err(std::fs::TryLockError::Error(e)) => Err(io_err("locking", path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The resident KiB of the mapping that starts at `start` (`/proc/self/smaps`).
    #[cfg(target_os = "linux")]
    fn mapped_rss_kib(start: *const u8) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{:x}-", start as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        assert!(lines.next().is_some(), "no mapping starts at {start:p}");
        let rss = lines.find(|l| l.starts_with("Rss:")).unwrap();
        rss.trim_start_matches("Rss:").trim().trim_end_matches("kB").trim().parse().unwrap()
    }

    #[test]
    fn mapped_and_pread_files_return_identical_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.sst");
        let mut rng = SplitMix64::new(11);
        let data: Vec<u8> = (0..70_000).map(|_| rng.next_u64() as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let plain = FsStorage::new().open_immutable(&path).unwrap();
        let mapped = FsStorage::with_mmap(true).open_immutable(&path).unwrap();
        assert!(plain.as_bytes().is_none());
        if MMAP_SUPPORTED {
            assert_eq!(mapped.as_bytes(), Some(&data[..]));
        }
        // `open` never maps: WALs and manifests are read with pread.
        assert!(FsStorage::with_mmap(true).open(&path).unwrap().as_bytes().is_none());
        for _ in 0..200 {
            let off = rng.next_u64() % data.len() as u64;
            let len = (rng.next_u64() % 5000) as usize;
            let (a, b) = (plain.read_at(off, len), mapped.read_at(off, len));
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b);
                    assert_eq!(&a[..], &data[off as usize..off as usize + len]);
                }
                (Err(a), Err(b)) => assert!(a.is_corruption() && b.is_corruption(), "{a} / {b}"),
                (a, b) => panic!("paths disagree at {off}+{len}: {a:?} vs {b:?}"),
            }
        }
        // Released pages leave the process (the mapping's resident size drops to zero) and
        // come back with the same bytes, also through a slice borrowed before.
        if MMAP_SUPPORTED {
            let before = mapped.as_bytes().unwrap();
            #[cfg(target_os = "linux")]
            {
                let sum: u64 = before.iter().map(|&b| b as u64).sum();
                assert!(sum > 0 && mapped_rss_kib(before.as_ptr()) > 0, "every page was read");
                mapped.release_pages();
                assert_eq!(mapped_rss_kib(before.as_ptr()), 0, "released pages are unmapped");
            }
            mapped.release_pages();
            assert_eq!(before, &data[..]);
            mapped.release_pages();
            assert_eq!(mapped.read_at(65_000, 5000).unwrap(), &data[65_000..70_000]);
        }
        let e = mapped.read_at(u64::MAX - 1, 4).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        // An empty file opens unmapped and reads nothing.
        std::fs::write(&path, b"").unwrap();
        let empty = FsStorage::with_mmap(true).open_immutable(&path).unwrap();
        assert!(empty.as_bytes().is_none() && empty.is_empty());
    }
}
