//! The memtable: recent writes, ordered by internal key, in a lock-free skip list, with a
//! [`TwoBitBloom`] over the user keys filled by one atomic OR per insert.
//!
//! Thread safety: one writer at a time inserts (the `Db` write path is serialised by group
//! commit); any number of readers search concurrently without locks. Invariants:
//! 1. An entry is never modified or removed once inserted; newer versions are new entries.
//! 2. A write at sequence `s` is inserted (skip list entry and filter bits) before the `Db`
//!    publishes `s` as visible with a Release store; a reader takes its snapshot with an Acquire
//!    load, so every entry and filter bit of a visible write is visible to it. This is why the
//!    filter can use Relaxed atomics, and why a filter "no" never hides a visible write.
//! 3. Entries order by user key ascending, then sequence number descending: the first entry at
//!    or after `(key, snapshot)` is the newest version visible at `snapshot`.
//! 4. Range tombstones (`delete_range`) are not in the skip list: the writer replaces the
//!    memtable's [`Fragments`] (an `ArcSwap`, so readers take no lock) before publishing the
//!    tombstone's sequence number, as in invariant 2. Point lookups ask
//!    [`Memtable::max_covering_tombstone`] before the filter (a filter "no" for the key says
//!    nothing about the tombstones covering it).

use crate::batch::ValueKind;
use crate::filter::prelude::*;
use crate::filter::{hash_key, TwoBitBloom};
use crate::range_del::{Fragments, RangeTombstone};
use arc_swap::ArcSwap;
use crossbeam_skiplist::SkipMap;
use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Bytes charged per entry on top of key and value: the skip list node, its tower and the
/// internal key trailer. An estimate; it decides when a memtable is full.
const ENTRY_OVERHEAD: usize = 64;

/// A memtable key: user key ascending, then sequence number descending (then kind descending,
/// which never decides since sequence numbers are unique).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemKey {
    /// The user key.
    pub user_key: Box<[u8]>,
    /// Sequence number of the write.
    pub seq: u64,
    /// Put or delete.
    pub kind: ValueKind,
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.user_key
            .cmp(&other.user_key)
            .then_with(|| other.seq.cmp(&self.seq))
            .then_with(|| other.kind.cmp(&self.kind))
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

/// The skip list's key: one allocation holding the user key followed by the value, the key's
/// first 8 bytes as an order-preserving integer, and the version. Keeping the prefix inline in
/// the node decides most comparisons of a search without dereferencing `data` (one cache miss
/// and a `memcmp` call saved per step), and storing the value in the same allocation saves one
/// allocation per write and one per entry on flush.
struct Slot {
    /// `key_prefix(user key)`: if two slots' prefixes differ, their keys order as the prefixes.
    prefix: u64,
    /// User key bytes, then value bytes.
    data: Box<[u8]>,
    key_len: u32,
    seq: u64,
    kind: ValueKind,
}

impl Slot {
    fn new(key: &[u8], value: &[u8], seq: u64, kind: ValueKind) -> Slot {
        let mut data = Vec::with_capacity(key.len() + value.len());
        data.extend_from_slice(key);
        data.extend_from_slice(value);
        Slot {
            prefix: key_prefix(key),
            data: data.into_boxed_slice(),
            key_len: key.len() as u32,
            seq,
            kind,
        }
    }

    fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    fn value(&self) -> &[u8] {
        &self.data[self.key_len as usize..]
    }

    fn mem_key(&self) -> MemKey {
        MemKey { user_key: self.key().into(), seq: self.seq, kind: self.kind }
    }
}

/// The first 8 bytes of `key`, zero-padded, as a big-endian integer. Order-preserving in the
/// weak sense: `key_prefix(a) < key_prefix(b)` implies `a < b` (at the first differing byte
/// position either both bytes are real, or the shorter key ended there and its padding 0 is
/// below the other's byte, which makes it a proper prefix, hence smaller).
fn key_prefix(key: &[u8]) -> u64 {
    if let Some(first) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*first);
    }
    let mut b = [0u8; 8];
    b[..key.len()].copy_from_slice(key);
    u64::from_be_bytes(b)
}

impl Ord for Slot {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.prefix
            .cmp(&other.prefix)
            .then_with(|| self.key().cmp(other.key()))
            .then_with(|| other.seq.cmp(&self.seq))
            .then_with(|| other.kind.cmp(&self.kind))
    }
}

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Slot {}

/// What a memtable knows about a key at a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemLookup {
    /// The newest visible version is a value.
    Found(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// No version visible at the snapshot (the caller searches older data).
    Absent,
}

/// One memtable. See the module documentation for the concurrency contract.
pub struct Memtable {
    map: SkipMap<Slot, ()>,
    filter: TwoBitBloom,
    bytes: AtomicUsize,
    entries: AtomicU64,
    /// Number of the WAL that holds this memtable's writes.
    wal_number: u64,
    /// Range tombstones, as written and fragmented (invariant 4). Rare: each `delete_range`
    /// rebuilds the set.
    range_dels: ArcSwap<RangeDels>,
    /// Range tombstones held (0: point lookups skip the tombstone check).
    range_del_count: AtomicU64,
}

/// A memtable's range tombstones.
#[derive(Default)]
struct RangeDels {
    list: Vec<RangeTombstone>,
    frags: Fragments,
}

impl Memtable {
    /// An empty memtable whose writes live in WAL `wal_number`, with a two-bit filter of
    /// `filter_bits` bits (rounded up to a power-of-two number of words by the filter).
    pub fn new(wal_number: u64, filter_bits: u64) -> Memtable {
        Memtable {
            map: SkipMap::new(),
            filter: TwoBitBloom::from_shape(filter_bits.max(64), 2)
                .expect("two-bit shape from a positive bit count is valid"),
            bytes: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
            wal_number,
            range_dels: ArcSwap::from_pointee(RangeDels::default()),
            range_del_count: AtomicU64::new(0),
        }
    }

    /// The WAL holding this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Inserts one version. `key_hash` must be `hash_key(key)`. Only the single writer calls
    /// this (invariant 2 of the module documentation). A [`ValueKind::RangeDelete`] is a range
    /// tombstone deleting `[key, value)` (invariant 4).
    pub fn add(&self, seq: u64, kind: ValueKind, key: &[u8], key_hash: u64, value: &[u8]) {
        if kind == ValueKind::RangeDelete {
            self.add_range_tombstone(seq, key, value);
            return;
        }
        self.filter.insert_hash_atomic(key_hash);
        self.map.insert(Slot::new(key, value, seq, kind), ());
        self.bytes.fetch_add(key.len() + value.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the range tombstone `[start, end)` at `seq`. Only the single writer calls this.
    fn add_range_tombstone(&self, seq: u64, start: &[u8], end: &[u8]) {
        let cur = self.range_dels.load();
        let mut list = cur.list.clone();
        list.push(RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq });
        let frags = Fragments::new(&list);
        self.range_dels.store(std::sync::Arc::new(RangeDels { list, frags }));
        self.range_del_count.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(start.len() + end.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
    }

    /// The largest sequence number `<= snapshot` of a range tombstone covering `key` (0 if
    /// none): a version of `key` older than it, here or in any older source, is deleted.
    pub fn max_covering_tombstone(&self, key: &[u8], snapshot: u64) -> u64 {
        if self.range_del_count.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.range_dels.load().frags.max_covering_seq(key, snapshot)
    }

    /// The range tombstones, fragmented (empty without any).
    pub fn range_tombstones(&self) -> Fragments {
        if self.range_del_count.load(Ordering::Relaxed) == 0 {
            return Fragments::default();
        }
        self.range_dels.load().frags.clone()
    }

    /// Range tombstones held.
    pub fn range_tombstone_count(&self) -> u64 {
        self.range_del_count.load(Ordering::Relaxed)
    }

    /// The newest version of `key` with sequence number `<= snapshot`. The filter is consulted
    /// first; a "no" answers `Absent` without touching the skip list.
    pub fn get(&self, key: &[u8], key_hash: u64, snapshot: u64) -> MemLookup {
        self.lookup(key, key_hash, snapshot, true)
    }

    /// [`Memtable::get`]; `copy_value = false` answers `Found` with an empty vector
    /// (`Db::contains_key`: no value copy).
    pub fn lookup(&self, key: &[u8], key_hash: u64, snapshot: u64, copy_value: bool) -> MemLookup {
        self.lookup_versioned(key, key_hash, snapshot, copy_value).0
    }

    /// [`Memtable::lookup`] with the sequence number of the version found (0 when `Absent`),
    /// which the caller compares with the covering range tombstones.
    pub fn lookup_versioned(
        &self,
        key: &[u8],
        key_hash: u64,
        snapshot: u64,
        copy_value: bool,
    ) -> (MemLookup, u64) {
        // An empty memtable (the usual state after a flush or a reopen) answers without a
        // filter probe, which would be a cache miss. Sound by invariant 2: a visible write's
        // `entries` increment precedes its publication.
        if self.entries.load(Ordering::Relaxed) == 0 || !self.filter.contains_hash(key_hash) {
            return (MemLookup::Absent, 0);
        }
        let probe = Slot::new(key, &[], snapshot, ValueKind::Put);
        match self.map.lower_bound(Bound::Included(&probe)) {
            Some(e) if e.key().key() == key => {
                let found = match e.key().kind {
                    ValueKind::Put if copy_value => MemLookup::Found(e.key().value().to_vec()),
                    ValueKind::Put => MemLookup::Found(Vec::new()),
                    ValueKind::Delete => MemLookup::Deleted,
                    // `add` keeps range tombstones out of the skip list.
                    ValueKind::RangeDelete => MemLookup::Absent,
                };
                (found, e.key().seq)
            }
            _ => (MemLookup::Absent, 0),
        }
    }

    /// Every version in internal-key order (user key ascending, newest first), starting at the
    /// first entry whose user key is `>= start` (or the beginning).
    pub fn iter_from(
        &self,
        start: Option<&[u8]>,
    ) -> impl Iterator<Item = (MemKey, Box<[u8]>)> + '_ {
        let lower = match start {
            Some(k) => Bound::Included(Slot::new(k, &[], u64::MAX, ValueKind::Put)),
            None => Bound::Unbounded,
        };
        self.map
            .range((lower, Bound::Unbounded))
            .map(|e| (e.key().mem_key(), e.key().value().into()))
    }

    /// Calls `f(user_key, seq, kind, value)` for every point version in internal-key order,
    /// without copying (the flush path; range tombstones come from
    /// [`Memtable::range_tombstones`]).
    pub fn for_each(
        &self,
        mut f: impl FnMut(&[u8], u64, ValueKind, &[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        for e in self.map.iter() {
            let s = e.key();
            f(s.key(), s.seq, s.kind, s.value())?;
        }
        Ok(())
    }

    /// Every version at or after (`Included`) or strictly after (`Excluded`) `from` in
    /// internal-key order, ascending (`Unbounded`: from the first). The scan cursor's forward
    /// refill.
    pub fn range_asc(
        &self,
        from: Bound<&MemKey>,
    ) -> impl Iterator<Item = (MemKey, Box<[u8]>)> + '_ {
        self.map
            .range((slot_bound(from), Bound::Unbounded))
            .map(|e| (e.key().mem_key(), e.key().value().into()))
    }

    /// Every version at or before (`Included`) or strictly before (`Excluded`) `to` in
    /// internal-key order, descending (`Unbounded`: from the last). The skip list's range runs
    /// backwards by searching for its upper bound, one O(log n) search per step.
    pub fn range_desc(&self, to: Bound<&MemKey>) -> impl Iterator<Item = (MemKey, Box<[u8]>)> + '_ {
        self.map
            .range((Bound::Unbounded, slot_bound(to)))
            .rev()
            .map(|e| (e.key().mem_key(), e.key().value().into()))
    }

    /// Approximate bytes held (keys, values, range tombstones and per-entry overhead).
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Entries (versions and range tombstones) held.
    pub fn len(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The memtable's filter (written as the flush filter when its fill allows, design.md
    /// "Flush filter rule").
    pub fn filter(&self) -> &TwoBitBloom {
        &self.filter
    }

    /// Memory of the filter in bytes.
    pub fn filter_bytes(&self) -> usize {
        self.filter.memory_bytes()
    }
}

/// A bound on memtable keys as a bound on skip-list slots.
fn slot_bound(b: Bound<&MemKey>) -> Bound<Slot> {
    let slot = |k: &MemKey| Slot::new(&k.user_key, &[], k.seq, k.kind);
    match b {
        Bound::Included(k) => Bound::Included(slot(k)),
        Bound::Excluded(k) => Bound::Excluded(slot(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Hash of a user key, as the memtable and every SST filter expect it.
pub fn key_hash(key: &[u8]) -> u64 {
    hash_key(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(m: &Memtable, seq: u64, k: &[u8], v: &[u8]) {
        m.add(seq, ValueKind::Put, k, hash_key(k), v);
    }

    #[test]
    fn get_returns_newest_version_visible_at_snapshot() {
        let m = Memtable::new(1, 1 << 12);
        put(&m, 1, b"k", b"v1");
        put(&m, 3, b"k", b"v3");
        m.add(5, ValueKind::Delete, b"k", hash_key(b"k"), b"");
        let h = hash_key(b"k");
        assert_eq!(m.get(b"k", h, 0), MemLookup::Absent);
        assert_eq!(m.get(b"k", h, 2), MemLookup::Found(b"v1".to_vec()));
        assert_eq!(m.get(b"k", h, 4), MemLookup::Found(b"v3".to_vec()));
        assert_eq!(m.get(b"k", h, 9), MemLookup::Deleted);
        assert_eq!(m.get(b"j", hash_key(b"j"), 9), MemLookup::Absent);
        assert_eq!(m.get(b"k\0", hash_key(b"k\0"), 9), MemLookup::Absent);
    }

    #[test]
    fn range_tombstones_are_kept_apart_and_answer_per_snapshot() {
        let m = Memtable::new(1, 1 << 12);
        put(&m, 1, b"k", b"v1");
        m.add(2, ValueKind::RangeDelete, b"a", hash_key(b"a"), b"m");
        put(&m, 3, b"k", b"v3");
        assert_eq!(m.len(), 3);
        assert_eq!(m.range_tombstone_count(), 1);
        assert_eq!(m.max_covering_tombstone(b"k", 9), 2);
        assert_eq!(m.max_covering_tombstone(b"k", 1), 0, "not visible below its sequence");
        assert_eq!(m.max_covering_tombstone(b"m", 9), 0, "the end is exclusive");
        // The skip list holds point versions only; the lookup reports the version's sequence.
        assert_eq!(
            m.lookup_versioned(b"k", hash_key(b"k"), 2, true),
            (MemLookup::Found(b"v1".to_vec()), 1)
        );
        assert_eq!(m.iter_from(None).count(), 2);
        assert_eq!(m.range_tombstones().len(), 1);
    }

    #[test]
    fn iteration_is_in_internal_key_order() {
        let m = Memtable::new(1, 1 << 12);
        put(&m, 2, b"b", b"");
        put(&m, 1, b"a", b"");
        put(&m, 3, b"a", b"");
        let order: Vec<(Vec<u8>, u64)> =
            m.iter_from(None).map(|(k, _)| (k.user_key.to_vec(), k.seq)).collect();
        assert_eq!(order, vec![(b"a".to_vec(), 3), (b"a".to_vec(), 1), (b"b".to_vec(), 2)]);
        assert_eq!(m.iter_from(Some(b"b")).count(), 1);
    }

    #[test]
    fn ranges_run_both_ways_from_a_version() {
        let m = Memtable::new(1, 1 << 12);
        put(&m, 2, b"b", b"");
        put(&m, 1, b"a", b"");
        put(&m, 3, b"a", b"");
        put(&m, 4, b"c", b"");
        let at = |seq| MemKey { user_key: b"a"[..].into(), seq, kind: ValueKind::Put };
        let keys = |it: &mut dyn Iterator<Item = (MemKey, Box<[u8]>)>| -> Vec<(Vec<u8>, u64)> {
            it.map(|(k, _)| (k.user_key.to_vec(), k.seq)).collect()
        };
        let a1 = (b"a".to_vec(), 1);
        let (a3, b2, c4) = ((b"a".to_vec(), 3), (b"b".to_vec(), 2), (b"c".to_vec(), 4));
        let all = vec![a3.clone(), a1.clone(), b2.clone(), c4.clone()];
        assert_eq!(keys(&mut m.range_asc(Bound::Unbounded)), all);
        assert_eq!(keys(&mut m.range_asc(Bound::Included(&at(1)))), all[1..]);
        assert_eq!(keys(&mut m.range_asc(Bound::Excluded(&at(1)))), all[2..]);
        let rev: Vec<_> = all.iter().rev().cloned().collect();
        assert_eq!(keys(&mut m.range_desc(Bound::Unbounded)), rev);
        assert_eq!(keys(&mut m.range_desc(Bound::Included(&at(1)))), vec![a1, a3.clone()]);
        assert_eq!(keys(&mut m.range_desc(Bound::Excluded(&at(1)))), vec![a3]);
    }

    #[test]
    fn slot_order_matches_internal_key_order_for_short_and_zero_byte_keys() {
        // The inline prefix must never contradict the full comparison: keys of 0..12 bytes over
        // a 3-letter alphabet including 0 (so zero padding collides with real zero bytes).
        let mut rng = crate::rng::SplitMix64::new(7);
        let keys: Vec<(Vec<u8>, u64)> = (0..600)
            .map(|i| {
                let len = (rng.next_u64() % 13) as usize;
                let k = (0..len).map(|_| [0u8, 1, 255][(rng.next_u64() % 3) as usize]).collect();
                (k, i)
            })
            .collect();
        for (a, sa) in &keys {
            for (b, sb) in keys.iter().step_by(7) {
                let x = Slot::new(a, b"v", *sa, ValueKind::Put);
                let y = Slot::new(b, b"", *sb, ValueKind::Put);
                let mx = MemKey { user_key: a.as_slice().into(), seq: *sa, kind: ValueKind::Put };
                let my = MemKey { user_key: b.as_slice().into(), seq: *sb, kind: ValueKind::Put };
                assert_eq!(x.cmp(&y), mx.cmp(&my), "{a:?}@{sa} vs {b:?}@{sb}");
            }
        }
    }

    #[test]
    fn concurrent_readers_see_every_published_write() {
        // One writer publishes a sequence number after each insert (Release); readers load it
        // (Acquire) and must find every key up to it: the filter never hides a visible write.
        let m = Memtable::new(1, 1 << 16);
        let visible = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 1..=20_000u64 {
                    put(&m, i, &i.to_be_bytes(), b"v");
                    visible.store(i, Ordering::Release);
                }
            });
            for _ in 0..2 {
                s.spawn(|| loop {
                    let upto = visible.load(Ordering::Acquire);
                    for i in (upto.saturating_sub(50)..=upto).filter(|&i| i > 0) {
                        let k = i.to_be_bytes();
                        assert!(matches!(m.get(&k, hash_key(&k), upto), MemLookup::Found(_)));
                    }
                    if upto == 20_000 {
                        break;
                    }
                });
            }
        });
    }
}
