//! A sorted level's probe entries: per file, in level order, its smallest key's brief and a
//! copy of its filter's probe hint, one cache line each, so a point lookup goes from the level
//! search straight to loading the filter's lines.
//!
//! Why: in a 50M-key readmissing profile (one level of 239 files) the lookup was a chain of
//! dependent loads: the level search, then the file (`TableFile`, for its smallest key), then
//! its table-cache slot (for the hint), then the filter's lines. The files and slots are
//! scattered over the heap and evicted by the filter probes between lookups; this array is
//! 64 bytes a file (15 KiB for 239 files), contiguous, and stays in the caches.
//!
//! Invariant: an entry's brief is its file's `smallest_brief`, set when the level is indexed
//! and never changed. The hint is a copy of the slot's ([`crate::table_cache::Slot`]): taken
//! when the level is indexed, refreshed by lookups after they probe the open table
//! ([`ProbeEntry::refresh_hint`]). A stale or torn hint only prefetches the wrong lines
//! (`SharedProbeHint` tolerates any numbers); answers never depend on it.

use super::Brief;
use crate::filter::{ProbeHint, SharedProbeHint};

/// One file's entry (module documentation): exactly one cache line.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct ProbeEntry {
    /// The file's smallest `(keyspace, user key)` brief (`TableFile::smallest_brief`).
    pub(super) smallest_brief: Brief,
    hint: SharedProbeHint,
}

impl ProbeEntry {
    pub(super) fn new(smallest_brief: Brief, hint: Option<ProbeHint>) -> ProbeEntry {
        let entry = ProbeEntry { smallest_brief, hint: SharedProbeHint::default() };
        entry.hint.set(hint);
        entry
    }

    /// Starts loading the filter lines a probe of `key_hash` reads, from the copied hint;
    /// false when the entry has none yet.
    #[inline(always)]
    pub(crate) fn prefetch_filter(&self, key_hash: u64) -> bool {
        self.hint.prefetch(key_hash)
    }

    /// Makes the copied hint the slot's current one (`current`), writing only on a change (an
    /// entry is then only read by lookups once its table stays open).
    #[inline]
    pub(crate) fn refresh_hint(&self, current: Option<ProbeHint>) {
        if self.hint.load() != current {
            self.hint.set(current);
        }
    }

    #[cfg(test)]
    pub(crate) fn hint(&self) -> Option<ProbeHint> {
        self.hint.load()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::hash_key;
    use crate::manifest::FileMeta;
    use crate::storage::{MemStorage, Storage};
    use crate::table_cache::TableCache;
    use crate::version::{TableFile, Version};
    use std::path::Path;
    use std::sync::Arc;

    /// File `n` holds the keys `100 n .. 100 n + 10` (big-endian u64) under a Ribbon filter.
    fn keys(n: u64) -> Vec<[u8; 8]> {
        (100 * n..100 * n + 10).map(u64::to_be_bytes).collect()
    }

    #[test]
    fn a_level_entry_copies_its_open_tables_hint_and_follows_it_through_a_reopen() {
        let storage = MemStorage::new();
        storage.create_dir_all(Path::new("/db")).unwrap();
        for n in 1..=3u64 {
            let keys = keys(n);
            let user_keys: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
            crate::table_cache::write_test_table(&storage, n, &user_keys, true);
        }
        let tables =
            Arc::new(TableCache::new(Arc::new(storage.clone()), "/db".into(), None, 16).unwrap());
        let files = (1..=3u64)
            .map(|n| {
                let meta = FileMeta {
                    number: n,
                    size: 0,
                    smallest_key: keys(n)[0].to_vec(),
                    largest_key: keys(n)[9].to_vec(),
                    smallest_seq: 1,
                    largest_seq: 1,
                    entries: 10,
                    keyspace: 0,
                    global_seq: None,
                    stored_keyspace: None,
                };
                Arc::new(TableFile::new(meta, &tables.get(n).unwrap(), tables.clone()))
            })
            .collect();
        let v = Version::from_levels(vec![Vec::new(), files]);
        // Open tables when the level was indexed: every entry starts with its file's hint.
        for n in 1..=3u64 {
            for k in keys(n) {
                let (file, entry) = v.find_in_level_entry(1, 0, &k).unwrap();
                assert_eq!(file.meta.number, n);
                assert!(entry.hint().is_some(), "file {n}");
                assert_eq!(entry.hint(), file.probe_hint());
                assert!(entry.prefetch_filter(hash_key(&k)));
            }
        }
        // Between files, and past the last: no file, as `find_in_level` says.
        for k in [150u64, 250, 400, 0].map(u64::to_be_bytes) {
            assert!(v.find_in_level_entry(1, 0, &k).is_none());
            assert!(v.find_in_level(1, 0, &k).is_none());
        }
        // File 2's table closes: its slot drops the hint; the entry's copy is stale until a
        // lookup refreshes it, then empty.
        tables.evict(2);
        let (file, entry) = v.find_in_level_entry(1, 0, &keys(2)[3]).unwrap();
        assert_eq!(file.probe_hint(), None);
        assert!(entry.hint().is_some(), "a copy outlives the table until refreshed");
        entry.refresh_hint(file.probe_hint());
        assert_eq!(entry.hint(), None);
        assert!(!entry.prefetch_filter(hash_key(&keys(2)[3])));
        // Reopened (its filter at a new address): the next refresh copies the new hint, which
        // a version built now also starts with.
        file.with_table(|_| ()).unwrap();
        let reopened = file.probe_hint();
        assert!(reopened.is_some());
        entry.refresh_hint(reopened);
        assert_eq!(entry.hint(), reopened);
        let rebuilt = Version::from_levels(v.levels().to_vec());
        assert_eq!(rebuilt.find_in_level_entry(1, 0, &keys(2)[0]).unwrap().1.hint(), reopened);
    }

    #[test]
    fn an_entry_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<ProbeEntry>(), 64);
        assert_eq!(std::mem::align_of::<ProbeEntry>(), 64);
    }
}
