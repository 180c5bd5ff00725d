//! Internal keys: how the engine tags every user key with a sequence number and a kind.
//!
//! ```text
//! internal_key := user_key trailer
//! trailer      := u64 little-endian, (seq << 8) | kind      (8 bytes)
//! kind         := 1 = Put, 0 = Delete, 3 = RangeDelete
//! ```
//!
//! The encoding is not order-preserving under `memcmp` (the trailer is little-endian); every
//! ordered structure (memtable, SST block, index) compares with [`compare`]:
//! user key ascending (bytewise), then sequence number **descending**, then kind descending.
//! So for one user key the newest version comes first, and at equal sequence numbers a Put
//! sorts before a Delete. A point lookup at snapshot `s` therefore seeks to
//! [`lookup_key`]`(k, s)` = `(k, s, Put)`, the smallest internal key of `k` with `seq <= s`, and
//! the first entry at or after it is the newest version of `k` visible at `s` (if its user key is
//! `k`). The layout is specified in design.md ("Internal keys").

use crate::error::{Error, Result};
use std::cmp::Ordering;

/// Bytes of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;
/// Largest sequence number (56 bits are stored).
pub const MAX_SEQ: u64 = (1 << 56) - 1;

/// What an entry records about its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    /// A tombstone: the key was deleted at this sequence number. Tag 0.
    Delete = 0,
    /// A value was written at this sequence number. Tag 1.
    Put = 1,
    /// A range tombstone (`delete_range`): the key is the range's start, the value its end
    /// (exclusive). Tag 3. Never stored among point entries: memtables keep range tombstones in
    /// a list of their own and SSTs in their range-deletion block (src/range_del.rs).
    RangeDelete = 3,
}

impl ValueKind {
    /// The persisted tag.
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// The kind with this tag, if any.
    pub fn from_tag(tag: u8) -> Option<ValueKind> {
        match tag {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            3 => Some(ValueKind::RangeDelete),
            _ => None,
        }
    }
}

/// Appends the internal key `(user_key, seq, kind)` to `out`. `seq` above [`MAX_SEQ`] is masked
/// to 56 bits (callers allocate sequence numbers below it).
pub fn encode_into(out: &mut Vec<u8>, user_key: &[u8], seq: u64, kind: ValueKind) {
    out.reserve(user_key.len() + TRAILER_LEN);
    out.extend_from_slice(user_key);
    out.extend_from_slice(&pack(seq, kind).to_le_bytes());
}

/// The internal key `(user_key, seq, kind)`.
pub fn encode(user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    let mut out = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    encode_into(&mut out, user_key, seq, kind);
    out
}

/// The key a point lookup of `user_key` at snapshot `snapshot_seq` seeks to: the smallest
/// internal key of `user_key` whose sequence number is at most `snapshot_seq`. It carries the
/// largest kind among point entries (Put); RangeDelete keys never share a structure with them.
pub fn lookup_key(user_key: &[u8], snapshot_seq: u64) -> Vec<u8> {
    encode(user_key, snapshot_seq.min(MAX_SEQ), ValueKind::Put)
}

/// Splits an internal key into `(user_key, seq, kind)`. A key shorter than the trailer or with an
/// unknown kind tag is [`Error::Corruption`].
pub fn decode(key: &[u8]) -> Result<(&[u8], u64, ValueKind)> {
    if key.len() < TRAILER_LEN {
        return Err(Error::corruption(
            format!("internal key of {} bytes is shorter than its 8-byte trailer", key.len()),
            None,
        ));
    }
    let (user_key, trailer) = key.split_at(key.len() - TRAILER_LEN);
    let packed = u64::from_le_bytes(trailer.try_into().expect("8 bytes"));
    let tag = (packed & 0xff) as u8;
    let kind = ValueKind::from_tag(tag).ok_or_else(|| {
        Error::corruption(format!("internal key kind tag {tag} is unknown"), None)
    })?;
    Ok((user_key, packed >> 8, kind))
}

/// The user-key part of an internal key (the whole input if it is shorter than a trailer, so
/// this never panics; [`decode`] validates).
#[inline]
pub fn user_key(key: &[u8]) -> &[u8] {
    match key.len().checked_sub(TRAILER_LEN) {
        Some(n) => &key[..n],
        None => key,
    }
}

/// The packed trailer `(seq << 8) | kind`, or 0 for a key shorter than a trailer.
#[inline]
fn trailer(key: &[u8]) -> u64 {
    match key.len().checked_sub(TRAILER_LEN) {
        Some(at) => u64::from_le_bytes(key[at..].try_into().expect("8 bytes")),
        None => 0,
    }
}

#[inline]
fn pack(seq: u64, kind: ValueKind) -> u64 {
    ((seq & MAX_SEQ) << 8) | kind.tag() as u64
}

/// The internal-key order: user key ascending, then `(seq, kind)` descending.
///
/// Total and panic-free on any input: a (malformed) key shorter than 8 bytes is treated as a user
/// key with trailer 0. Decoders reject such keys before they reach an ordered structure.
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    match user_key(a).cmp(user_key(b)) {
        // A larger trailer means a newer version, which sorts first.
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        other => other,
    }
}

/// An owned internal key ordered by [`compare`] (for ordered maps such as the memtable's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InternalKey(Vec<u8>);

impl InternalKey {
    /// The internal key `(user_key, seq, kind)`.
    pub fn new(user_key: &[u8], seq: u64, kind: ValueKind) -> InternalKey {
        InternalKey(encode(user_key, seq, kind))
    }

    /// Wraps encoded bytes after validating them with [`decode`].
    pub fn from_encoded(bytes: Vec<u8>) -> Result<InternalKey> {
        decode(&bytes)?;
        Ok(InternalKey(bytes))
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The encoded bytes, by value.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The user key.
    pub fn user_key(&self) -> &[u8] {
        user_key(&self.0)
    }

    /// The sequence number.
    pub fn seq(&self) -> u64 {
        trailer(&self.0) >> 8
    }

    /// The kind (a validated key always has a known kind; Put is returned otherwise).
    pub fn kind(&self) -> ValueKind {
        ValueKind::from_tag((trailer(&self.0) & 0xff) as u8).unwrap_or(ValueKind::Put)
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trips() {
        let k = encode(b"apple", 0x00AB_CDEF_0123_4567, ValueKind::Delete);
        assert_eq!(k.len(), 5 + 8);
        assert_eq!(decode(&k).unwrap(), (&b"apple"[..], 0x00AB_CDEF_0123_4567, ValueKind::Delete));
        let k = encode(b"", MAX_SEQ, ValueKind::Put);
        assert_eq!(decode(&k).unwrap(), (&b""[..], MAX_SEQ, ValueKind::Put));
    }

    #[test]
    fn order_is_user_key_then_newest_first() {
        let a1 = encode(b"a", 1, ValueKind::Put);
        let a9 = encode(b"a", 9, ValueKind::Put);
        let a9d = encode(b"a", 9, ValueKind::Delete);
        let b0 = encode(b"b", 0, ValueKind::Put);
        let ab = encode(b"ab", 100, ValueKind::Put);
        let mut keys = vec![b0.clone(), a1.clone(), ab.clone(), a9d.clone(), a9.clone()];
        keys.sort_by(|x, y| compare(x, y));
        assert_eq!(keys, vec![a9, a9d, a1, ab, b0]);
    }

    #[test]
    fn lookup_key_lands_on_newest_visible_version() {
        let v5 = encode(b"k", 5, ValueKind::Put);
        let v3 = encode(b"k", 3, ValueKind::Delete);
        assert_eq!(compare(&lookup_key(b"k", 5), &v5), Ordering::Equal);
        assert_eq!(compare(&lookup_key(b"k", 4), &v5), Ordering::Greater);
        assert_eq!(compare(&lookup_key(b"k", 4), &v3), Ordering::Less);
    }

    #[test]
    fn malformed_keys_are_errors_not_panics() {
        assert!(decode(b"short").unwrap_err().is_corruption());
        let mut k = encode(b"x", 1, ValueKind::Put);
        k[1] = 7; // kind tag 7
        assert!(decode(&k).unwrap_err().is_corruption());
        assert_eq!(compare(b"ab", b"abc"), Ordering::Less);
        assert!(InternalKey::from_encoded(b"abc".to_vec()).is_err());
    }

    #[test]
    fn owned_key_orders_like_compare() {
        let a = InternalKey::new(b"a", 2, ValueKind::Put);
        let b = InternalKey::new(b"a", 1, ValueKind::Put);
        assert!(a < b);
        assert_eq!(b.seq(), 1);
        assert_eq!(b.kind(), ValueKind::Put);
        assert_eq!(b.user_key(), b"a");
    }
}
