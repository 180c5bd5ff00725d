//! Merge operators: read-modify-write without a read (RocksDB's `MergeOperator`).
//!
//! `Db::merge(key, operand)` records an *operand* (an entry of kind Merge,
//! docs/format.md#internal-keys) instead of a value. A read of the key walks its versions newest
//! first, collecting operands until it meets a Put (the base value), a Delete or the oldest data
//! (no base), and then asks the configured operator for the value: `full_merge(key, base, operands
//! oldest first)`. Four threads each adding 1 to a counter 2,500 times therefore end at exactly
//! 10,000, where get-then-put increments lose the updates that interleave.
//!
//! Flush and compaction shorten operand chains (`src/compaction/collapse.rs`): operands that
//! meet their base are folded into a Put, neighbouring operands into one with
//! [`MergeOperator::partial_merge`], but never across a live snapshot's boundary.
//!
//! Names: every table holding operands records the operator's [`MergeOperator::name`] in its
//! properties (`merge_operator`); merging operands of a table whose recorded name differs from
//! the configured operator's is [`Error::InvalidArgument`] naming both, so a renamed or
//! replaced operator never silently mis-merges old operands. An operator renamed without a
//! change of meaning lists its old names in [`MergeOperator::former_names`]: tables recording
//! one of them are merged as its own, and compaction rewrites them under the current name.

use crate::error::{Error, Result};
use std::sync::Arc;

/// Combines a key's merge operands with its base value. Implementations must be deterministic
/// (the same inputs always give the same output): flush, compaction and reads may each merge
/// the same operands, at different times, in groups of different sizes.
///
/// ```
/// use siftdb::{Db, MergeOperator, Options, U64AddOperator};
/// use std::sync::Arc;
/// # let dir = tempfile::tempdir().unwrap();
/// let opts = Options { merge_operator: Some(Arc::new(U64AddOperator)), ..Options::default() };
/// let db = Db::open(dir.path(), opts)?;
/// db.merge("hits", 5u64.to_le_bytes())?;
/// db.merge("hits", 2u64.to_le_bytes())?;
/// assert_eq!(db.get("hits")?, Some(7u64.to_le_bytes().to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub trait MergeOperator: Send + Sync {
    /// The operator's name, recorded in every table holding its operands. Change it whenever
    /// the meaning of operands changes: a table whose recorded name differs from the configured
    /// operator's is refused instead of being merged wrongly.
    fn name(&self) -> &str;

    /// Names this operator was recorded under before a rename that kept the meaning of its
    /// operands. Tables recording one of them are read and compacted with this operator as if
    /// they recorded [`MergeOperator::name`] (compaction outputs record the current name), so
    /// a rename loses nothing and never leaves tables under two names that no single operator
    /// could merge. Default: none.
    fn former_names(&self) -> &[&str] {
        &[]
    }

    /// The value of `key` given its `existing` value (`None`: no value, or deleted) and the
    /// `operands` merged onto it since, oldest first. An error (an operand this operator cannot
    /// read) is returned to the read that asked for the value.
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>>;

    /// One operand equivalent to applying `left` then `right` (`left` is the older), if the
    /// operator can combine operands without a base; `None` (the default) keeps both.
    fn partial_merge(&self, key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        let _ = (key, left, right);
        None
    }
}

/// The built-in counter: values and operands are 8-byte little-endian u64, and merging adds
/// them with wrapping arithmetic (no base counts as 0). Any other length is
/// [`Error::MergeFailed`] naming the key and the length. Name: `"siftdb.u64add"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct U64AddOperator;

impl U64AddOperator {
    fn decode(key: &[u8], bytes: &[u8], what: &str) -> Result<u64> {
        let b: [u8; 8] = bytes.try_into().map_err(|_| Error::MergeFailed {
            operator: "siftdb.u64add".into(),
            key: key.to_vec(),
            what: format!("{what} is {} bytes, not an 8-byte little-endian u64", bytes.len()),
        })?;
        Ok(u64::from_le_bytes(b))
    }
}

impl MergeOperator for U64AddOperator {
    fn name(&self) -> &str {
        "siftdb.u64add"
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>> {
        let mut sum = match existing {
            Some(v) => Self::decode(key, v, "existing value")?,
            None => 0,
        };
        for op in operands {
            sum = sum.wrapping_add(Self::decode(key, op, "operand")?);
        }
        Ok(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        // A bad operand is left alone: the read that meets it reports the error.
        let l = Self::decode(key, left, "operand").ok()?;
        let r = Self::decode(key, right, "operand").ok()?;
        Some(l.wrapping_add(r).to_le_bytes().to_vec())
    }
}

/// The configured operator, shared (`Options::merge_operator`).
pub type SharedMergeOperator = Arc<dyn MergeOperator>;

/// Whether operands recorded under `name` are `op`'s: its name or one of its former names.
pub(crate) fn answers_to(op: &dyn MergeOperator, name: &str) -> bool {
    name == op.name() || op.former_names().contains(&name)
}

/// The operator that may merge operands recorded under `recorded` (a table's `merge_operator`
/// property; `None` for memtable operands, which the configured operator wrote). An empty
/// recorded name means the operands were flushed by an open without an operator (WAL replay):
/// their operator is unknown, and any configured one is accepted. No operator configured, or a
/// name the operator does not answer to ([`answers_to`]), is [`Error::InvalidArgument`] naming
/// the key and both names.
pub(crate) fn operator_for<'a>(
    configured: Option<&'a SharedMergeOperator>,
    recorded: Option<&str>,
    key: &[u8],
) -> Result<&'a dyn MergeOperator> {
    let Some(op) = configured else {
        return Err(Error::invalid(format!(
            "key {} holds merge operands{} but no merge operator is configured \
             (Options::merge_operator)",
            key.escape_ascii(),
            recorded.filter(|r| !r.is_empty()).map_or(String::new(), |r| format!(" of {r:?}")),
        )));
    };
    match recorded {
        Some(r) if !r.is_empty() && !answers_to(op.as_ref(), r) => Err(Error::invalid(format!(
            "key {}: its table's merge operands were written by operator {r:?}, but the \
             configured merge operator is {:?}",
            key.escape_ascii(),
            op.name()
        ))),
        _ => Ok(op.as_ref()),
    }
}

/// `full_merge` of operands collected newest first (the order of a lookup's walk).
pub(crate) fn merge_newest_first(
    op: &dyn MergeOperator,
    key: &[u8],
    base: Option<&[u8]>,
    newest_first: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let oldest_first: Vec<&[u8]> = newest_first.iter().rev().map(Vec::as_slice).collect();
    op.full_merge(key, base, &oldest_first)
}

/// Operands of one key collected by a point lookup, newest first, with the operator that will
/// merge them (checked against each table's recorded name as the operands are collected).
pub(crate) struct Operands<'a> {
    configured: Option<&'a SharedMergeOperator>,
    /// Newest first.
    pub list: Vec<Vec<u8>>,
    /// A TTL keyspace's read state: `finish` applies the expiry rule (src/db/ttl.rs) and
    /// strips the write time (`configured` must then strip the times of what it merges).
    ttl: Option<crate::write_time::ReadTtl>,
}

impl<'a> Operands<'a> {
    /// No operands yet, for a keyspace with TTL state `ttl`.
    pub fn with_ttl(
        configured: Option<&'a SharedMergeOperator>,
        ttl: Option<crate::write_time::ReadTtl>,
    ) -> Operands<'a> {
        Operands { configured, list: Vec::new(), ttl }
    }

    /// Whether `finish` applies a TTL.
    pub fn has_ttl(&self) -> bool {
        self.ttl.is_some()
    }

    /// Checks that operands from a source recording `recorded` (None: a memtable) can be
    /// merged by the configured operator.
    pub fn check_source(&self, recorded: Option<&str>, key: &[u8]) -> Result<()> {
        operator_for(self.configured, recorded, key).map(|_| ())
    }

    /// The answer once the walk met `base` (`None`: a Delete or the oldest data): the base
    /// itself without operands, else their full merge onto it.
    pub fn finish(&self, key: &[u8], base: Option<Vec<u8>>) -> Result<Option<Vec<u8>>> {
        if let Some(ttl) = self.ttl {
            let mut base = base;
            let live = ttl.live_operands(&self.list, &mut base)?;
            let value = if live == 0 {
                base
            } else {
                let op = operator_for(self.configured, None, key)?;
                Some(merge_newest_first(op, key, base.as_deref(), &self.list[..live])?)
            };
            return value.map(crate::write_time::strip).transpose();
        }
        if self.list.is_empty() {
            return Ok(base);
        }
        let op = operator_for(self.configured, None, key)?;
        merge_newest_first(op, key, base.as_deref(), &self.list).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(n: u64) -> Vec<u8> {
        n.to_le_bytes().to_vec()
    }

    #[test]
    fn u64_add_sums_operands_onto_the_base_with_wrapping() {
        let op = U64AddOperator;
        assert_eq!(op.full_merge(b"k", None, &[&le(2), &le(3)]).unwrap(), le(5));
        assert_eq!(op.full_merge(b"k", Some(&le(10)), &[&le(1)]).unwrap(), le(11));
        assert_eq!(op.full_merge(b"k", Some(&le(u64::MAX)), &[&le(2)]).unwrap(), le(1));
        assert_eq!(op.partial_merge(b"k", &le(4), &le(6)), Some(le(10)));
    }

    #[test]
    fn u64_add_names_the_key_and_length_of_a_bad_operand() {
        let op = U64AddOperator;
        let e = op.full_merge(b"ctr", None, &[&le(1), b"abc"]).unwrap_err();
        match &e {
            Error::MergeFailed { operator, key, what } => {
                assert_eq!(operator, "siftdb.u64add");
                assert_eq!(key, b"ctr");
                assert!(what.contains("3 bytes"), "{what}");
            }
            other => panic!("expected MergeFailed, got {other:?}"),
        }
        assert!(e.to_string().contains("ctr"), "{e}");
        let e = op.full_merge(b"ctr", Some(b"123456789"), &[]).unwrap_err();
        assert!(e.to_string().contains("9 bytes"), "{e}");
        assert_eq!(op.partial_merge(b"ctr", b"x", &le(1)), None);
    }

    #[test]
    fn a_recorded_name_other_than_the_configured_one_is_refused_naming_both() {
        let op: SharedMergeOperator = Arc::new(U64AddOperator);
        let e = operator_for(Some(&op), Some("app.max"), b"k").err().unwrap();
        assert!(matches!(e, Error::InvalidArgument(_)));
        let s = e.to_string();
        assert!(s.contains("app.max") && s.contains("siftdb.u64add"), "{s}");
        assert!(operator_for(Some(&op), Some("siftdb.u64add"), b"k").is_ok());
        assert!(operator_for(Some(&op), Some(""), b"k").is_ok());
        assert!(operator_for(Some(&op), None, b"k").is_ok());
        let e = operator_for(None, Some("siftdb.u64add"), b"k").err().unwrap();
        assert!(e.to_string().contains("no merge operator"), "{e}");
    }
}
