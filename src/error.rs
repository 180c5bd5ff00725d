//! The one error type of siftdb.
//!
//! Every fallible public function returns [`Result<T>`]. Bytes read from disk or handed in by a
//! caller never cause a panic: a bad byte becomes [`Error::Corruption`] naming what was being read
//! and where, an argument outside its documented range becomes [`Error::InvalidArgument`].

use std::fmt;
use std::path::PathBuf;

/// Shorthand for `std::result::Result<T, siftdb::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in siftdb.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Stored bytes are not what the format says they must be: a checksum mismatch, a length that
    /// runs past the end, a field out of range.
    Corruption {
        /// The file (or in-memory object such as "filter block") the bytes came from.
        file: Option<PathBuf>,
        /// Byte offset of the bad field inside that file or object, when known.
        offset: Option<u64>,
        /// Which field or structure was being decoded and what was wrong with it.
        what: String,
    },
    /// A caller passed a value outside its documented range.
    InvalidArgument(String),
    /// A serialized filter carries a kind tag this build does not know. The engine treats such a
    /// filter as "may contain" rather than failing the read.
    UnknownFilterKind(u8),
    /// A static filter (xor, fuse, ribbon) could not be constructed within its retry budget, or a
    /// cuckoo filter has no room for another fingerprint. The filter is unchanged.
    FilterFull(String),
    /// The database was opened by another handle or process (its LOCK file is held).
    Locked(PathBuf),
    /// A directory that is not a siftdb database was handed to an operation that needs one
    /// ([`crate::Db::destroy`]); nothing in it was touched.
    NotADatabase {
        /// The directory.
        dir: PathBuf,
        /// Why it is not a database ("it has no CURRENT file", ...).
        why: String,
    },
    /// A write was refused because the database is read-only: an earlier WAL or manifest write
    /// or sync failed, or a background thread panicked (read-only until reopened), or the
    /// database was opened read-only. Carries the description of the cause.
    ReadOnly(String),
    /// The database was closed (`Db::close`, or the `Db` was dropped): a `Keyspace`,
    /// `Snapshot`, iterator or cursor taken from it serves nothing more (design.md#life-cycle).
    Closed,
    /// A merge operator could not merge a key's operands (an operand or base value it cannot
    /// read, such as a value that is not 8 bytes for `siftdb.u64add`).
    MergeFailed {
        /// The operator's name.
        operator: String,
        /// The user key whose operands were being merged.
        key: Vec<u8>,
        /// What was wrong.
        what: String,
    },
    /// A transaction's commit found a version written after its snapshot where its isolation
    /// level forbids one (design.md#transactions): nothing was written; retry the transaction.
    Conflict {
        /// The keyspace's name.
        keyspace: String,
        /// The conflicting key, or the start of the conflicting range.
        key: Vec<u8>,
        /// The end (exclusive) of the conflicting range (a newer range tombstone); `None` for a
        /// key.
        end: Option<Vec<u8>>,
    },
    /// An operating-system I/O error.
    Io {
        /// What siftdb was doing ("append to WAL 000007.log").
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// A corruption error for an in-memory object (no file path known yet).
    pub fn corruption(what: impl Into<String>, offset: Option<u64>) -> Error {
        Error::Corruption { file: None, offset, what: what.into() }
    }

    /// An invalid-argument error.
    pub fn invalid(what: impl Into<String>) -> Error {
        Error::InvalidArgument(what.into())
    }

    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io { context: context.into(), source }
    }

    /// Attaches a file path (and a base offset) to a corruption error that was raised while
    /// decoding bytes of that file; other errors pass through unchanged.
    pub fn in_file(self, path: impl Into<PathBuf>, base_offset: u64) -> Error {
        match self {
            Error::Corruption { file: None, offset, what } => Error::Corruption {
                file: Some(path.into()),
                offset: Some(base_offset + offset.unwrap_or(0)),
                what,
            },
            other => other,
        }
    }

    /// True for [`Error::Conflict`]: a transaction that may succeed if retried.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Corruption { file, offset, what } => {
                write!(f, "corruption: {what}")?;
                if let Some(file) = file {
                    write!(f, " in {}", file.display())?;
                }
                if let Some(offset) = offset {
                    write!(f, " at offset {offset}")?;
                }
                Ok(())
            }
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::UnknownFilterKind(kind) => write!(f, "unknown filter kind tag {kind}"),
            Error::FilterFull(what) => write!(f, "filter full: {what}"),
            Error::Locked(path) => {
                write!(f, "database {} is already open (LOCK held)", path.display())
            }
            Error::NotADatabase { dir, why } => {
                write!(f, "{} is not a siftdb database: {why}", dir.display())
            }
            Error::ReadOnly(why) => write!(f, "database is read-only: {why}"),
            Error::Closed => write!(f, "database is closed"),
            Error::MergeFailed { operator, key, what } => {
                write!(f, "merge operator {operator} failed on key {}: {what}", key.escape_ascii())
            }
            Error::Conflict { keyspace, key, end: None } => write!(
                f,
                "transaction conflict: key {} of keyspace '{keyspace}' has a newer version",
                key.escape_ascii()
            ),
            Error::Conflict { keyspace, key, end: Some(end) } => write!(
                f,
                "transaction conflict: range [{}, {}) of keyspace '{keyspace}' has a newer \
                 version",
                key.escape_ascii(),
                end.escape_ascii()
            ),
            Error::Io { context, source } => write!(f, "I/O error while {context}: {source}"),
        }
    }
}

/// A filter's error read as the engine's: the same variants the filter library returned when it
/// was part of this crate, so messages and matches are unchanged.
impl From<siftdb_filter::FilterError> for Error {
    fn from(e: siftdb_filter::FilterError) -> Error {
        use siftdb_filter::FilterError;
        match e {
            FilterError::Corruption { what, offset } => {
                Error::Corruption { file: None, offset, what }
            }
            FilterError::InvalidArgument(what) => Error::InvalidArgument(what),
            FilterError::UnknownKind(tag) => Error::UnknownFilterKind(tag),
            FilterError::Full(what) => Error::FilterFull(what),
            other => Error::InvalidArgument(other.to_string()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corruption_display_names_file_and_offset() {
        let e = Error::corruption("block checksum mismatch", Some(12)).in_file("000004.sst", 4096);
        assert_eq!(
            e.to_string(),
            "corruption: block checksum mismatch in 000004.sst at offset 4108"
        );
        assert!(e.is_corruption());
    }

    #[test]
    fn io_error_exposes_source() {
        use std::error::Error as _;
        let e = Error::io("reading CURRENT", std::io::Error::other("boom"));
        assert!(e.source().is_some());
        assert!(e.to_string().contains("reading CURRENT"));
    }
}
