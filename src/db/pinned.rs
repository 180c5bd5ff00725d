//! [`PinnedValue`]: a value read without copying it out of the block cache.

use crate::sst::BlockSlice;
use std::ops::Deref;

/// A value returned by `get_pinned`: the bytes of a value found in a table's data block, read
/// in place and holding that block (RocksDB's `PinnableSlice`), or the value itself when it came
/// from a memtable or a merge. It dereferences to `&[u8]`.
///
/// Holding it keeps its block in memory (not in the cache's accounting once evicted), so keep
/// it for the time the bytes are used, not for the life of the program.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let db = siftdb::Db::open(dir.path(), siftdb::Options::default())?;
/// db.put("k", "a long value")?;
/// db.flush()?;
/// let v = db.get_pinned("k")?.expect("present");
/// assert_eq!(&*v, b"a long value");
/// assert_eq!(v.into_vec(), b"a long value".to_vec());
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct PinnedValue(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    Owned(Vec<u8>),
    InBlock(BlockSlice),
}

impl PinnedValue {
    pub(crate) fn owned(value: Vec<u8>) -> PinnedValue {
        PinnedValue(Repr::Owned(value))
    }

    pub(crate) fn in_block(value: BlockSlice) -> PinnedValue {
        PinnedValue(Repr::InBlock(value))
    }

    /// The value's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(v) => v,
            Repr::InBlock(s) => s.as_bytes(),
        }
    }

    /// The value as an owned vector: a move when it is one already, a copy otherwise (which
    /// lets its block go).
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Owned(v) => v,
            Repr::InBlock(s) => s.as_bytes().to_vec(),
        }
    }

    /// Whether the bytes are read in place from a data block (no copy was made).
    pub fn is_pinned(&self) -> bool {
        matches!(self.0, Repr::InBlock(_))
    }
}

impl Deref for PinnedValue {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for PinnedValue {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq<[u8]> for PinnedValue {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_bytes() == other
    }
}

impl PartialEq<Vec<u8>> for PinnedValue {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self.as_bytes() == other.as_slice()
    }
}

impl std::fmt::Debug for PinnedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedValue")
            .field("bytes", &self.as_bytes())
            .field("pinned", &self.is_pinned())
            .finish()
    }
}
