//! The Raft log as append-only segment files: `raftlog/<first index, 20 digits>.seg`. The byte
//! format and the crash story are in docs/log.md.
//!
//! A segment is a header (magic, version, its first index, CRC-32) followed by records, each
//! `length u32 | CRC-32 of (length, payload) u32 | payload` with the payload an entry in
//! entry_codec.rs's binary format. Record `i` of a segment holds index `first + i`: indexes are
//! contiguous within a segment and from one segment to the next.
//!
//! Invariants kept by every operation here:
//! - `segments` is sorted by first index, segment `k + 1` starts at segment `k`'s last index + 1,
//!   and every segment holds at least one record once an operation returns;
//! - `offsets` and `end` of a segment describe exactly its records: in the file, or for the last
//!   segment in the file up to its tail's `written` and in the tail after it (log_tail.rs; an
//!   append whose write fails cuts the file back to `end`);
//! - only the last segment receives appends; a segment is written and synced (fdatasync) before
//!   the next one is created, so writing the last segment's tail and one fdatasync of it make
//!   every appended record durable;
//! - every segment but the last ends at its last record; the last may continue with zeros to
//!   the end of its file, space reserved for appends ([`reserve`]), which reads as the end.

use std::fs::{self, File, OpenOptions};
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::{Entry, LogId};

use super::entry_codec;
use super::log_tail::{LogTail, PendingWrite, Written};
use super::StoreError;
use crate::{NodeId, TypeConfig};

/// The first 8 bytes of a segment.
const MAGIC: &[u8; 8] = b"SFRLOGSG";
/// The segment format version (docs/log.md).
const VERSION: u32 = 1;
/// Magic, version, first index, CRC-32 of the 20 bytes before it.
pub(crate) const HEADER_LEN: u64 = 24;
/// Length and CRC of a record.
const RECORD_HEADER_LEN: u64 = 8;
/// A record longer than this is corrupt (an entry holds one key and one value).
const MAX_RECORD_LEN: u32 = 1 << 30;
/// The suffix of a segment file.
const SEGMENT_SUFFIX: &str = ".seg";
/// Digits of the first index in a segment's name (u64::MAX has 20).
const NAME_DIGITS: usize = 20;

/// One segment file.
struct Segment {
    first: u64,
    path: PathBuf,
    file: Arc<File>,
    /// `offsets[i]` is where the record of index `first + i` starts.
    offsets: Vec<u64>,
    /// Where the next record goes: the end of the last record (or of the header). The last
    /// segment's file may be longer, zeros reserved by [`reserve`].
    end: u64,
    /// The last segment's recent bytes and direct appends (log_tail.rs); `None` on the others.
    tail: Option<LogTail>,
}

impl Segment {
    /// The index after this segment's last record.
    fn next_index(&self) -> u64 {
        self.first + self.offsets.len() as u64
    }

    /// Where the record of `index` ends (the next one starts).
    fn record_end(&self, i: usize) -> u64 {
        self.offsets.get(i + 1).copied().unwrap_or(self.end)
    }
}

/// What opening found at the end of the last segment.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Recovery {
    /// Bytes cut from the last segment: a record torn by a crash (or a header never completed,
    /// whose file was removed).
    pub torn_bytes: u64,
    /// Segments removed because every entry in them is at or below the purge point.
    pub purged_segments: usize,
}

/// The segment files of one log.
pub(crate) struct SegmentLog {
    dir: PathBuf,
    segments: Vec<Segment>,
    /// A segment past this many bytes is closed and the next append starts a new one.
    roll_bytes: u64,
    /// The log id of the last record, if any.
    last: Option<LogId<NodeId>>,
    /// Held by whoever writes the last segment's tail into its file: the flusher, between taking
    /// the unwritten bytes and reporting them written, and a roll, a truncation or a sync.
    /// The flusher takes it while it holds the log's read lock, the others under its write lock,
    /// so a flusher's copy is never written after bytes newer than it.
    io: Arc<parking_lot::Mutex<()>>,
}

fn io_err(what: String, source: std::io::Error) -> StoreError {
    StoreError::Io { what, source }
}

fn corrupt(path: &Path, offset: u64, what: impl Into<String>) -> StoreError {
    StoreError::CorruptLog { path: path.to_path_buf(), offset, what: what.into() }
}

/// The name of the segment starting at `first`.
fn segment_name(first: u64) -> String {
    format!("{first:0NAME_DIGITS$}{SEGMENT_SUFFIX}")
}

/// The first index a segment file name holds, or `None` for any other name.
fn parse_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn header(first: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..20].copy_from_slice(&first.to_le_bytes());
    let crc = crc32fast::hash(&h[..20]);
    h[20..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Checks a segment header and returns the first index it names; the error says what is wrong.
fn check_header(bytes: &[u8]) -> Result<u64, String> {
    let h = bytes.get(..HEADER_LEN as usize).ok_or("the header is incomplete")?;
    let (body, crc) = h.split_at(20);
    let stored = u32::from_le_bytes(crc.try_into().map_err(|_| "header CRC")?);
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(format!(
            "header CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    if body.get(..8) != Some(MAGIC.as_slice()) {
        return Err("not a segment (wrong magic)".into());
    }
    let version =
        u32::from_le_bytes(body.get(8..12).and_then(|b| b.try_into().ok()).ok_or("version")?);
    if version != VERSION {
        return Err(format!("unknown segment version {version}"));
    }
    Ok(u64::from_le_bytes(body.get(12..20).and_then(|b| b.try_into().ok()).ok_or("first index")?))
}

/// Appends one framed record holding `payload` to `out`.
fn frame(payload: &[u8], out: &mut Vec<u8>) {
    let len = (payload.len() as u32).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(payload);
    out.extend_from_slice(&len);
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(payload);
}

/// The result of reading one record at the start of `bytes`.
enum Parsed<'a> {
    /// A whole record with a matching CRC: its payload and total length.
    Record(&'a [u8], u64),
    /// The bytes end here (a clean end of segment).
    End,
    /// Not a valid record: what is wrong. At the end of the last segment this is a torn write.
    Bad(String),
}

fn parse_record(bytes: &[u8]) -> Parsed<'_> {
    if bytes.is_empty() {
        return Parsed::End;
    }
    let Some(h) = bytes.get(..RECORD_HEADER_LEN as usize) else {
        return Parsed::Bad(format!("{} bytes, shorter than a record header", bytes.len()));
    };
    let len_bytes = [h[0], h[1], h[2], h[3]];
    let len = u32::from_le_bytes(len_bytes);
    let stored = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    if len == 0 || len > MAX_RECORD_LEN {
        return Parsed::Bad(format!("record length {len} out of range"));
    }
    let end = RECORD_HEADER_LEN as usize + len as usize;
    let Some(payload) = bytes.get(RECORD_HEADER_LEN as usize..end) else {
        return Parsed::Bad(format!("record of {len} bytes runs past the end of the file"));
    };
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len_bytes);
    hasher.update(payload);
    let computed = hasher.finalize();
    if computed != stored {
        return Parsed::Bad(format!(
            "record CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    Parsed::Record(payload, end as u64)
}

/// Whether `bytes` is a run of zeros: from the end of the records to the end of the last
/// segment's file, the space [`reserve`] gave it, never written.
fn all_zeros(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

/// Reserves the first `len` bytes of `file` with `fallocate(2)` (mode 0: the size becomes at
/// least `len` and the new range reads as zeros), so an append into the reserved range does not
/// grow the file and the flusher's `fdatasync` has no size change to commit to the file system's
/// journal: on ext4 that is what makes a small append's sync slower at the end of a file.
/// `fallocate` writes no data (zero-filling would write the segment twice).
///
/// Best effort: where the file system cannot reserve space, or the disk is full, appends grow the
/// file as they did without it; a failed call may still leave a zero tail, which reads as the end.
fn reserve(file: &File, len: u64) {
    #[cfg(target_os = "linux")]
    if let Ok(len) = libc::off_t::try_from(len) {
        // SAFETY: `fallocate` reads no memory of ours; the descriptor is owned by `file`, open
        // for the whole call.
        unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len);
}

/// fsyncs a directory so a file created, renamed or removed in it survives power loss.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(format!("sync directory {}", dir.display()), e))
}

impl SegmentLog {
    /// Opens the segments in `dir` (which must exist), removing those whose every entry is at or
    /// below `purged` (the durable purge point) and cutting a torn record at the end of the last
    /// one. A record or header that fails its checks anywhere else is an error naming file and
    /// offset, and then nothing was changed: every file is checked before any is touched.
    pub(crate) fn open(
        dir: &Path,
        purged: Option<u64>,
        roll_bytes: u64,
    ) -> Result<(SegmentLog, Recovery), StoreError> {
        let list_err = |e| io_err(format!("list {}", dir.display()), e);
        let mut firsts = Vec::new();
        for e in fs::read_dir(dir).map_err(list_err)? {
            let e = e.map_err(list_err)?;
            if let Some(first) = e.file_name().to_str().and_then(parse_name) {
                firsts.push(first);
            }
        }
        firsts.sort_unstable();
        let mut recovery = Recovery::default();
        // Files to remove and the torn tail to cut, once every file has been checked.
        let mut remove = Vec::new();
        let mut cut = None;
        // A non-last segment ends where the next begins: one wholly purged is removed unread (a
        // purge records its point durably before removing files, so these are left by a crash).
        let mut live = Vec::new();
        for (k, &first) in firsts.iter().enumerate() {
            match (firsts.get(k + 1), purged) {
                (Some(&next), Some(p)) if next - 1 <= p => {
                    remove.push(dir.join(segment_name(first)));
                    recovery.purged_segments += 1;
                }
                _ => live.push(first),
            }
        }
        let mut segments: Vec<Segment> = Vec::new();
        let mut last_id = None;
        let n = live.len();
        for (k, &first) in live.iter().enumerate() {
            let is_last = k + 1 == n;
            let path = dir.join(segment_name(first));
            let bytes =
                fs::read(&path).map_err(|e| io_err(format!("read {}", path.display()), e))?;
            let header_first = match check_header(&bytes) {
                Ok(f) => f,
                // A crash while the last segment was being created: its header is written and
                // synced before any record, so a file no longer than a header holds none.
                Err(_) if is_last && bytes.len() as u64 <= HEADER_LEN => {
                    recovery.torn_bytes += bytes.len() as u64;
                    remove.push(path);
                    break;
                }
                Err(what) => return Err(corrupt(&path, 0, what)),
            };
            if header_first != first {
                return Err(corrupt(
                    &path,
                    0,
                    format!("the header says first index {header_first}, the name {first}"),
                ));
            }
            if let Some(prev) = segments.last() {
                if prev.next_index() != first {
                    return Err(corrupt(
                        &path,
                        0,
                        format!(
                            "starts at index {first}, but the segment before it ends at {}",
                            prev.next_index() - 1
                        ),
                    ));
                }
            }
            let mut offsets = Vec::new();
            let mut at = HEADER_LEN;
            let mut seg_last = None;
            loop {
                let rest = bytes.get(at as usize..).unwrap_or_default();
                match parse_record(rest) {
                    Parsed::End => break,
                    // The reserved space after the records of the last segment.
                    Parsed::Bad(_) if is_last && all_zeros(rest) => break,
                    Parsed::Bad(what) if !is_last => return Err(corrupt(&path, at, what)),
                    Parsed::Bad(_) => {
                        // The torn tail a crash leaves: cut so the next append follows the last
                        // whole record.
                        recovery.torn_bytes += bytes.len() as u64 - at;
                        cut = Some((path.clone(), at));
                        break;
                    }
                    Parsed::Record(payload, len) => {
                        // A record whose CRC matches was written whole: a bad entry in it is
                        // corruption (or a bug), not a torn write, wherever it is.
                        let entry = entry_codec::decode(payload)
                            .map_err(|what| corrupt(&path, at, format!("entry: {what}")))?;
                        let want = first + offsets.len() as u64;
                        if entry.log_id.index != want {
                            return Err(corrupt(
                                &path,
                                at,
                                format!("holds index {}, expected {want}", entry.log_id.index),
                            ));
                        }
                        seg_last = Some(entry.log_id);
                        offsets.push(at);
                        at += len;
                    }
                }
            }
            let next_index = first + offsets.len() as u64;
            if offsets.is_empty() {
                // Only the last segment can be empty: a roll interrupted before its first record.
                if !is_last {
                    return Err(corrupt(&path, HEADER_LEN, "no records, and a segment follows"));
                }
                remove.push(path);
                cut = None;
                break;
            }
            if is_last && purged.is_some_and(|p| next_index - 1 <= p) {
                remove.push(path);
                recovery.purged_segments += 1;
                cut = None;
                break;
            }
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| io_err(format!("open {}", path.display()), e))?;
            let tail = is_last.then(|| LogTail::from_bytes(&path, &bytes[..at as usize]));
            segments.push(Segment { first, path, file: Arc::new(file), offsets, end: at, tail });
            last_id = seg_last;
        }
        if let Some((path, at)) = cut {
            OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|f| {
                    f.set_len(at)?;
                    f.sync_all()
                })
                .map_err(|e| io_err(format!("cut the torn tail of {}", path.display()), e))?;
        }
        let mut log = SegmentLog {
            dir: dir.to_path_buf(),
            segments,
            roll_bytes,
            last: last_id,
            io: Arc::default(),
        };
        // A last segment removed above (empty, or wholly purged) leaves the one before it last.
        if let Some(seg) = log.segments.last_mut().filter(|s| s.tail.is_none()) {
            let tail = LogTail::load(&seg.path, &seg.file, seg.end)
                .map_err(|e| io_err(format!("read {}", seg.path.display()), e))?;
            seg.tail = Some(tail);
        }
        for path in &remove {
            log.remove_file(path)?;
        }
        if !remove.is_empty() {
            sync_dir(dir)?;
        }
        // After the cut is synced: a segment cut there, or one written by an earlier version.
        log.reserve_last();
        Ok((log, recovery))
    }

    /// Reserves space for appends in the last segment ([`reserve`]) up to `roll_bytes`.
    fn reserve_last(&self) {
        if let Some(seg) = self.segments.last() {
            reserve(&seg.file, self.roll_bytes);
        }
    }

    fn remove_file(&self, path: &Path) -> Result<(), StoreError> {
        fs::remove_file(path).map_err(|e| io_err(format!("remove {}", path.display()), e))
    }

    /// The log id of the last entry, if any.
    pub(crate) fn last_log_id(&self) -> Option<LogId<NodeId>> {
        self.last
    }

    /// The first index held, if any.
    #[cfg(test)]
    pub(crate) fn first_index(&self) -> Option<u64> {
        self.segments.first().map(|s| s.first)
    }

    /// The index the next append must have, if any entry is held (otherwise any index).
    pub(crate) fn next_index(&self) -> Option<u64> {
        self.segments.last().map(Segment::next_index)
    }

    /// How many segment files there are.
    #[cfg(test)]
    pub(crate) fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The lock the flusher holds from taking the unwritten bytes to writing them (the field's
    /// documentation).
    pub(crate) fn io_lock(&self) -> Arc<parking_lot::Mutex<()>> {
        self.io.clone()
    }

    /// What the flusher writes and syncs: the last segment's unwritten bytes, if any, and its
    /// file (every earlier segment was synced when the next was created). Taken with the log's
    /// read lock and [`Self::io_lock`] held.
    pub(crate) fn to_flush(&self) -> Option<(Option<PendingWrite>, Arc<File>)> {
        let seg = self.segments.last()?;
        Some((seg.tail.as_ref().and_then(LogTail::pending), seg.file.clone()))
    }

    /// Records what the flusher wrote (ignored when the tail it came from is gone).
    pub(crate) fn written(&mut self, done: &Written) -> Result<(), StoreError> {
        let Some(seg) = self.segments.last_mut() else { return Ok(()) };
        let Some(tail) = seg.tail.as_mut() else { return Ok(()) };
        tail.written_to(done, &seg.file)
            .map_err(|e| io_err(format!("write {}", seg.path.display()), e))
    }

    /// Writes the last segment's unwritten bytes into its file, unsynced. The caller holds
    /// [`Self::io_lock`].
    fn write_tail(&mut self) -> Result<(), StoreError> {
        let Some(seg) = self.segments.last_mut() else { return Ok(()) };
        let Some(tail) = seg.tail.as_mut() else { return Ok(()) };
        if let Some(pending) = tail.pending() {
            let err = |e| io_err(format!("write {}", seg.path.display()), e);
            let done = pending.write(&seg.file).map_err(err)?;
            tail.written_to(&done, &seg.file).map_err(err)?;
        }
        Ok(())
    }

    /// Writes and syncs every appended record (the flusher does this for a running store).
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        let io = self.io.clone();
        let _io = io.lock();
        self.write_tail()?;
        match self.segments.last() {
            Some(seg) => {
                seg.file.sync_data().map_err(|e| io_err(format!("sync {}", seg.path.display()), e))
            }
            None => Ok(()),
        }
    }

    /// Adds `entries` (contiguous, the first at [`Self::next_index`] when the log is not empty)
    /// after the last record, unwritten or unsynced: the flusher writes and syncs them
    /// (log_tail.rs). A segment past
    /// `roll_bytes` is synced and the next one created (synced, with its directory). An entry out
    /// of order is refused; the entries before it are written.
    pub(crate) fn append(&mut self, entries: &[Entry<TypeConfig>]) -> Result<(), StoreError> {
        let mut buf = Vec::new();
        let mut offsets = Vec::new();
        let mut last = self.last;
        let mut refused = None;
        for entry in entries {
            let index = entry.log_id.index;
            if let Some(seg) = self.segments.last() {
                let expected = seg.next_index() + offsets.len() as u64;
                if index != expected {
                    refused = Some(StoreError::LogOrder { index, expected });
                    break;
                }
            }
            let full = match self.segments.last() {
                None => true,
                // A segment holds at least one record, however small `roll_bytes` is.
                Some(s) => {
                    s.end + buf.len() as u64 >= self.roll_bytes
                        && (s.end > HEADER_LEN || !offsets.is_empty())
                }
            };
            if full {
                self.write_pending(&mut buf, &mut offsets, last)?;
                self.roll(index)?;
            }
            let base = self.segments.last().map_or(HEADER_LEN, |s| s.end);
            offsets.push(base + buf.len() as u64);
            let mut payload = Vec::with_capacity(64);
            entry_codec::encode(entry, &mut payload);
            frame(&payload, &mut buf);
            last = Some(entry.log_id);
        }
        self.write_pending(&mut buf, &mut offsets, last)?;
        refused.map_or(Ok(()), Err)
    }

    /// Writes the framed records in `buf` (starting at `offsets`) after the last segment's end;
    /// `last` is the log id of the last of them. On failure cuts the file back to its end.
    fn write_pending(
        &mut self,
        buf: &mut Vec<u8>,
        offsets: &mut Vec<u64>,
        last: Option<LogId<NodeId>>,
    ) -> Result<(), StoreError> {
        if offsets.is_empty() {
            return Ok(());
        }
        let Some(seg) = self.segments.last_mut() else {
            return Err(corrupt(&self.dir, 0, "records buffered with no segment to write them to"));
        };
        let written = match seg.tail.as_mut() {
            Some(tail) => tail.append(&seg.file, buf),
            None => seg.file.write_all_at(buf, seg.end),
        };
        let len = buf.len() as u64;
        buf.clear();
        match written {
            Ok(()) => {
                seg.offsets.append(offsets);
                seg.end += len;
                self.last = last;
                Ok(())
            }
            Err(e) => {
                offsets.clear();
                // Best effort: bytes past `end` would be read as a torn tail at the next open,
                // which cuts them anyway.
                let _ = seg.file.set_len(seg.end);
                Err(io_err(format!("write {}", seg.path.display()), e))
            }
        }
    }

    /// Syncs the last segment, cut to its last record (the reserved space goes: only the last
    /// segment may have any), and creates the next one, starting at `first`, with space reserved.
    fn roll(&mut self, first: u64) -> Result<(), StoreError> {
        let io = self.io.clone();
        let _io = io.lock();
        self.write_tail()?;
        if let Some(prev) = self.segments.last_mut() {
            prev.tail = None;
            prev.file
                .metadata()
                .and_then(|m| if m.len() > prev.end { prev.file.set_len(prev.end) } else { Ok(()) })
                .and_then(|()| prev.file.sync_all())
                .map_err(|e| io_err(format!("sync {}", prev.path.display()), e))?;
        }
        let path = self.dir.join(segment_name(first));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|f| {
                f.write_all_at(&header(first), 0)?;
                f.sync_all()?;
                Ok(f)
            })
            .map_err(|e| io_err(format!("create {}", path.display()), e))?;
        sync_dir(&self.dir)?;
        // After the header is synced: a crash leaves a header and zeros, a segment without records.
        reserve(&file, self.roll_bytes);
        let tail = LogTail::from_bytes(&path, &header(first));
        self.segments.push(Segment {
            first,
            path,
            file: Arc::new(file),
            offsets: Vec::new(),
            end: HEADER_LEN,
            tail: Some(tail),
        });
        Ok(())
    }

    /// Removes every entry at or after `since`, durably: later whole segments are removed (the
    /// last first) and the directory synced, then the segment holding `since` is cut at its
    /// record and synced. A crash in between leaves a prefix of the old log.
    pub(crate) fn truncate(&mut self, since: u64) -> Result<(), StoreError> {
        // What precedes the cut must be in the file before the tail is loaded from it again.
        let io = self.io.clone();
        let _io = io.lock();
        self.write_tail()?;
        // Loaded again after the cut; until then (and if that fails) appends go through the page
        // cache at the segment's end.
        if let Some(seg) = self.segments.last_mut() {
            seg.tail = None;
        }
        let mut removed = false;
        while let Some(seg) = self.segments.last() {
            if seg.first < since {
                break;
            }
            self.remove_file(&seg.path)?;
            self.segments.pop();
            removed = true;
        }
        if removed {
            sync_dir(&self.dir)?;
        }
        if let Some(seg) = self.segments.last_mut() {
            if since < seg.next_index() {
                let i = (since - seg.first) as usize;
                let at = seg.offsets[i];
                seg.file
                    .set_len(at)
                    .and_then(|()| seg.file.sync_all())
                    .map_err(|e| io_err(format!("truncate {}", seg.path.display()), e))?;
                seg.offsets.truncate(i);
                seg.end = at;
            }
        }
        // After the cut is synced; the new last segment may also be one a roll had cut.
        self.reserve_last();
        if let Some(seg) = self.segments.last_mut() {
            let tail = LogTail::load(&seg.path, &seg.file, seg.end)
                .map_err(|e| io_err(format!("read {}", seg.path.display()), e))?;
            seg.tail = Some(tail);
        }
        self.last = self.read_last_id()?;
        Ok(())
    }

    /// Removes every segment whose entries are all at or below `upto`; returns how many. The
    /// caller records the purge point durably first, so a segment a crash leaves behind is
    /// removed at the next open. Entries at or below `upto` in a segment that also holds later
    /// ones stay until that segment is purged whole.
    pub(crate) fn purge(&mut self, upto: u64) -> Result<usize, StoreError> {
        let whole = self.segments.iter().take_while(|s| s.next_index() - 1 <= upto).count();
        for seg in self.segments.drain(..whole) {
            fs::remove_file(&seg.path)
                .map_err(|e| io_err(format!("remove {}", seg.path.display()), e))?;
        }
        if self.segments.is_empty() {
            self.last = None;
        }
        Ok(whole)
    }

    /// The entries with indexes in `start..end` that are held, in order: one read per segment.
    pub(crate) fn read(&self, start: u64, end: u64) -> Result<Vec<Entry<TypeConfig>>, StoreError> {
        let mut out = Vec::new();
        if start >= end {
            return Ok(out);
        }
        let from = self.segments.partition_point(|s| s.next_index() <= start);
        for seg in self.segments.iter().skip(from) {
            if seg.first >= end {
                break;
            }
            let lo = start.max(seg.first);
            let hi = end.min(seg.next_index());
            if lo >= hi {
                continue;
            }
            let (i, j) = ((lo - seg.first) as usize, (hi - seg.first) as usize);
            let (a, b) = (seg.offsets[i], seg.record_end(j - 1));
            let read;
            let bytes = match seg.tail.as_ref().map(|t| (t.start(), t)) {
                // Recent entries, from memory: the direct appends left no copy in the page cache,
                // and the tail's unwritten bytes are only there.
                Some((start, tail)) if a >= start => tail.get(a, b).unwrap_or_default(),
                // A span that begins before the tail: the file up to the tail's start (all of it
                // written), then the tail.
                held => {
                    let from_file = held.map_or(b, |(start, _)| start.min(b));
                    let mut buf = vec![0u8; (from_file - a) as usize];
                    seg.file
                        .read_exact_at(&mut buf, a)
                        .map_err(|e| io_err(format!("read {}", seg.path.display()), e))?;
                    if let Some((_, tail)) = held.filter(|_| from_file < b) {
                        buf.extend_from_slice(tail.get(from_file, b).unwrap_or_default());
                    }
                    read = buf;
                    &read
                }
            };
            let mut at = 0u64;
            for k in i..j {
                let rest = bytes.get(at as usize..).unwrap_or_default();
                let Parsed::Record(payload, len) = parse_record(rest) else {
                    let what = match parse_record(rest) {
                        Parsed::Bad(w) => w,
                        _ => "missing record".into(),
                    };
                    return Err(corrupt(&seg.path, seg.offsets[k], what));
                };
                let entry = entry_codec::decode(payload)
                    .map_err(|w| corrupt(&seg.path, seg.offsets[k], format!("entry: {w}")))?;
                out.push(entry);
                at += len;
            }
        }
        Ok(out)
    }

    /// The end of the longest run of held records from `start` (and before `end`) whose framed
    /// bytes add up to at most `max_bytes`, but at least one record: `start + 1` when the
    /// record at `start` alone is larger. `start` when no record in `start..end` is held at
    /// `start`. From the in-memory offsets; nothing is read.
    pub(crate) fn end_within(&self, start: u64, end: u64, max_bytes: u64) -> u64 {
        let mut total = 0u64;
        let mut at = start;
        let from = self.segments.partition_point(|s| s.next_index() <= start);
        for seg in self.segments.iter().skip(from) {
            if at >= end || seg.first > at {
                break;
            }
            let hi = end.min(seg.next_index());
            while at < hi {
                let i = (at - seg.first) as usize;
                let len = seg.record_end(i) - seg.offsets[i];
                if at > start && total + len > max_bytes {
                    return at;
                }
                total += len;
                at += 1;
            }
        }
        at
    }

    /// Reads back the log id of the last record (after a truncation or a failed write).
    fn read_last_id(&self) -> Result<Option<LogId<NodeId>>, StoreError> {
        let Some(seg) = self.segments.last() else { return Ok(None) };
        let Some(next) = seg.next_index().checked_sub(1).filter(|&i| i >= seg.first) else {
            return Ok(None);
        };
        Ok(self.read(next, next + 1)?.pop().map(|e| e.log_id))
    }
}

impl Drop for SegmentLog {
    /// A closed log leaves every appended record in its files (unsynced, best effort: an error
    /// here is a record lost, which an unsynced append may be).
    fn drop(&mut self) {
        let io = self.io.clone();
        let _io = io.lock();
        let _ = self.write_tail();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Request;
    use openraft::testing::blank_ent;
    use openraft::EntryPayload;

    fn ent(term: u64, index: u64) -> Entry<TypeConfig> {
        let mut e = blank_ent::<TypeConfig>(term, 1, index);
        e.payload = EntryPayload::Normal(Request::set(format!("key-{index}"), "v".repeat(40)));
        e
    }

    fn ents(term: u64, r: std::ops::RangeInclusive<u64>) -> Vec<Entry<TypeConfig>> {
        r.map(|i| ent(term, i)).collect()
    }

    /// A segment of these few bytes holds about 5 of the entries above (each ~100 bytes).
    const SMALL: u64 = 500;

    fn files(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn indexes(log: &SegmentLog, start: u64, end: u64) -> Vec<u64> {
        log.read(start, end).unwrap().iter().map(|e| e.log_id.index).collect()
    }

    #[test]
    fn roll_over_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, rec) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        assert_eq!(rec, Recovery::default());
        log.append(&ents(1, 1..=3)).unwrap();
        for i in 4..=30 {
            log.append(&[ent(2, i)]).unwrap();
        }
        let n = log.segment_count();
        assert!(n >= 5, "{n} segments");
        assert_eq!(files(dir.path()).len(), n);
        assert_eq!(files(dir.path())[0], segment_name(1));
        assert_eq!(indexes(&log, 0, 100), (1..=30).collect::<Vec<_>>());
        assert_eq!(indexes(&log, 7, 12), (7..12).collect::<Vec<_>>());
        assert_eq!(
            log.read(3, 5).unwrap(),
            ents(1, 3..=3).into_iter().chain([ent(2, 4)]).collect::<Vec<_>>()
        );
        assert_eq!(log.last_log_id(), Some(ent(2, 30).log_id));
        let before = log.read(0, 100).unwrap();
        drop(log);
        let (log, rec) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        assert_eq!(rec, Recovery::default());
        assert_eq!(log.segment_count(), n);
        assert_eq!(log.read(0, 100).unwrap(), before);
        assert_eq!(log.last_log_id(), Some(ent(2, 30).log_id));
        assert_eq!(log.next_index(), Some(31));
    }

    #[test]
    fn end_within_bounds_bytes_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        for i in 1..=30 {
            log.append(&[ent(1, i)]).unwrap();
        }
        // Every record of `ent` frames to the same length (keys key-1..key-30 differ by at
        // most one digit, so measure the one at 10..=30, all two digits).
        let seg = log.segments.iter().find(|s| s.first <= 10 && 10 < s.next_index()).unwrap();
        let i = (10 - seg.first) as usize;
        let rec = seg.record_end(i) - seg.offsets[i];
        assert!(log.segment_count() >= 5);
        // 7 records' worth from 10: crosses segment boundaries, stops before the 8th.
        assert_eq!(log.end_within(10, 100, 7 * rec), 17);
        assert_eq!(log.end_within(10, 100, 7 * rec + rec - 1), 17);
        // The range's end bounds it too.
        assert_eq!(log.end_within(10, 13, 100 * rec), 13);
        assert_eq!(log.end_within(10, 100, u64::MAX), 31);
        // One record at least, however small the budget.
        assert_eq!(log.end_within(10, 100, 1), 11);
        // Nothing held at `start`: nothing.
        assert_eq!(log.end_within(31, 100, u64::MAX), 31);
        assert_eq!(log.end_within(10, 10, u64::MAX), 10);
    }

    #[test]
    fn append_out_of_order_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 5..=6)).unwrap();
        let e = log.append(&[ent(1, 8)]).unwrap_err();
        assert!(matches!(e, StoreError::LogOrder { index: 8, expected: 7 }), "{e}");
        // A batch whose second entry is out of order keeps its first.
        let e = log.append(&[ent(1, 7), ent(1, 9)]).unwrap_err();
        assert!(matches!(e, StoreError::LogOrder { index: 9, expected: 8 }), "{e}");
        assert_eq!(indexes(&log, 0, 100), vec![5, 6, 7]);
        drop(log);
        let (log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        assert_eq!(indexes(&log, 0, 100), vec![5, 6, 7]);
    }

    #[test]
    fn torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 1..=12)).unwrap();
        let last = log.segments.last().unwrap();
        let (path, end, last_off) = (last.path.clone(), last.end, *last.offsets.last().unwrap());
        drop(log);
        // Every cut inside the last record, and garbage appended after it, is a torn tail.
        for cut in (last_off + 1)..end {
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(cut).unwrap();
            drop(f);
            let (log, rec) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
            assert_eq!(rec.torn_bytes, cut - last_off);
            assert_eq!(indexes(&log, 0, 100), (1..=11).collect::<Vec<_>>());
            // Cut at the last whole record; whatever follows is space reserved again.
            assert!(all_zeros(&fs::read(&path).unwrap()[last_off as usize..]));
            // Put record 12 back for the next cut.
            let mut log = log;
            log.append(&[ent(1, 12)]).unwrap();
        }
        // Garbage after the last record (in the reserved space, or past the end of the file).
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&[0xa5; 13], end).unwrap();
        let len = f.metadata().unwrap().len();
        drop(f);
        let (mut log, rec) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        assert_eq!(rec.torn_bytes, len - end);
        assert_eq!(indexes(&log, 0, 100), (1..=12).collect::<Vec<_>>());
        log.append(&[ent(1, 13)]).unwrap();
        assert_eq!(indexes(&log, 0, 100), (1..=13).collect::<Vec<_>>());
    }

    /// A new log in `dir` (segments of `roll` bytes) holding entries 1..=`n` of term 1, with
    /// its last segment's path and the end of its records.
    fn log_of(dir: &Path, roll: u64, n: u64) -> (SegmentLog, PathBuf, u64) {
        let (mut log, _) = SegmentLog::open(dir, None, roll).unwrap();
        log.append(&ents(1, 1..=n)).unwrap();
        let seg = log.segments.last().unwrap();
        let (path, end) = (seg.path.clone(), seg.end);
        (log, path, end)
    }

    /// The length of the file at `path`.
    fn file_len(path: &Path) -> u64 {
        fs::metadata(path).unwrap().len()
    }

    #[test]
    fn appends_go_into_reserved_space() {
        const ROLL: u64 = 4096;
        let dir = tempfile::tempdir().unwrap();
        let (log, path, end) = log_of(dir.path(), ROLL, 10);
        assert_eq!(log.segment_count(), 1);
        assert!(end < ROLL);
        if cfg!(target_os = "linux") {
            assert_eq!(file_len(&path), ROLL, "the segment's space is reserved when it is created");
        }
        assert!(all_zeros(&fs::read(&path).unwrap()[end as usize..]));
        drop(log);
        // The zeros after the last record are the end, not a torn tail: nothing is cut.
        let (mut log, rec) = SegmentLog::open(dir.path(), None, ROLL).unwrap();
        assert_eq!(rec, Recovery::default());
        assert_eq!(log.segments.last().unwrap().end, end);
        assert_eq!(log.read(0, 100).unwrap(), ents(1, 1..=10));
        // Appends continue right after the last record, into the reserved space.
        log.append(&ents(1, 11..=12)).unwrap();
        assert_eq!(
            file_len(&path),
            if cfg!(target_os = "linux") { ROLL } else { log.segments[0].end }
        );
        drop(log);
        let (mut log, rec) = SegmentLog::open(dir.path(), None, ROLL).unwrap();
        assert_eq!(rec, Recovery::default());
        assert_eq!(log.read(0, 100).unwrap(), ents(1, 1..=12));
        // A roll cuts the segment it closes to its last record and reserves the next one's space.
        let mut i = 13;
        while log.segment_count() == 1 {
            log.append(&[ent(1, i)]).unwrap();
            i += 1;
        }
        let (closed, next) = (&log.segments[0], &log.segments[1]);
        assert_eq!(file_len(&closed.path), closed.end);
        if cfg!(target_os = "linux") {
            assert_eq!(file_len(&next.path), ROLL);
        }
        // A truncate inside the last segment cuts it there and reserves its space again.
        let cut_at = next.first + 1;
        log.truncate(cut_at).unwrap();
        let seg = log.segments.last().unwrap();
        assert!(all_zeros(&fs::read(&seg.path).unwrap()[seg.end as usize..]));
        if cfg!(target_os = "linux") {
            assert_eq!(file_len(&seg.path), ROLL);
        }
        log.append(&ents(2, cut_at..=cut_at + 1)).unwrap();
        let expected: Vec<_> = log.read(0, 1000).unwrap();
        assert_eq!(expected.last().unwrap().log_id, ent(2, cut_at + 1).log_id);
        drop(log);
        let (log, rec) = SegmentLog::open(dir.path(), None, ROLL).unwrap();
        assert_eq!(rec, Recovery::default());
        assert_eq!(log.read(0, 1000).unwrap(), expected);
    }

    #[test]
    fn a_torn_record_in_the_reserved_space_is_cut() {
        const ROLL: u64 = 4096;
        let dir = tempfile::tempdir().unwrap();
        let (log, path, end) = log_of(dir.path(), ROLL, 5);
        let mut next = Vec::new();
        frame(
            &{
                let mut p = Vec::new();
                entry_codec::encode(&ent(1, 6), &mut p);
                p
            },
            &mut next,
        );
        drop(log);
        // Only the record's first bytes reached the disk (its length and CRC), zeros after them.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&next[..8], end).unwrap();
        let len = f.metadata().unwrap().len();
        drop(f);
        let (mut log, rec) = SegmentLog::open(dir.path(), None, ROLL).unwrap();
        assert_eq!(rec.torn_bytes, len - end);
        assert_eq!(log.read(0, 100).unwrap(), ents(1, 1..=5));
        assert!(all_zeros(&fs::read(&path).unwrap()[end as usize..]));
        if cfg!(target_os = "linux") {
            assert_eq!(file_len(&path), ROLL, "the cut segment's space is reserved again");
        }
        log.append(&ents(1, 6..=7)).unwrap();
        drop(log);
        let (log, rec) = SegmentLog::open(dir.path(), None, ROLL).unwrap();
        assert_eq!(rec, Recovery::default());
        assert_eq!(log.read(0, 100).unwrap(), ents(1, 1..=7));
    }

    #[test]
    fn zeros_after_the_records_of_a_closed_segment_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 1..=20)).unwrap();
        assert!(log.segment_count() >= 2);
        let (path, end) = (log.segments[0].path.clone(), log.segments[0].end);
        drop(log);
        // Only the last segment has reserved space: a closed one was cut to its last record.
        OpenOptions::new().write(true).open(&path).unwrap().set_len(end + 64).unwrap();
        match SegmentLog::open(dir.path(), None, SMALL).err().unwrap() {
            StoreError::CorruptLog { path: p, offset, what } => {
                assert_eq!((p, offset), (path, end));
                assert!(what.contains("length 0"), "{what}");
            }
            other => panic!("expected CorruptLog, got {other}"),
        }
    }

    #[test]
    fn corrupt_record_in_a_closed_segment_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 1..=20)).unwrap();
        assert!(log.segment_count() >= 3);
        let first = &log.segments[0];
        let (path, off) = (first.path.clone(), first.offsets[2]);
        drop(log);
        let before: Vec<_> =
            files(dir.path()).iter().map(|n| fs::read(dir.path().join(n)).unwrap()).collect();
        let f = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, off + 20).unwrap();
        f.write_all_at(&[b[0] ^ 0x40], off + 20).unwrap();
        drop(f);
        let err = SegmentLog::open(dir.path(), None, SMALL).err().unwrap();
        match &err {
            StoreError::CorruptLog { path: p, offset, what } => {
                assert_eq!(p, &path);
                assert_eq!(*offset, off);
                assert!(what.contains("CRC mismatch"), "{what}");
            }
            other => panic!("expected CorruptLog, got {other}"),
        }
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        // Refusing changed nothing but the flipped byte.
        let after: Vec<_> =
            files(dir.path()).iter().map(|n| fs::read(dir.path().join(n)).unwrap()).collect();
        assert_eq!(after.len(), before.len());
        assert_eq!(after.iter().zip(&before).filter(|(a, b)| a != b).count(), 1);
        // A corrupt header is named too.
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.write_all_at(&[b[0]], off + 20).unwrap();
        f.write_all_at(b"X", 0).unwrap();
        drop(f);
        match SegmentLog::open(dir.path(), None, SMALL).err().unwrap() {
            StoreError::CorruptLog { offset: 0, what, .. } => {
                assert!(what.contains("header"), "{what}")
            }
            other => panic!("expected CorruptLog, got {other}"),
        }
    }

    #[test]
    fn truncate_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 1..=30)).unwrap();
        let n = log.segment_count();
        // A cut in the middle of an early segment removes every later segment.
        let target = log.segments[1].first + 1;
        log.truncate(target).unwrap();
        assert_eq!(log.segment_count(), 2);
        assert_eq!(files(dir.path()).len(), 2);
        assert_eq!(indexes(&log, 0, 100), (1..target).collect::<Vec<_>>());
        assert_eq!(log.last_log_id(), Some(ent(1, target - 1).log_id));
        assert!(n > 2);
        // Appends continue at the cut, with another term.
        log.append(&ents(2, target..=target + 2)).unwrap();
        // A cut at a segment's first index removes that segment.
        let second = log.segments[1].first;
        log.truncate(second).unwrap();
        assert_eq!(log.segment_count(), 1);
        assert_eq!(log.last_log_id(), Some(ent(1, second - 1).log_id));
        // Past the end: nothing.
        log.truncate(1000).unwrap();
        assert_eq!(indexes(&log, 0, 100), (1..second).collect::<Vec<_>>());
        log.append(&ents(3, second..=second + 1)).unwrap();
        drop(log);
        let (mut log, rec) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        assert_eq!(rec, Recovery::default());
        assert_eq!(indexes(&log, 0, 100), (1..=second + 1).collect::<Vec<_>>());
        assert_eq!(log.read(second, second + 1).unwrap(), vec![ent(3, second)]);
        // Everything.
        log.truncate(0).unwrap();
        assert_eq!(log.segment_count(), 0);
        assert_eq!(log.last_log_id(), None);
        assert!(files(dir.path()).is_empty());
    }

    #[test]
    fn a_segment_longer_than_its_tail_in_memory_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let roll = 64 << 20;
        let (mut log, _) = SegmentLog::open(dir.path(), None, roll).unwrap();
        // About 100 bytes an entry: three times the bytes the tail keeps, in one segment, written
        // as the flusher would between appends, so early entries are read from the disk and
        // recent ones from memory.
        let n = (3 * crate::store::log_tail::KEEP / 100) as u64;
        let mut next = 1;
        while next <= n {
            let last = (next + 996).min(n);
            log.append(&ents(1, next..=last)).unwrap();
            log.sync().unwrap();
            next = last + 1;
        }
        let tail = log.segments[0].tail.as_ref().unwrap();
        assert!(tail.get(HEADER_LEN, HEADER_LEN + 1).is_none(), "the tail was trimmed");
        assert_eq!(log.segment_count(), 1);
        assert_eq!(indexes(&log, 0, n + 1), (1..=n).collect::<Vec<_>>());
        assert_eq!(log.read(n - 5, n + 1).unwrap(), ents(1, n - 5..=n));
        // A cut far behind what the tail holds: it is loaded again from the disk.
        log.truncate(10).unwrap();
        log.append(&ents(2, 10..=12)).unwrap();
        let mut want = ents(1, 8..=9);
        want.extend(ents(2, 10..=12));
        assert_eq!(log.read(8, 13).unwrap(), want);
        drop(log);
        let (log, rec) = SegmentLog::open(dir.path(), None, roll).unwrap();
        assert_eq!(rec, Recovery::default());
        assert_eq!(log.read(1, 13).unwrap()[7..], want[..]);
        assert_eq!(log.last_log_id(), Some(ent(2, 12).log_id));
    }

    #[test]
    fn a_read_across_the_tails_start_takes_the_unwritten_bytes_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, 64 << 20).unwrap();
        // About 1.5 MiB written and synced, then 1 MiB more unwritten: the tail is cut back
        // to about where the written bytes end, and a read from 1 MiB on spans both.
        let per_mib = (crate::store::log_tail::KEEP / 100) as u64;
        let (synced, last) = (per_mib * 3 / 2, per_mib * 5 / 2);
        log.append(&ents(1, 1..=synced)).unwrap();
        log.sync().unwrap();
        log.append(&ents(1, synced + 1..=last)).unwrap();
        let seg = &log.segments[0];
        assert!(seg.tail.as_ref().unwrap().start() > seg.offsets[per_mib as usize]);
        assert_eq!(indexes(&log, per_mib, last + 1), (per_mib..=last).collect::<Vec<_>>());
        assert_eq!(log.read(synced - 1, synced + 2).unwrap(), ents(1, synced - 1..=synced + 1));
    }

    #[test]
    fn purge_removes_whole_segments_only() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 1..=30)).unwrap();
        let n = log.segment_count();
        let second_first = log.segments[1].first;
        // Inside the first segment: nothing is removed.
        assert_eq!(log.purge(second_first - 2).unwrap(), 0);
        // Its last index: the first segment goes.
        assert_eq!(log.purge(second_first - 1).unwrap(), 1);
        assert_eq!(log.first_index(), Some(second_first));
        assert_eq!(files(dir.path()).len(), n - 1);
        assert_eq!(indexes(&log, 0, 100), (second_first..=30).collect::<Vec<_>>());
        // A purge point recorded but whose files a crash left: removed at open, unread even if
        // their content is garbage.
        let third_first = log.segments[1].first;
        let leftover = log.segments[0].path.clone();
        drop(log);
        fs::write(&leftover, b"garbage").unwrap();
        let (mut log, rec) = SegmentLog::open(dir.path(), Some(third_first - 1), SMALL).unwrap();
        assert_eq!(rec.purged_segments, 1);
        assert!(!leftover.exists());
        assert_eq!(log.first_index(), Some(third_first));
        // Past the end: every segment, and appends restart at any index.
        log.purge(100).unwrap();
        assert_eq!(log.segment_count(), 0);
        assert!(files(dir.path()).is_empty());
        log.append(&ents(4, 101..=102)).unwrap();
        assert_eq!(files(dir.path()), vec![segment_name(101)]);
        drop(log);
        // A last segment wholly at or below the purge point is removed at open too.
        let (log, rec) = SegmentLog::open(dir.path(), Some(102), SMALL).unwrap();
        assert_eq!((rec.purged_segments, log.segment_count()), (1, 0));
    }

    #[test]
    fn interrupted_roll_leaves_a_removable_segment() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 1..=3)).unwrap();
        let (path, end) = (log.segments[0].path.clone(), log.segments[0].end);
        drop(log);
        // A roll cuts the segment it closes to its last record before it creates the next.
        let cut = || OpenOptions::new().write(true).open(&path).unwrap().set_len(end).unwrap();
        cut();
        // A header-only next segment, and one whose header is incomplete.
        fs::write(dir.path().join(segment_name(4)), header(4)).unwrap();
        let (log, rec) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        assert_eq!(indexes(&log, 0, 10), vec![1, 2, 3]);
        assert_eq!(rec.torn_bytes, 0);
        drop(log);
        cut();
        fs::write(dir.path().join(segment_name(4)), &header(4)[..10]).unwrap();
        let (mut log, rec) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        assert_eq!(rec.torn_bytes, 10);
        assert_eq!(files(dir.path()), vec![segment_name(1)]);
        log.append(&[ent(1, 4)]).unwrap();
        assert_eq!(indexes(&log, 0, 10), vec![1, 2, 3, 4]);
    }

    #[test]
    fn unknown_files_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        fs::write(dir.path().join("12.seg"), b"x").unwrap();
        let (mut log, _) = SegmentLog::open(dir.path(), None, SMALL).unwrap();
        log.append(&ents(1, 1..=2)).unwrap();
        log.truncate(0).unwrap();
        assert_eq!(files(dir.path()), vec!["12.seg".to_string(), "notes.txt".to_string()]);
    }
}
