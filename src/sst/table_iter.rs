//! [`TableIter`]: all entries of one table in internal-key order (a two-level iterator: the
//! index yields data-block handles, through its partitions when it is partitioned
//! ([`IndexCursor`]), each data block yields entries). Moves go both ways:
//! a backward step that leaves a data block steps the index cursor back and enters the previous
//! block at its last entry.

use crate::error::Result;
use crate::sst::block::BlockIter;
use crate::sst::buffers;
use crate::sst::cache_fill::CacheFill;
use crate::sst::counters::ScanCounters;
use crate::sst::format::BlockHandle;
use crate::sst::reader::{Adoption, IndexCursor, StoredTarget, Table};
use std::sync::Arc;

/// A cursor over a table, movable both ways. Holds the table, its index and the current block
/// by `Arc`, so it stays valid while the table is dropped elsewhere or the cache evicts the
/// blocks. The index is taken at the first seek (it may have to be read from the file when the
/// table keeps it in the block cache, which can fail). After an error the iterator is invalid.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    /// The index and a cursor over it; `None` until the first seek.
    index: Option<IndexCursor>,
    /// Invariant: `Some` only when `index` is.
    data: Option<BlockIter>,
    /// Which blocks read from the file go in the block cache.
    fill: CacheFill,
    /// Where block reads are counted (engine scans); `None` for compaction and tools.
    counters: Option<(Arc<dyn ScanCounters>, usize)>,
    /// An ingested table's global sequence number ([`Table::set_global_seq`]): every key is
    /// read with it in place of the stored 0, through `gkey`.
    global_seq: Option<u64>,
    /// An adopted table's keyspace ids ([`Table::adopt_keyspace`]): every key is read with
    /// the adopted id in place of the stored one, through `gkey`, and seek targets are
    /// translated the other way ([`Adoption::stored_target`]).
    adoption: Option<Adoption>,
    /// The current key as read: with the global sequence number and the adopted keyspace
    /// (meaningful with either).
    gkey: Vec<u8>,
}

impl TableIter {
    pub(crate) fn new(table: Arc<Table>, fill: CacheFill) -> TableIter {
        let global_seq = table.global_seq();
        let adoption = table.adoption();
        TableIter {
            table,
            index: None,
            data: None,
            fill,
            counters: None,
            global_seq,
            adoption,
            gkey: Vec::new(),
        }
    }

    /// The table this iterates.
    pub(crate) fn table(&self) -> &Table {
        &self.table
    }

    /// The same cursor, counting every data block it consults (cache hits, misses and file
    /// reads) in `counters` of `level` (the table's level).
    pub(crate) fn counting(mut self, counters: Arc<dyn ScanCounters>, level: usize) -> TableIter {
        self.counters = Some((counters, level));
        self
    }

    /// The table and the index cursor, taking the index from the table on first use. The
    /// cursor's moves report errors with the file and block offset already attached.
    fn index(&mut self) -> Result<(&Table, &mut IndexCursor)> {
        if self.index.is_none() {
            self.index = Some(IndexCursor::new(&self.table)?);
        }
        Ok((&self.table, self.index.as_mut().expect("set above")))
    }

    /// Whether the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    /// The current internal key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        if self.rewrites() && self.valid() {
            return &self.gkey;
        }
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    /// Whether keys are read otherwise than stored (a global sequence number or an adopted
    /// keyspace).
    #[inline]
    fn rewrites(&self) -> bool {
        self.global_seq.is_some() || self.adoption.is_some()
    }

    /// Rebuilds `gkey` from the stored key: with a global sequence number the trailer's
    /// sequence replaced, its kind byte (and keyspace flag) kept; with an adoption the stored
    /// keyspace id replaced by the adopted one (a key of another id, which only a corrupt
    /// table holds, is left as it is, so whoever reads it sees the mismatch).
    fn refresh(&mut self) {
        if !self.rewrites() {
            return;
        }
        let Some(d) = self.data.as_ref().filter(|d| d.valid()) else { return };
        let raw = d.key();
        self.gkey.clear();
        match self.global_seq {
            Some(g) => {
                let cut = raw.len().saturating_sub(crate::ikey::TRAILER_LEN);
                self.gkey.extend_from_slice(&raw[..cut]);
                let kind_byte = raw.get(cut).copied().unwrap_or(0);
                self.gkey.extend_from_slice(&((g << 8) | kind_byte as u64).to_le_bytes());
            }
            None => self.gkey.extend_from_slice(raw),
        }
        if let Some(a) = self.adoption {
            crate::ikey::replace_keyspace(&mut self.gkey, a.stored, a.adopted);
        }
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) -> Result<()> {
        let r = self.seek_to_first_inner();
        self.fail_on_err(r)
    }

    fn seek_to_first_inner(&mut self) -> Result<()> {
        self.data = None;
        let (t, index) = self.index()?;
        index.seek_to_first(t)?;
        if self.load_block()? {
            self.data.as_mut().expect("loaded").seek_to_first().map_err(|e| self.data_err(e))?;
        }
        self.skip_exhausted_blocks()?;
        self.refresh();
        Ok(())
    }

    /// Positions on the first entry `>=` `target` (an internal key; use
    /// the lookup key (docs/format.md#internal-keys) to start at a user key as seen by a snapshot).
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_inner(target);
        self.fail_on_err(r)
    }

    fn seek_inner(&mut self, target: &[u8]) -> Result<()> {
        let stored = match self.adoption.map(|a| a.stored_target(target)) {
            None => None,
            Some(StoredTarget::Before) => return self.seek_to_first_inner(),
            Some(StoredTarget::After) => {
                self.data = None;
                return Ok(());
            }
            Some(StoredTarget::Key(k)) => Some(k),
        };
        let stored_target = stored.as_deref().unwrap_or(target);
        self.data = None;
        let (t, index) = self.index()?;
        index.seek(t, stored_target)?;
        if self.load_block()? {
            let d = self.data.as_mut().expect("loaded");
            d.seek(stored_target).map_err(|e| self.data_err(e))?;
        }
        self.skip_exhausted_blocks()?;
        self.refresh();
        // The stored `(k, 0)` sorts at or after any `(k, s)`, the read `(k, g)` only when
        // `g <= s`: step past a key the stored order placed at or after `target` but the read
        // order places before it (at most one: a user key has one entry).
        if self.global_seq.is_some()
            && self.valid()
            && crate::ikey::compare(&self.gkey, target) == std::cmp::Ordering::Less
        {
            self.next_inner()?;
        }
        Ok(())
    }

    /// Advances to the next entry (no-op when not valid).
    // A cursor, not an `Iterator`: entries are borrowed from it through `key()`/`value()`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        let r = self.next_inner();
        self.fail_on_err(r)
    }

    fn next_inner(&mut self) -> Result<()> {
        let Some(d) = self.data.as_mut() else { return Ok(()) };
        if !d.valid() {
            return Ok(());
        }
        d.next().map_err(|e| self.data_err(e))?;
        self.skip_exhausted_blocks()?;
        self.refresh();
        Ok(())
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) -> Result<()> {
        let r = self.seek_to_last_inner();
        self.fail_on_err(r)
    }

    fn seek_to_last_inner(&mut self) -> Result<()> {
        self.data = None;
        let (t, index) = self.index()?;
        index.seek_to_last(t)?;
        if self.load_block()? {
            self.data.as_mut().expect("loaded").seek_to_last().map_err(|e| self.data_err(e))?;
        }
        self.skip_exhausted_blocks_back()?;
        self.refresh();
        Ok(())
    }

    /// Positions on the last entry `<=` `target` (an internal key).
    pub fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_for_prev_inner(target);
        self.fail_on_err(r)
    }

    fn seek_for_prev_inner(&mut self, target: &[u8]) -> Result<()> {
        self.seek_inner(target)?;
        if !self.valid() {
            return self.seek_to_last_inner();
        }
        if crate::ikey::compare(self.key(), target) == std::cmp::Ordering::Greater {
            self.prev_inner()?;
        }
        Ok(())
    }

    /// Moves to the previous entry (no-op when not valid; invalid before the first entry).
    pub fn prev(&mut self) -> Result<()> {
        let r = self.prev_inner();
        self.fail_on_err(r)
    }

    fn prev_inner(&mut self) -> Result<()> {
        let Some(d) = self.data.as_mut() else { return Ok(()) };
        if !d.valid() {
            return Ok(());
        }
        d.prev().map_err(|e| self.data_err(e))?;
        self.skip_exhausted_blocks_back()?;
        self.refresh();
        Ok(())
    }

    /// While the current data block is exhausted, moves to the last entry of the block before.
    fn skip_exhausted_blocks_back(&mut self) -> Result<()> {
        while self.data.as_ref().is_some_and(|d| !d.valid()) {
            let (t, index) = self.index()?;
            index.prev(t)?;
            if !self.load_block()? {
                return Ok(());
            }
            self.data.as_mut().expect("loaded").seek_to_last().map_err(|e| self.data_err(e))?;
        }
        Ok(())
    }

    /// While the current data block is exhausted, moves to the next one (blocks are never empty
    /// when written by the builder, but a reader must not assume it).
    fn skip_exhausted_blocks(&mut self) -> Result<()> {
        while self.data.as_ref().is_some_and(|d| !d.valid()) {
            let (t, index) = self.index()?;
            index.next(t)?;
            if !self.load_block()? {
                return Ok(());
            }
            self.data.as_mut().expect("loaded").seek_to_first().map_err(|e| self.data_err(e))?;
        }
        Ok(())
    }

    /// Loads the block the index cursor points at; false (and no block) past the last one.
    fn load_block(&mut self) -> Result<bool> {
        let (_, index) = self.index()?;
        if !index.valid() {
            self.data = None;
            return Ok(false);
        }
        let h = BlockHandle::decode(index.value()).map_err(|e| self.index_err(e))?;
        let counters = self.counters.as_ref().map(|(c, level)| c.counters(*level));
        let block = self.table.data_block(h, counters, &self.fill)?;
        // The block left behind, if nobody else holds it (the cache did not take it), gives
        // its buffer to the next block this thread reads.
        match &mut self.data {
            Some(data) => buffers::recycle_one(data.switch_to(block)),
            None => self.data = Some(block.iter()),
        }
        Ok(true)
    }

    fn index_err(&self, e: crate::Error) -> crate::Error {
        e.in_file(self.table.path(), self.table.index_handle().offset)
    }

    fn data_err(&self, e: crate::Error) -> crate::Error {
        let value = self.index.as_ref().map_or(&[][..], |it| it.value());
        let off = BlockHandle::decode(value).map_or(0, |h| h.offset);
        e.in_file(self.table.path(), off)
    }

    fn fail_on_err(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.data = None;
        }
        r
    }
}
