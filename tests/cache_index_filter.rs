//! `Options::cache_index_and_filter_blocks` and `pin_l0_filter_and_index_blocks_in_cache`:
//! lookups, multi_get and scans answer the same with the tables' index and filter blocks in a
//! tiny block cache (evicted and re-read from the file all the time), pinned there, or held by
//! the tables (the default); the cache stays within its capacity while pinned entries stay; the
//! index and filter cache tickers count.

use siftdb::filter::rng::SplitMix64;
use siftdb::{CompactionOptions, Db, Options};
use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{key, ticker};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn base() -> Options {
    Options {
        // 50 KiB of arena nodes hold about the ~570 writes per memtable the miss assertions
        // below were sized for (before the arena memtable, 64 KiB of 64-byte-overhead entries).
        memtable_size: 50 << 10,
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 64 << 10,
            ..CompactionOptions::default()
        },
        // One merge thread: the level shape (file sizes, so index and filter block sizes against
        // the tiny cache's 2 KiB shards) is what the miss assertions below were sized for.
        max_subcompactions: 1,
        ..Options::default()
    }
}

/// Writes a seeded history: puts, overwrites and deletes, compacted into the deeper levels,
/// then two more flushed batches left in L0. Returns the model of the final contents.
fn build(dir: &Path) -> Model {
    let db = Db::open(dir, base()).unwrap();
    let mut rng = SplitMix64::new(0x1d3);
    let mut model = Model::new();
    let mut write = |db: &Db, n: usize, model: &mut Model| {
        for _ in 0..n {
            let k = key(rng.below(6_000));
            if rng.below(5) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("value-{}-{}", rng.next_u64(), "x".repeat(rng.below(60) as usize));
                db.put(&k, v.as_bytes()).unwrap();
                model.insert(k, v.into_bytes());
            }
        }
    };
    write(&db, 12_000, &mut model);
    db.flush().unwrap();
    db.compact().unwrap();
    for _ in 0..2 {
        write(&db, 2_000, &mut model);
        db.flush().unwrap();
    }
    model
}

/// Every answer the database gives: point lookups of present and absent keys, batched lookups,
/// a full scan both ways and some bounded ranges.
fn answers(db: &Db) -> Vec<String> {
    let mut out = Vec::new();
    let probes: Vec<Vec<u8>> = (0..6_500).step_by(3).map(key).collect();
    for k in &probes {
        out.push(format!("{:?}", db.get(k).unwrap()));
    }
    for batch in probes.chunks(37) {
        for r in db.multi_get(batch) {
            out.push(format!("m{:?}", r.unwrap()));
        }
    }
    for r in db.scan().unwrap() {
        out.push(format!("s{:?}", r.unwrap()));
    }
    for r in db.scan().unwrap().rev() {
        out.push(format!("r{:?}", r.unwrap()));
    }
    for start in [0u64, 1_234, 4_999] {
        for r in db.range(key(start)..key(start + 300)).unwrap() {
            out.push(format!("g{:?}", r.unwrap()));
        }
    }
    out
}

#[test]
fn lookups_scans_and_multi_get_agree_with_index_and_filter_in_a_tiny_cache() {
    let dir = tempfile::tempdir().unwrap();
    let model = build(dir.path());
    let expected = {
        let db = Db::open(dir.path(), base()).unwrap();
        let scanned: Model = db.scan().unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(scanned, model, "the default configuration answers as the model");
        let a = answers(&db);
        assert_eq!(ticker(&db, "rocksdb.block.cache.index.miss"), 0);
        assert_eq!(ticker(&db, "rocksdb.block.cache.filter.miss"), 0);
        let m = db.memory_usage();
        assert!(m.table_filters > 0 && m.table_indexes > 0);
        assert_eq!((m.block_cache_index, m.block_cache_filter), (0, 0));
        a
    };
    // 16 shards of 1.5 KiB: a level-1 filter (about 1,000 keys) fits a shard but is evicted
    // between uses by the other blocks, larger ones do not fit at all, so index and filter
    // blocks are read from the file again and again. (Whether any filter stays until its next
    // use depends on the compaction layout, so hits are checked with a roomy cache below.)
    for pin in [false, true] {
        let opts = Options {
            block_cache_bytes: 24 << 10,
            cache_index_and_filter_blocks: true,
            pin_l0_filter_and_index_blocks_in_cache: pin,
            ..base()
        };
        let db = Db::open(dir.path(), opts).unwrap();
        assert_eq!(answers(&db), expected, "pin = {pin}");
        assert!(
            ticker(&db, "rocksdb.block.cache.index.miss") > 100,
            "pin = {pin}: {}",
            ticker(&db, "rocksdb.block.cache.index.miss")
        );
        assert!(ticker(&db, "rocksdb.block.cache.filter.miss") > 100, "pin = {pin}");
        let m = db.memory_usage();
        assert_eq!((m.table_filters, m.pinned_tables > 0), (0, pin), "pin = {pin}");
        // Filters do fit: the misses above are evictions, not blocks too large to cache.
        assert!(m.block_cache_filter > 0, "pin = {pin}");
    }
    // A cache that holds every index and filter: they are read once and then hit.
    let opts =
        Options { block_cache_bytes: 8 << 20, cache_index_and_filter_blocks: true, ..base() };
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(answers(&db), expected, "roomy cache");
    assert!(ticker(&db, "rocksdb.block.cache.filter.hit") > 100);
    assert!(ticker(&db, "rocksdb.block.cache.index.hit") > 100);
    let m = db.memory_usage();
    assert!(m.block_cache_filter > 0 && m.block_cache_index > 0);
    assert_eq!(m.table_filters, 0);
}

#[test]
fn the_cache_stays_within_capacity_while_l0_index_and_filter_blocks_stay_pinned() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let capacity = 1 << 20;
    let opts = Options {
        block_cache_bytes: capacity,
        cache_index_and_filter_blocks: true,
        pin_l0_filter_and_index_blocks_in_cache: true,
        ..base()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let l0_files = db.stats().levels[0].files;
    assert!(l0_files >= 2, "{l0_files} L0 files");
    answers(&db);
    let first = db.memory_usage();
    assert_eq!(first.pinned_tables, l0_files, "{first}");
    assert!(first.block_cache_pinned > 0, "{first}");
    assert_eq!(first.table_filters, 0, "no table holds a filter outside the cache");
    let cached = first.block_cache_data + first.block_cache_index + first.block_cache_filter;
    assert_eq!(first.block_cache, cached);
    // Pinned entries are small next to a 64 KiB shard, so the documented bound holds: the
    // capacity plus one byte of rounding per shard.
    assert!(first.block_cache <= capacity as u64 + 16, "{first}");
    for round in 0..3 {
        answers(&db);
        let m = db.memory_usage();
        assert!(m.block_cache <= capacity as u64 + 16, "round {round}: {m}");
        assert_eq!(m.block_cache_pinned, first.block_cache_pinned, "round {round}: evicted a pin");
    }
    // Unpinned tables' index and filter blocks went through the cache; L0's did not miss.
    assert!(ticker(&db, "rocksdb.block.cache.index.hit") > 0);
    let l0 = db.stats().levels[0].reads;
    assert_eq!((l0.index_cache_misses, l0.filter_cache_misses), (0, 0), "{l0:?}");
    assert!(l0.filter_checks > 0);
}

#[test]
fn flushed_tables_are_pinned_and_release_their_pins_once_compacted_away() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        block_cache_bytes: 4 << 20,
        cache_index_and_filter_blocks: true,
        pin_l0_filter_and_index_blocks_in_cache: true,
        ..base()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..3u64 {
        for i in 0..1_000 {
            db.put(key(round * 1_000 + i), b"v").unwrap();
        }
        db.flush().unwrap();
    }
    for i in (0..3_000).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(b"v".to_vec()));
    }
    let l0_files = db.stats().levels[0].files;
    let m = db.memory_usage();
    assert!(l0_files >= 3);
    assert_eq!(m.pinned_tables, l0_files, "every flushed table reopened pinned: {m}");
    assert!(m.block_cache_pinned > 0);
    db.compact().unwrap();
    for i in (0..3_000).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap(), Some(b"v".to_vec()));
    }
    let m = db.memory_usage();
    assert_eq!(db.stats().levels[0].files, 0);
    assert_eq!((m.pinned_tables, m.block_cache_pinned), (0, 0), "{m}");
    assert!(m.block_cache_index > 0 && m.block_cache_filter > 0, "{m}");
}

#[test]
fn index_and_filter_misses_read_through_direct_io_give_the_same_answers() {
    // On the disk that holds target/ (/tmp may be tmpfs, which refuses O_DIRECT).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    build(dir.path());
    let expected = answers(&Db::open(dir.path(), base()).unwrap());
    let opts = Options {
        block_cache_bytes: 32 << 10,
        cache_index_and_filter_blocks: true,
        direct_reads: true,
        ..base()
    };
    let db = match Db::open(dir.path(), opts) {
        Ok(db) => db,
        // A file system without O_DIRECT is refused at open, with a clear error.
        Err(siftdb::Error::InvalidArgument(msg)) => {
            return assert!(msg.contains("direct"), "{msg}")
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(answers(&db), expected);
    let r = db.stats().total_reads();
    assert!(r.index_cache_misses > 100 && r.filter_cache_misses > 100, "{r:?}");
}
