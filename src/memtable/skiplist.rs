//! The memtable's ordered index: a skip list of LevelDB's design whose nodes live in an arena
//! (design.md#memtable).
//!
//! One writer at a time inserts (a `Mutex` held from the search to the last link makes that a
//! guarantee rather than a convention; the `Db` write path already serialises writers, so it is
//! never contended); any number of readers
//! search and iterate without locks. Nothing is ever removed: the whole list and its arena are
//! freed together when the memtable drops, so there is no reclamation protocol, no reference
//! count per node and no allocation per entry.
//!
//! Invariants (the safety argument of every `unsafe` block below):
//! 1. A node is written completely (header, key, value and its own `next` pointers) before it
//!    becomes reachable; it becomes reachable only through a Release store of a predecessor's
//!    `next[i]`, and readers load `next` pointers with Acquire, so a reader that reaches a node
//!    sees it whole. After publication a node's bytes never change, except its `next` pointers,
//!    which are atomics.
//! 2. Nodes live in arena chunks that never move and are freed only when the list drops; a
//!    reference handed out borrows the list, so it cannot outlive its node.
//! 3. Level 0 holds every node in order; level `i` holds a sorted subsequence of level `i - 1`.
//!    A reader that sees a stale `max_height` only starts lower, which is still correct: the
//!    head's upper `next` pointers start null and are only ever set to nodes of that height.
//!
//! Heights are drawn with branching factor 4 (at most 12 levels, LevelDB's choice): expected
//! comparisons per search stay about those of branching factor 2, with half the pointers.

use crate::batch::ValueKind;
use crate::filter::prefetch_read;
// The key's first 8 bytes as an order-preserving integer (weakly: a smaller prefix means a
// smaller key), compared inline so most steps of a search never touch the key bytes.
use crate::ikey::{compare_bytes, key_prefix};
#[cfg(loom)]
use loom::sync::atomic::{AtomicPtr, AtomicUsize};
use parking_lot::Mutex;
use std::cmp::Ordering as CmpOrdering;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicPtr, AtomicUsize};

/// Most levels a node may have.
const MAX_HEIGHT: usize = 12;
/// Bytes of one arena chunk. A node that does not fit the rest of the current chunk gets a new
/// chunk, or a chunk of its own when it is larger than a quarter of this (the current chunk then
/// keeps serving small nodes), so at most a quarter of a chunk is left unused.
const CHUNK_BYTES: usize = 1 << 20;

/// A node's fixed header, followed in memory by `height` `next` pointers, the user key and the
/// value (the node's "tail"). `repr(C)` so the tail starts at `size_of::<Node>()`, 8-aligned.
#[repr(C)]
struct Node {
    /// `key_prefix(user key)`: when two nodes' prefixes differ, their keys order as these do.
    prefix: u64,
    seq: u64,
    keyspace: u32,
    key_len: u32,
    value_len: u32,
    kind: ValueKind,
    height: u8,
    /// Model checking only (`--cfg loom`): a copy of `seq` in a cell loom tracks, read by every
    /// `Entry::seq`, so loom reports a reader that reaches a node whose initialisation does not
    /// happen-before its read (invariant 1). Plain fields are invisible to loom.
    #[cfg(loom)]
    witness: loom::cell::UnsafeCell<u64>,
}

/// Bytes of one `next` pointer in a node's tower.
const LINK_BYTES: usize = size_of::<AtomicPtr<Node>>();

const _: () = assert!(size_of::<Node>().is_multiple_of(align_of::<AtomicPtr<Node>>()));

impl Node {
    /// The `next` pointers of this node (`height` of them).
    fn tower(&self) -> &[AtomicPtr<Node>] {
        // SAFETY: `alloc_node` placed `height` initialised pointers right after the header,
        // inside the same allocation, aligned (the header size is a multiple of 8).
        unsafe {
            let first = (self as *const Node).add(1) as *const AtomicPtr<Node>;
            std::slice::from_raw_parts(first, self.height as usize)
        }
    }

    fn next(&self, level: usize) -> Option<&Node> {
        // SAFETY: a non-null `next` points to a published, whole node (invariant 1) that lives
        // as long as the list (invariant 2), which outlives `self`'s borrow.
        unsafe { self.tower()[level].load(Ordering::Acquire).as_ref() }
    }

    /// User key bytes then value bytes.
    fn data(&self) -> &[u8] {
        // SAFETY: `alloc_node` copied `key_len + value_len` bytes right after the tower.
        unsafe {
            let start = (self.tower().as_ptr() as *const u8).add(self.height as usize * LINK_BYTES);
            std::slice::from_raw_parts(start, self.key_len as usize + self.value_len as usize)
        }
    }

    fn key(&self) -> &[u8] {
        &self.data()[..self.key_len as usize]
    }

    fn value(&self) -> &[u8] {
        &self.data()[self.key_len as usize..]
    }

    /// Order of this node against a probe: keyspace, user key ascending, then sequence number
    /// and kind descending (the internal-key order, docs/format.md#internal-keys).
    fn cmp_probe(&self, p: &Probe<'_>) -> CmpOrdering {
        self.keyspace
            .cmp(&p.keyspace)
            .then_with(|| self.prefix.cmp(&p.prefix))
            .then_with(|| compare_bytes(self.key(), p.key))
            .then_with(|| p.seq.cmp(&self.seq))
            .then_with(|| p.kind.cmp(&self.kind))
    }
}

/// A position to search for: an internal key split as the nodes store it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe<'a> {
    pub(crate) keyspace: u32,
    pub(crate) key: &'a [u8],
    pub(crate) seq: u64,
    pub(crate) kind: ValueKind,
    prefix: u64,
}

impl<'a> Probe<'a> {
    pub(crate) fn new(keyspace: u32, key: &'a [u8], seq: u64, kind: ValueKind) -> Probe<'a> {
        Probe { keyspace, key, seq, kind, prefix: key_prefix(key) }
    }
}

/// One entry as a reader sees it, borrowed from the list.
#[derive(Clone, Copy)]
pub(crate) struct Entry<'a> {
    node: &'a Node,
}

impl<'a> Entry<'a> {
    pub(crate) fn keyspace(&self) -> u32 {
        self.node.keyspace
    }
    pub(crate) fn key(&self) -> &'a [u8] {
        self.node.key()
    }
    pub(crate) fn value(&self) -> &'a [u8] {
        self.node.value()
    }
    pub(crate) fn seq(&self) -> u64 {
        #[cfg(loom)]
        // SAFETY: the witness is written once, at allocation; loom checks this read is ordered
        // after that write.
        assert_eq!(self.node.witness.with(|p| unsafe { *p }), self.node.seq);
        self.node.seq
    }
    pub(crate) fn kind(&self) -> ValueKind {
        self.node.kind
    }
    /// The next entry in order (level 0).
    pub(crate) fn next(&self) -> Option<Entry<'a>> {
        self.node.next(0).map(|node| Entry { node })
    }
    fn probe(&self) -> Probe<'a> {
        Probe {
            keyspace: self.node.keyspace,
            key: self.node.key(),
            seq: self.node.seq,
            kind: self.node.kind,
            prefix: self.node.prefix,
        }
    }
}

/// Searches [`SkipList::seek_many`] interleaves.
const LANES: usize = 8;

/// One search of [`SkipList::seek_many`]: `find_greater_or_equal`'s loop state, between steps.
#[derive(Clone, Copy)]
struct Lane<'s> {
    /// Which probe this searches for.
    probe: usize,
    /// The last node known to order before the probe (the head at first).
    x: &'s Node,
    level: usize,
    /// `x.next(level)`, whose loading the previous step started.
    next: Option<&'s Node>,
    /// As in `find_greater_or_equal`: the node last found past the probe.
    last_bigger: *const Node,
}

impl<'s> Lane<'s> {
    fn start(head: &'s Node, top: usize, probe: usize) -> Lane<'s> {
        let next = head.next(top);
        next.inspect(|n| prefetch_node(n));
        Lane { probe, x: head, level: top, next, last_bigger: ptr::null() }
    }

    /// One step of `find_greater_or_equal`: compares `next` with the probe, moves right or
    /// down, and starts loading the next node to compare. `Some(answer)` once the search ends.
    fn step(&mut self, probe: &Probe<'_>) -> Option<Option<&'s Node>> {
        let ahead = match self.next {
            Some(n) if ptr::eq(n, self.last_bigger) => false,
            Some(n) => n.cmp_probe(probe) == CmpOrdering::Less,
            None => false,
        };
        if ahead {
            self.x = self.next.expect("ahead implies a node");
        } else if self.level == 0 {
            return Some(self.next);
        } else {
            self.last_bigger = self.next.map_or(ptr::null(), |n| n as *const Node);
            self.level -= 1;
        }
        self.next = self.x.next(self.level);
        self.next.inspect(|n| prefetch_node(n));
        None
    }
}

/// Hints the CPU to load the first two cache lines of `node` (its header, the start of its
/// tower and, for short keys, its key).
#[inline(always)]
fn prefetch_node(node: &Node) {
    let p = node as *const Node as *const u8;
    prefetch_read(p);
    prefetch_read(p.wrapping_add(64));
}

/// The writer's side: the arena and the height generator.
struct Writer {
    /// Every chunk allocated; freed when the list drops (invariant 2).
    chunks: Vec<Box<[MaybeUninit<u64>]>>,
    /// Free space in the last chunk: next free byte and bytes left.
    cursor: *mut u8,
    left: usize,
    rng: u64,
}

/// The skip list. See the module documentation.
pub(crate) struct SkipList {
    /// The head: a header-only node of `MAX_HEIGHT` levels that orders before everything.
    head: NonNull<Node>,
    max_height: AtomicUsize,
    writer: Mutex<Writer>,
}

// SAFETY: the list owns its arena; shared access only reads published nodes (invariant 1) and
// atomics, and mutation of the arena happens under `writer`'s lock.
unsafe impl Send for SkipList {}
// SAFETY: as above; readers never take `&mut` to anything shared.
unsafe impl Sync for SkipList {}

impl SkipList {
    pub(crate) fn new() -> SkipList {
        let mut w = Writer {
            chunks: Vec::new(),
            cursor: ptr::null_mut(),
            left: 0,
            rng: 0x2545_F491_4F6C_DD1D,
        };
        let head = w.alloc_node(MAX_HEIGHT, &Probe::new(0, &[], 0, ValueKind::Put), &[]);
        SkipList { head, max_height: AtomicUsize::new(1), writer: Mutex::new(w) }
    }

    fn head(&self) -> &Node {
        // SAFETY: the head is allocated in `new` and lives as long as the list.
        unsafe { self.head.as_ref() }
    }

    /// Inserts an entry and returns the arena bytes its node takes. Entries equal in (keyspace,
    /// key, seq, kind) may both be inserted; the write path never produces two (sequence numbers
    /// are unique).
    pub(crate) fn insert(
        &self,
        keyspace: u32,
        key: &[u8],
        value: &[u8],
        seq: u64,
        kind: ValueKind,
    ) -> usize {
        let probe = Probe::new(keyspace, key, seq, kind);
        let mut w = self.writer.lock();
        // The writer lock is held, so no other insert changes the list under this search.
        let mut prev = [self.head.as_ptr() as *const Node; MAX_HEIGHT];
        self.find_greater_or_equal(&probe, Some(&mut prev));
        let height = w.random_height();
        let max = self.max_height.load(Ordering::Relaxed);
        if height > max {
            // Levels above the old height start at the head (already in `prev`). Readers that
            // see the new height early find null there and go down (invariant 3).
            self.max_height.store(height, Ordering::Relaxed);
        }
        let node = w.alloc_node(height, &probe, value);
        // SAFETY: `node` is fully written and not yet reachable; `prev[i]` are reachable nodes
        // (or the head) that only this writer links from.
        unsafe {
            let n = node.as_ref();
            for (level, &p) in prev.iter().enumerate().take(height) {
                let pred = &(*p).tower()[level];
                n.tower()[level].store(pred.load(Ordering::Relaxed), Ordering::Relaxed);
                // Release: publishes the node's bytes with the link (invariant 1).
                pred.store(node.as_ptr(), link_ordering());
            }
        }
        drop(w); // held until linked: `prev` is valid only while no other insert runs
        node_size(height, key.len() + value.len())
    }

    /// The first entry at or after `probe`, filling `prev[i]` with the last node before it at
    /// each level when asked (for an insert).
    fn find_greater_or_equal(
        &self,
        probe: &Probe<'_>,
        mut prev: Option<&mut [*const Node; MAX_HEIGHT]>,
    ) -> Option<&Node> {
        let mut x = self.head();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        // The node last found to be past the probe: when the next level down leads to it
        // again, its comparison is already known (RocksDB's InlineSkipList trick).
        let mut last_bigger: *const Node = ptr::null();
        loop {
            let next = x.next(level);
            let ahead = match next {
                Some(n) if ptr::eq(n, last_bigger) => false,
                Some(n) => n.cmp_probe(probe) == CmpOrdering::Less,
                None => false,
            };
            if ahead {
                x = next.expect("ahead implies a node");
                continue;
            }
            if let Some(prev) = prev.as_deref_mut() {
                prev[level] = x;
            }
            if level == 0 {
                return next;
            }
            last_bigger = next.map_or(ptr::null(), |n| n as *const Node);
            level -= 1;
        }
    }

    /// The last entry strictly before `probe` (None when there is none).
    fn find_less_than(&self, probe: &Probe<'_>) -> Option<&Node> {
        let mut x = self.head();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            match x.next(level) {
                Some(n) if n.cmp_probe(probe) == CmpOrdering::Less => x = n,
                _ if level == 0 => break,
                _ => level -= 1,
            }
        }
        (!ptr::eq(x, self.head())).then_some(x)
    }

    /// The last entry (None when empty).
    fn find_last(&self) -> Option<&Node> {
        let mut x = self.head();
        let mut level = self.max_height.load(Ordering::Relaxed) - 1;
        loop {
            match x.next(level) {
                Some(n) => x = n,
                None if level == 0 => break,
                None => level -= 1,
            }
        }
        (!ptr::eq(x, self.head())).then_some(x)
    }

    /// The first entry (None when empty).
    pub(crate) fn first(&self) -> Option<Entry<'_>> {
        self.head().next(0).map(|node| Entry { node })
    }

    /// The first entry at or after `probe`.
    pub(crate) fn seek(&self, probe: &Probe<'_>) -> Option<Entry<'_>> {
        self.find_greater_or_equal(probe, None).map(|node| Entry { node })
    }

    /// [`SkipList::seek`] of every probe, in order (`out` is cleared first), with up to
    /// [`LANES`] searches interleaved. A search step reads the node its previous step asked
    /// the CPU to load, then starts loading the node it will read next and hands over to the
    /// next search: the searches' cache misses overlap instead of following one another.
    /// (A lone search of a memtable of 100K+ entries spends most of its time waiting on about
    /// one miss per level.)
    pub(crate) fn seek_many<'s>(&'s self, probes: &[Probe<'_>], out: &mut Vec<Option<Entry<'s>>>) {
        out.clear();
        out.resize(probes.len(), None);
        let top = self.max_height.load(Ordering::Relaxed) - 1;
        let mut lanes: [Option<Lane<'s>>; LANES] = [None; LANES];
        let mut started = 0;
        let mut active = 0;
        loop {
            for lane in lanes.iter_mut() {
                if lane.is_none() && started < probes.len() {
                    *lane = Some(Lane::start(self.head(), top, started));
                    started += 1;
                    active += 1;
                }
                let Some(l) = lane else { continue };
                if let Some(found) = l.step(&probes[l.probe]) {
                    out[l.probe] = found.map(|node| Entry { node });
                    *lane = None;
                    active -= 1;
                }
            }
            if active == 0 && started == probes.len() {
                return;
            }
        }
    }

    /// The first entry after `probe` when `exclusive`, else at or after it.
    pub(crate) fn seek_from(&self, probe: &Probe<'_>, exclusive: bool) -> Option<Entry<'_>> {
        let mut e = self.seek(probe)?;
        while exclusive && e.node.cmp_probe(probe) == CmpOrdering::Equal {
            e = e.next()?;
        }
        Some(e)
    }

    /// The last entry before `probe`, or at it too when `inclusive`; the last entry of all for
    /// `None`.
    pub(crate) fn seek_back(&self, probe: Option<(&Probe<'_>, bool)>) -> Option<Entry<'_>> {
        let node = match probe {
            None => self.find_last(),
            Some((p, inclusive)) => {
                let at = self.find_greater_or_equal(p, None);
                match at {
                    Some(n) if inclusive && n.cmp_probe(p) == CmpOrdering::Equal => {
                        // Several equal entries: the last of them.
                        let mut last = n;
                        while let Some(m) =
                            last.next(0).filter(|m| m.cmp_probe(p) == CmpOrdering::Equal)
                        {
                            last = m;
                        }
                        Some(last)
                    }
                    _ => self.find_less_than(p),
                }
            }
        };
        node.map(|node| Entry { node })
    }

    /// The entry before `e` (a search from the head: O(log n), as in LevelDB).
    pub(crate) fn prev(&self, e: &Entry<'_>) -> Option<Entry<'_>> {
        self.find_less_than(&e.probe()).map(|node| Entry { node })
    }
}

/// The ordering of the stores that link a new node: Release (invariant 1). Under `--cfg loom`
/// the model's sharpness check can weaken it to Relaxed and expect loom to object.
#[cfg(not(loom))]
fn link_ordering() -> Ordering {
    Ordering::Release
}

#[cfg(loom)]
thread_local! {
    /// Set by the model's sharpness test (loom runs a model's threads on the caller's thread).
    static WEAK_LINKS_FOR_MODEL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(loom)]
fn link_ordering() -> Ordering {
    if WEAK_LINKS_FOR_MODEL.with(|w| w.get()) {
        Ordering::Relaxed
    } else {
        Ordering::Release
    }
}

/// Arena bytes of a node of `height` levels holding `data` bytes of key and value.
fn node_size(height: usize, data: usize) -> usize {
    (size_of::<Node>() + height * LINK_BYTES + data).next_multiple_of(8)
}

impl Writer {
    /// Height of a new node: 1 plus one level per factor-4 success, at most `MAX_HEIGHT`.
    fn random_height(&mut self) -> usize {
        // xorshift64: the height needs no more than a fast, fixed-seed spread.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let pairs_of_zero_bits = (self.rng.trailing_zeros() / 2) as usize;
        1 + pairs_of_zero_bits.min(MAX_HEIGHT - 1)
    }

    /// `bytes` (a multiple of 8) of 8-aligned arena space.
    fn alloc(&mut self, bytes: usize) -> *mut u8 {
        if bytes > self.left {
            if bytes > CHUNK_BYTES / 4 {
                // Its own chunk; the current chunk keeps serving small nodes.
                // Uninitialised: every byte handed out is written before it is published.
                self.chunks.push(Box::new_uninit_slice(bytes / 8));
                return self.chunks.last_mut().expect("just pushed").as_mut_ptr() as *mut u8;
            }
            self.chunks.push(Box::new_uninit_slice(CHUNK_BYTES / 8));
            self.cursor = self.chunks.last_mut().expect("just pushed").as_mut_ptr() as *mut u8;
            self.left = CHUNK_BYTES;
        }
        let p = self.cursor;
        // SAFETY: `bytes <= left`, so the result stays inside the current chunk.
        self.cursor = unsafe { self.cursor.add(bytes) };
        self.left -= bytes;
        p
    }

    /// A node written whole, with null `next` pointers, not yet linked.
    fn alloc_node(&mut self, height: usize, at: &Probe<'_>, value: &[u8]) -> NonNull<Node> {
        let (key, kind) = (at.key, at.kind);
        let p = self.alloc(node_size(height, key.len() + value.len()));
        // SAFETY: `p` is 8-aligned, `size` bytes, exclusively ours (the arena hands each byte
        // out once); the header, tower and data fill exactly that space.
        unsafe {
            let node = p as *mut Node;
            node.write(Node {
                prefix: at.prefix,
                seq: at.seq,
                keyspace: at.keyspace,
                // Keys are at most 64 KiB and values 64 MiB (batch validation).
                key_len: u32::try_from(key.len()).expect("key length fits u32"),
                value_len: u32::try_from(value.len()).expect("value length fits u32"),
                kind,
                height: height as u8,
                #[cfg(loom)]
                witness: loom::cell::UnsafeCell::new(at.seq),
            });
            let tower = node.add(1) as *mut AtomicPtr<Node>;
            debug_assert_eq!(tower as usize % std::mem::align_of::<AtomicPtr<Node>>(), 0);
            for i in 0..height {
                tower.add(i).write(AtomicPtr::new(ptr::null_mut()));
            }
            let data = (tower.add(height)) as *mut u8;
            ptr::copy_nonoverlapping(key.as_ptr(), data, key.len());
            ptr::copy_nonoverlapping(value.as_ptr(), data.add(key.len()), value.len());
            NonNull::new_unchecked(node)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use std::sync::atomic::AtomicU64;

    fn key_of(i: u64) -> [u8; 8] {
        // A bijective scramble of `i`, so insertion order is random in key order.
        (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555).to_be_bytes()
    }

    #[test]
    fn readers_racing_the_writer_find_every_published_entry_and_see_order() {
        const N: u64 = 60_000;
        let list = SkipList::new();
        let published = AtomicU64::new(0);
        std::thread::scope(|s| {
            for reader in 0..2u64 {
                let (list, published) = (&list, &published);
                s.spawn(move || {
                    let mut rng = SplitMix64::new(reader);
                    let mut rounds = 0u64;
                    loop {
                        let p = published.load(Ordering::Acquire);
                        if p > 0 {
                            let i = rng.next_u64() % p;
                            let k = key_of(i);
                            let e = list.seek(&Probe::new(0, &k, u64::MAX, ValueKind::Put));
                            let e = e.unwrap_or_else(|| panic!("published key {i} not found"));
                            assert_eq!((e.key(), e.seq()), (&k[..], i + 1));
                            assert_eq!(e.value(), &i.to_le_bytes()[..]);
                        }
                        rounds += 1;
                        if rounds.is_multiple_of(2000) {
                            // Level 0 is always sorted and holds at least what was published.
                            let mut n = 0u64;
                            let mut prev: Option<Entry<'_>> = None;
                            let mut e = list.first();
                            while let Some(x) = e {
                                if let Some(p) = prev {
                                    assert!(p.key() < x.key(), "out of order");
                                }
                                n += 1;
                                prev = Some(x);
                                e = x.next();
                            }
                            assert!(n >= p, "{n} entries listed, {p} published");
                        }
                        if p == N {
                            break;
                        }
                    }
                });
            }
            for i in 0..N {
                list.insert(0, &key_of(i), &i.to_le_bytes(), i + 1, ValueKind::Put);
                published.store(i + 1, Ordering::Release);
            }
        });
    }

    #[test]
    fn seek_many_answers_every_probe_as_seek_does() {
        let list = SkipList::new();
        // Even indices only, several versions of some keys: probes hit keys, fall between
        // them, land before the first and after the last, and see versions by snapshot.
        for i in (0..20_000u64).step_by(2) {
            list.insert(0, &i.to_be_bytes(), b"v", i + 1, ValueKind::Put);
            if i % 6 == 0 {
                list.insert(0, &i.to_be_bytes(), b"w", i + 100_000, ValueKind::Delete);
            }
        }
        let mut rng = SplitMix64::new(7);
        let keys: Vec<[u8; 8]> =
            (0..3_000).map(|_| (rng.next_u64() % 20_100).to_be_bytes()).collect();
        let snapshots: Vec<u64> = (0..keys.len()).map(|_| rng.next_u64() % 130_000).collect();
        let probes: Vec<Probe<'_>> = keys
            .iter()
            .zip(&snapshots)
            .map(|(k, &seq)| Probe::new(0, k, seq, ValueKind::Put))
            .collect();
        let at = |e: Option<Entry<'_>>| e.map(|e| (e.key().to_vec(), e.seq()));
        let mut out = Vec::new();
        // Fewer probes than lanes, as many, and many more.
        for n in [0, 1, 5, LANES, probes.len()] {
            list.seek_many(&probes[..n], &mut out);
            assert_eq!(out.len(), n);
            for (p, e) in probes[..n].iter().zip(&out) {
                assert_eq!(at(*e), at(list.seek(p)), "probe {:?} at {}", p.key, p.seq);
            }
        }
        assert!(out.iter().any(|e| e.is_none()), "some probe lies past the last key");
        let (empty, mut none) = (SkipList::new(), Vec::new());
        empty.seek_many(&probes, &mut none);
        assert!(none.len() == probes.len() && none.iter().all(Option::is_none), "empty list");
    }

    #[test]
    fn large_and_empty_entries_keep_their_bytes_and_order() {
        let list = SkipList::new();
        let big = vec![7u8; CHUNK_BYTES]; // its own chunk
        list.insert(0, b"b", &big, 1, ValueKind::Put);
        list.insert(0, b"", b"", 2, ValueKind::Delete);
        list.insert(0, b"a", b"x", 3, ValueKind::Merge);
        list.insert(1, b"", b"ks1", 4, ValueKind::Put);
        let all: Vec<(u32, Vec<u8>, usize, ValueKind)> =
            std::iter::successors(list.first(), |e| e.next())
                .map(|e| (e.keyspace(), e.key().to_vec(), e.value().len(), e.kind()))
                .collect();
        assert_eq!(
            all,
            vec![
                (0, b"".to_vec(), 0, ValueKind::Delete),
                (0, b"a".to_vec(), 1, ValueKind::Merge),
                (0, b"b".to_vec(), CHUNK_BYTES, ValueKind::Put),
                (1, b"".to_vec(), 3, ValueKind::Put),
            ]
        );
        let b = list.seek(&Probe::new(0, b"b", u64::MAX, ValueKind::Put)).expect("b is there");
        assert!(b.value().iter().all(|&x| x == 7));
        let last = list.seek_back(None).expect("not empty");
        assert_eq!((last.keyspace(), last.value()), (1, &b"ks1"[..]));
        let before = list.prev(&last).expect("b precedes");
        assert_eq!(before.key(), b"b");
    }

    #[test]
    fn heights_follow_branching_factor_four() {
        let mut w = Writer { chunks: Vec::new(), cursor: ptr::null_mut(), left: 0, rng: 1 };
        let n = 400_000;
        let tall = (0..n).filter(|_| w.random_height() >= 2).count() as f64;
        // P(height >= 2) = 1/4. Binomial sd = sqrt(n p (1-p)) = 274; allow 6 sd.
        assert!((tall - n as f64 / 4.0).abs() < 6.0 * 274.0, "{tall} of {n} at height >= 2");
    }
}

/// Model checks of invariant 1 under loom (`RUSTFLAGS="--cfg loom" cargo test --release --lib
/// memtable::skiplist::loom_model`, run by `.ci/run`): a reader racing two inserts reaches only
/// whole nodes, in order, and finds every key published to it; weakening the link stores to
/// Relaxed is caught (the check is sharp).
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::Arc;

    fn race() {
        loom::model(|| {
            let list = Arc::new(SkipList::new());
            let published = Arc::new(AtomicUsize::new(0));
            let keys: [&[u8]; 2] = [b"m", b"c"]; // the second lands before the first
            let reader = {
                let (list, published) = (list.clone(), published.clone());
                loom::thread::spawn(move || {
                    let p = published.load(Ordering::Acquire);
                    for (i, k) in keys.iter().enumerate().take(p) {
                        let e = list.seek(&Probe::new(0, k, u64::MAX, ValueKind::Put));
                        let e = e.expect("a published key is found");
                        assert_eq!((e.key(), e.seq()), (*k, i as u64 + 1));
                    }
                    // Walking level 0 without the published count: whatever is reachable is a
                    // whole node (`seq` reads the witness), in order.
                    let mut last: Option<Vec<u8>> = None;
                    let mut e = list.first();
                    while let Some(x) = e {
                        assert!(x.seq() >= 1);
                        assert!(last.as_deref().is_none_or(|l| l < x.key()), "out of order");
                        last = Some(x.key().to_vec());
                        e = x.next();
                    }
                })
            };
            for (i, k) in keys.iter().enumerate() {
                list.insert(0, k, b"v", i as u64 + 1, ValueKind::Put);
                published.store(i + 1, Ordering::Release);
            }
            reader.join().expect("reader");
        });
    }

    #[test]
    fn a_reader_racing_inserts_reaches_only_whole_nodes_in_order() {
        WEAK_LINKS_FOR_MODEL.with(|w| w.set(false));
        race();
    }

    #[test]
    #[should_panic(expected = "Causality violation")]
    fn relaxed_link_stores_are_caught() {
        WEAK_LINKS_FOR_MODEL.with(|w| w.set(true));
        race();
    }
}
