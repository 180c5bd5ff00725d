//! Partitioned indexes (format version 4): lookups, version walks across blocks and
//! partitions, and scans both ways answer as with a whole index, wherever the partitions live;
//! counters; damage.

use super::*;
use crate::filter::hash_key;
use crate::rng::SplitMix64;
use crate::sst::{GetResult, MetaPolicy, ReadCounters};

/// Like `build`, with the index partitioned at `part_bytes` (`None`: whole).
fn build_with(entries: &[Entry], part_bytes: Option<usize>) -> (Vec<u8>, TableSummary) {
    let file = MemFile::default();
    let opts = TableOptions { block_size: 200, ..Default::default() };
    let mut b = TableBuilder::new(Box::new(file.clone()), opts).unwrap();
    if let Some(bytes) = part_bytes {
        b.partition_index(bytes);
    }
    for (k, seq, kind, v) in entries {
        b.add(&ikey::encode(k, *seq, *kind), v).unwrap();
    }
    let s = b.finish(bloom_source()).unwrap();
    (file.bytes(), s)
}

fn open_with(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>, policy: MetaPolicy) -> Result<Table> {
    Table::open_with(Arc::new(MemFile::from_bytes(bytes)), 7, cache, "000007.sst", policy)
}

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
        (Some(Arc::new(BlockCache::new(2048))), cached),
    ]
}

/// 1500 keys, every 50th with 60 versions (a Put under 59 merge operands) that span blocks.
fn entries() -> Vec<Entry> {
    let mut out = Vec::new();
    for i in 0..1500u32 {
        let k = format!("key{:08}", 2 * i).into_bytes();
        if i % 50 == 7 {
            for v in 0..60u64 {
                let kind = if v == 0 { ValueKind::Put } else { ValueKind::Merge };
                out.push((k.clone(), 5000 + v, kind, format!("op{v}").into_bytes()));
            }
        } else {
            out.push((k, i as u64 + 1, ValueKind::Put, format!("value{i}").into_bytes()));
        }
    }
    sort_entries(&mut out);
    out
}

/// Every entry of a forward scan, a backward scan, and seeks / seek_for_prev to random targets.
fn walk(t: Table, targets: &[Vec<u8>]) -> Vec<String> {
    let t = Arc::new(t);
    let mut out = Vec::new();
    let mut it = t.iter(true);
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push(format!("f{:?}", it.key()));
        it.next().unwrap();
    }
    it.seek_to_last().unwrap();
    while it.valid() {
        out.push(format!("b{:?}", it.key()));
        it.prev().unwrap();
    }
    for target in targets {
        it.seek(target).unwrap();
        out.push(format!("s{:?}", it.valid().then(|| it.key().to_vec())));
        if it.valid() {
            it.prev().unwrap();
            out.push(format!("p{:?}", it.valid().then(|| it.key().to_vec())));
        }
        it.seek_for_prev(target).unwrap();
        out.push(format!("q{:?}", it.valid().then(|| it.key().to_vec())));
    }
    out
}

#[test]
fn a_partitioned_index_answers_lookups_and_scans_as_the_whole_index() {
    let entries = entries();
    let (whole, ws) = build_with(&entries, None);
    let (parts, ps) = build_with(&entries, Some(256));
    // Merge operands make the whole-index table version 3.
    assert_eq!((ws.properties.format_version, ws.properties.index_partitions), (3, 0));
    assert_eq!(ps.properties.format_version, 4);
    assert!(ps.properties.index_partitions > 10, "{}", ps.properties.index_partitions);
    let mut rng = SplitMix64::new(77);
    let targets: Vec<Vec<u8>> = (0..300)
        .map(|_| {
            let k = format!("key{:08}", rng.below(3100)).into_bytes();
            ikey::lookup_key_in(0, &k, 4000 + rng.below(2000))
        })
        .collect();
    let expected = walk(open_with(whole.clone(), None, MetaPolicy::default()).unwrap(), &targets);
    let mut keys: Vec<Vec<u8>> = entries.iter().map(|e| e.0.clone()).collect();
    keys.dedup();
    let w = open_with(whole, None, MetaPolicy::default()).unwrap();
    for (cache, policy) in residences() {
        let t = open_with(parts.clone(), cache.clone(), policy).unwrap();
        let c = ReadCounters::new();
        for i in 0..3100u32 {
            let k = format!("key{i:08}").into_bytes();
            for snap in [u64::MAX, 5030, 100] {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                let got = t.get(&k, hash_key(&k), snap, &c, &mut a).unwrap();
                let want = w.get(&k, hash_key(&k), snap, &c, &mut b).unwrap();
                assert_eq!((got, a), (want, b), "{i} at {snap}");
            }
        }
        let t = open_with(parts.clone(), cache, policy).unwrap();
        assert_eq!(walk(t, &targets), expected);
    }
}

#[test]
fn a_lookup_reads_one_index_partition() {
    let entries = simple_entries(3000);
    let (bytes, s) = build_with(&entries, Some(512));
    assert!(s.properties.index_partitions > 4);
    let cache = Arc::new(BlockCache::new(4 << 20));
    let t = open_with(bytes, Some(cache), MetaPolicy::default()).unwrap();
    let c = ReadCounters::new();
    for (k, _, _, v) in &entries {
        let before = c.snapshot();
        let got = t.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
        assert_eq!(got, GetResult::Found(v.clone()));
        let d = c.snapshot().minus(&before);
        assert_eq!((d.index_blocks_read, d.index_cache_hits + d.index_cache_misses), (1, 1));
    }
    assert_eq!(c.snapshot().index_cache_misses, s.properties.index_partitions);
}

#[test]
fn a_small_index_is_not_partitioned() {
    let entries = simple_entries(30);
    let (a, _) = build_with(&entries, None);
    let (b, s) = build_with(&entries, Some(4096));
    assert_eq!(a, b);
    assert_eq!((s.properties.format_version, s.properties.index_partitions), (1, 0));
}

#[test]
fn every_byte_flip_of_a_partitioned_index_table_is_detected_without_panic() {
    let entries = simple_entries(150);
    let (bytes, s) = build_with(&entries, Some(128));
    assert!(s.properties.index_partitions > 2);
    let read_all = |bytes: Vec<u8>, cache: Option<Arc<BlockCache>>| -> Result<()> {
        let t = Arc::new(open_with(bytes, cache, MetaPolicy::default())?);
        let c = ReadCounters::new();
        for (k, _, _, _) in &entries {
            t.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new())?;
        }
        let mut it = t.iter(false);
        it.seek_to_last()?;
        while it.valid() {
            it.prev()?;
        }
        Ok(())
    };
    read_all(bytes.clone(), None).unwrap();
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x04;
        for cache in [None, Some(Arc::new(BlockCache::new(1 << 20)))] {
            let e = read_all(bad.clone(), cache).expect_err(&format!("flip at {i} unnoticed"));
            assert!(e.is_corruption(), "byte {i}: {e}");
        }
    }
}
