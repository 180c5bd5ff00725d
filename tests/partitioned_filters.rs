//! `Options::partition_filters` and `partition_index`: a database whose compaction outputs
//! carry partitioned filters and indexes (SST format version 4) answers get, multi_get,
//! contains_key and scans exactly as the same history written with whole filters and indexes,
//! with the partitions in a tiny block cache (evicted and re-read all the time), with
//! `cache_index_and_filter_blocks` on and off, without a block cache, and with direct reads; a
//! point lookup of a missing key reads at most one filter partition per table; the memory
//! report counts filter partitions as filter entries of the cache.

use siftdb::filter::rng::SplitMix64;
use siftdb::inspect::sst::Table;
use siftdb::inspect::{filename, manifest};
use siftdb::storage::{FsStorage, Storage};
use siftdb::{CompactionOptions, Db, Options, StaticFilterKind};
use std::path::Path;

mod common;
use common::{key, ticker};

fn base(partition: bool) -> Options {
    Options {
        memtable_size: 64 << 10,
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 256 << 10,
            ..CompactionOptions::default()
        },
        partition_filters: partition,
        partition_index: partition,
        metadata_block_size: 512,
        max_subcompactions: 1,
        ..Options::default()
    }
}

/// A seeded history of puts, overwrites (several versions of hot keys) and deletes, compacted
/// into the deeper levels, then two flushed batches left in L0.
fn build(dir: &Path, opts: Options) {
    let db = Db::open(dir, opts).unwrap();
    let mut rng = SplitMix64::new(0x9a7);
    let mut write = |db: &Db, n: usize| {
        for _ in 0..n {
            let k =
                if rng.below(10) == 0 { key(rng.below(20) * 300) } else { key(rng.below(8_000)) };
            if rng.below(6) == 0 {
                db.delete(&k).unwrap();
            } else {
                let v = format!("value-{}-{}", rng.next_u64(), "x".repeat(rng.below(40) as usize));
                db.put(&k, v.as_bytes()).unwrap();
            }
        }
    };
    write(&db, 16_000);
    db.flush().unwrap();
    db.compact().unwrap();
    for _ in 0..2 {
        write(&db, 2_000);
        db.flush().unwrap();
    }
}

/// Every answer: lookups of present and absent keys, contains_key, batched lookups, a full scan
/// both ways and bounded ranges.
fn answers(db: &Db) -> Vec<String> {
    let mut out = Vec::new();
    let probes: Vec<Vec<u8>> = (0..8_500).step_by(3).map(key).collect();
    for k in &probes {
        out.push(format!("{:?}", db.get(k).unwrap()));
        out.push(format!("c{:?}", db.contains_key(k).unwrap()));
    }
    for batch in probes.chunks(41) {
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
    for start in [0u64, 2_345, 7_900] {
        for r in db.range(key(start)..key(start + 300)).unwrap() {
            out.push(format!("g{:?}", r.unwrap()));
        }
    }
    out
}

/// (format version, filter partitions, index partitions) of every table the manifest names.
fn tables(dir: &Path) -> Vec<(u32, u64, u64)> {
    let storage = FsStorage::new();
    let state = manifest::recover(&storage, dir).unwrap().expect("a database");
    let mut out = Vec::new();
    for files in &state.levels {
        for meta in files.values() {
            let path = dir.join(filename::sst_name(meta.number));
            let t = Table::open(storage.open(&path).unwrap(), meta.number, None, &path).unwrap();
            let p = t.properties();
            out.push((p.format_version, p.filter_partitions, p.index_partitions));
        }
    }
    out
}

#[test]
fn partitioned_filters_answer_as_whole_filters_in_every_cache_configuration() {
    let whole = tempfile::tempdir_in("/var/tmp").unwrap();
    let parts = tempfile::tempdir_in("/var/tmp").unwrap();
    build(whole.path(), base(false));
    build(parts.path(), base(true));
    assert!(tables(whole.path()).iter().all(|&(v, f, i)| v == 1 && f == 0 && i == 0));
    let t = tables(parts.path());
    assert!(t.iter().any(|&(v, f, i)| v == 4 && f > 4 && i > 1), "{t:?}");
    assert!(t.iter().all(|&(v, f, i)| (v == 4) == (f + i > 0)), "{t:?}");
    let expected = answers(&Db::open(whole.path(), base(false)).unwrap());
    let configs: Vec<(&str, Options)> = vec![
        ("default", base(true)),
        ("no block cache", Options { block_cache_bytes: 0, ..base(true) }),
        // 16 shards of 1 KiB: partitions are evicted between uses and read again.
        ("tiny cache", Options { block_cache_bytes: 16 << 10, ..base(true) }),
        (
            "tiny cache, index and filters in it",
            Options {
                block_cache_bytes: 16 << 10,
                cache_index_and_filter_blocks: true,
                ..base(true)
            },
        ),
        (
            "pinned L0",
            Options {
                cache_index_and_filter_blocks: true,
                pin_l0_filter_and_index_blocks_in_cache: true,
                ..base(true)
            },
        ),
        ("direct reads", Options { direct_reads: true, block_cache_bytes: 16 << 10, ..base(true) }),
    ];
    for (name, opts) in configs {
        let cache = opts.block_cache_bytes;
        let db = Db::open(parts.path(), opts).unwrap();
        assert_eq!(answers(&db), expected, "{name}");
        let m = db.memory_usage();
        if cache == 0 {
            assert_eq!(m.block_cache_filter, 0, "{name}");
            assert!(m.table_filters > 0, "{name}: partitions held by the tables");
        } else {
            assert!(ticker(&db, "rocksdb.block.cache.filter.miss") > 0, "{name}");
            assert!(m.block_cache_filter > 0, "{name}: partitions are filter entries");
        }
    }
}

#[test]
fn a_lookup_of_a_missing_key_reads_at_most_one_partition_per_table() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        filter_policy: siftdb::FilterPolicy {
            compaction: StaticFilterKind::BinaryFuse8,
            ..Default::default()
        },
        ..base(true)
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..30_000u64 {
        db.put(key(2 * i), b"v").unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
    let t = tables(dir.path());
    assert!(!t.is_empty() && t.iter().all(|&(v, f, _)| v == 4 && f > 1), "{t:?}");
    // A missing key's probe of each table that covers it: at most one partition lookup (the
    // top levels are held by the tables), hit or miss.
    for i in 0..2_000u64 {
        let k = key(2 * (i * 13 % 30_000) + 1);
        let before = db.stats();
        assert_eq!(db.get(&k).unwrap(), None);
        let after = db.stats();
        let d = |n| ticker_of(&after, n) - ticker_of(&before, n);
        let filter_lookups =
            d("rocksdb.block.cache.filter.hit") + d("rocksdb.block.cache.filter.miss");
        assert!(filter_lookups <= 1, "key {i}: {filter_lookups} partition lookups");
    }
}

fn ticker_of(s: &siftdb::Stats, name: &str) -> u64 {
    s.tickers().into_iter().find(|(n, _)| *n == name).unwrap().1
}

#[test]
fn metadata_block_size_out_of_range_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [0usize, 100, 2 << 20] {
        let opts = Options { partition_filters: true, metadata_block_size: bad, ..base(true) };
        let err = Db::open(dir.path().join("db"), opts).err().expect("refused");
        assert!(matches!(err, siftdb::Error::InvalidArgument(_)), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("metadata_block_size") && msg.contains("512..=1048576"), "{msg}");
    }
    assert!(!dir.path().join("db").exists(), "nothing created for a refused option");
}
