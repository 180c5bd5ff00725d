//! The filter library's error type.
//!
//! Bytes handed to a parser never cause a panic: a bad byte becomes [`FilterError::Corruption`]
//! naming the field and its offset inside the serialized filter; an argument outside its
//! documented range becomes [`FilterError::InvalidArgument`].

use std::fmt;

/// Shorthand for `std::result::Result<T, FilterError>`.
pub type Result<T> = std::result::Result<T, FilterError>;

/// Everything a filter can report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterError {
    /// Serialized bytes are not what the format says they must be: a checksum mismatch, a length
    /// that runs past the end, a parameter out of range.
    Corruption {
        /// Which field or structure was being decoded and what was wrong with it.
        what: String,
        /// Byte offset of the bad field inside the serialized filter, when known.
        offset: Option<u64>,
    },
    /// A caller passed a value outside its documented range, or combined filters of different
    /// kinds or shapes.
    InvalidArgument(String),
    /// A well-formed envelope carries a kind tag this build does not know. A reader may treat
    /// such a filter as "may contain" rather than failing.
    UnknownKind(u8),
    /// A static filter (xor, fuse, ribbon) could not be constructed within its retry budget, or
    /// a cuckoo filter has no room for another fingerprint. The filter is unchanged.
    Full(String),
}

impl FilterError {
    /// A corruption error at `offset` (when known) of the serialized filter.
    pub fn corruption(what: impl Into<String>, offset: Option<u64>) -> FilterError {
        FilterError::Corruption { what: what.into(), offset }
    }

    /// An invalid-argument error.
    pub fn invalid(what: impl Into<String>) -> FilterError {
        FilterError::InvalidArgument(what.into())
    }

    /// True for [`FilterError::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, FilterError::Corruption { .. })
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterError::Corruption { what, offset } => {
                write!(f, "corruption: {what}")?;
                if let Some(offset) = offset {
                    write!(f, " at offset {offset}")?;
                }
                Ok(())
            }
            FilterError::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            FilterError::UnknownKind(tag) => write!(f, "unknown filter kind tag {tag}"),
            FilterError::Full(what) => write!(f, "filter full: {what}"),
        }
    }
}

impl std::error::Error for FilterError {}
