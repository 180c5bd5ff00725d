//! [`Table`]: an open SST. Open reads and verifies the footer, properties, index and filter
//! blocks and keeps them in memory, or in the block cache ([`MetaPolicy`], src/sst/meta.rs); a
//! point lookup probes the filter first, and only when it answers "maybe" reads the index and
//! one data block through the block cache.
//!
//! When the file exposes its bytes ([`RandomAccessFile::as_bytes`], a memory-mapped SST), block
//! reads borrow the framed bytes from the map: no `pread`, no copy into a scratch buffer, and
//! zstd decompresses straight from the map into the block's buffer. Every handle is bounded
//! by the map's length first, so a truncated or corrupt file gives a corruption error.
//!
//! Thread safety: a `Table` is immutable after open and `Send + Sync`; share it with `Arc`.
//! Lookups from many threads proceed in parallel (the cache shards are the only locks).

use crate::error::{Error, Result};
use crate::filter::{Filter, FilterView};
use crate::heap;
use crate::ikey::{self, ValueKind};
use crate::range_del::Fragments;
use crate::sst::block::{Block, BlockIter, BlockSlice};
use crate::sst::buffers;
use crate::sst::cache_fill::CacheFill;
use crate::sst::compression::DecoderDict;
pub use crate::sst::counters::{ReadCounters, ReadStats};
use crate::sst::format::{
    unframe_block_with, unframe_owned, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use crate::sst::index::IndexSearch;
use crate::sst::meta::{Held, IndexEntry, MetaKind, MetaPolicy, MetaRef, Residence};
use crate::sst::owned_filter::{OwnedFilter, TableFilter};
use crate::sst::properties::TableProperties;
use crate::sst::scan_filters::ScanFilters;
use crate::sst::table_iter::TableIter;
use crate::sst::BlockCache;
use crate::storage::RandomAccessFile;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod batch;
mod partitioned;
mod partitioned_index;
pub(crate) use batch::BlockFetch;
use partitioned::Partitioned;
pub(crate) use partitioned_index::IndexCursor;
use partitioned_index::IndexParts;

/// What a lookup takes out of the block holding the value it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueOut {
    /// Nothing: the caller asks whether the key has a value (`Found` of an empty value).
    Nothing,
    /// A copy of the value (`Found`).
    Copy,
    /// The value in place, holding its block (`FoundInBlock`); a copy when merge operands
    /// wait for it, since they are merged onto it.
    Pin,
    /// [`ValueOut::Copy`], but a value kept in a blob file is returned as its reference
    /// (`Blob`) for the caller to read with others of its file (`multi_get`); a copy when
    /// merge operands wait for it.
    Reference,
}

/// The outcome of [`Table::get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetResult {
    /// The newest version visible at the snapshot is a Put of this value.
    Found(Vec<u8>),
    /// [`GetResult::Found`] of a value left in its data block (a lookup that pins).
    FoundInBlock(BlockSlice),
    /// The newest version visible at the snapshot is a tombstone: older tables must not be
    /// consulted.
    Deleted,
    /// This table has no version of the key visible at the snapshot.
    NotFound,
    /// The newest version visible at the snapshot is a Put of the value this blob reference
    /// names (only for [`ValueOut::Reference`]).
    Blob(super::blob::BlobRef),
}

/// What a table's key range and filter say about a key ([`Table::probe_filter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterVerdict {
    /// Outside the key range, or the filter said "absent": no block needs reading.
    Absent,
    /// The table may hold the key; `positive` when a filter said so (false without a usable
    /// filter).
    Maybe {
        /// A filter answered "maybe" (counts a true positive if the key is found).
        positive: bool,
    },
}

/// An adopted table's keyspace (design.md#ingestion-and-export): its keys are stored with the
/// id `stored` and read as `adopted`. Both are non-zero, so a key keeps its length, and every
/// key of a table has one keyspace (the builder enforces it), so replacing the id keeps the
/// table's order; only keys of `adopted` are in the table as it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Adoption {
    /// The id the file's keys carry.
    pub(crate) stored: u32,
    /// The id they are read as (the keyspace the manifest files the table under).
    pub(crate) adopted: u32,
}

/// Where a seek target of the adopted keyspace's order falls in an adopted table's stored
/// order ([`Adoption::stored_target`]).
pub(crate) enum StoredTarget {
    /// Of a smaller keyspace: before every key.
    Before,
    /// Of a larger keyspace: after every key.
    After,
    /// The same key with the stored id.
    Key(Vec<u8>),
}

impl Adoption {
    /// `target` (an internal key as read) in the stored order.
    pub(crate) fn stored_target(&self, target: &[u8]) -> StoredTarget {
        match ikey::keyspace(target).cmp(&self.adopted) {
            std::cmp::Ordering::Less => StoredTarget::Before,
            std::cmp::Ordering::Greater => StoredTarget::After,
            std::cmp::Ordering::Equal => {
                let mut k = target.to_vec();
                ikey::replace_keyspace(&mut k, self.adopted, self.stored);
                StoredTarget::Key(k)
            }
        }
    }
}

/// A (hit, miss) counter pair of [`ReadCounters`].
type HitMiss<'a> =
    (&'a ReadCounters, &'a std::sync::atomic::AtomicU64, &'a std::sync::atomic::AtomicU64);

/// An open SST. See the module documentation.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    number: u64,
    path: PathBuf,
    cache: Option<Arc<BlockCache>>,
    footer: Footer,
    props: TableProperties,
    /// The index block and its prefix search (src/sst/meta.rs: held here or in the cache).
    index: Held<IndexEntry>,
    /// The filter; a usable one is held here or in the cache like the index.
    filter: TableFilter<Held<OwnedFilter>>,
    /// Where the index and filter live; `Pinned` tables release their cache pins on drop.
    residence: Residence,
    /// Bytes the index entry and the filter take in memory when loaded (measured at open; a
    /// partitioned filter's top level plus all its partitions).
    index_bytes: usize,
    filter_bytes: usize,
    /// Bytes of the filter the table itself holds in `Owned` residence (the whole filter, or a
    /// partitioned filter's top level plus the partitions loaded at open without a cache).
    held_filter_bytes: usize,
    /// A partitioned filter (format version 4; `filter` is then `Absent`): its top level and,
    /// without a block cache, its partitions (src/sst/reader/partitioned.rs).
    partitioned: Option<Box<Partitioned>>,
    /// A partitioned index (format version 4; `index` is then its top level): without a block
    /// cache, its partitions (src/sst/reader/partitioned_index.rs).
    index_parts: Option<Box<IndexParts>>,
    /// The range-deletion block's tombstones, loaded at open (empty without one).
    range_dels: Fragments,
    /// The prefix and range filters (format version 5), loaded at open and held here.
    scan: ScanFilters,
    /// The zstd compression dictionary (format version 8), digested once at open and used by
    /// every data block decode (design.md#zstd-dictionaries).
    dict: Option<DecoderDict>,
    size: u64,
    /// An ingested table's global sequence number (design.md#ingestion-and-export): its
    /// entries are stored at sequence 0 and read at this one ([`Table::set_global_seq`]).
    global_seq: Option<u64>,
    /// An adopted table's keyspace ids ([`Table::adopt_keyspace`]).
    adoption: Option<Adoption>,
    /// Where the values of its `BlobIndex` entries are read (set by the table cache; `None`
    /// for a table opened alone, whose references then cannot be followed).
    blobs: Option<Arc<super::blob::BlobStore>>,
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
    /// properties, index and filter blocks, and keeping the index and filter in the table. `path`
    /// only labels errors. A disabled cache (capacity 0) is the same as `None`.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        path: impl AsRef<Path>,
    ) -> Result<Table> {
        Table::open_with(file, file_number, cache, path, MetaPolicy::default())
    }

    /// [`Table::open`] keeping the index and filter where `policy` says (src/sst/meta.rs): in
    /// the table, in the block cache, or pinned in it. Either way both are read and verified
    /// here.
    pub fn open_with(
        file: Arc<dyn RandomAccessFile>,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        path: impl AsRef<Path>,
        policy: MetaPolicy,
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
        let residence = policy.residence(cache.is_some());
        let mut t = Table {
            file,
            number: file_number,
            path,
            cache,
            footer,
            props: TableProperties::default(),
            index: Held::InCache,
            filter: TableFilter::Absent,
            residence: Residence::Owned, // nothing pinned yet: a failed open releases nothing
            index_bytes: 0,
            filter_bytes: 0,
            held_filter_bytes: 0,
            partitioned: None,
            index_parts: None,
            range_dels: Fragments::default(),
            scan: ScanFilters::default(),
            dict: None,
            size,
            global_seq: None,
            adoption: None,
            blobs: None,
        };
        let raw = t.read_raw(footer.properties)?;
        t.props = TableProperties::decode(&raw).map_err(|e| t.err_at(e, footer.properties))?;
        if t.props.format_version != footer.version {
            let e = Error::corruption("properties and footer disagree on the format version", None);
            return Err(t.err_at(e, footer.properties));
        }
        if t.props.range_deletions > 0 {
            let h = t.props.range_del_block;
            if t.props.format_version < 3 {
                let e = Error::corruption("range-deletion block in a table below version 3", None);
                return Err(t.err_at(e, footer.properties));
            }
            let raw = t.read_raw(h)?;
            let (frags, n) =
                crate::sst::range_del_block::decode(raw).map_err(|e| t.err_at(e, h))?;
            if n != t.props.range_deletions {
                let e = Error::corruption(
                    format!(
                        "range-deletion block holds {n} tombstones, properties say {}",
                        t.props.range_deletions
                    ),
                    None,
                );
                return Err(t.err_at(e, h));
            }
            t.range_dels = frags;
        }
        t.scan = t.load_scan_filters()?;
        t.dict = t.load_dictionary()?;
        // A reopen of a `Cached` table (the table cache closed it) finds its index and filter
        // still in the block cache: no read and no second verification.
        let cached_index = t.cached_at_open::<IndexEntry>(footer.index, residence);
        let index = match &cached_index {
            Some(v) => Arc::clone(v),
            None => Arc::new(t.load_index()?),
        };
        t.index_bytes = index.memory_bytes();
        if t.props.index_partitions > 0 {
            t.index_bytes += t.open_index_parts(&index)?;
        }
        t.index = match cached_index {
            Some(_) => Held::InCache,
            None => t.place(index, footer.index, residence),
        };
        // From here on a failed open must release the index pin: `residence` is set at once.
        t.residence = residence;
        if t.props.filter_partitions > 0 {
            t.open_partitioned(residence)?;
            return Ok(t);
        }
        let cached_filter = match footer.filter.size {
            0 => None,
            _ => t.cached_at_open::<OwnedFilter>(footer.filter, residence),
        };
        let filter = match (&cached_filter, footer.filter.size) {
            (Some(f), _) => TableFilter::Loaded(Arc::clone(f)),
            (None, 0) => TableFilter::Absent,
            (None, _) => {
                let on_huge_pages = residence == Residence::Owned && policy.huge_page_filters;
                t.load_filter(on_huge_pages)?.map_loaded(Arc::new)
            }
        };
        // The statistics' filter size is the block's; what the table holds is its `Arc`'s
        // allocations (nothing for a filter of an unknown kind: its bytes were dropped).
        let (tag, bytes, held) = match &filter {
            TableFilter::Loaded(f) => {
                (f.view().kind().tag(), f.view().memory_bytes(), f.memory_bytes())
            }
            TableFilter::Unknown { tag, bytes } => (*tag, *bytes, 0),
            TableFilter::Absent => (0, 0, 0),
        };
        t.filter_bytes = bytes;
        t.held_filter_bytes = held;
        if tag != t.props.filter_kind {
            let e = Error::corruption("filter block kind differs from properties", None);
            return Err(t.err_at(e, footer.filter));
        }
        t.filter = match cached_filter {
            Some(_) => TableFilter::Loaded(Held::InCache),
            None => filter.map_loaded(|f| t.place(f, footer.filter, residence)),
        };
        Ok(t)
    }

    /// Makes every entry and range tombstone of the table read at sequence `seq` (an ingested
    /// table: the manifest records its global sequence number, the file holds sequence 0).
    /// Every user key of such a table has one entry (`SstWriter` writes nothing else), so the
    /// rewritten keys keep the table's order and its index separators stay valid: a separator
    /// `(k, 0)` after a block's last key `k` still sorts at or after `(k, seq)`.
    pub(crate) fn set_global_seq(&mut self, seq: Option<u64>) {
        self.global_seq = seq;
        if let Some(seq) = seq {
            self.range_dels = std::mem::take(&mut self.range_dels).at_seq(seq);
        }
    }

    /// Makes the table's keys, stored with keyspace id `stored`, read as keys of `adopted` (an
    /// adopted table: the manifest records the stored id, tag 12). Refuses ids that are 0 or
    /// equal, and a table whose keys do not carry `stored` (the manifest and the file
    /// disagree): both corruption naming the file.
    pub(crate) fn adopt_keyspace(&mut self, stored: u32, adopted: u32) -> Result<()> {
        let bad = |what: String| Err(Error::corruption(what, None).in_file(&self.path, 0));
        if stored == ikey::DEFAULT_KEYSPACE
            || adopted == ikey::DEFAULT_KEYSPACE
            || stored == adopted
        {
            return bad(format!("keyspace adoption {stored} -> {adopted}: ids must differ from 0 and from each other"));
        }
        let held = if self.props.entries > 0 {
            let (lo, hi) =
                (ikey::keyspace(&self.props.smallest_key), ikey::keyspace(&self.props.largest_key));
            if lo != hi {
                return bad(format!("keys of keyspaces {lo} and {hi} in one table"));
            }
            Some(lo)
        } else {
            self.range_del_keyspace()?
        };
        if held.is_some_and(|ks| ks != stored) {
            return bad(format!(
                "the manifest says its keys carry keyspace {stored}, they carry {}",
                held.unwrap_or_default()
            ));
        }
        self.adoption = Some(Adoption { stored, adopted });
        Ok(())
    }

    /// An adopted table's keyspace ids ([`Table::adopt_keyspace`]).
    pub(crate) fn adoption(&self) -> Option<Adoption> {
        self.adoption
    }

    /// The keyspace id the stored keys of `keyspace` carry: itself, or for an adopted table
    /// the stored id (`None` for any other keyspace: the table holds none of its keys).
    #[inline]
    fn stored_keyspace(&self, keyspace: u32) -> Option<u32> {
        match self.adoption {
            None => Some(keyspace),
            Some(a) if a.adopted == keyspace => Some(a.stored),
            Some(_) => None,
        }
    }

    /// The keyspace of the range-deletion block's keys (`None` without one): a table of range
    /// deletions only names its keyspace nowhere else (ingestion checks it).
    pub(crate) fn range_del_keyspace(&self) -> Result<Option<u32>> {
        let h = self.props.range_del_block;
        if self.props.range_deletions == 0 {
            return Ok(None);
        }
        let block = Arc::new(Block::new(self.read_raw(h)?).map_err(|e| self.err_at(e, h))?);
        let mut it = block.iter();
        it.seek_to_first().map_err(|e| self.err_at(e, h))?;
        if !it.valid() {
            return Ok(None);
        }
        let (ks, _, _, _) = ikey::decode_in(it.key()).map_err(|e| self.err_at(e, h))?;
        Ok(Some(ks))
    }

    /// The global sequence number of an ingested table ([`Table::set_global_seq`]).
    pub(crate) fn global_seq(&self) -> Option<u64> {
        self.global_seq
    }

    /// Reads and parses the scan filters the properties name (src/sst/scan_filters.rs).
    fn load_scan_filters(&self) -> Result<ScanFilters> {
        let (p, r) = (self.props.prefix_filter_block, self.props.range_filter_block);
        if p.size == 0 && r.size == 0 {
            return Ok(ScanFilters::default());
        }
        if self.props.format_version < 5 {
            let e = Error::corruption("scan filters in a table below version 5", None);
            return Err(self.err_at(e, self.footer.properties));
        }
        // Each block's error names its own offset.
        let mut scan = ScanFilters::default();
        if p.size > 0 {
            let name = self.props.prefix_extractor.clone().unwrap_or_default();
            scan.set_prefix(self.read_raw(p)?, name).map_err(|e| self.err_at(e, p))?;
        }
        if r.size > 0 {
            scan.set_range(&self.read_raw(r)?).map_err(|e| self.err_at(e, r))?;
        }
        Ok(scan)
    }

    /// Reads and digests the compression dictionary the properties name (`None` without one).
    fn load_dictionary(&self) -> Result<Option<DecoderDict>> {
        let h = self.props.compression_dict_block;
        if h.size == 0 {
            return Ok(None);
        }
        if self.props.format_version < 8 {
            let e = Error::corruption("compression dictionary in a table below version 8", None);
            return Err(self.err_at(e, self.footer.properties));
        }
        let raw = self.read_raw(h)?;
        DecoderDict::new(&raw).map(Some).map_err(|e| self.err_at(e, h))
    }

    /// The table's prefix and range filters (empty when it has none).
    pub(crate) fn scan_filters(&self) -> &ScanFilters {
        &self.scan
    }

    /// A meta block that a `Cached` table finds in the block cache at open. Cache entries are
    /// keyed by file number, which is never reused, so the entry is the block this file holds
    /// at `h`, verified when it was inserted.
    fn cached_at_open<T: MetaKind>(&self, h: BlockHandle, residence: Residence) -> Option<Arc<T>> {
        if residence != Residence::Cached {
            return None;
        }
        self.cache.as_ref()?.get_kind::<T>(self.number, h.offset, T::KIND)
    }

    /// Reads and verifies the index block (at open, and on a cache miss).
    fn load_index(&self) -> Result<IndexEntry> {
        let h = self.footer.index;
        let raw = self.read_raw(h)?;
        Ok(IndexEntry::new(Block::new(raw).map_err(|e| self.err_at(e, h))?))
    }

    /// Reads and parses the filter block (at open, and on a cache miss); `on_huge_pages` for
    /// one the table will hold while it is open (`MetaPolicy::huge_page_filters`).
    fn load_filter(&self, on_huge_pages: bool) -> Result<TableFilter<OwnedFilter>> {
        let h = self.footer.filter;
        let raw = self.read_raw(h)?;
        let parsed = if on_huge_pages {
            TableFilter::parse_on_huge_pages(raw)
        } else {
            TableFilter::parse(raw)
        };
        parsed.map_err(|e| self.err_at(e, h))
    }

    /// Puts a meta block read at open where `residence` says: kept here (`Owned`), inserted
    /// into the cache only (`Cached`), or pinned there and kept here (`Pinned`).
    fn place<T: MetaKind>(&self, value: Arc<T>, h: BlockHandle, residence: Residence) -> Held<T> {
        let cache = self.cache.as_ref().filter(|_| residence != Residence::Owned);
        let Some(cache) = cache else { return Held::Here(value) };
        let charge = value.memory_bytes();
        if residence == Residence::Pinned {
            return Held::Here(cache.insert_pinned(self.number, h.offset, value, charge, T::KIND));
        }
        cache.insert_kind(self.number, h.offset, value, charge, T::KIND);
        Held::InCache
    }

    /// A meta block held here, or from the cache, or (on a cache miss) read with `load`,
    /// verified and inserted. Counts the cache hit or miss in `hit`/`miss` when given.
    #[inline]
    fn meta<'a, T: MetaKind>(
        &self,
        held: &'a Held<T>,
        h: BlockHandle,
        counted: Option<HitMiss<'_>>,
        load: impl FnOnce() -> Result<T>,
    ) -> Result<MetaRef<'a, T>> {
        match held {
            Held::Here(v) => Ok(MetaRef::Borrowed(v)),
            Held::InCache => self.cached(h, counted, load).map(MetaRef::Shared),
        }
    }

    /// A meta block of a `Cached` table: from the cache, or read with `load`, verified and
    /// inserted on a miss (through `read_raw`, the path every block read takes).
    fn cached<T: MetaKind>(
        &self,
        h: BlockHandle,
        counted: Option<HitMiss<'_>>,
        load: impl FnOnce() -> Result<T>,
    ) -> Result<Arc<T>> {
        if let Some(cache) = &self.cache {
            if let Some(v) = cache.get_kind::<T>(self.number, h.offset, T::KIND) {
                counted.inspect(|(c, hit, _)| c.bump(hit));
                return Ok(v);
            }
        }
        counted.inspect(|(c, _, miss)| c.bump(miss));
        let v = Arc::new(load()?);
        if let Some(cache) = &self.cache {
            cache.insert_kind(self.number, h.offset, Arc::clone(&v), v.memory_bytes(), T::KIND);
        }
        Ok(v)
    }

    /// The index block and its search, from the table or the cache.
    #[inline]
    fn index_entry(&self, counters: Option<&ReadCounters>) -> Result<MetaRef<'_, IndexEntry>> {
        let counted = counters.map(|c| (c, &c.index_cache_hits, &c.index_cache_misses));
        self.meta(&self.index, self.footer.index, counted, || self.load_index())
    }

    /// The usable filter, from the table or the cache (`None` without one: absent or of an
    /// unknown kind, which `probe_filter` tells apart).
    #[inline]
    fn filter_entry(
        &self,
        counters: Option<&ReadCounters>,
    ) -> Result<Option<MetaRef<'_, OwnedFilter>>> {
        let TableFilter::Loaded(held) = &self.filter else { return Ok(None) };
        let counted = counters.map(|c| (c, &c.filter_cache_hits, &c.filter_cache_misses));
        let load = || match self.load_filter(false)? {
            TableFilter::Loaded(f) => Ok(f),
            _ => {
                let e =
                    Error::corruption("filter block changed kind since the table was opened", None);
                Err(self.err_at(e, self.footer.filter))
            }
        };
        self.meta(held, self.footer.filter, counted, load).map(Some)
    }

    fn err_at(&self, e: Error, h: BlockHandle) -> Error {
        e.in_file(&self.path, h.offset)
    }

    /// Reads and verifies one block's contents (decompressed). The handle must lie before the
    /// footer, which bounds the allocation by the file size.
    fn read_raw(&self, h: BlockHandle) -> Result<Vec<u8>> {
        self.check_handle(h)?;
        let dict = self.dict.as_ref();
        if let Some(framed) = self.mapped(h)? {
            return unframe_block_with(framed, dict, Vec::with_capacity)
                .map_err(|e| self.err_at(e, h));
        }
        let framed = self.file.read_at(h.offset, (h.size as usize) + BLOCK_TRAILER_LEN);
        unframe_owned(framed.map_err(|e| self.err_at(e, h))?, dict).map_err(|e| self.err_at(e, h))
    }

    /// [`Table::read_raw`] for data blocks: the file bytes go to a per-thread scratch buffer
    /// and the contents to a recycled or exact-size buffer (see `sst::buffers`).
    fn read_data(&self, h: BlockHandle) -> Result<Vec<u8>> {
        self.check_handle(h)?;
        let dict = self.dict.as_ref();
        if let Some(framed) = self.mapped(h)? {
            return unframe_block_with(framed, dict, buffers::take_buffer)
                .map_err(|e| self.err_at(e, h));
        }
        let len = (h.size as usize) + BLOCK_TRAILER_LEN;
        if len > buffers::SCRATCH_MAX {
            return self.read_raw(h);
        }
        buffers::with_scratch(len, |buf| {
            self.file.read_exact_at(h.offset, buf).map_err(|e| self.err_at(e, h))?;
            unframe_block_with(buf, dict, buffers::take_buffer).map_err(|e| self.err_at(e, h))
        })
    }

    /// The framed bytes of block `h` (contents and trailer) borrowed from the file's bytes, or
    /// `None` when the file does not expose them. `h` was checked against the size taken at
    /// open; it is checked again against the slice itself, so a file whose exposed bytes are
    /// shorter than its reported length is a corruption error, not a panic.
    fn mapped(&self, h: BlockHandle) -> Result<Option<&[u8]>> {
        let Some(bytes) = self.file.as_bytes() else { return Ok(None) };
        let range = usize::try_from(h.offset).ok().zip(usize::try_from(h.end()).ok());
        match range.and_then(|(start, end)| bytes.get(start..end)) {
            Some(framed) => Ok(Some(framed)),
            None => {
                let e = Error::corruption(
                    format!(
                        "block {}+{} runs past the {}-byte mapped file",
                        h.offset,
                        h.size,
                        bytes.len()
                    ),
                    None,
                );
                Err(self.err_at(e, h))
            }
        }
    }

    /// Checks that `h` lies before the footer, which bounds any allocation made from it by the
    /// file size.
    fn check_handle(&self, h: BlockHandle) -> Result<()> {
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
        Ok(())
    }

    /// A data block via the cache. `counters` (lookups only) records cache hits and misses,
    /// and the reads that went to the file (`file_reads`, `file_read_bytes`);
    /// A block read from the file goes in the cache if `fill` admits it ([`CacheFill`]).
    pub(crate) fn data_block(
        &self,
        h: BlockHandle,
        counters: Option<&ReadCounters>,
        fill: &CacheFill,
    ) -> Result<Arc<Block>> {
        if let Some(c) = counters {
            c.bump(&c.data_blocks_read);
        }
        if let Some(cache) = &self.cache {
            if let Some(b) = cache.get(self.number, h.offset) {
                counters.inspect(|c| c.bump(&c.block_cache_hits));
                return Ok(b);
            }
            counters.inspect(|c| c.bump(&c.block_cache_misses));
        }
        let raw = self.read_data(h)?;
        if let Some(c) = counters {
            c.bump(&c.file_reads);
            c.add(&c.file_read_bytes, h.size + BLOCK_TRAILER_LEN as u64);
        }
        let block = Arc::new(Block::new(raw).map_err(|e| self.err_at(e, h))?);
        if let Some(cache) = &self.cache {
            let charge = block.arc_heap_bytes();
            if cache.admits(self.number, h.offset) && fill.admit(charge) {
                buffers::with_evicted(|evicted| {
                    cache.insert_evicting(
                        self.number,
                        h.offset,
                        Arc::clone(&block),
                        charge,
                        evicted,
                    )
                });
            }
        }
        Ok(block)
    }

    /// The newest version of `user_key` with sequence number `<= snapshot_seq`.
    ///
    /// `key_hash` must be [`crate::filter::hash_key`]`(user_key)` (hashed once by the caller
    /// for all tables). Order of work: the key range from the properties (no counters), then
    /// the filter (if it says "absent": `NotFound` with no block read), then the index and one
    /// data block. Merge operands met before the newest Put or Delete are appended to
    /// `operands`, newest first, and the walk goes on to the key's older versions (across data
    /// blocks): with operands, `NotFound` means "no base value in this table", and the caller
    /// merges.
    pub fn get(
        &self,
        user_key: &[u8],
        key_hash: u64,
        snapshot_seq: u64,
        counters: &ReadCounters,
        operands: &mut Vec<Vec<u8>>,
    ) -> Result<GetResult> {
        match self.probe_filter(ikey::DEFAULT_KEYSPACE, user_key, key_hash, counters) {
            FilterVerdict::Absent => Ok(GetResult::NotFound),
            FilterVerdict::Maybe { positive } => self.get_past_filter(
                ikey::DEFAULT_KEYSPACE,
                user_key,
                snapshot_seq,
                counters,
                positive,
                ValueOut::Copy,
                operands,
                self.max_covering_tombstone(user_key, snapshot_seq),
            ),
        }
    }

    /// Starts loading the cache lines [`Table::probe_filter`] will read for `key_hash`, when
    /// the table holds its whole filter (`Held::Here`). A filter in the block cache or in
    /// partitions is left alone: finding it costs a cache lookup, about what the hint saves.
    /// A hint only (`FilterView::prefetch_hash`).
    #[inline]
    pub(crate) fn prefetch_filter(&self, key_hash: u64) {
        if self.partitioned.is_none() {
            if let TableFilter::Loaded(Held::Here(f)) = &self.filter {
                f.view().prefetch_hash(key_hash);
            }
        }
    }

    /// Where a probe of the table's filter reads, as plain numbers, when the table holds its
    /// whole filter (as [`Table::prefetch_filter`]) and the filter's kind has a hint.
    pub(crate) fn probe_hint(&self) -> Option<crate::filter::ProbeHint> {
        match (&self.partitioned, &self.filter) {
            (None, TableFilter::Loaded(Held::Here(f))) => f.view().probe_hint(),
            _ => None,
        }
    }

    /// The first half of [`Table::get`] for `user_key` of `keyspace`: the key-range check (in
    /// `(keyspace, user key)` order) and the filter probe, counted. Batched lookups
    /// (`Db::multi_get`) probe every key's filter before reading any block.
    pub(crate) fn probe_filter(
        &self,
        keyspace: u32,
        user_key: &[u8],
        key_hash: u64,
        counters: &ReadCounters,
    ) -> FilterVerdict {
        let Some(keyspace) = self.stored_keyspace(keyspace) else { return FilterVerdict::Absent };
        let key = (keyspace, user_key);
        if self.props.entries == 0
            || key < ikey::split(&self.props.smallest_key)
            || key > ikey::split(&self.props.largest_key)
        {
            return FilterVerdict::Absent;
        }
        self.probe_stored(keyspace, user_key, key_hash, counters)
    }

    /// [`Table::probe_filter`] for a key the caller found within the file's key range
    /// (`TableFile::may_contain_key`, or the level search that found the file): the version's
    /// file metadata already answered the range check, so the table's own copy of its point
    /// keys' range, behind two more pointers, is not read again (at 50M keys a missing-key
    /// lookup is a chain of dependent loads from the level search to the filter's lines). The
    /// file's range may be wider, covering its range tombstones' extents; a key there that no
    /// point key of the table bounds is still answered right: the filter holds no such key,
    /// so it says "absent", or "maybe" as for any absent key, and the index finds no version.
    pub(crate) fn probe_filter_in_range(
        &self,
        keyspace: u32,
        user_key: &[u8],
        key_hash: u64,
        counters: &ReadCounters,
    ) -> FilterVerdict {
        match self.stored_keyspace(keyspace) {
            Some(keyspace) => self.probe_stored(keyspace, user_key, key_hash, counters),
            None => FilterVerdict::Absent,
        }
    }

    /// [`Table::probe_filter_in_range`] of a key whose keyspace is the stored one. The whole
    /// filters hash the user key alone; a partition is found by the stored key.
    fn probe_stored(
        &self,
        keyspace: u32,
        user_key: &[u8],
        key_hash: u64,
        counters: &ReadCounters,
    ) -> FilterVerdict {
        let key = (keyspace, user_key);
        if self.props.entries == 0 {
            return FilterVerdict::Absent; // range tombstones only
        }
        if let Some(p) = &self.partitioned {
            return self.probe_partitioned(p, key, key_hash, counters);
        }
        match &self.filter {
            TableFilter::Loaded(_) => {
                // A filter that cannot be read now (cache miss, then an I/O or corruption
                // error) answers "maybe", never a false negative; `get_past_filter` then
                // reads it again and reports the error.
                let Ok(Some(f)) = self.filter_entry(Some(counters)) else {
                    counters.bump(&counters.unfiltered_lookups);
                    return FilterVerdict::Maybe { positive: false };
                };
                counters.bump(&counters.filter_checks);
                if !f.view().contains_hash(key_hash) {
                    counters.bump(&counters.filter_useful);
                    return FilterVerdict::Absent;
                }
                counters.bump(&counters.filter_positive);
                FilterVerdict::Maybe { positive: true }
            }
            TableFilter::Unknown { .. } => {
                counters.bump(&counters.filter_unusable);
                counters.bump(&counters.unfiltered_lookups);
                FilterVerdict::Maybe { positive: false }
            }
            TableFilter::Absent => {
                counters.bump(&counters.unfiltered_lookups);
                FilterVerdict::Maybe { positive: false }
            }
        }
    }

    /// The largest sequence number `<= snapshot_seq` of this table's range tombstones covering
    /// `user_key` (0 if none). Independent of the filter, which knows point keys only.
    pub fn max_covering_tombstone(&self, user_key: &[u8], snapshot_seq: u64) -> u64 {
        if self.range_dels.is_empty() {
            return 0;
        }
        self.range_dels.max_covering_seq(user_key, snapshot_seq)
    }

    /// The table's range tombstones (empty without a range-deletion block).
    pub fn range_tombstones(&self) -> &Fragments {
        &self.range_dels
    }

    /// The second half of [`Table::get`], for a key the filter did not exclude: the index and
    /// one data block. `positive`: the filter said "maybe" (a hit is then a true positive).
    /// `copy_value = false` answers `Found` with an empty vector (`Db::contains_key`) unless
    /// `operands` is non-empty (the value is then a merge's base).
    ///
    /// Merge operands met before the key's first Put or Delete are appended to `operands`
    /// (newest first) and the walk goes on, into the following blocks if the key's versions
    /// continue there; `NotFound` then means "no base in this table".
    ///
    /// `covered_below`: the newest range tombstone covering the key at the snapshot among the
    /// sources read so far, this table's own included (0: none). A version older than it is
    /// deleted, so the walk answers `Deleted` on reaching one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn get_past_filter(
        &self,
        keyspace: u32,
        user_key: &[u8],
        snapshot_seq: u64,
        counters: &ReadCounters,
        positive: bool,
        out: ValueOut,
        operands: &mut Vec<Vec<u8>>,
        covered_below: u64,
    ) -> Result<GetResult> {
        let args = (snapshot_seq, positive, out, covered_below);
        self.get_past_filter_from(keyspace, user_key, args, counters, operands, None)
    }

    /// [`Table::get_past_filter`] (`args` = snapshot, positive, out, covered_below),
    /// starting from the key's first data block when `first` brings it: its handle (found by
    /// [`Table::data_block_handle`], which counted the index read) and the block, counted
    /// where it was obtained (`src/sst/reader/batch.rs`).
    pub(crate) fn get_past_filter_from(
        &self,
        keyspace: u32,
        user_key: &[u8],
        (snapshot_seq, positive, out, covered_below): (u64, bool, ValueOut, u64),
        counters: &ReadCounters,
        operands: &mut Vec<Vec<u8>>,
        first: Option<(BlockHandle, Arc<Block>)>,
    ) -> Result<GetResult> {
        let Some(keyspace) = self.stored_keyspace(keyspace) else {
            return Ok(GetResult::NotFound);
        };
        if !positive && self.filter_in_cache() {
            // `probe_filter` found no usable filter although the table has one in the cache:
            // its read failed. Read it again here, where an error can be returned.
            self.filter_entry(None)?;
        }
        if let Some(p) = self.partitioned.as_deref().filter(|_| !positive) {
            // The same for a partition (or the top level) whose read failed.
            self.recheck_partition(p, (keyspace, user_key))?;
        }
        if self.global_seq.is_some_and(|g| g > snapshot_seq) {
            return Ok(GetResult::NotFound); // ingested after the snapshot
        }
        let lookup_key = ikey::LookupKey::new(keyspace, user_key, snapshot_seq);
        let lookup = lookup_key.as_bytes();
        let (mut h, mut first_block) = match first {
            Some((h, block)) => (h, Some(block)),
            None => {
                counters.bump(&counters.index_blocks_read);
                let index_entry = self.index_entry(Some(counters))?;
                let Some(h) = self.data_handle_for(&index_entry, lookup, Some(counters))? else {
                    return Ok(GetResult::NotFound);
                };
                (h, None)
            }
        };
        let mut index: Option<IndexCursor> = None;
        let mut seen = false;
        loop {
            let block = buffers::HeldBlock::new(match first_block.take() {
                Some(block) => block,
                None => self.data_block(h, Some(counters), &CacheFill::Always)?,
            });
            let mut it = block.iter();
            if seen {
                it.seek_to_first().map_err(|e| self.err_at(e, h))?;
            } else {
                // If the seek runs off the block, the separator after it sorts before the next
                // block's user keys, so the key cannot be in the next block either.
                it.seek(lookup).map_err(|e| self.err_at(e, h))?;
            }
            while it.valid() {
                let (found_ks, found_key, seq, kind) =
                    ikey::decode_in(it.key()).map_err(|e| self.err_at(e, h))?;
                let seq = self.global_seq.unwrap_or(seq);
                if found_ks != keyspace || found_key != user_key {
                    return Ok(GetResult::NotFound);
                }
                if !seen {
                    counters.bump(if positive {
                        &counters.filter_true_positive
                    } else {
                        &counters.unfiltered_found
                    });
                }
                seen = true;
                if seq < covered_below {
                    return Ok(GetResult::Deleted); // under a newer range tombstone
                }
                match kind {
                    ValueKind::Put
                        if matches!(out, ValueOut::Copy | ValueOut::Reference)
                            || !operands.is_empty() =>
                    {
                        return Ok(GetResult::Found(it.value().to_vec()))
                    }
                    ValueKind::Put if out == ValueOut::Pin => {
                        let value = BlockSlice::new(Arc::clone(block.arc()), it.value_range());
                        return Ok(GetResult::FoundInBlock(value));
                    }
                    ValueKind::Put => return Ok(GetResult::Found(Vec::new())),
                    // `contains_key`: the reference proves a value without reading it.
                    ValueKind::BlobIndex if out == ValueOut::Nothing && operands.is_empty() => {
                        return Ok(GetResult::Found(Vec::new()))
                    }
                    ValueKind::BlobIndex if out == ValueOut::Reference && operands.is_empty() => {
                        let r = self.blob_ref(it.value()).map_err(|e| self.err_at(e, h))?;
                        return Ok(GetResult::Blob(r));
                    }
                    ValueKind::BlobIndex => {
                        let value = self.read_blob(it.value()).map_err(|e| self.err_at(e, h))?;
                        return Ok(GetResult::Found(value));
                    }
                    ValueKind::Delete => return Ok(GetResult::Deleted),
                    ValueKind::Merge => operands.push(it.value().to_vec()),
                    ValueKind::RangeDelete => {
                        let e =
                            Error::corruption("range tombstone among a data block's entries", None);
                        return Err(self.err_at(e, h));
                    }
                }
                it.next().map_err(|e| self.err_at(e, h))?;
            }
            if !seen {
                return Ok(GetResult::NotFound);
            }
            // The key's versions (all merge operands so far) may continue in the next block.
            let idx = match &mut index {
                Some(idx) => idx,
                None => {
                    // Counted once per lookup, where the first block was found.
                    let mut idx = IndexCursor::new(self)?;
                    idx.seek(self, lookup)?;
                    index.insert(idx)
                }
            };
            idx.next(self)?;
            if !idx.valid() {
                return Ok(GetResult::NotFound);
            }
            h = BlockHandle::decode(idx.value()).map_err(|e| self.index_err(e))?;
        }
    }

    /// Reads the blob files of `blobs` for this table's `BlobIndex` entries.
    pub(crate) fn set_blob_store(&mut self, blobs: Arc<super::blob::BlobStore>) {
        self.blobs = Some(blobs);
    }

    /// The value a `BlobIndex` entry's `reference` (its encoded `BlobRef`) names.
    pub(crate) fn read_blob(&self, reference: &[u8]) -> Result<Vec<u8>> {
        let r = self.blob_ref(reference)?;
        self.blob_store()?.get(&r)
    }

    /// Decodes a `BlobIndex` entry's value (a table below format version 7 holds none).
    pub(crate) fn blob_ref(&self, reference: &[u8]) -> Result<super::blob::BlobRef> {
        if self.footer.version < 7 {
            let e = Error::corruption("blob reference in a table below format version 7", None);
            return Err(e.in_file(&self.path, 0));
        }
        super::blob::BlobRef::decode(reference)
    }

    /// The blob files this table's references are read from.
    pub(crate) fn blob_store(&self) -> Result<&Arc<super::blob::BlobStore>> {
        self.blobs.as_ref().ok_or_else(|| {
            Error::invalid(format!(
                "table {} holds a blob reference but was opened without its database's blob files",
                self.path.display()
            ))
        })
    }

    /// The handle of the first data block whose separator is `>= target` (an internal key);
    /// `None` past the last block.
    fn index_lookup(&self, entry: &IndexEntry, target: &[u8]) -> Result<Option<BlockHandle>> {
        let block = &entry.block;
        let value = match &entry.search {
            Some(s) => {
                let i = self.index_seek(s, block, target)?;
                if i == block.num_restarts() {
                    return Ok(None);
                }
                if let Some(handle) = s.handle(i) {
                    return Ok(Some(handle));
                }
                let at = block.restart_point(i).map_err(|e| self.index_err(e))?;
                block.restart_entry_at(at).map_err(|e| self.index_err(e))?.1
            }
            None => {
                let mut index = block.iter();
                index.seek(target).map_err(|e| self.index_err(e))?;
                if !index.valid() {
                    return Ok(None);
                }
                return BlockHandle::decode(index.value()).map(Some).map_err(|e| self.index_err(e));
            }
        };
        BlockHandle::decode(value).map(Some).map_err(|e| self.index_err(e))
    }

    fn index_seek(&self, s: &IndexSearch, block: &Block, target: &[u8]) -> Result<usize> {
        s.seek(block, target).map_err(|e| self.index_err(e))
    }

    /// Positions `it` (an iterator over `entry`'s block, this table's index) on the first
    /// separator `>= target`, through the prefix search when the table has one.
    pub(crate) fn seek_index_iter(
        &self,
        entry: &IndexEntry,
        it: &mut BlockIter,
        target: &[u8],
    ) -> Result<()> {
        match &entry.search {
            Some(s) => {
                let i = self.index_seek(s, &entry.block, target)?;
                it.seek_to_restart(i).map_err(|e| self.index_err(e))
            }
            None => it.seek(target).map_err(|e| self.index_err(e)),
        }
    }

    fn index_err(&self, e: Error) -> Error {
        self.err_at(e, self.footer.index)
    }

    /// An iterator over all entries in internal-key order. `fill_cache = false` keeps a
    /// one-pass scan (compaction) from evicting the working set.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIter {
        let fill = if fill_cache { CacheFill::Always } else { CacheFill::Never };
        self.iter_filling(fill)
    }

    /// An iterator whose block reads go in the cache as `fill` admits them.
    pub(crate) fn iter_filling(self: &Arc<Self>, fill: CacheFill) -> TableIter {
        TableIter::new(Arc::clone(self), fill)
    }

    /// The filter as a probe-able view, when the table holds it (`None` without a filter, with
    /// an unknown kind, or when the filter lives in the block cache only: see
    /// [`Table::filter_kind`]).
    pub fn filter(&self) -> Option<&FilterView<'_>> {
        match &self.filter {
            TableFilter::Loaded(Held::Here(f)) => Some(f.view()),
            _ => None,
        }
    }

    /// The kind of the table's usable filter (`None` without one or with an unknown kind),
    /// wherever the filter lives.
    pub fn filter_kind(&self) -> Option<crate::filter::FilterKind> {
        if self.partitioned.is_some() {
            return crate::filter::FilterKind::from_tag(self.props.filter_kind);
        }
        match &self.filter {
            TableFilter::Loaded(_) => crate::filter::FilterKind::from_tag(self.props.filter_kind),
            _ => None,
        }
    }

    /// Drops the file's mapped pages from the process (`RandomAccessFile::release_pages`):
    /// for a one-pass reader (compaction) that is done with this table.
    pub(crate) fn release_mapped_pages(&self) {
        self.file.release_pages();
    }

    /// Whether the filter the table holds is on the huge-page arena (`None`: it holds none).
    #[cfg(test)]
    pub(crate) fn filter_on_huge_pages(&self) -> Option<bool> {
        match &self.filter {
            TableFilter::Loaded(Held::Here(f)) => Some(f.on_huge_pages()),
            _ => None,
        }
    }

    /// Whether a usable filter lives in the block cache only.
    fn filter_in_cache(&self) -> bool {
        matches!(self.filter, TableFilter::Loaded(Held::InCache))
    }

    /// Bytes of memory the filter block takes when loaded (held by the table, or one cache
    /// entry's worth; see [`Table::held_memory_bytes`] for what the table itself holds).
    pub fn filter_memory_bytes(&self) -> usize {
        self.filter_bytes
    }

    /// Bytes of memory the index block, its search summary and the loaded range tombstones
    /// take when loaded (the index may live in the cache instead, as for the filter).
    pub fn index_memory_bytes(&self) -> usize {
        self.index_bytes
            + if self.range_dels.is_empty() { 0 } else { self.range_dels.memory_bytes() }
    }

    /// What this table holds outside the block cache now: (filter bytes with the scan
    /// filters, index bytes with the range tombstones). Zero filter and index bytes when they
    /// live in the cache; a pinned table's are charged to the cache, so they are counted there
    /// and not here. Scan filters are always held by the table.
    pub fn held_memory_bytes(&self) -> (usize, usize) {
        let owned = self.residence == Residence::Owned;
        let range_dels =
            if self.range_dels.is_empty() { 0 } else { self.range_dels.memory_bytes() };
        let filter = if owned { self.held_filter_bytes } else { 0 } + self.scan.memory_bytes();
        (filter, if owned { self.index_bytes } else { 0 } + range_dels)
    }

    /// Bytes of the reader itself outside its index, filter and range tombstones, allocator
    /// headers included (`crate::heap`): the `Table` in the `Arc` the table cache holds it by,
    /// its properties (the smallest and largest keys, the merge operator name), its path and
    /// the boxes of its partitioned parts, and its digested compression dictionary.
    pub fn reader_memory_bytes(&self) -> usize {
        let p = &self.props;
        heap::arc_bytes::<Table>()
            + heap::alloc_bytes(p.smallest_key.capacity())
            + heap::alloc_bytes(p.largest_key.capacity())
            + p.merge_operator.as_ref().map_or(0, |m| heap::alloc_bytes(m.capacity()))
            + heap::alloc_bytes(self.path.as_os_str().len())
            + self.partitioned.as_ref().map_or(0, |_| heap::alloc_bytes(size_of::<Partitioned>()))
            + self.index_parts.as_ref().map_or(0, |_| heap::alloc_bytes(size_of::<IndexParts>()))
            + self.dict.as_ref().map_or(0, |d| heap::alloc_bytes(d.memory_bytes()))
    }

    /// True when the table's index and filter are pinned in the block cache.
    pub fn meta_pinned(&self) -> bool {
        self.residence == Residence::Pinned
    }

    /// The properties block.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The merge operator name recorded for the table's operands (`""` when the table holds
    /// none, or when they were flushed without an operator configured).
    pub fn merge_operator_name(&self) -> &str {
        self.props.merge_operator.as_deref().unwrap_or("")
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

    /// The index block and its search as an owned handle (iterators keep it across steps).
    pub(crate) fn index_arc(&self) -> Result<Arc<IndexEntry>> {
        match &self.index {
            Held::Here(v) => Ok(Arc::clone(v)),
            Held::InCache => self.cached(self.footer.index, None, || self.load_index()),
        }
    }

    #[cfg(test)]
    /// The index block (an owned handle).
    pub(crate) fn index_block(&self) -> Result<Arc<Block>> {
        Ok(Arc::clone(&self.index_arc()?.block))
    }

    pub(crate) fn index_handle(&self) -> BlockHandle {
        self.footer.index
    }
}

impl Drop for Table {
    /// Releases the cache pins a `Pinned` table took at open.
    fn drop(&mut self) {
        if self.residence != Residence::Pinned {
            return;
        }
        if let Some(cache) = &self.cache {
            cache.release_pinned(self.number, self.footer.index.offset);
            if matches!(self.filter, TableFilter::Loaded(_)) || self.partitioned.is_some() {
                cache.release_pinned(self.number, self.footer.filter.offset);
            }
        }
    }
}
