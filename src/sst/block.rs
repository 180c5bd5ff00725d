//! Data and index blocks: sorted key/value entries with prefix-compressed keys and restart
//! points (the LevelDB block layout; docs/format.md#sstable, "Block contents").
//!
//! ```text
//! block    := entry* restarts:u32* num_restarts:u32
//! entry    := shared:varint32 unshared:varint32 value_len:varint32 key_delta value
//! ```
//! Every `restart_interval`-th entry is a restart point: it stores its whole key (`shared = 0`)
//! and its offset is listed in the trailer, so a seek binary-searches the restart points and then
//! scans at most `restart_interval` entries. Keys are internal keys ([`crate::ikey`]) ordered by
//! [`crate::ikey::compare`], in data blocks and index blocks alike.

use crate::error::{Error, Result};
use crate::heap;
use crate::sst::format::{get_varint32, put_varint32, MAX_BLOCK_LEN};
use std::sync::Arc;

pub use crate::sst::block_iter::BlockIter;

/// Accumulates sorted entries into the bytes of one block.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    /// Entries added since the last restart point.
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// An empty builder that places a restart point every `restart_interval` entries (min 1).
    pub fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Appends an entry. The caller guarantees `key` sorts after every key added before (the
    /// table builder checks it) and that the block stays below [`MAX_BLOCK_LEN`].
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self.last_key.iter().zip(key).take_while(|(a, b)| a == b).count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
        self.entries += 1;
    }

    /// Size of the block if it were finished now.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// True when no entry was added since the last `finish`.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Gives a buffer returned by [`BlockBuilder::finish`] back, so the next block is built in
    /// it instead of a vector grown from empty. Call it before adding to the next block.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.buf.is_empty() && buf.capacity() > self.buf.capacity() {
            buf.clear();
            self.buf = buf;
        }
    }

    /// Returns the finished block bytes and resets the builder for the next block.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        debug_assert!(out.len() <= MAX_BLOCK_LEN);
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
        out
    }
}

/// One decoded entry header: where its key delta and value lie (offsets into the block).
pub(crate) struct Entry {
    /// Bytes of the previous key this entry's key starts with.
    pub(crate) shared: usize,
    /// `(offset, len)` of the key bytes after the shared prefix.
    pub(crate) delta: (usize, usize),
    /// `(offset, len)` of the value.
    pub(crate) value: (usize, usize),
    /// Offset just past the entry.
    pub(crate) end: usize,
}

/// Starts loading cache lines of `bytes` (a hint: nothing is read): one every `stride` bytes
/// from its start, at most `lines` of them, and the line of its last byte.
#[inline]
pub(crate) fn prefetch_span(bytes: &[u8], stride: usize, lines: usize) {
    for part in bytes.chunks(stride.max(1)).take(lines) {
        crate::filter::prefetch_read(part.as_ptr());
    }
    if let Some(last) = bytes.last() {
        crate::filter::prefetch_read(last);
    }
}

/// A varint32 with the one-byte case (every length below 128, nearly all of them) inline.
#[inline(always)]
fn varint32(area: &[u8], pos: &mut usize, field: &str) -> Result<u32> {
    match area.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Ok(b as u32)
        }
        _ => get_varint32(area, pos, field),
    }
}

/// The decoded (decompressed) contents of one block, validated enough to iterate safely: the
/// restart array lies inside the block. Entries are checked as they are read.
#[derive(Debug)]
pub struct Block {
    data: Vec<u8>,
    restarts_offset: usize,
    num_restarts: usize,
}

impl Block {
    /// Wraps block contents, checking the restart trailer. Offsets in errors are relative to the
    /// block start.
    pub fn new(data: Vec<u8>) -> Result<Block> {
        let len = data.len();
        if len < 4 {
            return Err(Error::corruption(format!("block of {len} bytes has no trailer"), Some(0)));
        }
        let num_restarts =
            u32::from_le_bytes(data[len - 4..].try_into().expect("4 bytes")) as usize;
        let restarts_offset = num_restarts
            .checked_mul(4)
            .and_then(|n| (len - 4).checked_sub(n))
            .filter(|_| num_restarts > 0)
            .ok_or_else(|| {
                Error::corruption(
                    format!("block restart count {num_restarts} does not fit in {len} bytes"),
                    Some(len as u64 - 4),
                )
            })?;
        Ok(Block { data, restarts_offset, num_restarts })
    }

    /// Bytes of block contents.
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// Bytes of heap memory the contents occupy (at least `size()`; what the cache charges).
    pub fn memory_bytes(&self) -> usize {
        self.data.capacity()
    }

    /// Bytes an `Arc<Block>` of these contents holds on the heap, allocator headers included:
    /// the contents' buffer and the `Arc`'s own allocation (what the block cache charges a data
    /// block; `crate::heap`).
    pub(crate) fn arc_heap_bytes(&self) -> usize {
        heap::alloc_bytes(self.data.capacity()) + heap::arc_bytes::<Block>()
    }

    /// The contents' buffer, for reuse once the block is no longer shared.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// An iterator positioned nowhere (call a seek first).
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter::new(Arc::clone(self))
    }

    /// The raw contents.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Starts loading the cache line of restart slot `i` (a hint; nothing when out of range).
    #[inline]
    pub(crate) fn prefetch_restart_slot(&self, i: usize) {
        if let Some(b) = self.data.get(self.restarts_offset + 4 * i) {
            crate::filter::prefetch_read(b);
        }
    }

    /// Starts loading the first and last lines of the `len` bytes at `off` (a hint; the part
    /// out of range is left alone).
    #[inline]
    pub(crate) fn prefetch_at(&self, off: usize, len: usize) {
        let end = off.saturating_add(len).min(self.data.len());
        if let Some(span) = self.data.get(off..end) {
            prefetch_span(span, span.len(), 1);
        }
    }

    /// Starts loading the block's cache lines (a hint: nothing is read or checked), for a
    /// search that will run on it a little later: every other line, the core's adjacent-line
    /// prefetcher bringing its pair, and the last line (the restart array's end).
    pub(crate) fn prefetch(&self) {
        prefetch_span(&self.data, 128, usize::MAX);
    }

    /// End of the entry area (start of the restart array).
    pub(crate) fn restarts_offset(&self) -> usize {
        self.restarts_offset
    }

    /// Number of restart points (at least 1).
    pub(crate) fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// Decodes the entry header at `off`, bounds-checking every length against the entry area.
    #[inline]
    pub(crate) fn entry_at(&self, off: usize) -> Result<Entry> {
        let limit = self.restarts_offset;
        let area = &self.data[..limit];
        let mut pos = off;
        let shared = varint32(area, &mut pos, "block entry shared length")? as usize;
        let unshared = varint32(area, &mut pos, "block entry key length")? as usize;
        let vlen = varint32(area, &mut pos, "block entry value length")? as usize;
        let key_end = pos + unshared; // cannot overflow: both below 2^33
        let end = key_end + vlen;
        if end > limit {
            return Err(Error::corruption(
                format!("block entry of {unshared}+{vlen} bytes runs past the entries"),
                Some(off as u64),
            ));
        }
        Ok(Entry { shared, delta: (pos, unshared), value: (key_end, vlen), end })
    }

    /// The entry at `off`, which must be a restart entry (`shared = 0`): its whole key, its
    /// value, and the offset just past it.
    #[inline]
    pub(crate) fn restart_entry_at(&self, off: usize) -> Result<(&[u8], &[u8], usize)> {
        let e = self.entry_at(off)?;
        if e.shared != 0 {
            return Err(Error::corruption("restart entry has a shared prefix", Some(off as u64)));
        }
        Ok((
            &self.data[e.delta.0..e.delta.0 + e.delta.1],
            &self.data[e.value.0..e.value.0 + e.value.1],
            e.end,
        ))
    }

    /// Offset of the entry at restart point `i`, checked to lie in the entry area.
    pub(crate) fn restart_point(&self, i: usize) -> Result<usize> {
        let at = self.restarts_offset + 4 * i;
        let off = u32::from_le_bytes(self.data[at..at + 4].try_into().expect("4 bytes")) as usize;
        if off >= self.restarts_offset && !(off == 0 && self.restarts_offset == 0) {
            return Err(Error::corruption(
                format!("restart point {i} = {off} lies outside the entries"),
                Some(at as u64),
            ));
        }
        Ok(off)
    }
}

/// A value's bytes inside a data block, holding the block: a value read without a copy
/// ([`crate::PinnedValue`]). Equality and `Debug` are those of the bytes.
#[derive(Clone)]
pub struct BlockSlice {
    block: std::sync::Arc<Block>,
    range: std::ops::Range<usize>,
}

impl BlockSlice {
    /// The bytes `range` of `block` (`range` within `block.data()`).
    pub(crate) fn new(block: std::sync::Arc<Block>, range: std::ops::Range<usize>) -> BlockSlice {
        debug_assert!(range.end <= block.data().len());
        BlockSlice { block, range }
    }

    /// The value's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // The range was cut from this block's own data, which never changes.
        self.block.data().get(self.range.clone()).unwrap_or_default()
    }
}

impl PartialEq for BlockSlice {
    fn eq(&self, other: &BlockSlice) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for BlockSlice {}

impl std::fmt::Debug for BlockSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BlockSlice").field(&self.as_bytes()).finish()
    }
}
