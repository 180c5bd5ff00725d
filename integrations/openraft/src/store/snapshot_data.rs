//! [`SnapshotData`]: openraft's snapshot data as a file, so a snapshot is never held in memory.
//!
//! The sender's is the node's current `snapshot` file (opened read-only), which
//! [`crate::snapshot_transfer::SnapshotBody`] reads from its first byte; the receiver's a new
//! `snapshot.incoming.<n>` file in its node directory, which
//! [`crate::snapshot_transfer::receive`] fills before `install_snapshot` reads it. The async
//! read, write and seek are for openraft's storage test suite and tests that write one directly.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

/// The bytes of one snapshot, in a file (openraft's `RaftTypeConfig::SnapshotData`).
#[derive(Debug)]
pub struct SnapshotData {
    file: tokio::fs::File,
    path: PathBuf,
}

impl SnapshotData {
    /// Opens the snapshot file at `path` for reading.
    pub async fn open(path: impl AsRef<Path>) -> io::Result<SnapshotData> {
        let path = path.as_ref().to_path_buf();
        let file = tokio::fs::File::open(&path).await?;
        Ok(SnapshotData { file, path })
    }

    /// Creates the new file `path` (refused if it exists) to receive a snapshot into.
    pub async fn create_new(path: impl AsRef<Path>) -> io::Result<SnapshotData> {
        let path = path.as_ref().to_path_buf();
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .await?;
        Ok(SnapshotData { file, path })
    }

    /// Wraps an open file.
    pub(crate) fn from_std(file: std::fs::File, path: PathBuf) -> SnapshotData {
        SnapshotData { file: tokio::fs::File::from_std(file), path }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file and its path, for synchronous reading (after every pending write finished).
    pub(crate) async fn into_std(self) -> (std::fs::File, PathBuf) {
        (self.file.into_std().await, self.path)
    }
}

impl AsyncRead for SnapshotData {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().file).poll_read(cx, buf)
    }
}

impl AsyncWrite for SnapshotData {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().file).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().file).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().file).poll_shutdown(cx)
    }
}

impl AsyncSeek for SnapshotData {
    fn start_seek(self: Pin<&mut Self>, position: io::SeekFrom) -> io::Result<()> {
        Pin::new(&mut self.get_mut().file).start_seek(position)
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        Pin::new(&mut self.get_mut().file).poll_complete(cx)
    }
}
