//! [`BlockCache`]: a byte-bounded, sharded LRU cache of decompressed SST blocks, shared by every
//! open table.
//!
//! Keys are `(file number, block offset)`; file numbers are never reused, so a deleted file's
//! blocks simply age out. Values are `Arc`s: evicting an entry only drops the cache's reference,
//! and a reader that still holds the block keeps it alive (eviction never invalidates a block in
//! use).
//!
//! Thread safety: the key space is split over [`DEFAULT_SHARDS`] shards by a hash of the key;
//! each shard is an LRU list behind its own `parking_lot::Mutex`, held only for the map lookup and
//! list splice (never across I/O). Each shard holds at most `ceil(capacity / shards)` bytes of
//! charge, so the whole cache holds at most `capacity + shards` bytes.
//!
//! Invariants of a shard: `usage` equals the sum of `charge` over its entries; every entry of
//! `map` is linked exactly once in the recency list (head = most recent); `usage <= capacity`
//! after every insert returns.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Shards of a cache built with [`Cache::new`].
pub const DEFAULT_SHARDS: usize = 16;
/// Bytes charged per entry on top of the value's own size (map slot, list links, `Arc` header).
pub const ENTRY_OVERHEAD: usize = 64;

/// The cache of decompressed SST blocks.
pub type BlockCache = Cache<crate::sst::Block>;

/// Cache key: `(file number, block offset)`.
pub type CacheKey = (u64, u64);

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

struct Node<V> {
    key: CacheKey,
    value: Option<Arc<V>>,
    charge: usize,
    prev: u32,
    next: u32,
}

struct Shard<V> {
    map: KeyMap,
    nodes: Vec<Node<V>>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    usage: usize,
    capacity: usize,
    hits: u64,
    misses: u64,
}

impl<V> Shard<V> {
    fn new(capacity: usize) -> Shard<V> {
        Shard {
            map: KeyMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            usage: 0,
            capacity,
            hits: 0,
            misses: 0,
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

    /// Unlinks entry `i` and returns its value (the caller drops it, ideally after releasing
    /// the shard lock: freeing a cold block costs cache misses).
    fn remove(&mut self, i: u32) -> Option<Arc<V>> {
        self.unlink(i);
        let node = &mut self.nodes[i as usize];
        let value = node.value.take();
        self.usage -= node.charge;
        let key = node.key;
        self.map.remove(&key);
        self.free.push(i);
        value
    }

    fn get(&mut self, key: &CacheKey) -> Option<Arc<V>> {
        match self.map.get(key).copied() {
            Some(i) => {
                self.hits += 1;
                self.unlink(i);
                self.push_front(i);
                self.nodes[i as usize].value.clone()
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Inserts, pushing the replaced and evicted values onto `evicted`.
    fn insert(&mut self, key: CacheKey, value: Arc<V>, charge: usize, evicted: &mut Vec<Arc<V>>) {
        if let Some(i) = self.map.get(&key).copied() {
            evicted.extend(self.remove(i));
        }
        if charge > self.capacity {
            return; // would evict everything and still not fit
        }
        while self.usage + charge > self.capacity && self.tail != NIL {
            evicted.extend(self.remove(self.tail));
        }
        let node = Node { key, value: Some(value), charge, prev: NIL, next: NIL };
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
        self.push_front(i);
        self.usage += charge;
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

/// A byte-bounded sharded LRU cache of `Arc<V>` keyed by `(file number, offset)`. See the module
/// documentation.
pub struct Cache<V> {
    shards: Box<[Padded<Mutex<Shard<V>>>]>,
    capacity: usize,
}

impl<V> std::fmt::Debug for Cache<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

impl<V> Cache<V> {
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
        }
    }

    /// False for a cache of capacity 0.
    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn shard(&self, key: &CacheKey) -> &Mutex<Shard<V>> {
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
        if !self.is_enabled() {
            return None;
        }
        let key = (file, offset);
        self.shard(&key).lock().get(&key)
    }

    /// Inserts (or replaces) `(file, offset)`, charged `charge + ENTRY_OVERHEAD` bytes, evicting
    /// least recently used entries of its shard until it fits. A value larger than a shard is not
    /// cached.
    pub fn insert(&self, file: u64, offset: u64, value: Arc<V>, charge: usize) {
        let mut evicted = Vec::new();
        self.insert_evicting(file, offset, value, charge, &mut evicted);
    }

    /// [`Cache::insert`] that hands the replaced and evicted values to the caller in `evicted`
    /// (appended; dropped by the caller after the shard lock is released, or recycled).
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
        let key = (file, offset);
        let charge = charge.saturating_add(ENTRY_OVERHEAD);
        self.shard(&key).lock().insert(key, value, charge, evicted);
    }

    /// Drops the entry `(file, offset)` if present (its value is dropped after the shard lock is
    /// released; a reader holding it keeps it).
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
            let dropped: Vec<Arc<V>> = victims.into_iter().filter_map(|i| s.remove(i)).collect();
            drop(s);
            drop(dropped);
        }
    }

    /// Bytes of charge currently held.
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.lock().usage).sum()
    }

    /// Entries currently held.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lookups that found their entry.
    pub fn hits(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().hits).sum()
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().misses).sum()
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
        let c: Cache<Vec<u8>> = Cache::with_shards(200, 1);
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
}
