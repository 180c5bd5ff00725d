//! A table's filter block: the bytes read from the file plus the [`FilterView`] parsed over them
//! once at open, kept together in one value.
//!
//! `FilterView<'a>` borrows its bytes, and a table must own them, which makes the pair
//! self-referential. Re-parsing per lookup is not an option: `FilterView::parse` verifies the
//! envelope CRC over the whole filter, which would cost more than the probe it guards.

use crate::error::Result;
use crate::filter::{Filter, FilterError, FilterView};

/// What a table knows about its filter; `L` is how a usable one is held (the parsed
/// [`OwnedFilter`], or where the table keeps it: src/sst/meta.rs).
#[derive(Debug)]
pub(crate) enum TableFilter<L = OwnedFilter> {
    /// The table was written without a filter.
    Absent,
    /// A well-formed filter of a kind this build does not know: lookups treat it as "may
    /// contain". Holds the kind tag and the block's size in memory.
    Unknown { tag: u8, bytes: usize },
    /// A usable filter.
    Loaded(L),
}

impl<L> TableFilter<L> {
    /// The same filter with a usable one held as `f` makes it.
    pub(crate) fn map_loaded<M>(self, f: impl FnOnce(L) -> M) -> TableFilter<M> {
        match self {
            TableFilter::Absent => TableFilter::Absent,
            TableFilter::Unknown { tag, bytes } => TableFilter::Unknown { tag, bytes },
            TableFilter::Loaded(l) => TableFilter::Loaded(f(l)),
        }
    }
}

impl TableFilter {
    /// Parses filter block bytes: an unknown kind degrades to [`TableFilter::Unknown`], any other
    /// parse failure is corruption.
    pub(crate) fn parse(bytes: Vec<u8>) -> Result<TableFilter> {
        TableFilter::parse_held(FilterBytes::Heap(bytes))
    }

    /// [`TableFilter::parse`] for a filter the table holds for as long as it is open: the bytes
    /// are first copied onto huge pages (`crate::huge_arena`), where that is available.
    pub(crate) fn parse_on_huge_pages(bytes: Vec<u8>) -> Result<TableFilter> {
        match crate::huge_arena::HugeBuf::copy_of(&bytes) {
            Some(huge) => TableFilter::parse_held(FilterBytes::Huge(huge)),
            None => TableFilter::parse(bytes),
        }
    }

    fn parse_held(bytes: FilterBytes) -> Result<TableFilter> {
        // SAFETY: the `'static` reference made here points into the bytes' buffer (a heap
        // vector's, or an arena piece), which lives, unmoved and unmodified, as long as
        // `bytes`: a vector's heap buffer stays at its address when the vector is moved, an
        // arena piece never moves, and `bytes` is moved into `OwnedFilter::bytes`, which is
        // private and never mutated. The reference is stored only in `OwnedFilter::view`, next
        // to those bytes, and never handed out with a lifetime longer than a borrow of the
        // `OwnedFilter` (see `view()`, whose signature shortens it to `&self`'s lifetime).
        // `view` is declared before `bytes`, so it is dropped first. No `&mut` to the bytes
        // exists after this point.
        let slice: &'static [u8] = unsafe { &*(bytes.as_slice() as *const [u8]) };
        match FilterView::parse(slice) {
            Ok(view) => Ok(TableFilter::Loaded(OwnedFilter { view, bytes })),
            Err(FilterError::UnknownKind(tag)) => {
                Ok(TableFilter::Unknown { tag, bytes: bytes.as_slice().len() })
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Where a filter's bytes live: the buffer it was read into (kept as read: no copy), or a
/// piece of the huge-page arena.
enum FilterBytes {
    Heap(Vec<u8>),
    Huge(crate::huge_arena::HugeBuf),
}

impl FilterBytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            FilterBytes::Heap(v) => v,
            FilterBytes::Huge(h) => h,
        }
    }

    /// Bytes of memory held: the heap buffer with its allocator header, or the arena piece.
    fn held_bytes(&self) -> usize {
        match self {
            FilterBytes::Heap(v) => crate::heap::alloc_bytes(v.capacity()),
            FilterBytes::Huge(h) => h.piece_bytes(),
        }
    }
}

/// Filter bytes and the view parsed over them. Field order matters: `view` drops first.
pub(crate) struct OwnedFilter {
    view: FilterView<'static>,
    /// The block as read, or its copy on huge pages; never mutated (the view borrows it).
    bytes: FilterBytes,
}

impl OwnedFilter {
    /// The view, borrowed no longer than `self`.
    pub(crate) fn view(&self) -> &FilterView<'_> {
        &self.view
    }

    /// Bytes of memory held, allocator headers included: the block's buffer (or its arena
    /// piece) and what the parsed view allocated (a scalable filter's stage list). Not the
    /// `OwnedFilter` itself, which lives in an `Arc` (see its `MetaKind` charge) or inline in a
    /// table's list.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.held_bytes() + crate::heap::alloc_bytes(self.view.heap_request_bytes())
    }

    /// Whether the bytes are on the huge-page arena.
    #[cfg(test)]
    pub(crate) fn on_huge_pages(&self) -> bool {
        matches!(self.bytes, FilterBytes::Huge(_))
    }
}

impl std::fmt::Debug for OwnedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnedFilter({}, {} bytes)", self.view.kind(), self.view.memory_bytes())
    }
}
