//! Key-value separation (design.md#key-value-separation): values at or above the blob threshold
//! live in blob files and every read path returns them; overwrites, deletes, reopen and
//! compaction keep a BTreeMap model's contents; garbage collection deletes obsolete blob files
//! and keeps the disk within a bound; a damaged blob file is `Corruption` naming it.

use siftdb::storage::{MemStorage, Storage};
use siftdb::{Db, Error, KeyspaceOptions, MergeOperator, Options, U64AddOperator, WriteBatch};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

mod common;

const THRESHOLD: u32 = 256;

fn opts(storage: &MemStorage) -> Options {
    Options {
        blob_threshold: Some(THRESHOLD),
        memtable_size: 256 << 10,
        ..common::mem_options(storage)
    }
}

fn blob_files(storage: &MemStorage, dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        storage.list(dir).unwrap().into_iter().filter(|n| n.ends_with(".blob")).collect();
    v.sort();
    v
}

/// A value of `len` bytes derived from `(i, round)`.
fn value(i: u64, round: u64, len: usize) -> Vec<u8> {
    let mut v = format!("v{i}-{round}-").into_bytes();
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v.truncate(len);
    v
}

/// A small seeded generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Checks every read path against `model`.
fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, probes: &[Vec<u8>]) {
    for k in probes {
        let want = model.get(k);
        assert_eq!(db.get(k).unwrap().as_ref(), want, "get {}", k.escape_ascii());
        assert_eq!(db.contains_key(k).unwrap(), want.is_some());
        let pinned = db.get_pinned(k).unwrap();
        assert_eq!(pinned.as_deref(), want.map(|v| v.as_slice()));
    }
    let got = db.multi_get(probes);
    for (k, r) in probes.iter().zip(got) {
        assert_eq!(r.unwrap().as_ref(), model.get(k), "multi_get {}", k.escape_ascii());
    }
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|r| r.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(fwd.len(), want.len());
    assert!(fwd == want, "forward scan differs from the model");
    let back: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().rev().map(|r| r.unwrap()).collect();
    assert!(back.iter().rev().eq(want.iter()), "reverse scan differs from the model");
    // A cursor: seek to the middle, walk both ways.
    if let Some((mid, _)) = model.iter().nth(model.len() / 2) {
        let mut c = db.cursor().unwrap();
        c.seek(mid).unwrap();
        let mut it = model.range(mid.clone()..);
        for _ in 0..20 {
            match it.next() {
                Some((k, v)) => {
                    assert!(c.valid());
                    assert_eq!((c.key(), c.value()), (k.as_slice(), v.as_slice()));
                    c.next().unwrap();
                }
                None => assert!(!c.valid()),
            }
        }
        c.seek_for_prev(mid).unwrap();
        let mut it = model.range(..=mid.clone()).rev();
        for _ in 0..20 {
            match it.next() {
                Some((k, v)) => {
                    assert!(c.valid());
                    assert_eq!((c.key(), c.value()), (k.as_slice(), v.as_slice()));
                    c.prev().unwrap();
                }
                None => assert!(!c.valid()),
            }
        }
    }
}

#[test]
fn every_read_path_returns_separated_values_through_overwrites_deletes_flushes_and_reopen() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(0x5eed);
    let n = 600u64;
    let probes: Vec<Vec<u8>> = (0..n + 20).map(common::key).collect();
    for round in 0..3u64 {
        let db = Db::open(dir, opts(&storage)).unwrap();
        for _ in 0..1500 {
            let i = rng.below(n);
            let k = common::key(i);
            match rng.below(10) {
                0 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                r => {
                    // Half below the threshold, half at or above it (the boundary included).
                    let len = match r % 3 {
                        0 => THRESHOLD as usize - 1,
                        1 => THRESHOLD as usize,
                        _ => 300 + rng.below(3000) as usize,
                    };
                    let v = value(i, round * 10_000 + rng.below(10_000), len);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
        }
        check(&db, &model, &probes); // memtable and L0 mixed
        db.flush().unwrap();
        assert!(!blob_files(&storage, dir).is_empty(), "large values went to blob files");
        check(&db, &model, &probes);
        // A snapshot keeps seeing its values after more writes and a flush.
        let snap = db.snapshot();
        let frozen = model.clone();
        for i in 0..50 {
            let k = common::key(i);
            let v = value(i, 99, 1000);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
        for k in &probes[..60] {
            assert_eq!(snap.get(k).unwrap().as_ref(), frozen.get(k));
        }
        drop(snap);
        check(&db, &model, &probes);
        db.close().unwrap();
    }
    let db = Db::open(dir, opts(&storage)).unwrap();
    check(&db, &model, &probes);
}

#[test]
fn multi_get_reads_the_values_of_several_blob_files_in_any_key_order_with_duplicates() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, opts(&storage)).unwrap();
    let mut model = BTreeMap::new();
    // Three flushes, three blob files; some keys overwritten by inline values, some deleted,
    // some only in the memtable.
    for round in 0..3u64 {
        for i in (round * 50)..(round * 50 + 120) {
            let len = if i % 5 == 0 { 10 } else { 600 };
            let v = value(i, round, len);
            db.put(common::key(i), &v).unwrap();
            model.insert(common::key(i), v);
        }
        db.delete(common::key(round * 7)).unwrap();
        model.remove(&common::key(round * 7));
        db.flush().unwrap();
    }
    db.put(common::key(3), value(3, 9, 700)).unwrap();
    model.insert(common::key(3), value(3, 9, 700));
    assert_eq!(blob_files(&storage, dir).len(), 3);
    let mut rng = Rng(7);
    let keys: Vec<Vec<u8>> = (0..500).map(|_| common::key(rng.below(300))).collect();
    for (k, got) in keys.iter().zip(db.multi_get(&keys)) {
        assert_eq!(got.unwrap().as_ref(), model.get(k), "multi_get {}", k.escape_ascii());
    }
    let snap = db.snapshot();
    for (k, got) in keys.iter().zip(snap.multi_get(&keys)) {
        assert_eq!(got.unwrap().as_ref(), model.get(k));
    }
}

#[test]
fn small_values_and_a_database_without_the_option_write_no_blob_file() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, opts(&storage)).unwrap();
    for i in 0..100 {
        db.put(common::key(i), value(i, 0, THRESHOLD as usize - 1)).unwrap();
    }
    db.flush().unwrap();
    assert!(blob_files(&storage, dir).is_empty());
    drop(db);
    let storage = MemStorage::new();
    let db = Db::open(dir, common::mem_options(&storage)).unwrap();
    for i in 0..100 {
        db.put(common::key(i), value(i, 0, 10_000)).unwrap();
    }
    db.flush().unwrap();
    assert!(blob_files(&storage, dir).is_empty());
}

#[test]
fn keyspace_option_is_recorded_and_separates_only_that_keyspace() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let ks_opts = KeyspaceOptions { blob_threshold: Some(100), ..KeyspaceOptions::default() };
    {
        let db = Db::open(dir, common::mem_options(&storage)).unwrap();
        let ks = db.keyspace("big", ks_opts.clone()).unwrap();
        for i in 0..50 {
            ks.put(common::key(i), value(i, 1, 500)).unwrap();
            db.put(common::key(i), value(i, 2, 500)).unwrap();
        }
        db.flush().unwrap();
        assert_eq!(blob_files(&storage, dir).len(), 1, "one blob file, of keyspace big");
        db.close().unwrap();
    }
    let db = Db::open(dir, common::mem_options(&storage)).unwrap();
    let ks = db.existing_keyspace("big").unwrap();
    for i in 0..50 {
        assert_eq!(ks.get(common::key(i)).unwrap(), Some(value(i, 1, 500)));
        assert_eq!(db.get(common::key(i)).unwrap(), Some(value(i, 2, 500)));
    }
    // Dropping the keyspace deletes its blob file (the default keyspace has none).
    db.drop_keyspace("big").unwrap();
    assert!(blob_files(&storage, dir).is_empty());
    let zero = KeyspaceOptions { blob_threshold: Some(0), ..KeyspaceOptions::default() };
    assert!(matches!(db.keyspace("z", zero), Err(Error::InvalidArgument(_))));
    let bad = Options { blob_threshold: Some(0), ..common::mem_options(&storage) };
    assert!(matches!(Db::open("/other", bad), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_flipped_byte_in_a_blob_file_is_corruption_naming_it_on_every_read_path() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, opts(&storage)).unwrap();
    for i in 0..20 {
        db.put(common::key(i), value(i, 0, 1000)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let name = blob_files(&storage, dir).pop().unwrap();
    let path = dir.join(&name);
    let mut bytes = storage.read_all(&path).unwrap();
    // Inside the 6th record's value: header 16, each record 16 + 10 + 1000 bytes.
    let at = 16 + 5 * (16 + 10 + 1000) + 12 + 10 + 500;
    bytes[at] ^= 0x40;
    let mut f = storage.create(&path).unwrap();
    f.append(&bytes).unwrap();
    f.sync().unwrap();
    let db = Db::open(dir, opts(&storage)).unwrap();
    let k = common::key(5);
    let is_named = |e: Error| matches!(&e, Error::Corruption { file: Some(f), .. } if f == &path);
    assert!(is_named(db.get(&k).unwrap_err()));
    assert!(is_named(db.multi_get([&k]).pop().unwrap().unwrap_err()));
    assert!(db.scan().unwrap().any(|r| r.is_err_and(is_named)));
    assert!(db.contains_key(&k).unwrap(), "contains_key reads no blob");
    // The other values are intact.
    assert_eq!(db.get(common::key(4)).unwrap(), Some(value(4, 0, 1000)));
    // A missing blob file is corruption too, naming it.
    db.close().unwrap();
    storage.remove(&path).unwrap();
    let db = Db::open(dir, opts(&storage)).unwrap();
    assert!(is_named(db.get(common::key(7)).unwrap_err()));
}

/// Live value bytes of the model.
fn live_bytes(model: &BTreeMap<Vec<u8>, Vec<u8>>) -> u64 {
    model.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
}

fn disk_bytes(storage: &MemStorage, dir: &Path) -> u64 {
    let names = storage.list(dir).unwrap();
    let data = names.iter().filter(|n| n.ends_with(".sst") || n.ends_with(".blob"));
    data.map(|n| storage.read_all(&dir.join(n)).unwrap().len() as u64).sum()
}

#[test]
fn compaction_carries_references_counts_garbage_and_gc_reclaims_the_space() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    // No background compaction: a compaction between the flushes would already relocate
    // (the age cutoff is 1.0) and merge the rounds' blob files before the count below.
    let o = || {
        let mut o = Options { blob_gc_age_cutoff: 1.0, ..opts(&storage) };
        o.compaction.auto = false;
        o
    };
    let db = Db::open(dir, o()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let n = 400u64;
    let probes: Vec<Vec<u8>> = (0..n).map(common::key).collect();
    // Three full overwrites of every key with 2 KiB values, each flushed into its own blob
    // files; some keys deleted in the last round.
    for round in 0..3u64 {
        for i in 0..n {
            let k = common::key(i);
            if round == 2 && i % 7 == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = value(i, round, 2048);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.flush().unwrap();
    }
    check(&db, &model, &probes);
    let before = db.stats();
    assert!(before.blob_files >= 3, "{} blob files", before.blob_files);
    db.compact().unwrap();
    check(&db, &model, &probes);
    let after = db.stats();
    // Every overwritten or deleted value was garbage and every file holding only garbage is
    // gone; with an age cutoff of 1.0 the live values were relocated into new files, so each
    // old file is all garbage.
    assert_eq!(after.blob_garbage_bytes, 0, "{after:?}");
    assert_eq!(after.blob_bytes, model.values().map(|v| v.len() as u64).sum::<u64>());
    assert!(after.blob_relocated > 0);
    let live = live_bytes(&model);
    let disk = disk_bytes(&storage, dir);
    // Bound: the live keys and values, plus per value its reference entry in an SST and its
    // record framing in the blob file (16 bytes + the key), far below the 3x of the overwrites.
    assert!(disk < live * 13 / 10, "disk {disk} bytes for {live} live bytes");
    db.close().unwrap();
    let db = Db::open(dir, o()).unwrap();
    check(&db, &model, &probes);
    assert_eq!(db.stats().blob_files, after.blob_files);
}

#[test]
fn without_gc_a_compaction_still_frees_files_whose_values_are_all_overwritten() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let o = || Options { blob_gc_age_cutoff: 0.0, ..opts(&storage) };
    let db = Db::open(dir, o()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for round in 0..2u64 {
        for i in 0..200 {
            let v = value(i, round, 1000);
            db.put(common::key(i), &v).unwrap();
            model.insert(common::key(i), v);
        }
        db.flush().unwrap();
    }
    let first = blob_files(&storage, dir);
    assert_eq!(first.len(), 2);
    db.compact().unwrap();
    let s = db.stats();
    assert_eq!((s.blob_files, s.blob_relocated, s.blob_garbage_bytes), (1, 0, 0));
    assert_eq!(blob_files(&storage, dir), vec![first[1].clone()], "the older file is deleted");
    let probes: Vec<Vec<u8>> = (0..210).map(common::key).collect();
    check(&db, &model, &probes);
    // Raising the threshold above the values inlines them when they are relocated.
    db.close().unwrap();
    let o = Options { blob_threshold: Some(5000), blob_gc_age_cutoff: 1.0, ..opts(&storage) };
    let db = Db::open(dir, o).unwrap();
    db.put(common::key(0), value(0, 9, 1000)).unwrap();
    model.insert(common::key(0), value(0, 9, 1000));
    db.compact().unwrap();
    check(&db, &model, &probes);
    assert_eq!(db.stats().blob_files, 0);
    assert!(blob_files(&storage, dir).is_empty());
}

/// An obsolete file an iterator holds stays while the iterator reads it and is deleted once the
/// iterator is gone, with no flush or compaction after: `wait_for_compactions` (with nothing
/// to compact) deletes it.
#[test]
fn an_obsolete_file_an_iterator_held_is_deleted_once_it_lets_go_without_further_work() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, Options { blob_gc_age_cutoff: 0.0, ..opts(&storage) }).unwrap();
    let round = |r: u64| {
        for i in 0..200 {
            db.put(common::key(i), value(i, r, 1000)).unwrap();
        }
        db.flush().unwrap();
    };
    round(0);
    let mut it = db.scan().unwrap();
    let (k, v) = it.next().unwrap().unwrap();
    assert_eq!((k, v), (common::key(0), value(0, 0, 1000)));
    round(1);
    let files = blob_files(&storage, dir);
    assert_eq!(files.len(), 2);
    db.compact().unwrap();
    assert_eq!(db.stats().blob_files, 1);
    assert_eq!(blob_files(&storage, dir), files, "the iterator still reads the older file");
    let rest: Vec<(Vec<u8>, Vec<u8>)> = it.map(|e| e.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> =
        (1..200).map(|i| (common::key(i), value(i, 0, 1000))).collect();
    assert!(rest == want, "the iterator reads the values of the older file");
    db.wait_for_compactions().unwrap();
    assert_eq!(blob_files(&storage, dir), vec![files[1].clone()], "the older file is deleted");
    db.close().unwrap();
}

#[test]
fn a_checkpoint_holds_the_live_blob_files() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, opts(&storage)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..100 {
        let v = value(i, 0, 700);
        db.put(common::key(i), &v).unwrap();
        model.insert(common::key(i), v);
    }
    db.flush().unwrap();
    db.checkpoint("/cp").unwrap();
    db.close().unwrap();
    assert_eq!(blob_files(&storage, Path::new("/cp")), blob_files(&storage, dir));
    let cp = Db::open("/cp", opts(&storage)).unwrap();
    let probes: Vec<Vec<u8>> = (0..100).map(common::key).collect();
    check(&cp, &model, &probes);
}

#[test]
fn merge_operands_onto_a_separated_base_and_transactions_read_the_value() {
    let storage = MemStorage::new();
    let dir = Path::new("/db");
    let op: Arc<dyn MergeOperator> = Arc::new(U64AddOperator);
    let o = Options { blob_threshold: Some(8), merge_operator: Some(op), ..opts(&storage) };
    let db = Db::open(dir, o).unwrap();
    db.put("n", 40u64.to_le_bytes()).unwrap();
    db.flush().unwrap();
    assert_eq!(blob_files(&storage, dir).len(), 1);
    db.merge("n", 2u64.to_le_bytes()).unwrap();
    assert_eq!(db.get("n").unwrap(), Some(42u64.to_le_bytes().to_vec()));
    db.flush().unwrap();
    // multi_get: the operand (L0) merges onto the separated base (older L0) at once.
    let got = db.multi_get(["n", "missing", "n"]);
    let want = [Some(42u64.to_le_bytes().to_vec()), None, Some(42u64.to_le_bytes().to_vec())];
    for (g, w) in got.into_iter().zip(want) {
        assert_eq!(g.unwrap(), w);
    }
    db.flush().unwrap();
    assert_eq!(db.get("n").unwrap(), Some(42u64.to_le_bytes().to_vec()));
    let all: Vec<_> = db.scan().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, vec![(b"n".to_vec(), 42u64.to_le_bytes().to_vec())]);
    db.compact().unwrap();
    assert_eq!(db.get("n").unwrap(), Some(42u64.to_le_bytes().to_vec()));
    let mut b = WriteBatch::new();
    b.put("t", [7u8; 64]);
    db.write(b).unwrap();
    db.flush().unwrap();
    let tx = db.transaction().unwrap();
    assert_eq!(tx.get("t").unwrap(), Some(vec![7u8; 64]));
    assert_eq!(tx.get("n").unwrap(), Some(42u64.to_le_bytes().to_vec()));
}
