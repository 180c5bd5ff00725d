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
//! 3. Entries order by keyspace ascending, user key ascending, then sequence number
//!    descending (the internal-key order): the first entry at or after `(ks, key, snapshot)` is
//!    the newest version visible at `snapshot`, and a lookup or scan never leaves its keyspace's
//!    range. The filter hashes the user key only, so a key of one keyspace may make the filter
//!    answer "maybe" for the same key of another: a false positive, never a false negative.
//! 4. Range tombstones (`delete_range`) are not in the skip list: the writer replaces the
//!    memtable's per-keyspace [`Fragments`] (an `ArcSwap`, so readers take no lock) before
//!    publishing the tombstone's sequence number, as in invariant 2. Point lookups ask
//!    [`Memtable::max_covering_tombstone`] before the filter (a filter "no" for the key says
//!    nothing about the tombstones covering it).

use crate::batch::ValueKind;
use crate::filter::hash_key;
use crate::filter::prelude::*;
use crate::filter::TwoBitBloom;
use crate::prefix::PrefixExtractor;
use crate::range_del::{Fragments, RangeTombstone};
pub(crate) use skiplist::Entry as MemEntry;
use skiplist::{Probe, SkipList};
use std::sync::Arc;

mod skiplist;

use arc_swap::ArcSwap;
use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Bytes charged per range tombstone on top of its start and end (its share of the fragment
/// list). Point versions are charged their skip-list node's arena bytes exactly. The sum
/// decides when a memtable is full.
const ENTRY_OVERHEAD: usize = 64;

/// A memtable key: keyspace ascending, user key ascending, then sequence number descending
/// (then kind descending, which never decides since sequence numbers are unique).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemKey {
    /// The keyspace id (0: the default keyspace).
    pub keyspace: u32,
    /// The user key.
    pub user_key: Box<[u8]>,
    /// Sequence number of the write.
    pub seq: u64,
    /// Put, delete or merge.
    pub kind: ValueKind,
}

impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.keyspace
            .cmp(&other.keyspace)
            .then_with(|| self.user_key.cmp(&other.user_key))
            .then_with(|| other.seq.cmp(&self.seq))
            .then_with(|| other.kind.cmp(&self.kind))
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

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
    map: SkipList,
    filter: TwoBitBloom,
    bytes: AtomicUsize,
    entries: AtomicU64,
    /// Number of the WAL that holds this memtable's writes.
    wal_number: u64,
    /// The keyspace of the first write, and whether a write of another keyspace followed (the
    /// flush may write the two-bit filter as is only for a single-keyspace memtable).
    first_keyspace: AtomicU64,
    mixed_keyspaces: AtomicBool,
    /// Range tombstones per keyspace, as written and fragmented (invariant 4). Rare: each
    /// `delete_range` rebuilds its keyspace's set.
    range_dels: ArcSwap<RangeDels>,
    /// Range tombstones held (0: point lookups skip the tombstone check).
    range_del_count: AtomicU64,
    /// The prefix Bloom of `Options::prefix_extractor` (design.md#scan-filters): the hash
    /// of every point entry's extracted prefix, set before the entry is inserted (invariant 2
    /// holds for it as for the key filter).
    prefix: Option<PrefixBloom>,
}

/// A memtable's prefix filter and the extractor that fills it.
struct PrefixBloom {
    extractor: Arc<dyn PrefixExtractor>,
    filter: TwoBitBloom,
}

/// A memtable's range tombstones: per keyspace, the list as written and its fragments.
#[derive(Default)]
struct RangeDels {
    by_keyspace: std::collections::BTreeMap<u32, (Vec<RangeTombstone>, Fragments)>,
}

/// `first_keyspace` before any write.
const NO_KEYSPACE: u64 = u64::MAX;

impl Memtable {
    /// An empty memtable whose writes live in WAL `wal_number`, with a two-bit filter of
    /// `filter_bits` bits (rounded up to a power-of-two number of words by the filter).
    pub fn new(wal_number: u64, filter_bits: u64) -> Memtable {
        Memtable {
            map: SkipList::new(),
            filter: TwoBitBloom::from_shape(filter_bits.max(64), 2)
                .expect("two-bit shape from a positive bit count is valid"),
            bytes: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
            wal_number,
            first_keyspace: AtomicU64::new(NO_KEYSPACE),
            mixed_keyspaces: AtomicBool::new(false),
            range_dels: ArcSwap::from_pointee(RangeDels::default()),
            range_del_count: AtomicU64::new(0),
            prefix: None,
        }
    }

    /// The same empty memtable with a prefix Bloom of `bits` bits filled through `extractor`
    /// (no filter when `extractor` is `None`).
    pub fn with_prefix_filter(
        mut self,
        extractor: Option<Arc<dyn PrefixExtractor>>,
        bits: u64,
    ) -> Memtable {
        self.prefix = extractor.map(|extractor| PrefixBloom {
            extractor,
            filter: TwoBitBloom::from_shape(bits.max(64), 2)
                .expect("two-bit shape from a positive bit count is valid"),
        });
        self
    }

    /// The WAL holding this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    #[cfg(test)]
    /// Inserts one version of a default-keyspace key (see [`Memtable::add_in`]).
    pub fn add(&self, seq: u64, kind: ValueKind, key: &[u8], key_hash: u64, value: &[u8]) {
        self.add_in(seq, kind, 0, key, key_hash, value)
    }

    /// Inserts one version of `key` in `keyspace`. `key_hash` must be `hash_key(key)`. Only the
    /// single writer calls this (invariant 2 of the module documentation). A
    /// [`ValueKind::RangeDelete`] is a range tombstone deleting `[key, value)` (invariant 4).
    pub fn add_in(
        &self,
        seq: u64,
        kind: ValueKind,
        keyspace: u32,
        key: &[u8],
        key_hash: u64,
        value: &[u8],
    ) {
        match self.first_keyspace.load(Ordering::Relaxed) {
            NO_KEYSPACE => self.first_keyspace.store(keyspace as u64, Ordering::Relaxed),
            first if first != keyspace as u64 => {
                self.mixed_keyspaces.store(true, Ordering::Relaxed)
            }
            _ => {}
        }
        if kind == ValueKind::RangeDelete {
            self.add_range_tombstone(seq, keyspace, key, value);
            return;
        }
        self.filter.insert_hash_atomic(key_hash);
        if let Some(pb) = &self.prefix {
            if let Some(p) = pb.extractor.prefix(key) {
                pb.filter.insert_hash_atomic(hash_key(p));
            }
        }
        let node_bytes = self.map.insert(keyspace, key, value, seq, kind);
        self.bytes.fetch_add(node_bytes, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the range tombstone `[start, end)` of `keyspace` at `seq`. Only the single
    /// writer calls this.
    fn add_range_tombstone(&self, seq: u64, keyspace: u32, start: &[u8], end: &[u8]) {
        let cur = self.range_dels.load();
        let mut by_keyspace = cur.by_keyspace.clone();
        let (list, frags) = by_keyspace.entry(keyspace).or_default();
        list.push(RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq });
        *frags = Fragments::new(list);
        self.range_dels.store(std::sync::Arc::new(RangeDels { by_keyspace }));
        self.range_del_count.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(start.len() + end.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
    }

    /// The largest sequence number `<= snapshot` of a range tombstone covering `key` of
    /// `keyspace` (0 if none): a version of `key` older than it, here or in any older source,
    /// is deleted.
    pub fn max_covering_tombstone(&self, keyspace: u32, key: &[u8], snapshot: u64) -> u64 {
        if self.range_del_count.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        match self.range_dels.load().by_keyspace.get(&keyspace) {
            Some((_, frags)) => frags.max_covering_seq(key, snapshot),
            None => 0,
        }
    }

    /// The range tombstones of `keyspace`, fragmented (empty without any).
    pub fn range_tombstones(&self, keyspace: u32) -> Fragments {
        if self.range_del_count.load(Ordering::Relaxed) == 0 {
            return Fragments::default();
        }
        match self.range_dels.load().by_keyspace.get(&keyspace) {
            Some((_, frags)) => frags.clone(),
            None => Fragments::default(),
        }
    }

    /// The keyspaces holding range tombstones, ascending.
    pub fn range_tombstone_keyspaces(&self) -> Vec<u32> {
        if self.range_del_count.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        self.range_dels.load().by_keyspace.keys().copied().collect()
    }

    #[cfg(test)]
    /// Range tombstones held.
    pub fn range_tombstone_count(&self) -> u64 {
        self.range_del_count.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    /// The newest version of default-keyspace `key` with sequence number `<= snapshot`. The
    /// filter is consulted first; a "no" answers `Absent` without touching the skip list. Merge
    /// operands met before the newest Put or Delete are appended to `operands` (newest first)
    /// and the walk goes on; `Absent` then means "no base in this memtable", and the caller
    /// looks further. Range tombstones are applied (this memtable's).
    pub fn get(
        &self,
        key: &[u8],
        key_hash: u64,
        snapshot: u64,
        operands: &mut Vec<Vec<u8>>,
    ) -> MemLookup {
        let covered_below = self.max_covering_tombstone(0, key, snapshot);
        self.lookup(0, key, key_hash, snapshot, true, operands, covered_below)
    }

    /// [`Memtable::get`] in `keyspace`; `copy_value = false` answers `Found` with an empty
    /// vector (`Db::contains_key`: no value copy) unless `operands` is non-empty (the value is
    /// then the base a merge needs). `covered_below`: the newest range tombstone covering the
    /// key among the sources read so far, this memtable's included (0: none); the walk answers
    /// `Deleted` on reaching a version older than it.
    #[allow(clippy::too_many_arguments)]
    pub fn lookup(
        &self,
        keyspace: u32,
        key: &[u8],
        key_hash: u64,
        snapshot: u64,
        copy_value: bool,
        operands: &mut Vec<Vec<u8>>,
        covered_below: u64,
    ) -> MemLookup {
        if !self.may_hold(key_hash) {
            return MemLookup::Absent;
        }
        let probe = Probe::new(keyspace, key, snapshot, crate::ikey::LOOKUP_KIND);
        let start = self.map.seek(&probe);
        Self::lookup_at(start, keyspace, key, copy_value, operands, covered_below)
    }

    /// Whether the filter lets a key of hash `key_hash` through. An empty memtable (the usual
    /// state after a flush or a reopen) answers without a filter probe, which would be a cache
    /// miss. Sound by invariant 2: a visible write's `entries` increment precedes its
    /// publication.
    fn may_hold(&self, key_hash: u64) -> bool {
        self.entries.load(Ordering::Relaxed) != 0 && self.filter.contains_hash(key_hash)
    }

    /// Where [`Memtable::lookup`] of each `(key, key_hash)` of `keys` in `keyspace` at
    /// `snapshot` starts its walk, for [`Memtable::lookup_at`]: `out[i]` for `keys[i]`
    /// (`None` when the filter rules the key out, or past the last entry). The skip-list
    /// searches run interleaved (`SkipList::seek_many`), which is what a batch gains.
    pub(crate) fn positions<'m>(
        &'m self,
        keyspace: u32,
        snapshot: u64,
        keys: &[(&[u8], u64)],
        out: &mut Vec<Option<MemEntry<'m>>>,
    ) {
        let mut probes = Vec::with_capacity(keys.len());
        let mut slots = Vec::with_capacity(keys.len());
        for (i, &(key, hash)) in keys.iter().enumerate() {
            if self.may_hold(hash) {
                probes.push(Probe::new(keyspace, key, snapshot, crate::ikey::LOOKUP_KIND));
                slots.push(i);
            }
        }
        let mut found = Vec::new();
        self.map.seek_many(&probes, &mut found);
        out.clear();
        out.resize(keys.len(), None);
        for (i, entry) in slots.into_iter().zip(found) {
            out[i] = entry;
        }
    }

    /// [`Memtable::lookup`]'s walk over `key`'s versions from `entry`, the position
    /// [`Memtable::positions`] gave for `key` (the other arguments as `lookup`'s).
    pub(crate) fn lookup_at(
        mut entry: Option<MemEntry<'_>>,
        keyspace: u32,
        key: &[u8],
        copy_value: bool,
        operands: &mut Vec<Vec<u8>>,
        covered_below: u64,
    ) -> MemLookup {
        while let Some(e) = entry.filter(|e| e.keyspace() == keyspace && e.key() == key) {
            if e.seq() < covered_below {
                return MemLookup::Deleted; // under a newer range tombstone
            }
            match e.kind() {
                ValueKind::Put if copy_value || !operands.is_empty() => {
                    return MemLookup::Found(e.value().to_vec())
                }
                ValueKind::Put => return MemLookup::Found(Vec::new()),
                ValueKind::Delete => return MemLookup::Deleted,
                ValueKind::Merge => operands.push(e.value().to_vec()),
                // `add_in` keeps range tombstones out of the skip list; blob references exist
                // in SSTs only.
                ValueKind::RangeDelete | ValueKind::BlobIndex => {}
            }
            entry = e.next();
        }
        MemLookup::Absent
    }

    #[cfg(test)]
    /// Every version in internal-key order (keyspace, user key ascending, newest first),
    /// starting at the first entry of the default keyspace whose user key is `>= start` (or the
    /// beginning).
    pub fn iter_from(
        &self,
        start: Option<&[u8]>,
    ) -> impl Iterator<Item = (MemKey, Box<[u8]>)> + '_ {
        let first = match start {
            Some(k) => self.map.seek(&Probe::new(0, k, u64::MAX, ValueKind::Put)),
            None => self.map.first(),
        };
        std::iter::successors(first, |e| e.next()).map(owned)
    }

    /// Calls `f(keyspace, user_key, seq, kind, value)` for every point version in internal-key
    /// order, without copying (the flush path; range tombstones come from
    /// [`Memtable::range_tombstones`]).
    pub fn for_each(
        &self,
        mut f: impl FnMut(u32, &[u8], u64, ValueKind, &[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        let mut entry = self.map.first();
        while let Some(e) = entry {
            f(e.keyspace(), e.key(), e.seq(), e.kind(), e.value())?;
            entry = e.next();
        }
        Ok(())
    }

    /// Every version at or after (`Included`) or strictly after (`Excluded`) `from` in
    /// internal-key order, ascending (`Unbounded`: from the first). The scan cursor's forward
    /// refill.
    #[cfg(test)]
    pub fn range_asc(
        &self,
        from: Bound<&MemKey>,
    ) -> impl Iterator<Item = (MemKey, Box<[u8]>)> + '_ {
        self.entries_asc(from).map(owned)
    }

    /// [`Memtable::range_asc`] borrowing the entries: nothing is copied.
    pub(crate) fn entries_asc(&self, from: Bound<&MemKey>) -> impl Iterator<Item = MemEntry<'_>> {
        let first = match from {
            Bound::Unbounded => self.map.first(),
            Bound::Included(k) => self.map.seek_from(&probe(k), false),
            Bound::Excluded(k) => self.map.seek_from(&probe(k), true),
        };
        std::iter::successors(first, |e| e.next())
    }

    /// Every version at or before (`Included`) or strictly before (`Excluded`) `to` in
    /// internal-key order, descending (`Unbounded`: from the last). The skip list has no
    /// backward links: each step back is one O(log n) search from the head, as in LevelDB.
    #[cfg(test)]
    pub fn range_desc(&self, to: Bound<&MemKey>) -> impl Iterator<Item = (MemKey, Box<[u8]>)> + '_ {
        self.entries_desc(to).map(owned)
    }

    /// [`Memtable::range_desc`] borrowing the entries: nothing is copied.
    pub(crate) fn entries_desc(&self, to: Bound<&MemKey>) -> impl Iterator<Item = MemEntry<'_>> {
        let last = match to {
            Bound::Unbounded => self.map.seek_back(None),
            Bound::Included(k) => self.map.seek_back(Some((&probe(k), true))),
            Bound::Excluded(k) => self.map.seek_back(Some((&probe(k), false))),
        };
        std::iter::successors(last, |e| self.map.prev(e))
    }

    /// Whether the memtable may hold a key with prefix `prefix` as extracted by `extractor`;
    /// `None` without a prefix Bloom filled by an extractor of that name.
    pub fn may_hold_prefix(&self, extractor: &dyn PrefixExtractor, prefix: &[u8]) -> Option<bool> {
        let pb = self.prefix.as_ref().filter(|pb| pb.extractor.name() == extractor.name())?;
        Some(pb.filter.contains(prefix))
    }

    /// Whether some version of a key of `keyspace` in `[lo, hi]` (user keys, both inclusive)
    /// is in the skip list: one search, nothing copied.
    pub fn has_entry_in(&self, keyspace: u32, lo: &[u8], hi: &[u8]) -> bool {
        let from = Probe::new(keyspace, lo, crate::ikey::MAX_SEQ, crate::ikey::LOOKUP_KIND);
        self.map.seek_from(&from, false).is_some_and(|e| e.keyspace() == keyspace && e.key() <= hi)
    }

    /// The sequence number of the newest version of `key` of `keyspace` (any kind), if the
    /// skip list holds one: the filter first, then one seek (transaction validation,
    /// src/txn/validate.rs).
    pub fn newest_seq_of(&self, keyspace: u32, key: &[u8], key_hash: u64) -> Option<u64> {
        if self.entries.load(Ordering::Relaxed) == 0 || !self.filter.contains_hash(key_hash) {
            return None;
        }
        let probe = Probe::new(keyspace, key, crate::ikey::MAX_SEQ, crate::ikey::LOOKUP_KIND);
        let e = self.map.seek(&probe)?;
        (e.keyspace() == keyspace && e.key() == key).then(|| e.seq())
    }

    /// The first user key of `keyspace` within `lo..hi` that has a version newer than `seq`,
    /// walking only the entries of that range (transaction validation).
    pub fn newer_in_range(
        &self,
        keyspace: u32,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        seq: u64,
    ) -> Option<Vec<u8>> {
        if self.entries.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let start = match lo {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => &[],
        };
        let from = Probe::new(keyspace, start, crate::ikey::MAX_SEQ, crate::ikey::LOOKUP_KIND);
        let mut entry = self.map.seek_from(&from, false);
        while let Some(e) = entry.filter(|e| e.keyspace() == keyspace) {
            let within = match hi {
                Bound::Included(h) => e.key() <= h,
                Bound::Excluded(h) => e.key() < h,
                Bound::Unbounded => true,
            };
            if !within {
                return None;
            }
            let skipped = matches!(lo, Bound::Excluded(l) if e.key() == l);
            if !skipped && e.seq() > seq {
                return Some(e.key().to_vec());
            }
            entry = e.next();
        }
        None
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

    /// The memtable's filter (written as the flush filter when its fill allows, design.md#flush).
    pub fn filter(&self) -> &TwoBitBloom {
        &self.filter
    }

    /// Whether writes of more than one keyspace were added (the flush then rebuilds each
    /// output file's filter from its own keys).
    pub fn holds_several_keyspaces(&self) -> bool {
        self.mixed_keyspaces.load(Ordering::Relaxed)
    }
}

/// The skip list's probe for a memtable key.
fn probe(k: &MemKey) -> Probe<'_> {
    Probe::new(k.keyspace, &k.user_key, k.seq, k.kind)
}

/// An entry copied out of the list (the cursor's refill holds them past the list's borrow).
#[cfg(test)]
fn owned(e: skiplist::Entry<'_>) -> (MemKey, Box<[u8]>) {
    let key =
        MemKey { keyspace: e.keyspace(), user_key: e.key().into(), seq: e.seq(), kind: e.kind() };
    (key, e.value().into())
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
        let get = |k: &[u8], snap| m.get(k, hash_key(k), snap, &mut Vec::new());
        assert_eq!(get(b"k", 0), MemLookup::Absent);
        assert_eq!(get(b"k", 2), MemLookup::Found(b"v1".to_vec()));
        assert_eq!(get(b"k", 4), MemLookup::Found(b"v3".to_vec()));
        assert_eq!(get(b"k", 9), MemLookup::Deleted);
        assert_eq!(get(b"j", 9), MemLookup::Absent);
        assert_eq!(get(b"k\0", 9), MemLookup::Absent);
        // Operands above the tombstone are collected newest first; the tombstone ends the walk.
        m.add(6, ValueKind::Merge, b"k", h, b"m6");
        m.add(7, ValueKind::Merge, b"k", h, b"m7");
        let mut ops = Vec::new();
        assert_eq!(m.get(b"k", h, 9, &mut ops), MemLookup::Deleted);
        assert_eq!(ops, vec![b"m7".to_vec(), b"m6".to_vec()]);
        // At snapshot 6 only the older operand is visible; below the delete, v3 is the base,
        // and a lookup with operands copies it even when asked for no value.
        let mut ops = vec![b"newer".to_vec()];
        assert_eq!(m.lookup(0, b"k", h, 4, false, &mut ops, 0), MemLookup::Found(b"v3".to_vec()));
        let mut ops = Vec::new();
        assert_eq!(m.get(b"k", h, 6, &mut ops), MemLookup::Deleted);
        assert_eq!(ops, vec![b"m6".to_vec()]);
        // Operands with nothing below them in this memtable: Absent, operands kept.
        m.add(8, ValueKind::Merge, b"only", hash_key(b"only"), b"x");
        let mut ops = Vec::new();
        assert_eq!(m.get(b"only", hash_key(b"only"), 9, &mut ops), MemLookup::Absent);
        assert_eq!(ops, vec![b"x".to_vec()]);
    }

    #[test]
    fn range_tombstones_are_kept_apart_and_answer_per_snapshot() {
        let m = Memtable::new(1, 1 << 12);
        put(&m, 1, b"k", b"v1");
        m.add(2, ValueKind::RangeDelete, b"a", hash_key(b"a"), b"m");
        put(&m, 3, b"k", b"v3");
        assert_eq!(m.len(), 3);
        assert_eq!(m.range_tombstone_count(), 1);
        assert_eq!(m.max_covering_tombstone(0, b"k", 9), 2);
        assert_eq!(m.max_covering_tombstone(0, b"k", 1), 0, "not visible below its sequence");
        assert_eq!(m.max_covering_tombstone(0, b"m", 9), 0, "the end is exclusive");
        // The skip list holds point versions only; a version under a newer tombstone reads
        // as deleted when the caller passes the covering sequence.
        let h = hash_key(b"k");
        assert_eq!(
            m.lookup(0, b"k", h, 2, true, &mut Vec::new(), 0),
            MemLookup::Found(b"v1".to_vec())
        );
        assert_eq!(m.lookup(0, b"k", h, 2, true, &mut Vec::new(), 2), MemLookup::Deleted);
        assert_eq!(m.max_covering_tombstone(1, b"k", 9), 0, "another keyspace is not covered");
        assert_eq!(m.iter_from(None).count(), 2);
        assert_eq!(m.range_tombstones(0).len(), 1);
        assert_eq!(m.range_tombstone_keyspaces(), vec![0]);
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
        let at = |seq| MemKey { keyspace: 0, user_key: b"a"[..].into(), seq, kind: ValueKind::Put };
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
    fn skip_list_order_and_seeks_match_internal_key_order_for_short_and_zero_byte_keys() {
        // The inline prefix must never contradict the full comparison: keys of 0..12 bytes over
        // a 3-letter alphabet including 0 (so zero padding collides with real zero bytes), in
        // two keyspaces.
        let mut rng = crate::rng::SplitMix64::new(7);
        let m = Memtable::new(1, 1 << 12);
        let mut want: Vec<MemKey> = (0..2000u64)
            .map(|seq| {
                let len = (rng.next_u64() % 13) as usize;
                let k: Vec<u8> =
                    (0..len).map(|_| [0u8, 1, 255][(rng.next_u64() % 3) as usize]).collect();
                let keyspace = (rng.next_u64() % 2) as u32;
                m.add_in(seq + 1, ValueKind::Put, keyspace, &k, hash_key(&k), &seq.to_le_bytes());
                MemKey { keyspace, user_key: k.into(), seq: seq + 1, kind: ValueKind::Put }
            })
            .collect();
        want.sort();
        let got: Vec<MemKey> = m.range_asc(Bound::Unbounded).map(|(k, _)| k).collect();
        assert_eq!(got, want);
        for (i, k) in want.iter().enumerate().step_by(13) {
            let from: Vec<MemKey> = m.range_asc(Bound::Included(k)).map(|(k, _)| k).collect();
            assert_eq!(from, want[i..], "seek to {k:?}");
            let back: Vec<MemKey> =
                m.range_desc(Bound::Excluded(k)).take(5).map(|(k, _)| k).collect();
            let expect: Vec<MemKey> = want[..i].iter().rev().take(5).cloned().collect();
            assert_eq!(back, expect, "back from {k:?}");
        }
    }

    #[test]
    fn the_same_user_key_in_two_keyspaces_is_two_keys() {
        let m = Memtable::new(1, 1 << 12);
        let h = hash_key(b"k");
        m.add_in(1, ValueKind::Put, 0, b"k", h, b"default");
        assert!(!m.holds_several_keyspaces());
        m.add_in(2, ValueKind::Put, 7, b"k", h, b"seven");
        m.add_in(3, ValueKind::Delete, 0, b"k", h, b"");
        assert!(m.holds_several_keyspaces());
        assert_eq!(
            m.lookup(7, b"k", h, 9, true, &mut Vec::new(), 0),
            MemLookup::Found(b"seven".to_vec())
        );
        assert_eq!(m.lookup(0, b"k", h, 9, true, &mut Vec::new(), 0), MemLookup::Deleted);
        assert_eq!(
            m.lookup(0, b"k", h, 2, true, &mut Vec::new(), 0),
            MemLookup::Found(b"default".to_vec())
        );
        assert_eq!(m.lookup(3, b"k", h, 9, true, &mut Vec::new(), 0), MemLookup::Absent);
        assert_eq!(m.lookup(8, b"k", h, 9, true, &mut Vec::new(), 0), MemLookup::Absent);
        let mut order = Vec::new();
        m.for_each(|ks, k, seq, _, _| {
            order.push((ks, k.to_vec(), seq));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            order,
            vec![(0, b"k".to_vec(), 3), (0, b"k".to_vec(), 1), (7, b"k".to_vec(), 2)]
        );
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
                        let got = m.get(&k, hash_key(&k), upto, &mut Vec::new());
                        assert!(matches!(got, MemLookup::Found(_)));
                    }
                    if upto == 20_000 {
                        break;
                    }
                });
            }
        });
    }
}
