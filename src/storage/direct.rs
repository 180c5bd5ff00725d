//! Direct I/O (`O_DIRECT`) for SSTs: [`Options::direct_reads`](crate::Options::direct_reads)
//! and [`Options::direct_io_for_flush_and_compaction`](crate::Options).
//!
//! With `O_DIRECT` a read or write goes between the device and the caller's buffer, bypassing
//! the page cache, so a block-cache miss is a device read (what read amplification costs on a
//! real disk). The kernel then requires the file offset, the length and the buffer address to
//! be multiples of the device's logical block size. [`ALIGN`] = 4096 is a multiple of every
//! logical block size in use (512 or 4096), so it is always safe:
//! * a read of `len` bytes at `offset` reads the aligned span `[offset rounded down, offset +
//!   len rounded up)` into an aligned per-thread buffer and copies the requested bytes out; a
//!   span that runs past the end of the file comes back short, which is fine as long as the
//!   requested bytes arrived;
//! * a write buffers appends in a 1 MiB aligned buffer and writes whole aligned chunks; `sync`
//!   writes the last partial block padded with zeros, cuts the file back to its real length
//!   with `ftruncate` and `fdatasync`s (which also makes the new length durable). The partial
//!   block stays in the buffer, so a later append rewrites it whole at its aligned offset.
//!
//! Nothing here falls back to buffered I/O: a file system that refuses `O_DIRECT` (`EINVAL` at
//! open) gives [`Error::InvalidArgument`] naming the path. Only Linux is supported.
//!
//! Buffers are aligned without `unsafe`: a vector over-allocated by `ALIGN` bytes is used from
//! its first aligned address on (it is never grown, so that address never moves).

use super::{RandomAccessFile, WritableFile};
use crate::error::{Error, Result};
use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Alignment of offsets, lengths and buffer addresses of every direct read and write.
pub const ALIGN: usize = 4096;

/// Bytes a direct writer buffers before it writes (a multiple of [`ALIGN`]).
const WRITE_BUFFER: usize = 1 << 20;

/// Largest read buffer kept per thread; larger spans get a buffer of their own.
const READ_BUFFER_MAX: usize = 1 << 20;

fn round_down(n: u64) -> u64 {
    n & !(ALIGN as u64 - 1)
}

fn round_up(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// A fixed-size heap buffer whose usable bytes start on an [`ALIGN`] boundary.
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` usable bytes (`len` a multiple of `ALIGN`).
    pub fn new(len: usize) -> Result<AlignedBuf> {
        let raw = vec![0u8; len + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        if start >= ALIGN {
            // `align_offset` may refuse in theory; never seen for byte pointers on Linux.
            return Err(Error::io(
                "aligning a direct I/O buffer",
                std::io::Error::other("no aligned address in the allocation"),
            ));
        }
        Ok(AlignedBuf { raw, start, len })
    }

    /// The usable bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    /// The usable bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }

    /// A buffer of no bytes (no allocation).
    fn empty() -> AlignedBuf {
        AlignedBuf { raw: Vec::new(), start: 0, len: 0 }
    }

    /// Usable length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The error of an `O_DIRECT` open: `EINVAL` means the file system does not do direct I/O.
pub(crate) fn open_error(path: &Path, e: std::io::Error) -> Error {
    if e.raw_os_error() == Some(libc::EINVAL) {
        Error::invalid(format!(
            "direct reads/writes (O_DIRECT) are not supported on the file system of {} ({e}); \
             turn off Options::direct_reads and Options::direct_io_for_flush_and_compaction \
             (bench: --use_direct_reads=0 --use_direct_io_for_flush_and_compaction=0)",
            path.display()
        ))
    } else {
        Error::io(format!("opening with O_DIRECT {}", path.display()), e)
    }
}

/// Opens `path` with `O_DIRECT`: read-only, or (`create`) created/truncated write-only. A file
/// system that refuses `O_DIRECT` gives [`Error::InvalidArgument`] naming the path. A created
/// file is opened with `O_NOFOLLOW`, as `FsStorage::create` does: the engine never writes
/// through a symbolic link planted under one of its names.
#[cfg(target_os = "linux")]
pub fn open(path: &Path, create: bool) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    let mut flags = libc::O_DIRECT;
    if create {
        o.write(true).create(true).truncate(true);
        flags |= libc::O_NOFOLLOW;
    } else {
        o.read(true);
    }
    o.custom_flags(flags).open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) if create => {
            Error::invalid(format!("refusing to create {}: it is a symbolic link", path.display()))
        }
        _ => open_error(path, e),
    })
}

/// Direct I/O is implemented for Linux only.
#[cfg(not(target_os = "linux"))]
pub fn open(path: &Path, _create: bool) -> Result<File> {
    Err(Error::invalid(format!(
        "direct reads/writes (O_DIRECT) are supported on Linux only (file {})",
        path.display()
    )))
}

/// Checks that the file system of `path` (an existing file) accepts direct reads: opens it with
/// `O_DIRECT` and reads its first aligned block.
pub(crate) fn probe(path: &Path) -> Result<()> {
    let file = open(path, false)?;
    let mut buf = AlignedBuf::new(ALIGN)?;
    file.read_at(buf.bytes_mut(), 0).map_err(|e| open_error(path, e))?;
    Ok(())
}

/// Reads `want` bytes of the aligned span starting at `at` (aligned) into `buf` (aligned,
/// at least `want` rounded up). Returns false if the file ends before `want` bytes.
fn read_span(file: &File, at: u64, buf: &mut [u8], want: usize) -> std::io::Result<bool> {
    let mut filled = 0;
    while filled < want {
        // `filled` stays a multiple of ALIGN: a short read is only possible at the end of the
        // file, after which the next read returns 0.
        let n = file.read_at(&mut buf[filled..], at + filled as u64)?;
        if n == 0 || (n % ALIGN != 0 && filled + n < want) {
            return Ok(false);
        }
        filled += n;
    }
    Ok(true)
}

thread_local! {
    /// This thread's aligned read buffer, grown to the largest span read (up to
    /// `READ_BUFFER_MAX`).
    static READ_BUF: RefCell<Option<AlignedBuf>> = const { RefCell::new(None) };
}

/// An SST read with `O_DIRECT`; the length is taken once, at open.
pub(crate) struct DirectReadFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl DirectReadFile {
    /// Opens `path` for direct reads.
    pub(crate) fn open(path: &Path) -> Result<DirectReadFile> {
        let file = open(path, false)?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("reading metadata of {}", path.display()), e))?
            .len();
        Ok(DirectReadFile { file, path: path.to_path_buf(), len })
    }

    fn read_into(&self, offset: u64, out: &mut [u8], span: &mut AlignedBuf) -> Result<()> {
        let at = round_down(offset);
        let skip = (offset - at) as usize;
        let want = skip + out.len();
        let buf = &mut span.bytes_mut()[..round_up(want)];
        match read_span(&self.file, at, buf, want) {
            Ok(true) => {
                out.copy_from_slice(&buf[skip..want]);
                Ok(())
            }
            Ok(false) => Err(Error::corruption(
                format!("short read of {} bytes (file shrank after open)", out.len()),
                Some(offset),
            )
            .in_file(&self.path, 0)),
            Err(e) => Err(Error::io(format!("reading (O_DIRECT) {}", self.path.display()), e)),
        }
    }
}

impl RandomAccessFile for DirectReadFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if !matches!(end, Some(end) if end <= self.len) {
            return Err(Error::corruption(
                format!("read of {} bytes past the end of a {}-byte file", buf.len(), self.len),
                Some(offset),
            )
            .in_file(&self.path, 0));
        }
        if buf.is_empty() {
            return Ok(());
        }
        let need = round_up((offset - round_down(offset)) as usize + buf.len());
        if need > READ_BUFFER_MAX {
            return self.read_into(offset, buf, &mut AlignedBuf::new(need)?);
        }
        READ_BUF.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.as_ref().is_none_or(|b| b.len() < need) {
                *slot = Some(AlignedBuf::new(need.next_power_of_two().max(ALIGN))?);
            }
            let span = slot.as_mut().expect("just filled");
            self.read_into(offset, buf, span)
        })
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn direct_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        Some(self.file.as_fd())
    }
}

/// The bytes of one batched read, in the aligned buffer they were read into.
pub(crate) struct SpanBytes {
    buf: AlignedBuf,
    skip: usize,
    len: usize,
}

impl SpanBytes {
    /// The wanted bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf.bytes()[self.skip..self.skip + self.len]
    }
}

impl Drop for SpanBytes {
    /// The buffer goes back to this thread's spares.
    fn drop(&mut self) {
        let buf = std::mem::replace(&mut self.buf, AlignedBuf::empty());
        SPARE_BUFS.with(|spare| {
            let mut spare = spare.borrow_mut();
            if spare.len() < SPARE_MAX {
                spare.push(buf);
            }
        });
    }
}

/// Smallest batch-read buffer: a span of a typical block (4 KiB contents plus trailer, at
/// any offset) fits, so the spares fit most reads.
const SPARE_LEN: usize = 4 * ALIGN;

/// Spare buffers kept per thread: a round's reads, twice over.
const SPARE_MAX: usize = 2 * super::uring::DEPTH;

thread_local! {
    /// Batch-read buffers returned by dropped [`SpanBytes`], reused to spare an allocation and
    /// its zeroing per read.
    static SPARE_BUFS: RefCell<Vec<AlignedBuf>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of at least `need` bytes (a multiple of `ALIGN`): a spare, or a new one.
fn batch_buf(need: usize) -> Result<AlignedBuf> {
    let spare = SPARE_BUFS.with(|spare| {
        let mut spare = spare.borrow_mut();
        spare.last().is_some_and(|b| b.len() >= need).then(|| spare.pop()).flatten()
    });
    match spare {
        Some(b) => Ok(b),
        None => AlignedBuf::new(need.max(SPARE_LEN)),
    }
}

/// Direct reads made together (io_uring, `storage::uring`): each is submitted as it is added,
/// so the device works while the caller finds the next blocks; [`DirectBatch::finish`] gives
/// them all. Each span is aligned as a single direct read is.
pub(crate) struct DirectBatch {
    /// Declared first: dropped (waiting for outstanding reads) before the files close.
    flight: super::uring::Flight,
    files: Vec<std::sync::Arc<dyn RandomAccessFile>>,
    /// Per request: (its span in the flight, bytes to skip, wanted length).
    requests: Vec<(Option<usize>, usize, usize)>,
}

impl DirectBatch {
    /// A new batch, or `None` when io_uring is unavailable (or a batch is already open on
    /// this thread): the caller then reads one block at a time.
    pub(crate) fn new() -> Option<DirectBatch> {
        let flight = super::uring::Flight::new()?;
        Some(DirectBatch { flight, files: Vec::new(), requests: Vec::new() })
    }

    /// Adds and submits a read of `len` bytes at `offset` of `file` (read with `O_DIRECT`).
    /// Returns the request's number.
    pub(crate) fn add(
        &mut self,
        file: std::sync::Arc<dyn RandomAccessFile>,
        offset: u64,
        len: usize,
    ) -> usize {
        use std::os::fd::AsRawFd;
        let at = round_down(offset);
        let skip = (offset - at) as usize;
        let need = round_up(skip + len);
        let span = match (file.direct_fd(), batch_buf(need)) {
            // `need` bytes, not the buffer's size: a spare buffer is at least SPARE_LEN.
            (Some(fd), Ok(buf)) => Some(self.flight.add(fd.as_raw_fd(), at, buf, need)),
            _ => None, // read the ordinary way
        };
        self.files.push(file);
        self.requests.push((span, skip, len));
        self.requests.len() - 1
    }

    /// Per request: its bytes, its error, or `None` when it was not read here (a short read,
    /// or the ring failed first: the caller reads it the ordinary way, which also reports a
    /// shrunk file properly).
    pub(crate) fn finish(self) -> Vec<Option<std::io::Result<SpanBytes>>> {
        let DirectBatch { flight, files, requests } = self;
        let mut spans = flight.wait();
        drop(files); // every read is done
        requests
            .into_iter()
            .map(|(span, skip, len)| {
                let s = &mut spans[span?];
                match (s.result.take(), s.buf.take()) {
                    (Some(Ok(n)), Some(buf)) if n >= skip + len => {
                        Some(Ok(SpanBytes { buf, skip, len }))
                    }
                    (Some(Err(e)), _) => Some(Err(e)),
                    _ => None,
                }
            })
            .collect()
    }
}

/// An SST written with `O_DIRECT` (see the module documentation for the tail).
pub(crate) struct DirectWritableFile {
    file: File,
    path: PathBuf,
    buf: AlignedBuf,
    /// Bytes of `buf` in use; `buf[..fill]` belongs at file offset `buf_at`.
    fill: usize,
    /// File offset of `buf`'s first byte (a multiple of ALIGN).
    buf_at: u64,
    /// Logical length: bytes appended so far.
    len: u64,
    /// Bytes were appended since the buffer was last written out.
    dirty: bool,
}

impl DirectWritableFile {
    /// Creates (or truncates) `path` for direct writes.
    pub(crate) fn create(path: &Path) -> Result<DirectWritableFile> {
        let file = open(path, true)?;
        Ok(DirectWritableFile {
            file,
            path: path.to_path_buf(),
            buf: AlignedBuf::new(WRITE_BUFFER)?,
            fill: 0,
            buf_at: 0,
            len: 0,
            dirty: false,
        })
    }

    fn err(&self, op: &str, e: std::io::Error) -> Error {
        Error::io(format!("{op} (O_DIRECT) {}", self.path.display()), e)
    }

    /// Writes `buf[..fill]` padded with zeros to a whole block and cuts the file back to
    /// `len`. Keeps the last partial block in the buffer (moved to its front).
    fn write_out(&mut self) -> Result<()> {
        if self.fill == 0 {
            return Ok(());
        }
        let padded = round_up(self.fill);
        self.buf.bytes_mut()[self.fill..padded].fill(0);
        self.file
            .write_all_at(&self.buf.bytes()[..padded], self.buf_at)
            .map_err(|e| self.err("writing", e))?;
        if padded != self.fill {
            self.file.set_len(self.len).map_err(|e| self.err("truncating", e))?;
        }
        let keep = self.fill % ALIGN;
        let whole = self.fill - keep;
        self.buf.bytes_mut().copy_within(whole..self.fill, 0);
        self.buf_at += whole as u64;
        self.fill = keep;
        self.dirty = false;
        Ok(())
    }
}

impl WritableFile for DirectWritableFile {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let n = data.len().min(self.buf.len() - self.fill);
            self.buf.bytes_mut()[self.fill..self.fill + n].copy_from_slice(&data[..n]);
            self.fill += n;
            self.len += n as u64;
            self.dirty = true;
            data = &data[n..];
            if self.fill == self.buf.len() {
                // A full buffer is whole blocks: nothing is padded or kept.
                self.write_out()?;
            }
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if self.dirty {
            self.write_out()?;
        }
        self.file.sync_data().map_err(|e| self.err("syncing", e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for DirectWritableFile {
    /// Hands buffered bytes to the file, as a buffered writer would have (no sync: durability
    /// still needs `sync`). Errors are dropped: nobody relies on an unsynced SST.
    fn drop(&mut self) {
        if self.dirty {
            let _ = self.write_out();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn test_dir() -> tempfile::TempDir {
        // Under target/ (a real disk in this repository's setups); /tmp may be tmpfs.
        tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR").to_owned() + "/target").unwrap()
    }

    #[test]
    fn direct_writes_then_direct_reads_return_the_appended_bytes() {
        let dir = test_dir();
        let path = dir.path().join("000001.sst");
        let mut rng = SplitMix64::new(5);
        let data: Vec<u8> = (0..3_000_000).map(|_| rng.next_u64() as u8).collect();
        let mut w = DirectWritableFile::create(&path).unwrap();
        let mut at = 0;
        while at < data.len() {
            let n = ((rng.next_u64() % 70_000) as usize).min(data.len() - at);
            w.append(&data[at..at + n]).unwrap();
            at += n;
            if rng.below(8) == 0 {
                // A sync in the middle pads and truncates; later appends rewrite that block.
                w.sync().unwrap();
                assert_eq!(std::fs::metadata(&path).unwrap().len(), at as u64);
            }
        }
        w.sync().unwrap();
        assert_eq!(w.len(), data.len() as u64);
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        let r = DirectReadFile::open(&path).unwrap();
        assert_eq!(r.len(), data.len() as u64);
        for _ in 0..300 {
            let off = rng.next_u64() % data.len() as u64;
            let len = (rng.next_u64() % 20_000) as usize;
            match r.read_at(off, len) {
                Ok(got) => assert_eq!(&got[..], &data[off as usize..off as usize + len]),
                Err(e) => {
                    assert!(off as usize + len > data.len() && e.is_corruption(), "{e}")
                }
            }
        }
        // A span larger than the per-thread buffer, and the very last byte.
        let big = r.read_at(1, 2_000_000).unwrap();
        assert_eq!(&big[..], &data[1..2_000_001]);
        assert_eq!(r.read_at(data.len() as u64 - 1, 1).unwrap(), vec![data[data.len() - 1]]);
    }

    #[test]
    fn a_batched_read_asks_the_device_for_its_aligned_span_only() {
        let dir = test_dir();
        let path = dir.path().join("000003.sst");
        let data: Vec<u8> = (0..16 * ALIGN).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file: std::sync::Arc<dyn RandomAccessFile> =
            std::sync::Arc::new(DirectReadFile::open(&path).unwrap());
        let Some(mut batch) = DirectBatch::new() else {
            assert!(!crate::storage::uring::available(), "only a refused io_uring gives none");
            return;
        };
        // A block inside one page, one across a page boundary: buffers are at least SPARE_LEN
        // (16 KiB), but the device reads one and two pages.
        let (a, b) = (batch.add(file.clone(), 5000, 300), batch.add(file, 8000, 400));
        let (sa, sb) = (batch.requests[a].0.unwrap(), batch.requests[b].0.unwrap());
        assert_eq!(batch.flight.requested(sa), ALIGN);
        assert_eq!(batch.flight.requested(sb), 2 * ALIGN);
        let got = batch.finish();
        assert_eq!(got[a].as_ref().unwrap().as_ref().unwrap().bytes(), &data[5000..5300]);
        assert_eq!(got[b].as_ref().unwrap().as_ref().unwrap().bytes(), &data[8000..8400]);
    }

    #[test]
    fn a_dropped_direct_writer_leaves_its_bytes_in_the_file() {
        let dir = test_dir();
        let path = dir.path().join("000002.sst");
        let mut w = DirectWritableFile::create(&path).unwrap();
        w.append(b"hello, direct").unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), b"hello, direct");
    }

    #[test]
    fn a_direct_create_never_writes_through_a_symlink() {
        let dir = test_dir();
        let target = dir.path().join("precious");
        std::fs::write(&target, b"not siftdb's").unwrap();
        let link = dir.path().join("000009.sst");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = DirectWritableFile::create(&link).err().expect("a symlink is refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"not siftdb's");
    }

    #[test]
    fn einval_at_open_is_a_clear_invalid_argument() {
        let e = open_error(Path::new("/x/1.sst"), std::io::Error::from_raw_os_error(libc::EINVAL));
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("not supported on the file system of /x/1.sst"), "{msg}");
        let e = open_error(Path::new("/x/1.sst"), std::io::Error::from_raw_os_error(libc::ENOENT));
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
    }
}
