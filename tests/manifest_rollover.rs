//! The manifest rolls over while the database is open (`Options::max_manifest_file_size`):
//! flushes, compactions and keyspace edits keep one manifest file of bounded size, and a
//! reopen finds every write.

use siftdb::filter::rng::SplitMix64;
use siftdb::inspect::manifest;
use siftdb::storage::{MemStorage, Storage};
use siftdb::{CompactionOptions, Db, KeyspaceOptions, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn options(storage: &MemStorage) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        memtable_size: 16 << 10,
        max_manifest_file_size: 1024,
        // Explicit compactions only: no background job is running while the test looks at
        // the directory.
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 4 << 10,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

/// The manifests in `dir` with their sizes.
fn manifests(storage: &MemStorage, dir: &Path) -> Vec<(String, u64)> {
    let mut names: Vec<String> = storage.list(dir).unwrap();
    names.retain(|n| n.starts_with("MANIFEST-"));
    names.into_iter().map(|n| (n.clone(), storage.open(&dir.join(&n)).unwrap().len())).collect()
}

#[test]
fn a_long_running_database_keeps_one_bounded_manifest_and_reopens_with_every_write() {
    let dir = Path::new("/db");
    let storage = MemStorage::new();
    let db = Db::open(dir, options(&storage)).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = SplitMix64::new(0x3a21);
    let mut seen = std::collections::BTreeSet::new();
    let (mut flushes, mut compactions, mut largest) = (0, 0, 0);
    for round in 0..240u32 {
        for _ in 0..20 {
            let key = format!("key{:05}", rng.below(3000)).into_bytes();
            let value = format!("v{round}-{}", rng.below(1 << 30)).into_bytes();
            db.put(&key, &value).unwrap();
            model.insert(key, value);
        }
        db.flush().unwrap();
        flushes += 1;
        if round % 8 == 7 {
            db.compact().unwrap();
            compactions += 1;
        }
        if round % 30 == 29 {
            // Keyspace edits go through the same appends.
            let name = format!("ks{round}");
            let ks = db.keyspace(&name, KeyspaceOptions::from(&options(&storage))).unwrap();
            ks.put(b"k", b"v").unwrap();
            db.flush().unwrap();
            drop(ks);
            db.drop_keyspace(&name).unwrap();
        }
        let m = manifests(&storage, dir);
        assert_eq!(m.len(), 1, "round {round}: {m:?}");
        largest = largest.max(m[0].1);
        seen.insert(m[0].0.clone());
    }
    // Unbounded, the 240 flush edits and the compactions' edits alone would take about 40 KB.
    assert!(largest <= 4096, "the manifest reached {largest} bytes");
    assert!(seen.len() >= 10, "only {} manifests over {flushes} flushes", seen.len());
    assert!(db.stats().compactions >= compactions);
    drop(db);

    // CURRENT names the one manifest left, which replays to the live files.
    let state = manifest::recover(&storage, dir).unwrap().unwrap();
    assert_eq!(manifests(&storage, dir).len(), 1);
    let db = Db::open(dir, options(&storage)).unwrap();
    assert!(state.levels.iter().map(|l| l.len()).sum::<usize>() > 0);
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db.scan().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, model);
}
