//! Where an open table keeps its index and filter blocks (design.md#block-cache and "Memory
//! accounting"), chosen per table at open by a [`MetaPolicy`]:
//!
//! * **Owned** (the default, `cache_index_and_filter_blocks = false`): read and verified at open
//!   and held by the table, outside the block cache, until the table closes.
//! * **Cached**: read and verified at open, then inserted into the block cache as entries of
//!   kind [`EntryKind::Index`] / [`EntryKind::Filter`] (charged, evicted under pressure like data
//!   blocks). A lookup takes them from the cache; a miss reads the block from the file again
//!   through the table's ordinary block read (mmap, buffered or direct), verifies it and inserts
//!   it back.
//! * **Pinned**: charged to the block cache as pinned entries, so never evicted while the table
//!   is open; the table also holds them, so a lookup touches no cache shard for them. The table
//!   releases its pins when it is dropped.
//!
//! A cached filter is an `Arc<OwnedFilter>`: the bytes and the view parsed over them once, so a
//! probe borrows the view and copies nothing.

use crate::cache::EntryKind;
use crate::heap;
use crate::sst::block::Block;
use crate::sst::index::IndexSearch;
use crate::sst::owned_filter::OwnedFilter;
use std::sync::Arc;

/// How an opened table holds its index and filter blocks (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetaPolicy {
    /// Keep the index and filter in the block cache (charged, evictable) instead of in the table.
    /// Has no effect without an enabled block cache.
    pub cache_index_and_filter_blocks: bool,
    /// With `cache_index_and_filter_blocks`: pin them in the cache while the table is open
    /// (charged, never evicted).
    pub pin: bool,
    /// Put a filter the table holds itself (not in the block cache) on transparent huge pages
    /// (`Options::filters_on_huge_pages`, src/huge_arena.rs).
    pub huge_page_filters: bool,
}

impl MetaPolicy {
    /// What a table opened with this policy does given whether a block cache is enabled.
    pub(crate) fn residence(self, cache_enabled: bool) -> Residence {
        match (cache_enabled && self.cache_index_and_filter_blocks, self.pin) {
            (false, _) => Residence::Owned,
            (true, false) => Residence::Cached,
            (true, true) => Residence::Pinned,
        }
    }
}

/// The three ways of [`MetaPolicy`], resolved for one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Residence {
    /// Held by the table, not charged to the cache.
    Owned,
    /// In the block cache only.
    Cached,
    /// Held by the table and pinned (charged) in the block cache.
    Pinned,
}

/// A table's index block with its prefix search, as held by the table or cached.
#[derive(Debug)]
pub(crate) struct IndexEntry {
    pub(crate) block: Arc<Block>,
    /// Prefix search over `block` (None when the block is not one restart per entry).
    pub(crate) search: Option<IndexSearch>,
}

impl IndexEntry {
    /// Wraps a verified index block and builds its search summary.
    pub(crate) fn new(block: Block) -> IndexEntry {
        let search = IndexSearch::build(&block);
        IndexEntry { block: Arc::new(block), search }
    }

    /// Bytes of heap memory an `Arc<IndexEntry>` holds, allocator headers included (what the
    /// cache is charged, and what a table holding one reports): its own allocation, the
    /// block's `Arc` and contents, and the summary's arrays (prefixes, top, handles, radix).
    pub(crate) fn memory_bytes(&self) -> usize {
        heap::arc_bytes::<IndexEntry>() + self.inner_heap_bytes()
    }

    /// [`IndexEntry::memory_bytes`] without the entry's own `Arc` (for a value that holds an
    /// `IndexEntry` inline).
    pub(crate) fn inner_heap_bytes(&self) -> usize {
        self.block.arc_heap_bytes() + self.search.as_ref().map_or(0, |s| s.memory_bytes())
    }

    /// Bytes of the block's contents and its summary's arrays (no allocator or `Arc`
    /// overhead): the figure the statistics report as a table's filter or index size.
    pub(crate) fn payload_bytes(&self) -> usize {
        self.block.memory_bytes() + self.search.as_ref().map_or(0, |s| s.prefix_bytes())
    }
}

/// A value of one of a table's meta blocks: held by the table (`Arc` in `Owned` and `Pinned`
/// residence) or looked up in the cache each time (`Cached`).
#[derive(Debug)]
pub(crate) enum Held<T> {
    /// The table holds it (and, when pinned, the cache holds a pinned reference too).
    Here(Arc<T>),
    /// Only the block cache holds it, under the table's file number and the block's offset.
    InCache,
}

/// A borrow of a meta block: from the table (no reference count touched) or an `Arc` taken
/// from the cache.
pub(crate) enum MetaRef<'a, T> {
    /// Borrowed from the table.
    Borrowed(&'a T),
    /// Taken from the block cache (or just read from the file).
    Shared(Arc<T>),
}

impl<T> std::ops::Deref for MetaRef<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            MetaRef::Borrowed(t) => t,
            MetaRef::Shared(t) => t,
        }
    }
}

/// A value a table keeps in the block cache: its entry kind and its charge.
pub(crate) trait MetaKind: Send + Sync + 'static {
    /// The kind its cache entries are counted under.
    const KIND: EntryKind;
    /// Bytes of heap memory an `Arc` of it holds, allocator headers and the `Arc`'s own
    /// allocation included (its cache charge, before the cache's per-entry bookkeeping;
    /// `crate::heap`).
    fn memory_bytes(&self) -> usize;
}

impl MetaKind for IndexEntry {
    const KIND: EntryKind = EntryKind::Index;
    fn memory_bytes(&self) -> usize {
        IndexEntry::memory_bytes(self)
    }
}

impl MetaKind for OwnedFilter {
    const KIND: EntryKind = EntryKind::Filter;
    fn memory_bytes(&self) -> usize {
        heap::arc_bytes::<OwnedFilter>() + self.heap_bytes()
    }
}
