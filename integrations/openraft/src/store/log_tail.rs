//! The end of the last log segment: its recent bytes kept in memory, and appends written
//! around the page cache (`O_DIRECT`) in the device's smallest blocks, by the flusher.
//!
//! Why: every acknowledged entry costs one `fdatasync` of the segment. Through the page cache
//! each sync writes back the whole 4 KiB page the append dirtied, so a 200-byte entry costs the
//! disk 4 KiB (and the leader's `write_bytes` counts 4 KiB). Written directly, an append
//! rewrites only the blocks it touches: from the block holding the previous end to the block
//! holding the new one, 512 bytes a block on a device whose logical block is 512 bytes
//! (docs/log.md, "Appends around the page cache").
//!
//! An append only copies its bytes into the tail; the flusher thread writes what is not yet
//! written ([`LogTail::pending`]) just before it syncs, so the append path makes no system call
//! and one direct write covers every append a sync covers. A direct write needs its offset,
//! length and buffer aligned. The tail therefore keeps the bytes from a block boundary to the
//! end in memory: a write starts at the block holding the first unwritten byte, copies the
//! bytes to the end, pads with zeros to the next boundary (zeros after the last record read as
//! the end of the last segment, docs/log.md), and writes that. The recent bytes
//! kept beyond the partial block ([`KEEP`]) serve reads of the entries just appended (the
//! leader replicates them, the state machine applies them) from memory: a direct write leaves
//! no copy in the page cache, and reading them back from the disk would put a disk read on the
//! path of every entry.
//!
//! Invariants: while writes are direct, `start` is a multiple of their alignment and at or before
//! the block holding `written`; `bytes` are the segment's bytes from `start` to the segment's
//! end, those before `written` exactly as in the file. A file system that refuses `O_DIRECT` (at
//! open, or with `EINVAL` on a write: tmpfs on older kernels, some FUSE mounts) or does not
//! report its alignment (`STATX_DIOALIGN`, Linux 6.1 and later) gets each append through the
//! page cache at once, and then `written` is the end.

use std::fs::{File, OpenOptions};
use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
#[cfg(target_os = "linux")]
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::aligned_buf::{AlignedBuf, ALIGN};

/// The tail keeps at least the segment's last `KEEP` bytes (all of it while it is shorter), and
/// every unwritten byte; it grows to twice this before it is cut back.
pub(crate) const KEEP: usize = 1 << 20;

/// The direct descriptor of a segment and the alignment its writes need.
struct Direct {
    file: Arc<File>,
    /// Alignment of a direct write's offset and length (the device's logical block size): a
    /// power of two no larger than [`ALIGN`].
    align: usize,
}

/// Names each tail, so the flusher's report of a write is applied to the tail it was taken from
/// and not to one a truncation loaded since.
static TAIL_IDS: AtomicU64 = AtomicU64::new(0);

/// The tail of the last segment (module documentation).
pub(crate) struct LogTail {
    start: u64,
    bytes: Vec<u8>,
    /// Bytes before this offset are in the file; the rest only here, until the flusher writes
    /// them.
    written: u64,
    direct: Option<Direct>,
    id: u64,
}

/// The unwritten end of a tail, copied out to be written without holding the log's lock
/// ([`LogTail::pending`]).
pub(crate) struct PendingWrite {
    direct: Arc<File>,
    /// Where `buf` goes: the block holding the first unwritten byte.
    at: u64,
    buf: AlignedBuf,
    /// Bytes of `buf` that are the segment's (the rest, to `padded`, are zeros).
    len: usize,
    padded: usize,
    align: usize,
    tail: u64,
}

/// What a [`PendingWrite`] did, for [`LogTail::written_to`].
pub(crate) struct Written {
    tail: u64,
    end: u64,
    direct_refused: bool,
}

impl LogTail {
    /// The tail of the segment at `path` (open as `file`), whose records end at `end`, with its
    /// bytes read from `file` (the recent ones: up to [`KEEP`] and the partial block).
    pub(crate) fn load(path: &Path, file: &File, end: u64) -> io::Result<LogTail> {
        let direct = Direct::open(path);
        let start = keep_from(end, write_align(&direct));
        let mut bytes = vec![0u8; (end - start) as usize];
        file.read_exact_at(&mut bytes, start)?;
        Ok(LogTail::new(start, bytes, direct))
    }

    /// The tail of the segment at `path` whose bytes up to its end are `segment` (as read whole
    /// when the log is opened).
    pub(crate) fn from_bytes(path: &Path, segment: &[u8]) -> LogTail {
        let direct = Direct::open(path);
        let start = keep_from(segment.len() as u64, write_align(&direct));
        LogTail::new(start, segment[start as usize..].to_vec(), direct)
    }

    fn new(start: u64, bytes: Vec<u8>, direct: Option<Direct>) -> LogTail {
        let written = start + bytes.len() as u64;
        let id = TAIL_IDS.fetch_add(1, Ordering::Relaxed);
        LogTail { start, bytes, written, direct, id }
    }

    /// Where the bytes held begin.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// Where the segment's records end.
    pub(crate) fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// The segment's bytes `from..to` if they are all in memory.
    pub(crate) fn get(&self, from: u64, to: u64) -> Option<&[u8]> {
        if from < self.start || to > self.end() || from > to {
            return None;
        }
        Some(&self.bytes[(from - self.start) as usize..(to - self.start) as usize])
    }

    /// Adds `data` at the end of the segment: into memory only when the flusher writes the
    /// tail directly, else also into the file (`file`, the segment's buffered descriptor) at
    /// once, unsynced. On an error nothing is added; the file may hold some of `data` after the
    /// end, which the caller cuts.
    pub(crate) fn append(&mut self, file: &File, data: &[u8]) -> io::Result<()> {
        if self.direct.is_none() {
            file.write_all_at(data, self.end())?;
            self.written = self.end() + data.len() as u64;
        }
        self.bytes.extend_from_slice(data);
        if self.bytes.len() >= 2 * KEEP {
            let align = write_align(&self.direct) as u64;
            let from =
                keep_from(self.end(), align as usize).min(self.written - self.written % align);
            self.bytes.drain(..(from - self.start) as usize);
            self.start = from;
        }
        Ok(())
    }

    /// The bytes appended since the last write, copied out to be written directly (`None` when
    /// there are none).
    pub(crate) fn pending(&self) -> Option<PendingWrite> {
        let direct = self.direct.as_ref()?;
        if self.written == self.end() {
            return None;
        }
        let align = direct.align;
        let at = self.written - self.written % align as u64;
        let held = &self.bytes[(at - self.start) as usize..];
        let padded = held.len().div_ceil(align) * align;
        let mut buf = AlignedBuf::new(padded.div_ceil(ALIGN) * ALIGN);
        // The buffer comes zeroed: the padding after `held` is zeros.
        buf.as_mut()[..held.len()].copy_from_slice(held);
        Some(PendingWrite {
            direct: direct.file.clone(),
            at,
            buf,
            len: held.len(),
            padded,
            align,
            tail: self.id,
        })
    }

    /// Records what the flusher wrote. When the file system refused the direct write, the bytes
    /// were written through `file` instead, and so are this tail's from now on: the ones appended
    /// meanwhile are written now.
    pub(crate) fn written_to(&mut self, done: &Written, file: &File) -> io::Result<()> {
        if done.tail != self.id {
            return Ok(());
        }
        self.written = self.written.max(done.end.min(self.end()));
        if done.direct_refused && self.direct.is_some() {
            // Direct writes stop only once everything is in the file: a failure here leaves the
            // rest to the next flush, which tries again.
            let rest = &self.bytes[(self.written - self.start) as usize..];
            file.write_all_at(rest, self.written)?;
            self.written = self.end();
            self.direct = None;
        }
        Ok(())
    }
}

impl PendingWrite {
    /// Writes the bytes directly, or through `file` (the segment's buffered descriptor) when the
    /// file system refuses direct writes; unsynced.
    pub(crate) fn write(&self, file: &File) -> io::Result<Written> {
        let done = |direct_refused| Written {
            tail: self.tail,
            end: self.at + self.len as u64,
            direct_refused,
        };
        let buf = &self.buf.as_ref()[..self.padded];
        let mut at = 0;
        while at < self.padded {
            // One call for the whole run; a short direct write (rare) leaves an aligned count.
            match self.direct.write_at(&buf[at..], self.at + at as u64) {
                Ok(n) if n > 0 && n % self.align == 0 => at += n,
                Ok(n) => {
                    return Err(io::Error::other(format!(
                        "a direct write of {} bytes wrote {n}",
                        self.padded - at
                    )))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    file.write_all_at(&buf[..self.len], self.at)?;
                    return Ok(done(true));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done(false))
    }
}

/// The alignment the tail's `start` keeps: the direct writes', or a page when there are none
/// (any boundary would do then).
fn write_align(direct: &Option<Direct>) -> usize {
    direct.as_ref().map_or(ALIGN, |d| d.align)
}

/// Where a tail ending at `end` starts: [`KEEP`] bytes back (or the file's start), down to a
/// multiple of `align`, so the partial block at the end is always held.
fn keep_from(end: u64, align: usize) -> u64 {
    let from = end.saturating_sub(KEEP as u64);
    from - from % align as u64
}

impl Direct {
    /// A direct descriptor of `path` and its write alignment, or `None` where the file system
    /// refuses `O_DIRECT` or does not say what alignment it needs.
    #[cfg(target_os = "linux")]
    fn open(path: &Path) -> Option<Direct> {
        let file = OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(path).ok()?;
        let align = dio_offset_align(&file)?;
        if !align.is_power_of_two() || align > ALIGN {
            return None;
        }
        Some(Direct { file: Arc::new(file), align })
    }

    #[cfg(not(target_os = "linux"))]
    fn open(_path: &Path) -> Option<Direct> {
        None
    }
}

/// The offset alignment direct I/O on `file` needs (`statx`'s `STATX_DIOALIGN`), if the
/// kernel and the file system say.
#[cfg(target_os = "linux")]
fn dio_offset_align(file: &File) -> Option<usize> {
    // SAFETY: `statx` writes only into `stx`, a plain struct of integers; the path is empty and
    // AT_EMPTY_PATH makes the call describe the open descriptor.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return None;
    }
    // The buffer's alignment (ALIGN) must also satisfy the memory alignment asked.
    if stx.stx_dio_mem_align as usize > ALIGN {
        return None;
    }
    Some(stx.stx_dio_offset_align as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A segment file of 24 pattern bytes (a header's length) and its tail, loaded from it.
    fn fresh_tail(dir: &Path) -> (std::path::PathBuf, File, LogTail, Vec<u8>) {
        let all = pattern(0, 24);
        let (path, file) = segment_file(dir, &all);
        let tail = LogTail::load(&path, &file, 24).unwrap();
        (path, file, tail, all)
    }

    fn segment_file(dir: &Path, bytes: &[u8]) -> (std::path::PathBuf, File) {
        let path = dir.join("t.seg");
        fs::write(&path, bytes).unwrap();
        let file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        (path, file)
    }

    /// Bytes of a pattern no run of zeros or repeat could fake.
    fn pattern(from: usize, len: usize) -> Vec<u8> {
        (from..from + len).map(|i| (i * 7 + i / 251) as u8 | 1).collect()
    }

    /// What the flusher does: writes the unwritten bytes and records it.
    fn flush(tail: &mut LogTail, file: &File) {
        if let Some(p) = tail.pending() {
            let done = p.write(file).unwrap();
            tail.written_to(&done, file).unwrap();
        }
        assert!(tail.pending().is_none());
    }

    fn check_file(path: &Path, all: &[u8]) {
        let on_disk = fs::read(path).unwrap();
        assert!(on_disk.len() >= all.len());
        assert_eq!(&on_disk[..all.len()], all);
        assert!(on_disk[all.len()..].iter().all(|&b| b == 0), "zeros after the end");
    }

    #[test]
    fn appends_of_every_size_read_back_the_same_from_the_file_and_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file, mut tail, mut all) = fresh_tail(dir.path());
        // Sizes around the alignments (512 and 4096), and one past KEEP twice over: the tail
        // trims itself and still holds the end.
        for len in [1, 180, 331, 511, 512, 513, 4095, 4096, 4097, 3 * KEEP + 5, 7] {
            let data = pattern(all.len(), len);
            tail.append(&file, &data).unwrap();
            all.extend_from_slice(&data);
            assert_eq!(tail.end(), all.len() as u64);
            flush(&mut tail, &file);
            check_file(&path, &all);
            let from = all.len().saturating_sub(100) as u64;
            assert_eq!(tail.get(from, all.len() as u64).unwrap(), &all[from as usize..]);
        }
        assert!(tail.get(0, 10).is_none(), "the start was trimmed away");
        assert!(tail.bytes.len() < 2 * KEEP + 4096);
        assert_eq!(tail.start % write_align(&tail.direct) as u64, 0);
        // Loaded again from the file: the same tail.
        let again = LogTail::load(&path, &file, all.len() as u64).unwrap();
        assert_eq!(again.get(again.start, again.end()), Some(&all[again.start as usize..]));
    }

    #[test]
    fn unwritten_bytes_stay_in_memory_until_written_however_many() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file, mut tail, mut all) = fresh_tail(dir.path());
        // Many appends between two writes, past the trimming threshold: nothing unwritten is
        // trimmed, and one write puts it all in the file.
        for _ in 0..300 {
            let data = pattern(all.len(), 9_999);
            tail.append(&file, &data).unwrap();
            all.extend_from_slice(&data);
        }
        assert_eq!(tail.get(24, all.len() as u64).unwrap(), &all[24..]);
        // A write taken, then more appends before it is reported: the report covers only what
        // it wrote, and the next write the rest.
        let pending = tail.pending().unwrap();
        tail.append(&file, &pattern(all.len(), 77)).unwrap();
        all.extend_from_slice(&pattern(all.len(), 77));
        let done = pending.write(&file).unwrap();
        tail.written_to(&done, &file).unwrap();
        assert!(tail.pending().is_some() || tail.direct.is_none());
        flush(&mut tail, &file);
        check_file(&path, &all);
        // A report about another tail (one a truncation replaced) changes nothing.
        let mut other = LogTail::load(&path, &file, all.len() as u64).unwrap();
        other.append(&file, &pattern(all.len(), 5)).unwrap();
        let unrelated = Written { tail: tail.id, end: other.end(), direct_refused: true };
        other.written_to(&unrelated, &file).unwrap();
        assert_eq!(other.pending().is_some(), other.direct.is_some());
    }

    #[test]
    fn a_tail_without_direct_writes_goes_through_the_page_cache_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file) = segment_file(dir.path(), &pattern(0, 100));
        let mut tail = LogTail::from_bytes(&path, &pattern(0, 100));
        tail.direct = None;
        tail.append(&file, &pattern(100, 50)).unwrap();
        assert!(tail.pending().is_none());
        assert_eq!(fs::read(&path).unwrap(), pattern(0, 150));
        assert_eq!(tail.get(0, 150).unwrap(), &pattern(0, 150)[..]);
    }

    #[test]
    fn a_refused_direct_write_goes_through_the_page_cache_with_what_followed_it() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file) = segment_file(dir.path(), &pattern(0, 100));
        let mut tail = LogTail::from_bytes(&path, &pattern(0, 100));
        let Some(pending) = ({
            tail.append(&file, &pattern(100, 50)).unwrap();
            tail.pending()
        }) else {
            return; // no direct I/O here: the test above covers this file system
        };
        tail.append(&file, &pattern(150, 30)).unwrap();
        // As if the file system had refused it, and the write through the page cache then
        // failed too: direct writes stay, with everything still to write.
        let read_only = File::open(&path).unwrap();
        let refused = Written { tail: tail.id, end: pending.at, direct_refused: true };
        assert!(tail.written_to(&refused, &read_only).is_err());
        assert!(tail.direct.is_some() && tail.pending().is_some());
        // Refused again, and this time the bytes go through `file`.
        file.write_all_at(&pending.buf.as_ref()[..pending.len], pending.at).unwrap();
        let refused =
            Written { tail: tail.id, end: pending.at + pending.len as u64, direct_refused: true };
        tail.written_to(&refused, &file).unwrap();
        assert!(tail.direct.is_none() && tail.pending().is_none());
        assert_eq!(fs::read(&path).unwrap()[..180], pattern(0, 180)[..]);
        tail.append(&file, &pattern(180, 20)).unwrap();
        assert_eq!(fs::read(&path).unwrap()[..200], pattern(0, 200)[..]);
    }
}
