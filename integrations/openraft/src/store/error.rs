//! Why a node's storage refused to open.

use std::fmt;
use std::path::PathBuf;

use crate::NodeId;

/// Opening a node directory failed (nothing in it was changed), or a log segment operation did.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The directory holds another node's data.
    OtherNode {
        /// The directory.
        dir: PathBuf,
        /// Whose data it holds, as recorded.
        found: String,
        /// The node that asked to open it.
        wanted: NodeId,
    },
    /// The directory is not empty and is not a node directory.
    NotANodeDir {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        why: String,
    },
    /// The current snapshot file fails its checks.
    CorruptSnapshot {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// A record or header of a log segment fails its checks where a crash cannot have left it
    /// (anywhere but the end of the last segment).
    CorruptLog {
        /// The segment file.
        path: PathBuf,
        /// Where in it the bad record or header starts.
        offset: u64,
        /// What is wrong with it.
        what: String,
    },
    /// An entry appended out of order: the log holds entries and this one does not follow the
    /// last of them.
    LogOrder {
        /// The entry's index.
        index: u64,
        /// The index after the last entry held.
        expected: u64,
    },
    /// The database refused.
    Db(siftdb::Error),
    /// A file-system call failed.
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::OtherNode { dir, found, wanted } => write!(
                f,
                "refusing {}: it holds the data of {found}, not of node {wanted}; nothing was changed",
                dir.display()
            ),
            StoreError::NotANodeDir { dir, why } => write!(
                f,
                "refusing {}: not a siftdb-openraft node directory ({why}); nothing was changed",
                dir.display()
            ),
            StoreError::CorruptSnapshot { path, what } => {
                write!(f, "refusing snapshot {}: {what}; nothing was changed", path.display())
            }
            StoreError::CorruptLog { path, offset, what } => {
                write!(f, "corrupt raft log segment {} at offset {offset}: {what}", path.display())
            }
            StoreError::LogOrder { index, expected } => {
                write!(f, "log entry {index} appended out of order: the next index is {expected}")
            }
            StoreError::Db(e) => write!(f, "siftdb: {e}"),
            StoreError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Db(e) => Some(e),
            StoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<siftdb::Error> for StoreError {
    fn from(e: siftdb::Error) -> StoreError {
        StoreError::Db(e)
    }
}
