//! `SstWriter` and `Db::ingest` (design.md#ingestion-and-export): ingested data read through
//! every path against a model (a BTreeMap), before and after reopen and compaction; overlaps
//! with memtables and levels; snapshots; range deletions and merges in ingested files; and bad
//! input, each a typed error that changes nothing.

mod common;

use common::{ingest_options as opts, key6 as key};
use siftdb::{
    CompactionOptions, Db, Error, IngestMode, IngestOptions, KeyspaceOptions, Options, SstWriter,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every read path agrees with `model` over keys `0..universe`: get, multi_get, a full scan
/// both ways, and a range both ways.
fn check(db: &Db, model: &Model, universe: u64, when: &str) {
    for i in 0..universe {
        let k = key(i);
        assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "{when}: get {i}");
    }
    let keys: Vec<Vec<u8>> = (0..universe).map(key).collect();
    let got = db.multi_get(&keys);
    for (k, r) in keys.iter().zip(got) {
        assert_eq!(r.unwrap(), model.get(k).cloned(), "{when}: multi_get {k:?}");
    }
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = db.scan().unwrap().map(|kv| kv.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(fwd == want, "{when}: forward scan differs ({} vs {} entries)", fwd.len(), want.len());
    let mut back: Vec<(Vec<u8>, Vec<u8>)> =
        db.scan().unwrap().rev().map(|kv| kv.unwrap()).collect();
    back.reverse();
    assert!(back == want, "{when}: reverse scan differs");
    let (lo, hi) = (key(universe / 4), key(universe / 2));
    let part: Vec<Vec<u8>> =
        db.range(lo.clone()..hi.clone()).unwrap().map(|kv| kv.unwrap().0).collect();
    let want_part: Vec<Vec<u8>> =
        model.range(lo.clone()..hi.clone()).map(|(k, _)| k.clone()).collect();
    assert_eq!(part, want_part, "{when}: range");
    let mut part_back: Vec<Vec<u8>> =
        db.range(lo..hi).unwrap().rev().map(|kv| kv.unwrap().0).collect();
    part_back.reverse();
    assert_eq!(part_back, want_part, "{when}: range reversed");
}

/// Writes a file of `entries` (key index, `Some(value)` or `None` for a delete) in key order.
fn write_file(db: &Db, path: &Path, entries: &[(u64, Option<Vec<u8>>)]) -> PathBuf {
    let mut w = db.sst_writer(path).unwrap();
    for (i, v) in entries {
        match v {
            Some(v) => w.put(key(*i), v).unwrap(),
            None => w.delete(key(*i)).unwrap(),
        }
    }
    w.finish().unwrap();
    path.to_path_buf()
}

/// A seeded xorshift (no dependency beyond std).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn ingested_files_read_as_the_model_through_every_path_reopen_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let universe = 3000;
    let mut model = Model::new();
    let mut rng = Rng(0x1a9e57);
    {
        let db = Db::open(&path, opts()).unwrap();
        // A tree with data in deep levels, L0 and the memtable.
        for round in 0..3u64 {
            for _ in 0..1500 {
                let i = rng.below(universe);
                let v = format!("db{round}-{i}").into_bytes();
                db.put(key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            for _ in 0..100 {
                let i = rng.below(universe);
                db.delete(key(i)).unwrap();
                model.remove(&key(i));
            }
            if round == 0 {
                db.compact().unwrap();
            } else {
                db.flush().unwrap();
            }
        }
        // Ingests of files that overlap everything, nothing, and the memtable.
        for (n, (lo, hi, step)) in
            [(0u64, 3000u64, 7u64), (3000, 3500, 1), (100, 400, 3)].into_iter().enumerate()
        {
            if n == 2 {
                db.put(key(200), "in the memtable").unwrap();
                model.insert(key(200), b"in the memtable".to_vec());
            }
            let mut entries = Vec::new();
            for i in (lo..hi).step_by(step as usize) {
                if rng.below(5) == 0 {
                    entries.push((i, None));
                    model.remove(&key(i));
                } else {
                    let v = format!("ingest{n}-{i}").into_bytes();
                    model.insert(key(i), v.clone());
                    entries.push((i, Some(v)));
                }
            }
            let f = write_file(&db, &dir.path().join(format!("f{n}.sst")), &entries);
            let report = db.ingest(&[f], IngestOptions::default()).unwrap();
            assert_eq!(report.files.len(), 1);
            if n == 1 {
                // Overlaps nothing: the bottom level.
                assert_eq!(report.files[0].level, 6, "{report:?}");
            }
            if n == 2 {
                assert!(report.flushed_memtables, "the memtable held key 200");
            }
            check(&db, &model, universe + 600, &format!("after ingest {n}"));
        }
        for _ in 0..300 {
            let i = rng.below(universe);
            db.put(key(i), "after").unwrap();
            model.insert(key(i), b"after".to_vec());
        }
        check(&db, &model, universe + 600, "after later writes");
    }
    let db = Db::open(&path, opts()).unwrap();
    check(&db, &model, universe + 600, "after reopen");
    db.compact().unwrap();
    check(&db, &model, universe + 600, "after compaction");
    drop(db);
    let db = Db::open(&path, opts()).unwrap();
    check(&db, &model, universe + 600, "after compaction and reopen");
}

#[test]
fn a_snapshot_taken_before_an_ingest_does_not_see_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    db.put(key(1), "old").unwrap();
    db.flush().unwrap();
    let snap = db.snapshot();
    let mut it_before = db.scan().unwrap();
    let f = write_file(
        &db,
        &dir.path().join("a.sst"),
        &[(1, Some(b"new".to_vec())), (2, Some(b"two".to_vec()))],
    );
    let report = db.ingest(&[f], IngestOptions::default()).unwrap();
    assert_eq!(report.files[0].level, 0, "overlaps L0: placed in L0");
    assert_eq!(snap.get(key(1)).unwrap(), Some(b"old".to_vec()));
    assert_eq!(snap.get(key(2)).unwrap(), None);
    assert_eq!(
        snap.multi_get([key(1), key(2)]).into_iter().map(|r| r.unwrap()).collect::<Vec<_>>(),
        vec![Some(b"old".to_vec()), None]
    );
    let seen: Vec<(Vec<u8>, Vec<u8>)> = snap.scan().unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(seen, vec![(key(1), b"old".to_vec())]);
    let back: Vec<Vec<u8>> = snap.scan().unwrap().rev().map(|kv| kv.unwrap().0).collect();
    assert_eq!(back, vec![key(1)]);
    assert_eq!(it_before.next().unwrap().unwrap(), (key(1), b"old".to_vec()));
    assert!(it_before.next().is_none());
    assert_eq!(db.get(key(1)).unwrap(), Some(b"new".to_vec()));
    // Compaction keeps the version the snapshot sees.
    db.compact().unwrap();
    assert_eq!(snap.get(key(1)).unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get(key(1)).unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(key(2)).unwrap(), Some(b"two".to_vec()));
}

#[test]
fn range_deletions_and_merges_in_an_ingested_file_apply_to_older_data_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, opts()).unwrap();
    for i in 0..100 {
        db.put(key(i), format!("v{i}")).unwrap();
    }
    db.merge(key(500), 5u64.to_le_bytes()).unwrap();
    db.compact().unwrap();
    let f = dir.path().join("r.sst");
    let mut w = db.sst_writer(&f).unwrap();
    w.delete_range(key(50), key(80)).unwrap();
    w.delete_range(key(10), key(20)).unwrap(); // any order
    w.put(key(15), "kept: as new as the deletion").unwrap();
    w.merge(key(500), 7u64.to_le_bytes()).unwrap();
    w.finish().unwrap();
    db.ingest(&[&f], IngestOptions::default()).unwrap();
    let check = |db: &Db, when: &str| {
        for i in 0..100 {
            let got = db.get(key(i)).unwrap();
            let want = match i {
                15 => Some(b"kept: as new as the deletion".to_vec()),
                10..20 | 50..80 => None,
                _ => Some(format!("v{i}").into_bytes()),
            };
            assert_eq!(got, want, "{when}: key {i}");
        }
        assert_eq!(db.get(key(500)).unwrap(), Some(12u64.to_le_bytes().to_vec()), "{when}");
        let n = db.scan().unwrap().count();
        assert_eq!(n, 100 - 10 - 30 + 1 + 1, "{when}");
        let back: Vec<Vec<u8>> = db.scan().unwrap().rev().map(|kv| kv.unwrap().0).collect();
        assert_eq!(back.len(), n, "{when}");
    };
    check(&db, "after ingest");
    drop(db);
    let db = Db::open(&path, opts()).unwrap();
    check(&db, "after reopen");
    db.compact().unwrap();
    check(&db, "after compaction");
}

#[test]
fn several_files_land_in_one_edit_and_move_copy_link_treat_sources_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    let mut model = Model::new();
    for (mode, base) in
        [(IngestMode::Link, 0u64), (IngestMode::Copy, 1000), (IngestMode::Move, 2000)]
    {
        let files: Vec<PathBuf> = (0..3u64)
            .map(|f| {
                let entries: Vec<(u64, Option<Vec<u8>>)> = (0..50)
                    .map(|i| base + f * 100 + i)
                    .map(|i| (i, Some(format!("m{i}").into_bytes())))
                    .collect();
                for (i, v) in &entries {
                    model.insert(key(*i), v.clone().unwrap());
                }
                write_file(&db, &dir.path().join(format!("{base}-{f}.sst")), &entries)
            })
            .rev() // given out of order: sorted by the ingestion
            .collect();
        let report = db.ingest(&files, IngestOptions::with_mode(mode)).unwrap();
        assert_eq!(report.files.len(), 3);
        let g = report.global_seq;
        assert!(g > 0);
        for f in &files {
            assert_eq!(f.exists(), mode != IngestMode::Move, "{mode:?}: source {}", f.display());
        }
    }
    check(&db, &model, 2500, "after three ingests");
    let stats = db.stats();
    let files: usize = stats.levels.iter().map(|l| l.files).sum();
    assert_eq!(files, 9, "{:?}", stats.levels);
}

#[test]
fn a_keyspace_ingests_its_own_files_adopts_another_ids_and_rewrites_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    let fa = dir.path().join("a.sst");
    let mut w = a.sst_writer(&fa).unwrap();
    w.put("x", "1").unwrap();
    w.finish().unwrap();
    let report = a.ingest(&[&fa], IngestOptions::default()).unwrap();
    assert!(!report.files[0].rewritten);
    assert_eq!(report.files[0].adopted_from, None);
    assert_eq!(a.get("x").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get("x").unwrap(), None);
    // A file of keyspace `a` ingested into `b`: adopted, its keys read as `b`'s.
    let fb = dir.path().join("a2.sst");
    let mut w = a.sst_writer(&fb).unwrap();
    w.put("y", "2").unwrap();
    w.finish().unwrap();
    let report = b.ingest(&[&fb], IngestOptions::default()).unwrap();
    assert!(!report.files[0].rewritten);
    assert!(report.files[0].adopted_from.is_some(), "{report:?}");
    assert_eq!(b.get("y").unwrap(), Some(b"2".to_vec()));
    assert_eq!(a.get("y").unwrap(), None);
    assert!(fb.exists(), "Link mode leaves the source");
    // A file of range deletions only names its keyspace in its range-deletion block: one of
    // `a` ingested into `b` is adopted too, and deletes in `b` only.
    let fd = dir.path().join("a3.sst");
    let mut w = a.sst_writer(&fd).unwrap();
    w.delete_range("x", "z").unwrap();
    w.finish().unwrap();
    let report = b.ingest(&[&fd], IngestOptions::default()).unwrap();
    assert!(!report.files[0].rewritten && report.files[0].adopted_from.is_some(), "{report:?}");
    assert_eq!(b.get("y").unwrap(), None);
    assert_eq!(a.get("x").unwrap(), Some(b"1".to_vec()));
    // The default keyspace's keys carry no id: its files are rewritten into `b`, and `b`'s
    // into the default keyspace.
    let f0 = dir.path().join("d.sst");
    let mut w = db.sst_writer(&f0).unwrap();
    w.put("w", "3").unwrap();
    w.finish().unwrap();
    let report = b.ingest(&[&f0], IngestOptions::default()).unwrap();
    assert!(report.files[0].rewritten && report.files[0].adopted_from.is_none(), "{report:?}");
    assert_eq!(b.get("w").unwrap(), Some(b"3".to_vec()));
    assert_eq!(db.get("w").unwrap(), None);
    let fbd = dir.path().join("b.sst");
    let mut w = b.sst_writer(&fbd).unwrap();
    w.put("v", "4").unwrap();
    w.finish().unwrap();
    let report = db.ingest(&[&fbd], IngestOptions::default()).unwrap();
    assert!(report.files[0].rewritten && report.files[0].adopted_from.is_none(), "{report:?}");
    assert_eq!(db.get("v").unwrap(), Some(b"4".to_vec()));
    assert_eq!(b.get("v").unwrap(), None);
}

fn is_invalid(e: &Error, needle: &str) -> bool {
    matches!(e, Error::InvalidArgument(m) if m.contains(needle))
}

#[test]
fn bad_input_is_a_typed_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    db.put(key(1), "base").unwrap();
    db.flush().unwrap();
    let p = |n: &str| dir.path().join(n);

    // Writer: unsorted and duplicate keys, an empty finish, an existing path, bad ranges.
    let mut w = db.sst_writer(p("w.sst")).unwrap();
    w.put(key(5), "a").unwrap();
    let e = w.put(key(3), "b").unwrap_err();
    assert!(is_invalid(&e, "not greater than the previous key"), "{e}");
    assert!(e.to_string().contains("entry 1"), "{e}");
    let e = w.delete(key(5)).unwrap_err();
    assert!(is_invalid(&e, "not greater"), "{e}");
    let e = w.delete_range(key(9), key(2)).unwrap_err();
    assert!(is_invalid(&e, "not below end"), "{e}");
    w.put(key(6), "c").unwrap(); // still usable after a refused key
    drop(w);
    assert!(!p("w.sst").exists(), "an unfinished writer's file is removed");
    let e = db.sst_writer(p("empty.sst")).unwrap().finish().unwrap_err();
    assert!(is_invalid(&e, "no entry"), "{e}");
    assert!(!p("empty.sst").exists());
    std::fs::write(p("mine.txt"), "not siftdb's").unwrap();
    let e = db.sst_writer(p("mine.txt")).unwrap_err();
    assert!(is_invalid(&e, "exists"), "{e}");
    assert_eq!(std::fs::read(p("mine.txt")).unwrap(), b"not siftdb's");
    let no_merge = SstWriter::create(p("nm.sst"), &Options::default()).unwrap().merge("k", "v");
    assert!(is_invalid(&no_merge.unwrap_err(), "merge operator"));

    let good =
        write_file(&db, &p("good.sst"), &[(1, Some(b"new".to_vec())), (2, Some(b"x".to_vec()))]);
    let overlapping = write_file(&db, &p("over.sst"), &[(2, Some(b"y".to_vec())), (3, None)]);
    let files_before: usize = db.stats().levels.iter().map(|l| l.files).sum();

    // Overlapping files name both.
    let e = db.ingest(&[&good, &overlapping], IngestOptions::default()).unwrap_err();
    assert!(is_invalid(&e, "overlap"), "{e}");
    assert!(e.to_string().contains("good.sst") && e.to_string().contains("over.sst"), "{e}");
    // A missing file.
    let e = db.ingest(&[good.clone(), p("missing.sst")], IngestOptions::default()).unwrap_err();
    assert!(is_invalid(&e, "does not exist"), "{e}");
    // A corrupt file: one flipped byte in its first data block.
    let mut bytes = std::fs::read(&good).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(p("corrupt.sst"), &bytes).unwrap();
    let e = db.ingest(&[p("corrupt.sst")], IngestOptions::default()).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    // Not a table at all.
    let e = db.ingest(&[p("mine.txt")], IngestOptions::default()).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    // A table of the engine's own, whose entries carry real sequence numbers.
    let own = common::any_table(&dir.path().join("db"));
    std::fs::copy(&own, p("own.sst")).unwrap();
    let e = db.ingest(&[p("own.sst")], IngestOptions::default()).unwrap_err();
    assert!(is_invalid(&e, "sequence"), "{e}");
    // Files are checked in parallel, yet the error is the first bad file's in the order given.
    let (corrupt, own) = (p("corrupt.sst"), p("own.sst"));
    let e = db.ingest(&[&good, &corrupt, &own], IngestOptions::default()).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("corrupt.sst"), "{e}");
    let e = db.ingest(&[&good, &own, &corrupt], IngestOptions::default()).unwrap_err();
    assert!(is_invalid(&e, "sequence") && e.to_string().contains("own.sst"), "{e}");
    // No file.
    let e = db.ingest::<PathBuf>(&[], IngestOptions::default()).unwrap_err();
    assert!(is_invalid(&e, "no file"), "{e}");

    let files_after: usize = db.stats().levels.iter().map(|l| l.files).sum();
    assert_eq!(files_before, files_after, "a refused ingestion adds no table");
    assert_eq!(db.get(key(1)).unwrap(), Some(b"base".to_vec()));
    assert!(good.exists() && overlapping.exists());
    let db_files = std::fs::read_dir(dir.path().join("db")).unwrap().count();

    // A closed database.
    let ks = db.keyspace("k", KeyspaceOptions::default()).unwrap();
    db.close().unwrap();
    assert!(matches!(ks.ingest(&[&good], IngestOptions::default()), Err(Error::Closed)));
    assert!(matches!(ks.sst_writer(p("closed.sst")), Err(Error::Closed)));
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    assert_eq!(db.get(key(1)).unwrap(), Some(b"base".to_vec()));
    assert!(std::fs::read_dir(dir.path().join("db")).unwrap().count() <= db_files + 2);
}

#[test]
fn a_standalone_writer_makes_files_a_database_ingests() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.sst");
    let mut w = SstWriter::create(&f, &Options::default()).unwrap();
    for i in 0..1000 {
        w.put(key(i), format!("s{i}")).unwrap();
    }
    let info = w.finish().unwrap();
    assert_eq!(
        (info.entries, info.smallest_key.clone(), info.largest_key.clone()),
        (1000, key(0), key(999))
    );
    assert!(info.file_size > 0 && info.path == f);
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    db.ingest(&[&f], IngestOptions::with_mode(IngestMode::Copy)).unwrap();
    assert_eq!(db.get(key(999)).unwrap(), Some(b"s999".to_vec()));
    assert_eq!(db.scan().unwrap().count(), 1000);
    let stats = db.stats();
    assert_eq!(stats.levels[6].files, 1, "{:?}", stats.levels);
    assert_eq!(stats.levels[6].entries, 1000);
    // The bottommost level's plan gives the file a filter (the default policy filters every
    // level).
    let kinds = &stats.levels[6].filter_kinds;
    assert!(!kinds.is_empty() && kinds.iter().all(|k| k != "none"), "{kinds:?}");
}

#[test]
fn ingested_files_keep_their_sequence_in_a_checkpoint_and_a_rolled_over_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let o = || Options { max_manifest_file_size: 1 << 10, ..opts() };
    let db = Db::open(dir.path().join("db"), o()).unwrap();
    for i in 0..200 {
        db.put(key(i), "old").unwrap();
    }
    db.flush().unwrap();
    let f = write_file(
        &db,
        &dir.path().join("a.sst"),
        &(0..200).step_by(2).map(|i| (i, Some(b"new".to_vec()))).collect::<Vec<_>>(),
    );
    db.ingest(&[f], IngestOptions::default()).unwrap();
    // Enough edits to roll the 1 KiB manifest over several times.
    for r in 0..20 {
        db.put(key(1000 + r), "x").unwrap();
        db.flush().unwrap();
    }
    db.checkpoint(dir.path().join("cp")).unwrap();
    drop(db);
    let want = |i: u64| if i.is_multiple_of(2) { b"new".to_vec() } else { b"old".to_vec() };
    for path in ["db", "cp"] {
        let db = Db::open(dir.path().join(path), o()).unwrap();
        for i in 0..200 {
            assert_eq!(db.get(key(i)).unwrap(), Some(want(i)), "{path}: key {i}");
        }
        let n = db
            .range(key(0)..key(200))
            .unwrap()
            .filter(|kv| kv.as_ref().unwrap().1 == b"new")
            .count();
        assert_eq!(n, 100, "{path}");
    }
}

/// A cursor at a snapshot older than an ingestion, and one after it, seek both ways onto keys
/// that the ingested file and older tables both hold: the table iterator reads the file's keys
/// at its global sequence number, so a seek below it steps past them.
#[test]
fn cursors_before_and_after_an_ingestion_seek_both_ways_to_the_right_versions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), opts()).unwrap();
    for i in 0..50 {
        db.put(key(i * 2), format!("old{i}")).unwrap();
    }
    db.compact().unwrap();
    let snap = db.snapshot();
    let entries: Vec<(u64, Option<Vec<u8>>)> =
        (0..100).map(|i| (i, Some(format!("new{i}").into_bytes()))).collect();
    let f = write_file(&db, &dir.path().join("c.sst"), &entries);
    let r = db.ingest(&[f], IngestOptions::default()).unwrap();
    assert!(r.files[0].level < 6, "over the compacted data: {r:?}");
    let mut old = snap.cursor().unwrap();
    let mut new = db.cursor().unwrap();
    for i in [0u64, 7, 10, 51, 98, 99] {
        // The snapshot sees the even keys' old values only.
        old.seek(&key(i)).unwrap();
        let want = i.div_ceil(2) * 2;
        if want > 98 {
            assert!(!old.valid(), "seek {i}: past the snapshot's last key");
        } else {
            assert_eq!(old.key(), key(want).as_slice(), "seek {i}");
            assert_eq!(old.value(), format!("old{}", want / 2).as_bytes(), "seek {i}");
        }
        old.seek_for_prev(&key(i)).unwrap();
        let want = i / 2 * 2;
        assert_eq!(old.key(), key(want).as_slice(), "seek_for_prev {i}");
        old.prev().unwrap();
        if want >= 2 {
            assert_eq!(old.key(), key(want - 2).as_slice(), "prev after {i}");
        } else {
            assert!(!old.valid());
        }
        // The current view sees every key at its new value.
        new.seek(&key(i)).unwrap();
        assert_eq!((new.key(), new.value()), (key(i).as_slice(), format!("new{i}").as_bytes()));
        new.seek_for_prev(&key(i)).unwrap();
        assert_eq!(new.value(), format!("new{i}").as_bytes());
        new.next().unwrap();
        if i < 99 {
            assert_eq!(new.key(), key(i + 1).as_slice());
        }
    }
}

/// Ingestions while another thread writes (and the background threads flush and compact):
/// nothing deadlocks, every write and every ingested key is there afterwards, the later of two
/// ingestions of a key wins.
#[test]
fn ingestions_beside_concurrent_writes_and_compactions_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        memtable_size: 32 << 10,
        compaction: CompactionOptions { l0_compaction_trigger: 2, ..CompactionOptions::default() },
        ..Options::default()
    };
    let db = Arc::new(Db::open(dir.path().join("db"), o).unwrap());
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..20_000u64 {
                // Keys 100_000.. never meet the ingested ones; every 50th overlaps them.
                let k = if i % 50 == 0 { key(i % 1000) } else { key(100_000 + i) };
                db.put(&k, "w").unwrap();
            }
        })
    };
    let mut last = BTreeMap::new();
    for round in 0..15u64 {
        let entries: Vec<(u64, Option<Vec<u8>>)> = (0..1000)
            .filter(|i| (i + round) % 3 != 0)
            .map(|i| (i, Some(format!("r{round}").into_bytes())))
            .collect();
        for (i, v) in &entries {
            last.insert(*i, v.clone().unwrap());
        }
        let f = write_file(&db, &dir.path().join(format!("c{round}.sst")), &entries);
        db.ingest(&[f], IngestOptions::with_mode(IngestMode::Move)).unwrap();
    }
    writer.join().unwrap();
    for i in 0..20_000u64 {
        if i % 50 != 0 {
            assert_eq!(db.get(key(100_000 + i)).unwrap(), Some(b"w".to_vec()), "write {i}");
        }
    }
    // A key < 1000 holds the last ingested value or a concurrent write's "w"; never an older
    // ingestion's value.
    for (i, v) in &last {
        let got = db.get(key(*i)).unwrap().unwrap();
        assert!(got == *v || got == b"w", "key {i}: {:?}", String::from_utf8_lossy(&got));
    }
}

#[test]
fn an_ingested_l0_file_stays_newer_than_the_flush_it_forced_after_reopen() {
    // The ingestion takes its file number, then flushes the memtable holding an older version
    // of a key it deletes: the flush's file has the higher number, the ingested file the higher
    // sequence number, which is what recovery orders L0 by.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, opts()).unwrap();
    db.put(key(1), "flushed first").unwrap();
    db.flush().unwrap();
    db.put(key(2), "in the memtable").unwrap();
    let f = write_file(&db, &dir.path().join("d.sst"), &[(1, None), (2, None)]);
    let r = db.ingest(&[f], IngestOptions::default()).unwrap();
    assert!(r.flushed_memtables && r.files[0].level == 0, "{r:?}");
    let check = |db: &Db, when: &str| {
        assert_eq!(db.get(key(1)).unwrap(), None, "{when}");
        assert_eq!(db.get(key(2)).unwrap(), None, "{when}");
        assert_eq!(db.scan().unwrap().count(), 0, "{when}");
    };
    check(&db, "after the ingestion");
    drop(db);
    let db = Db::open(&path, opts()).unwrap();
    check(&db, "after reopen");
}
