//! Each kind of block-cache entry is charged what it really allocates (design.md#memory-accounting;
//! `crate::heap`).
//!
//! A counting global allocator (this test binary's) tracks, per thread, the bytes of every live
//! allocation as glibc malloc lays it out: `malloc_usable_size + 8`, the chunk header and the
//! rounding to 16 bytes included. A test drops a table's cache entries (`erase_file`) and runs
//! one lookup, which reloads entries the way every cache miss does (read, verify, parse, build
//! the search summary, wrap in an `Arc`, insert); the live bytes the lookup left behind are then
//! exactly the reloaded values' allocations (the cache reuses the freed entries' node slots and
//! map slots, so its bookkeeping does not grow). That is compared with the growth of the
//! cache's usage less the per-entry bookkeeping charge, which
//! `cache_bookkeeping_is_charged_its_mean_over_a_doubling_cycle` checks on its own.
//!
//! Tolerance per value: 1% plus 32 bytes per entry. The charge models glibc's chunks exactly, so
//! what is left is bookkeeping of the allocator itself that `malloc_usable_size` hides (none
//! for chunks below the mmap threshold, which all these are) and the rounding of the model for
//! types whose size the compiler may change; an entry charged its payload alone (no `Arc`, no
//! allocator header, no search summary) misses by far more: an index partition of 1 KiB by
//! ~10%, a small top-level block by over 30%.

use super::*;
use crate::cache::{Cache, ENTRY_OVERHEAD};
use crate::compaction::filter::build_filter;
use crate::filter::hash_key;
use crate::filter_plan::LevelFilter;
use crate::heap;
use crate::options::StaticFilterKind;
use crate::sst::{
    Block, Compression, GetResult, MetaPolicy, PartitionedFilterSource, ReadCounters, TableOptions,
};

#[global_allocator]
static COUNTING: crate::testing::CountingAllocator = crate::testing::CountingAllocator;

fn live() -> i64 {
    crate::testing::live_heap_bytes()
}

/// 40,000 keys in 4 KiB LZ4 blocks: about 400 data blocks, an index of about 10 KiB and a
/// filter of about 50 KiB (whole), or index and filter partitions of about 1 KiB.
fn table(partitioned: bool) -> Vec<u8> {
    let entries = simple_entries(40_000);
    let opts = TableOptions { compression: Compression::Lz4, ..TableOptions::default() };
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts).unwrap();
    if partitioned {
        b.partition_index(1024);
    }
    for (k, seq, kind, v) in &entries {
        b.add(&ikey::encode(k, *seq, *kind), v).unwrap();
    }
    let filter = if partitioned {
        let lf = LevelFilter { kind: StaticFilterKind::BlockedBloom, fpr: 0.01 };
        FilterBlockSource::Partitioned(PartitionedFilterSource {
            build: Box::new(move |h: &[u64]| Ok(build_filter(lf, h)?.expect("a filter kind").0)),
            bits_per_key: lf.bits_per_key(),
            partition_bytes: 1024,
        })
    } else {
        bloom_source()
    };
    let summary = b.finish(filter).unwrap();
    assert_eq!(summary.properties.filter_partitions > 0, partitioned);
    assert_eq!(summary.properties.index_partitions > 0, partitioned);
    file.bytes()
}

fn get(t: &Table, i: u32) -> GetResult {
    let k = format!("key{i:08}").into_bytes();
    t.get(&k, hash_key(&k), u64::MAX, &ReadCounters::new(), &mut Vec::new()).unwrap()
}

/// What one lookup after `cache.erase_file` reloaded: (live bytes it left, charge growth
/// without the cache's bookkeeping, entries loaded).
fn reload(cache: &Cache<Block>, t: &Table, i: u32) -> (i64, i64, usize) {
    cache.erase_file(7);
    let (usage, entries) = (cache.usage(), cache.len());
    let at = live();
    let found = matches!(get(t, i), GetResult::Found(_));
    let grown = live() - at;
    assert_eq!(found, i.is_multiple_of(2), "key {i}");
    let loaded = cache.len() - entries;
    let charged = (cache.usage() - usage - loaded * ENTRY_OVERHEAD) as i64;
    (grown, charged, loaded)
}

fn assert_within_tolerance(what: &str, (live, charged, entries): (i64, i64, usize)) {
    eprintln!("{what}: {entries} entries, {live} bytes live, {charged} charged");
    assert!(entries > 0 && live > 0, "{what}: nothing was loaded");
    let slack = live / 100 + 32 * entries as i64;
    assert!((charged - live).abs() <= slack, "{what}: charged {charged} for {live} live bytes");
}

/// Opens the table with its index and filter in a one-shard cache and warms the cache's
/// arrays and the thread's read buffers (reused, not per entry) with lookups all over it.
fn warm(bytes: &[u8], policy: MetaPolicy) -> (Arc<Cache<Block>>, Table) {
    let cache = Arc::new(Cache::with_shards(64 << 20, 1));
    let file = Arc::new(MemFile::from_bytes(bytes.to_vec()));
    let t = Table::open_with(file, 7, Some(Arc::clone(&cache)), "000007.sst", policy).unwrap();
    for i in (0..80_000).step_by(7) {
        get(&t, i);
    }
    (cache, t)
}

const CACHED: MetaPolicy =
    MetaPolicy { cache_index_and_filter_blocks: true, pin: false, huge_page_filters: false };

#[test]
fn a_whole_filter_block_is_charged_what_it_allocates() {
    let (cache, t) = warm(&table(false), CACHED);
    // A missing key: the filter answers, nothing else is read.
    assert_within_tolerance("whole filter", reload(&cache, &t, 20_001));
}

#[test]
fn a_whole_index_block_and_a_data_block_are_charged_what_they_allocate() {
    let bytes = table(false);
    let (cache, t) = warm(&bytes, MetaPolicy::default());
    let data = reload(&cache, &t, 30_000);
    assert_within_tolerance("data block", data);
    let (cache, t) = warm(&bytes, CACHED);
    reload(&cache, &t, 30_001); // the filter, back in the cache
    let at = (cache.usage(), cache.len(), live());
    let found = get(&t, 30_000);
    assert!(matches!(found, GetResult::Found(_)));
    let loaded = cache.len() - at.1;
    let charged = (cache.usage() - at.0 - loaded * ENTRY_OVERHEAD) as i64;
    let grown = live() - at.2;
    assert_within_tolerance("whole index and data block", (grown, charged, loaded));
    assert_within_tolerance("whole index", (grown - data.0, charged - data.1, loaded - 1));
}

#[test]
fn filter_and_index_partitions_and_their_top_levels_are_charged_what_they_allocate() {
    let bytes = table(true);
    let (cache, t) = warm(&bytes, CACHED);
    let filters = reload(&cache, &t, 50_001);
    assert_within_tolerance("filter top level and one partition", filters);
    let all = reload(&cache, &t, 50_000);
    assert_within_tolerance("every entry of a lookup", all);
    let (l, c, n) = (all.0 - filters.0, all.1 - filters.1, all.2 - filters.2);
    assert_within_tolerance("index top level and partition, data block", (l, c, n));
    // Without a partitioned lookup's cache: the partitions a table holds are what it reports.
    let file: Arc<dyn RandomAccessFile> = Arc::new(MemFile::from_bytes(bytes));
    let at = live();
    let held = Arc::new(Table::open(file, 7, None, "000007.sst").unwrap());
    let grown = live() - at;
    let (f, i) = held.held_memory_bytes();
    let counted = (f + i + held.reader_memory_bytes()) as i64;
    eprintln!("table holding its partitions: {grown} bytes live, {counted} counted");
    assert!(
        (counted - grown).abs() <= grown / 100 + 256,
        "table holding its partitions: counted {counted} for {grown} live bytes"
    );
}

#[test]
fn cache_bookkeeping_is_charged_its_mean_over_a_doubling_cycle() {
    // Values are `Arc<u64>`s charged their own allocation, so what the cache adds beyond the
    // charges is its node and map arrays.
    let cache: Cache<u64> = Cache::with_shards(1 << 30, 1);
    let at = live();
    let mut ratios = Vec::new();
    for n in 1..=16_384u64 {
        cache.insert(1, n, Arc::new(n), heap::arc_bytes::<u64>());
        if n >= 1024 && n % 16 == 0 {
            let arrays = live() - at - n as i64 * heap::arc_bytes::<u64>() as i64;
            ratios.push(arrays as f64 / (n as f64 * ENTRY_OVERHEAD as f64));
        }
    }
    // Sampled at evenly spaced counts from 1 Ki to 16 Ki: the arrays hold 1x to 2x of what
    // their entries need, so 0.72x to 1.44x of the mean charge, and the mean of the sampled
    // ratios (weighted toward larger counts, like a log-uniform mean over four cycles) is
    // close to 1.
    let (lo, hi) = ratios.iter().fold((f64::MAX, 0f64), |(l, h), &r| (l.min(r), h.max(r)));
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    eprintln!("bookkeeping / {ENTRY_OVERHEAD} bytes: min {lo:.3} max {hi:.3} mean {mean:.3}");
    assert!(lo > 0.65 && hi < 1.5, "bookkeeping {lo:.3}..{hi:.3} of the charge");
    assert!((0.85..1.15).contains(&mean), "mean bookkeeping {mean:.3} of the charge");
}
