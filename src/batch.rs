//! [`WriteBatch`]: a group of puts, deletes, merges and range deletes applied atomically, and
//! its encoding, which is the payload of one WAL record (docs/format.md#write-batch).
//!
//! ```text
//! batch  := first_seq:u64 count:u32 record{count}
//! record := tag:u8 [keyspace:varint32 -- iff tag & 0x80] key:lenprefixed [value:lenprefixed]
//! kind    = tag & 0x7F: 0 = delete (no value), 1 = put (value), 2 = merge (value = operand),
//!           3 = delete_range (key = start inclusive, value = end exclusive; start < end)
//! lenprefixed := len:varint bytes
//! ```
//! A record of the default keyspace (0) never has the 0x80 flag, so a batch without keyspaces
//! is byte-identical to the format before them.
//! Record `i` gets sequence number `first_seq + i`. A batch is one WAL record, so after a crash it
//! is either entirely replayed or (torn tail) entirely absent.

use crate::coding::{put_length_prefixed, put_varint32, Cursor};
use crate::error::{Error, Result};
use crate::ikey::{DEFAULT_KEYSPACE, KEYSPACE_FLAG};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// Largest key accepted, in bytes (64 KiB). Keys are copied into index blocks and filters hash
/// them whole; larger keys are an invalid argument.
pub const MAX_KEY_SIZE: usize = 64 << 10;
/// Largest value accepted, in bytes (64 MiB).
pub const MAX_VALUE_SIZE: usize = 64 << 20;
/// Largest encoded batch, in bytes (1 GiB); a WAL record must stay below 4 GiB.
pub const MAX_BATCH_SIZE: usize = 1 << 30;

/// Bytes of the batch header (first_seq + count).
const HEADER: usize = 12;

pub use crate::ikey::ValueKind;

/// An ordered group of puts, deletes and merges, applied all or nothing by `Db::write`: after a crash
/// the whole batch is there or none of it. Building a batch never fails; a key or value over the
/// limits ([`MAX_KEY_SIZE`], [`MAX_VALUE_SIZE`]) makes the write fail as a whole.
///
/// ```
/// use siftdb::{Db, Options, WriteBatch, WriteOptions};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path().join("db"), Options::default())?;
/// db.put("alice", "10")?;
///
/// // Move 3 from alice to bob: both writes or neither.
/// let mut batch = WriteBatch::new();
/// batch.put("alice", "7").put("bob", "3");
/// assert_eq!(batch.len(), 2);
/// db.write_opt(batch, WriteOptions { sync: true })?; // fsync'd before it returns
/// assert_eq!(db.get("bob")?, Some(b"3".to_vec()));
///
/// let mut too_big = WriteBatch::new();
/// too_big.put("carol", "1").put(vec![0u8; siftdb::MAX_KEY_SIZE + 1], "x");
/// assert!(db.write(too_big).is_err());
/// assert_eq!(db.get("carol")?, None); // nothing of the failed batch was written
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBatch {
    /// Encoded as docs/format.md#write-batch says; the header's seq field is filled in when the
    /// batch is written.
    rep: Vec<u8>,
    count: u32,
    /// First size violation seen by `put`/`delete`, reported by `validate` (so building a batch
    /// stays infallible, like RocksDB's, and the write fails as a whole).
    invalid: Option<String>,
    /// Merge records among the records (a batch with merges needs a merge operator).
    merges: u32,
    /// The keyspace handles the records were added through (the default keyspace's too): the
    /// write checks each belongs to the database written and is still live (a foreign handle or
    /// a dropped keyspace fails the whole batch).
    keyspaces: Vec<KeyspaceRef>,
}

/// A keyspace handle a batch's records name: its id and name, and the database it belongs to
/// (`DbInner::instance`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyspaceRef {
    pub id: u32,
    pub name: Arc<str>,
    pub db: u64,
}

impl KeyspaceRef {
    fn of(ks: &crate::Keyspace) -> KeyspaceRef {
        KeyspaceRef { id: ks.id(), name: ks.name_arc().clone(), db: ks.db_instance() }
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

/// One decoded record of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRecord<'a> {
    /// Put, delete, merge or range delete.
    pub kind: ValueKind,
    /// The keyspace id (0: the default keyspace).
    pub keyspace: u32,
    /// The user key (a range delete's start).
    pub key: &'a [u8],
    /// The value (the operand for a merge; empty for a delete; a range delete's exclusive end).
    pub value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch {
            rep: vec![0; HEADER],
            count: 0,
            invalid: None,
            merges: 0,
            keyspaces: Vec::new(),
        }
    }

    /// An empty batch with room for `bytes` bytes of records without reallocating.
    pub fn with_capacity(bytes: usize) -> WriteBatch {
        let mut rep = Vec::with_capacity(HEADER + bytes);
        rep.resize(HEADER, 0);
        WriteBatch { rep, count: 0, invalid: None, merges: 0, keyspaces: Vec::new() }
    }

    /// Bytes one put of `key` -> `value` takes in a batch at most, keyspace included (to size
    /// [`WriteBatch::with_capacity`]).
    pub fn put_size(key: &[u8], value: &[u8]) -> usize {
        1 + 5 + 10 + key.len() + 10 + value.len()
    }

    /// Adds a put of `key` -> `value` (in the default keyspace).
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.push_record(ValueKind::Put, None, key.as_ref(), Some(value.as_ref()))
    }

    /// Adds a merge of `operand` into `key` (applied by `Options::merge_operator` when the key
    /// is read; `Db::write` refuses a batch holding a merge when no operator is configured).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> &mut Self {
        self.push_record(ValueKind::Merge, None, key.as_ref(), Some(operand.as_ref()))
    }

    /// Adds a delete of `key` (in the default keyspace).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.push_record(ValueKind::Delete, None, key.as_ref(), None)
    }

    /// Adds a deletion of every key in `range` (`a..b`, `a..=b`, `..b`): one range tombstone
    /// `[start, end)`, one sequence number. An empty range deletes nothing and adds no record; a
    /// start past the end, or a range open at the top (`a..`, which has no end for a
    /// tombstone), makes the write fail with [`Error::InvalidArgument`] naming what is wrong.
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&mut self, range: R) -> &mut Self {
        self.push_delete_range(None, &range)
    }

    /// Adds a put of `key` -> `value` in keyspace `ks`. A batch may mix keyspaces; it is still
    /// one WAL record, applied all or nothing. Writing it fails as a whole if `ks` was dropped
    /// meanwhile.
    pub fn put_in(
        &mut self,
        ks: &crate::Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.push_record(
            ValueKind::Put,
            Some(KeyspaceRef::of(ks)),
            key.as_ref(),
            Some(value.as_ref()),
        )
    }

    /// [`WriteBatch::merge`] into `key` of keyspace `ks`.
    pub fn merge_in(
        &mut self,
        ks: &crate::Keyspace,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> &mut Self {
        let keyspace = Some(KeyspaceRef::of(ks));
        self.push_record(ValueKind::Merge, keyspace, key.as_ref(), Some(operand.as_ref()))
    }

    /// Adds a delete of `key` in keyspace `ks` (see [`WriteBatch::put_in`]).
    pub fn delete_in(&mut self, ks: &crate::Keyspace, key: impl AsRef<[u8]>) -> &mut Self {
        self.push_record(ValueKind::Delete, Some(KeyspaceRef::of(ks)), key.as_ref(), None)
    }

    /// [`WriteBatch::delete_range`] in keyspace `ks`.
    pub fn delete_range_in<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &mut self,
        ks: &crate::Keyspace,
        range: R,
    ) -> &mut Self {
        self.push_delete_range(Some(KeyspaceRef::of(ks)), &range)
    }

    /// Whether the batch holds a merge record.
    pub fn has_merges(&self) -> bool {
        self.merges > 0
    }

    fn push_delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &mut self,
        keyspace: Option<KeyspaceRef>,
        range: &R,
    ) -> &mut Self {
        let (start, end) = match tombstone_bounds(range) {
            Ok(bounds) => bounds,
            Err(why) => {
                self.note_keyspace(keyspace);
                self.invalid.get_or_insert(why);
                return self;
            }
        };
        let (start, end) = (start.as_slice(), end.as_slice());
        if start == end {
            // Nothing is written, but the handle is still checked like any other.
            self.note_keyspace(keyspace);
            return self;
        }
        if start > end && self.invalid.is_none() {
            self.invalid = Some(format!(
                "delete_range start \"{}\" is after its end \"{}\"",
                start.escape_ascii(),
                end.escape_ascii()
            ));
        }
        self.check(end, None);
        self.push_record(ValueKind::RangeDelete, keyspace, start, Some(end))
    }

    /// Appends one record (docs/format.md#write-batch): its tag, its keyspace when not the
    /// default (`None` is the default), the key and, for every kind but Delete, the value.
    fn push_record(
        &mut self,
        kind: ValueKind,
        keyspace: Option<KeyspaceRef>,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> &mut Self {
        self.check(key, value);
        // One exact reservation instead of up to three doubling reallocations.
        self.rep.reserve(Self::put_size(key, value.unwrap_or_default()));
        match keyspace.as_ref().map(|k| k.id) {
            Some(id) if id != DEFAULT_KEYSPACE => {
                self.rep.push(kind.tag() | KEYSPACE_FLAG);
                put_varint32(&mut self.rep, id);
            }
            _ => self.rep.push(kind.tag()),
        }
        self.note_keyspace(keyspace);
        put_length_prefixed(&mut self.rep, key);
        if let Some(v) = value {
            put_length_prefixed(&mut self.rep, v);
        }
        self.count += 1;
        self.merges = self.merges.saturating_add((kind == ValueKind::Merge) as u32);
        self
    }

    /// Remembers the handle a record was added through (once per handle).
    fn note_keyspace(&mut self, keyspace: Option<KeyspaceRef>) {
        if let Some(k) = keyspace {
            if !self.keyspaces.contains(&k) {
                self.keyspaces.push(k);
            }
        }
    }

    /// The keyspace handles the records were added through.
    pub(crate) fn keyspaces(&self) -> &[KeyspaceRef] {
        &self.keyspaces
    }

    fn check(&mut self, key: &[u8], value: Option<&[u8]>) {
        if self.invalid.is_some() {
            return;
        }
        if key.len() > MAX_KEY_SIZE {
            self.invalid = Some(format!("key of {} bytes exceeds {MAX_KEY_SIZE}", key.len()));
        } else if let Some(v) = value.filter(|v| v.len() > MAX_VALUE_SIZE) {
            self.invalid = Some(format!("value of {} bytes exceeds {MAX_VALUE_SIZE}", v.len()));
        } else if self.count == u32::MAX {
            self.invalid = Some("batch holds more than 2^32 - 1 records".into());
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        *self = WriteBatch::new();
    }

    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Checks the size limits; the error names the first violation.
    pub fn validate(&self) -> Result<()> {
        if let Some(why) = &self.invalid {
            return Err(Error::invalid(why.clone()));
        }
        if self.rep.len() > MAX_BATCH_SIZE {
            return Err(Error::invalid(format!(
                "batch of {} bytes exceeds {MAX_BATCH_SIZE}",
                self.rep.len()
            )));
        }
        Ok(())
    }

    /// The encoding with `first_seq` stamped in, ready to be a WAL record.
    pub fn encode(&self, first_seq: u64) -> Vec<u8> {
        let mut out = self.rep.clone();
        out[0..8].copy_from_slice(&first_seq.to_le_bytes());
        out[8..12].copy_from_slice(&self.count.to_le_bytes());
        out
    }

    /// Fills in the header (`first_seq`, count) and returns the encoding, as [`WriteBatch::encode`]
    /// does but without a copy (the write path owns the batch).
    pub(crate) fn stamp(&mut self, first_seq: u64) -> &[u8] {
        self.rep[0..8].copy_from_slice(&first_seq.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }

    /// Appends every record of `other` (used by group commit to merge concurrent batches).
    pub fn append(&mut self, other: &WriteBatch) {
        if self.invalid.is_none() {
            self.invalid = other.invalid.clone();
        }
        self.rep.extend_from_slice(&other.rep[HEADER..]);
        self.count = self.count.saturating_add(other.count);
        self.merges = self.merges.saturating_add(other.merges);
        for k in &other.keyspaces {
            self.note_keyspace(Some(k.clone()));
        }
    }

    /// This batch with `time_ms` (8 bytes LE) appended to the value of every Put and Merge
    /// record of a keyspace for which `stamped` holds (a TTL keyspace, design.md#ttl); `None`
    /// when no record is of such a keyspace.
    pub(crate) fn with_write_times(
        &self,
        stamped: impl Fn(u32) -> bool,
        time_ms: u64,
    ) -> Option<WriteBatch> {
        let stamps = |r: &BatchRecord<'_>| {
            matches!(r.kind, ValueKind::Put | ValueKind::Merge) && stamped(r.keyspace)
        };
        if !self.iter().any(|r| stamps(&r)) {
            return None;
        }
        let mut out = WriteBatch::with_capacity(self.rep.len() + 8 * self.len());
        let time = time_ms.to_le_bytes();
        let mut value = Vec::new();
        for r in self.iter() {
            match r.keyspace {
                DEFAULT_KEYSPACE => out.rep.push(r.kind.tag()),
                id => {
                    out.rep.push(r.kind.tag() | KEYSPACE_FLAG);
                    put_varint32(&mut out.rep, id);
                }
            }
            put_length_prefixed(&mut out.rep, r.key);
            match r.kind {
                ValueKind::Delete => {}
                _ if stamps(&r) => {
                    value.clear();
                    value.extend_from_slice(r.value);
                    value.extend_from_slice(&time);
                    put_length_prefixed(&mut out.rep, &value);
                }
                _ => put_length_prefixed(&mut out.rep, r.value),
            }
            out.count += 1;
        }
        out.merges = self.merges;
        out.invalid = self.invalid.clone();
        out.keyspaces = self.keyspaces.clone();
        Some(out)
    }

    /// The records in order.
    pub fn iter(&self) -> impl Iterator<Item = BatchRecord<'_>> {
        let mut c = Cursor::new(&self.rep[HEADER..]);
        (0..self.count).map(move |_| decode_record(&mut c).expect("batch built by put/delete"))
    }
}

fn decode_record<'a>(c: &mut Cursor<'a>) -> Result<BatchRecord<'a>> {
    let byte = c.u8("batch record kind")?;
    let tag = byte & !KEYSPACE_FLAG;
    let kind = ValueKind::from_tag(tag).ok_or_else(|| {
        Error::corruption(format!("batch record kind {tag} is unknown"), Some(c.position() as u64))
    })?;
    let keyspace = if byte & KEYSPACE_FLAG != 0 {
        let at = c.position() as u64;
        let ks = c.varint32("batch record keyspace")?;
        if ks == DEFAULT_KEYSPACE {
            return Err(Error::corruption("batch record flags keyspace 0 as present", Some(at)));
        }
        ks
    } else {
        DEFAULT_KEYSPACE
    };
    let key = c.length_prefixed("batch record key")?;
    let value = match kind {
        ValueKind::Put | ValueKind::Merge => c.length_prefixed("batch record value")?,
        ValueKind::Delete => &[],
        ValueKind::RangeDelete => {
            let end = c.length_prefixed("batch record range end")?;
            if key >= end {
                return Err(Error::corruption(
                    "batch delete_range record's start is not below its end",
                    Some(c.position() as u64),
                ));
            }
            end
        }
        ValueKind::BlobIndex => {
            let at = Some(c.position() as u64);
            return Err(Error::corruption("batch record of kind BlobIndex (SSTs only)", at));
        }
    };
    Ok(BatchRecord { kind, keyspace, key, value })
}

/// A batch decoded from a WAL record.
#[derive(Debug)]
pub struct DecodedBatch<'a> {
    /// Sequence number of the first record.
    pub first_seq: u64,
    /// The records in order.
    pub records: Vec<BatchRecord<'a>>,
}

/// Decodes a WAL record payload; every field is bounds-checked, and the record count must match
/// the bytes exactly.
pub fn decode_batch(bytes: &[u8]) -> Result<DecodedBatch<'_>> {
    let mut c = Cursor::new(bytes);
    let first_seq = c.u64("batch sequence")?;
    let count = c.u32("batch count")?;
    // Each record takes at least 2 bytes: bound the allocation by the input, not by `count`.
    if count as usize > c.remaining() / 2 {
        return Err(Error::corruption(
            format!("batch count {count} cannot fit in {} bytes", c.remaining()),
            Some(8),
        ));
    }
    let mut records = Vec::with_capacity(count as usize);
    for _ in 0..count {
        records.push(decode_record(&mut c)?);
    }
    if !c.is_empty() {
        return Err(Error::corruption(
            format!("{} trailing bytes after the batch's {count} records", c.remaining()),
            Some(c.position() as u64),
        ));
    }
    Ok(DecodedBatch { first_seq, records })
}

/// The two ends of the range tombstone that deletes `range`: `[start, end)` with `start`
/// included. An included end becomes the next key after it (`end` + a zero byte), an excluded
/// start likewise; an open start is the empty key. A tombstone needs an end, so a range open
/// at the top is an invalid argument.
pub(crate) fn tombstone_bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(
    range: &R,
) -> std::result::Result<(Vec<u8>, Vec<u8>), String> {
    let successor = |k: &K| {
        let mut v = k.as_ref().to_vec();
        v.push(0);
        v
    };
    let start = match range.start_bound() {
        Bound::Included(k) => k.as_ref().to_vec(),
        Bound::Excluded(k) => successor(k),
        Bound::Unbounded => Vec::new(),
    };
    let end = match range.end_bound() {
        Bound::Excluded(k) => k.as_ref().to_vec(),
        Bound::Included(k) => successor(k),
        Bound::Unbounded => {
            return Err("delete_range needs an upper bound: a range tombstone covers \
                        [start, end), and a range open at the top has no end"
                .to_string())
        }
    };
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_round_trips_through_its_encoding() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1").delete(b"b").put(b"", b"").merge(b"c", b"+1");
        let bytes = b.encode(42);
        let d = decode_batch(&bytes).unwrap();
        assert_eq!(d.first_seq, 42);
        assert_eq!(d.records, b.iter().collect::<Vec<_>>());
        assert_eq!(
            d.records[1],
            BatchRecord { kind: ValueKind::Delete, keyspace: 0, key: b"b", value: b"" }
        );
        assert_eq!(
            d.records[3],
            BatchRecord { kind: ValueKind::Merge, keyspace: 0, key: b"c", value: b"+1" }
        );
        assert!(b.has_merges());
        // Record kind 2 is one byte, then the key and the operand, length-prefixed.
        assert_eq!(&bytes[bytes.len() - 6..], &[2, 1, b'c', 2, b'+', b'1']);
    }

    #[test]
    fn oversized_key_fails_validation_naming_it() {
        let mut b = WriteBatch::new();
        b.put(vec![0u8; MAX_KEY_SIZE + 1], b"v");
        assert!(b.validate().unwrap_err().to_string().contains("key of"));
    }

    #[test]
    fn every_truncation_and_count_lie_is_corruption() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value").delete(b"gone");
        let bytes = b.encode(1);
        for len in 0..bytes.len() {
            assert!(decode_batch(&bytes[..len]).unwrap_err().is_corruption(), "len {len}");
        }
        let mut lie = bytes.clone();
        lie[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_batch(&lie).unwrap_err().is_corruption());
    }

    #[test]
    fn keyspace_records_round_trip_and_default_ones_stay_unflagged() {
        let name: Arc<str> = Arc::from("events");
        let mut b = WriteBatch::new();
        let events = KeyspaceRef { id: 300, name: name.clone(), db: 1 };
        b.put(b"k", b"0").push_record(ValueKind::Put, Some(events.clone()), b"k", Some(b"1"));
        let bytes = b.encode(9);
        assert_eq!(bytes[HEADER], ValueKind::Put.tag(), "a default record carries no flag");
        let d = decode_batch(&bytes).unwrap();
        assert_eq!(d.records[0].keyspace, 0);
        assert_eq!(
            d.records[1],
            BatchRecord { kind: ValueKind::Put, keyspace: 300, key: b"k", value: b"1" }
        );
        assert_eq!(b.keyspaces(), &[events]);
        for len in HEADER..bytes.len() {
            assert!(decode_batch(&bytes[..len]).unwrap_err().is_corruption(), "len {len}");
        }
    }

    #[test]
    fn a_flagged_record_of_keyspace_zero_is_corruption() {
        let mut bytes = WriteBatch::new().encode(1);
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&[ValueKind::Delete.tag() | KEYSPACE_FLAG, 0, 1, b'k']);
        assert!(decode_batch(&bytes).unwrap_err().is_corruption());
    }

    #[test]
    fn delete_range_records_round_trip_and_bad_bounds_are_rejected() {
        let mut b = WriteBatch::new();
        b.delete_range("a".."m").delete_range("q".."q").put(b"x", b"1");
        assert_eq!(b.len(), 2, "an empty range adds no record");
        let bytes = b.encode(3);
        let d = decode_batch(&bytes).unwrap();
        let want =
            BatchRecord { kind: ValueKind::RangeDelete, keyspace: 0, key: b"a", value: b"m" };
        assert_eq!(d.records[0], want);
        assert!(b.validate().is_ok());
        let mut bad = WriteBatch::new();
        bad.delete_range("z".."b");
        let msg = bad.validate().unwrap_err().to_string();
        assert!(msg.contains('z') && msg.contains('b'), "{msg}");
        // A stored record whose start is not below its end is corrupt.
        let mut flipped = WriteBatch::new();
        flipped.delete_range("a".."b");
        let mut bytes = flipped.encode(1);
        let n = bytes.len();
        bytes.swap(n - 1, n - 3);
        assert!(decode_batch(&bytes).unwrap_err().is_corruption());
    }

    #[test]
    fn append_concatenates_records() {
        let mut a = WriteBatch::new();
        a.put(b"x", b"1");
        let mut b = WriteBatch::new();
        b.delete(b"y");
        a.append(&b);
        assert_eq!(a.len(), 2);
        assert_eq!(decode_batch(&a.encode(7)).unwrap().records.len(), 2);
    }
}
