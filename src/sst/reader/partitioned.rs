//! Reading a partitioned filter (format version 4; src/sst/partitioned_filter.rs,
//! docs/format.md#partitioned-filter).
//!
//! Where its pieces live:
//! * the top-level partition index is held like a whole filter ([`MetaPolicy`]: by the table,
//!   in the block cache, or pinned there), read and verified at open;
//! * with an enabled block cache, a partition is read on demand through the table's ordinary
//!   block read (mmap, buffered or direct), verified, and kept in the cache as an entry of kind
//!   `Filter` (charged, evictable) under `(file number, partition offset)`;
//! * without one, every partition is read and verified at open and held by the table, which
//!   then holds as much as it would for a whole filter and never reads one at a lookup.
//!
//! Counting: the top level and each partition count a filter cache hit or miss when looked up
//! in the cache (a miss is a read from the file, as for a whole filter), so a lookup of a
//! missing key costs at most one partition read per table.
//!
//! Errors: a top level or partition that cannot be read at a lookup makes the probe answer
//! "maybe" (never a false negative); [`Table::get_past_filter`] then reads it again through
//! [`Table::recheck_partition`] and fails the lookup with the error. A partition of a kind this
//! build does not know answers "maybe" (counted as `filter_unusable`).

use super::*;
use crate::sst::partitioned_filter::PartitionIndex;

/// A table's partitioned filter.
#[derive(Debug)]
pub(crate) struct Partitioned {
    /// The top-level partition index.
    top: Held<PartitionIndex>,
    /// Without an enabled block cache: every partition, in top-level order, loaded at open.
    loaded: Vec<TableFilter<OwnedFilter>>,
}

impl Table {
    /// The partitioned-filter part of [`Table::open_with`]: reads and verifies the top level
    /// (or takes it from the cache on a reopen), loads every partition when there is no block
    /// cache, and places the top level where `residence` says.
    pub(super) fn open_partitioned(&mut self, residence: Residence) -> Result<()> {
        let h = self.footer.filter;
        let bad = |what: &str| Error::corruption(what.to_string(), None);
        if self.props.format_version < 4 {
            return Err(self.err_at(bad("partitioned filter in a table below version 4"), h));
        }
        if h.size == 0 || self.props.filter_kind == 0 {
            return Err(self.err_at(bad("filter_partitions set but the table has no filter"), h));
        }
        let cached = self.cached_at_open::<PartitionIndex>(h, residence);
        let top = match &cached {
            Some(top) => Arc::clone(top),
            None => Arc::new(self.load_partition_index()?),
        };
        let mut loaded = Vec::new();
        let mut loaded_bytes = 0;
        if self.cache.is_none() {
            for i in 0..top.len() {
                let ph = top.handle(i).map_err(|e| self.err_at(e, h))?;
                let f = self.load_partition_raw(ph)?;
                // Held inline in `loaded` (whose slots are counted below); an unknown kind's
                // bytes were dropped.
                loaded_bytes += match &f {
                    TableFilter::Loaded(f) => f.heap_bytes(),
                    TableFilter::Unknown { .. } | TableFilter::Absent => 0,
                };
                loaded.push(f);
            }
        }
        let slots = crate::heap::vec_bytes::<TableFilter<OwnedFilter>>(loaded.capacity());
        let partitions = self.props.filter_bytes.saturating_sub(h.size) as usize;
        // The statistics' filter size counts the blocks; what the table holds, allocations.
        self.filter_bytes = top.payload_bytes() + partitions;
        self.held_filter_bytes = top.memory_bytes() + loaded_bytes + slots;
        let top = match cached {
            Some(_) => Held::InCache,
            None => self.place(top, h, residence),
        };
        self.partitioned = Some(Box::new(Partitioned { top, loaded }));
        Ok(())
    }

    /// Reads and verifies the top-level partition index (at open, and on a cache miss).
    fn load_partition_index(&self) -> Result<PartitionIndex> {
        let h = self.footer.filter;
        let raw = self.read_raw(h)?;
        let block = Block::new(raw).map_err(|e| self.err_at(e, h))?;
        PartitionIndex::new(block, self.props.filter_partitions).map_err(|e| self.err_at(e, h))
    }

    /// Reads and parses one partition: an unknown kind is `TableFilter::Unknown`.
    fn load_partition_raw(&self, h: BlockHandle) -> Result<TableFilter<OwnedFilter>> {
        let raw = self.read_raw(h)?;
        TableFilter::parse(raw).map_err(|e| self.err_at(e, h))
    }

    /// One partition for the cache: an unknown kind is `Error::UnknownFilterKind` (not cached;
    /// the caller treats it as "maybe").
    fn load_partition(&self, h: BlockHandle) -> Result<OwnedFilter> {
        match self.load_partition_raw(h)? {
            TableFilter::Loaded(f) => Ok(f),
            TableFilter::Unknown { tag, .. } => Err(Error::UnknownFilterKind(tag)),
            TableFilter::Absent => unreachable!("TableFilter::parse never answers Absent"),
        }
    }

    /// Probes the one partition that holds `key` (keyspace, user key) if the table does
    /// (src/sst/partitioned_filter.rs, "No false negative"): `Some(contains)`, or `None` when
    /// that partition is of an unknown kind. Counts cache hits and misses in `counters`.
    fn partition_contains(
        &self,
        p: &Partitioned,
        (keyspace, user_key): (u32, &[u8]),
        key_hash: u64,
        counters: Option<&ReadCounters>,
    ) -> Result<Option<bool>> {
        let h = self.footer.filter;
        let counted = counters.map(|c| (c, &c.filter_cache_hits, &c.filter_cache_misses));
        let top = self.meta(&p.top, h, counted, || self.load_partition_index())?;
        let target = ikey::LookupKey::new(keyspace, user_key, ikey::MAX_SEQ);
        let Some((i, ph)) = top.partition_for(target.as_bytes()).map_err(|e| self.err_at(e, h))?
        else {
            return Ok(Some(false)); // past the last separator: no entry of the key
        };
        if self.cache.is_none() {
            return Ok(match p.loaded.get(i) {
                Some(TableFilter::Loaded(f)) => Some(f.view().contains_hash(key_hash)),
                _ => None,
            });
        }
        match self.cached(ph, counted, || self.load_partition(ph)) {
            Ok(f) => Ok(Some(f.view().contains_hash(key_hash))),
            Err(Error::UnknownFilterKind(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Table::probe_filter`] for a partitioned filter (the key range was checked), counted
    /// as a whole filter's probe is.
    pub(super) fn probe_partitioned(
        &self,
        p: &Partitioned,
        key: (u32, &[u8]),
        key_hash: u64,
        counters: &ReadCounters,
    ) -> FilterVerdict {
        match self.partition_contains(p, key, key_hash, Some(counters)) {
            // Unreadable now: "maybe"; `get_past_filter` reports the error.
            Err(_) => {
                counters.bump(&counters.unfiltered_lookups);
                FilterVerdict::Maybe { positive: false }
            }
            Ok(None) => {
                counters.bump(&counters.filter_unusable);
                counters.bump(&counters.unfiltered_lookups);
                FilterVerdict::Maybe { positive: false }
            }
            Ok(Some(false)) => {
                counters.bump(&counters.filter_checks);
                counters.bump(&counters.filter_useful);
                FilterVerdict::Absent
            }
            Ok(Some(true)) => {
                counters.bump(&counters.filter_checks);
                counters.bump(&counters.filter_positive);
                FilterVerdict::Maybe { positive: true }
            }
        }
    }

    /// After a probe that gave no "maybe" of its own: reads the key's partition again (not
    /// counted) so that a read error or corruption fails the lookup; an unknown kind is fine.
    pub(super) fn recheck_partition(&self, p: &Partitioned, key: (u32, &[u8])) -> Result<()> {
        self.partition_contains(p, key, 0, None).map(|_| ())
    }

    /// Number of filter partitions (0 for a whole filter or none).
    pub fn filter_partitions(&self) -> u64 {
        self.props.filter_partitions
    }
}
