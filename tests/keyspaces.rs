//! Keyspaces: create, list, drop and reopen; the same user key in two keyspaces stays two keys
//! through flush, compaction and reopen; each keyspace's files carry its own options; a batch
//! across keyspaces is atomic across a crash; a snapshot covers every keyspace; a drop frees
//! the keyspace's files; bad names and dropped handles are typed errors.

use siftdb::inspect::filename;
use siftdb::inspect::manifest;
use siftdb::inspect::sst::Table;
use siftdb::options::{
    Compression, FilterAllocation, FilterConfig, FilterPolicy, StaticFilterKind,
};
use siftdb::storage::{MemStorage, Storage};
use siftdb::{Db, Error, KeyspaceOptions, Options, WriteBatch, WriteOptions};
use std::path::Path;

mod common;
use common::mem_options;

fn keys(it: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.collect::<siftdb::Result<_>>().unwrap()
}

fn kv(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (k.as_bytes().to_vec(), v.as_bytes().to_vec())
}

fn is_invalid(e: Error, needle: &str) -> bool {
    matches!(&e, Error::InvalidArgument(m) if m.contains(needle))
}

#[test]
fn keyspaces_are_created_listed_dropped_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(db.keyspace_names(), vec!["default"]);
        db.keyspace("a", KeyspaceOptions::default()).unwrap().put("k", "a").unwrap();
        db.keyspace("b", KeyspaceOptions::default()).unwrap().put("k", "b").unwrap();
        db.keyspace("c", KeyspaceOptions::default()).unwrap();
        db.drop_keyspace("c").unwrap();
        assert_eq!(db.keyspace_names(), vec!["default", "a", "b"]);
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.keyspace_names(), vec!["default", "a", "b"]);
    let a = db.existing_keyspace("a").expect("a survives reopen");
    assert_eq!(a.get("k").unwrap(), Some(b"a".to_vec()));
    assert!(db.existing_keyspace("c").is_none());
    assert_eq!(db.get("k").unwrap(), None, "the default keyspace never saw those writes");
}

#[test]
fn the_same_user_key_in_two_keyspaces_stays_independent_through_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options { memtable_size: 16 << 10, ..Options::default() };
    let n = 600u32;
    {
        let db = Db::open(dir.path(), opts()).unwrap();
        let x = db.keyspace("x", KeyspaceOptions::default()).unwrap();
        for i in 0..n {
            let k = format!("key{i:05}");
            db.put(&k, format!("d{i}")).unwrap();
            x.put(&k, format!("x{i}")).unwrap();
        }
        for i in (0..n).step_by(3) {
            x.delete(format!("key{i:05}")).unwrap();
        }
        db.flush().unwrap();
        assert!(db.stats().flushes > 1);
        db.compact().unwrap();
        // Both keyspaces' files exist and none mixes them.
        let st = db.stats();
        assert!(st.keyspaces.iter().all(|k| k.files > 0), "{:?}", st.keyspaces);
    }
    let db = Db::open(dir.path(), opts()).unwrap();
    let x = db.keyspace("x", KeyspaceOptions::default()).unwrap();
    for i in 0..n {
        let k = format!("key{i:05}");
        assert_eq!(db.get(&k).unwrap(), Some(format!("d{i}").into_bytes()));
        let want = (i % 3 != 0).then(|| format!("x{i}").into_bytes());
        assert_eq!(x.get(&k).unwrap(), want);
        assert_eq!(x.contains_key(&k).unwrap(), i % 3 != 0);
    }
    assert_eq!(keys(db.scan().unwrap()).len(), n as usize);
    let xs = keys(x.scan().unwrap());
    assert_eq!(xs.len(), (n - n.div_ceil(3)) as usize);
    assert_eq!(xs[0], kv("key00001", "x1"));
    let back: Vec<_> = x.scan().unwrap().rev().collect::<siftdb::Result<_>>().unwrap();
    assert_eq!(back.len(), xs.len());
    assert_eq!(back[0], kv("key00599", "x599"));
    assert_eq!(keys(x.prefix("key0001").unwrap()).len(), 7); // key00010..=19 but 12, 15, 18
    assert_eq!(keys(x.range("key00590".."key00595").unwrap()).len(), 3);
    let got = x.multi_get(["key00001", "key00003", "nope"]);
    let got: Vec<_> = got.into_iter().collect::<siftdb::Result<_>>().unwrap();
    assert_eq!(got, vec![Some(b"x1".to_vec()), None, None]);
    let mut c = x.cursor().unwrap();
    c.seek_to_last().unwrap();
    assert_eq!(c.key(), b"key00599");
    c.seek_for_prev(b"key00003").unwrap(); // deleted: the one before it
    assert_eq!(c.key(), b"key00002");
}

#[test]
fn an_empty_keyspace_between_full_ones_scans_empty_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    let c = db.keyspace("c", KeyspaceOptions::default()).unwrap();
    a.put("", "a").unwrap();
    c.put("", "c").unwrap();
    for round in 0..2 {
        assert!(keys(b.scan().unwrap()).is_empty(), "round {round}");
        assert!(b.scan().unwrap().next_back().is_none(), "round {round}");
        let mut cur = b.cursor().unwrap();
        cur.seek_to_last().unwrap();
        assert!(!cur.valid());
        assert_eq!(keys(a.scan().unwrap().rev()), vec![kv("", "a")]);
        assert_eq!(keys(c.scan().unwrap()), vec![kv("", "c")]);
        db.flush().unwrap();
    }
}

/// Every table of the database, as (keyspace id, compression tag, filter kind tag, block size).
fn tables(storage: &MemStorage, dir: &Path) -> Vec<(u32, u8, u8, u64)> {
    let state = manifest::recover(storage, dir).unwrap().expect("a database");
    let mut out = Vec::new();
    for meta in state.levels.iter().flat_map(|l| l.values()) {
        let path = dir.join(filename::sst_name(meta.number));
        let t = Table::open(storage.open(&path).unwrap(), meta.number, None, &path).unwrap();
        let p = t.properties();
        assert_eq!(siftdb::inspect::ikey::keyspace(&p.smallest_key), meta.keyspace);
        assert_eq!(siftdb::inspect::ikey::keyspace(&p.largest_key), meta.keyspace);
        let version = if meta.keyspace == 0 { 1 } else { 3 };
        assert_eq!(p.format_version, version, "file {}", meta.number);
        out.push((meta.keyspace, p.compression, p.filter_kind, p.block_size));
    }
    out
}

#[test]
fn each_keyspace_writes_its_files_with_its_own_options_even_unopened_after_reopen() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let opts = || Options {
        compaction: siftdb::options::CompactionOptions { auto: false, ..Default::default() },
        ..mem_options(&storage)
    };
    // z: blocked Bloom at flush, xor16 after compaction (the database default is ribbon).
    let zstd = KeyspaceOptions {
        filter_policy: FilterPolicy {
            flush: FilterConfig::BlockedBloom { bits_per_key: 10.0 },
            compaction: StaticFilterKind::Xor16,
            ..FilterPolicy::default()
        },
        compression: Compression::Zstd(3),
        block_size: 1024,
        ..KeyspaceOptions::default()
    };
    let no_filters = FilterPolicy {
        flush: FilterConfig::None,
        compaction: StaticFilterKind::None,
        ..FilterPolicy::default()
    };
    let plain = KeyspaceOptions { filter_policy: no_filters, ..KeyspaceOptions::default() };
    {
        let db = Db::open(dir, opts()).unwrap();
        let z = db.keyspace("z", zstd).unwrap();
        let p = db.keyspace("p", plain.clone()).unwrap();
        let mut b = WriteBatch::new();
        for i in 0..200 {
            let k = format!("k{i:04}");
            b.put_in(&z, &k, "zzzzzzzzzzzzzzzzzzzzzzzzzz").put_in(&p, &k, "v").put(&k, "d");
        }
        db.write(b).unwrap();
        db.flush().unwrap();
    }
    let blocked = siftdb::filter::FilterKind::BlockedBloom.tag();
    let mut t = tables(&storage, dir);
    t.sort();
    assert_eq!(t.len(), 3, "one L0 file per keyspace: {t:?}");
    assert_eq!(t[0].0, 0);
    assert_eq!((t[1].0, t[1].1, t[1].2, t[1].3), (1, 1, blocked, 1024)); // z: zstd, blocked
    assert_eq!((t[2].0, t[2].1, t[2].2), (2, 0, 0)); // p: no compression, no filter
                                                     // Reopen and compact without opening the keyspaces: the persisted options still apply.
    {
        let db = Db::open(dir, opts()).unwrap();
        db.compact().unwrap();
        let ks = db.stats().keyspaces;
        assert_eq!(ks.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["default", "z", "p"]);
        assert_eq!(ks[2].filter_kinds, vec!["none"]);
        assert_eq!(ks[1].filter_kinds, vec!["xor16"], "z's own static filter");
        assert_eq!(ks[0].filter_kinds, vec!["bumped_ribbon"], "the database's");
    }
    let t = tables(&storage, dir);
    assert!(t.iter().any(|x| x.0 == 1 && x.1 == 1 && x.3 == 1024), "{t:?}");
    assert!(t.iter().any(|x| x.0 == 2 && x.1 == 0 && x.2 == 0), "{t:?}");
    // New options are persisted and apply to files written from then on.
    let db = Db::open(dir, opts()).unwrap();
    let lz4 = KeyspaceOptions { compression: Compression::Lz4, ..plain };
    db.keyspace("p", lz4).unwrap().put("new", "x").unwrap();
    db.flush().unwrap();
    drop(db);
    assert!(tables(&storage, dir).iter().any(|x| x.0 == 2 && x.1 == 2), "an LZ4 file of p");
}

#[test]
fn a_batch_across_keyspaces_is_all_or_nothing_across_a_crash() {
    for seed in 0..20u64 {
        let storage = MemStorage::new();
        let n = 40u64;
        {
            let db = Db::open("/db", mem_options(&storage)).unwrap();
            let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
            let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
            for i in 0..n {
                let mut batch = WriteBatch::new();
                let k = format!("k{i:03}");
                batch.put_in(&a, &k, "1").put_in(&b, &k, "2").put(&k, "3");
                db.write_opt(batch, WriteOptions { sync: i == n / 2 }).unwrap();
            }
            storage.crash_keep_random_prefix(seed);
        }
        let db = Db::open("/db", mem_options(&storage)).unwrap();
        let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
        let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
        let mut survived = 0;
        for i in 0..n {
            let k = format!("k{i:03}");
            let got = (a.get(&k).unwrap(), b.get(&k).unwrap(), db.get(&k).unwrap());
            match got {
                (Some(_), Some(_), Some(_)) => survived += 1,
                (None, None, None) => {}
                other => panic!("seed {seed}: batch {i} is torn: {other:?}"),
            }
        }
        assert!(survived > n / 2, "seed {seed}: the synced batch and those before it survive");
    }
}

#[test]
fn a_snapshot_covers_every_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    a.put("k", "old").unwrap();
    db.put("k", "old-default").unwrap();
    let snap = db.snapshot();
    a.put("k", "new").unwrap();
    a.put("k2", "new").unwrap();
    db.put("k", "new-default").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(snap.keyspace(&a).unwrap().get("k").unwrap(), Some(b"old".to_vec()));
    assert_eq!(snap.get("k").unwrap(), Some(b"old-default".to_vec()));
    assert_eq!(keys(snap.keyspace(&a).unwrap().scan().unwrap()), vec![kv("k", "old")]);
    assert_eq!(keys(snap.keyspace(&a).unwrap().range("k".."l").unwrap()).len(), 1);
    assert_eq!(keys(snap.keyspace(&a).unwrap().prefix("k2").unwrap()).len(), 0);
    assert!(snap.keyspace(&a).unwrap().contains_key("k").unwrap());
    assert!(!snap.keyspace(&a).unwrap().contains_key("k2").unwrap());
    let got = snap.keyspace(&a).unwrap().multi_get(["k2", "k"]);
    assert_eq!(
        got.into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
        [None, Some(b"old".to_vec())]
    );
    let mut c = snap.keyspace(&a).unwrap().cursor().unwrap();
    c.seek_to_last().unwrap();
    assert_eq!((c.key(), c.value()), (&b"k"[..], &b"old"[..]), "k2 came after the snapshot");
    c.prev().unwrap();
    assert!(!c.valid(), "the cursor stays in its keyspace");
    assert_eq!(a.get("k").unwrap(), Some(b"new".to_vec()));
}

#[test]
fn dropping_a_keyspace_frees_its_files_and_a_recreated_name_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let big = db.keyspace("big", KeyspaceOptions::default()).unwrap();
    for i in 0..2000 {
        big.put(format!("k{i:05}"), vec![b'x'; 200]).unwrap();
    }
    db.put("keep", "me").unwrap();
    db.flush().unwrap();
    big.put("unflushed", "gone").unwrap();
    let disk = || -> u64 {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.path().extension().is_some_and(|x| x == "sst"))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    };
    let before = disk();
    assert!(before > 400_000, "{before}");
    db.drop_keyspace("big").unwrap();
    let after = disk();
    assert!(after < before / 10, "drop must delete the keyspace's files: {before} -> {after}");
    assert!(is_invalid(big.get("k00001").unwrap_err(), "keyspace 'big' was dropped"));
    assert!(is_invalid(big.put("a", "b").unwrap_err(), "was dropped"));
    assert!(is_invalid(big.scan().err().unwrap(), "was dropped"));
    let mut batch = WriteBatch::new();
    batch.put("x", "y").put_in(&big, "a", "b");
    assert!(is_invalid(db.write(batch).unwrap_err(), "was dropped"));
    assert_eq!(db.get("x").unwrap(), None, "the failed batch wrote nothing");
    db.flush().unwrap();
    let again = db.keyspace("big", KeyspaceOptions::default()).unwrap();
    assert!(keys(again.scan().unwrap()).is_empty(), "old data never reappears");
    assert_eq!(again.get("unflushed").unwrap(), None);
    assert!(big.get("k1").is_err(), "the old handle stays dropped");
    drop((big, again));
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let again = db.keyspace("big", KeyspaceOptions::default()).unwrap();
    assert!(keys(again.scan().unwrap()).is_empty(), "nor after a reopen (WAL replay)");
    assert_eq!(db.get("keep").unwrap(), Some(b"me".to_vec()));
}

#[test]
fn bad_names_options_and_the_default_keyspace_give_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let d = KeyspaceOptions::default();
    assert!(is_invalid(db.keyspace("", d.clone()).unwrap_err(), "keyspace name"));
    assert!(is_invalid(db.keyspace(&"n".repeat(256), d.clone()).unwrap_err(), "1..=255"));
    assert!(is_invalid(db.keyspace("__query/t", d.clone()).unwrap_err(), "reserves"));
    assert!(is_invalid(db.drop_keyspace("default").unwrap_err(), "cannot be dropped"));
    assert!(is_invalid(db.drop_keyspace("missing").unwrap_err(), "no keyspace named"));
    let bad = KeyspaceOptions { block_size: 1, ..d.clone() };
    assert!(is_invalid(db.keyspace("x", bad).unwrap_err(), "block_size"));
    let bad = KeyspaceOptions { compression: Compression::Zstd(99), ..d.clone() };
    assert!(is_invalid(db.keyspace("x", bad).unwrap_err(), "Zstd level"));
    let bad_policy = FilterPolicy {
        allocation: siftdb::FilterAllocation::Monkey { bits_per_key: -1.0 },
        ..FilterPolicy::default()
    };
    let bad = KeyspaceOptions { filter_policy: bad_policy, ..d.clone() };
    assert!(is_invalid(db.keyspace("x", bad).unwrap_err(), "Monkey"));
    assert_eq!(db.keyspace_names(), vec!["default"], "nothing was created");
    // "default" is the keyspace of Db's own methods.
    let def = db.keyspace("default", d.clone()).unwrap();
    def.put("k", "v").unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
    let other = KeyspaceOptions { block_size: 8192, ..d.clone() };
    assert!(is_invalid(db.keyspace("default", other).unwrap_err(), "Options"));
    // A handle of another database is refused by a snapshot.
    let dir2 = tempfile::tempdir().unwrap();
    let db2 = Db::open(dir2.path(), Options::default()).unwrap();
    let foreign = db2.keyspace("f", d).unwrap();
    assert!(is_invalid(db.snapshot().keyspace(&foreign).unwrap_err(), "another database"));
}

#[test]
fn a_checkpoint_carries_the_keyspaces() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    a.put("flushed", "1").unwrap();
    db.flush().unwrap();
    a.put("in-wal", "2").unwrap();
    db.keyspace("gone", KeyspaceOptions::default()).unwrap();
    db.drop_keyspace("gone").unwrap();
    db.checkpoint(dir.path().join("copy")).unwrap();
    let copy = Db::open(dir.path().join("copy"), Options::default()).unwrap();
    assert_eq!(copy.keyspace_names(), vec!["default", "a"]);
    let ca = copy.existing_keyspace("a").unwrap();
    assert_eq!(keys(ca.scan().unwrap()), vec![kv("flushed", "1"), kv("in-wal", "2")]);
}

#[test]
fn a_memtable_of_several_keyspaces_gets_each_flushed_filter_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    // A memtable filter sized for 1024 keys: as is for a right-sized, single-keyspace flush.
    // The two-bit flush filter as configured (a per-level allocation has no budget, so no
    // floor replaces it: design.md#all-runs).
    let opts = Options {
        memtable_size: 1024 * 128,
        filter_policy: FilterPolicy {
            allocation: FilterAllocation::PerLevel(vec![]),
            ..FilterPolicy::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..900 {
        db.put(format!("k{i:04}"), "v").unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    assert_eq!((s.flush_filter_as_is, s.flush_filter_rebuilt), (1, 0));
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    for i in 0..450 {
        db.put(format!("k{i:04}"), "v").unwrap();
        a.put(format!("k{i:04}"), "v").unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    assert_eq!((s.flush_filter_as_is, s.flush_filter_rebuilt), (1, 2), "one per output file");
    for i in 0..450 {
        assert!(a.contains_key(format!("k{i:04}")).unwrap());
    }
}
