//! The memory report grows by what lookups allocate (the per-entry checks are in
//! src/sst/tests/charges.rs; this one is end to end, through `Db` and its 16-shard cache).
//!
//! A counting global allocator tracks, per thread, the bytes of every live allocation as glibc
//! malloc lays it out (`malloc_usable_size + 8`: the chunk header and the rounding to 16 bytes
//! included). Point lookups run on the test's own thread against a database reopened cold
//! (`Db::open` opens the tables and caches their top-level index and filter blocks); the
//! lookups load index and filter partitions and data blocks into the cache the way every miss
//! does, and the live bytes they leave behind are compared with the growth of
//! `Db::memory_usage().total()` over the same lookups. Nothing else runs on this thread, the
//! cache is large enough that nothing is evicted, and a database with no writes runs no flush or
//! compaction, so the two must agree.
//!
//! Tolerance: 3% of the live bytes. The cache's map and node arrays grow by doubling, so what
//! they hold per entry lies between 1x and 2x of their slot size while the charge is one
//! figure (the mean over a doubling cycle): off by up to ~40 of ~115 bytes per entry, about 1%
//! of a 4 KiB block, and more while a lookup phase doubles some shards' arrays. An entry kind
//! charged its payload alone (no `Arc`, no allocator header, no search summary) misses by more
//! than the rest of the margin on a phase that loads it: the old charges were 4% under on the
//! missing-key phase here.

use siftdb::{Compression, Db, MemoryUsage, Options};

#[global_allocator]
static COUNTING: siftdb::testing::CountingAllocator = siftdb::testing::CountingAllocator;

fn live() -> i64 {
    siftdb::testing::live_heap_bytes()
}

const KEYS: u32 = 200_000;

fn key(i: u32) -> String {
    format!("key{i:012}")
}

/// A 100-byte value that LZ4 halves, like db_bench's.
fn value(i: u32) -> Vec<u8> {
    let mut rng = siftdb::filter::rng::SplitMix64::new(i as u64);
    (0..100).map(|j| if j % 2 == 0 { rng.below(256) as u8 } else { b'x' }).collect()
}

/// Writes every even key, compacts, and reopens with a cold 64 MiB cache (nothing evicted).
fn database(dir: &std::path::Path, tune: impl Fn(&mut Options)) -> Db {
    let mut opts = Options {
        memtable_size: 4 << 20,
        compression: Compression::Lz4,
        block_cache_bytes: 64 << 20,
        mmap_reads: false,
        ..Options::default()
    };
    opts.compaction.target_file_size = 1 << 20;
    tune(&mut opts);
    {
        let db = Db::open(dir, opts.clone()).unwrap();
        for i in (0..KEYS).step_by(2) {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
        db.compact().unwrap();
    }
    Db::open(dir, opts).unwrap()
}

/// Live bytes and charged bytes (`memory_usage().total()`) the lookups of `keys` added, with
/// the charge's growth by figure.
fn lookups(db: &Db, keys: impl Iterator<Item = u32>) -> (i64, i64, MemoryUsage) {
    let before = db.memory_usage();
    let at = live();
    for i in keys {
        let got = db.get(key(i)).unwrap();
        assert_eq!(got.is_some(), i.is_multiple_of(2), "key {i}");
    }
    let grown = live() - at;
    let after = db.memory_usage();
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let mut by_figure = MemoryUsage::default();
    by_figure.block_cache_data = d(after.block_cache_data, before.block_cache_data);
    by_figure.block_cache_index = d(after.block_cache_index, before.block_cache_index);
    by_figure.block_cache_filter = d(after.block_cache_filter, before.block_cache_filter);
    by_figure.table_filters = d(after.table_filters, before.table_filters);
    by_figure.table_indexes = d(after.table_indexes, before.table_indexes);
    by_figure.table_readers = d(after.table_readers, before.table_readers);
    (grown, after.total() as i64 - before.total() as i64, by_figure)
}

fn assert_charged_within_tolerance(what: &str, (live, charged, by): (i64, i64, MemoryUsage)) {
    let (l, c) = (live as f64, charged as f64);
    eprintln!(
        "{what}: live {live} charged {charged} ({:+.2}%): cache data {} index {} filter {}, \
         tables filter {} index {} readers {}",
        (c - l) / l * 100.0,
        by.block_cache_data,
        by.block_cache_index,
        by.block_cache_filter,
        by.table_filters,
        by.table_indexes,
        by.table_readers
    );
    assert!(live > 0, "{what}: the lookups loaded nothing");
    assert!((c - l).abs() <= 0.03 * l, "{what}: charged {charged} bytes for {live} live bytes");
}

/// Runs the scenarios on one database: lookups of missing keys (filter partitions loaded, and
/// the data blocks of false positives), then of present keys (index partitions, data blocks).
fn scenarios(name: &str, tune: impl Fn(&mut Options) + Copy) {
    // The read path's per-thread buffers (allocated once per thread, not per entry) grow to
    // their working size on a twin database first.
    let twin_dir = tempfile::tempdir().unwrap();
    let twin = database(twin_dir.path(), tune);
    for i in (0..KEYS).step_by(2 * 13) {
        twin.get(key(i)).unwrap();
    }
    drop(twin);
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path(), tune);
    // The first tenth of the keys, not measured: the cache's shards get past their first,
    // smallest arrays (which a long-running cache has long outgrown).
    for i in (0..KEYS / 10).step_by(2 * 3) {
        db.get(key(i)).unwrap();
    }
    // Odd keys are absent: the filter answers (its whole block, or one partition per probe).
    let missing = lookups(&db, (KEYS / 10 + 1..KEYS).step_by(2 * 7));
    assert_charged_within_tolerance(&format!("{name}, missing keys"), missing);
    // Even keys, about one per data block: index (or index partitions) and data blocks.
    let present = lookups(&db, (KEYS / 10..KEYS).step_by(2 * 29));
    assert_charged_within_tolerance(&format!("{name}, present keys"), present);
}

#[test]
fn lookups_grow_the_memory_report_by_what_they_allocate() {
    // Tables are opened (their top levels loaded) by `Db::open`; lookups load index and filter
    // partitions and data blocks into the 16-shard cache.
    scenarios("cached partitions", |o| {
        o.cache_index_and_filter_blocks = true;
        o.partition_filters = true;
        o.partition_index = true;
    });
}
