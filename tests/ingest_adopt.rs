//! `Keyspace::ingest` of files written for a keyspace of another id (exported from the same
//! name in another database): adopted as they are, the manifest mapping the id (tag 12,
//! design.md#ingestion-and-export). Read through every path against a model beside keyspaces
//! whose ids equal the stored ones; snapshots, range deletions, merges, reopen, checkpoint and
//! compaction with other data; and manifest records that do not fit the file, refused.

mod common;

use common::{ingest_options as opts, key6 as key};
use siftdb::inspect::filename::sst_name;
use siftdb::inspect::manifest::{recover, FileMeta, VersionEdit};
use siftdb::storage::FsStorage;
use siftdb::{Db, Error, IngestOptions, Keyspace, KeyspaceOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every read path of `ks` agrees with `model` over keys `0..universe`: get, multi_get, a
/// full scan both ways, a range both ways, and cursor seeks both ways.
fn check(ks: &Keyspace, model: &Model, universe: u64, when: &str) {
    for i in 0..universe {
        let k = key(i);
        assert_eq!(ks.get(&k).unwrap(), model.get(&k).cloned(), "{when}: get {i}");
    }
    let keys: Vec<Vec<u8>> = (0..universe).map(key).collect();
    for (k, r) in keys.iter().zip(ks.multi_get(&keys)) {
        assert_eq!(r.unwrap(), model.get(k).cloned(), "{when}: multi_get {k:?}");
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = ks.scan().unwrap().map(|kv| kv.unwrap()).collect();
    assert!(fwd == want, "{when}: forward scan ({} vs {} entries)", fwd.len(), want.len());
    let mut back: Vec<(Vec<u8>, Vec<u8>)> =
        ks.scan().unwrap().rev().map(|kv| kv.unwrap()).collect();
    back.reverse();
    assert!(back == want, "{when}: reverse scan");
    let (lo, hi) = (key(universe / 4), key(universe / 2));
    let want_part: Vec<Vec<u8>> =
        model.range(lo.clone()..hi.clone()).map(|(k, _)| k.clone()).collect();
    let part: Vec<Vec<u8>> =
        ks.range(lo.clone()..hi.clone()).unwrap().map(|kv| kv.unwrap().0).collect();
    assert_eq!(part, want_part, "{when}: range");
    let mut part_back: Vec<Vec<u8>> =
        ks.range(lo..hi).unwrap().rev().map(|kv| kv.unwrap().0).collect();
    part_back.reverse();
    assert_eq!(part_back, want_part, "{when}: range reversed");
    let mut c = ks.cursor().unwrap();
    for i in (0..universe).step_by(97) {
        let k = key(i);
        c.seek(&k).unwrap();
        let next = model.range(k.clone()..).next().map(|(k, _)| k.as_slice());
        assert_eq!(c.valid().then(|| c.key()), next, "{when}: seek {i}");
        c.seek_for_prev(&k).unwrap();
        let prev = model.range(..=k.clone()).next_back().map(|(k, _)| k.as_slice());
        assert_eq!(c.valid().then(|| c.key()), prev, "{when}: seek_for_prev {i}");
    }
}

/// A snapshot of a keyspace agrees with `model`: get, multi_get, a scan both ways.
fn check_snapshot(snap: &siftdb::Snapshot, model: &Model, when: &str) {
    let keys: Vec<Vec<u8>> = (0..UNIVERSE).map(key).collect();
    for (k, r) in keys.iter().zip(snap.multi_get(&keys)) {
        assert_eq!(r.unwrap(), model.get(k).cloned(), "{when}: multi_get {k:?}");
        assert_eq!(snap.get(k).unwrap(), model.get(k).cloned(), "{when}: get {k:?}");
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = snap.scan().unwrap().map(|kv| kv.unwrap()).collect();
    assert!(fwd == want, "{when}: scan ({} vs {} entries)", fwd.len(), want.len());
    let mut back: Vec<(Vec<u8>, Vec<u8>)> =
        snap.scan().unwrap().rev().map(|kv| kv.unwrap()).collect();
    back.reverse();
    assert!(back == want, "{when}: reverse scan");
}

/// A database in `path` whose keyspace "events" comes after `pads` other keyspaces, so its id
/// is `pads + 1`.
fn source(path: &Path, pads: usize) -> (Db, Keyspace) {
    let db = Db::open(path, opts()).unwrap();
    for p in 0..pads {
        db.keyspace(&format!("pad{p}"), KeyspaceOptions::default()).unwrap();
    }
    let ks = db.keyspace("events", KeyspaceOptions::default()).unwrap();
    (db, ks)
}

/// What one source file holds, in key order.
enum Op {
    Put(u64, Vec<u8>),
    Delete(u64),
    Merge(u64, u64),
}

/// Writes `ops` and `ranges` (deleted key-index ranges) as one file of `ks` at `path`.
fn write(ks: &Keyspace, path: &Path, ops: &[Op], ranges: &[(u64, u64)]) -> PathBuf {
    let mut w = ks.sst_writer(path).unwrap();
    for &(lo, hi) in ranges {
        w.delete_range(key(lo), key(hi)).unwrap();
    }
    for op in ops {
        match op {
            Op::Put(i, v) => w.put(key(*i), v).unwrap(),
            Op::Delete(i) => w.delete(key(*i)).unwrap(),
            Op::Merge(i, n) => w.merge(key(*i), n.to_le_bytes()).unwrap(),
        }
    }
    w.finish().unwrap();
    path.to_path_buf()
}

/// Applies `ops` and `ranges` to `model` as an ingestion does: the ranges delete older data,
/// the file's own entries are as new as them.
fn apply(model: &mut Model, ops: &[Op], ranges: &[(u64, u64)]) {
    for &(lo, hi) in ranges {
        model.retain(|k, _| !(key(lo) <= *k && *k < key(hi)));
    }
    for op in ops {
        match op {
            Op::Put(i, v) => {
                model.insert(key(*i), v.clone());
            }
            Op::Delete(i) => {
                model.remove(&key(*i));
            }
            Op::Merge(i, n) => {
                let old = model
                    .get(&key(*i))
                    .map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()));
                model.insert(key(*i), old.wrapping_add(*n).to_le_bytes().to_vec());
            }
        }
    }
}

/// The live files of the database at `path` whose manifest records a stored keyspace.
fn adopted_files(path: &Path) -> Vec<FileMeta> {
    let state = recover(&FsStorage::new(), path).unwrap().unwrap();
    state
        .levels
        .iter()
        .flat_map(|l| l.values())
        .filter(|m| m.stored_keyspace.is_some())
        .cloned()
        .collect()
}

const UNIVERSE: u64 = 4100;

/// The target database: keyspaces "a0" (id 1), "events" (id 2), "z9" (id 3), each holding the
/// same user keys with values of its own, events in the bottom level, L0 and the memtable.
fn target(path: &Path) -> (Db, [Keyspace; 3], [Model; 3]) {
    let db = Db::open(path, opts()).unwrap();
    let kss = ["a0", "events", "z9"].map(|n| db.keyspace(n, KeyspaceOptions::default()).unwrap());
    let mut models: [Model; 3] = Default::default();
    for round in 0..3u64 {
        for (ks, model) in kss.iter().zip(models.iter_mut()) {
            for i in (round..3000).step_by(3 + round as usize) {
                let v = format!("{}-{round}-{i}", ks.name()).into_bytes();
                ks.put(key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            ks.merge(key(3500), 5u64.to_le_bytes()).unwrap();
            apply(model, &[Op::Merge(3500, 5)], &[]);
        }
        match round {
            0 => db.compact().unwrap(),
            1 => db.flush().unwrap(),
            _ => {}
        }
    }
    (db, kss, models)
}

#[test]
fn adopted_files_read_as_the_model_through_every_path_snapshot_reopen_checkpoint_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    // Sources: "events" with id 4 (above the target's 2, and above "z9"'s 3) and with id 1
    // (below it, and the id of the target's "a0").
    let (high_db, high) = source(&dir.path().join("high"), 3);
    let (low_db, low) = source(&dir.path().join("low"), 0);
    let (db, kss, mut models) = target(&path);
    let events = &kss[1];
    for (ks, m) in kss.iter().zip(&models) {
        check(ks, m, UNIVERSE, &format!("{} before", ks.name()));
    }
    let before = events.snapshot();
    let before_model = models[1].clone();

    // 1. Overlapping every level, with deletes: placed in L0.
    let ops1: Vec<Op> =
        (0..3000)
            .step_by(7)
            .map(|i| {
                if i % 5 == 0 {
                    Op::Delete(i)
                } else {
                    Op::Put(i, format!("high-{i}").into_bytes())
                }
            })
            .collect();
    let f1 = write(&high, &dir.path().join("f1.sst"), &ops1, &[]);
    // 2. New keys beyond all others: placed in the bottom level.
    let ops2: Vec<Op> =
        (3600..4000).map(|i| Op::Put(i, format!("beyond-{i}").into_bytes())).collect();
    let f2 = write(&high, &dir.path().join("f2.sst"), &ops2, &[]);
    // 3. From the other source, after a write to the memtable in its range: range deletions,
    //    merges (one onto the tree's operands, one of a new key), a put inside a deleted range.
    let ops3 = vec![Op::Put(155, b"low-155".to_vec()), Op::Merge(3500, 7), Op::Merge(3550, 9)];
    let ranges3 = [(150, 180), (190, 260)];
    let f3 = write(&low, &dir.path().join("f3.sst"), &ops3, &ranges3);
    drop((high_db, low_db));

    let r1 = events.ingest(&[&f1], IngestOptions::default()).unwrap();
    apply(&mut models[1], &ops1, &[]);
    let r2 = events.ingest(&[&f2], IngestOptions::default()).unwrap();
    apply(&mut models[1], &ops2, &[]);
    let after_two = events.snapshot();
    let after_two_model = models[1].clone();
    events.put(key(200), "in the memtable").unwrap();
    apply(&mut models[1], &[Op::Put(200, b"in the memtable".to_vec())], &[]);
    let r3 = events.ingest(&[&f3], IngestOptions::default()).unwrap();
    apply(&mut models[1], &ops3, &ranges3);
    for (r, stored) in [(&r1, 4), (&r2, 4), (&r3, 1)] {
        let f = &r.files[0];
        assert!(!f.rewritten && f.adopted_from == Some(stored), "{r:?}");
    }
    assert_eq!(r1.files[0].level, 0, "{r1:?}");
    assert_eq!(r2.files[0].level, 6, "{r2:?}");
    assert!(r3.flushed_memtables, "the memtable held key 200");
    // The files are the sources' bytes, linked in.
    for (r, f) in [(&r1, &f1), (&r2, &f2), (&r3, &f3)] {
        let inside = std::fs::read(path.join(sst_name(r.files[0].number))).unwrap();
        assert!(inside == std::fs::read(f).unwrap(), "file {} kept its bytes", f.display());
    }

    let check_all = |kss: &[Keyspace; 3], models: &[Model; 3], when: &str| {
        for (ks, m) in kss.iter().zip(models) {
            check(ks, m, UNIVERSE, &format!("{} {when}", ks.name()));
        }
    };
    check_all(&kss, &models, "after the ingestions");
    check_snapshot(&before, &before_model, "snapshot before the ingestions");
    drop(before);
    // Later writes over adopted keys; the snapshot between the ingestions keeps its view.
    for i in (0..3400).step_by(11) {
        let v = format!("later-{i}").into_bytes();
        events.put(key(i), &v).unwrap();
        models[1].insert(key(i), v);
    }
    check_all(&kss, &models, "after later writes");
    check_snapshot(&after_two, &after_two_model, "snapshot between the ingestions");
    drop(after_two);

    assert_eq!(adopted_files(&path).len(), 3, "the manifest maps the three files' ids");
    db.checkpoint(dir.path().join("cp")).unwrap();
    drop(kss);
    drop(db);

    // Reopen; the checkpoint opens on its own with the same contents.
    let reopen = |p: &Path| {
        let db = Db::open(p, opts()).unwrap();
        let kss =
            ["a0", "events", "z9"].map(|n| db.keyspace(n, KeyspaceOptions::default()).unwrap());
        (db, kss)
    };
    let (cp, cp_kss) = reopen(&dir.path().join("cp"));
    assert_eq!(adopted_files(&dir.path().join("cp")).len(), 3);
    check_all(&cp_kss, &models, "in the checkpoint");
    drop((cp_kss, cp));
    let (db, kss) = reopen(&path);
    check_all(&kss, &models, "after reopen");
    // Compaction merges the adopted files with the keyspace's other data: its outputs carry
    // the target id (the files at the bottom that overlap nothing may stay adopted).
    db.compact().unwrap();
    check_all(&kss, &models, "after compaction");
    let left = adopted_files(&path);
    assert!(left.iter().all(|m| m.number == r2.files[0].number), "{left:?}");
    drop(kss);
    drop(db);
    let (_db, kss) = reopen(&path);
    check_all(&kss, &models, "after compaction and reopen");
}

/// Replaces the manifest of the closed database `dir` with one whose snapshot holds `files`
/// (CRC-valid: written with the engine's log writer), and points CURRENT at it.
fn forge_manifest(dir: &Path, base: &VersionEdit, files: Vec<(u32, FileMeta)>, number: u64) {
    let edit = VersionEdit { added: files, next_file_number: Some(number + 1), ..base.clone() };
    common::write_manifest(dir, &edit, number);
}

#[test]
fn a_stored_keyspace_the_file_does_not_carry_or_out_of_range_is_refused_as_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (src_db, src) = source(&dir.path().join("src"), 3);
    let f = write(&src, &dir.path().join("f.sst"), &[Op::Put(1, b"one".to_vec())], &[]);
    drop((src, src_db));
    {
        let db = Db::open(&path, opts()).unwrap();
        db.put(key(0), "default").unwrap();
        db.flush().unwrap();
        let ks = db.keyspace("events", KeyspaceOptions::default()).unwrap();
        let r = ks.ingest(&[&f], IngestOptions::default()).unwrap();
        assert_eq!(r.files[0].adopted_from, Some(4));
        db.close().unwrap();
    }
    let state = recover(&FsStorage::new(), &path).unwrap().unwrap();
    let files: Vec<(u32, FileMeta)> = state
        .levels
        .iter()
        .enumerate()
        .flat_map(|(l, files)| files.values().map(move |m| (l as u32, m.clone())))
        .collect();
    let base = VersionEdit {
        log_number: Some(state.log_number),
        last_sequence: Some(state.last_sequence),
        keyspaces: state.keyspaces.values().cloned().collect(),
        ..VersionEdit::default()
    };
    let adopted = files.iter().position(|(_, m)| m.stored_keyspace == Some(4)).unwrap();
    let plain = files.iter().position(|(_, m)| m.keyspace == 0).unwrap();
    let mut number = state.next_file_number;
    type Change = Box<dyn Fn(&mut Vec<(u32, FileMeta)>)>;
    let cases: Vec<(&str, Change)> = vec![
        // The file's keys carry 4, the record says 9: refused when the table opens.
        (
            "carry keyspace 9, they carry 4",
            Box::new(move |f| f[adopted].1.stored_keyspace = Some(9)),
        ),
        // A record mapping a file's own id, or into the default keyspace: refused on decode.
        ("cannot store keyspace 1", Box::new(move |f| f[adopted].1.stored_keyspace = Some(1))),
        ("cannot store keyspace 4", Box::new(move |f| f[plain].1.stored_keyspace = Some(4))),
        // The adoption dropped: the file's keys (of id 4) are not of the keyspace it is filed
        // under; compaction would find them, reads find nothing. Not checked at open: the
        // case below is what a reader relies on.
    ];
    for (what, change) in &cases {
        let mut forged = files.clone();
        change(&mut forged);
        forge_manifest(&path, &base, forged, number);
        number += 1;
        match Db::open(&path, opts()) {
            Err(Error::Corruption { what: msg, .. }) => {
                assert!(msg.contains(what), "{what}: {msg}")
            }
            other => panic!("{what}: expected corruption, got {:?}", other.map(|_| ())),
        }
    }
    // The true record opens with the contents.
    forge_manifest(&path, &base, files, number);
    let db = Db::open(&path, opts()).unwrap();
    let ks = db.keyspace("events", KeyspaceOptions::default()).unwrap();
    assert_eq!(ks.get(key(1)).unwrap(), Some(b"one".to_vec()));
    assert_eq!(db.get(key(0)).unwrap(), Some(b"default".to_vec()));
    assert_eq!(db.get(key(1)).unwrap(), None);
}
