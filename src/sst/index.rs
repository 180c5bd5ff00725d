//! [`IndexSearch`]: a cache-friendly search structure over a table's (pinned) index block.
//!
//! The index block stores one separator per data block, every entry a restart point (the
//! builder writes index blocks with restart interval 1). A plain seek binary-searches the
//! restart array and decodes one entry per probe: each probe touches the restart array and a
//! separate entry (two cache misses on a cold index) and decodes three varints. Point lookups
//! spend much of their non-decompression time there.
//!
//! At open we take `common`, the longest prefix shared by every separator's *user key*, and
//! extract, for every entry `i`, `prefixes[i]` = the 8 bytes of its user key that follow
//! `common`, zero-padded, read big-endian. For user keys `a = common + x`, `b = common + y`:
//! `prefix(x) < prefix(y)` implies `a < b` (at the first differing byte of the padded forms,
//! either both bytes are real and decide, or the smaller side is padding, so its key is a proper
//! prefix of the other). Hence every entry with `prefix < prefix(target)` sorts before the
//! target, every entry with `prefix > prefix(target)` after it, and only the run of entries
//! with an equal prefix needs a full internal-key comparison. Skipping `common` matters for
//! keys that share a long prefix (`b"%016d"` decimal keys share 8 zero digits up to 10^8
//! keys): the first 8 bytes would be equal everywhere and every seek a full binary search of
//! the block. A target that does not start with `common` sorts before or after every entry.
//! The prefix array is 8 bytes per data block (about 7% of the index block), contiguous, and
//! its upper binary-search levels stay cached across lookups.
//!
//! Prefixes order user keys only, so the summary also records the one keyspace of its
//! separators (a table holds one keyspace) and is not built when they name several: a target
//! of a smaller keyspace sorts before every entry, one of a larger keyspace after every entry.
//!
//! The prefixes are searched through a radix table first ([`Radix`], a bucket per 2 to 8
//! entries): for keys spread evenly the target's bucket holds a few entries, and the seek reads
//! the bucket's bounds, then one line of prefixes. A table's index is cold at scale (at 100M
//! keys a lookup visits one of hundreds of tables at random), where the top array's binary
//! search cost a cache miss a step: the seek was 36% of a 100M-key readrandom profile. A
//! bucket of more than a group's entries (clustered keys) is searched through the top array.
//!
//! Beside the prefixes, every entry's block handle, decoded and packed in 8 bytes
//! ([`PackedHandle`]): the seek starts loading the bucket's handles with its prefixes, so the
//! handle is at hand when the entry is found, where reading it from the block took two more
//! dependent misses (the restart slot, then the entry). A table whose handles do not pack (a
//! file past 1 TiB, a block past 16 MiB) reads them from the block.
//!
//! The summary is built only when the index block really has one restart per entry; for any
//! other block (a foreign writer, or damage that still passes the CRC) the table falls back to
//! the ordinary block seek, so the result never depends on the summary's presence.

use crate::error::Result;
use crate::ikey::{self, key_prefix};
use crate::radix::Radix;
use crate::sst::block::Block;
use crate::sst::format::BlockHandle;
use std::cmp::Ordering;

/// Prefix array over an index block with one restart point per entry. See the module
/// documentation.
#[derive(Debug)]
pub(crate) struct IndexSearch {
    prefixes: Vec<u64>,
    /// `prefixes[k * GROUP]` for every `k`: a seek searches this small array first (it stays
    /// cached across lookups), then one group of `GROUP` prefixes (two or three cache lines).
    /// A plain binary search over `prefixes` took a cache miss at each of its lower levels: in
    /// a 10M-key readrandom profile the seek was 16% of the time.
    top: Vec<u64>,
    /// Buckets over `prefixes` (module documentation).
    radix: Radix<u64>,
    /// Every entry's block handle ([`PackedHandle`]), or none when one does not pack.
    handles: Box<[PackedHandle]>,
    /// The keyspace of every separator.
    keyspace: u32,
    /// The longest prefix of every separator's user key; `prefixes` abbreviate what follows.
    common: Box<[u8]>,
}

/// Prefixes per group of the two-level search ([`IndexSearch::top`]).
const GROUP: usize = 16;

/// A block handle in 8 bytes: the offset in the low 40 bits, the size in the high 24.
#[derive(Clone, Copy, Debug)]
struct PackedHandle(u64);

impl PackedHandle {
    const OFFSET_BITS: u32 = 40;

    fn pack(h: BlockHandle) -> Option<PackedHandle> {
        (h.offset < 1 << Self::OFFSET_BITS && h.size < 1 << (64 - Self::OFFSET_BITS))
            .then_some(PackedHandle(h.offset | h.size << Self::OFFSET_BITS))
    }

    fn unpack(self) -> BlockHandle {
        let offset = self.0 & ((1 << Self::OFFSET_BITS) - 1);
        BlockHandle { offset, size: self.0 >> Self::OFFSET_BITS }
    }
}

/// Entries per radix bucket asked for: the power of two of buckets and the span's own width
/// make it 2 to 8 on average, one or two cache lines of prefixes.
const ENTRIES_PER_BUCKET: usize = 4;

impl IndexSearch {
    /// The summary of `index`, or `None` when some entry is not a restart point or the block
    /// does not decode (the caller then uses the block seek, which reports any corruption).
    pub(crate) fn build(index: &Block) -> Option<IndexSearch> {
        let n = index.num_restarts();
        let mut user_keys = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        let mut expected_next = 0;
        let mut keyspace = None;
        for i in 0..n {
            let off = index.restart_point(i).ok()?;
            // Entries must be laid out back to back, one per restart point.
            if off != expected_next {
                return None;
            }
            let (key, value, end) = index.restart_entry_at(off).ok()?;
            handles.push(BlockHandle::decode(value).ok().and_then(PackedHandle::pack));
            if key.len() < ikey::TRAILER_LEN {
                return None;
            }
            let (ks, user_key) = ikey::split(key);
            if *keyspace.get_or_insert(ks) != ks {
                return None;
            }
            user_keys.push(user_key);
            expected_next = end;
        }
        if expected_next != index.restarts_offset() {
            return None; // trailing entries that are not restart points
        }
        let common: &[u8] = match user_keys.first() {
            Some(first) => {
                let len = user_keys.iter().map(|k| common_len(first, k)).min().unwrap_or(0);
                &first[..len]
            }
            None => &[],
        };
        let prefixes: Vec<u64> = user_keys.iter().map(|k| key_prefix(&k[common.len()..])).collect();
        // The prefixes of a well-formed block are sorted; anything else is not searchable.
        if prefixes.windows(2).any(|w| w[0] > w[1]) {
            return None;
        }
        let top = prefixes.iter().step_by(GROUP).copied().collect();
        let radix = Radix::new(&prefixes, prefixes.len().div_ceil(ENTRIES_PER_BUCKET));
        let handles = handles.into_iter().collect::<Option<Box<[_]>>>().unwrap_or_default();
        Some(IndexSearch {
            prefixes,
            top,
            radix,
            handles,
            keyspace: keyspace.unwrap_or(ikey::DEFAULT_KEYSPACE),
            common: common.into(),
        })
    }

    /// The first entry whose separator is `>= target` in internal-key order (`n` = number of
    /// entries when there is none). `target` is an internal key.
    pub(crate) fn seek(&self, index: &Block, target: &[u8]) -> Result<usize> {
        let (ks, user_key) = ikey::split(target);
        match ks.cmp(&self.keyspace) {
            Ordering::Less => return Ok(0),
            Ordering::Greater => return Ok(self.prefixes.len()),
            Ordering::Equal => {}
        }
        // A target that does not start with `common` sorts before every separator (it is
        // smaller at the first differing byte, or a proper prefix of `common`) or after all.
        let shared = user_key.len().min(self.common.len());
        match user_key[..shared].cmp(&self.common[..shared]) {
            Ordering::Less => return Ok(0),
            Ordering::Greater => return Ok(self.prefixes.len()),
            Ordering::Equal if shared < self.common.len() => return Ok(0),
            Ordering::Equal => {}
        }
        let p = key_prefix(&user_key[shared..]);
        let lo = self.first_at_least(p);
        // The run of separators sharing the target's prefix is usually empty or one entry:
        // gallop over it instead of a second binary search of the whole rest (which was half
        // of this function's cache misses in a 10M-key readrandom profile).
        let hi = equal_run_end(&self.prefixes, lo, p);
        // Entries in lo..hi share the prefix: binary search them by full key.
        let (mut left, mut right) = (lo, hi);
        while left < right {
            let mid = left + (right - left) / 2;
            let off = index.restart_point(mid)?;
            let (key, _, _) = index.restart_entry_at(off)?;
            if ikey::compare(key, target) == Ordering::Less {
                left = mid + 1;
            } else {
                right = mid;
            }
        }
        Ok(left)
    }

    /// Starts loading what [`IndexSearch::seek`] of `user_key` in `keyspace` and the block
    /// handle lookup after it will read, one step per `stage` (a hint: answers never depend on
    /// it). A batch of sorted keys calls it for the keys a few places ahead, nearest last:
    /// stage 0 loads the seek's radix bucket; stage 1 (with the bucket loaded) the prefixes the
    /// seek will search and, when the summary keeps handles, the bucket's first handle (the
    /// answer's, or its line's neighbour); without handles, stage 2 (with the prefixes loaded)
    /// the restart slot and stage 3 (with the slot loaded) the entry, which the lookup then
    /// reads for the handle. Each is a load the lookup waited for in turn, a tenth of a Python
    /// `multi_get` batch. Targets outside the summary's keyspace or common prefix, which the
    /// seek answers without reading, load nothing.
    pub(crate) fn prefetch(&self, index: &Block, keyspace: u32, user_key: &[u8], stage: u8) {
        if keyspace != self.keyspace || !user_key.starts_with(&self.common) {
            return;
        }
        let p = key_prefix(user_key.get(self.common.len()..).unwrap_or_default());
        match stage {
            0 => self.radix.prefetch(p),
            1 => {
                let (lo, hi) = self.radix.narrow(p);
                let searched = if hi - lo <= GROUP { Some(lo..hi) } else { self.group_of(p) };
                if let Some(prefixes) = searched.and_then(|r| self.prefixes.get(r)) {
                    for line in prefixes.chunks(8) {
                        crate::filter::prefetch_read(line.as_ptr());
                    }
                }
                if let Some(h) = self.handles.get(lo) {
                    crate::filter::prefetch_read(h);
                }
            }
            _ if !self.handles.is_empty() => {}
            2 => index.prefetch_restart_slot(self.first_at_least(p)),
            _ => {
                if let Ok(off) = index.restart_point(self.first_at_least(p)) {
                    // An index entry: three varints, a separator, a handle.
                    index.prefetch_at(off, 24 + user_key.len());
                }
            }
        }
    }

    /// The entries among which the first `i` with `prefixes[i] >= p` lies, past those the top
    /// array decides (`None`: it is entry 0): `g` top entries are `< p`, so entries up to
    /// `GROUP * (g - 1)` are too, and entry `GROUP * g` (if any) is not.
    #[inline]
    fn group_of(&self, p: u64) -> Option<std::ops::Range<usize>> {
        let g = self.top.partition_point(|&x| x < p);
        (g > 0).then(|| GROUP * (g - 1) + 1..(GROUP * g).min(self.prefixes.len()))
    }

    /// The first `i` with `prefixes[i] >= p` (`prefixes.len()` when none): within `p`'s radix
    /// bucket, or through the top array when the bucket holds more than a group.
    #[inline]
    fn first_at_least(&self, p: u64) -> usize {
        let (lo, hi) = self.radix.narrow(p);
        if hi - lo <= GROUP {
            // The answer's handle is among the bucket's (or just after): its load starts now,
            // beside the prefixes'.
            if let Some(h) = self.handles.get(lo) {
                crate::filter::prefetch_read(h);
            }
            return lo + self.prefixes[lo..hi].partition_point(|&x| x < p);
        }
        self.first_at_least_by_top(p)
    }

    /// [`IndexSearch::first_at_least`] through the top array and one group, for a radix
    /// bucket of more than a group's entries.
    fn first_at_least_by_top(&self, p: u64) -> usize {
        match self.group_of(p) {
            None => 0,
            Some(g) => g.start + self.prefixes[g].partition_point(|&x| x < p),
        }
    }

    /// The block handle of entry `i` (`i` below the entry count), when the handles packed.
    #[inline]
    pub(crate) fn handle(&self, i: usize) -> Option<BlockHandle> {
        self.handles.get(i).map(|h| h.unpack())
    }

    /// Bytes of the prefixes, the top array and the handles (8 per entry), the radix buckets
    /// and the common prefix (no allocator overhead).
    pub(crate) fn prefix_bytes(&self) -> usize {
        (self.prefixes.capacity() + self.top.capacity() + self.handles.len()) * 8
            + self.radix.bytes()
            + self.common.len()
    }

    /// Bytes of heap memory held (the prefix arrays', the radix's and the common prefix's
    /// allocations).
    pub(crate) fn memory_bytes(&self) -> usize {
        crate::heap::vec_bytes::<u64>(self.prefixes.capacity())
            + crate::heap::vec_bytes::<u64>(self.top.capacity())
            + self.radix.memory_bytes()
            + crate::heap::vec_bytes::<PackedHandle>(self.handles.len())
            + crate::heap::vec_bytes::<u8>(self.common.len())
    }
}

/// The length of the longest common prefix of `a` and `b`.
fn common_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The end of the run of `p` starting at `lo` in sorted `xs` (`lo` itself when `xs[lo] != p`):
/// exponential search, then a binary search inside the last step.
fn equal_run_end(xs: &[u64], lo: usize, p: u64) -> usize {
    if xs.get(lo) != Some(&p) {
        return lo;
    }
    // Invariant: xs[at] == p, and everything in (at, at + step) is unknown.
    let (mut at, mut step) = (lo, 1);
    while at + step < xs.len() && xs[at + step] == p {
        at += step;
        step *= 2;
    }
    let bound = (at + step).min(xs.len());
    at + 1 + xs[at + 1..bound].partition_point(|&x| x == p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ikey::{encode, encode_in, ValueKind};
    use crate::rng::SplitMix64;
    use crate::sst::block::BlockBuilder;

    /// Builds an index-like block (interval 1) over `keys` and checks the summary seek against
    /// the block's own seek for every key and for keys between them.
    fn agrees_with_block_seek(ks: u32, user_keys: &[Vec<u8>]) {
        let encode = |k: &[u8], s, t| encode_in(ks, k, s, t);
        let mut b = BlockBuilder::new(1);
        let keys: Vec<Vec<u8>> = user_keys
            .iter()
            .enumerate()
            .map(|(i, k)| encode(k, i as u64, ValueKind::Put))
            .collect();
        for k in &keys {
            b.add(k, b"h");
        }
        let block = std::sync::Arc::new(Block::new(b.finish()).unwrap());
        let s = IndexSearch::build(&block).expect("interval-1 block is searchable");
        let mut probes: Vec<Vec<u8>> = keys.clone();
        for k in user_keys {
            for seq in [0, 5, u64::MAX >> 8] {
                probes.push(encode(k, seq, ValueKind::Put));
                let mut longer = k.clone();
                longer.push(0);
                probes.push(encode(&longer, seq, ValueKind::Put));
            }
            // Every proper prefix (targets shorter than, or cut inside, the common prefix), and
            // the key with one byte changed at each position (targets leaving the common prefix
            // below or above it).
            for j in 0..k.len() {
                probes.push(encode(&k[..j], 1, ValueKind::Put));
                for d in [-1i16, 1] {
                    let mut m = k.clone();
                    m[j] = (i16::from(m[j]) + d).clamp(0, 255) as u8;
                    probes.push(encode(&m, 1, ValueKind::Put));
                }
            }
        }
        probes.push(encode(b"", 0, ValueKind::Put));
        probes.push(encode(&[0xff; 20], 0, ValueKind::Put));
        // Targets of the neighbouring keyspaces sort before / after every entry.
        for other in [ks.wrapping_sub(1), ks + 1].into_iter().filter(|&o| o < ks + 2) {
            for k in [&b""[..], b"prefix00", &[0xff; 20]] {
                probes.push(encode_in(other, k, 3, ValueKind::Put));
            }
        }
        let mut it = block.iter();
        for p in &probes {
            let i = s.seek(&block, p).unwrap();
            it.seek(p).unwrap();
            if i == keys.len() {
                assert!(!it.valid(), "{p:?}");
            } else {
                assert_eq!(it.key(), keys[i].as_slice(), "{p:?}");
            }
        }
    }

    /// An interval-1 block of `n` separators whose values are the handles `handle(i)`.
    fn block_with_handles(n: u64, handle: impl Fn(u64) -> BlockHandle) -> Block {
        let mut b = BlockBuilder::new(1);
        for i in 0..n {
            let mut value = Vec::new();
            handle(i).encode_to(&mut value);
            b.add(&encode_in(0, &(i * 1000).to_be_bytes(), 1, ValueKind::Put), &value);
        }
        Block::new(b.finish()).unwrap()
    }

    #[test]
    fn the_summary_holds_each_entrys_handle_when_they_all_pack() {
        let handle = |i: u64| BlockHandle { offset: i * 4109 + (1 << 39), size: 4096 + i % 7 };
        let block = block_with_handles(300, handle);
        let s = IndexSearch::build(&block).unwrap();
        for i in 0..300u64 {
            assert_eq!(s.handle(i as usize), Some(handle(i)), "entry {i}");
            // The seek that finds entry i, as the table's index lookup does (a lookup key of the
            // newest sequence sorts before the entry's).
            let target = encode_in(0, &(i * 1000).to_be_bytes(), u64::MAX >> 8, ValueKind::Put);
            assert_eq!(s.seek(&block, &target).unwrap(), i as usize);
        }
        assert_eq!(s.handle(300), None, "past the last entry");
        // One handle that does not pack (a block of 16 MiB, or an offset past 1 TiB): none are
        // kept, and the table reads them from the block; the search is unchanged.
        for odd in
            [BlockHandle { offset: 7, size: 1 << 24 }, BlockHandle { offset: 1 << 40, size: 1 }]
        {
            let block = block_with_handles(50, |i| if i == 20 { odd } else { handle(i) });
            let s = IndexSearch::build(&block).unwrap();
            assert_eq!((s.handle(0), s.handle(20)), (None, None));
            let target = encode_in(0, &20_000u64.to_be_bytes(), u64::MAX >> 8, ValueKind::Put);
            assert_eq!(s.seek(&block, &target).unwrap(), 20);
        }
    }

    #[test]
    fn equal_run_end_agrees_with_a_linear_scan() {
        let mut rng = SplitMix64::new(5);
        for len in 0..70 {
            // Few distinct values, so runs of every length up to the whole array occur.
            let mut xs: Vec<u64> = (0..len).map(|_| rng.below(4)).collect();
            xs.sort();
            for lo in 0..=len {
                for p in 0..5 {
                    let naive = lo + xs[lo..].iter().take_while(|&&x| x == p).count();
                    assert_eq!(equal_run_end(&xs, lo, p), naive, "{xs:?} lo {lo} p {p}");
                }
            }
        }
    }

    #[test]
    fn seek_agrees_with_block_seek_on_shared_and_distinct_prefixes() {
        let mut rng = SplitMix64::new(11);
        // Long keys sharing their first 8 bytes in runs, short keys, and duplicates of one user
        // key at several sequence numbers (sorted newest first by the encode order below).
        let mut keys: Vec<Vec<u8>> = (0..300u64)
            .map(|_| {
                let mut k = b"prefix00".to_vec();
                k[7] = b'0' + rng.below(3) as u8;
                k.extend_from_slice(&rng.below(1000).to_be_bytes());
                k
            })
            .collect();
        keys.extend((0..50u64).map(|i| vec![b'a', i as u8]));
        keys.sort();
        keys.dedup();
        agrees_with_block_seek(0, &keys);
        agrees_with_block_seek(7, &keys);
        agrees_with_block_seek(0, &[b"only".to_vec()]);
        agrees_with_block_seek(1, &[b"only".to_vec()]);
    }

    #[test]
    fn the_two_level_search_agrees_with_one_binary_search() {
        let mut rng = SplitMix64::new(17);
        // Lengths around multiples of GROUP, and values with duplicates spanning groups.
        for len in (0..3 * GROUP + 3).chain([200, 1000]) {
            let mut prefixes: Vec<u64> = (0..len).map(|_| rng.below(len as u64 / 2 + 2)).collect();
            prefixes.sort();
            let top = prefixes.iter().step_by(GROUP).copied().collect();
            let radix = Radix::new(&prefixes, prefixes.len().div_ceil(ENTRIES_PER_BUCKET));
            let s = IndexSearch {
                prefixes: prefixes.clone(),
                top,
                radix,
                handles: Box::default(),
                keyspace: 0,
                common: Box::default(),
            };
            for p in 0..len as u64 / 2 + 4 {
                let want = prefixes.partition_point(|&x| x < p);
                assert_eq!(s.first_at_least(p), want, "len {len} p {p}");
                // The fallback for wide buckets, which these prefixes seldom reach.
                assert_eq!(s.first_at_least_by_top(p), want, "len {len} p {p}");
            }
        }
    }

    #[test]
    fn seek_agrees_with_block_seek_over_many_groups_of_distinct_prefixes() {
        let keys: Vec<Vec<u8>> = (0..1000u64).map(|i| (i * 7).to_be_bytes().to_vec()).collect();
        agrees_with_block_seek(0, &keys);
    }

    #[test]
    fn seek_agrees_with_block_seek_on_keys_sharing_a_long_prefix() {
        // Decimal keys share their first 8+ digits; the summary abbreviates what follows.
        let keys: Vec<Vec<u8>> =
            (0..500u64).map(|i| format!("{:016}", 7_000 + i * 13).into_bytes()).collect();
        agrees_with_block_seek(0, &keys);
        let block_of = |keys: &[Vec<u8>]| {
            let mut b = BlockBuilder::new(1);
            for k in keys {
                b.add(&encode(k, 1, ValueKind::Put), b"h");
            }
            Block::new(b.finish()).unwrap()
        };
        let s = IndexSearch::build(&block_of(&keys)).unwrap();
        assert_eq!(&*s.common, b"00000000000", "7000 and 13487 share 11 leading zeros");
        // Keys that are prefixes of one another: the common prefix is the shortest key.
        let nested: Vec<Vec<u8>> =
            ["ab", "abc", "abcd", "abd"].iter().map(|k| k.as_bytes().to_vec()).collect();
        agrees_with_block_seek(2, &nested);
        assert_eq!(&*IndexSearch::build(&block_of(&nested)).unwrap().common, b"ab");
        // One entry: the common prefix is its whole key.
        agrees_with_block_seek(0, &[b"0000000000000042".to_vec()]);
    }

    #[test]
    fn blocks_with_wider_restart_intervals_get_no_summary() {
        let mut b = BlockBuilder::new(4);
        for i in 0..20u32 {
            b.add(&encode(&i.to_be_bytes(), 1, ValueKind::Put), b"v");
        }
        let block = Block::new(b.finish()).unwrap();
        assert!(IndexSearch::build(&block).is_none());
    }
}
