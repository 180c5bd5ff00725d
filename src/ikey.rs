//! Internal keys: how the engine tags every user key with its keyspace, a sequence number and a
//! kind.
//!
//! ```text
//! internal_key := user_key [keyspace:u32 LE  -- present iff kind_byte & 0x80] trailer
//! trailer      := u64 little-endian, (seq << 8) | kind_byte      (8 bytes)
//! kind_byte    := 0x80 flag "keyspace present" | kind (low 7 bits)
//! kind         := 0 = Delete, 1 = Put, 2 = Merge, 3 = RangeDelete, 4 = BlobIndex
//! ```
//!
//! Writers set the 0x80 flag iff the keyspace is not 0, so every key of keyspace 0 (the default
//! keyspace) is byte-identical to the format before keyspaces; a key with the flag and keyspace
//! 0 is malformed ([`decode`] rejects it).
//!
//! The encoding is not order-preserving under `memcmp` (the trailer is little-endian); every
//! ordered structure (memtable, SST block, index) compares with [`compare`]: keyspace ascending
//! (absent = 0), then user key ascending (bytewise), then sequence number **descending**, then
//! kind descending. So the keyspaces occupy disjoint, consecutive internal-key ranges; for one
//! user key the newest version comes first, and at equal sequence numbers a Merge sorts before a
//! Put before a Delete. A point lookup at snapshot `s` therefore seeks to
//! [`lookup_key_in`]`(ks, k, s)` = `(ks, k, s, BlobIndex)` (the largest kind tag a point entry
//! can have), the smallest internal key of `k` with `seq <= s`, and the first entry at or after it is
//! the newest version of `k` visible at `s` (if its keyspace and user key match).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::error::{Error, Result};
use std::cmp::Ordering;

/// Bytes of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;
/// Bytes of the keyspace id stored between the user key and the trailer (when not 0).
pub const KEYSPACE_LEN: usize = 4;
/// Largest sequence number (56 bits are stored).
pub const MAX_SEQ: u64 = (1 << 56) - 1;
/// The kind byte's flag: a keyspace id precedes the trailer.
pub const KEYSPACE_FLAG: u8 = 0x80;
/// The default keyspace (`Db`'s own methods); its keys carry no keyspace bytes.
pub const DEFAULT_KEYSPACE: u32 = 0;

/// What an entry records about its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    /// A tombstone: the key was deleted at this sequence number. Tag 0.
    Delete = 0,
    /// A value was written at this sequence number. Tag 1.
    Put = 1,
    /// A merge operand was written at this sequence number (`Db::merge`): the value is the
    /// configured merge operator applied to the older versions and this operand. Tag 2.
    // Declared after Put: the derived order (Delete < Put < Merge) must follow the tags, since
    // internal keys order kinds descending by tag.
    Merge = 2,
    /// A range tombstone (`delete_range`): the key is the range's start, the value its end
    /// (exclusive). Tag 3. Never stored among point entries: memtables keep range tombstones in
    /// a list of their own and SSTs in their range-deletion block (src/range_del.rs).
    RangeDelete = 3,
    /// A value kept in a blob file (design.md#key-value-separation): the entry's value is a
    /// `blob::BlobRef`. Tag 4. Only in SSTs (flush and compaction write it); every read path
    /// turns it into a `Put` of the referenced value before anything else sees it.
    BlobIndex = 4,
}

impl ValueKind {
    /// The persisted tag.
    pub fn tag(self) -> u8 {
        self as u8
    }

    /// The kind with this tag (the low 7 bits of a kind byte), if any.
    pub fn from_tag(tag: u8) -> Option<ValueKind> {
        match tag {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::Merge),
            3 => Some(ValueKind::RangeDelete),
            4 => Some(ValueKind::BlobIndex),
            _ => None,
        }
    }
}

/// Appends the internal key `(keyspace, user_key, seq, kind)` to `out` (the keyspace bytes and
/// flag only when `keyspace != 0`).
pub fn encode_in_into(
    out: &mut Vec<u8>,
    keyspace: u32,
    user_key: &[u8],
    seq: u64,
    kind: ValueKind,
) {
    out.reserve(user_key.len() + KEYSPACE_LEN + TRAILER_LEN);
    out.extend_from_slice(user_key);
    let (keyspace, trailer) = suffix(keyspace, seq, kind);
    if let Some(keyspace) = keyspace {
        out.extend_from_slice(&keyspace);
    }
    out.extend_from_slice(&trailer);
}

/// What follows the user key in the internal key `(keyspace, _, seq, kind)`: the keyspace's
/// bytes (none for the default keyspace) and the trailer, flagged when they are there.
#[inline]
fn suffix(
    keyspace: u32,
    seq: u64,
    kind: ValueKind,
) -> (Option<[u8; KEYSPACE_LEN]>, [u8; TRAILER_LEN]) {
    let packed = pack(seq, kind);
    if keyspace == DEFAULT_KEYSPACE {
        return (None, packed.to_le_bytes());
    }
    (Some(keyspace.to_le_bytes()), (packed | KEYSPACE_FLAG as u64).to_le_bytes())
}

#[cfg(test)]
/// The internal key `(keyspace 0, user_key, seq, kind)`.
pub fn encode(user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    encode_in(DEFAULT_KEYSPACE, user_key, seq, kind)
}

/// The internal key `(keyspace, user_key, seq, kind)`.
pub fn encode_in(keyspace: u32, user_key: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    let mut out = Vec::with_capacity(user_key.len() + KEYSPACE_LEN + TRAILER_LEN);
    encode_in_into(&mut out, keyspace, user_key, seq, kind);
    out
}

/// The largest kind tag a point entry can carry: at one sequence number it sorts first, so
/// `(k, s, LOOKUP_KIND)` is at or before every entry of `k` with `seq <= s`. (RangeDelete keys,
/// tag 3, never share a structure with point entries.) A lookup key is never stored.
pub const LOOKUP_KIND: ValueKind = ValueKind::BlobIndex;

#[cfg(test)]
/// The key a point lookup of `user_key` (keyspace 0) at snapshot `snapshot_seq` seeks to: the
/// smallest internal key of `user_key` whose sequence number is at most `snapshot_seq`.
pub fn lookup_key(user_key: &[u8], snapshot_seq: u64) -> Vec<u8> {
    lookup_key_in(DEFAULT_KEYSPACE, user_key, snapshot_seq)
}

/// [`lookup_key`] in `keyspace`.
pub fn lookup_key_in(keyspace: u32, user_key: &[u8], snapshot_seq: u64) -> Vec<u8> {
    encode_in(keyspace, user_key, snapshot_seq.min(MAX_SEQ), LOOKUP_KIND)
}

/// Bytes of a [`LookupKey`] held inline; a longer key is on the heap.
const LOOKUP_INLINE: usize = 48;

/// [`lookup_key_in`] without a heap allocation when the whole key fits 48 bytes (user keys of
/// up to 40 bytes, 36 outside the default keyspace): a point lookup builds one per table it
/// reads, and a `multi_get` profile had the allocation, copy and free of these keys at about 4%
/// of its time.
pub(crate) struct LookupKey {
    inline: [u8; LOOKUP_INLINE],
    len: usize,
    /// The key when it does not fit inline (`len` is then 0).
    heap: Vec<u8>,
}

impl LookupKey {
    /// The smallest internal key of `user_key` in `keyspace` at sequence number `<=
    /// snapshot_seq` (as [`lookup_key_in`]).
    #[inline]
    pub(crate) fn new(keyspace: u32, user_key: &[u8], snapshot_seq: u64) -> LookupKey {
        let (ks, trailer) = suffix(keyspace, snapshot_seq.min(MAX_SEQ), LOOKUP_KIND);
        let len = user_key.len() + ks.map_or(0, |k| k.len()) + TRAILER_LEN;
        if len > LOOKUP_INLINE {
            return LookupKey {
                inline: [0; LOOKUP_INLINE],
                len: 0,
                heap: lookup_key_in(keyspace, user_key, snapshot_seq),
            };
        }
        let mut inline = [0; LOOKUP_INLINE];
        let mut at = copy_short(&mut inline, user_key);
        if let Some(ks) = ks {
            put(&mut inline, &mut at, ks);
        }
        put(&mut inline, &mut at, trailer);
        LookupKey { inline, len, heap: Vec::new() }
    }

    /// The encoded internal key.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self.len {
            0 => &self.heap,
            n => self.inline.get(..n).unwrap_or_default(),
        }
    }
}

/// Writes `bytes` at `*at` in `dst` and moves `*at` past them (nothing when they do not fit,
/// which [`LookupKey::new`]'s length check rules out).
#[inline]
fn put<const N: usize>(dst: &mut [u8], at: &mut usize, bytes: [u8; N]) {
    if let Some(d) = dst.get_mut(*at..).and_then(|d| d.first_chunk_mut::<N>()) {
        *d = bytes;
    }
    *at += N;
}

/// Copies `src` to the start of `dst` (which must hold it) in fixed-size steps, returning its
/// length: a `copy_from_slice` of a variable length is a `memcpy` call, dearer than the copy
/// for a short key, and a byte loop would be turned back into one.
#[inline]
fn copy_short(dst: &mut [u8], src: &[u8]) -> usize {
    let mut at = 0;
    let mut words = src.chunks_exact(8);
    for w in &mut words {
        if let Some(w) = w.first_chunk::<8>() {
            put(dst, &mut at, *w);
        }
    }
    let mut rest = words.remainder();
    if let Some((w, r)) = rest.split_first_chunk::<4>() {
        put(dst, &mut at, *w);
        rest = r;
    }
    if let Some((w, r)) = rest.split_first_chunk::<2>() {
        put(dst, &mut at, *w);
        rest = r;
    }
    if let Some(&c) = rest.first() {
        put(dst, &mut at, [c]);
    }
    src.len()
}

/// Splits an internal key into `(user_key, seq, kind)`, dropping the keyspace (see
/// [`decode_in`]). A malformed key is [`Error::Corruption`].
pub fn decode(key: &[u8]) -> Result<(&[u8], u64, ValueKind)> {
    let (_, user_key, seq, kind) = decode_in(key)?;
    Ok((user_key, seq, kind))
}

/// Splits an internal key into `(keyspace, user_key, seq, kind)`. A key shorter than its
/// trailer (and keyspace bytes), with an unknown kind tag, or with the keyspace flag but
/// keyspace 0 is [`Error::Corruption`].
pub fn decode_in(key: &[u8]) -> Result<(u32, &[u8], u64, ValueKind)> {
    let Some((rest, trailer)) = key.split_last_chunk::<TRAILER_LEN>() else {
        return Err(Error::corruption(
            format!("internal key of {} bytes is shorter than its 8-byte trailer", key.len()),
            None,
        ));
    };
    let packed = u64::from_le_bytes(*trailer);
    let kind_byte = (packed & 0xff) as u8;
    let tag = kind_byte & !KEYSPACE_FLAG;
    let kind = ValueKind::from_tag(tag).ok_or_else(|| {
        Error::corruption(format!("internal key kind tag {tag} is unknown"), None)
    })?;
    if kind_byte & KEYSPACE_FLAG == 0 {
        return Ok((DEFAULT_KEYSPACE, rest, packed >> 8, kind));
    }
    let Some((user_key, keyspace)) = rest.split_last_chunk::<KEYSPACE_LEN>() else {
        return Err(Error::corruption(
            format!("internal key of {} bytes has no room for its keyspace", key.len()),
            None,
        ));
    };
    let keyspace = u32::from_le_bytes(*keyspace);
    if keyspace == DEFAULT_KEYSPACE {
        return Err(Error::corruption("internal key flags keyspace 0 as present", None));
    }
    Ok((keyspace, user_key, packed >> 8, kind))
}

/// The user-key part of an internal key, without the keyspace (the whole input if it is
/// shorter than a trailer, so this never panics; [`decode_in`] validates).
#[inline]
pub fn user_key(key: &[u8]) -> &[u8] {
    split(key).1
}

/// The keyspace of an internal key (0 when the flag is clear or the key is malformed).
#[inline]
pub fn keyspace(key: &[u8]) -> u32 {
    split(key).0
}

/// `(keyspace, user key)` of an internal key; panic-free on malformed input (a key too short
/// for its flagged keyspace reads as keyspace 0 with the bytes before the trailer).
#[inline]
pub fn split(key: &[u8]) -> (u32, &[u8]) {
    let Some((rest, trailer)) = key.split_last_chunk::<TRAILER_LEN>() else {
        return (DEFAULT_KEYSPACE, key);
    };
    if trailer[0] & KEYSPACE_FLAG != 0 {
        if let Some((user_key, ks)) = rest.split_last_chunk::<KEYSPACE_LEN>() {
            return (u32::from_le_bytes(*ks), user_key);
        }
    }
    (DEFAULT_KEYSPACE, rest)
}

/// Replaces, in place, the keyspace id of internal key `key` by `to` when it is `from`; true
/// when it did. Both ids must be non-zero: the key then carries its id bytes and keeps its
/// length and flag (an adopted table, design.md#ingestion-and-export). A key of another
/// keyspace, or malformed, is left as it is.
#[inline]
pub(crate) fn replace_keyspace(key: &mut [u8], from: u32, to: u32) -> bool {
    debug_assert!(from != DEFAULT_KEYSPACE && to != DEFAULT_KEYSPACE);
    let Some((rest, trailer)) = key.split_last_chunk_mut::<TRAILER_LEN>() else { return false };
    if trailer[0] & KEYSPACE_FLAG == 0 {
        return false;
    }
    match rest.split_last_chunk_mut::<KEYSPACE_LEN>() {
        Some((_, ks)) if u32::from_le_bytes(*ks) == from => {
            *ks = to.to_le_bytes();
            true
        }
        _ => false,
    }
}

/// The packed trailer `(seq << 8) | kind_byte`, or 0 for a key shorter than a trailer.
#[inline]
fn trailer(key: &[u8]) -> u64 {
    key.last_chunk::<TRAILER_LEN>().map_or(0, |t| u64::from_le_bytes(*t))
}

#[inline]
fn pack(seq: u64, kind: ValueKind) -> u64 {
    ((seq & MAX_SEQ) << 8) | kind.tag() as u64
}

/// The internal-key order: keyspace ascending, user key ascending, then `(seq, kind)`
/// descending (the keyspace flag does not take part).
///
/// Total and panic-free on any input: a (malformed) key shorter than 8 bytes is treated as a user
/// key with trailer 0. Decoders reject such keys before they reach an ordered structure.
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let ((ka, ua), (kb, ub)) = (split(a), split(b));
    match ka.cmp(&kb).then_with(|| compare_bytes(ua, ub)) {
        // A larger trailer means a newer version, which sorts first.
        Ordering::Equal => {
            let mask = !(KEYSPACE_FLAG as u64);
            (trailer(b) & mask).cmp(&(trailer(a) & mask))
        }
        other => other,
    }
}

#[cfg(test)]
/// An owned internal key ordered by [`compare`] (for ordered maps such as the memtable's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InternalKey(Vec<u8>);

#[cfg(test)]
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
        ValueKind::from_tag((trailer(&self.0) & 0x7f) as u8).unwrap_or(ValueKind::Put)
    }
}

#[cfg(test)]
impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

#[cfg(test)]
impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The first 8 bytes of `user_key`, zero-padded, as a big-endian integer (weakly order-preserving:
/// `key_prefix(a) < key_prefix(b)` implies `a < b`; equal prefixes decide nothing).
///
/// A key of 8 bytes or more is one load; a shorter one is assembled byte by byte (a
/// variable-length copy into a buffer was a `memcpy` call and a stalled reload, a tenth of an
/// absent-prefix scan's time in a profile).
#[inline]
pub fn key_prefix(user_key: &[u8]) -> u64 {
    match user_key.first_chunk::<8>() {
        Some(b) => u64::from_be_bytes(*b),
        None => user_key.iter().enumerate().fold(0, |v, (i, &c)| v | u64::from(c) << (56 - 8 * i)),
    }
}

/// Longest common length compared a word at a time by [`compare_bytes`]; past it, the
/// library `memcmp` (vectorised) is faster than the word loop.
const INLINE_COMPARE_MAX: usize = 32;

/// `a.cmp(b)` (lexicographic bytes, then length), without a `memcmp` call for short keys.
///
/// The slice comparison calls the C library's `memcmp` through the PLT whatever the length; for
/// the 16-24 byte keys of point lookups the call costs more than the comparison. Its callers
/// here (a data block's seek, the memtable's search, a batch's sort) were 7% of a `multi_get`
/// profile in `memcmp` alone. Words are compared big-endian, which is byte order.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    if n > INLINE_COMPARE_MAX {
        return a.cmp(b);
    }
    // The loop stops at the shorter key's last whole word, the zip at its end.
    let (mut x, mut y) = (a, b);
    while let (Some((wa, ra)), Some((wb, rb))) =
        (x.split_first_chunk::<8>(), y.split_first_chunk::<8>())
    {
        if wa != wb {
            return u64::from_be_bytes(*wa).cmp(&u64::from_be_bytes(*wb));
        }
        (x, y) = (ra, rb);
    }
    for (ca, cb) in x.iter().zip(y) {
        if ca != cb {
            return ca.cmp(cb);
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_key_matches_lookup_key_in() {
        for len in [0, 1, 7, 8, 9, 16, 31, 35, 36, 37, 40, 41, 100] {
            let user: Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
            for ks in [DEFAULT_KEYSPACE, 1, 0xdead_beef] {
                for seq in [0, 7, MAX_SEQ, u64::MAX] {
                    let k = LookupKey::new(ks, &user, seq);
                    assert_eq!(k.as_bytes(), lookup_key_in(ks, &user, seq), "{len} {ks} {seq}");
                }
            }
        }
    }

    #[test]
    fn compare_bytes_is_the_slice_order() {
        // Every pair of short keys over a small alphabet (so that prefixes and equal words
        // occur), plus lengths around the word size and the inline limit.
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for len in 0..=3 {
            let mut k = vec![0u8; len];
            loop {
                keys.push(k.clone());
                let Some(i) = k.iter().rposition(|&c| c < 2) else { break };
                k[i] += 1;
                k[i + 1..].iter_mut().for_each(|c| *c = 0);
            }
        }
        for len in [7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40] {
            for tail in [0u8, 1, 255] {
                let mut k = vec![b'k'; len];
                if let Some(last) = k.last_mut() {
                    *last = tail;
                }
                keys.push(k.clone());
                k.push(tail);
                keys.push(k);
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(compare_bytes(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

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
        let m5 = encode(b"k", 5, ValueKind::Merge);
        let b5 = encode(b"k", 5, ValueKind::BlobIndex);
        assert_eq!(compare(&lookup_key(b"k", 5), &b5), Ordering::Equal);
        assert_eq!(compare(&lookup_key(b"k", 5), &m5), Ordering::Less);
        assert_eq!(compare(&lookup_key(b"k", 5), &v5), Ordering::Less);
        assert_eq!(compare(&lookup_key(b"k", 4), &v5), Ordering::Greater);
        assert_eq!(compare(&lookup_key(b"k", 4), &v3), Ordering::Less);
    }

    #[test]
    fn malformed_keys_are_errors_not_panics() {
        assert!(decode(b"short").unwrap_err().is_corruption());
        let mut k = encode(b"x", 1, ValueKind::Put);
        k[1] = 7; // kind tag 7
        assert!(decode(&k).unwrap_err().is_corruption());
        k[1] = 2; // Merge
        assert_eq!(decode(&k).unwrap().2, ValueKind::Merge);
        k[1] = 0x7f; // not a kind of this build
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

    #[test]
    fn keyspace_zero_keys_are_byte_identical_to_the_keyspaceless_format() {
        for (k, seq, kind) in [(&b"apple"[..], 7u64, ValueKind::Put), (b"", 0, ValueKind::Delete)] {
            let mut old = k.to_vec();
            old.extend_from_slice(&(((seq & MAX_SEQ) << 8) | kind.tag() as u64).to_le_bytes());
            assert_eq!(encode_in(0, k, seq, kind), old);
            assert_eq!(encode(k, seq, kind), old);
            assert_eq!(decode_in(&old).unwrap(), (0, k, seq, kind));
        }
    }

    #[test]
    fn keyspace_sorts_before_user_key_and_round_trips() {
        let k = encode_in(3, b"zz", 5, ValueKind::Put);
        assert_eq!(k.len(), 2 + 4 + 8);
        assert_eq!(k[6] & KEYSPACE_FLAG, KEYSPACE_FLAG);
        assert_eq!(decode_in(&k).unwrap(), (3, &b"zz"[..], 5, ValueKind::Put));
        assert_eq!(decode(&k).unwrap(), (&b"zz"[..], 5, ValueKind::Put));
        assert_eq!((keyspace(&k), user_key(&k)), (3, &b"zz"[..]));
        let mut keys = [
            encode_in(2, b"a", 1, ValueKind::Put),
            encode_in(0, b"zzzz", 1, ValueKind::Put),
            encode_in(1, b"b", 9, ValueKind::Delete),
            encode_in(1, b"b", 9, ValueKind::Put),
            encode_in(1, b"", 1, ValueKind::Put),
            encode_in(1, b"b", 10, ValueKind::Put),
        ];
        keys.sort_by(|x, y| compare(x, y));
        let order: Vec<(u32, Vec<u8>, u64, ValueKind)> = keys
            .iter()
            .map(|k| {
                let (ks, u, s, t) = decode_in(k).unwrap();
                (ks, u.to_vec(), s, t)
            })
            .collect();
        let want = vec![
            (0, b"zzzz".to_vec(), 1, ValueKind::Put),
            (1, b"".to_vec(), 1, ValueKind::Put),
            (1, b"b".to_vec(), 10, ValueKind::Put),
            (1, b"b".to_vec(), 9, ValueKind::Put),
            (1, b"b".to_vec(), 9, ValueKind::Delete),
            (2, b"a".to_vec(), 1, ValueKind::Put),
        ];
        assert_eq!(order, want);
    }

    #[test]
    fn replacing_a_keyspace_id_keeps_the_order_within_one_keyspace() {
        let keys: Vec<Vec<u8>> = [(&b"a"[..], 0u64), (b"ab", 0), (b"b", 0), (b"b\x07\0\0\0", 0)]
            .iter()
            .map(|&(k, s)| encode_in(7, k, s, ValueKind::Put))
            .collect();
        let mut moved = keys.clone();
        for k in &mut moved {
            assert!(replace_keyspace(k, 7, 3));
            assert_eq!(keyspace(k), 3);
        }
        for (a, b) in keys.iter().zip(&moved) {
            assert_eq!(decode_in(a).unwrap().1, decode_in(b).unwrap().1);
        }
        for w in moved.windows(2) {
            assert_eq!(compare(&w[0], &w[1]), Ordering::Less);
        }
        // Another keyspace's key, a keyspace-0 key and a short key are left alone.
        let mut other = encode_in(9, b"a", 1, ValueKind::Put);
        assert!(!replace_keyspace(&mut other, 7, 3));
        assert_eq!(keyspace(&other), 9);
        let mut plain = encode_in(0, b"a\x07\0\0\0", 1, ValueKind::Put);
        assert!(!replace_keyspace(&mut plain, 7, 3));
        assert!(!replace_keyspace(&mut [1u8, 2][..], 7, 3));
    }

    #[test]
    fn a_user_key_ending_like_a_keyspace_id_stays_in_keyspace_zero() {
        // User key "ab\x01\0\0\0" in keyspace 0 and "ab" in keyspace 1 share the bytes before
        // the trailer; only the flag tells them apart.
        let plain = encode_in(0, b"ab\x01\0\0\0", 4, ValueKind::Put);
        let flagged = encode_in(1, b"ab", 4, ValueKind::Put);
        assert_eq!(plain[..6], flagged[..6]);
        assert_eq!(split(&plain), (0, &b"ab\x01\0\0\0"[..]));
        assert_eq!(split(&flagged), (1, &b"ab"[..]));
        assert_eq!(compare(&plain, &flagged), Ordering::Less);
    }

    #[test]
    fn lookup_key_stays_inside_its_keyspace() {
        let v = encode_in(5, b"k", 3, ValueKind::Put);
        // The lookup kind (Merge) sorts before a Put at the same sequence number.
        assert_eq!(compare(&lookup_key_in(5, b"k", 3), &v), Ordering::Less);
        assert_eq!(compare(&lookup_key_in(5, b"k", 2), &v), Ordering::Greater);
        assert_eq!(compare(&lookup_key_in(4, b"k", 3), &v), Ordering::Less);
        assert_eq!(compare(&lookup_key_in(6, b"", 0), &v), Ordering::Greater);
    }

    #[test]
    fn malformed_keyspace_keys_are_errors_not_panics() {
        // Flag set but only 2 bytes before the trailer.
        let mut k = encode(b"ab", 1, ValueKind::Put);
        k[2] |= KEYSPACE_FLAG;
        assert!(decode_in(&k).unwrap_err().is_corruption());
        assert_eq!(split(&k), (0, &b"ab"[..]));
        // Flag set with keyspace 0.
        let mut k = encode(b"\0\0\0\0", 1, ValueKind::Put);
        k[4] |= KEYSPACE_FLAG;
        assert!(decode_in(&k).unwrap_err().is_corruption());
    }

    #[test]
    fn prefix_order_implies_key_order() {
        let keys: [&[u8]; 8] = [b"", b"\0", b"a", b"a\0", b"ab", b"abcdefgh", b"abcdefgh\0", b"b"];
        for a in keys {
            for b in keys {
                if key_prefix(a) < key_prefix(b) {
                    assert!(a < b, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn the_prefix_is_the_first_8_bytes_zero_padded() {
        let mut rng = crate::rng::SplitMix64::new(5);
        for len in 0..=12 {
            let key: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let mut padded = [0u8; 8];
            padded[..len.min(8)].copy_from_slice(&key[..len.min(8)]);
            assert_eq!(key_prefix(&key), u64::from_be_bytes(padded), "{key:?}");
        }
    }
}
