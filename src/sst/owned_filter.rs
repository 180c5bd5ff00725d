//! A table's filter block: the bytes read from the file plus the [`FilterView`] parsed over them
//! once at open, kept together in one value.
//!
//! `FilterView<'a>` borrows its bytes, and a table must own them, which makes the pair
//! self-referential. Re-parsing per lookup is not an option: `FilterView::parse` verifies the
//! envelope CRC over the whole filter, which would cost more than the probe it guards.

use crate::error::{Error, Result};
use crate::filter::{Filter, FilterView};

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
        // The block's buffer is kept as read (no copy into another allocation): a vector's
        // heap buffer stays at its address when the vector is moved, and this one is never
        // written, grown or shrunk again.
        // SAFETY: the `'static` reference made here points into `bytes`' heap buffer, which
        // lives, unmoved and unmodified, as long as `bytes`: the vector is moved into
        // `OwnedFilter::bytes` (a move of the vector, not of its buffer), which is private and
        // never mutated. The reference is stored only in `OwnedFilter::view`, next to that
        // vector, and never handed out with a lifetime longer than a borrow of the
        // `OwnedFilter` (see `view()`, whose signature shortens it to `&self`'s lifetime).
        // `view` is declared before `bytes`, so it is dropped first. No `&mut` to the bytes
        // exists after this point.
        let slice: &'static [u8] = unsafe { &*(bytes.as_slice() as *const [u8]) };
        match FilterView::parse(slice) {
            Ok(view) => Ok(TableFilter::Loaded(OwnedFilter { view, bytes })),
            Err(Error::UnknownFilterKind(tag)) => {
                Ok(TableFilter::Unknown { tag, bytes: bytes.len() })
            }
            Err(e) => Err(e),
        }
    }
}

/// Filter bytes and the view parsed over them. Field order matters: `view` drops first.
pub(crate) struct OwnedFilter {
    view: FilterView<'static>,
    /// The block as read; never mutated (the view borrows its heap buffer).
    bytes: Vec<u8>,
}

impl OwnedFilter {
    /// The view, borrowed no longer than `self`.
    pub(crate) fn view(&self) -> &FilterView<'_> {
        &self.view
    }

    /// Bytes of heap memory held, allocator headers included: the block's buffer and what the
    /// parsed view allocated (a scalable filter's stage list). Not the `OwnedFilter` itself,
    /// which lives in an `Arc` (see its `MetaKind` charge) or inline in a table's list.
    pub(crate) fn heap_bytes(&self) -> usize {
        crate::heap::alloc_bytes(self.bytes.capacity()) + self.view.parsed_heap_bytes()
    }
}

impl std::fmt::Debug for OwnedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnedFilter({}, {} bytes)", self.view.kind(), self.view.memory_bytes())
    }
}
