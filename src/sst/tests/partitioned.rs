//! Partitioned filters (format version 4): round trips of every static kind, keys whose
//! versions span data blocks and partitions, keyspaces, where partitions live, and damage.

use super::*;
use crate::compaction::filter::build_filter;
use crate::filter::hash_key;
use crate::filter_plan::LevelFilter;
use crate::options::StaticFilterKind;
use crate::sst::format::{Footer, FOOTER_LEN};
use crate::sst::ValueOut;
use crate::sst::{FilterVerdict, GetResult, MetaPolicy, PartitionedFilterSource, ReadCounters};

/// A partitioned filter of `kind` at 1% cut every `partition_bytes` (estimated).
fn partitioned(kind: StaticFilterKind, partition_bytes: usize) -> FilterBlockSource {
    let lf = LevelFilter { kind, fpr: 0.01 };
    FilterBlockSource::Partitioned(PartitionedFilterSource {
        build: Box::new(move |h: &[u64]| Ok(build_filter(lf, h)?.expect("a filter kind").0)),
        bits_per_key: lf.bits_per_key(),
        partition_bytes,
    })
}

/// 600 plain keys (even numbers), and among them keys with long version chains: `hot` keys
/// with 150 versions (Puts, merge operands and a tombstone) that span several 256-byte blocks,
/// so partitions are cut inside a key's versions. Sorted; the newest version first per key.
fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for i in 0..600u32 {
        let k = format!("key{:08}", 2 * i).into_bytes();
        if i % 97 == 5 {
            for v in 0..150u64 {
                let kind = match v % 3 {
                    0 => ValueKind::Merge,
                    1 => ValueKind::Put,
                    _ if v == 2 => ValueKind::Delete,
                    _ => ValueKind::Put,
                };
                out.push((k.clone(), 10_000 + v, kind, format!("v{v}").into_bytes()));
            }
        } else {
            out.push((k, i as u64 + 1, ValueKind::Put, format!("value{i}").into_bytes()));
        }
    }
    sort_entries(&mut out);
    out
}

fn opts() -> TableOptions {
    TableOptions { block_size: 256, ..Default::default() }
}

fn open_with(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>, policy: MetaPolicy) -> Result<Table> {
    let file = Arc::new(MemFile::from_bytes(bytes));
    Table::open_with(file, 7, cache, "000007.sst", policy)
}

/// The ways a table may hold a partitioned filter: no cache (partitions loaded at open), a
/// cache with the top level held by the table, cached, or pinned.
fn residences() -> Vec<(Option<Arc<BlockCache>>, MetaPolicy)> {
    let cached =
        MetaPolicy { cache_index_and_filter_blocks: true, pin: false, ..MetaPolicy::default() };
    let pinned =
        MetaPolicy { cache_index_and_filter_blocks: true, pin: true, ..MetaPolicy::default() };
    vec![
        (None, MetaPolicy::default()),
        (Some(Arc::new(BlockCache::new(1 << 20))), MetaPolicy::default()),
        (Some(Arc::new(BlockCache::new(1 << 20))), cached),
        (Some(Arc::new(BlockCache::new(1 << 20))), pinned),
        // A cache far smaller than the filter: partitions are evicted and read again.
        (Some(Arc::new(BlockCache::new(2048))), cached),
    ]
}

/// The newest version of `key` per `entries` as `Table::get` answers (operands gathered
/// newest first until the first Put or Delete).
fn expected(entries: &[Entry], key: &[u8]) -> (GetResult, Vec<Vec<u8>>) {
    let mut operands = Vec::new();
    for (k, _, kind, v) in entries.iter().filter(|e| e.0 == key) {
        assert_eq!(k, key);
        match kind {
            ValueKind::Put => return (GetResult::Found(v.clone()), operands),
            ValueKind::Delete => return (GetResult::Deleted, operands),
            _ => operands.push(v.clone()),
        }
    }
    (GetResult::NotFound, operands)
}

#[test]
fn partitioned_filters_of_every_static_kind_have_no_false_negatives() {
    let entries = entries();
    let mut keys: Vec<Vec<u8>> = entries.iter().map(|e| e.0.clone()).collect();
    keys.dedup();
    for kind in StaticFilterKind::FILTERS {
        let (bytes, summary) = build(&entries, opts(), partitioned(kind, 64));
        let p = &summary.properties;
        assert_eq!(p.format_version, 4, "{kind:?}");
        assert!(p.filter_partitions >= 8, "{kind:?}: {} partitions", p.filter_partitions);
        assert!(p.filter_partitions < p.data_blocks, "{kind:?}");
        for (cache, policy) in residences() {
            let t = open_with(bytes.clone(), cache, policy).unwrap();
            assert_eq!(t.filter_partitions(), p.filter_partitions);
            assert!(t.filter_kind().is_some(), "{kind:?}");
            let c = ReadCounters::new();
            for k in &keys {
                let v = t.probe_filter(0, k, hash_key(k), &c);
                assert_eq!(v, FilterVerdict::Maybe { positive: true }, "{kind:?} {k:?}");
                let mut ops = Vec::new();
                let got = t.get(k, hash_key(k), u64::MAX, &c, &mut ops).unwrap();
                assert_eq!((got, ops), expected(&entries, k), "{kind:?} {k:?}");
            }
            // Missing keys (odd numbers): mostly filtered, never an error.
            let mut useful = 0;
            for i in 0..600u32 {
                let k = format!("key{:08}", 2 * i + 1).into_bytes();
                if t.probe_filter(0, &k, hash_key(&k), &c) == FilterVerdict::Absent {
                    useful += 1;
                }
                let got = t.get(&k, hash_key(&k), u64::MAX, &c, &mut Vec::new()).unwrap();
                assert_eq!(got, GetResult::NotFound);
            }
            assert!(useful > 500, "{kind:?}: only {useful} of 600 missing keys filtered");
        }
    }
}

#[test]
fn a_key_spanning_partitions_is_found_through_the_partition_its_first_version_is_in() {
    // One user key with 2000 versions spans many blocks and partitions; every snapshot reads
    // its version through the partition that holds the newest one.
    let mut entries: Vec<Entry> = (1..=2000u64)
        .map(|s| (b"span".to_vec(), s, ValueKind::Put, format!("v{s}").into_bytes()))
        .collect();
    entries.push((b"after".to_vec(), 5, ValueKind::Put, b"a".to_vec()));
    entries.push((b"zzz".to_vec(), 5, ValueKind::Put, b"z".to_vec()));
    sort_entries(&mut entries);
    let (bytes, summary) = build(&entries, opts(), partitioned(StaticFilterKind::Xor8, 1));
    assert!(summary.properties.filter_partitions > 10);
    for (cache, policy) in residences() {
        let t = open_with(bytes.clone(), cache, policy).unwrap();
        let c = ReadCounters::new();
        for snap in [1u64, 2, 999, 1500, 2000, u64::MAX] {
            let got = t.get(b"span", hash_key(b"span"), snap, &c, &mut Vec::new()).unwrap();
            let want = format!("v{}", snap.min(2000)).into_bytes();
            assert_eq!(got, GetResult::Found(want), "snapshot {snap}");
        }
        for k in [&b"after"[..], b"zzz"] {
            assert_ne!(t.probe_filter(0, k, hash_key(k), &c), FilterVerdict::Absent);
        }
    }
}

#[test]
fn partitioned_filters_of_a_keyspace_answer_for_its_keys() {
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts()).unwrap();
    for i in 0..500u32 {
        let k = format!("ks{i:06}").into_bytes();
        b.add(&ikey::encode_in(9, &k, 1, ValueKind::Put), b"value").unwrap();
    }
    let s = b.finish(partitioned(StaticFilterKind::Ribbon, 64)).unwrap();
    assert!(s.properties.filter_partitions > 2);
    assert_eq!(s.properties.format_version, 4);
    for (cache, policy) in residences() {
        let t = open_with(file.bytes(), cache, policy).unwrap();
        let c = ReadCounters::new();
        for i in 0..500u32 {
            let k = format!("ks{i:06}").into_bytes();
            assert_ne!(t.probe_filter(9, &k, hash_key(&k), &c), FilterVerdict::Absent, "{i}");
            let got = t
                .get_past_filter(9, &k, u64::MAX, &c, true, ValueOut::Copy, &mut Vec::new(), 0)
                .unwrap();
            assert_eq!(got, GetResult::Found(b"value".to_vec()));
            // The same user key in another keyspace is outside the table's range.
            assert_eq!(t.probe_filter(0, &k, hash_key(&k), &c), FilterVerdict::Absent);
        }
    }
}

#[test]
fn an_adopted_table_finds_its_partitions_and_index_parts_by_the_stored_id() {
    // Keys of keyspace 9 read as keyspace 4 (`Table::adopt_keyspace`): the partitioned filter's
    // top level and the partitioned index are searched with the stored id, wherever they live.
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts()).unwrap();
    b.partition_index(128);
    for i in 0..500u32 {
        let k = format!("ks{i:06}").into_bytes();
        b.add(&ikey::encode_in(9, &k, 0, ValueKind::Put), b"value").unwrap();
    }
    let s = b.finish(partitioned(StaticFilterKind::Ribbon, 64)).unwrap();
    assert!(s.properties.filter_partitions > 2 && s.properties.index_partitions > 2);
    for (cache, policy) in residences() {
        let mut t = open_with(file.bytes(), cache, policy).unwrap();
        t.adopt_keyspace(9, 4).unwrap();
        let c = ReadCounters::new();
        for i in 0..500u32 {
            let k = format!("ks{i:06}").into_bytes();
            let h = hash_key(&k);
            assert_ne!(t.probe_filter(4, &k, h, &c), FilterVerdict::Absent, "{i}");
            let got = t
                .get_past_filter(4, &k, u64::MAX, &c, true, ValueOut::Copy, &mut Vec::new(), 0)
                .unwrap();
            assert_eq!(got, GetResult::Found(b"value".to_vec()));
            assert_eq!(t.probe_filter(9, &k, h, &c), FilterVerdict::Absent, "stored id {i}");
        }
        let t = Arc::new(t);
        let mut it = t.iter(false);
        it.seek(&ikey::lookup_key_in(4, b"ks000250", u64::MAX)).unwrap();
        assert_eq!(ikey::split(it.key()), (4, &b"ks000250"[..]));
        let mut n = 1;
        while {
            it.next().unwrap();
            it.valid()
        } {
            assert_eq!(ikey::keyspace(it.key()), 4);
            n += 1;
        }
        assert_eq!(n, 250);
    }
}

#[test]
fn a_lookup_of_a_missing_key_reads_at_most_one_partition() {
    let entries = simple_entries(3000);
    let (bytes, s) = build(&entries, opts(), partitioned(StaticFilterKind::BinaryFuse8, 512));
    assert!(s.properties.filter_partitions > 4);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open_with(bytes, Some(cache), MetaPolicy::default()).unwrap();
    let c = ReadCounters::new();
    for i in 0..3000u32 {
        let k = format!("key{:08}", 2 * i + 1).into_bytes();
        let before = c.snapshot();
        let _ = t.get(&k, hash_key(&k), u64::MAX, &c, &mut Vec::new()).unwrap();
        let d = c.snapshot().minus(&before);
        assert!(d.filter_cache_misses + d.filter_cache_hits <= 1, "{i}: {d:?}");
    }
    let all = c.snapshot();
    // Each partition was read from the file once, then served by the cache.
    assert_eq!(all.filter_cache_misses, s.properties.filter_partitions);
    // Every probe but the last (past the table's largest key: no filter consulted).
    assert_eq!(all.filter_cache_hits + all.filter_cache_misses, 2999);
}

#[test]
fn a_filter_that_fits_one_partition_is_written_whole_as_before() {
    let entries = simple_entries(40);
    for kind in StaticFilterKind::FILTERS {
        let lf = LevelFilter { kind, fpr: 0.01 };
        let whole = FilterBlockSource::build(move |h| Ok(build_filter(lf, h)?.unwrap().0));
        let (a, sa) = build(&entries, opts(), whole);
        let (b, sb) = build(&entries, opts(), partitioned(kind, 4096));
        assert_eq!(a, b, "{kind:?}: byte for byte a whole-filter table");
        assert_eq!((sb.properties.format_version, sb.properties.filter_partitions), (1, 0));
        assert_eq!(sa, sb);
    }
}

/// The footer's filter handle (the top level) and the first partition's offset.
fn layout(bytes: &[u8]) -> (u64, u64, u64) {
    let f = Footer::decode(bytes[bytes.len() - FOOTER_LEN..].try_into().unwrap()).unwrap();
    let t = open_with(bytes.to_vec(), None, MetaPolicy::default()).unwrap();
    let first = t.properties().data_size;
    (f.filter.offset, f.filter.size, first)
}

#[test]
fn a_damaged_partition_fails_the_open_without_a_cache_and_the_lookup_with_one() {
    let entries = simple_entries(600);
    let (bytes, _) = build(&entries, opts(), partitioned(StaticFilterKind::Ribbon, 128));
    let (top, _, first_partition) = layout(&bytes);
    let keys: Vec<Vec<u8>> = entries.iter().map(|e| e.0.clone()).collect();
    for at in [first_partition + 3, (first_partition + top) / 2, top - 2] {
        let mut bad = bytes.clone();
        bad[at as usize] ^= 0x40;
        let e = open_with(bad.clone(), None, MetaPolicy::default()).unwrap_err();
        assert!(e.is_corruption(), "{at}: {e}");
        for (cache, policy) in residences().into_iter().skip(1) {
            let t = open_with(bad.clone(), cache, policy).unwrap();
            let c = ReadCounters::new();
            let mut errors = 0;
            for k in &keys {
                // "maybe", never a false negative; the data path then reports the corruption.
                assert_ne!(t.probe_filter(0, k, hash_key(k), &c), FilterVerdict::Absent);
                match t.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()) {
                    Ok(got) => assert_eq!(got, expected(&entries, k).0),
                    Err(e) => {
                        assert!(e.is_corruption(), "{e}");
                        errors += 1;
                    }
                }
            }
            assert!(errors > 0, "damage at {at} went unnoticed");
        }
    }
}

#[test]
fn every_byte_flip_of_the_top_level_fails_the_open() {
    let entries = simple_entries(300);
    let (bytes, _) = build(&entries, opts(), partitioned(StaticFilterKind::Xor16, 128));
    let (top, size, _) = layout(&bytes);
    for at in top..top + size + 5 {
        let mut bad = bytes.clone();
        bad[at as usize] ^= 0x08;
        for (cache, policy) in residences() {
            let e = open_with(bad.clone(), cache, policy).unwrap_err();
            assert!(e.is_corruption(), "{at}: {e}");
        }
    }
}

#[test]
fn a_partition_count_that_disagrees_with_the_top_level_is_corruption() {
    let entries = simple_entries(300);
    let (bytes, s) = build(&entries, opts(), partitioned(StaticFilterKind::Xor8, 128));
    let t = open_with(bytes.clone(), None, MetaPolicy::default()).unwrap();
    assert_eq!(t.filter_partitions(), s.properties.filter_partitions);
    // Rewrite the properties block with one partition more (CRC recomputed, so only the
    // cross-check can catch it).
    let f = Footer::decode(bytes[bytes.len() - FOOTER_LEN..].try_into().unwrap()).unwrap();
    let mut props = s.properties.clone();
    props.filter_partitions += 1;
    let (framed, _) =
        crate::sst::format::frame_block(&props.encode(), crate::sst::Compression::None).unwrap();
    let mut bad = bytes[..f.properties.offset as usize].to_vec();
    let props_at = bad.len() as u64;
    bad.extend_from_slice(&framed);
    let index = &bytes[f.index.offset as usize..f.index.end() as usize];
    let index_at = bad.len() as u64;
    bad.extend_from_slice(index);
    let footer = Footer {
        properties: crate::sst::format::BlockHandle {
            offset: props_at,
            size: framed.len() as u64 - 5,
        },
        index: crate::sst::format::BlockHandle { offset: index_at, size: f.index.size },
        ..f
    };
    bad.extend_from_slice(&footer.encode());
    let e = open_with(bad, None, MetaPolicy::default()).unwrap_err();
    assert!(e.to_string().contains("filter partition index has"), "{e}");
}

#[test]
fn every_byte_flip_of_a_partitioned_table_is_detected_without_panic() {
    let entries = simple_entries(200);
    let (bytes, s) = build(&entries, opts(), partitioned(StaticFilterKind::BlockedBloom, 64));
    assert!(s.properties.filter_partitions > 2);
    let keys: Vec<Vec<u8>> = entries.iter().map(|e| e.0.clone()).collect();
    let read_all = |bytes: Vec<u8>, cache: Option<Arc<BlockCache>>| -> Result<()> {
        let t = Arc::new(open_with(bytes, cache, MetaPolicy::default())?);
        let c = ReadCounters::new();
        for k in &keys {
            assert_ne!(t.probe_filter(0, k, hash_key(k), &c), FilterVerdict::Absent);
            t.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new())?;
        }
        let mut it = t.iter(false);
        it.seek_to_first()?;
        while it.valid() {
            it.next()?;
        }
        Ok(())
    };
    read_all(bytes.clone(), None).unwrap();
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x20;
        // Without a cache the partitions are verified at open; with one, at the first probe
        // that needs them ("maybe", then the lookup's error).
        for cache in [None, Some(Arc::new(BlockCache::new(1 << 20)))] {
            let e = read_all(bad.clone(), cache).expect_err(&format!("flip at {i} unnoticed"));
            assert!(e.is_corruption(), "byte {i}: {e}");
        }
    }
}
