//! A new file written around the page cache (`O_DIRECT`), for the tables of an incoming
//! snapshot: each is written once, synced, and then only hard-linked into the database, so
//! caching its bytes buys nothing, and filling the page cache with gigabytes costs a copy per
//! byte into pages the kernel must first find. On this project's VM that copy ran at about
//! 1.2 ns a byte when the cache grew into memory not recently used, half a 2 GiB catch-up's
//! CPU (docs/results/2026-12-01-raft-direct-install/).
//!
//! `O_DIRECT` wants the buffer, the file offset and the length aligned; the writer gathers
//! bytes in an aligned buffer, writes whole [`ALIGN`] multiples, and ends with a padded last
//! block and a truncation to the true length. A file system that refuses `O_DIRECT` (at open,
//! or with `EINVAL` on the first write: tmpfs on older kernels, some FUSE mounts) gets the same
//! bytes through the page cache instead.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

// Every write's offset and length are multiples of the buffers' alignment (4 KiB; 512-byte
// devices accept it too).
use super::aligned_buf::{AlignedBuf, ALIGN};

/// Buffers of a writer: one being filled, the others queued for or being written by its
/// thread.
const BUFFERS: usize = 3;

/// Writes one new file from its first byte to its last; [`DirectWriter::finish`] hands the file
/// back (not synced: the caller syncs it, as after any write). The caller's thread fills a
/// buffer while a thread of the writer writes the previous ones, so the copy into the buffer
/// (and whatever the caller does between writes: receiving, checksumming) overlaps the disk's
/// work instead of waiting for each write to complete, as a write without the page cache does.
pub(crate) struct DirectWriter {
    /// The buffer being filled.
    buf: AlignedBuf,
    used: usize,
    /// Buffers (with their lengths) for the thread to write, in file order; the last one
    /// flagged.
    jobs: Option<std::sync::mpsc::SyncSender<(AlignedBuf, usize, bool)>>,
    /// Buffers the thread has written.
    free: std::sync::mpsc::Receiver<AlignedBuf>,
    thread: Option<std::thread::JoinHandle<io::Result<File>>>,
}

impl DirectWriter {
    /// Creates `path` (which must not exist), gathering `buf_len` bytes (rounded up to
    /// [`ALIGN`]) per write.
    pub(crate) fn create_new(path: &Path, buf_len: usize) -> io::Result<DirectWriter> {
        let buf_len = buf_len.max(1).div_ceil(ALIGN) * ALIGN;
        let open = |direct: bool| {
            let mut o = OpenOptions::new();
            o.write(true).create_new(true);
            if direct {
                o.custom_flags(libc::O_DIRECT);
            }
            o.open(path)
        };
        let (file, direct) = match open(true) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(false)?, false),
            Err(e) => return Err(e),
        };
        let (jobs, jobs_rx) = std::sync::mpsc::sync_channel(BUFFERS);
        let (free_tx, free) = std::sync::mpsc::channel();
        for _ in 1..BUFFERS {
            free_tx.send(AlignedBuf::new(buf_len)).expect("the receiver is here");
        }
        let mut out = FileOut { file, written: 0, direct };
        let thread =
            std::thread::Builder::new().name("snapshot-write".into()).spawn(move || {
                for (mut buf, len, last) in jobs_rx {
                    out.write(&mut buf, len, last)?;
                    // The writer gone (it failed or finished) needs no buffer back.
                    let _ = free_tx.send(buf);
                }
                Ok(out.file)
            })?;
        Ok(DirectWriter {
            buf: AlignedBuf::new(buf_len),
            used: 0,
            jobs: Some(jobs),
            free,
            thread: Some(thread),
        })
    }

    /// Hands the buffer, `len` bytes of it filled, to the thread; takes a written one back.
    fn hand_over(&mut self, len: usize, last: bool) -> io::Result<()> {
        let next = if last {
            // Nothing more is written: a small stand-in for the buffer handed over.
            AlignedBuf::new(ALIGN)
        } else {
            match self.free.recv() {
                Ok(b) => b,
                Err(_) => return Err(self.thread_error()),
            }
        };
        let full = std::mem::replace(&mut self.buf, next);
        let sent = self.jobs.as_ref().is_some_and(|j| j.send((full, len, last)).is_ok());
        self.used = 0;
        if sent {
            Ok(())
        } else {
            Err(self.thread_error())
        }
    }

    /// Ends the jobs and waits for the thread: the file once every job is written, or the
    /// error the thread stopped with.
    fn join(&mut self) -> io::Result<File> {
        drop(self.jobs.take());
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the snapshot writer thread panicked")),
            None => Err(io::Error::other("the snapshot writer thread stopped")),
        }
    }

    /// The error the thread stopped with (it stops only on one, before `finish`).
    fn thread_error(&mut self) -> io::Error {
        match self.join() {
            Err(e) => e,
            Ok(_) => io::Error::other("the snapshot writer thread stopped"),
        }
    }

    /// Writes what is buffered and returns the file, every byte written to it in order.
    pub(crate) fn finish(mut self) -> io::Result<File> {
        let used = self.used;
        self.hand_over(used, true)?;
        self.join()
    }
}

impl Drop for DirectWriter {
    /// An unfinished writer (an error or a refused snapshot) stops its thread; the file is the
    /// caller's to remove.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Write for DirectWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let cap = self.buf.len();
        let n = data.len().min(cap - self.used);
        let used = self.used;
        self.buf.as_mut()[used..used + n].copy_from_slice(&data[..n]);
        self.used += n;
        if self.used == cap {
            self.hand_over(cap, false)?;
        }
        Ok(n)
    }

    /// Nothing: a partial block can only be written at the end ([`DirectWriter::finish`]).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writing thread's file.
struct FileOut {
    file: File,
    /// Bytes written (a multiple of [`ALIGN`] while `direct`, until the last buffer).
    written: u64,
    direct: bool,
}

impl FileOut {
    /// Writes `len` bytes of `buf` at the file's end; the `last` buffer of a direct file is
    /// padded to [`ALIGN`] and the file then cut to its true length.
    fn write(&mut self, buf: &mut AlignedBuf, len: usize, last: bool) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let padded = if self.direct { len.div_ceil(ALIGN) * ALIGN } else { len };
        buf.as_mut()[len..padded].fill(0);
        let end = self.written + len as u64;
        let mut done = 0;
        while done < padded {
            let at = self.written + done as u64;
            match self.file.write_at(&buf.as_mut()[done..padded], at) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                // A short direct write ends on a block boundary (the kernel writes whole
                // blocks), so the rest stays aligned.
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) && at == 0 => {
                    self.buffered()?;
                    return self.write(buf, len, last);
                }
                Err(e) => return Err(e),
            }
        }
        if padded != len {
            debug_assert!(last, "only the last buffer of a direct file is short");
            self.file.set_len(end)?;
        }
        self.written = end;
        Ok(())
    }

    /// Clears `O_DIRECT`: the file system opened the file with it but refuses its writes.
    fn buffered(&mut self) -> io::Result<()> {
        let fd = self.file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this writer owns, with integer arguments.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0 {
            return Err(io::Error::last_os_error());
        }
        self.direct = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + i / 4096) as u8).collect()
    }

    #[test]
    fn every_length_around_the_alignment_reads_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let buf = 3 * ALIGN;
        for (i, len) in [0, 1, 511, 4095, 4096, 4097, 3 * 4096, 3 * 4096 + 7, 10 * 4096 + 1]
            .into_iter()
            .enumerate()
        {
            let bytes = pattern(len);
            let p = dir.path().join(format!("{i}"));
            let mut w = DirectWriter::create_new(&p, buf).unwrap();
            // Uneven pieces, so buffer boundaries fall inside them.
            for piece in bytes.chunks(1000) {
                w.write_all(piece).unwrap();
            }
            let f = w.finish().unwrap();
            f.sync_all().unwrap();
            assert_eq!(std::fs::read(&p).unwrap(), bytes, "length {len}");
        }
    }

    #[test]
    fn an_existing_file_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, b"someone else's").unwrap();
        let e = DirectWriter::create_new(&p, ALIGN).err().expect("refused");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"someone else's");
    }
}
