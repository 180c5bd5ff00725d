//! Compaction filters and TTL (design.md#compaction-filters and #ttl): a per-keyspace callback
//! that keeps, removes or changes entries as flush and compaction write them, the time-to-live
//! of a keyspace's entries, and the clock both are measured with.
//!
//! The rule (RocksDB's): the filter, and the TTL drop, apply only to a key's newest version
//! when its sequence number is above every live snapshot's, so no snapshot (and no open
//! transaction, which holds one) can see the version changed. A removed version becomes a
//! tombstone at the same sequence number rather than vanishing: an older version below it
//! would otherwise be read again. The usual bottommost rule then drops the tombstone.
//!
//! ```
//! use siftdb::{CompactionFilter, Db, Decision, EntryKind, Options};
//! use std::sync::Arc;
//!
//! struct DropTemp;
//! impl CompactionFilter for DropTemp {
//!     fn name(&self) -> &str {
//!         "app.drop_temp"
//!     }
//!     fn filter(&self, _level: usize, key: &[u8], _value: &[u8], _kind: EntryKind) -> Decision {
//!         if key.starts_with(b"tmp/") { Decision::Remove } else { Decision::Keep }
//!     }
//! }
//! # let dir = tempfile::tempdir().unwrap();
//! let opts = Options { compaction_filter: Some(Arc::new(DropTemp)), ..Options::default() };
//! let db = Db::open(dir.path(), opts)?;
//! db.put("tmp/a", "x")?;
//! db.put("keep", "y")?;
//! db.flush()?; // the filter runs here already
//! assert_eq!(db.get("tmp/a")?, None);
//! assert_eq!(db.get("keep")?, Some(b"y".to_vec()));
//! # Ok::<(), siftdb::Error>(())
//! ```

use crate::error::{Error, Result};
pub(crate) use crate::write_time::{expired_at, split_time};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a [`CompactionFilter`] decides for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Write the entry unchanged.
    Keep,
    /// Delete the key: the entry becomes a tombstone at its own sequence number.
    Remove,
    /// Write this value instead, at the entry's sequence number (and, in a TTL keyspace, with
    /// its write time).
    Change(Vec<u8>),
}

/// Where the value a filter sees came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A value written by a put.
    Value,
    /// The full merge of merge operands (onto a value or onto nothing) made by this flush or
    /// compaction.
    MergeResult,
}

/// A user callback that sees each key's newest value as flush and compaction write it, and
/// keeps, removes or changes it (RocksDB's `CompactionFilter`). Set per keyspace with
/// [`crate::KeyspaceOptions::compaction_filter`] (the default keyspace:
/// [`crate::Options::compaction_filter`]).
///
/// It is called only for a key's newest version when no live snapshot can see that version,
/// so it never changes what a snapshot or an open transaction reads. Unmerged operands (no
/// base in reach) are not shown to it. A panic in it keeps the entry unchanged: the flush or
/// compaction goes on, the engine is not poisoned, and nothing is lost.
///
/// Its name is recorded in the manifest's keyspace record. Reopening with another filter or
/// none is loss-free: no filter runs for a keyspace opened without one (nor for a keyspace not
/// opened since the database was), a renamed filter runs from then on, and the recorded name
/// follows the options last given.
pub trait CompactionFilter: Send + Sync {
    /// The filter's name (recorded in the manifest, shown by `siftdb keyspaces`).
    fn name(&self) -> &str;

    /// The decision for `key`'s newest version, `value` (without the TTL write time), being
    /// written to `level` (0: a flush).
    fn filter(&self, level: usize, key: &[u8], value: &[u8], kind: EntryKind) -> Decision;
}

/// The clock TTLs are measured with: milliseconds since the Unix epoch.
/// [`crate::Options::clock`] replaces the system clock, e.g. with a [`ManualClock`] in tests.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that moves only when told to (tests of TTL without sleeping).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: u64) -> ManualClock {
        ManualClock(AtomicU64::new(now_ms))
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.0.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
    }

    /// Sets the clock to `now_ms`.
    pub fn set(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Shared filter handle.
pub type SharedCompactionFilter = Arc<dyn CompactionFilter>;

/// Longest TTL, in milliseconds (about 292 million years: any u64 of ms fits).
pub(crate) const MAX_TTL_MS: u64 = u64::MAX / 2;

/// The TTL and filter of one keyspace as a flush or compaction applies them, with the time
/// read once for the whole job.
#[derive(Clone, Default)]
pub(crate) struct Retention {
    /// Time to live in ms (`None`: values carry no write time).
    pub ttl_ms: Option<u64>,
    /// The filter.
    pub filter: Option<SharedCompactionFilter>,
    /// The clock's time when the job started.
    pub now_ms: u64,
}

impl Retention {
    /// Whether this changes nothing (no TTL, no filter).
    pub fn is_none(&self) -> bool {
        self.ttl_ms.is_none() && self.filter.is_none()
    }

    /// Whether a stored value (with its write time) is expired. An unreadable time is not
    /// (the read that meets it reports the corruption).
    pub fn expired(&self, stored: &[u8]) -> bool {
        match (self.ttl_ms, split_time(stored)) {
            (Some(ttl), Ok((_, t))) => expired_at(t, ttl, self.now_ms),
            _ => false,
        }
    }

    /// The filter's decision on a stored value (its write time stripped and put back on a
    /// changed value). A panicking filter, or a value whose time cannot be read, keeps it.
    pub fn decide(&self, level: usize, key: &[u8], stored: &[u8], kind: EntryKind) -> Decision {
        let Some(f) = &self.filter else { return Decision::Keep };
        let (value, time) = match self.ttl_ms {
            Some(_) => match split_time(stored) {
                Ok((v, t)) => (v, Some(t)),
                Err(_) => return Decision::Keep,
            },
            None => (stored, None),
        };
        let call = std::panic::AssertUnwindSafe(|| f.filter(level, key, value, kind));
        match std::panic::catch_unwind(call) {
            Ok(Decision::Change(mut v)) => {
                if let Some(t) = time {
                    v.extend_from_slice(&t.to_le_bytes());
                }
                Decision::Change(v)
            }
            Ok(d) => d,
            Err(_) => Decision::Keep,
        }
    }
}

/// The duration as whole milliseconds, refusing 0 and durations past [`MAX_TTL_MS`].
pub(crate) fn ttl_ms(field: &str, ttl: Duration) -> Result<u64> {
    let ms = ttl.as_millis();
    if ms == 0 || ms > MAX_TTL_MS as u128 {
        return Err(Error::invalid(format!(
            "{field} = {ttl:?} is out of range (valid: 1 ms..={MAX_TTL_MS} ms)"
        )));
    }
    Ok(ms as u64)
}

/// A merge operator for a TTL keyspace: strips the write times of the base and the operands
/// before the user's operator sees them, and gives a result the newest operand's time.
pub(crate) struct TtlMerge(pub crate::merge::SharedMergeOperator);

impl crate::merge::MergeOperator for TtlMerge {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn former_names(&self) -> &[&str] {
        self.0.former_names()
    }

    fn full_merge(&self, key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>> {
        let base = base.map(split_time).transpose()?.map(|(v, _)| v);
        let mut newest = 0u64;
        let mut plain = Vec::with_capacity(operands.len());
        for o in operands {
            let (v, t) = split_time(o)?;
            newest = newest.max(t);
            plain.push(v);
        }
        let mut out = self.0.full_merge(key, base, &plain)?;
        out.extend_from_slice(&newest.to_le_bytes());
        Ok(out)
    }

    fn partial_merge(&self, key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        let (l, lt) = split_time(left).ok()?;
        let (r, rt) = split_time(right).ok()?;
        let mut out = self.0.partial_merge(key, l, r)?;
        out.extend_from_slice(&lt.max(rt).to_le_bytes());
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_times_split_off_and_short_values_are_corruption() {
        let mut v = b"abc".to_vec();
        v.extend_from_slice(&42u64.to_le_bytes());
        assert_eq!(split_time(&v).unwrap(), (&b"abc"[..], 42));
        assert!(split_time(b"short").unwrap_err().is_corruption());
    }

    #[test]
    fn expiry_is_at_or_past_the_ttl() {
        assert!(!expired_at(1000, 10, 1009));
        assert!(expired_at(1000, 10, 1010));
        assert!(!expired_at(1000, 10, 0)); // a clock behind the write time
    }

    #[test]
    fn a_panicking_filter_keeps_the_entry() {
        struct Boom;
        impl CompactionFilter for Boom {
            fn name(&self) -> &str {
                "boom"
            }
            fn filter(&self, _: usize, _: &[u8], _: &[u8], _: EntryKind) -> Decision {
                panic!("filter bug")
            }
        }
        let r = Retention { filter: Some(Arc::new(Boom)), ..Retention::default() };
        assert_eq!(r.decide(1, b"k", b"v", EntryKind::Value), Decision::Keep);
    }

    #[test]
    fn ttl_merge_strips_times_and_stamps_the_newest() {
        let op = TtlMerge(Arc::new(crate::merge::U64AddOperator));
        let enc = |n: u64, t: u64| {
            let mut v = n.to_le_bytes().to_vec();
            v.extend_from_slice(&t.to_le_bytes());
            v
        };
        use crate::merge::MergeOperator;
        let got = op.full_merge(b"k", Some(&enc(10, 1)), &[&enc(2, 5), &enc(3, 4)]).unwrap();
        assert_eq!(got, enc(15, 5));
        assert_eq!(op.partial_merge(b"k", &enc(1, 7), &enc(2, 9)), Some(enc(3, 9)));
    }
}
