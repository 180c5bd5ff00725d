//! `CompactionOptions::dynamic_level_bytes` end to end (design.md#dynamic-level-sizing):
//! background compaction of random puts, overwrites and deletes fills the last level first,
//! leaves the levels between L0 and the base level empty, and keeps contents equal to a model
//! through get and scans, after reopening with static targets, and after a full compaction.

use siftdb::filter::rng::SplitMix64;
use siftdb::storage::MemStorage;
use siftdb::{CompactionOptions, Db, Options, WriteBatch};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const LAST: usize = 6;

fn opts(storage: &MemStorage, dynamic_level_bytes: bool) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        memtable_size: 256 << 10,
        compaction: CompactionOptions {
            max_bytes_for_level_base: 512 << 10,
            max_bytes_for_level_multiplier: 4.0,
            target_file_size: 128 << 10,
            dynamic_level_bytes,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

fn check_model(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut it = db.scan().unwrap();
    for (k, v) in model {
        let (gk, gv) = it.next().expect("scan ended early").unwrap();
        assert_eq!((&gk, &gv), (k, v));
    }
    assert!(it.next().is_none(), "scan has keys the model lacks");
    let mut rev = db.scan().unwrap().rev();
    assert_eq!(rev.next().map(|r| r.unwrap().0).as_ref(), model.keys().next_back());
}

/// Bytes per level, from `stats`.
fn level_bytes(db: &Db) -> Vec<u64> {
    let mut bytes = vec![0; LAST + 1];
    for l in db.stats().levels {
        bytes[l.level] = l.bytes;
    }
    bytes
}

#[test]
fn the_last_level_fills_first_and_contents_match_the_model() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, opts(&storage, true)).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = SplitMix64::new(11);
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for round in 0..200u64 {
        let mut b = WriteBatch::new();
        for j in 0..500u64 {
            // A tenth overwrites and a tenth deletes an earlier key: compaction reclaims both.
            let r = rng.below(10);
            let k = if r < 2 && !keys.is_empty() {
                keys[rng.below(keys.len() as u64) as usize].clone()
            } else {
                let k = rng.next_u64().to_be_bytes().to_vec();
                keys.push(k.clone());
                k
            };
            if r == 0 {
                b.delete(&k);
                model.remove(&k);
            } else {
                let v = vec![(round * 500 + j) as u8; 100];
                b.put(&k, &v);
                model.insert(k, v);
            }
        }
        db.write(b).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    check_model(&db, &model);
    for k in keys.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_ref(), model.get(k));
    }

    // About 10 MB over a 512 KiB base and multiplier 4 spans a few levels, from the last up.
    let bytes = level_bytes(&db);
    let base = (1..=LAST).find(|&l| bytes[l] > 0).expect("data below L0");
    assert!(bytes[LAST] > 0, "{bytes:?}");
    assert!(base >= 3, "dynamic sizing uses the levels it needs, from the last up: {bytes:?}");
    assert!((base..=LAST).all(|l| bytes[l] > 0), "no gap below the base level: {bytes:?}");
    // Each level from the base holds at most its target once compaction settles, each target
    // a multiplier m = 4 below the next, so the last level holds at least 1 - 1/(m - 1) = 2/3
    // of the data below L0.
    let below_l0: u64 = bytes[1..].iter().sum();
    assert!(bytes[LAST] as f64 >= below_l0 as f64 * 2.0 / 3.0, "{bytes:?}");
    drop(db);

    // Reopened with static targets: the same contents, and compaction goes on from this shape.
    let db = Db::open(dir, opts(&storage, false)).unwrap();
    check_model(&db, &model);
    db.compact().unwrap();
    check_model(&db, &model);
    let bytes = level_bytes(&db);
    assert_eq!(bytes.iter().filter(|&&b| b > 0).count(), 1, "one sorted run: {bytes:?}");
}

#[test]
fn an_empty_tree_compacts_l0_straight_into_the_last_level() {
    let storage = MemStorage::new();
    let db = Db::open(Path::new("/db"), opts(&storage, true)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..20_000u32 {
        let k = format!("k{:08}", i.wrapping_mul(2_654_435_761)).into_bytes();
        db.put(&k, i.to_le_bytes()).unwrap();
        model.insert(k, i.to_le_bytes().to_vec());
    }
    db.compact().unwrap();
    let bytes = level_bytes(&db);
    assert!(bytes[LAST] > 0 && bytes[..LAST].iter().all(|&b| b == 0), "{bytes:?}");
    check_model(&db, &model);
}
