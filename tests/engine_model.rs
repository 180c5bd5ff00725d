//! Model test: a seeded random sequence of puts, deletes, range deletes, merges (u64 add), batches, gets, range and prefix scans
//! (forward and `.rev()`), cursor walks with direction changes, and snapshots runs against `Db` and against a `BTreeMap` model side by side; every read must
//! agree with the model. Flushes and close + reopen happen at random points, and the memtable is
//! small (64 KiB), so reads cross the active memtable, immutable memtables, several L0 files and
//! the WAL replay of a reopen. Snapshots keep a clone of the model taken with them and are checked
//! later, after more writes, flushes and rotations.
//!
//! The same kind of sequence runs over the real file system (a temp dir), over `MemStorage`, and
//! over `MemStorage` with synced writes where every reopen follows a simulated power loss.
//! A second keyspace ("ks2", its own model) takes a quarter of the batch records, so batches
//! span keyspaces and mix every record kind (put, delete, merge, delete_range) in both; its
//! gets, ranges forward and reversed, snapshot reads (`Snapshot::get_in` / `range_in`) and its
//! full scans at every reopen are checked too.

use siftdb::filter::rng::SplitMix64;
use siftdb::storage::MemStorage;
use siftdb::{Compression, Db, DbCursor, KeyspaceOptions, Options, Snapshot, WriteBatch};
use siftdb::{Keyspace, TransactionOptions, U64AddOperator, WriteOptions};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Operations per run (the issue asks for at least 10,000).
const OPS: usize = 12_000;
/// Distinct keys: small enough that keys are overwritten and deleted many times.
const KEYSPACE: u64 = 1_500;
/// Snapshots held at once.
const MAX_SNAPSHOTS: usize = 4;

/// Small memtables (several L0 files form). The file-system run uses uncompressed blocks and a
/// small block cache; the `MemStorage` runs use zstd blocks and no block cache, so both read
/// paths are checked against the model. `small_table_cache`: 4 KiB compaction outputs over
/// small levels read through a table cache of 16 tables, so lookups, scans and compactions
/// reopen evicted tables all the time.
fn options(storage: Option<&MemStorage>, small_table_cache: bool) -> Options {
    let mut o = Options {
        memtable_size: 64 << 10,
        block_cache_bytes: if storage.is_some() { 0 } else { 256 << 10 },
        compression: if storage.is_some() { Compression::Zstd(1) } else { Compression::None },
        storage: storage.map(|s| Arc::new(s.clone()) as _),
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    };
    if small_table_cache {
        o.max_open_files = 16;
        o.compaction.target_file_size = 4 << 10;
        o.compaction.max_bytes_for_level_base = 64 << 10;
    }
    o
}

fn key(rng: &mut SplitMix64) -> Vec<u8> {
    format!("k{}", rng.below(KEYSPACE)).into_bytes()
}

/// A value naming the operation that wrote it, padded to a random length (0..=300 bytes).
fn value(rng: &mut SplitMix64, op: usize) -> Vec<u8> {
    let mut v = format!("v{op}:").into_bytes();
    let pad = rng.below(300) as usize;
    v.extend(std::iter::repeat_n(b'a' + (op % 26) as u8, pad));
    v
}

/// The u64 a counter key holds in the model (no value counts as 0), or `None` when its value
/// is not 8 bytes (the operator would refuse to merge onto it).
fn counter(m: &Model, k: &[u8]) -> Option<u64> {
    match m.get(k) {
        Some(v) => Some(u64::from_le_bytes(v[..].try_into().ok()?)),
        None => Some(0),
    }
}

/// Adds one random record to `b`, in keyspace `ks2` (model `m2`) when `in_ks2`, else in the
/// default keyspace (model `m`), and applies it to that model: a put, a delete, a merge into
/// one of 50 hot keys (preceded by a delete when the key holds a value that is not a counter),
/// or a delete_range `[k, k ++ "5")`. Records apply in batch order, so later ones see earlier.
fn batch_record(
    rng: &mut SplitMix64,
    b: &mut WriteBatch,
    ks2: &Keyspace,
    in_ks2: bool,
    op: usize,
    m: &mut Model,
) {
    match rng.below(10) {
        0..=4 => {
            let (k, v) = (key(rng), value(rng, op));
            if in_ks2 {
                b.put_in(ks2, &k, &v)
            } else {
                b.put(&k, &v)
            };
            m.insert(k, v);
        }
        5..=6 => {
            let k = key(rng);
            if in_ks2 {
                b.delete_in(ks2, &k)
            } else {
                b.delete(&k)
            };
            m.remove(&k);
        }
        7..=8 => {
            let (k, n) = (format!("k{}", rng.below(50)).into_bytes(), rng.below(1 << 20));
            let old = counter(m, &k).unwrap_or_else(|| {
                if in_ks2 {
                    b.delete_in(ks2, &k)
                } else {
                    b.delete(&k)
                };
                0
            });
            if in_ks2 {
                b.merge_in(ks2, &k, n.to_le_bytes())
            } else {
                b.merge(&k, n.to_le_bytes())
            };
            m.insert(k, old.wrapping_add(n).to_le_bytes().to_vec());
        }
        _ => {
            let lo = key(rng);
            let hi = [lo.as_slice(), b"5"].concat();
            if in_ks2 {
                b.delete_range_in(ks2, lo.as_slice()..hi.as_slice())
            } else {
                b.delete_range(lo.as_slice()..hi.as_slice())
            };
            m.retain(|k, _| !(lo <= *k && *k < hi));
        }
    }
}

fn all(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The first difference of two entry lists, readable (an `assert_eq!` of long lists is not).
fn first_difference(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)]) -> String {
    let show = |e: Option<&(Vec<u8>, Vec<u8>)>| {
        e.map(|(k, v)| format!("{}={}", k.escape_ascii(), v.escape_ascii()))
            .unwrap_or_else(|| "<end>".into())
    };
    let i = got.iter().zip(want).take_while(|(a, b)| a == b).count();
    format!("entry {i}: got {} want {}", show(got.get(i)), show(want.get(i)))
}

/// Asserts two entry lists are equal, naming the first difference.
#[track_caller]
fn assert_entries(got: Vec<(Vec<u8>, Vec<u8>)>, want: Vec<(Vec<u8>, Vec<u8>)>, what: &str) {
    assert!(
        got == want,
        "{what}: {} ({} vs {} entries)",
        first_difference(&got, &want),
        got.len(),
        want.len()
    );
}

fn collect(it: siftdb::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| r.expect("scan entry")).collect()
}

fn collect_rev(it: siftdb::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.rev().map(|r| r.expect("reverse scan entry")).collect()
}

fn model_range(m: &Model, lo: &[u8], hi: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn model_prefix(m: &Model, p: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.range::<[u8], _>((Bound::Included(p), Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(p))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn reversed(mut v: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Vec<u8>, Vec<u8>)> {
    v.reverse();
    v
}

/// Random seeks (`seek`, `seek_for_prev`, to first, to last) each followed by a random walk of
/// `next` and `prev`, checked against the model at every step. Targets are keys of the key
/// space, half of them with a suffix so they fall between keys.
fn check_cursor_walk(rng: &mut SplitMix64, c: &mut DbCursor, m: &Model, what: &str) {
    let keys: Vec<&Vec<u8>> = m.keys().collect();
    for _ in 0..3 {
        let mut target = key(rng);
        if rng.below(2) == 0 {
            target.push(b'~');
        }
        let mut at = match rng.below(4) {
            0 => {
                c.seek(&target).unwrap();
                Some(keys.partition_point(|k| **k < target)).filter(|&i| i < keys.len())
            }
            1 => {
                c.seek_for_prev(&target).unwrap();
                keys.partition_point(|k| **k <= target).checked_sub(1)
            }
            2 => {
                c.seek_to_first().unwrap();
                Some(0).filter(|_| !keys.is_empty())
            }
            _ => {
                c.seek_to_last().unwrap();
                keys.len().checked_sub(1)
            }
        };
        for step in 0..rng.below(40) {
            let Some(i) = at else {
                assert!(!c.valid(), "{what}: cursor past an end at step {step}");
                break;
            };
            assert!(c.valid(), "{what}: cursor on {:?} at step {step}", keys[i]);
            assert_eq!(c.key(), keys[i].as_slice(), "{what}: key at step {step}");
            assert_eq!(c.value(), m[keys[i]].as_slice(), "{what}: value at step {step}");
            if rng.below(2) == 0 {
                c.next().unwrap();
                at = Some(i + 1).filter(|&j| j < keys.len());
            } else {
                c.prev().unwrap();
                at = i.checked_sub(1);
            }
        }
    }
}

/// Checks every kind of read through a snapshot against the model clones taken with it (`m`
/// for the default keyspace, `m2` for `ks2`).
fn check_snapshot(
    rng: &mut SplitMix64,
    snap: &Snapshot,
    ks2: &Keyspace,
    (m, m2): (&Model, &Model),
    op: usize,
) {
    for _ in 0..4 {
        let k = key(rng);
        assert_eq!(
            snap.keyspace(ks2).unwrap().get(&k).unwrap(),
            m2.get(&k).cloned(),
            "op {op}: snap ks2 get {k:?}"
        );
    }
    let (a, b) = (key(rng), key(rng));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let want = model_range(m2, &lo, &hi);
    let got = collect(snap.keyspace(ks2).unwrap().range(lo.as_slice()..hi.as_slice()).unwrap());
    assert_eq!(got, want, "op {op}: snapshot ks2 range {lo:?}..{hi:?}");
    let got = collect_rev(snap.keyspace(ks2).unwrap().range(lo.as_slice()..hi.as_slice()).unwrap());
    assert_eq!(got, reversed(want), "op {op}: snapshot ks2 reverse range {lo:?}..{hi:?}");
    for _ in 0..4 {
        let k = key(rng);
        assert_eq!(snap.get(&k).unwrap(), m.get(&k).cloned(), "op {op}: snapshot get {k:?}");
    }
    let keys: Vec<Vec<u8>> = (0..1 + rng.below(24)).map(|_| key(rng)).collect();
    let got: Vec<Option<Vec<u8>>> = snap.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
    let expect: Vec<Option<Vec<u8>>> = keys.iter().map(|k| m.get(k).cloned()).collect();
    assert_eq!(got, expect, "op {op}: snapshot multi_get {keys:?}");
    let k = key(rng);
    assert_eq!(snap.contains_key(&k).unwrap(), m.contains_key(&k), "op {op}: snap contains {k:?}");
    let p = format!("k{}", rng.below(100)).into_bytes();
    assert_eq!(collect(snap.prefix(&p).unwrap()), model_prefix(m, &p), "op {op}: snap prefix");
    let p = format!("k{}", rng.below(100)).into_bytes();
    let rev = collect_rev(snap.prefix(&p).unwrap());
    assert_eq!(rev, reversed(model_prefix(m, &p)), "op {op}: snap prefix rev");
    check_cursor_walk(rng, &mut snap.cursor().unwrap(), m, &format!("op {op}: snapshot cursor"));
    if rng.below(8) == 0 {
        assert_entries(
            collect(snap.scan().unwrap()),
            all(m),
            &format!("op {op}: snapshot full scan"),
        );
        let rev = collect_rev(snap.scan().unwrap());
        assert_eq!(rev, reversed(all(m)), "op {op}: snapshot full reverse scan");
        let rev = collect_rev(snap.keyspace(ks2).unwrap().scan().unwrap());
        assert_eq!(rev, reversed(all(m2)), "op {op}: snapshot ks2 full reverse scan");
    }
}

/// Runs the random sequence on the database at `dir` (on `storage` if given). With
/// `power_loss`, every write is synced and every reopen follows a simulated power loss of
/// `storage` that drops all unsynced data and directory entries: since everything acknowledged
/// was synced, the recovered database must still equal the model exactly.
fn run_model(dir: &Path, storage: Option<&MemStorage>, seed: u64, power_loss: bool, small: bool) {
    let wo = WriteOptions { sync: power_loss };
    let mut rng = SplitMix64::new(seed);
    let mut db = Db::open(dir, options(storage, small)).expect("open");
    let mut model = Model::new();
    let ks2_open = |db: &Db| db.keyspace("ks2", KeyspaceOptions::default()).expect("keyspace");
    let (mut ks2, mut model2): (Keyspace, Model) = (ks2_open(&db), Model::new());
    let mut snaps: Vec<(Snapshot, Model, Model)> = Vec::new();
    let (mut flushes, mut reopens, mut snapshot_checks) = (0, 0, 0);
    for op in 0..OPS {
        match rng.below(1000) {
            320..=349 => {
                // A merge into one of 50 hot keys (operand chains form across levels). A value
                // that is not 8 bytes is deleted in the same batch first: the sum starts at 0.
                let (k, n) = (format!("k{}", rng.below(50)).into_bytes(), rng.below(1 << 20));
                let mut b = WriteBatch::new();
                let old = match model.get(&k) {
                    Some(v) if v.len() == 8 => u64::from_le_bytes(v[..].try_into().unwrap()),
                    Some(_) => {
                        b.delete(&k);
                        0
                    }
                    None => 0,
                };
                b.merge(&k, n.to_le_bytes());
                db.write_opt(b, wo).unwrap();
                model.insert(k, old.wrapping_add(n).to_le_bytes().to_vec());
            }
            0..=319 => {
                let (k, v) = (key(&mut rng), value(&mut rng, op));
                let mut b = WriteBatch::new();
                b.put(&k, &v);
                db.write_opt(b, wo).unwrap();
                model.insert(k, v);
            }
            440..=449 => {
                // delete_range [k, k ++ "5"): k and some of its extensions (k0.., k1.., ...).
                let lo = key(&mut rng);
                let hi = [lo.as_slice(), b"5"].concat();
                let mut b = WriteBatch::new();
                b.delete_range(lo.as_slice()..hi.as_slice());
                db.write_opt(b, wo).unwrap();
                model.retain(|k, _| !(lo <= *k && *k < hi));
            }
            350..=439 => {
                let k = key(&mut rng);
                let mut b = WriteBatch::new();
                b.delete(&k);
                db.write_opt(b, wo).unwrap();
                model.remove(&k);
            }
            540..=549 => {
                // A serializable transaction: its reads see the snapshot with its own writes;
                // it commits exactly when no key or range it read was written meanwhile, and
                // then every write applies; a conflicted one applies none.
                let to = TransactionOptions { write: wo, ..TransactionOptions::default() };
                let tx = db.transaction_opt(to).unwrap();
                let mut view = model.clone();
                let mut writes: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
                let mut read = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    let k = key(&mut rng);
                    match rng.below(3) {
                        0 => {
                            assert_eq!(tx.get(&k).unwrap(), view.get(&k).cloned(), "op {op}");
                            // A key the transaction wrote first reads its own write: nothing
                            // read from the snapshot.
                            if !writes.iter().any(|(w, _)| *w == k) {
                                read.push(k);
                            }
                        }
                        1 => {
                            let v = value(&mut rng, op);
                            tx.put(&k, &v).unwrap();
                            view.insert(k.clone(), v.clone());
                            writes.push((k, Some(v)));
                        }
                        _ => {
                            tx.delete(&k).unwrap();
                            view.remove(&k);
                            writes.push((k, None));
                        }
                    }
                }
                let (a, b) = (key(&mut rng), key(&mut rng));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let got: Vec<_> =
                    tx.range(lo.as_slice()..hi.as_slice()).unwrap().map(|r| r.unwrap()).collect();
                assert_eq!(got, model_range(&view, &lo, &hi), "op {op}: transaction range");
                // A concurrent write, to a key read or anywhere.
                let conflict = rng.below(2) == 0 && {
                    let k = match read.len() as u64 {
                        n if n > 0 && rng.below(2) == 0 => read[rng.below(n) as usize].clone(),
                        _ => key(&mut rng),
                    };
                    let v = value(&mut rng, op);
                    db.write_opt(std::mem::take(WriteBatch::new().put(&k, &v)), wo).unwrap();
                    model.insert(k.clone(), v);
                    read.contains(&k) || (lo <= k && k < hi)
                };
                if rng.below(4) == 0 {
                    db.flush().unwrap();
                }
                // A read-only transaction commits without a check: it serializes at its read
                // point.
                let conflict = conflict && !writes.is_empty();
                match tx.commit() {
                    Ok(()) => {
                        assert!(
                            !conflict,
                            "op {op}: a transaction that read a changed key committed"
                        );
                        for (k, v) in writes {
                            match v {
                                Some(v) => model.insert(k, v),
                                None => model.remove(&k),
                            };
                        }
                    }
                    Err(e) => assert!(e.is_conflict() && conflict, "op {op}: {e}"),
                }
            }
            450..=539 => {
                // Several records of every kind in both keyspaces, some on the same key: they
                // apply in batch order (the last one on a key wins).
                let mut b = WriteBatch::new();
                for _ in 0..2 + rng.below(8) {
                    if rng.below(4) == 0 {
                        batch_record(&mut rng, &mut b, &ks2, true, op, &mut model2);
                    } else {
                        batch_record(&mut rng, &mut b, &ks2, false, op, &mut model);
                    }
                }
                db.write_opt(b, wo).unwrap();
            }
            995..=999 => {
                // An iterator stays consistent while the database changes under it: open it,
                // read part of it, write (and maybe flush), then read the rest. It must yield
                // exactly the model as it was when the iterator was opened.
                let expect: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                let mut it = db.scan().unwrap();
                let mut got: Vec<_> =
                    it.by_ref().take(rng.below(400) as usize).map(|r| r.unwrap()).collect();
                for _ in 0..rng.below(100) {
                    let k = key(&mut rng);
                    let mut b = WriteBatch::new();
                    if rng.below(3) == 0 {
                        b.delete(&k);
                        model.remove(&k);
                    } else {
                        let v = value(&mut rng, op);
                        b.put(&k, &v);
                        model.insert(k, v);
                    }
                    db.write_opt(b, wo).unwrap();
                }
                if rng.below(4) == 0 {
                    db.flush().unwrap();
                }
                // The rest from both ends at random: the ends meet without a repeat or a gap.
                let mut back = Vec::new();
                loop {
                    if rng.below(2) == 0 {
                        let Some(kv) = it.next() else { break };
                        got.push(kv.unwrap());
                    } else {
                        let Some(kv) = it.next_back() else { break };
                        back.push(kv.unwrap());
                    }
                }
                got.extend(back.into_iter().rev());
                assert_eq!(got, expect, "op {op}: iterator interleaved with writes");
            }
            550..=799 | 990..=994 => {
                let k = key(&mut rng);
                assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "op {op}: get {k:?}");
                assert_eq!(db.contains_key(&k).unwrap(), model.contains_key(&k), "op {op}");
                assert_eq!(ks2.get(&k).unwrap(), model2.get(&k).cloned(), "op {op}: ks2 {k:?}");
                if rng.below(4) == 0 {
                    // A batch with duplicates and keys in no particular order.
                    let mut keys: Vec<Vec<u8>> =
                        (0..rng.below(64)).map(|_| key(&mut rng)).collect();
                    keys.push(k.clone());
                    keys.push(k);
                    let got: Vec<Option<Vec<u8>>> =
                        db.multi_get(&keys).into_iter().map(|r| r.unwrap()).collect();
                    let expect: Vec<Option<Vec<u8>>> =
                        keys.iter().map(|k| model.get(k).cloned()).collect();
                    assert_eq!(got, expect, "op {op}: multi_get {keys:?}");
                }
            }
            800..=869 => {
                let a = key(&mut rng);
                let b = key(&mut rng);
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let want = model_range(&model, &lo, &hi);
                match rng.below(4) {
                    0 => {
                        let got = collect(db.range(lo.as_slice()..hi.as_slice()).unwrap());
                        assert_entries(got, want, &format!("op {op}: range {lo:?}..{hi:?}"));
                    }
                    3 => {
                        let want = model_range(&model2, &lo, &hi);
                        let got = collect(ks2.range(lo.as_slice()..hi.as_slice()).unwrap());
                        assert_eq!(got, want, "op {op}: ks2 range {lo:?}..{hi:?}");
                        let got = collect_rev(ks2.range(lo.as_slice()..hi.as_slice()).unwrap());
                        assert_eq!(got, reversed(want), "op {op}: ks2 rev range {lo:?}..{hi:?}");
                    }
                    1 => {
                        let got = collect_rev(db.range(lo.as_slice()..hi.as_slice()).unwrap());
                        assert_eq!(got, reversed(want), "op {op}: rev range {lo:?}..{hi:?}");
                    }
                    _ => check_cursor_walk(
                        &mut rng,
                        &mut db.cursor().unwrap(),
                        &model,
                        &format!("op {op}: cursor"),
                    ),
                }
            }
            870..=919 => {
                let p = format!("k{}", rng.below(200)).into_bytes();
                if rng.below(2) == 0 {
                    assert_eq!(
                        collect(db.prefix(&p).unwrap()),
                        model_prefix(&model, &p),
                        "op {op}"
                    );
                } else {
                    let got = collect_rev(db.prefix(&p).unwrap());
                    assert_eq!(got, reversed(model_prefix(&model, &p)), "op {op}: rev prefix");
                }
            }
            920..=939 => {
                if snaps.len() == MAX_SNAPSHOTS {
                    let i = rng.below(snaps.len() as u64) as usize;
                    snaps.swap_remove(i);
                }
                snaps.push((db.snapshot(), model.clone(), model2.clone()));
            }
            940..=984 => {
                if !snaps.is_empty() {
                    let i = rng.below(snaps.len() as u64) as usize;
                    let (s, m, m2) = &snaps[i];
                    check_snapshot(&mut rng, s, &ks2, (m, m2), op);
                    snapshot_checks += 1;
                }
            }
            985..=987 => {
                db.flush().unwrap();
                flushes += 1;
            }
            _ => {
                // 988..=989: close and reopen. A snapshot serves nothing after the close, so
                // the live ones are checked and released before it.
                for (s, m, m2) in snaps.drain(..) {
                    check_snapshot(&mut rng, &s, &ks2, (&m, &m2), op);
                }
                // Handles that outlive the close: closing releases the directory lock, and
                // each of them then fails with Error::Closed (design.md#life-cycle).
                let old_snap = db.snapshot();
                let mut old_iter = db.scan().unwrap();
                let old_ks = ks2.clone();
                if let (true, Some(s)) = (power_loss, storage) {
                    // Power loss while the database is open (its destructor, which syncs the
                    // WAL, must not get to run first); the crash kills the old handles, so the
                    // drop below cannot make anything durable.
                    s.crash_drop_unsynced();
                }
                drop((ks2, db));
                db = Db::open(dir, options(storage, small)).expect("reopen beside old handles");
                ks2 = ks2_open(&db);
                let closed = |r: siftdb::Result<()>| matches!(r, Err(siftdb::Error::Closed));
                assert!(closed(old_ks.put(b"k", b"v")), "op {op}: keyspace put after close");
                assert!(closed(old_ks.get(b"k").map(drop)), "op {op}: keyspace get after close");
                assert!(closed(old_snap.get(b"k").map(drop)), "op {op}: snapshot after close");
                match old_iter.next() {
                    Some(Err(siftdb::Error::Closed)) => {}
                    None if model.is_empty() => {}
                    other => panic!("op {op}: iterator after close gave {other:?}"),
                }
                drop((old_snap, old_iter, old_ks));
                reopens += 1;
                assert_eq!(
                    collect(ks2.scan().unwrap()),
                    all(&model2),
                    "op {op}: ks2 scan after reopen"
                );
                let rev = collect_rev(ks2.scan().unwrap());
                assert_eq!(rev, reversed(all(&model2)), "op {op}: ks2 reverse scan after reopen");
                assert_eq!(collect(db.scan().unwrap()), all(&model), "op {op}: scan after reopen");
                let rev = collect_rev(db.scan().unwrap());
                assert_eq!(rev, reversed(all(&model)), "op {op}: reverse scan after reopen");
            }
        }
    }
    // The final state, entry by entry and as one scan, after one more reopen.
    snaps.clear();
    drop((ks2, db));
    let db = Db::open(dir, options(storage, small)).expect("final reopen");
    let ks2 = ks2_open(&db);
    assert_eq!(collect_rev(ks2.scan().unwrap()), reversed(all(&model2)), "final ks2 scan");
    for (k, v) in &model2 {
        assert_eq!(ks2.get(k).unwrap().as_ref(), Some(v), "final ks2 get {k:?}");
    }
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "final get {k:?}");
    }
    assert_eq!(collect(db.scan().unwrap()), all(&model), "final scan");
    let stats = db.stats();
    // The run must have exercised what it claims to: flushes that left SST files (background
    // compaction decides on which levels), reopens and snapshot checks.
    assert!(stats.levels.iter().map(|l| l.files).sum::<usize>() >= 1, "{stats:?}");
    assert!(flushes >= 5 && reopens >= 2 && snapshot_checks >= 100);
    if small {
        let files: usize = stats.levels.iter().map(|l| l.files).sum();
        assert!(files > 16, "more tables than the cache holds: {files}");
        assert!(stats.table_cache_open_tables <= 16, "{stats:?}");
        assert!(stats.table_cache_misses > 0, "{stats:?}");
    }
}

#[test]
fn random_operations_match_a_btreemap_on_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    run_model(dir.path(), None, 0x5EED_0001, false, false);
}

#[test]
fn random_operations_match_a_btreemap_on_mem_storage() {
    let storage = MemStorage::new();
    run_model(Path::new("/db"), Some(&storage), 0x5EED_0002, false, false);
}

#[test]
fn synced_random_operations_survive_power_losses_on_mem_storage() {
    let storage = MemStorage::new();
    run_model(Path::new("/db"), Some(&storage), 0x5EED_0003, true, false);
}

#[test]
fn random_operations_match_a_btreemap_through_a_table_cache_of_16_tables() {
    let dir = tempfile::tempdir().unwrap();
    run_model(dir.path(), None, 0x5EED_0004, false, true);
}

#[test]
fn synced_random_operations_survive_power_losses_through_a_table_cache_of_16_tables() {
    let storage = MemStorage::new();
    run_model(Path::new("/db"), Some(&storage), 0x5EED_0005, true, true);
}
