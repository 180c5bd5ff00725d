//! [`SnapshotData`]: openraft's snapshot data, never held in memory: either one file holding the
//! snapshot's bytes, or a tables directory (snapshot_dir.rs) holding the same bytes cut at its
//! tables.
//!
//! The sender's is the node's current snapshot (its tables directory with every file opened,
//! or an older node's single `snapshot` file opened read-only), which
//! [`crate::snapshot_transfer::SnapshotBody`] reads as one stream; the receiver's starts as a
//! new `snapshot.incoming.<n>` file from `begin_receiving_snapshot`, which
//! [`crate::snapshot_transfer::receive`] replaces by a tables directory it unpacks the body
//! into, each table written once. The async read, write and seek (of the single-file form) are
//! for openraft's storage test suite and tests that write one directly.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncSeek, AsyncWrite, ReadBuf};

use super::snapshot_dir::{self, TablesReader};
use super::snapshot_stream::Header;

/// The bytes of one snapshot, in files (openraft's `RaftTypeConfig::SnapshotData`).
#[derive(Debug)]
pub struct SnapshotData {
    form: Form,
}

#[derive(Debug)]
enum Form {
    /// One file holding the whole stream.
    File { file: tokio::fs::File, path: PathBuf },
    /// A tables directory, and a reader of its stream if one was opened with it.
    Tables(Tables, Option<OpenTables>),
}

/// A snapshot in a tables directory.
#[derive(Debug)]
pub(crate) struct Tables {
    /// The directory.
    pub dir: PathBuf,
    /// Its checked header.
    pub header: Header,
    /// Whether every table was checked against the header since it was written (a body the
    /// receiver unpacked): an install then skips reading them for their CRCs again.
    pub checked: bool,
}

/// A [`SnapshotData`] taken apart.
// One per snapshot sent or installed, moved once: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Parts {
    /// One file holding the whole stream, and its path.
    File(std::fs::File, PathBuf),
    /// A tables directory, and the reader of its stream opened with it, if one was.
    Tables(Tables, Option<TablesReader>),
}

/// A tables snapshot's reader, kept apart so the `Debug` of [`SnapshotData`] stays short.
struct OpenTables(TablesReader);

impl std::fmt::Debug for OpenTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenTables")
    }
}

impl SnapshotData {
    /// Opens the snapshot file at `path` for reading.
    pub async fn open(path: impl AsRef<Path>) -> io::Result<SnapshotData> {
        let path = path.as_ref().to_path_buf();
        let file = tokio::fs::File::open(&path).await?;
        Ok(SnapshotData { form: Form::File { file, path } })
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
        Ok(SnapshotData { form: Form::File { file, path } })
    }

    /// Wraps an open file.
    pub(crate) fn from_std(file: std::fs::File, path: PathBuf) -> SnapshotData {
        SnapshotData { form: Form::File { file: tokio::fs::File::from_std(file), path } }
    }

    /// A tables directory; `reader`, opened with it, keeps it readable whole after a newer
    /// snapshot removes it (a snapshot being sent).
    pub(crate) fn tables(tables: Tables, reader: Option<TablesReader>) -> SnapshotData {
        SnapshotData { form: Form::Tables(tables, reader.map(OpenTables)) }
    }

    /// The file's path, or the tables directory's.
    pub fn path(&self) -> &Path {
        match &self.form {
            Form::File { path, .. } => path,
            Form::Tables(t, _) => &t.dir,
        }
    }

    /// The snapshot's whole stream (the single-file form's bytes, or the header and tables of
    /// a tables directory): for tests of small snapshots.
    #[doc(hidden)]
    pub fn read_stream(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        match &self.form {
            Form::File { path, .. } => std::fs::File::open(path)?.read_to_end(&mut out)?,
            Form::Tables(t, _) => TablesReader::open(&t.dir, &t.header)?.read_to_end(&mut out)?,
        };
        Ok(out)
    }

    /// The open file and its path, for synchronous reading (after every pending write finished).
    /// An error for a tables directory.
    pub(crate) async fn into_std(self) -> io::Result<(std::fs::File, PathBuf)> {
        match self.form {
            Form::File { file, path } => Ok((file.into_std().await, path)),
            Form::Tables(t, _) => Err(io::Error::other(format!(
                "snapshot {} is a tables directory, not one file",
                t.dir.display()
            ))),
        }
    }

    /// The snapshot taken apart (after every pending write finished).
    pub(crate) async fn into_parts(self) -> Parts {
        match self.form {
            Form::File { file, path } => Parts::File(file.into_std().await, path),
            Form::Tables(t, r) => Parts::Tables(t, r.map(|r| r.0)),
        }
    }
}

impl Tables {
    /// Opens the tables directory `dir`: its header read and checked (not its tables).
    pub(crate) fn open(dir: PathBuf) -> Result<Tables, super::snapshot_stream::Bad> {
        let header = snapshot_dir::read_header(&dir)?;
        Ok(Tables { dir, header, checked: false })
    }
}

/// An error for the async I/O of a tables directory (openraft never asks for it).
fn not_a_file() -> io::Error {
    io::Error::other("a tables snapshot is read through SnapshotData::into_parts, not as a file")
}

impl AsyncRead for SnapshotData {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().form {
            Form::File { file, .. } => Pin::new(file).poll_read(cx, buf),
            Form::Tables(..) => Poll::Ready(Err(not_a_file())),
        }
    }
}

impl AsyncWrite for SnapshotData {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().form {
            Form::File { file, .. } => Pin::new(file).poll_write(cx, buf),
            Form::Tables(..) => Poll::Ready(Err(not_a_file())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().form {
            Form::File { file, .. } => Pin::new(file).poll_flush(cx),
            Form::Tables(..) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().form {
            Form::File { file, .. } => Pin::new(file).poll_shutdown(cx),
            Form::Tables(..) => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncSeek for SnapshotData {
    fn start_seek(self: Pin<&mut Self>, position: io::SeekFrom) -> io::Result<()> {
        match &mut self.get_mut().form {
            Form::File { file, .. } => Pin::new(file).start_seek(position),
            Form::Tables(..) => Err(not_a_file()),
        }
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        match &mut self.get_mut().form {
            Form::File { file, .. } => Pin::new(file).poll_complete(cx),
            Form::Tables(..) => Poll::Ready(Err(not_a_file())),
        }
    }
}
