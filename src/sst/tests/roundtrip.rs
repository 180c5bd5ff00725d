use super::*;
use crate::filter::hash_key;
use crate::rng::SplitMix64;
use crate::sst::{Compression, GetResult, ReadCounters};

/// Entries for `keys` user keys with 1..=4 versions each (distinct sequence numbers below
/// 2^40), about a quarter of the versions tombstones and an eighth merge operands; sorted in
/// internal-key order.
fn versioned_entries(keys: u32, seed: u64) -> Vec<Entry> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    for i in 0..keys {
        let k = format!("user{:09}", 3 * i).into_bytes();
        let mut seqs: Vec<u64> = (0..1 + rng.below(4)).map(|_| 1 + rng.below(1 << 40)).collect();
        seqs.sort_unstable();
        seqs.dedup();
        for s in seqs {
            let kind = match rng.below(8) {
                0 | 1 => ValueKind::Delete,
                2 => ValueKind::Merge,
                _ => ValueKind::Put,
            };
            let v =
                if kind != ValueKind::Delete { format!("v{i}@{s}").into_bytes() } else { vec![] };
            out.push((k.clone(), s, kind, v));
        }
    }
    sort_entries(&mut out);
    out
}

/// What a get of `versions[..]` (one user key, newest first) returns at `snap`, and the merge
/// operands it collects on the way (newest first).
fn model_get(versions: &[Entry], snap: u64) -> (GetResult, Vec<Vec<u8>>) {
    let mut operands = Vec::new();
    for (_, _, kind, v) in versions.iter().filter(|e| e.1 <= snap) {
        match kind {
            ValueKind::Delete | ValueKind::RangeDelete => return (GetResult::Deleted, operands),
            ValueKind::Put => return (GetResult::Found(v.clone()), operands),
            ValueKind::Merge => operands.push(v.clone()),
            ValueKind::BlobIndex => unreachable!("the generator writes no blob references"),
        }
    }
    (GetResult::NotFound, operands)
}

#[test]
fn hundred_thousand_entries_round_trip_at_every_snapshot() {
    let mut entries = versioned_entries(40_000, 1);
    while entries.len() < 100_000 {
        let more = versioned_entries(4_000, entries.len() as u64);
        let base = entries.len();
        // Shift the extra keys past the existing ones by prefixing "z".
        entries
            .extend(more.into_iter().map(|(k, s, t, v)| {
                ([b"z".as_slice(), &k, &base.to_be_bytes()].concat(), s, t, v)
            }));
    }
    sort_entries(&mut entries);
    let deletions = entries.iter().filter(|e| e.2 == ValueKind::Delete).count() as u64;
    let (bytes, summary) = build(&entries, TableOptions::default(), bloom_source());
    assert_eq!(summary.entries, entries.len() as u64);
    assert_eq!(summary.properties.deletions, deletions);
    assert_eq!(summary.file_size, bytes.len() as u64);
    assert_eq!(summary.smallest_key, entries[0].0);
    assert_eq!(summary.largest_key, entries.last().unwrap().0);
    assert_eq!(summary.smallest_seq, entries.iter().map(|e| e.1).min().unwrap());
    assert_eq!(summary.largest_seq, entries.iter().map(|e| e.1).max().unwrap());
    assert_eq!(summary.filter_kind, 1);

    let table = Arc::new(open(bytes, Some(Arc::new(BlockCache::new(1 << 20)))).unwrap());
    assert_eq!(table.properties(), &summary.properties);
    assert_eq!(table.filter_memory_bytes() as u64, summary.filter_bytes);
    let c = ReadCounters::new();
    let mut rng = SplitMix64::new(2);
    let mut i = 0;
    while i < entries.len() {
        let mut j = i;
        while j < entries.len() && entries[j].0 == entries[i].0 {
            j += 1;
        }
        let versions = &entries[i..j];
        let k = &versions[0].0;
        let h = hash_key(k);
        // At each version's own seq, just below it, and at a random snapshot.
        let mut snaps: Vec<u64> = versions.iter().flat_map(|e| [e.1, e.1 - 1]).collect();
        snaps.push(rng.below(1 << 41));
        snaps.push(ikey::MAX_SEQ);
        for snap in snaps {
            let mut operands = Vec::new();
            let got = table.get(k, h, snap, &c, &mut operands).unwrap();
            assert_eq!((got, operands), model_get(versions, snap), "{k:?}@{snap}");
        }
        // An absent user key between this one and the next.
        let absent = [k.as_slice(), b"!"].concat();
        assert_eq!(
            table.get(&absent, hash_key(&absent), u64::MAX, &c, &mut Vec::new()).unwrap(),
            GetResult::NotFound
        );
        i = j;
    }
    let s = c.snapshot();
    assert_eq!(s.filter_checks, s.filter_useful + s.filter_positive);
    assert!(s.filter_true_positive <= s.filter_positive);

    // Full scan equals the input, in order.
    let mut it = table.iter(false);
    it.seek_to_first().unwrap();
    for (k, seq, kind, v) in &entries {
        assert!(it.valid());
        assert_eq!(it.key(), ikey::encode(k, *seq, *kind));
        assert_eq!(it.value(), v.as_slice());
        it.next().unwrap();
    }
    assert!(!it.valid());
    // Seeks land on the first entry >= the target.
    for _ in 0..2000 {
        let e = &entries[rng.below(entries.len() as u64) as usize];
        it.seek(&ikey::lookup_key(&e.0, e.1)).unwrap();
        assert_eq!(it.key(), ikey::encode(&e.0, e.1, e.2));
    }
    it.seek(&ikey::lookup_key(b"zzzz", 0)).unwrap();
    assert!(!it.valid());
}

#[test]
fn merge_operands_spanning_many_blocks_are_all_collected_down_to_the_base() {
    // One key with 500 operands over a Put, between two neighbours: its versions fill several
    // 256-byte blocks, so the lookup walks on through the index into the following blocks.
    let mut entries: Vec<Entry> = vec![(b"a".to_vec(), 1, ValueKind::Put, b"left".to_vec())];
    for s in (2..502u64).rev() {
        entries.push((b"m".to_vec(), s, ValueKind::Merge, s.to_le_bytes().to_vec()));
    }
    entries.push((b"m".to_vec(), 1, ValueKind::Put, b"base".to_vec()));
    entries.push((b"z".to_vec(), 600, ValueKind::Merge, b"lone".to_vec()));
    let opts = TableOptions { block_size: 256, ..Default::default() };
    let (bytes, summary) = build(&entries, opts, bloom_source());
    assert_eq!(summary.properties.format_version, 3);
    assert_eq!(summary.properties.merges, 501);
    assert_eq!(summary.properties.merge_operator.as_deref(), Some(""));
    assert!(summary.properties.data_blocks > 10);
    let table = open(bytes, None).unwrap();
    let c = ReadCounters::new();
    let k = b"m".as_slice();
    for snap in [1, 2, 250, 501, ikey::MAX_SEQ] {
        let mut operands = Vec::new();
        let got = table.get(k, hash_key(k), snap, &c, &mut operands).unwrap();
        let want: Vec<Vec<u8>> =
            (2..=snap.min(501)).rev().map(|s| s.to_le_bytes().to_vec()).collect();
        assert_eq!((got, operands), (GetResult::Found(b"base".to_vec()), want), "@{snap}");
    }
    // Operands alone at the end of the table: NotFound (no base here), operands kept.
    let mut operands = Vec::new();
    let got = table.get(b"z", hash_key(b"z"), u64::MAX, &c, &mut operands).unwrap();
    assert_eq!((got, operands), (GetResult::NotFound, vec![b"lone".to_vec()]));
}

#[test]
fn filter_is_checked_before_any_block_read() {
    let entries = simple_entries(5_000);
    let (bytes, _) = build(&entries, TableOptions::default(), bloom_source());
    let table = open(bytes, None).unwrap();
    let filter = table.filter().expect("bloom filter loaded");
    let c = ReadCounters::new();
    let mut rejected = 0u64;
    for i in 0..4_999 {
        // Odd numbers are absent but inside the table's key range.
        let k = format!("key{:08}", 2 * i + 1).into_bytes();
        let h = hash_key(&k);
        let before = c.snapshot();
        assert_eq!(table.get(&k, h, u64::MAX, &c, &mut Vec::new()).unwrap(), GetResult::NotFound);
        let after = c.snapshot();
        if !filter.contains_hash(h) {
            rejected += 1;
            assert_eq!(after.index_blocks_read, before.index_blocks_read);
            assert_eq!(after.data_blocks_read, before.data_blocks_read);
            assert_eq!(after.filter_useful, before.filter_useful + 1);
        } else {
            assert_eq!(after.data_blocks_read, before.data_blocks_read + 1);
        }
    }
    let s = c.snapshot();
    assert_eq!(s.filter_checks, 4_999);
    assert_eq!(s.filter_useful, rejected);
    assert_eq!(s.filter_true_positive, 0);
    // FPR at 1%, N = 4999: 5 binomial sigmas = 5 * sqrt(0.01 * 0.99 / 4999) = 0.0070.
    assert!(s.filter_positive as f64 / 4999.0 <= 0.01 + 0.0071, "{s:?}");
    // Present keys: every one is a positive and a true positive.
    for (k, _, _, v) in &entries[..1000] {
        assert_eq!(
            table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap(),
            GetResult::Found(v.clone())
        );
    }
    let t = c.snapshot();
    assert_eq!(t.filter_true_positive, 1000);
    assert_eq!(t.filter_positive, s.filter_positive + 1000);
}

/// A valid envelope whose kind tag (200) no build knows.
fn unknown_kind_filter(hashes: &[u64]) -> Vec<u8> {
    let mut f = StandardBloom::with_false_pos(0.01).expected_items(hashes.len() as u64).unwrap();
    f.insert_batch(hashes);
    let mut b = f.to_bytes();
    b[5] = 200;
    let n = b.len() - 4;
    let crc = crc32fast::hash(&b[..n]);
    b[n..].copy_from_slice(&crc.to_le_bytes());
    b
}

#[test]
fn unknown_filter_kind_answers_may_contain() {
    let entries = simple_entries(2_000);
    let hashes: Vec<u64> = entries.iter().map(|e| hash_key(&e.0)).collect();
    let fb = unknown_kind_filter(&hashes);
    let (bytes, summary) = build(&entries, TableOptions::default(), FilterBlockSource::Bytes(fb));
    assert_eq!(summary.filter_kind, 200);
    let table = open(bytes, None).unwrap();
    assert!(table.filter().is_none());
    assert_eq!(table.filter_memory_bytes() as u64, summary.filter_bytes);
    let c = ReadCounters::new();
    for (i, (k, _, _, v)) in entries.iter().enumerate() {
        assert_eq!(
            table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap(),
            GetResult::Found(v.clone())
        );
        let absent = format!("key{:08}", 2 * i + 1).into_bytes();
        let r = table.get(&absent, hash_key(&absent), u64::MAX, &c, &mut Vec::new()).unwrap();
        assert_eq!(r, GetResult::NotFound);
    }
    let s = c.snapshot();
    assert_eq!((s.filter_checks, s.filter_unusable), (0, 3_999)); // last absent key is out of range
    assert_eq!(s.data_blocks_read, 3_999);
}

#[test]
fn table_without_filter_and_empty_table_answer_correctly() {
    let entries = simple_entries(300);
    let (bytes, summary) = build(&entries, TableOptions::default(), FilterBlockSource::None);
    assert_eq!((summary.filter_kind, summary.filter_bytes), (0, 0));
    let table = open(bytes, None).unwrap();
    let c = ReadCounters::new();
    for (k, _, _, v) in &entries {
        assert_eq!(
            table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap(),
            GetResult::Found(v.clone())
        );
        assert_eq!(table.get(k, hash_key(k), 0, &c, &mut Vec::new()).unwrap(), GetResult::NotFound);
    }
    assert_eq!(c.snapshot().filter_checks, 0);

    let (bytes, summary) = build(&[], TableOptions::default(), bloom_source());
    assert_eq!(summary.entries, 0);
    let table = Arc::new(open(bytes, None).unwrap());
    assert_eq!(
        table.get(b"a", hash_key(b"a"), 9, &c, &mut Vec::new()).unwrap(),
        GetResult::NotFound
    );
    let mut it = table.iter(true);
    it.seek_to_first().unwrap();
    assert!(!it.valid());
}

#[test]
fn zstd_and_lz4_shrink_blocks_and_read_back_identically() {
    let entries = simple_entries(20_000);
    let (plain, plain_summary) = build(&entries, TableOptions::default(), bloom_source());
    // Uncompressed tables keep format version 1, which builds before LZ4 read.
    assert_eq!(plain_summary.properties.format_version, 1);
    // (compression, its tag, the format version it needs: LZ4 tables are version 2)
    for (compression, tag, version) in
        [(Compression::Zstd { level: 3 }, 1, 1), (Compression::Lz4, 2, 2)]
    {
        let opts = TableOptions { compression, ..Default::default() };
        let (packed, summary) = build(&entries, opts, bloom_source());
        assert_eq!(summary.properties.compression, tag);
        assert_eq!(summary.properties.format_version, version);
        assert!(
            packed.len() * 2 < plain.len(),
            "{compression:?} {} vs {}",
            packed.len(),
            plain.len()
        );
        let table = Arc::new(open(packed, None).unwrap());
        let c = ReadCounters::new();
        for (k, _, _, v) in entries.iter().step_by(7) {
            let got = table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
            assert_eq!(got, GetResult::Found(v.clone()));
        }
        let mut it = table.iter(false);
        it.seek_to_first().unwrap();
        let mut n = 0;
        while it.valid() {
            assert_eq!(it.key(), ikey::encode(&entries[n].0, entries[n].1, entries[n].2));
            assert_eq!(it.value(), entries[n].3.as_slice());
            n += 1;
            it.next().unwrap();
        }
        assert_eq!(n, entries.len());
    }
}

#[test]
fn block_cache_counts_hits_and_stays_within_its_bytes() {
    let entries = simple_entries(20_000); // about 200 data blocks of 4 KiB
    let (bytes, summary) = build(&entries, TableOptions::default(), bloom_source());
    assert!(summary.properties.data_blocks > 100);
    let capacity = 8 * (4096 + crate::cache::ENTRY_OVERHEAD + 200);
    let cache = Arc::new(BlockCache::with_shards(capacity, 1));
    let table = open(bytes, Some(Arc::clone(&cache))).unwrap();
    let c = ReadCounters::new();
    let k = &entries[0].0;
    table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
    table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
    let s = c.snapshot();
    assert_eq!((s.block_cache_misses, s.block_cache_hits, s.data_blocks_read), (1, 1, 2));
    for (k, _, _, _) in &entries {
        table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
        assert!(cache.usage() <= capacity);
    }
    let s = c.snapshot();
    assert_eq!(s.block_cache_hits + s.block_cache_misses, s.data_blocks_read);
    // Each block's keys are read consecutively: one miss per block, the rest hit.
    assert_eq!(s.block_cache_misses, summary.properties.data_blocks);
    assert_eq!((cache.hits(), cache.misses()), (s.block_cache_hits, s.block_cache_misses));
    assert!(cache.len() <= 8 && cache.len() >= 6, "{}", cache.len());
    // The first block was evicted long ago: reading it again is a miss.
    table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
    assert_eq!(c.snapshot().block_cache_misses, s.block_cache_misses + 1);
}

#[test]
fn builder_rejects_out_of_order_duplicate_and_malformed_keys() {
    let mut b = TableBuilder::new(Box::new(MemFile::default()), TableOptions::default()).unwrap();
    b.add(&ikey::encode(b"b", 5, ValueKind::Put), b"x").unwrap();
    let bad = [
        ikey::encode(b"a", 9, ValueKind::Put),    // smaller user key
        ikey::encode(b"b", 5, ValueKind::Put),    // duplicate
        ikey::encode(b"b", 6, ValueKind::Delete), // newer version sorts first: out of order
        b"short".to_vec(),
    ];
    for k in bad {
        assert!(matches!(b.add(&k, b""), Err(Error::InvalidArgument(_))), "{k:?}");
    }
    b.add(&ikey::encode(b"b", 4, ValueKind::Delete), b"").unwrap();
    assert_eq!(b.entries(), 2);
    let r = b.finish(FilterBlockSource::Bytes(b"not a filter".to_vec()));
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    let opts = TableOptions { block_size: 10, ..Default::default() };
    assert!(TableBuilder::new(Box::new(MemFile::default()), opts).is_err());
}

#[test]
fn tables_are_shared_across_threads_with_one_cache() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Table>();
    send_sync::<BlockCache>();
    send_sync::<ReadCounters>();
    fn send<T: Send>() {}
    send::<TableBuilder>();
    send::<crate::sst::TableIter>();

    let entries = simple_entries(10_000);
    let (bytes, _) = build(&entries, TableOptions::default(), bloom_source());
    let cache = Arc::new(BlockCache::new(64 * 1024));
    let table = Arc::new(open(bytes, Some(Arc::clone(&cache))).unwrap());
    let c = Arc::new(ReadCounters::new());
    let entries = Arc::new(entries);
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let (table, c, entries) = (Arc::clone(&table), Arc::clone(&c), Arc::clone(&entries));
            std::thread::spawn(move || {
                for (k, _, _, v) in entries.iter().skip(t).step_by(2) {
                    let r = table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
                    assert_eq!(r, GetResult::Found(v.clone()));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = c.snapshot();
    assert_eq!(s.data_blocks_read, 10_000);
    assert_eq!(s.block_cache_hits + s.block_cache_misses, 10_000);
    assert!(cache.usage() <= 64 * 1024 + crate::cache::DEFAULT_SHARDS);
}

/// A file whose appends fail from the `fail_at`-th call on.
struct FailingFile {
    appends: usize,
    fail_at: usize,
}

impl WritableFile for FailingFile {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        self.appends += 1;
        if self.appends >= self.fail_at {
            return Err(Error::io("append", std::io::Error::other("disk full")));
        }
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}

#[test]
fn failed_write_poisons_the_builder() {
    let file = Box::new(FailingFile { appends: 0, fail_at: 2 });
    let opts = TableOptions { block_size: 64, ..Default::default() };
    let mut b = TableBuilder::new(file, opts).unwrap();
    let mut failed = None;
    // 8 KiB values: the write buffer goes to the file every 32 or so entries.
    let value = vec![7u8; 8 << 10];
    for (i, (k, s, t, _)) in simple_entries(200).into_iter().enumerate() {
        if let Err(e) = b.add(&ikey::encode(&k, s, t), &value) {
            failed = Some((i, e));
            break;
        }
    }
    let (i, e) = failed.expect("second write of the buffer fails");
    let per_write = crate::sst::builder::WRITE_BUFFER / value.len();
    assert!((per_write..=3 * per_write).contains(&i), "failed at entry {i}");
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(b.add(&ikey::encode(b"zzz", 1, ValueKind::Put), b"").is_err());
    assert!(b.finish(FilterBlockSource::None).is_err());
}
