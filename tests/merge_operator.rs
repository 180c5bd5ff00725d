//! The merge operator (issue 14): read-modify-write without a read. Counters that get-then-put
//! loses updates on reach their exact sums with `Db::merge`; operands are merged correctly
//! wherever they live (memtable, L0, L1, after reopen), at snapshots, in both scan directions
//! and in `multi_get`; bad operands, a renamed operator and a missing operator are typed errors;
//! a crash keeps a batch's merges all or nothing.

use siftdb::storage::mem::{DataFate, DirFate};
use siftdb::storage::MemStorage;
use siftdb::{
    CompactionOptions, Db, Error, MergeOperator, Options, Result, U64AddOperator, WriteBatch,
    WriteOptions,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// An order-sensitive operator: the value is the base and the operands joined by commas, so a
/// merge applied in the wrong order or with an operand missing or doubled shows.
struct Concat;

impl MergeOperator for Concat {
    fn name(&self) -> &str {
        "test.concat"
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, ops: &[&[u8]]) -> Result<Vec<u8>> {
        let mut parts: Vec<&[u8]> = existing.into_iter().collect();
        parts.extend_from_slice(ops);
        Ok(parts.join(&b","[..]))
    }

    fn partial_merge(&self, _key: &[u8], left: &[u8], right: &[u8]) -> Option<Vec<u8>> {
        Some([left, right].join(&b","[..]))
    }
}

fn le(n: u64) -> [u8; 8] {
    n.to_le_bytes()
}

fn as_u64(v: Option<Vec<u8>>) -> Option<u64> {
    v.map(|v| u64::from_le_bytes(v.try_into().expect("8-byte counter")))
}

fn opts(op: Option<Arc<dyn MergeOperator>>) -> Options {
    Options {
        merge_operator: op,
        memtable_size: 16 << 10,
        compaction: CompactionOptions { auto: false, ..CompactionOptions::default() },
        ..Options::default()
    }
}

fn add() -> Option<Arc<dyn MergeOperator>> {
    Some(Arc::new(U64AddOperator))
}

fn concat() -> Option<Arc<dyn MergeOperator>> {
    Some(Arc::new(Concat))
}

/// Whether a full scan (forwards or backwards) meets an error, when made or on the way.
fn scan_fails(db: &Db, reverse: bool) -> bool {
    match db.scan() {
        Err(_) => true,
        Ok(it) if reverse => it.rev().any(|kv| kv.is_err()),
        Ok(mut it) => it.any(|kv| kv.is_err()),
    }
}

fn files_per_level(db: &Db) -> Vec<usize> {
    db.stats().levels.iter().map(|l| l.files).collect()
}

#[test]
fn four_threads_merging_one_counter_2500_times_each_reach_exactly_10000() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options { merge_operator: add(), ..Options::default() }).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..2_500 {
                    db.merge("counter", le(1)).unwrap();
                }
            });
        }
    });
    assert_eq!(as_u64(db.get("counter").unwrap()), Some(10_000));
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(as_u64(db.get("counter").unwrap()), Some(10_000));
}

#[test]
fn operands_across_memtable_l0_and_l1_sum_correctly_through_flushes_compactions_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut rng = siftdb::filter::rng::SplitMix64::new(14);
    let mut db = Db::open(dir.path(), opts(add())).unwrap();
    let mut saw_l0_and_l1 = false;
    for round in 0..6u64 {
        for _ in 0..1500 {
            let k = format!("ctr{:03}", rng.below(200)).into_bytes();
            let n = rng.below(1000);
            match rng.below(10) {
                0 => {
                    db.put(&k, le(n)).unwrap();
                    model.insert(k, n);
                }
                1 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                _ => {
                    db.merge(&k, le(n)).unwrap();
                    *model.entry(k).or_insert(0) += n;
                }
            }
        }
        match round % 3 {
            0 => db.flush().unwrap(),
            1 => db.compact().unwrap(),
            _ => {
                drop(db);
                db = Db::open(dir.path(), opts(add())).unwrap();
            }
        }
        // Operands still in the memtable on top of L0 and L1 files.
        for _ in 0..300 {
            let k = format!("ctr{:03}", rng.below(200)).into_bytes();
            db.merge(&k, le(1)).unwrap();
            *model.entry(k).or_insert(0) += 1;
        }
        let levels = files_per_level(&db);
        saw_l0_and_l1 |= levels[0] > 0 && levels[1] > 0;
        for i in 0..200 {
            let k = format!("ctr{i:03}").into_bytes();
            assert_eq!(as_u64(db.get(&k).unwrap()), model.get(&k).copied(), "round {round} {i}");
            assert_eq!(db.contains_key(&k).unwrap(), model.contains_key(&k));
        }
        let scanned: BTreeMap<Vec<u8>, u64> = db
            .scan()
            .unwrap()
            .map(|kv| kv.map(|(k, v)| (k, as_u64(Some(v)).unwrap())))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(scanned, model, "round {round}");
    }
    assert!(saw_l0_and_l1, "operands never sat in L0 and L1 at once: {:?}", files_per_level(&db));
    db.compact().unwrap();
    for (k, n) in &model {
        assert_eq!(as_u64(db.get(k).unwrap()), Some(*n));
    }
}

#[test]
fn merges_onto_a_put_extend_it_and_merges_after_a_delete_start_from_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(concat())).unwrap();
    db.put("a", "base").unwrap();
    db.merge("a", "1").unwrap();
    db.flush().unwrap(); // base and first operand in L0
    db.merge("a", "2").unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"base,1,2"[..]));
    db.put("b", "old").unwrap();
    db.flush().unwrap();
    db.delete("b").unwrap();
    db.merge("b", "x").unwrap();
    db.flush().unwrap();
    db.merge("b", "y").unwrap();
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"x,y"[..]));
    // A merge into a key that never existed: the operands alone.
    db.merge("c", "only").unwrap();
    assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"only"[..]));
    db.compact().unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"base,1,2"[..]));
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"x,y"[..]));
    assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"only"[..]));
    // A delete after merges hides them all.
    db.delete("a").unwrap();
    assert_eq!(db.get("a").unwrap(), None);
}

#[test]
fn snapshots_between_operands_see_their_own_sums_before_and_after_flush_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(concat())).unwrap();
    db.put("k", "p").unwrap();
    db.merge("k", "1").unwrap();
    let s1 = db.snapshot();
    db.merge("k", "2").unwrap();
    db.merge("k", "3").unwrap();
    let s2 = db.snapshot();
    db.merge("k", "4").unwrap();
    db.merge("other", "o").unwrap();
    let s3 = db.snapshot();
    db.delete("k").unwrap();
    db.merge("k", "5").unwrap();
    let check = |when: &str| {
        assert_eq!(s1.get("k").unwrap().as_deref(), Some(&b"p,1"[..]), "{when}");
        assert_eq!(s2.get("k").unwrap().as_deref(), Some(&b"p,1,2,3"[..]), "{when}");
        assert_eq!(s3.get("k").unwrap().as_deref(), Some(&b"p,1,2,3,4"[..]), "{when}");
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"5"[..]), "{when}");
        assert_eq!(s1.get("other").unwrap(), None, "{when}");
        let at_s2: Vec<(Vec<u8>, Vec<u8>)> = s2.scan().unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(at_s2, vec![(b"k".to_vec(), b"p,1,2,3".to_vec())], "{when}");
        let back: Vec<(Vec<u8>, Vec<u8>)> =
            s3.scan().unwrap().rev().map(|kv| kv.unwrap()).collect();
        let want = vec![(b"other".to_vec(), b"o".to_vec()), (b"k".to_vec(), b"p,1,2,3,4".to_vec())];
        assert_eq!(back, want, "{when}");
    };
    check("in the memtable");
    db.flush().unwrap();
    check("after a flush");
    db.compact().unwrap();
    check("after a compaction");
    drop((s1, s2, s3));
    db.compact().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"5"[..]));
    // With no snapshot left, the bottommost compaction folds each key into one Put.
    let stats = db.stats();
    let entries: u64 = stats.levels.iter().map(|l| l.entries).sum();
    assert_eq!(entries, 2, "{stats:?}");
}

#[test]
fn reverse_iteration_and_the_cursor_show_merged_values_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(concat())).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for i in 0..60u32 {
        let k = format!("k{i:02}").into_bytes();
        let mut parts: Vec<String> = Vec::new();
        if i % 3 == 0 {
            db.put(&k, "b").unwrap();
            parts.push("b".into());
        }
        for j in 0..(i % 4) {
            db.merge(&k, format!("m{j}")).unwrap();
            parts.push(format!("m{j}"));
        }
        if i % 7 == 0 {
            db.delete(&k).unwrap();
            parts.clear();
            db.merge(&k, "after").unwrap();
            parts.push("after".into());
        }
        if i == 20 {
            db.flush().unwrap(); // some keys' versions split between L0 and the memtable
        }
        if !parts.is_empty() {
            model.insert(k, parts.join(",").into_bytes());
        }
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    let fwd: Vec<_> = db.scan().unwrap().map(|kv| kv.unwrap()).collect();
    assert_eq!(fwd, want);
    let back: Vec<_> = db.scan().unwrap().rev().map(|kv| kv.unwrap()).collect();
    assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>());
    let range: Vec<_> = db.range("k10".."k30").unwrap().rev().map(|kv| kv.unwrap()).collect();
    let want_range: Vec<_> = model
        .range(b"k10".to_vec()..b"k30".to_vec())
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(range, want_range);

    // A cursor turning round on merged entries.
    let mut c = db.cursor().unwrap();
    c.seek(b"k05").unwrap();
    assert_eq!((c.key(), c.value()), (&b"k05"[..], &model[&b"k05".to_vec()][..]));
    c.next().unwrap();
    assert_eq!((c.key(), c.value()), (&b"k06"[..], &model[&b"k06".to_vec()][..]));
    c.prev().unwrap();
    assert_eq!((c.key(), c.value()), (&b"k05"[..], &model[&b"k05".to_vec()][..]));
    c.prev().unwrap();
    assert_eq!(c.key(), b"k03"); // k04 was never written
    c.seek_for_prev(b"k59").unwrap();
    let last = model.iter().next_back().unwrap();
    assert_eq!((c.key(), c.value()), (&last.0[..], &last.1[..]));
    // Walk the whole range backwards with the cursor, then forwards again.
    let mut seen = Vec::new();
    c.seek_to_last().unwrap();
    while c.valid() {
        seen.push((c.key().to_vec(), c.value().to_vec()));
        c.prev().unwrap();
    }
    seen.reverse();
    assert_eq!(seen, want);
    c.seek_to_first().unwrap();
    let mut seen = Vec::new();
    while c.valid() {
        seen.push((c.key().to_vec(), c.value().to_vec()));
        c.next().unwrap();
    }
    assert_eq!(seen, want);
}

#[test]
fn multi_get_merges_operands_like_get_across_levels() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(add())).unwrap();
    for i in 0..50u64 {
        db.merge(format!("c{i:02}"), le(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap(); // L1
    for i in (0..50u64).step_by(2) {
        db.merge(format!("c{i:02}"), le(100)).unwrap();
    }
    db.flush().unwrap(); // L0
    db.put("c03", le(7)).unwrap();
    db.merge("c03", le(1)).unwrap(); // memtable: base and operand
    let keys: Vec<String> =
        (0..52u64).rev().map(|i| format!("c{i:02}")).chain(["c04".into()]).collect();
    let got = db.multi_get(&keys);
    for (k, g) in keys.iter().zip(got) {
        let single = db.get(k).unwrap();
        assert_eq!(g.unwrap(), single, "{k}");
    }
    assert_eq!(as_u64(db.get("c04").unwrap()), Some(104));
    assert_eq!(as_u64(db.get("c03").unwrap()), Some(8));
    assert_eq!(as_u64(db.get("c05").unwrap()), Some(5));
    assert_eq!(db.get("c51").unwrap(), None);
}

#[test]
fn u64_add_operands_of_the_wrong_length_give_a_typed_error_naming_key_and_length() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts(add())).unwrap();
    db.merge("ok", le(1)).unwrap();
    db.merge("bad", le(1)).unwrap();
    db.merge("bad", b"xyz").unwrap();
    db.put("badbase", b"12345").unwrap();
    db.merge("badbase", le(1)).unwrap();
    let check = |when: &str| {
        for (k, len) in [("bad", "3 bytes"), ("badbase", "5 bytes")] {
            match db.get(k).unwrap_err() {
                Error::MergeFailed { operator, key, what } => {
                    assert_eq!(operator, "siftdb.u64add", "{when}");
                    assert_eq!(key, k.as_bytes(), "{when}");
                    assert!(what.contains(len), "{when}: {what}");
                }
                other => panic!("{when}: expected MergeFailed, got {other}"),
            }
        }
        assert!(scan_fails(&db, false), "{when}: the scan hid the bad operand");
        assert!(scan_fails(&db, true), "{when}: the reverse scan hid the bad operand");
        assert_eq!(as_u64(db.get("ok").unwrap()), Some(1), "{when}");
    };
    check("in the memtable");
    db.flush().unwrap();
    check("after a flush");
    db.compact().unwrap(); // the failed merge keeps the operands; the compaction succeeds
    check("after a compaction");
}

#[test]
fn reopening_with_a_differently_named_operator_refuses_to_merge_old_operands() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), opts(concat())).unwrap();
        db.merge("k", "a").unwrap();
        db.merge("k", "b").unwrap();
        db.put("plain", "v").unwrap();
        db.flush().unwrap();
    }
    let db = Db::open(dir.path(), opts(add())).unwrap();
    let e = db.get("k").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("test.concat") && msg.contains("siftdb.u64add"), "{msg}");
    assert!(db.multi_get(["k"])[0].is_err());
    assert!(scan_fails(&db, false) && scan_fails(&db, true));
    // A compaction copies the other operator's operands unchanged, under their own name.
    db.compact().unwrap();
    assert!(db.get("k").unwrap_err().to_string().contains("test.concat"));
    // Keys without operands still read.
    assert_eq!(db.get("plain").unwrap().as_deref(), Some(&b"v"[..]));
    // Operands of both operators in one compaction cannot be recorded together: refused.
    db.merge("n", le(1)).unwrap();
    db.flush().unwrap();
    let e = db.compact().unwrap_err().to_string();
    assert!(e.contains("test.concat") && e.contains("siftdb.u64add"), "{e}");
    drop(db);
    let db = Db::open(dir.path(), opts(concat())).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"a,b"[..]));
    assert!(db.get("n").unwrap_err().to_string().contains("siftdb.u64add"));
}

#[test]
fn without_an_operator_merge_is_refused_and_reads_of_operands_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), opts(None)).unwrap();
        assert!(matches!(db.merge("k", le(1)).unwrap_err(), Error::InvalidArgument(_)));
        let mut b = WriteBatch::new();
        b.put("p", "1").merge("k", le(1));
        assert!(matches!(db.write(b).unwrap_err(), Error::InvalidArgument(_)));
        assert_eq!(db.get("p").unwrap(), None, "a refused batch wrote something");
        assert_eq!(db.get("k").unwrap(), None);
    }
    {
        let db = Db::open(dir.path(), opts(add())).unwrap();
        db.merge("k", le(2)).unwrap(); // stays in the WAL
        db.merge("f", le(3)).unwrap();
        db.flush().unwrap();
        db.merge("w", le(4)).unwrap(); // stays in the WAL
    }
    // Opening without an operator works (the WAL's operands are flushed as they are).
    let db = Db::open(dir.path(), opts(None)).unwrap();
    for k in ["k", "f", "w"] {
        let e = db.get(k).unwrap_err();
        assert!(e.to_string().contains("no merge operator is configured"), "{k}: {e}");
        assert!(db.contains_key(k).is_err());
    }
    assert!(db.cursor().unwrap().seek_to_first().is_err());
    db.put("p", "1").unwrap();
    assert_eq!(db.get("p").unwrap().as_deref(), Some(&b"1"[..]));
    // Compaction without an operator keeps the operands as they are.
    db.compact().unwrap();
    drop(db);
    let db = Db::open(dir.path(), opts(add())).unwrap();
    assert_eq!(as_u64(db.get("k").unwrap()), Some(2));
    assert_eq!(as_u64(db.get("f").unwrap()), Some(3));
    assert_eq!(as_u64(db.get("w").unwrap()), Some(4));
}

#[test]
fn a_crash_mid_stream_keeps_each_batch_of_merges_all_or_nothing() {
    for seed in 1..=6u64 {
        let storage = MemStorage::new();
        let o = || Options {
            merge_operator: add(),
            memtable_size: 32 << 10,
            storage: Some(Arc::new(storage.clone())),
            ..Options::default()
        };
        let n = 1500u64;
        let db = Db::open("/db", o()).unwrap();
        let mut last_synced = 0;
        for i in 1..=n {
            // Each batch adds 1 to four counters and records its number.
            let mut b = WriteBatch::new();
            for c in 0..4 {
                b.merge(format!("ctr{c}"), le(1));
            }
            b.put("batch", le(i));
            let sync = i % 97 == 0;
            db.write_opt(b, WriteOptions { sync }).unwrap();
            if sync {
                last_synced = i;
            }
        }
        let dirs = if seed % 2 == 1 { DirFate::RevertUnsynced } else { DirFate::KeepAll };
        storage.crash(DataFate::KeepRandomPrefix(seed), dirs);
        drop(db);
        let db = Db::open("/db", o()).unwrap();
        let p = as_u64(db.get("batch").unwrap()).expect("a synced batch survived");
        assert!(p >= last_synced, "seed {seed}: synced batch {last_synced} lost (have {p})");
        for c in 0..4 {
            assert_eq!(as_u64(db.get(format!("ctr{c}")).unwrap()), Some(p), "seed {seed} ctr{c}");
        }
    }
}

/// Panics when it merges the operand `boom`: a bug in user code run by the compaction thread.
struct PanicsOnBoom;

impl MergeOperator for PanicsOnBoom {
    fn name(&self) -> &str {
        "test.panics_on_boom"
    }

    fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, ops: &[&[u8]]) -> Result<Vec<u8>> {
        assert!(!ops.contains(&&b"boom"[..]), "boom operand");
        Ok(existing.unwrap_or_default().to_vec())
    }
}

#[test]
fn a_panic_in_the_compaction_thread_turns_the_database_read_only_instead_of_hanging_writers() {
    let dir = tempfile::tempdir().unwrap();
    let compaction =
        CompactionOptions { auto: true, l0_compaction_trigger: 2, ..CompactionOptions::default() };
    let op: Arc<dyn MergeOperator> = Arc::new(PanicsOnBoom);
    let o = Options { compaction, ..opts(Some(op)) };
    let db = Db::open(dir.path(), o).unwrap();
    // Two L0 files, one with the base and one with the operand: their compaction merges them.
    db.put("k", "base").unwrap();
    db.flush().unwrap();
    db.merge("k", "boom").unwrap();
    db.flush().unwrap();
    // Without the guard the thread would die silently: writes would go on until L0 reached the
    // stop trigger and then wait forever. With it, they fail with the panic named.
    let start = std::time::Instant::now();
    let err = loop {
        match db.put("other", "v") {
            Err(e) => break e,
            Ok(()) if start.elapsed() < std::time::Duration::from_secs(60) => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            Ok(()) => panic!("writes still accepted 60 s after the compaction thread panicked"),
        }
    };
    match &err {
        Error::ReadOnly(why) => {
            assert!(why.contains("compaction thread panicked") && why.contains("boom"), "{why}")
        }
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    assert!(matches!(db.flush(), Err(Error::ReadOnly(_))));
    // Reads of other keys still work; the files are untouched.
    assert_eq!(db.get("other").unwrap().as_deref(), Some(&b"v"[..]));
}
