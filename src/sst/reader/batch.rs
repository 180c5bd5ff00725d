//! The pieces of a point lookup that batched lookups (`Db::multi_get`, src/db/multi_get.rs)
//! run apart: find each key's data block through the index, fetch the blocks (cache hits at
//! once, device reads collected to be made together), then finish each key with
//! [`Table::get_past_filter_from`] on the block it was handed.
//!
//! Counting: every consultation of a data block counts `data_blocks_read` and, with a cache, a
//! hit or a miss, as [`Table::data_block`] does; a read counts `file_reads` and
//! `file_read_bytes` once, when its bytes are installed. A block two keys of a batch need is
//! read once: the second key counts as the cache hit it would have been for a single lookup.

use super::*;
use crate::storage::direct::SpanBytes;

/// How a key's first data block is obtained after a block cache miss
/// ([`Table::read_data_block`]).
pub(crate) enum BlockFetch {
    /// Read now (buffered or mapped file): just decoded, in the CPU's caches.
    Ready(Arc<Block>),
    /// A device read to make (a file read with `O_DIRECT`): `len` framed bytes at `offset` of
    /// `file`, then [`Table::install_read`].
    Device {
        /// The table's file (kept open by this reference until the read is done).
        file: Arc<dyn RandomAccessFile>,
        /// First byte of the framed block.
        offset: u64,
        /// Framed length: contents plus trailer.
        len: usize,
    },
}

/// Lines of a mapped block's framed bytes [`Table::probe_data_block`] starts loading on a miss:
/// the trailer's line (read first, by the checksum check) and the first eight, enough for a
/// compressed block of a few hundred bytes; past them, the decoder's sequential reads keep the
/// core's stream prefetcher ahead.
const MAPPED_PREFETCH_LINES: usize = 8;

impl Table {
    /// The handle of the data block where the versions of `user_key` of `keyspace` at
    /// `snapshot_seq` would start (`None`: past the last block, the table does not hold it).
    /// Counts the index read.
    pub(crate) fn data_block_handle(
        &self,
        keyspace: u32,
        user_key: &[u8],
        snapshot_seq: u64,
        counters: &ReadCounters,
    ) -> Result<Option<BlockHandle>> {
        let Some(keyspace) = self.stored_keyspace(keyspace) else { return Ok(None) };
        counters.bump(&counters.index_blocks_read);
        let index_entry = self.index_entry(Some(counters))?;
        let target = ikey::LookupKey::new(keyspace, user_key, snapshot_seq);
        self.data_handle_for(&index_entry, target.as_bytes(), Some(counters))
    }

    /// Starts loading what [`Table::data_block_handle`] of `user_key` will read from the
    /// index, one step per `stage` (`IndexSearch::prefetch`); only for an index the table
    /// holds and searches by prefix (a cached or partitioned one is left alone: finding it
    /// costs a cache lookup).
    pub(crate) fn prefetch_index(&self, keyspace: u32, user_key: &[u8], stage: u8) {
        let (Held::Here(entry), None) = (&self.index, &self.index_parts) else { return };
        let (Some(search), Some(keyspace)) = (&entry.search, self.stored_keyspace(keyspace)) else {
            return;
        };
        search.prefetch(&entry.block, keyspace, user_key, stage);
    }

    /// The block cache's copy of data block `h`, counting the consultation (a hit or a miss);
    /// on a miss in a mapped file, starts loading the block's framed bytes, so that the
    /// [`Table::read_data_block`] that follows a little later finds them in the CPU's caches.
    pub(crate) fn probe_data_block(
        &self,
        h: BlockHandle,
        counters: &ReadCounters,
    ) -> Option<Arc<Block>> {
        counters.bump(&counters.data_blocks_read);
        if let Some(cache) = &self.cache {
            if let Some(b) = cache.get(self.number, h.offset) {
                counters.bump(&counters.block_cache_hits);
                return Some(b);
            }
            counters.bump(&counters.block_cache_misses);
        }
        let framed = self.file.as_bytes().and_then(|bytes| {
            let start = usize::try_from(h.offset).ok()?;
            // Not yet checked against the file (`read_data` does): a wild size only finds no
            // slice.
            let len = usize::try_from(h.size).ok()?.checked_add(BLOCK_TRAILER_LEN)?;
            bytes.get(start..start.checked_add(len)?)
        });
        if let Some(framed) = framed {
            crate::sst::block::prefetch_span(framed, 64, MAPPED_PREFETCH_LINES);
        }
        None
    }

    /// Data block `h` after [`Table::probe_data_block`] missed: when `defer` and the file is
    /// read with `O_DIRECT`, the device read to make, else the block read now.
    pub(crate) fn read_data_block(
        &self,
        h: BlockHandle,
        counters: &ReadCounters,
        defer: bool,
    ) -> Result<BlockFetch> {
        if defer && self.file.direct_fd().is_some() {
            self.check_handle(h)?;
            let len = h.size as usize + BLOCK_TRAILER_LEN;
            return Ok(BlockFetch::Device { file: Arc::clone(&self.file), offset: h.offset, len });
        }
        let raw = self.read_data(h)?;
        self.install(h, raw, counters).map(BlockFetch::Ready)
    }

    /// Counts a lookup served by a block that another key of the same batch fetched (see the
    /// module documentation).
    pub(crate) fn count_shared_block(&self, counters: &ReadCounters) {
        counters.bump(&counters.data_blocks_read);
        if self.cache.is_some() {
            counters.bump(&counters.block_cache_hits);
        }
    }

    /// Finishes a [`BlockFetch::Device`] of block `h` with what the batched read gave: its
    /// bytes, its error, or `None` (not read: read it now, the ordinary way). Verifies the
    /// block, counts the read and fills the cache.
    pub(crate) fn install_read(
        &self,
        h: BlockHandle,
        read: Option<std::io::Result<SpanBytes>>,
        counters: &ReadCounters,
    ) -> Result<Arc<Block>> {
        let raw = match read {
            None => self.read_data(h)?,
            Some(Err(e)) => {
                let e = Error::io(format!("reading (O_DIRECT) {}", self.path.display()), e);
                return Err(self.err_at(e, h));
            }
            Some(Ok(bytes)) => {
                unframe_block_with(bytes.bytes(), self.dict.as_ref(), buffers::take_buffer)
                    .map_err(|e| self.err_at(e, h))?
            }
        };
        self.install(h, raw, counters)
    }

    /// The tail of [`Table::data_block`]'s miss path: counts the file read, builds the block
    /// from its contents and inserts it into the cache.
    fn install(&self, h: BlockHandle, raw: Vec<u8>, counters: &ReadCounters) -> Result<Arc<Block>> {
        counters.bump(&counters.file_reads);
        counters.add(&counters.file_read_bytes, h.size + BLOCK_TRAILER_LEN as u64);
        let block = Arc::new(Block::new(raw).map_err(|e| self.err_at(e, h))?);
        if let Some(cache) = self.cache.as_ref().filter(|c| c.admits(self.number, h.offset)) {
            let charge = block.arc_heap_bytes();
            buffers::with_evicted(|evicted| {
                cache.insert_evicting(self.number, h.offset, Arc::clone(&block), charge, evicted)
            });
        }
        Ok(block)
    }
}
