//! Memory on transparent huge pages for the filter blocks that open tables hold
//! (design.md#huge-pages).
//!
//! Why: a lookup of a missing key costs one filter probe per level at a random place in that
//! level's filters. At 50M keys the open tables hold 27 MiB of filters, about 7,000 4 KiB
//! pages, far more than the TLB covers, so nearly every probe also paid a page walk (slow on
//! a virtual machine, where a walk is two-dimensional). A 50M readmissing profile showed it:
//! 20% of the time on the prefetch instruction of the filter's lines, which waits for its
//! address translation. In 2 MiB pages the same filters span 14 pages.
//!
//! How: anonymous mappings ("chunks") of whole 2 MiB pages, 2 MiB-aligned, advised
//! `MADV_HUGEPAGE` (Linux only: elsewhere the arena is not used and filters stay on the heap).
//! Each chunk is carved first-fit into 64-byte-aligned pieces (a filter then starts on a cache
//! line); a freed piece merges with its free neighbours. Chunks are searched oldest first, so
//! new pieces fill old chunks and young ones drain; an emptied chunk is unmapped, except one
//! standard (2 MiB) chunk kept spare so a table cache that opens and closes tables does not map
//! and unmap repeatedly. A piece larger than 2 MiB gets a chunk of its own, rounded up to whole
//! huge pages (its remainder serves other pieces); such a chunk is never kept as the spare.
//!
//! Invariants: pieces never overlap (each is taken from a chunk's free list and returned to it
//! once, on drop); a piece's bytes are written only while it is being created, before any
//! `&[u8]` to them exists; a chunk is unmapped only when it holds no piece.
//!
//! One arena serves the whole process (every `Db`), behind one mutex: pieces are taken and
//! returned when tables open and close, at most some hundreds of times a second. Its free bytes
//! (mapped, resident once touched, not in use) are reported by [`free_bytes`] and in
//! `MemoryUsage::filter_arena_free`.

use parking_lot::Mutex;
use std::collections::BTreeMap;

/// A transparent huge page on x86-64 and aarch64 with 4 KiB base pages.
const HUGE_PAGE: usize = 2 << 20;
/// Pieces start on cache lines.
const ALIGN: usize = 64;

/// Bytes copied into the arena: an immutable, 64-byte-aligned piece of a huge-page chunk,
/// returned to the arena when dropped.
pub(crate) struct HugeBuf {
    ptr: *const u8,
    len: usize,
    /// The chunk's id and the piece's offset and rounded length in it, for the return.
    chunk: u64,
    offset: usize,
    piece: usize,
}

// SAFETY: a `HugeBuf` is an owned, immutable byte buffer: its bytes were written before it was
// made and never again, and its piece belongs to it alone until its drop returns it (module
// invariants). Sharing or sending it shares or sends nothing but reads of those bytes.
unsafe impl Send for HugeBuf {}
// SAFETY: as for `Send`: every access through `&HugeBuf` is a read.
unsafe impl Sync for HugeBuf {}

impl HugeBuf {
    /// A copy of `bytes` in the arena, or `None` where the arena is not available (not Linux,
    /// an empty slice, or the mapping failed: the caller keeps its heap buffer).
    pub(crate) fn copy_of(bytes: &[u8]) -> Option<HugeBuf> {
        if bytes.is_empty() || !cfg!(target_os = "linux") {
            return None;
        }
        let piece = bytes.len().div_ceil(ALIGN) * ALIGN;
        let (chunk, offset, base) = ARENA.lock().take(piece)?;
        // SAFETY: `base + offset .. + piece` lies inside the chunk's mapping (`take`), is
        // writable, and no other piece overlaps it; nothing reads it before this copy ends.
        let ptr = unsafe {
            let dst = base.add(offset);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len());
            dst as *const u8
        };
        Some(HugeBuf { ptr, len: bytes.len(), chunk, offset, piece })
    }

    /// Bytes this buffer takes from the arena (its length rounded up to 64).
    pub(crate) fn piece_bytes(&self) -> usize {
        self.piece
    }
}

impl std::ops::Deref for HugeBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr .. ptr + len` was initialised by `copy_of` and stays mapped and
        // unmodified until this buffer is dropped (module invariants).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for HugeBuf {
    fn drop(&mut self) {
        ARENA.lock().give_back(self.chunk, self.offset, self.piece);
    }
}

impl std::fmt::Debug for HugeBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HugeBuf({} bytes)", self.len)
    }
}

/// Bytes of the process-wide arena's chunks that no piece uses now.
pub(crate) fn free_bytes() -> u64 {
    let a = ARENA.lock();
    (a.mapped - a.in_use) as u64
}

static ARENA: Mutex<Arena> = Mutex::new(Arena::new());

struct Arena {
    chunks: Vec<Chunk>,
    next_id: u64,
    /// Bytes of the chunks.
    mapped: usize,
    /// Bytes of the pieces handed out.
    in_use: usize,
}

struct Chunk {
    id: u64,
    /// The mapping: `len` usable bytes from `base`, plus the slack that aligned `base`.
    _map: memmap2::MmapMut,
    base: *mut u8,
    len: usize,
    /// Free extents, offset -> length, merged (no two adjacent).
    free: BTreeMap<usize, usize>,
    used: usize,
}

// SAFETY: a chunk is only reached through the arena's mutex; its raw `base` points into its own
// mapping, which lives as long as the chunk.
unsafe impl Send for Chunk {}

impl Arena {
    const fn new() -> Arena {
        Arena { chunks: Vec::new(), next_id: 0, mapped: 0, in_use: 0 }
    }

    /// A free piece of `piece` bytes: (chunk id, offset, chunk base).
    fn take(&mut self, piece: usize) -> Option<(u64, usize, *mut u8)> {
        let found =
            self.chunks.iter().enumerate().find_map(|(i, c)| Some((i, c.first_fit(piece)?)));
        let (i, offset) = match found {
            Some(at) => at,
            None => {
                let chunk = Chunk::map(self.next_id, piece.max(HUGE_PAGE))?;
                self.mapped += chunk.len;
                self.chunks.push(chunk);
                self.next_id += 1;
                (self.chunks.len() - 1, 0)
            }
        };
        let c = &mut self.chunks[i];
        let len = c.free.remove(&offset).expect("first_fit returned a free extent");
        if len > piece {
            c.free.insert(offset + piece, len - piece);
        }
        c.used += piece;
        self.in_use += piece;
        Some((c.id, offset, c.base))
    }

    fn give_back(&mut self, id: u64, offset: usize, piece: usize) {
        let Some(i) = self.chunks.iter().position(|c| c.id == id) else {
            debug_assert!(false, "a piece of an unknown chunk");
            return;
        };
        let c = &mut self.chunks[i];
        let (mut start, mut len) = (offset, piece);
        if let Some((&prev, &prev_len)) = c.free.range(..offset).next_back() {
            if prev + prev_len == offset {
                c.free.remove(&prev);
                start = prev;
                len += prev_len;
            }
        }
        if let Some(next_len) = c.free.remove(&(offset + piece)) {
            len += next_len;
        }
        c.free.insert(start, len);
        c.used -= piece;
        self.in_use -= piece;
        // Keep one empty standard chunk as a spare; unmap any other empty chunk, and every
        // oversized one (its touched pages would otherwise stay resident for good).
        let oversized = c.len > HUGE_PAGE;
        if c.used == 0 && (oversized || self.chunks.iter().filter(|c| c.used == 0).count() > 1) {
            let gone = self.chunks.remove(i);
            self.mapped -= gone.len;
        }
    }
}

impl Chunk {
    /// A new chunk of at least `min` bytes (whole huge pages), or `None` if mapping fails.
    fn map(id: u64, min: usize) -> Option<Chunk> {
        let len = min.div_ceil(HUGE_PAGE) * HUGE_PAGE;
        // One huge page more than needed, so a 2 MiB-aligned start lies inside; the slack is
        // never touched, so it costs address space only.
        let mut map = memmap2::MmapMut::map_anon(len + HUGE_PAGE).ok()?;
        let addr = map.as_mut_ptr() as usize;
        let skip = addr.next_multiple_of(HUGE_PAGE) - addr;
        #[cfg(target_os = "linux")]
        {
            // Without huge pages (THP disabled) the arena still packs filters densely.
            let _ = map.advise_range(memmap2::Advice::HugePage, skip, len);
        }
        // SAFETY: `skip < HUGE_PAGE`, so `skip .. skip + len` is inside the mapping.
        let base = unsafe { map.as_mut_ptr().add(skip) };
        Some(Chunk { id, _map: map, base, len, free: BTreeMap::from([(0, len)]), used: 0 })
    }

    /// The offset of the first free extent that holds `piece` bytes.
    fn first_fit(&self, piece: usize) -> Option<usize> {
        self.free.iter().find(|&(_, &len)| len >= piece).map(|(&off, _)| off)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Random takes and returns through the process-wide arena, against a model: contents
    /// survive, pieces start on cache lines and never overlap (the figures and reuse are
    /// checked on a private arena below, which no other test touches).
    #[test]
    fn pieces_keep_their_bytes_never_overlap_and_are_reused() {
        let mut rng = SplitMix64::new(11);
        let mut live: Vec<(HugeBuf, Vec<u8>)> = Vec::new();
        for step in 0..3000u32 {
            if live.len() > 40 || (!live.is_empty() && rng.below(3) == 0) {
                let i = rng.below(live.len() as u64) as usize;
                let (buf, want) = live.swap_remove(i);
                assert_eq!(&buf[..], &want[..], "step {step}");
            } else {
                // Mostly filter-sized pieces, now and then one larger than a chunk.
                let len = if rng.below(50) == 0 {
                    HUGE_PAGE + rng.below(300_000) as usize
                } else {
                    1 + rng.below(200_000) as usize
                };
                let want: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                let buf = HugeBuf::copy_of(&want).expect("the arena maps memory");
                assert_eq!(buf.ptr as usize % ALIGN, 0, "pieces start on cache lines");
                assert!(buf.piece_bytes() >= len && buf.piece_bytes() < len + ALIGN);
                live.push((buf, want));
            }
            let mut spans: Vec<(usize, usize)> =
                live.iter().map(|(b, _)| (b.ptr as usize, b.piece_bytes())).collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping pieces at step {step}");
            }
        }
        for (buf, want) in &live {
            assert_eq!(&buf[..], &want[..]);
        }
    }

    /// A private arena under random takes and returns: its in-use figure is the live pieces'
    /// sum, emptied chunks go (one standard spare stays), and a freed place is taken again.
    #[test]
    fn the_figures_follow_the_pieces_and_freed_space_is_reused() {
        let mut rng = SplitMix64::new(5);
        let mut a = Arena::new();
        let mut live: Vec<(u64, usize, usize)> = Vec::new();
        for _ in 0..2000 {
            if live.len() > 30 || (!live.is_empty() && rng.below(2) == 0) {
                let (id, off, n) = live.swap_remove(rng.below(live.len() as u64) as usize);
                a.give_back(id, off, n);
            } else {
                let most = if rng.below(40) == 0 { 40_000 } else { 3000 };
                let n = ALIGN * (1 + rng.below(most)) as usize;
                let (id, off, _) = a.take(n).unwrap();
                live.push((id, off, n));
            }
            assert_eq!(a.in_use, live.iter().map(|p| p.2).sum::<usize>());
            assert_eq!(a.mapped, a.chunks.iter().map(|c| c.len).sum::<usize>());
        }
        for (id, off, n) in live.drain(..) {
            a.give_back(id, off, n);
        }
        assert_eq!(a.in_use, 0);
        assert_eq!(a.chunks.len(), 1, "one empty chunk stays as the spare");
        assert_eq!(a.mapped, HUGE_PAGE, "and it is a standard one");
        let (id, off, _) = a.take(4096).unwrap();
        assert_eq!((id, off), (a.chunks[0].id, 0), "the spare's space is taken again");
        a.give_back(id, off, 4096);
        // An oversized chunk is unmapped as soon as it empties, even with no other spare.
        let mut b = Arena::new();
        let big = b.take(3 * HUGE_PAGE).unwrap();
        assert_eq!(b.mapped, 3 * HUGE_PAGE, "whole huge pages, the alignment slack not counted");
        b.give_back(big.0, big.1, 3 * HUGE_PAGE);
        assert_eq!((b.chunks.len(), b.mapped), (0, 0));
    }

    #[test]
    fn an_empty_slice_is_not_copied() {
        assert!(HugeBuf::copy_of(&[]).is_none());
    }

    #[test]
    fn freed_neighbours_merge_into_one_extent() {
        let mut a = Arena::new();
        let p: Vec<_> = (0..4).map(|_| a.take(1024).unwrap()).collect();
        assert_eq!(a.chunks.len(), 1);
        assert_eq!(p.iter().map(|x| x.1).collect::<Vec<_>>(), vec![0, 1024, 2048, 3072]);
        a.give_back(p[1].0, p[1].1, 1024);
        a.give_back(p[2].0, p[2].1, 1024);
        assert_eq!(a.chunks[0].free.get(&1024), Some(&2048), "two neighbours merged");
        a.give_back(p[0].0, p[0].1, 1024);
        a.give_back(p[3].0, p[3].1, 1024);
        assert_eq!(a.chunks[0].free.len(), 1, "all merged back into one extent");
        assert_eq!(a.chunks[0].free.get(&0), Some(&HUGE_PAGE));
        assert_eq!(a.chunks.len(), 1, "the only empty chunk is kept as the spare");
        // A second chunk emptied while the first is empty is unmapped.
        let big = a.take(HUGE_PAGE).unwrap();
        let (id0, id1) = (a.chunks[0].id, big.0);
        assert_eq!(a.chunks[0].used, HUGE_PAGE, "the spare took it first");
        let extra = a.take(64).unwrap();
        assert_ne!(extra.0, id0);
        a.give_back(id1, big.1, HUGE_PAGE);
        a.give_back(extra.0, extra.1, 64);
        assert_eq!(a.chunks.len(), 1);
    }
}
