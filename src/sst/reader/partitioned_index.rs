//! Reading a partitioned index (format version 4; src/sst/partitioned_index.rs,
//! docs/format.md#partitioned-index).
//!
//! The top-level index is the table's index entry (`Table::index`), held where [`MetaPolicy`]
//! says, exactly as a whole index is. With an enabled block cache an index partition is read on
//! demand through the table's ordinary block read (mmap, buffered or direct), verified, and
//! kept in the cache as an entry of kind `Index` (charged, evictable); without one every
//! partition is read and verified at open and held by the table. A point lookup counts one
//! index read (`index_blocks_read`) and, for the top level and the partition each looked up in
//! the cache, an index cache hit or miss.
//!
//! [`IndexCursor`] walks the index as one sequence of data-block handles, whole or
//! partitioned, both ways (scans, and a lookup whose versions continue in the next block).

use super::*;

/// A table's index partitions, when its index is partitioned.
#[derive(Debug)]
pub(crate) struct IndexParts {
    /// Without an enabled block cache: every partition by offset (ascending), loaded at open.
    loaded: Vec<(u64, Arc<IndexEntry>)>,
}

impl Table {
    /// The partitioned-index part of [`Table::open_with`]: checks the top level `top` against
    /// the properties and, without a block cache, loads every partition. Returns the bytes the
    /// loaded partitions take.
    pub(super) fn open_index_parts(&mut self, top: &IndexEntry) -> Result<usize> {
        let h = self.footer.index;
        let n = self.props.index_partitions;
        let bad = |what: String| Error::corruption(what, None);
        if self.props.format_version < 4 {
            return Err(self.err_at(bad("partitioned index in a table below version 4".into()), h));
        }
        if top.block.num_restarts() as u64 != n {
            let what = format!(
                "top-level index has {} entries, properties say {n} index partitions",
                top.block.num_restarts()
            );
            return Err(self.err_at(bad(what), h));
        }
        let mut loaded = Vec::new();
        let mut bytes = 0;
        if self.cache.is_none() {
            let mut it = top.block.iter();
            it.seek_to_first().map_err(|e| self.index_err(e))?;
            while it.valid() {
                let ph = BlockHandle::decode(it.value()).map_err(|e| self.index_err(e))?;
                let part = self.load_index_partition(ph)?;
                bytes += part.memory_bytes();
                loaded.push((ph.offset, Arc::new(part)));
                it.next().map_err(|e| self.index_err(e))?;
            }
            bytes += crate::heap::vec_bytes::<(u64, Arc<IndexEntry>)>(loaded.capacity());
        }
        self.index_parts = Some(Box::new(IndexParts { loaded }));
        Ok(bytes)
    }

    /// Reads and verifies one index partition (at open without a cache, and on a cache miss).
    fn load_index_partition(&self, h: BlockHandle) -> Result<IndexEntry> {
        let raw = self.read_raw(h)?;
        Ok(IndexEntry::new(Block::new(raw).map_err(|e| self.err_at(e, h))?))
    }

    /// Index partition `h`: held by the table (no cache), or from the cache (read, verified and
    /// inserted on a miss). Counts the cache hit or miss in `counters` when given.
    fn index_partition(
        &self,
        parts: &IndexParts,
        h: BlockHandle,
        counters: Option<&ReadCounters>,
    ) -> Result<Arc<IndexEntry>> {
        if self.cache.is_none() {
            return match parts.loaded.binary_search_by_key(&h.offset, |(off, _)| *off) {
                Ok(i) => Ok(Arc::clone(&parts.loaded[i].1)),
                Err(_) => {
                    let e = Error::corruption("top-level index names no index partition", None);
                    Err(self.err_at(e, h))
                }
            };
        }
        let counted = counters.map(|c| (c, &c.index_cache_hits, &c.index_cache_misses));
        self.cached(h, counted, || self.load_index_partition(h))
    }

    /// The handle of the first data block whose separator is `>= target` (`None` past the
    /// last), through the index partition when the index is partitioned. `top` is the table's
    /// index entry (its top level when partitioned).
    pub(super) fn data_handle_for(
        &self,
        top: &IndexEntry,
        target: &[u8],
        counters: Option<&ReadCounters>,
    ) -> Result<Option<BlockHandle>> {
        let Some(h) = self.index_lookup(top, target)? else { return Ok(None) };
        let Some(parts) = &self.index_parts else { return Ok(Some(h)) };
        let part = self.index_partition(parts, h, counters)?;
        match self.index_lookup(&part, target) {
            Ok(Some(d)) => Ok(Some(d)),
            // Its last separator is its top-level key, which is `>= target`.
            Ok(None) => {
                let e = Error::corruption("index partition ends before its top-level key", None);
                Err(self.err_at(e, h))
            }
            Err(e) => Err(self.err_at(e, h)),
        }
    }
}

/// A cursor over a table's data-block handles in order, through a whole index block or a
/// top-level index and its partitions. Moves take the table (the cursor holds no reference to
/// it, so both `TableIter` and a lookup can use it).
#[derive(Debug)]
pub(crate) enum IndexCursor {
    /// A whole index block.
    Whole {
        /// Keeps the block (and its search) alive.
        entry: Arc<IndexEntry>,
        /// Cursor over it.
        it: BlockIter,
    },
    /// A top-level index, and the partition its cursor is on.
    Parts {
        /// The top-level block.
        top: Arc<IndexEntry>,
        /// Cursor over the top level.
        top_it: BlockIter,
        /// The current partition: its handle, entry and cursor (`None` past either end).
        part: Option<(BlockHandle, Arc<IndexEntry>, BlockIter)>,
    },
}

impl IndexCursor {
    /// A cursor over `t`'s index (taken from the table or the cache), not yet positioned.
    pub(crate) fn new(t: &Table) -> Result<IndexCursor> {
        let entry = t.index_arc()?;
        let it = entry.block.iter();
        Ok(match t.index_parts {
            None => IndexCursor::Whole { entry, it },
            Some(_) => IndexCursor::Parts { top: entry, top_it: it, part: None },
        })
    }

    /// Whether the cursor is on a handle.
    pub(crate) fn valid(&self) -> bool {
        match self {
            IndexCursor::Whole { it, .. } => it.valid(),
            IndexCursor::Parts { part, .. } => part.as_ref().is_some_and(|p| p.2.valid()),
        }
    }

    /// The current encoded block handle (empty when not valid).
    pub(crate) fn value(&self) -> &[u8] {
        match self {
            IndexCursor::Whole { it, .. } => it.value(),
            IndexCursor::Parts { part, .. } => part.as_ref().map_or(&[][..], |p| p.2.value()),
        }
    }

    /// Positions on the first handle.
    pub(crate) fn seek_to_first(&mut self, t: &Table) -> Result<()> {
        match self {
            IndexCursor::Whole { it, .. } => it.seek_to_first().map_err(|e| t.index_err(e)),
            IndexCursor::Parts { top_it, .. } => {
                top_it.seek_to_first().map_err(|e| t.index_err(e))?;
                self.enter(t, true)
            }
        }
    }

    /// Positions on the last handle.
    pub(crate) fn seek_to_last(&mut self, t: &Table) -> Result<()> {
        match self {
            IndexCursor::Whole { it, .. } => it.seek_to_last().map_err(|e| t.index_err(e)),
            IndexCursor::Parts { top_it, .. } => {
                top_it.seek_to_last().map_err(|e| t.index_err(e))?;
                self.enter(t, false)
            }
        }
    }

    /// Positions on the first handle whose separator is `>= target`.
    pub(crate) fn seek(&mut self, t: &Table, target: &[u8]) -> Result<()> {
        match self {
            IndexCursor::Whole { entry, it } => t.seek_index_iter(entry, it, target),
            IndexCursor::Parts { top, top_it, part } => {
                t.seek_index_iter(top, top_it, target)?;
                if !load_part(t, top_it, part)? {
                    return Ok(());
                }
                let (h, entry, it) = part.as_mut().expect("loaded");
                let h = *h;
                t.seek_index_iter(entry, it, target).map_err(|e| t.err_at(e, h))?;
                self.skip_forward(t)
            }
        }
    }

    /// Moves to the next handle (no-op when not valid).
    pub(crate) fn next(&mut self, t: &Table) -> Result<()> {
        match self {
            IndexCursor::Whole { it, .. } => it.next().map_err(|e| t.index_err(e)),
            IndexCursor::Parts { part: Some((h, _, it)), .. } if it.valid() => {
                let h = *h;
                it.next().map_err(|e| t.err_at(e, h))?;
                self.skip_forward(t)
            }
            IndexCursor::Parts { .. } => Ok(()),
        }
    }

    /// Moves to the previous handle (no-op when not valid; invalid before the first).
    pub(crate) fn prev(&mut self, t: &Table) -> Result<()> {
        match self {
            IndexCursor::Whole { it, .. } => it.prev().map_err(|e| t.index_err(e)),
            IndexCursor::Parts { part: Some((h, _, it)), .. } if it.valid() => {
                let h = *h;
                it.prev().map_err(|e| t.err_at(e, h))?;
                self.skip_back(t)
            }
            IndexCursor::Parts { .. } => Ok(()),
        }
    }

    /// Loads the partition the top-level cursor is on and positions in it at its first
    /// (`forward`) or last handle, skipping empty partitions in that direction.
    fn enter(&mut self, t: &Table, forward: bool) -> Result<()> {
        let IndexCursor::Parts { top_it, part, .. } = self else { return Ok(()) };
        if !load_part(t, top_it, part)? {
            return Ok(());
        }
        let (h, _, it) = part.as_mut().expect("loaded");
        let h = *h;
        let r = if forward { it.seek_to_first() } else { it.seek_to_last() };
        r.map_err(|e| t.err_at(e, h))?;
        if forward {
            self.skip_forward(t)
        } else {
            self.skip_back(t)
        }
    }

    /// While the current partition is exhausted, moves to the first handle of the next one.
    fn skip_forward(&mut self, t: &Table) -> Result<()> {
        let IndexCursor::Parts { top_it, part, .. } = self else { return Ok(()) };
        while part.as_ref().is_some_and(|p| !p.2.valid()) {
            top_it.next().map_err(|e| t.index_err(e))?;
            if !load_part(t, top_it, part)? {
                return Ok(());
            }
            let (h, _, it) = part.as_mut().expect("loaded");
            let h = *h;
            it.seek_to_first().map_err(|e| t.err_at(e, h))?;
        }
        Ok(())
    }

    /// While the current partition is exhausted, moves to the last handle of the one before.
    fn skip_back(&mut self, t: &Table) -> Result<()> {
        let IndexCursor::Parts { top_it, part, .. } = self else { return Ok(()) };
        while part.as_ref().is_some_and(|p| !p.2.valid()) {
            top_it.prev().map_err(|e| t.index_err(e))?;
            if !load_part(t, top_it, part)? {
                return Ok(());
            }
            let (h, _, it) = part.as_mut().expect("loaded");
            let h = *h;
            it.seek_to_last().map_err(|e| t.err_at(e, h))?;
        }
        Ok(())
    }
}

/// Loads the partition `top_it` is on into `part` (not counted: scans count data blocks only);
/// false, with `part` cleared, past either end of the top level.
fn load_part(
    t: &Table,
    top_it: &BlockIter,
    part: &mut Option<(BlockHandle, Arc<IndexEntry>, BlockIter)>,
) -> Result<bool> {
    if !top_it.valid() {
        *part = None;
        return Ok(false);
    }
    let h = BlockHandle::decode(top_it.value()).map_err(|e| t.index_err(e))?;
    let parts = t.index_parts.as_deref().expect("a Parts cursor is made for a partitioned index");
    let entry = t.index_partition(parts, h, None)?;
    let it = entry.block.iter();
    *part = Some((h, entry, it));
    Ok(true)
}
