//! [`Cache`]: a byte-bounded, sharded LRU cache of decompressed SST blocks (`sst::BlockCache`
//! names the engine's instance; this module knows no SST type), shared by every
//! open table: data blocks, and with `Options::cache_index_and_filter_blocks` the tables' index
//! and filter blocks too, each entry tagged with its [`EntryKind`] so usage is reported per kind.
//!
//! Keys are `(file number, block offset)`; file numbers are never reused, and the blocks of one
//! file never overlap, so a key names one block of one kind. A deleted file's blocks simply age
//! out. Values are `Arc`s: evicting an entry only drops the cache's reference, and a reader that
//! still holds the block keeps it alive (eviction never invalidates a block in use). Values of
//! different types share one cache: a node holds an `Arc<dyn Any>` and a typed lookup downcasts
//! it (a pointer cast after one type-id compare, no copy).
//!
//! *Pinned entries* ([`Cache::insert_pinned`]) are charged like any other but are not on the
//! recency list, so they are never evicted until every pin is released
//! ([`Cache::release_pinned`]), after which the entry is an ordinary most-recently-used one.
//!
//! Thread safety: the key space is split over [`DEFAULT_SHARDS`] shards by a hash of the key;
//! each shard is an LRU list behind its own `parking_lot::Mutex`, held only for the map lookup and
//! list splice (never across I/O). Each shard holds at most `ceil(capacity / shards)` bytes of
//! charge unless its pinned entries alone exceed that, so the whole cache holds at most
//! `capacity + shards` bytes plus what pinned entries hold beyond their shard's share.
//!
//! Invariants of a shard: `usage` equals the sum of `charge` over its entries and
//! `kind_usage`/`pinned_usage` the same sums per kind and over pinned entries; every unpinned
//! entry of `map` is linked exactly once in the recency list (head = most recent) and no pinned
//! one is; after every insert returns, `usage <= max(capacity, pinned_usage)`.

use parking_lot::Mutex;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

/// Shards of a cache built with [`Cache::new`].
pub const DEFAULT_SHARDS: usize = 16;
/// Bytes charged per entry on top of its value's own charge: the cache's bookkeeping, a
/// [`Node`] (key, value pointer, charge, list links) and a map slot (key, node index, one
/// control byte, at most 7/8 of the slots in use). Both live in arrays that grow by doubling,
/// so they hold 1x to 2x what their entries need; the charge takes the mean over a doubling
/// cycle, 2 ln 2 = 1.39x (here 11/8). The value's own allocation (its `Arc` and buffers) is in
/// the charge the caller passes (see `crate::heap`). `tests/cache_charges.rs` measures it.
pub const ENTRY_OVERHEAD: usize =
    (std::mem::size_of::<Node>() + (std::mem::size_of::<(CacheKey, u32)>() + 1) * 8 / 7) * 11 / 8;

/// Cache key: `(file number, block offset)`.
pub type CacheKey = (u64, u64);

/// What a cache entry holds, for the usage report and the per-kind counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A data block (the `V` of `Cache<V>`: [`Cache::get`], [`Cache::insert`]).
    Data = 0,
    /// A table's index block with its search summary.
    Index = 1,
    /// A table's filter block with its parsed view.
    Filter = 2,
}

/// Number of [`EntryKind`]s.
const KINDS: usize = 3;

/// A cache's held bytes by entry kind ([`Cache::usage_by_kind`]); each includes the per-entry
/// overhead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindUsage {
    /// Data blocks.
    pub data: usize,
    /// Index blocks.
    pub index: usize,
    /// Filter blocks.
    pub filter: usize,
    /// Of the above, entries pinned (never evicted while pinned).
    pub pinned: usize,
}

type Value = Arc<dyn Any + Send + Sync>;

const NIL: u32 = u32::MAX;

/// Hasher for [`CacheKey`]s: the keys are trusted (file numbers and offsets the engine made),
/// so SipHash's flooding resistance buys nothing, and a multiply-xorshift mix (the fmix64 of
/// MurmurHash3) costs a few cycles instead of ~20 ns per lookup.
#[derive(Default, Clone, Copy)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(29) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }
}

type KeyMap = HashMap<CacheKey, u32, std::hash::BuildHasherDefault<KeyHasher>>;

struct Node {
    key: CacheKey,
    value: Option<Value>,
    charge: usize,
    kind: EntryKind,
    /// Outstanding pins; while above 0 the node is off the recency list.
    pins: u32,
    prev: u32,
    next: u32,
}

struct Shard {
    map: KeyMap,
    nodes: Vec<Node>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    usage: usize,
    kind_usage: [usize; KINDS],
    pinned_usage: usize,
    capacity: usize,
    hits: [u64; KINDS],
    misses: [u64; KINDS],
}

impl Shard {
    fn new(capacity: usize) -> Shard {
        Shard {
            map: KeyMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            usage: 0,
            kind_usage: [0; KINDS],
            pinned_usage: 0,
            capacity,
            hits: [0; KINDS],
            misses: [0; KINDS],
        }
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = (self.nodes[i as usize].prev, self.nodes[i as usize].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    fn push_front(&mut self, i: u32) {
        self.nodes[i as usize].prev = NIL;
        self.nodes[i as usize].next = self.head;
        if self.head != NIL {
            self.nodes[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Removes entry `i` (pinned or not) and returns its value (the caller drops it, ideally
    /// after releasing the shard lock: freeing a cold block costs cache misses).
    fn remove(&mut self, i: u32) -> Option<Value> {
        if self.nodes[i as usize].pins == 0 {
            self.unlink(i);
        }
        let node = &mut self.nodes[i as usize];
        let value = node.value.take();
        self.usage -= node.charge;
        self.kind_usage[node.kind as usize] -= node.charge;
        if node.pins > 0 {
            self.pinned_usage -= node.charge;
            node.pins = 0;
        }
        let key = node.key;
        self.map.remove(&key);
        self.free.push(i);
        value
    }

    fn get(&mut self, key: &CacheKey, kind: EntryKind) -> Option<Value> {
        match self.map.get(key).copied() {
            Some(i) => {
                self.hits[kind as usize] += 1;
                if self.nodes[i as usize].pins == 0 {
                    self.unlink(i);
                    self.push_front(i);
                }
                self.nodes[i as usize].value.clone()
            }
            None => {
                self.misses[kind as usize] += 1;
                None
            }
        }
    }

    /// Evicts least recently used unpinned entries until `extra` more bytes fit (or none is
    /// left to evict), pushing their values onto `evicted`.
    fn make_room(&mut self, extra: usize, evicted: &mut Vec<Value>) {
        while self.usage + extra > self.capacity && self.tail != NIL {
            evicted.extend(self.remove(self.tail));
        }
    }

    /// Inserts a new entry (the key is absent), pinned once or on the recency list.
    fn add(&mut self, key: CacheKey, value: Value, charge: usize, kind: EntryKind, pinned: bool) {
        let node = Node {
            key,
            value: Some(value),
            charge,
            kind,
            pins: pinned as u32,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.map.insert(key, i);
        if pinned {
            self.pinned_usage += charge;
        } else {
            self.push_front(i);
        }
        self.usage += charge;
        self.kind_usage[kind as usize] += charge;
    }

    /// Inserts an unpinned entry, pushing the replaced and evicted values onto `evicted`. A
    /// pinned entry under the same key stays (the new value is dropped).
    fn insert(
        &mut self,
        key: CacheKey,
        value: Value,
        charge: usize,
        kind: EntryKind,
        evicted: &mut Vec<Value>,
    ) {
        if let Some(i) = self.map.get(&key).copied() {
            if self.nodes[i as usize].pins > 0 {
                evicted.push(value);
                return;
            }
            evicted.extend(self.remove(i));
        }
        if self.pinned_usage + charge > self.capacity {
            evicted.push(value); // would evict every unpinned entry and still not fit
            return;
        }
        self.make_room(charge, evicted);
        self.add(key, value, charge, kind, false);
    }

    /// Pins `key`, inserting `value` if absent; returns the value now cached under the key.
    fn insert_pinned(
        &mut self,
        key: CacheKey,
        value: Value,
        charge: usize,
        kind: EntryKind,
        evicted: &mut Vec<Value>,
    ) -> Value {
        if let Some(i) = self.map.get(&key).copied() {
            let existing = self.nodes[i as usize].value.clone();
            if let Some(existing) = existing.filter(|_| self.nodes[i as usize].kind == kind) {
                if self.nodes[i as usize].pins == 0 {
                    self.unlink(i);
                    self.pinned_usage += self.nodes[i as usize].charge;
                }
                self.nodes[i as usize].pins += 1;
                evicted.push(value);
                return existing;
            }
            evicted.extend(self.remove(i));
        }
        self.make_room(charge, evicted);
        self.add(key, Arc::clone(&value), charge, kind, true);
        value
    }

    /// Drops one pin of `key`; the last one puts the entry on the recency list (most recent).
    fn release(&mut self, key: &CacheKey, evicted: &mut Vec<Value>) {
        let Some(i) = self.map.get(key).copied() else { return };
        let node = &mut self.nodes[i as usize];
        if node.pins == 0 {
            return;
        }
        node.pins -= 1;
        if node.pins == 0 {
            self.pinned_usage -= node.charge;
            self.push_front(i);
            self.make_room(0, evicted);
        }
    }
}

/// One shard on cache lines of its own (128 bytes: the adjacent-line prefetcher pairs lines), so
/// two threads locking different shards never write the same line.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A byte-bounded sharded LRU cache of `Arc<V>` (and of other kinds of values, see
/// [`EntryKind`]) keyed by `(file number, offset)`. See the module documentation.
pub struct Cache<V> {
    shards: Box<[Padded<Mutex<Shard>>]>,
    capacity: usize,
    /// The admission rule of data blocks once full (`None`: every block is admitted).
    doorkeeper: Option<crate::cache_admission::Doorkeeper>,
    _values: std::marker::PhantomData<fn() -> Arc<V>>,
}

impl<V: Send + Sync + 'static> std::fmt::Debug for Cache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

/// Downcasts a cached value to the type its kind stores (`None` for another type: the key held
/// a value of another kind, which the engine's keys never produce).
fn typed<T: Send + Sync + 'static>(v: Value) -> Option<Arc<T>> {
    v.downcast::<T>().ok()
}

impl<V: Send + Sync + 'static> Cache<V> {
    /// A cache holding at most `capacity_bytes` of charge over [`DEFAULT_SHARDS`] shards.
    /// Capacity 0 disables the cache: lookups miss without counting and inserts are dropped.
    pub fn new(capacity_bytes: usize) -> Cache<V> {
        Cache::with_shards(capacity_bytes, DEFAULT_SHARDS)
    }

    /// A cache with an explicit shard count (at least 1). Fewer shards make the LRU order more
    /// global (tests use 1 for exact eviction order); more shards lower lock contention.
    pub fn with_shards(capacity_bytes: usize, shards: usize) -> Cache<V> {
        let shards = shards.max(1);
        let per_shard = capacity_bytes.div_ceil(shards);
        Cache {
            shards: (0..shards).map(|_| Padded(Mutex::new(Shard::new(per_shard)))).collect(),
            capacity: capacity_bytes,
            doorkeeper: None,
            _values: std::marker::PhantomData,
        }
    }

    /// This cache, admitting data blocks once full only at their second miss within a window
    /// of recent misses ([`crate::cache_admission`]) when `second_miss`.
    pub fn with_second_miss_admission(mut self, second_miss: bool) -> Cache<V> {
        self.doorkeeper =
            second_miss.then(|| crate::cache_admission::Doorkeeper::new(self.capacity));
        self
    }

    /// Whether the data block `(file, offset)`, just read from its file after a miss, should
    /// be inserted (always without second-miss admission; see [`crate::cache_admission`]).
    pub fn admits(&self, file: u64, offset: u64) -> bool {
        self.doorkeeper.as_ref().is_none_or(|d| d.admits(file, offset))
    }

    /// False for a cache of capacity 0.
    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn shard(&self, key: &CacheKey) -> &Mutex<Shard> {
        // fmix64 of the combined key: block offsets of one file differ in few low bits.
        let mut x = key.0.rotate_left(32) ^ key.1;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        &self.shards[(x % self.shards.len() as u64) as usize].0
    }

    /// The cached value for `(file, offset)`, marking it most recently used. Counts a hit or a
    /// miss (nothing when disabled).
    pub fn get(&self, file: u64, offset: u64) -> Option<Arc<V>> {
        self.get_kind(file, offset, EntryKind::Data)
    }

    /// [`Cache::get`] for an entry of `kind` holding a `T` (counted under `kind`).
    pub fn get_kind<T: Send + Sync + 'static>(
        &self,
        file: u64,
        offset: u64,
        kind: EntryKind,
    ) -> Option<Arc<T>> {
        if !self.is_enabled() {
            return None;
        }
        let key = (file, offset);
        let v = self.shard(&key).lock().get(&key, kind)?;
        typed(v)
    }

    /// Inserts (or replaces) `(file, offset)`, charged `charge + ENTRY_OVERHEAD` bytes (`charge`
    /// is what the value holds on the heap, its `Arc` included), evicting
    /// least recently used entries of its shard until it fits. A value larger than a shard (less
    /// its pinned entries) is not cached.
    pub fn insert(&self, file: u64, offset: u64, value: Arc<V>, charge: usize) {
        let mut evicted = Vec::new();
        self.insert_evicting(file, offset, value, charge, &mut evicted);
    }

    /// [`Cache::insert`] that hands the replaced and evicted data blocks to the caller in
    /// `evicted` (appended; dropped by the caller after the shard lock is released, or
    /// recycled). Evicted values of other kinds are dropped here, after the lock.
    pub fn insert_evicting(
        &self,
        file: u64,
        offset: u64,
        value: Arc<V>,
        charge: usize,
        evicted: &mut Vec<Arc<V>>,
    ) {
        if !self.is_enabled() {
            return;
        }
        let mut out = Vec::new();
        self.insert_raw(file, offset, value, charge, EntryKind::Data, &mut out);
        if let (Some(d), false) = (&self.doorkeeper, out.is_empty()) {
            d.note_eviction();
        }
        evicted.extend(out.into_iter().filter_map(typed::<V>));
    }

    /// Inserts `(file, offset)` as an entry of `kind` holding a `T`, as [`Cache::insert`] does.
    pub fn insert_kind<T: Send + Sync + 'static>(
        &self,
        file: u64,
        offset: u64,
        value: Arc<T>,
        charge: usize,
        kind: EntryKind,
    ) {
        let mut out = Vec::new();
        self.insert_raw(file, offset, value, charge, kind, &mut out);
        drop(out);
    }

    fn insert_raw(
        &self,
        file: u64,
        offset: u64,
        value: Value,
        charge: usize,
        kind: EntryKind,
        out: &mut Vec<Value>,
    ) {
        if !self.is_enabled() {
            return;
        }
        let key = (file, offset);
        let charge = charge.saturating_add(ENTRY_OVERHEAD);
        self.shard(&key).lock().insert(key, value, charge, kind, out);
    }

    /// Pins `(file, offset)` as an entry of `kind`: inserted (charged `charge +
    /// ENTRY_OVERHEAD`, evicting unpinned entries to make room but cached even if it does not
    /// fit) unless already cached, and never evicted until as many [`Cache::release_pinned`]
    /// calls as pins. Returns the cached value (an equal one cached earlier, or `value`), so
    /// every holder shares one copy. A disabled cache returns `value`.
    pub fn insert_pinned<T: Send + Sync + 'static>(
        &self,
        file: u64,
        offset: u64,
        value: Arc<T>,
        charge: usize,
        kind: EntryKind,
    ) -> Arc<T> {
        if !self.is_enabled() {
            return value;
        }
        let key = (file, offset);
        let charge = charge.saturating_add(ENTRY_OVERHEAD);
        let mut out = Vec::new();
        let v = self.shard(&key).lock().insert_pinned(key, value.clone(), charge, kind, &mut out);
        drop(out);
        typed(v).unwrap_or(value)
    }

    /// Releases one pin of `(file, offset)` taken by [`Cache::insert_pinned`]; after the last
    /// the entry is an ordinary (most recently used, evictable) one. No effect without a pin.
    pub fn release_pinned(&self, file: u64, offset: u64) {
        if !self.is_enabled() {
            return;
        }
        let key = (file, offset);
        let mut out = Vec::new();
        self.shard(&key).lock().release(&key, &mut out);
        drop(out);
    }

    /// Drops the entry `(file, offset)` if present, pinned or not (its value is dropped after
    /// the shard lock is released; a reader holding it keeps it).
    pub fn erase(&self, file: u64, offset: u64) {
        let key = (file, offset);
        let mut s = self.shard(&key).lock();
        let dropped = s.map.get(&key).copied().and_then(|i| s.remove(i));
        drop(s);
        drop(dropped);
    }

    /// Drops every entry of `file` (optional: after a file is deleted its entries also age out).
    pub fn erase_file(&self, file: u64) {
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            let victims: Vec<u32> =
                s.map.iter().filter(|(k, _)| k.0 == file).map(|(_, &i)| i).collect();
            let dropped: Vec<Value> = victims.into_iter().filter_map(|i| s.remove(i)).collect();
            drop(s);
            drop(dropped);
        }
    }

    /// Bytes of charge currently held (every kind, pinned included).
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage).sum()
    }

    /// Bytes of charge currently held, by kind, and how many of them are pinned.
    pub fn usage_by_kind(&self) -> KindUsage {
        let mut u = KindUsage::default();
        for s in self.shards.iter() {
            let s = s.lock();
            u.data += s.kind_usage[EntryKind::Data as usize];
            u.index += s.kind_usage[EntryKind::Index as usize];
            u.filter += s.kind_usage[EntryKind::Filter as usize];
            u.pinned += s.pinned_usage;
        }
        u
    }

    /// Entries currently held.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lookups that found their entry (every kind).
    pub fn hits(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().hits.iter().sum::<u64>()).sum()
    }

    /// Lookups that did not (every kind).
    pub fn misses(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().misses.iter().sum::<u64>()).sum()
    }

    /// Lookups of entries of `kind`: (hits, misses).
    pub fn hits_misses_of(&self, kind: EntryKind) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |(h, m), s| {
            let s = s.lock();
            (h + s.hits[kind as usize], m + s.misses[kind as usize])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_by_bytes() {
        // One shard, room for three entries of 100 + overhead bytes.
        let c: Cache<u32> = Cache::with_shards(3 * (100 + ENTRY_OVERHEAD), 1);
        for i in 0..3 {
            c.insert(1, i, Arc::new(i as u32), 100);
        }
        assert_eq!(c.usage(), 3 * (100 + ENTRY_OVERHEAD));
        assert!(c.get(1, 0).is_some()); // 0 becomes most recent; 1 is now the LRU entry
        c.insert(1, 3, Arc::new(3), 100);
        assert!(c.get(1, 1).is_none());
        assert!(c.get(1, 0).is_some() && c.get(1, 2).is_some() && c.get(1, 3).is_some());
        assert_eq!(c.len(), 3);
        assert_eq!((c.hits(), c.misses()), (4, 1));
        // A big entry evicts as many as needed (here the two least recent: 2, then 0).
        c.insert(2, 0, Arc::new(9), 250);
        assert!(c.usage() <= c.capacity());
        assert_eq!(c.len(), 2);
        assert!(c.get(1, 3).is_some() && c.get(1, 2).is_none());
    }

    #[test]
    fn eviction_never_invalidates_a_held_value() {
        // Room for one entry of 100 bytes.
        let c: Cache<Vec<u8>> = Cache::with_shards(100 + ENTRY_OVERHEAD, 1);
        c.insert(7, 0, Arc::new(vec![1; 100]), 100);
        let held = c.get(7, 0).unwrap();
        c.insert(7, 1, Arc::new(vec![2; 100]), 100);
        assert!(c.get(7, 0).is_none());
        assert_eq!(held.len(), 100);
        assert_eq!(held[99], 1);
    }

    #[test]
    fn zero_capacity_disables_and_oversized_is_skipped() {
        let c: Cache<u8> = Cache::new(0);
        c.insert(1, 1, Arc::new(1), 1);
        assert!(c.get(1, 1).is_none());
        assert_eq!((c.hits(), c.misses(), c.usage()), (0, 0, 0));
        let c: Cache<u8> = Cache::with_shards(100, 1);
        c.insert(1, 1, Arc::new(1), 1000);
        assert!(c.is_empty());
    }

    #[test]
    fn replace_and_erase_file_keep_usage_exact() {
        let c: Cache<u8> = Cache::new(1 << 20);
        for off in 0..100 {
            c.insert(3, off, Arc::new(0), 10);
            c.insert(4, off, Arc::new(0), 10);
        }
        c.insert(3, 0, Arc::new(1), 30); // replaces
        assert_eq!(c.usage(), 199 * (10 + ENTRY_OVERHEAD) + 30 + ENTRY_OVERHEAD);
        c.erase_file(3);
        assert_eq!(c.len(), 100);
        assert_eq!(c.usage(), 100 * (10 + ENTRY_OVERHEAD));
        assert_eq!(*c.get(4, 5).unwrap(), 0);
        c.erase(4, 7);
        c.erase(4, 1000); // absent: no effect
        assert_eq!(c.len(), 99);
        assert_eq!(c.usage(), 99 * (10 + ENTRY_OVERHEAD));
        assert!(c.get(4, 7).is_none());
    }

    #[test]
    fn pinned_entries_are_charged_but_never_evicted_until_released() {
        let c: Cache<u32> = Cache::with_shards(4 * (100 + ENTRY_OVERHEAD), 1);
        let f = c.insert_pinned(9, 0, Arc::new(vec![7u8; 100]), 100, EntryKind::Filter);
        assert_eq!(f[0], 7);
        for i in 0..20 {
            c.insert(1, i, Arc::new(i as u32), 100);
            assert!(c.usage() <= c.capacity());
        }
        let u = c.usage_by_kind();
        assert_eq!(u.pinned, 100 + ENTRY_OVERHEAD);
        assert_eq!(u.filter, 100 + ENTRY_OVERHEAD);
        assert_eq!(u.data, 3 * (100 + ENTRY_OVERHEAD), "three data blocks fit beside the pin");
        // A second pin shares the cached copy; one release keeps it pinned.
        let again = c.insert_pinned(9, 0, Arc::new(vec![8u8; 100]), 100, EntryKind::Filter);
        assert_eq!(again[0], 7);
        c.release_pinned(9, 0);
        assert_eq!(c.usage_by_kind().pinned, 100 + ENTRY_OVERHEAD);
        c.release_pinned(9, 0);
        assert_eq!(c.usage_by_kind().pinned, 0);
        // Now an ordinary entry: four newer ones push it out.
        for i in 20..24 {
            c.insert(1, i, Arc::new(i as u32), 100);
        }
        assert!(c.get_kind::<Vec<u8>>(9, 0, EntryKind::Filter).is_none());
        assert_eq!(c.usage_by_kind().filter, 0);
    }

    #[test]
    fn pins_beyond_capacity_stay_and_leave_no_room_for_unpinned_entries() {
        let c: Cache<u32> = Cache::with_shards(2 * (100 + ENTRY_OVERHEAD), 1);
        c.insert(1, 0, Arc::new(0), 100);
        for off in 0..3 {
            c.insert_pinned(2, off, Arc::new(off), 100, EntryKind::Index);
        }
        let u = c.usage_by_kind();
        let pin = 100 + ENTRY_OVERHEAD;
        assert_eq!((u.index, u.pinned, u.data), (3 * pin, 3 * pin, 0), "pins evict the data");
        c.insert(1, 1, Arc::new(1), 100);
        assert!(c.get(1, 1).is_none(), "no room beside the pins: not cached");
        assert_eq!(c.usage(), u.pinned);
        // Kinds are counted apart.
        assert!(c.get_kind::<u64>(2, 1, EntryKind::Index).is_some());
        assert!(c.get_kind::<u64>(2, 9, EntryKind::Index).is_none());
        assert_eq!(c.hits_misses_of(EntryKind::Index), (1, 1));
        assert_eq!(c.hits_misses_of(EntryKind::Data), (0, 1));
    }

    #[test]
    fn random_operations_keep_usage_exact_and_within_capacity_or_pins() {
        // A model of pins per key checks the shard's accounting after every operation.
        let mut rng = crate::rng::SplitMix64::new(0xcac4e);
        let cap = 2_000;
        let c: Cache<u64> = Cache::with_shards(cap, 1);
        let mut pins: HashMap<u64, u32> = HashMap::new();
        for _ in 0..20_000 {
            let off = rng.below(40);
            let charge = 10 + rng.below(300) as usize;
            match rng.below(5) {
                0 => c.insert(1, off, Arc::new(off), charge),
                1 if pins.values().sum::<u32>() < 12 => {
                    let v = c.insert_pinned(1, off, Arc::new(off), charge, EntryKind::Index);
                    assert_eq!(*v, off);
                    *pins.entry(off).or_default() += 1;
                }
                2 => {
                    c.release_pinned(1, off);
                    if let Some(n) = pins.get_mut(&off) {
                        *n -= 1;
                        if *n == 0 {
                            pins.remove(&off);
                        }
                    }
                }
                _ => {
                    let hit = c.get(1, off).is_some()
                        || c.get_kind::<u64>(1, off, EntryKind::Index).is_some();
                    assert!(hit || !pins.contains_key(&off), "pinned {off} was evicted");
                }
            }
            let s = c.shards[0].lock();
            let charged: usize = s.map.values().map(|&i| s.nodes[i as usize].charge).sum();
            let pinned: usize = s
                .map
                .values()
                .filter(|&&i| s.nodes[i as usize].pins > 0)
                .map(|&i| s.nodes[i as usize].charge)
                .sum();
            assert_eq!(s.usage, charged);
            assert_eq!(s.kind_usage.iter().sum::<usize>(), charged);
            assert_eq!(s.pinned_usage, pinned);
            assert!(s.usage <= cap.max(s.pinned_usage), "{} > max({cap}, {})", s.usage, pinned);
            let mut listed = 0;
            let mut i = s.head;
            while i != NIL {
                assert_eq!(s.nodes[i as usize].pins, 0, "a pinned entry is on the recency list");
                listed += 1;
                i = s.nodes[i as usize].next;
            }
            assert_eq!(
                listed + s.map.values().filter(|&&i| s.nodes[i as usize].pins > 0).count(),
                s.map.len()
            );
        }
    }
}
