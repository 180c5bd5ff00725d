//! A table's filter block: the bytes read from the file plus the [`FilterView`] parsed over them
//! once at open, kept together in one value.
//!
//! `FilterView<'a>` borrows its bytes, and a table must own them, which makes the pair
//! self-referential. Re-parsing per lookup is not an option: `FilterView::parse` verifies the
//! envelope CRC over the whole filter, which would cost more than the probe it guards.

use crate::error::{Error, Result};
use crate::filter::{Filter, FilterView};
use std::sync::Arc;

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
        let bytes: Arc<[u8]> = bytes.into();
        // SAFETY: `Arc<[u8]>` keeps its slice at a fixed heap address, shared and immutable, for
        // as long as any clone of the `Arc` lives. The `'static` reference made here is stored
        // only in `OwnedFilter::view`, next to the `Arc` that owns the bytes, and never handed
        // out with a lifetime longer than a borrow of the `OwnedFilter` (see `view()`, whose
        // signature shortens it to `&self`'s lifetime). `view` is declared before `bytes`, so it
        // is dropped first. No `&mut` to the bytes ever exists.
        let slice: &'static [u8] = unsafe { &*(Arc::as_ptr(&bytes)) };
        match FilterView::parse(slice) {
            Ok(view) => Ok(TableFilter::Loaded(OwnedFilter { view, _bytes: bytes })),
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
    _bytes: Arc<[u8]>,
}

impl OwnedFilter {
    /// The view, borrowed no longer than `self`.
    pub(crate) fn view(&self) -> &FilterView<'_> {
        &self.view
    }
}

impl std::fmt::Debug for OwnedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnedFilter({}, {} bytes)", self.view.kind(), self.view.memory_bytes())
    }
}
