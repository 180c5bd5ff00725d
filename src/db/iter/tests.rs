//! Scans both ways over multi-file levels, L0 files and chunked memtables, against a model.

use crate::prefix::successor as prefix_successor;
use crate::rng::SplitMix64;
use crate::storage::MemStorage;
use crate::version::borrowed;
use crate::{CompactionOptions, Db, Options};
use std::collections::BTreeMap;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A database with small files whose compacted data spans many files per level (so seeks land
/// in every file and scans cross file boundaries), overwrites and tombstones in L0 files and in
/// the memtable, and the model of its contents. Keys are even numbers (odd ones are absent).
fn layered_db(seed: u64) -> (Db, Model) {
    let opts = Options {
        storage: Some(Arc::new(MemStorage::new())),
        memtable_size: 64 << 10,
        compaction: CompactionOptions {
            max_bytes_for_level_base: 256 << 10,
            target_file_size: 32 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    let mut rng = SplitMix64::new(seed);
    let mut model = BTreeMap::new();
    for round in 0..2 {
        for i in 0..20_000u64 {
            let k = (rng.below(50_000) * 2).to_be_bytes().to_vec();
            if i % 7 == 3 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("v{round}-{i}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        if round == 0 {
            db.compact().unwrap();
            let files: Vec<usize> = (1..7).map(|l| db.stats().levels[l].files).collect();
            assert!(files.iter().any(|&n| n >= 3), "levels hold several files: {files:?}");
        }
    }
    (db, model)
}

fn key(n: u64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

#[test]
fn seeks_across_multi_file_levels_and_chunked_memtables_match_a_model() {
    let (db, model) = layered_db(9);
    let mut rng = SplitMix64::new(10);
    for _ in 0..300 {
        let start = key(rng.below(100_002)); // odd starts fall between keys
        let n = rng.below(40) as usize + 1;
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            db.range(start.as_slice()..).unwrap().take(n).map(|kv| kv.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.range(start..).take(n).map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got, want);
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(all.len(), model.len());
    assert!(all.iter().zip(&model).all(|((k, v), (mk, mv))| k == mk && v == mv));
}

#[test]
fn reverse_scans_across_multi_file_levels_and_chunked_memtables_match_a_model() {
    let (db, model) = layered_db(12);
    let mut rng = SplitMix64::new(13);
    for _ in 0..300 {
        let end = key(rng.below(100_002));
        let n = rng.below(40) as usize + 1;
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            db.range(..=end.as_slice()).unwrap().rev().take(n).map(|kv| kv.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.range(..=end).rev().take(n).map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got, want);
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().rev().map(|kv| kv.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all.len(), want.len());
    assert!(all == want, "full reverse scan differs from the model");
}

#[test]
fn next_and_next_back_interleaved_meet_in_the_middle_without_repeating_an_entry() {
    let (db, model) = layered_db(14);
    let mut rng = SplitMix64::new(15);
    for _ in 0..60 {
        let (a, b) = (rng.below(100_002), rng.below(100_002));
        let (lo, hi) = (key(a.min(b)), key(a.max(b)));
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.range(lo.clone()..hi.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut it = db.range(lo.as_slice()..hi.as_slice()).unwrap();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            if rng.below(2) == 0 {
                let Some(kv) = it.next() else { break };
                front.push(kv.unwrap());
            } else {
                let Some(kv) = it.next_back() else { break };
                back.push(kv.unwrap());
            }
        }
        assert!(it.next().is_none(), "an exhausted iterator stays exhausted");
        assert!(it.next_back().is_none());
        back.reverse();
        front.extend(back);
        assert_eq!(front, want, "range {a}..{b}: every entry exactly once, in order");
    }
}

#[test]
fn cursor_walks_with_direction_changes_match_a_model_at_a_snapshot() {
    let (db, model) = layered_db(16);
    let snap = db.snapshot();
    // Writes after the snapshot (overwrites and deletes) must stay invisible through it.
    for n in (0..100_000).step_by(2 * 97) {
        db.delete(key(n)).unwrap();
        db.put(key(n + 2), b"after the snapshot").unwrap();
    }
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let mut rng = SplitMix64::new(17);
    let mut c = snap.cursor().unwrap();
    assert!(!c.valid(), "a new cursor is on no entry");
    for _ in 0..200 {
        let target = key(rng.below(100_002));
        let mut at: Option<usize> = if rng.below(2) == 0 {
            c.seek(&target).unwrap();
            Some(keys.partition_point(|k| **k < target)).filter(|&i| i < keys.len())
        } else {
            c.seek_for_prev(&target).unwrap();
            keys.partition_point(|k| **k <= target).checked_sub(1)
        };
        for _ in 0..30 {
            match at {
                Some(i) => {
                    assert!(c.valid());
                    assert_eq!(c.key(), keys[i].as_slice());
                    assert_eq!(c.value(), model[keys[i]].as_slice());
                }
                None => {
                    assert!(!c.valid());
                    break;
                }
            }
            let i = at.expect("valid");
            if rng.below(2) == 0 {
                c.next().unwrap();
                at = Some(i + 1).filter(|&j| j < keys.len());
            } else {
                c.prev().unwrap();
                at = i.checked_sub(1);
            }
        }
    }
    c.seek_to_first().unwrap();
    assert_eq!(c.key(), keys[0].as_slice());
    c.prev().unwrap();
    assert!(!c.valid(), "prev before the first entry leaves the cursor invalid");
    c.seek_to_last().unwrap();
    assert_eq!(c.key(), keys[keys.len() - 1].as_slice());
    c.next().unwrap();
    assert!(!c.valid());
}

#[test]
fn prefix_successor_increments_last_non_ff_byte() {
    assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
    assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
    assert_eq!(prefix_successor(b"\xff\xff"), None);
    assert_eq!(prefix_successor(b""), None);
}

/// Prefix scans whose upper bound is built on the stack (prefixes up to 64 bytes) and on the
/// heap (longer), with 0xFF bytes where the successor carries, match the model.
#[test]
fn prefix_scans_of_short_long_and_ff_ending_prefixes_match_a_model() {
    let db = Db::open(
        "/db",
        Options { storage: Some(Arc::new(MemStorage::new())), ..Options::default() },
    )
    .unwrap();
    let mut model = Model::new();
    let mut rng = SplitMix64::new(3);
    let stems: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        b"a\xff".to_vec(),
        b"a\xff\xff".to_vec(),
        vec![9u8; 63],
        vec![9u8; 64],
        vec![9u8; 70],
        [vec![5u8; 65], vec![0xFF]].concat(),
    ];
    for stem in &stems {
        for _ in 0..20 {
            let mut k = stem.clone();
            k.extend((0..rng.below(3)).map(|_| rng.below(256) as u8));
            db.put(&k, b"v").unwrap();
            model.insert(k, b"v".to_vec());
        }
    }
    db.flush().unwrap();
    for stem in &stems {
        for cut in [stem.len(), stem.len().saturating_sub(1)] {
            let p = &stem[..cut];
            let got: Vec<Vec<u8>> = db.prefix(p).unwrap().map(|kv| kv.unwrap().0).collect();
            let want: Vec<Vec<u8>> = model.keys().filter(|k| k.starts_with(p)).cloned().collect();
            assert_eq!(got, want, "prefix {p:?}");
        }
    }
}

/// A level's overlapping run, found by binary search on the briefs, is exactly the files the
/// linear rule (`TableFile::overlaps`) admits, for every bound kind, in a database of two
/// keyspaces whose keys often share their first 8 bytes (equal briefs: full-key compares).
#[test]
fn a_levels_overlapping_run_is_the_files_the_linear_rule_admits() {
    use crate::KeyspaceOptions;
    use std::ops::Bound;
    let opts = Options {
        storage: Some(Arc::new(MemStorage::new())),
        memtable_size: 32 << 10,
        compaction: CompactionOptions {
            max_bytes_for_level_base: 128 << 10,
            target_file_size: 16 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    let other = db.keyspace("other", KeyspaceOptions::default()).unwrap();
    // Half the keys share the 8-byte prefix "prefix00", the rest are 8-byte numbers.
    let make = |rng: &mut SplitMix64| -> Vec<u8> {
        let n = rng.below(40_000) as u32;
        match rng.below(2) {
            0 => [b"prefix00".as_slice(), &n.to_be_bytes()].concat(),
            _ => (u64::from(n) << 40).to_be_bytes().to_vec(),
        }
    };
    let mut rng = SplitMix64::new(77);
    for _ in 0..12_000 {
        db.put(make(&mut rng), [7u8; 40]).unwrap();
        other.put(make(&mut rng), [8u8; 40]).unwrap();
    }
    db.compact().unwrap();
    let sv = db.inner.super_version();
    let levels = sv.version.levels();
    assert!(levels.iter().skip(1).any(|l| l.len() >= 8), "several files per sorted level");
    let bound = |rng: &mut SplitMix64| match rng.below(5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(make(rng)),
        _ => Bound::Excluded(make(rng)),
    };
    for _ in 0..3_000 {
        let keyspace = [0, other.id(), other.id() + 1][rng.below(3) as usize];
        let (lower, upper) = (bound(&mut rng), bound(&mut rng));
        for (level, files) in levels.iter().enumerate().skip(1) {
            let want: Vec<usize> = (0..files.len())
                .filter(|&i| files[i].overlaps(keyspace, borrowed(&lower), borrowed(&upper)))
                .collect();
            let got: Vec<usize> = sv
                .version
                .overlapping_in_level(level, keyspace, borrowed(&lower), borrowed(&upper))
                .collect();
            assert_eq!(got, want, "level {level}, keyspace {keyspace}, {lower:?}..{upper:?}");
        }
    }
}
