//! Sends and receives a whole snapshot as one streamed body ([`crate::snapshot_wire`]'s format),
//! in bounded memory at both ends:
//!
//! - [`SnapshotBody`] (the leader, `RaftNetwork::full_snapshot` in [`crate::network`]) is an
//!   `http_body::Body`: a blocking thread reads the `snapshot` file in [`BLOCK_BYTES`] blocks,
//!   CRCs them and queues at most [`QUEUED_BLOCKS`] of them for the connection;
//! - [`receive`] (the follower, `POST /raft/snapshot` in [`crate::service`]) reads any such body
//!   frame by frame, checks it while a blocking thread unpacks a streamed snapshot (`SFRSNAP2`)
//!   into a new tables directory `snapshot.incoming.<n>.tables/` (each table's length and CRC
//!   checked as it arrives, each synced in the background once written) or appends any other
//!   to the file `snapshot.incoming.<n>`, and only once every check passed hands it to
//!   `Raft::install_full_snapshot` (whose install checks the meta, and ingest each table's
//!   metadata blocks).
//!   A refused or interrupted body removes what it wrote and changes nothing else.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use openraft::error::{Fatal, RaftError};
use openraft::raft::SnapshotResponse;
use openraft::{Snapshot, Vote};

use crate::snapshot_wire::{self, Header, TransferError, PREFIX_BYTES, TRAILER_BYTES};
use crate::store::snapshot_dir::{TablesReader, HEADER_FILE};
use crate::store::snapshot_stream::{self, Bad, STREAM_MAGIC};
use crate::store::{Parts, SnapshotData, Tables};
use crate::{NodeId, Raft, TypeConfig};

/// Bytes the sender reads from the file at a time (one body frame).
pub const BLOCK_BYTES: usize = 1 << 20;
/// Blocks the sender reads ahead of the connection, and the receiver queues for its writer.
pub const QUEUED_BLOCKS: usize = 4;
/// Bytes the receiver's writer gathers before each `write` to the incoming file.
const WRITE_BYTES: usize = 1 << 20;

/// The sending end: the body of one snapshot. Dropping it stops the reading thread.
pub struct SnapshotBody {
    blocks: tokio::sync::mpsc::Receiver<io::Result<Bytes>>,
    left: u64,
    progress: Progress,
}

/// Bytes of a [`SnapshotBody`] handed to the connection so far, shared with a watchdog.
#[derive(Clone, Debug)]
pub struct Progress {
    sent: Arc<AtomicU64>,
    total: u64,
}

impl SnapshotBody {
    /// The body sending `snapshot` (its file, from its first byte) on behalf of the leader whose
    /// vote is `vote`.
    pub async fn new(
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
    ) -> io::Result<SnapshotBody> {
        let (mut source, len): (Box<dyn Read + Send>, u64) =
            match snapshot.snapshot.into_parts().await {
                Parts::File(mut file, _path) => {
                    file.seek(SeekFrom::Start(0))?;
                    let len = file.metadata()?.len();
                    (Box::new(file), len)
                }
                Parts::Tables(t, reader) => {
                    let reader = match reader {
                        Some(r) => r,
                        None => TablesReader::open(&t.dir, &t.header)?,
                    };
                    (Box::new(reader), t.header.stream_len())
                }
            };
        let prefix = snapshot_wire::encode_prefix(&Header { vote, meta: snapshot.meta, len });
        let total = prefix.len() as u64 + len + TRAILER_BYTES as u64;
        let (tx, blocks) = tokio::sync::mpsc::channel(QUEUED_BLOCKS);
        tokio::task::spawn_blocking(move || {
            if tx.blocking_send(Ok(Bytes::from(prefix))).is_err() {
                return;
            }
            let end = match send_stream(&mut source, len, &tx) {
                Ok(crc) => Ok(Bytes::copy_from_slice(&crc.to_le_bytes())),
                Err(e) => Err(e),
            };
            let _ = tx.blocking_send(end);
        });
        let progress = Progress { sent: Arc::new(AtomicU64::new(0)), total };
        Ok(SnapshotBody { blocks, left: total, progress })
    }

    /// The body's length in bytes.
    pub fn len(&self) -> u64 {
        self.progress.total
    }

    /// Whether the body is empty (never: it has at least the prefix and the CRC).
    pub fn is_empty(&self) -> bool {
        self.progress.total == 0
    }

    /// A handle on how much of the body was handed on.
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }
}

/// Reads the `len` bytes of `source` into `tx` in [`BLOCK_BYTES`] blocks; returns their CRC-32.
/// An error when the source is not `len` bytes long or `tx` was dropped.
fn send_stream(
    source: &mut dyn Read,
    len: u64,
    tx: &tokio::sync::mpsc::Sender<io::Result<Bytes>>,
) -> io::Result<u32> {
    let mut crc = crc32fast::Hasher::new();
    let mut left = len;
    while left > 0 {
        let want = BLOCK_BYTES.min(usize::try_from(left).unwrap_or(usize::MAX));
        let mut block = vec![0u8; want];
        source.read_exact(&mut block).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("reading the snapshot, {left} of {len} bytes left: {e}"),
            )
        })?;
        crc.update(&block);
        left -= want as u64;
        if tx.blocking_send(Ok(Bytes::from(block))).is_err() {
            return Err(io::Error::other("the snapshot body was dropped"));
        }
    }
    let mut extra = [0u8; 1];
    if source.read(&mut extra)? != 0 {
        return Err(io::Error::other(format!("the snapshot grew past {len} bytes")));
    }
    Ok(crc.finalize())
}

impl Body for SnapshotBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        match this.blocks.poll_recv(cx) {
            Poll::Ready(Some(Ok(block))) => {
                this.left = this.left.saturating_sub(block.len() as u64);
                this.progress.sent.fetch_add(block.len() as u64, Ordering::Relaxed);
                Poll::Ready(Some(Ok(Frame::data(block))))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

impl Progress {
    /// Bytes handed on so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Completes (with why) once no byte was handed on for `stall` while some were left, or
    /// `reply_within` after the last one was: the receiver answers only after its install.
    pub async fn stalled(&self, stall: Duration, reply_within: Duration) -> String {
        let tick = (stall / 4).max(Duration::from_millis(10));
        let (mut last, mut since) = (self.sent(), Instant::now());
        loop {
            tokio::time::sleep(tick).await;
            let now = self.sent();
            if now >= self.total {
                tokio::time::sleep(reply_within).await;
                return format!(
                    "no reply within {} s of the snapshot's last byte",
                    reply_within.as_secs()
                );
            }
            if now != last {
                (last, since) = (now, Instant::now());
            } else if since.elapsed() >= stall {
                return format!(
                    "the snapshot body stalled for {} s after {now} of {} bytes",
                    stall.as_secs(),
                    self.total
                );
            }
        }
    }
}

/// What [`receive`] did with a body that passed every check.
#[derive(Debug)]
pub enum Received {
    /// openraft's answer to the install: the receiver's vote.
    Installed(Result<SnapshotResponse<NodeId>, Fatal<NodeId>>),
    /// The sender's vote is below the receiver's, which answers with it and reads nothing more.
    StaleVote(SnapshotResponse<NodeId>),
}

/// Reads the snapshot body `body` into a new incoming file (a streamed snapshot: its tables
/// directory) of `raft`'s state machine and, once every check of [`crate::snapshot_wire`]
/// passed, installs it. Waits at most `stall` for each frame. On a refusal (the `Err`) what it
/// wrote is removed and nothing else changed;
/// callers serialise calls (one incoming file at a time: `begin_receiving_snapshot` removes
/// earlier ones).
pub async fn receive<B>(raft: &Raft, body: B, stall: Duration) -> Result<Received, TransferError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut frames = Frames { body, pending: Bytes::new(), stall, got: 0 };
    let prefix = frames.read_exact(PREFIX_BYTES, "header length").await?;
    let header_len = snapshot_wire::decode_prefix(&prefix)?;
    let header = frames.read_exact(header_len as usize, "header").await?;
    let header = snapshot_wire::decode_header(&header)?;
    // Not needed for safety (the install checks the vote again) but spares the transfer.
    let my_vote = raft.metrics().borrow().vote;
    if header.vote < my_vote {
        return Ok(Received::StaleVote(SnapshotResponse::new(my_vote)));
    }

    let data = match raft.begin_receiving_snapshot().await {
        Ok(d) => d,
        Err(RaftError::Fatal(f)) => return Ok(Received::Installed(Err(f))),
        Err(RaftError::APIError(never)) => match never {},
    };
    let (file, path) = data.into_std().await.map_err(TransferError::Io)?;
    let mut incoming = Incoming { path: Some(path.clone()) };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(QUEUED_BLOCKS);
    let dest = path.clone();
    let writer = tokio::task::spawn_blocking(move || write_incoming(file, &dest, rx));
    let copied = copy_snapshot(&mut frames, header.len, &tx).await;
    drop(tx);
    let written = match writer.await {
        Ok(r) => r.map_err(TransferError::Io),
        Err(e) => Err(TransferError::Io(io::Error::other(format!("the writer thread: {e}")))),
    };
    copied?;
    let (written, computed) = written?;
    let stored = frames.read_exact(TRAILER_BYTES, "CRC").await?;
    let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    if stored != computed {
        return Err(TransferError::CrcMismatch { stored, computed });
    }
    if frames.next().await?.is_some() {
        return Err(TransferError::TrailingBytes);
    }
    let data = match written {
        Written::File(file) => SnapshotData::from_std(file, path),
        Written::Tables(t) => SnapshotData::tables(t, None),
        // Bytes that arrived as sent (the body's CRC holds) but are no snapshot.
        Written::Corrupt(what) => return Err(TransferError::Snapshot(what)),
    };
    // From here what was written (synced) is openraft's: its install publishes it.
    incoming.path = None;
    let snapshot = Snapshot { meta: header.meta, snapshot: Box::new(data) };
    Ok(Received::Installed(raft.install_full_snapshot(header.vote, snapshot).await))
}

/// Removes the incoming file and its tables directory when dropped armed: a refused body, or a
/// receive abandoned because its connection closed.
struct Incoming {
    path: Option<PathBuf>,
}

impl Drop for Incoming {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_dir_all(tables_dir(&p));
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The tables directory a streamed snapshot arriving for the incoming file `path` is unpacked
/// into: `<path>.tables`.
fn tables_dir(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tables");
    PathBuf::from(name)
}

/// Moves the next `len` bytes of `frames` into `tx`.
async fn copy_snapshot<B>(
    frames: &mut Frames<B>,
    len: u64,
    tx: &tokio::sync::mpsc::Sender<Bytes>,
) -> Result<(), TransferError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut left = len;
    while left > 0 {
        let Some(mut piece) = frames.next().await? else {
            return Err(TransferError::Truncated {
                inside: "snapshot",
                got: len - left,
                expected: len,
            });
        };
        if piece.len() as u64 > left {
            frames.pending = piece.split_off(left as usize);
        }
        left -= piece.len() as u64;
        if tx.send(piece).await.is_err() {
            // The writer failed; its error is the one reported.
            return Ok(());
        }
    }
    Ok(())
}

/// What [`write_incoming`] made of a body's snapshot bytes.
enum Written {
    /// Any snapshot but a streamed one, appended to the incoming file as it is.
    File(File),
    /// A streamed snapshot, unpacked into a tables directory (every table checked).
    Tables(Tables),
    /// A streamed snapshot that fails a check of its own (its header, a table's length or CRC,
    /// bytes after the last table); nothing of it is kept.
    Corrupt(String),
}

/// Takes the snapshot bytes of a body from `rx` and returns what it made of them with the
/// CRC-32 of every byte: a streamed snapshot (`SFRSNAP2`) is unpacked into the directory
/// [`tables_dir`] of `path`, each table written once and synced in the background as soon as
/// it is complete; any other is appended to `file` ([`append_incoming`]). Every byte is read
/// even after a check failed, so the body's own CRC is still checked first.
fn write_incoming(
    file: File,
    path: &Path,
    rx: tokio::sync::mpsc::Receiver<Bytes>,
) -> io::Result<(Written, u32)> {
    let mut r = ChannelReader { rx, piece: Bytes::new(), crc: crc32fast::Hasher::new() };
    let mut magic = [0u8; 8];
    let mut got = 0;
    while got < magic.len() {
        let n = r.read(&mut magic[got..])?;
        if n == 0 {
            break;
        }
        got += n;
    }
    if &magic[..got] != STREAM_MAGIC {
        return append_incoming(file, &magic[..got], r);
    }
    // This thread removes the directory on any failure, itself: when the route is abandoned
    // (its connection closed) it may still be writing after the route's guard ran; the channel
    // then ends early, which fails the unpack here.
    let dir = tables_dir(path);
    std::fs::create_dir(&dir)?;
    let unpacked = unpack_incoming(&mut r, &dir);
    if unpacked.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    match unpacked {
        Ok(header) => {
            let written = Written::Tables(Tables { dir, header, checked: true });
            Ok((written, r.crc.finalize()))
        }
        Err(Bad::Corrupt(what)) => {
            io::copy(&mut r, &mut io::sink())?;
            Ok((Written::Corrupt(what), r.crc.finalize()))
        }
        Err(Bad::Io(e)) => Err(e),
    }
}

/// Unpacks the rest of a streamed snapshot (its magic already read) from `r` into `dir`: the
/// tables, then the header file; syncs them all and `dir`.
fn unpack_incoming(r: &mut ChannelReader, dir: &Path) -> Result<snapshot_stream::Header, Bad> {
    let header = snapshot_stream::read_header_after_magic(r)?;
    let syncer = TableSync::new()?;
    let unpacked = snapshot_stream::unpack(r, &header, Some(dir), &mut |f| syncer.push(f));
    syncer.finish()?;
    unpacked?;
    let mut f = File::create_new(dir.join(HEADER_FILE))?;
    f.write_all(&header.raw)?;
    f.sync_all()?;
    File::open(dir)?.sync_all()?;
    Ok(header)
}

/// The bytes of a body's snapshot as they arrive, with their CRC-32.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    piece: Bytes,
    crc: crc32fast::Hasher,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.piece.is_empty() {
            match self.rx.blocking_recv() {
                Some(b) => self.piece = b,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.piece.len());
        let taken = self.piece.split_to(n);
        self.crc.update(&taken);
        buf[..n].copy_from_slice(&taken);
        Ok(n)
    }
}

/// A thread syncing each table handed to it, so the disk writes of one table overlap the
/// transfer of the next.
struct TableSync {
    files: Option<std::sync::mpsc::Sender<File>>,
    thread: std::thread::JoinHandle<io::Result<()>>,
}

impl TableSync {
    fn new() -> io::Result<TableSync> {
        let (files, rx) = std::sync::mpsc::channel::<File>();
        let thread = std::thread::Builder::new().name("snapshot-sync".into()).spawn(move || {
            for f in rx {
                f.sync_data()?;
            }
            Ok(())
        })?;
        Ok(TableSync { files: Some(files), thread })
    }

    fn push(&self, f: File) -> io::Result<()> {
        match &self.files {
            Some(tx) => tx.send(f).or_else(|back| back.0.sync_data()),
            None => f.sync_data(),
        }
    }

    /// Waits for every queued sync; the first error of any of them.
    fn finish(mut self) -> io::Result<()> {
        drop(self.files.take());
        match self.thread.join() {
            Ok(r) => r,
            Err(_) => Err(io::Error::other("the snapshot sync thread panicked")),
        }
    }
}

/// Appends `first` and then every byte of `r` to `file` in [`WRITE_BYTES`] writes and syncs
/// it; returns the file and the CRC-32 of every byte. Every [`SYNC_BYTES`] a background thread
/// syncs what was written so far, so the disk writes overlap the transfer instead of all
/// waiting for the last sync.
fn append_incoming(file: File, first: &[u8], mut r: ChannelReader) -> io::Result<(Written, u32)> {
    let syncer = BackgroundSync::new(&file)?;
    let mut out = io::BufWriter::with_capacity(WRITE_BYTES, file);
    out.write_all(first)?;
    let mut unsynced = first.len() as u64;
    let mut block = vec![0u8; WRITE_BYTES];
    loop {
        let n = r.read(&mut block)?;
        if n == 0 {
            break;
        }
        out.write_all(&block[..n])?;
        unsynced += n as u64;
        if unsynced >= SYNC_BYTES {
            out.flush()?;
            syncer.kick();
            unsynced = 0;
        }
    }
    let file = out.into_inner().map_err(|e| e.into_error())?;
    syncer.finish()?;
    file.sync_data()?;
    Ok((Written::File(file), r.crc.finalize()))
}

/// Bytes appended to an incoming file between two background syncs.
const SYNC_BYTES: u64 = 64 << 20;

/// A thread that syncs a file each time it is kicked (a kick while a sync runs is folded into
/// the next one).
struct BackgroundSync {
    kicks: std::sync::mpsc::SyncSender<()>,
    thread: std::thread::JoinHandle<io::Result<()>>,
}

impl BackgroundSync {
    fn new(file: &File) -> io::Result<BackgroundSync> {
        let file = file.try_clone()?;
        let (kicks, rx) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new().name("snapshot-sync".into()).spawn(move || {
            for () in rx {
                file.sync_data()?;
            }
            Ok(())
        })?;
        Ok(BackgroundSync { kicks, thread })
    }

    fn kick(&self) {
        // Full: a sync is already queued, which will cover these bytes too.
        let _ = self.kicks.try_send(());
    }

    /// Waits for the queued syncs; the first error of any of them.
    fn finish(self) -> io::Result<()> {
        drop(self.kicks);
        match self.thread.join() {
            Ok(r) => r,
            Err(_) => Err(io::Error::other("the snapshot sync thread panicked")),
        }
    }
}

/// A body read as bytes, each frame awaited at most `stall`.
struct Frames<B> {
    body: B,
    /// Bytes of the last frame not yet consumed.
    pending: Bytes,
    stall: Duration,
    /// Bytes of the body received so far.
    got: u64,
}

impl<B> Frames<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    /// The next bytes of the body, `None` at its end.
    async fn next(&mut self) -> Result<Option<Bytes>, TransferError> {
        if !self.pending.is_empty() {
            return Ok(Some(std::mem::take(&mut self.pending)));
        }
        loop {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut self.body).poll_frame(cx));
            let frame = match tokio::time::timeout(self.stall, frame).await {
                Err(_) => {
                    return Err(TransferError::Stalled {
                        secs: self.stall.as_secs(),
                        got: self.got,
                    })
                }
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => return Err(TransferError::Body(e.to_string())),
                Ok(Some(Ok(f))) => f,
            };
            // Trailers (none are sent) carry no bytes.
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    self.got += data.len() as u64;
                    return Ok(Some(data));
                }
            }
        }
    }

    /// The next `n` bytes (a small part: the prefix, header or CRC).
    async fn read_exact(
        &mut self,
        n: usize,
        inside: &'static str,
    ) -> Result<Vec<u8>, TransferError> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(mut piece) = self.next().await? else {
                return Err(TransferError::Truncated {
                    inside,
                    got: out.len() as u64,
                    expected: n as u64,
                });
            };
            let take = piece.len().min(n - out.len());
            self.pending = piece.split_off(take);
            out.extend_from_slice(&piece);
        }
        Ok(out)
    }
}
