//! [`MmapLogFile`]: a write-ahead log appended through a shared memory map instead of one
//! `write(2)` per record ([`crate::Options::mmap_wal`], docs/format.md#wal, "Appending
//! through a map").
//!
//! The file grows in windows of `window` bytes: each window is first reserved with
//! `fallocate(2)` (so a full disk is an error here, never a SIGBUS when a page is first
//! touched), then mapped `MAP_SHARED`; an append copies its bytes into the map. Bytes copied
//! into a shared map are in the page cache at once, so they survive a crash of the process
//! exactly as bytes passed to `write(2)` do. `sync` is `fdatasync`, which on Linux writes back
//! pages dirtied through a shared map as well.
//!
//! The file is longer than the log while it is written: the reserved, still-zero rest of the
//! window follows the last record. The WAL reader already treats a zero tail as the end of the
//! log ("Torn tail or corruption": preallocation is one of the cases it names), so a crash
//! leaves a log that recovers, and older builds read it too. `close` (at WAL rotation, followed
//! by a sync) and dropping the file cut it back to the log's length, so a log that is not the
//! newest never ends in zeros: recovery treats a tail in such a log as corruption.
//!
//! Windows start at multiples of `window` (a multiple of the page size), so each map's file
//! offset is page-aligned as `mmap(2)` requires.

use super::WritableFile;
use crate::error::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Bytes of one mapped window (a multiple of every page size in use).
pub(crate) const WINDOW_BYTES: u64 = 4 << 20;

/// See the module documentation.
pub(crate) struct MmapLogFile {
    file: File,
    path: PathBuf,
    /// Bytes appended (the log's length).
    len: u64,
    /// The mapped window `[start, start + window)`, once the first append reserved it.
    map: Option<(u64, memmap2::MmapMut)>,
    window: u64,
    /// Set by `close` (the file is cut to `len`) and by a failed append: no more appends.
    closed: bool,
}

impl MmapLogFile {
    /// Wraps a freshly created, empty `file`. Returns the file back when the file system cannot
    /// reserve space (`fallocate` unsupported) or map it, so the caller can append with
    /// `write(2)`.
    pub(crate) fn new(file: File, path: &Path, window: u64) -> std::result::Result<Self, File> {
        assert!(window > 0 && window.is_multiple_of(65536), "window must be a multiple of 64 KiB");
        match reserve_and_map(&file, path, 0, window) {
            Ok(map) => {
                let path = path.to_path_buf();
                Ok(MmapLogFile { file, path, len: 0, map: Some((0, map)), window, closed: false })
            }
            Err(_) => {
                // Nothing usable reserved: leave the file as created (empty).
                let _ = file.set_len(0);
                Err(file)
            }
        }
    }
}

/// Reserves `[start, start + window)` of `file` and maps it.
fn reserve_and_map(file: &File, path: &Path, start: u64, window: u64) -> Result<memmap2::MmapMut> {
    let err = |op: &str, e| Error::io(format!("{op} {}", path.display()), e);
    // SAFETY: plain system call on an open descriptor the caller owns.
    let rc = unsafe {
        libc::fallocate(file.as_raw_fd(), 0, start as libc::off_t, window as libc::off_t)
    };
    if rc != 0 {
        return Err(err("reserving log space in", std::io::Error::last_os_error()));
    }
    // SAFETY: `MmapMut` hands out `&mut [u8]` into the map, which Rust assumes no one else
    // changes. The log file is siftdb's own, freshly created and written only through this
    // map; readers of a live log (tools, which read with `pread`) see bytes, not borrows. A
    // process that truncates the file meanwhile makes accesses past the new end raise SIGBUS,
    // the hazard `Options::mmap_wal` states.
    let map =
        unsafe { memmap2::MmapOptions::new().offset(start).len(window as usize).map_mut(file) };
    map.map_err(|e| err("mapping", e))
}

impl WritableFile for MmapLogFile {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        if self.closed {
            return Err(Error::invalid(format!("append to closed log {}", self.path.display())));
        }
        while !data.is_empty() {
            let start = match &self.map {
                Some((start, _)) if self.len < start + self.window => *start,
                _ => {
                    let start = self.len - self.len % self.window;
                    self.map = None; // unmap the old window first (its pages stay cached)
                    let map = reserve_and_map(&self.file, &self.path, start, self.window)
                        // The record may be half copied: no later append may follow it.
                        .inspect_err(|_| self.closed = true)?;
                    self.map = Some((start, map));
                    start
                }
            };
            let (_, map) = self.map.as_mut().expect("a window is mapped");
            let at = (self.len - start) as usize;
            let take = data.len().min(map.len() - at);
            map[at..at + take].copy_from_slice(&data[..take]);
            self.len += take as u64;
            data = &data[take..];
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        // Linux's fdatasync writes back pages dirtied through shared maps too (this type is
        // built for Linux only).
        let path = &self.path;
        self.file.sync_data().map_err(|e| Error::io(format!("syncing {}", path.display()), e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn close(&mut self) -> Result<()> {
        self.map = None;
        self.closed = true;
        let path = &self.path;
        self.file.set_len(self.len).map_err(|e| Error::io(format!("cutting {}", path.display()), e))
    }
}

impl Drop for MmapLogFile {
    fn drop(&mut self) {
        // Rotation and `Db::close` close and sync the log themselves; a log dropped any other
        // way (a failed open, a panic) is cut and synced here, best effort, so that it cannot
        // come back from a power loss ending in zeros once a newer log exists.
        if !self.closed && self.close().is_ok() {
            let _ = self.file.sync_data();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{FsStorage, Storage};
    use crate::wal::{read_wal, WalWriter};

    fn records(n: usize) -> Vec<Vec<u8>> {
        // Sizes from empty to 3 windows' worth in total, some crossing 32 KiB log blocks.
        (0..n).map(|i| vec![(i % 251) as u8; (i * 7919) % 40_000]).collect()
    }

    fn open_log(dir: &Path, window: u64) -> (PathBuf, MmapLogFile) {
        let path = dir.join("000001.log");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("create");
        let log = MmapLogFile::new(file, &path, window).unwrap_or_else(|_| {
            panic!("the test directory's file system refuses fallocate");
        });
        (path, log)
    }

    #[test]
    fn records_across_windows_read_back_and_the_zero_tail_goes_at_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, log) = open_log(dir.path(), 64 << 10);
        let mut w = WalWriter::new(Box::new(log));
        let want = records(40);
        for r in &want {
            w.add_record(r).expect("append");
        }
        w.sync().expect("sync");
        let end = w.add_record(b"last").expect("append");
        let on_disk = std::fs::metadata(&path).expect("stat").len();
        assert!(on_disk > end && on_disk % (64 << 10) == 0, "reserved {on_disk} for {end}");
        drop(w);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), end, "cut to the log");
        let read = read_wal(FsStorage::new().open(&path).expect("open"), &path).expect("read");
        let mut all = want.clone();
        all.push(b"last".to_vec());
        assert_eq!(read.records, all);
        assert!(!read.torn_tail);
    }

    #[test]
    fn a_log_left_without_drop_recovers_every_record_before_its_zero_tail() {
        // What a killed process leaves: the map's bytes in the page cache, the file still
        // reserved to the end of its window.
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, log) = open_log(dir.path(), 64 << 10);
        let mut w = WalWriter::new(Box::new(log));
        let want = records(9);
        for r in &want {
            w.add_record(r).expect("append");
        }
        std::mem::forget(w);
        let read = read_wal(FsStorage::new().open(&path).expect("open"), &path).expect("read");
        assert_eq!(read.records, want);
        assert!(read.torn_tail, "the zero tail reads as a torn tail");
    }

    #[test]
    fn a_closed_log_is_cut_to_its_records_at_once_and_takes_no_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, log) = open_log(dir.path(), 64 << 10);
        let mut w = WalWriter::new(Box::new(log));
        let end = w.add_record(b"only").expect("append");
        w.close().expect("close");
        w.sync().expect("a closed log still syncs");
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), end);
        assert!(w.add_record(b"late").is_err(), "no record after close");
        drop(w);
        let read = read_wal(FsStorage::new().open(&path).expect("open"), &path).expect("read");
        assert_eq!(read.records, vec![b"only".to_vec()]);
        assert!(!read.torn_tail);
    }

    #[test]
    fn a_closed_database_leaves_its_logs_cut_to_their_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_lengths = || -> Vec<u64> {
            std::fs::read_dir(dir.path())
                .expect("list")
                .map(|e| e.expect("entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .map(|p| std::fs::metadata(p).expect("stat").len())
                .collect()
        };
        let db = crate::Db::open(dir.path(), crate::Options::default()).expect("open");
        for i in 0..100 {
            db.put(format!("k{i}"), "v").expect("put");
        }
        assert!(
            log_lengths().contains(&WINDOW_BYTES),
            "the live log is mapped: {:?}",
            log_lengths()
        );
        db.close().expect("close");
        let lengths = log_lengths();
        assert!(
            !lengths.is_empty() && lengths.iter().all(|&l| l > 0 && l < WINDOW_BYTES),
            "{lengths:?}"
        );
        let db = crate::Db::open(dir.path(), crate::Options::default()).expect("reopen");
        assert_eq!(db.get("k99").expect("get"), Some(b"v".to_vec()));
    }

    #[test]
    fn fs_storage_creates_mapped_logs_only_when_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mapped = FsStorage::new().with_mmap_wal(true);
        let mut f = mapped.create_log(&dir.path().join("a.log")).expect("create");
        f.append(b"abc").expect("append");
        assert_eq!(std::fs::metadata(dir.path().join("a.log")).expect("stat").len(), WINDOW_BYTES);
        drop(f);
        assert_eq!(std::fs::read(dir.path().join("a.log")).expect("read"), b"abc");
        let mut g = FsStorage::new().create_log(&dir.path().join("b.log")).expect("create");
        g.append(b"abc").expect("append");
        assert_eq!(std::fs::metadata(dir.path().join("b.log")).expect("stat").len(), 3);
    }
}
