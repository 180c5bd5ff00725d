//! Reopening a table whose index and filter live in the block cache (`Residence::Cached`):
//! the table cache closes tables and opens them again, and a reopen should cost the footer and
//! properties only, not a second read and verification of blocks the cache already holds.

use super::*;
use crate::filter::hash_key;
use crate::sst::{GetResult, MetaPolicy, ReadCounters};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A [`MemFile`] that counts its reads.
struct CountingFile {
    inner: MemFile,
    reads: AtomicU64,
}

impl RandomAccessFile for CountingFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.reads.fetch_add(1, Relaxed);
        self.inner.read_exact_at(offset, buf)
    }
    fn len(&self) -> u64 {
        RandomAccessFile::len(&self.inner)
    }
}

fn open_counted(bytes: &[u8], cache: &Arc<BlockCache>, policy: MetaPolicy) -> (Table, u64) {
    let file =
        Arc::new(CountingFile { inner: MemFile::from_bytes(bytes.to_vec()), reads: 0.into() });
    let t = Table::open_with(file.clone(), 7, Some(cache.clone()), "000007.sst", policy).unwrap();
    let reads = file.reads.load(Relaxed);
    (t, reads)
}

fn found(t: &Table, key: &[u8]) -> bool {
    let got = t.get(key, hash_key(key), u64::MAX, &ReadCounters::new(), &mut Vec::new());
    matches!(got.unwrap(), GetResult::Found(_))
}

#[test]
fn a_cached_table_reopens_without_reading_its_index_and_filter_again() {
    let (bytes, _) = build(&simple_entries(2000), TableOptions::default(), bloom_source());
    let cache = Arc::new(BlockCache::new(8 << 20));
    let cached =
        MetaPolicy { cache_index_and_filter_blocks: true, pin: false, ..MetaPolicy::default() };
    let (first, first_reads) = open_counted(&bytes, &cache, cached);
    assert!(found(&first, b"key00000010"));
    drop(first);
    let (again, again_reads) = open_counted(&bytes, &cache, cached);
    // Footer, properties, index and filter the first time; footer and properties after.
    assert_eq!((first_reads, again_reads), (4, 2));
    assert!(found(&again, b"key00000010") && !found(&again, b"key00000011"));
    // The report still knows the filter's size without having read it.
    assert!(again.filter_memory_bytes() > 2000 / 8, "{}", again.filter_memory_bytes());

    // A table that owns its blocks reads them at every open (nothing of it is in the cache).
    let owned = MetaPolicy::default();
    let (_, owned_reads) = open_counted(&bytes, &cache, owned);
    assert_eq!(owned_reads, 4);
}

#[test]
fn a_reopen_after_the_cache_dropped_the_blocks_reads_them_again() {
    let (bytes, _) = build(&simple_entries(2000), TableOptions::default(), bloom_source());
    let cached =
        MetaPolicy { cache_index_and_filter_blocks: true, pin: false, ..MetaPolicy::default() };
    let cache = Arc::new(BlockCache::new(8 << 20));
    drop(open_counted(&bytes, &cache, cached));
    let other = Arc::new(BlockCache::new(8 << 20));
    let (t, reads) = open_counted(&bytes, &other, cached);
    assert_eq!(reads, 4, "a cache without the table's blocks");
    assert!(found(&t, b"key00000020"));
}
