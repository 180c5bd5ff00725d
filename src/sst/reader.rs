//! [`Table`]: an open SST. Open reads and verifies the footer, properties, index and filter
//! blocks and keeps them in memory; a point lookup probes the filter first, and only when it
//! answers "maybe" reads the (in-memory) index and one data block through the block cache.
//!
//! Thread safety: a `Table` is immutable after open and `Send + Sync`; share it with `Arc`.
//! Lookups from many threads proceed in parallel (the cache shards are the only locks).

use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::filter::{Filter, FilterView};
use crate::ikey::{self, ValueKind};
use crate::sst::block::Block;
use crate::sst::format::{unframe_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::sst::owned_filter::TableFilter;
use crate::sst::properties::TableProperties;
use crate::sst::table_iter::TableIter;
use crate::storage::RandomAccessFile;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The outcome of [`Table::get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetResult {
    /// The newest version visible at the snapshot is a Put of this value.
    Found(Vec<u8>),
    /// The newest version visible at the snapshot is a tombstone: older tables must not be
    /// consulted.
    Deleted,
    /// This table has no version of the key visible at the snapshot.
    NotFound,
}

/// Read-path counters. The engine keeps one per level and maps the fields to RocksDB ticker
/// names; all fields count events (relaxed atomics, safe to share between threads).
#[derive(Debug, Default)]
pub struct ReadCounters {
    /// Lookups that probed a filter (`filter_useful + filter_positive`).
    pub filter_checks: AtomicU64,
    /// Filter answered "absent": the lookup ended without reading a block
    /// (RocksDB `rocksdb.bloom.filter.useful`).
    pub filter_useful: AtomicU64,
    /// Filter answered "maybe" (`rocksdb.bloom.filter.full.positive`).
    pub filter_positive: AtomicU64,
    /// Filter answered "maybe" and the table held the key as a Put or a tombstone
    /// (`rocksdb.bloom.filter.full.true.positive`).
    pub filter_true_positive: AtomicU64,
    /// Lookups in tables whose filter kind this build does not know (treated as "maybe").
    pub filter_unusable: AtomicU64,
    /// Index blocks consulted (the index is pinned in memory: one per lookup past the filter).
    pub index_blocks_read: AtomicU64,
    /// Data blocks consulted, from the cache or the file.
    pub data_blocks_read: AtomicU64,
    /// Data blocks served by the block cache.
    pub block_cache_hits: AtomicU64,
    /// Data blocks looked up in an enabled cache and read from the file.
    pub block_cache_misses: AtomicU64,
}

/// A plain copy of [`ReadCounters`] at one moment (same field meanings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// See [`ReadCounters::filter_checks`].
    pub filter_checks: u64,
    /// See [`ReadCounters::filter_useful`].
    pub filter_useful: u64,
    /// See [`ReadCounters::filter_positive`].
    pub filter_positive: u64,
    /// See [`ReadCounters::filter_true_positive`].
    pub filter_true_positive: u64,
    /// See [`ReadCounters::filter_unusable`].
    pub filter_unusable: u64,
    /// See [`ReadCounters::index_blocks_read`].
    pub index_blocks_read: u64,
    /// See [`ReadCounters::data_blocks_read`].
    pub data_blocks_read: u64,
    /// See [`ReadCounters::block_cache_hits`].
    pub block_cache_hits: u64,
    /// See [`ReadCounters::block_cache_misses`].
    pub block_cache_misses: u64,
}

impl ReadStats {
    /// False positives: "maybe" answers for keys the table did not hold.
    pub fn false_positives(&self) -> u64 {
        self.filter_positive.saturating_sub(self.filter_true_positive)
    }

    /// Observed FPR = false positives / (false positives + useful), as RocksDB users compute it
    /// from the tickers; `None` before any negative probe.
    pub fn observed_fpr(&self) -> Option<f64> {
        let negatives = self.false_positives() + self.filter_useful;
        (negatives > 0).then(|| self.false_positives() as f64 / negatives as f64)
    }

    /// Field-wise sum.
    pub fn plus(&self, o: &ReadStats) -> ReadStats {
        self.zip(o, u64::wrapping_add)
    }

    /// Field-wise difference (counts accumulated since the earlier snapshot `o`).
    pub fn minus(&self, o: &ReadStats) -> ReadStats {
        self.zip(o, u64::saturating_sub)
    }

    fn zip(&self, o: &ReadStats, f: fn(u64, u64) -> u64) -> ReadStats {
        ReadStats {
            filter_checks: f(self.filter_checks, o.filter_checks),
            filter_useful: f(self.filter_useful, o.filter_useful),
            filter_positive: f(self.filter_positive, o.filter_positive),
            filter_true_positive: f(self.filter_true_positive, o.filter_true_positive),
            filter_unusable: f(self.filter_unusable, o.filter_unusable),
            index_blocks_read: f(self.index_blocks_read, o.index_blocks_read),
            data_blocks_read: f(self.data_blocks_read, o.data_blocks_read),
            block_cache_hits: f(self.block_cache_hits, o.block_cache_hits),
            block_cache_misses: f(self.block_cache_misses, o.block_cache_misses),
        }
    }
}

impl ReadCounters {
    /// All counters at zero.
    pub fn new() -> ReadCounters {
        ReadCounters::default()
    }

    /// The current values.
    pub fn snapshot(&self) -> ReadStats {
        ReadStats {
            filter_checks: self.filter_checks.load(Relaxed),
            filter_useful: self.filter_useful.load(Relaxed),
            filter_positive: self.filter_positive.load(Relaxed),
            filter_true_positive: self.filter_true_positive.load(Relaxed),
            filter_unusable: self.filter_unusable.load(Relaxed),
            index_blocks_read: self.index_blocks_read.load(Relaxed),
            data_blocks_read: self.data_blocks_read.load(Relaxed),
            block_cache_hits: self.block_cache_hits.load(Relaxed),
            block_cache_misses: self.block_cache_misses.load(Relaxed),
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// An open SST. See the module documentation.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    number: u64,
    path: PathBuf,
    cache: Option<Arc<BlockCache>>,
    footer: Footer,
    props: TableProperties,
    index: Arc<Block>,
    filter: TableFilter,
    size: u64,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("number", &self.number)
            .field("path", &self.path)
            .field("size", &self.size)
            .field("entries", &self.props.entries)
            .field("filter", &self.filter)
            .finish()
    }
}

impl Table {
    /// Opens table `file_number` (its number keys the block cache), verifying the footer, the
    /// properties, index and filter blocks. `path` only labels errors. A disabled cache
    /// (capacity 0) is the same as `None`.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        path: impl AsRef<Path>,
    ) -> Result<Table> {
        let path = path.as_ref().to_path_buf();
        let size = file.len();
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                format!("file of {size} bytes is too short to be an SST (footer is 64 bytes)"),
                Some(0),
            )
            .in_file(&path, 0));
        }
        let footer_at = size - FOOTER_LEN as u64;
        let mut fb = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_at, &mut fb).map_err(|e| e.in_file(&path, footer_at))?;
        let footer = Footer::decode(&fb).map_err(|e| e.in_file(&path, footer_at))?;
        let cache = cache.filter(|c| c.is_enabled());
        let mut t = Table {
            file,
            number: file_number,
            path,
            cache,
            footer,
            props: TableProperties::default(),
            index: Arc::new(Block::new(vec![0, 0, 0, 0, 1, 0, 0, 0])?),
            filter: TableFilter::Absent,
            size,
        };
        let raw = t.read_raw(footer.properties)?;
        t.props = TableProperties::decode(&raw).map_err(|e| t.err_at(e, footer.properties))?;
        if t.props.format_version != footer.version {
            let e = Error::corruption("properties and footer disagree on the format version", None);
            return Err(t.err_at(e, footer.properties));
        }
        let raw = t.read_raw(footer.index)?;
        t.index = Arc::new(Block::new(raw).map_err(|e| t.err_at(e, footer.index))?);
        if footer.filter.size > 0 {
            let raw = t.read_raw(footer.filter)?;
            t.filter = TableFilter::parse(raw).map_err(|e| t.err_at(e, footer.filter))?;
            let tag = match &t.filter {
                TableFilter::Loaded(f) => f.view().kind().tag(),
                TableFilter::Unknown { tag, .. } => *tag,
                TableFilter::Absent => 0,
            };
            if tag != t.props.filter_kind {
                let e = Error::corruption("filter block kind differs from properties", None);
                return Err(t.err_at(e, footer.filter));
            }
        }
        Ok(t)
    }

    fn err_at(&self, e: Error, h: BlockHandle) -> Error {
        e.in_file(&self.path, h.offset)
    }

    /// Reads and verifies one block's contents (decompressed). The handle must lie before the
    /// footer, which bounds the allocation by the file size.
    fn read_raw(&self, h: BlockHandle) -> Result<Vec<u8>> {
        let limit = self.size - FOOTER_LEN as u64;
        if h.end() > limit || h.end() == u64::MAX {
            let e = Error::corruption(
                format!(
                    "block handle {}+{} runs past the data (ends at {limit})",
                    h.offset, h.size
                ),
                None,
            );
            return Err(self.err_at(e, h));
        }
        let framed = self.file.read_at(h.offset, (h.size as usize) + BLOCK_TRAILER_LEN);
        unframe_block(framed.map_err(|e| self.err_at(e, h))?).map_err(|e| self.err_at(e, h))
    }

    /// A data block via the cache. `counters` (lookups only) records cache hits and misses;
    /// `fill_cache = false` (compaction scans) reads around the cache without inserting.
    pub(crate) fn data_block(
        &self,
        h: BlockHandle,
        counters: Option<&ReadCounters>,
        fill_cache: bool,
    ) -> Result<Arc<Block>> {
        if let Some(c) = counters {
            bump(&c.data_blocks_read);
        }
        if let Some(cache) = &self.cache {
            if let Some(b) = cache.get(self.number, h.offset) {
                counters.inspect(|c| bump(&c.block_cache_hits));
                return Ok(b);
            }
            counters.inspect(|c| bump(&c.block_cache_misses));
        }
        let raw = self.read_raw(h)?;
        let block = Arc::new(Block::new(raw).map_err(|e| self.err_at(e, h))?);
        if fill_cache {
            if let Some(cache) = &self.cache {
                cache.insert(self.number, h.offset, Arc::clone(&block), block.size());
            }
        }
        Ok(block)
    }

    /// The newest version of `user_key` with sequence number `<= snapshot_seq`.
    ///
    /// `key_hash` must be [`crate::filter::hash_key`]`(user_key)` (hashed once by the caller
    /// for all tables). Order of work: the key range from the properties (no counters), then
    /// the filter (if it says "absent": `NotFound` with no block read), then the index and one
    /// data block.
    pub fn get(
        &self,
        user_key: &[u8],
        key_hash: u64,
        snapshot_seq: u64,
        counters: &ReadCounters,
    ) -> Result<GetResult> {
        if self.props.entries == 0
            || user_key < ikey::user_key(&self.props.smallest_key)
            || user_key > ikey::user_key(&self.props.largest_key)
        {
            return Ok(GetResult::NotFound);
        }
        let mut positive = false;
        match &self.filter {
            TableFilter::Loaded(f) => {
                bump(&counters.filter_checks);
                if !f.view().contains_hash(key_hash) {
                    bump(&counters.filter_useful);
                    return Ok(GetResult::NotFound);
                }
                bump(&counters.filter_positive);
                positive = true;
            }
            TableFilter::Unknown { .. } => bump(&counters.filter_unusable),
            TableFilter::Absent => {}
        }
        bump(&counters.index_blocks_read);
        let lookup = ikey::lookup_key(user_key, snapshot_seq);
        let mut index = self.index.iter();
        index.seek(&lookup).map_err(|e| self.err_at(e, self.footer.index))?;
        if !index.valid() {
            return Ok(GetResult::NotFound);
        }
        let h =
            BlockHandle::decode(index.value()).map_err(|e| self.err_at(e, self.footer.index))?;
        let block = self.data_block(h, Some(counters), true)?;
        let mut it = block.iter();
        it.seek(&lookup).map_err(|e| self.err_at(e, h))?;
        if !it.valid() {
            // The separator after this block sorts before the next block's user keys, so the
            // key cannot be in the next block either.
            return Ok(GetResult::NotFound);
        }
        let (found_key, _, kind) = ikey::decode(it.key()).map_err(|e| self.err_at(e, h))?;
        if found_key != user_key {
            return Ok(GetResult::NotFound);
        }
        if positive {
            bump(&counters.filter_true_positive);
        }
        Ok(match kind {
            ValueKind::Put => GetResult::Found(it.value().to_vec()),
            ValueKind::Delete => GetResult::Deleted,
        })
    }

    /// An iterator over all entries in internal-key order. `fill_cache = false` keeps a
    /// one-pass scan (compaction) from evicting the working set.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIter {
        TableIter::new(Arc::clone(self), fill_cache)
    }

    /// The filter as a probe-able view (`None` without a filter or with an unknown kind).
    pub fn filter(&self) -> Option<&FilterView<'_>> {
        match &self.filter {
            TableFilter::Loaded(f) => Some(f.view()),
            _ => None,
        }
    }

    /// Bytes of memory held by the filter block.
    pub fn filter_memory_bytes(&self) -> usize {
        self.filter.memory_bytes()
    }

    /// Bytes of memory held by the index block.
    pub fn index_memory_bytes(&self) -> usize {
        self.index.size()
    }

    /// The properties block.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The file number given at open.
    pub fn file_number(&self) -> u64 {
        self.number
    }

    /// The file size in bytes.
    pub fn file_size(&self) -> u64 {
        self.size
    }

    /// The path given at open.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn index_block(&self) -> &Arc<Block> {
        &self.index
    }

    pub(crate) fn index_handle(&self) -> BlockHandle {
        self.footer.index
    }
}
