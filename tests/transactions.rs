//! Optimistic transactions (design.md#transactions): read-your-writes through every read
//! path, savepoints and rollback, and the commit check under both isolation levels.

use siftdb::{
    CompactionOptions, Db, Error, Isolation, KeyspaceOptions, Options, TransactionOptions,
    U64AddOperator,
};
use std::sync::Arc;

fn opts() -> Options {
    Options {
        merge_operator: Some(Arc::new(U64AddOperator)),
        compaction: CompactionOptions { auto: false, ..CompactionOptions::default() },
        ..Options::default()
    }
}

fn open(dir: &tempfile::TempDir) -> Db {
    Db::open(dir.path().join("db"), opts()).unwrap()
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn pairs(items: &[(&str, &str)]) -> Pairs {
    items.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
}

fn collect(it: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>) -> Pairs {
    it.map(Result::unwrap).collect()
}

fn snapshot_isolation() -> TransactionOptions {
    TransactionOptions { isolation: Isolation::Snapshot, ..TransactionOptions::default() }
}

#[test]
fn reads_see_own_writes_through_every_path_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for k in ["a", "c", "e", "g"] {
        db.put(k, format!("db-{k}")).unwrap();
    }
    db.flush().unwrap(); // half the snapshot in a file, half in the memtable
    db.put("i", "db-i").unwrap();
    // Snapshot isolation: the reads of keys written after begin below do not fail the commit.
    let tx = db.transaction_opt(snapshot_isolation()).unwrap();
    tx.put("b", "tx-b").unwrap();
    tx.delete("c").unwrap();
    tx.put("e", "tx-e").unwrap();
    tx.put("j", "tx-j").unwrap();
    db.put("z", "after-begin").unwrap(); // not in the snapshot

    assert_eq!(tx.get("b").unwrap(), Some(b"tx-b".to_vec()));
    assert_eq!(tx.get("c").unwrap(), None);
    assert_eq!(tx.get("a").unwrap(), Some(b"db-a".to_vec()));
    assert_eq!(tx.get("z").unwrap(), None);
    assert!(tx.contains_key("e").unwrap());
    assert!(!tx.contains_key("c").unwrap());
    let got: Vec<_> = tx.multi_get(["a", "b", "c", "z"]).into_iter().map(Result::unwrap).collect();
    assert_eq!(got, vec![Some(b"db-a".to_vec()), Some(b"tx-b".to_vec()), None, None]);

    let want = pairs(&[
        ("a", "db-a"),
        ("b", "tx-b"),
        ("e", "tx-e"),
        ("g", "db-g"),
        ("i", "db-i"),
        ("j", "tx-j"),
    ]);
    assert_eq!(collect(tx.scan().unwrap()), want);
    let mut rev = want.clone();
    rev.reverse();
    assert_eq!(collect(tx.scan().unwrap().rev()), rev);
    assert_eq!(collect(tx.range("b".."g").unwrap()), want[1..3].to_vec());
    assert_eq!(collect(tx.range("b"..="g").unwrap().rev()), rev[2..5].to_vec());
    // Both ends at once never yield an entry twice.
    let mut it = tx.scan().unwrap();
    let mut seen = vec![it.next().unwrap().unwrap(), it.next_back().unwrap().unwrap()];
    for x in it {
        seen.push(x.unwrap());
    }
    seen.sort();
    assert_eq!(seen, want);

    tx.put("p/1", "1").unwrap();
    db.put("p/2", "late").unwrap();
    assert_eq!(collect(tx.prefix("p/").unwrap()), pairs(&[("p/1", "1")]));

    let mut c = tx.cursor().unwrap();
    c.seek(b"c").unwrap();
    assert_eq!((c.key(), c.value()), (&b"e"[..], &b"tx-e"[..]));
    c.prev().unwrap();
    assert_eq!(c.key(), b"b");
    c.prev().unwrap();
    assert_eq!(c.key(), b"a");
    c.prev().unwrap();
    assert!(!c.valid());
    c.seek_for_prev(b"d").unwrap();
    assert_eq!(c.key(), b"b");
    c.next().unwrap();
    assert_eq!(c.key(), b"e");
    c.seek_to_last().unwrap();
    assert_eq!(c.key(), b"p/1");
    c.prev().unwrap();
    assert_eq!(c.key(), b"j");
    c.next().unwrap();
    c.next().unwrap();
    assert!(!c.valid());
    drop(c);

    tx.commit().unwrap();
    assert_eq!(db.get("b").unwrap(), Some(b"tx-b".to_vec()));
    assert_eq!(db.get("c").unwrap(), None);
    assert_eq!(db.get("z").unwrap(), Some(b"after-begin".to_vec()));
}

#[test]
fn an_iterator_sees_the_writes_made_before_it_was_created() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let tx = db.transaction().unwrap();
    tx.put("a", "1").unwrap();
    let it = tx.scan().unwrap();
    tx.put("b", "2").unwrap();
    assert_eq!(collect(it), pairs(&[("a", "1")]));
    assert_eq!(collect(tx.scan().unwrap()), pairs(&[("a", "1"), ("b", "2")]));
}

#[test]
fn keyspaces_delete_range_and_merge_in_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let users = db.keyspace("users", KeyspaceOptions::default()).unwrap();
    for k in ["k1", "k2", "k3", "k4"] {
        users.put(k, "old").unwrap();
        db.put(k, "default").unwrap();
    }
    db.put("n", 5u64.to_le_bytes()).unwrap();
    let tx = db.transaction().unwrap();
    let u = tx.keyspace(&users).unwrap();
    u.delete_range("k2".."k4").unwrap();
    u.put("k3", "new").unwrap();
    u.put("k5", "new").unwrap();
    assert_eq!(u.get("k2").unwrap(), None);
    assert_eq!(u.get("k3").unwrap(), Some(b"new".to_vec()));
    let want = pairs(&[("k1", "old"), ("k3", "new"), ("k4", "old"), ("k5", "new")]);
    assert_eq!(collect(u.scan().unwrap()), want);
    let mut rev = want.clone();
    rev.reverse();
    assert_eq!(collect(u.scan().unwrap().rev()), rev);
    // The default keyspace is untouched by the range deletion.
    assert_eq!(tx.get("k2").unwrap(), Some(b"default".to_vec()));
    tx.merge("n", 2u64.to_le_bytes()).unwrap();
    tx.merge("n", 3u64.to_le_bytes()).unwrap();
    tx.merge("fresh", 1u64.to_le_bytes()).unwrap();
    assert_eq!(tx.get("n").unwrap(), Some(10u64.to_le_bytes().to_vec()));
    assert_eq!(tx.get("fresh").unwrap(), Some(1u64.to_le_bytes().to_vec()));
    tx.commit().unwrap();
    assert_eq!(collect(users.scan().unwrap()), want);
    assert_eq!(db.get("n").unwrap(), Some(10u64.to_le_bytes().to_vec()));
    assert_eq!(db.get("k2").unwrap(), Some(b"default".to_vec()));
}

#[test]
fn merge_without_an_operator_is_refused_at_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), Options::default()).unwrap();
    let tx = db.transaction().unwrap();
    assert!(matches!(tx.merge("k", "x"), Err(Error::InvalidArgument(_))));
    assert!(matches!(tx.delete_range("b".."a"), Err(Error::InvalidArgument(_))));
    assert!(matches!(tx.delete_range::<&str, _>("a"..), Err(Error::InvalidArgument(_))));
}

#[test]
fn savepoints_rollback_and_drop_discard_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let tx = db.transaction().unwrap();
    assert!(matches!(tx.rollback_to_savepoint(), Err(Error::InvalidArgument(_))));
    tx.put("a", "1").unwrap();
    tx.savepoint();
    tx.put("a", "2").unwrap();
    tx.put("b", "2").unwrap();
    tx.savepoint();
    tx.delete("a").unwrap();
    tx.rollback_to_savepoint().unwrap();
    assert_eq!(tx.get("a").unwrap(), Some(b"2".to_vec()));
    tx.rollback_to_savepoint().unwrap();
    assert_eq!(tx.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(tx.get("b").unwrap(), None);
    tx.commit().unwrap();
    assert_eq!(collect(db.scan().unwrap()), pairs(&[("a", "1")]));

    let tx = db.transaction().unwrap();
    tx.put("x", "1").unwrap();
    tx.rollback();
    let tx = db.transaction().unwrap();
    tx.put("y", "1").unwrap();
    drop(tx);
    assert_eq!(collect(db.scan().unwrap()), pairs(&[("a", "1")]));
}

#[test]
fn a_closed_database_fails_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let db2 = Db::open(dir.path().join("other"), opts()).unwrap();
    let ks = db2.keyspace("k", KeyspaceOptions::default()).unwrap();
    let tx = db.transaction().unwrap();
    assert!(matches!(tx.keyspace(&ks), Err(Error::InvalidArgument(_))));
    tx.put("a", "1").unwrap();
    drop(db2);
    // The transaction outlives its database's handle: closing it ends the transaction.
    let db_dir = dir.path().join("db");
    drop(db);
    assert!(matches!(tx.get("a"), Err(Error::Closed)));
    assert!(matches!(tx.put("b", "1"), Err(Error::Closed)));
    assert!(matches!(tx.scan().map(|_| ()), Err(Error::Closed)));
    assert!(matches!(tx.commit(), Err(Error::Closed)));
    let db = Db::open(db_dir, opts()).unwrap();
    assert_eq!(db.get("a").unwrap(), None);
}

fn conflict_key(e: Error) -> (String, Vec<u8>, Option<Vec<u8>>) {
    match e {
        Error::Conflict { keyspace, key, end } => (keyspace, key, end),
        other => panic!("expected a conflict, got {other}"),
    }
}

#[test]
fn a_read_key_written_by_a_concurrent_commit_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put("k", "0").unwrap();
    let t1 = db.transaction().unwrap();
    let t2 = db.transaction().unwrap();
    assert_eq!(t1.get("k").unwrap(), Some(b"0".to_vec()));
    assert_eq!(t2.get("k").unwrap(), Some(b"0".to_vec()));
    t1.put("k", "1").unwrap();
    t2.put("k", "2").unwrap();
    t1.commit().unwrap();
    let e = t2.commit().unwrap_err();
    assert!(e.is_conflict());
    assert_eq!(conflict_key(e), ("default".into(), b"k".to_vec(), None));
    assert_eq!(db.get("k").unwrap(), Some(b"1".to_vec()));

    // A plain write outside any transaction conflicts too, even after a flush moved it to
    // a file; and contains_key and multi_get are tracked like get.
    for read in 0..3 {
        let tx = db.transaction().unwrap();
        match read {
            0 => assert!(tx.contains_key("m").is_ok()),
            1 => assert_eq!(tx.multi_get(["m"]).len(), 1),
            _ => assert!(tx.get("m").is_ok()),
        }
        db.delete("m").unwrap(); // a tombstone is a newer version as well
        db.flush().unwrap();
        tx.put("other", "x").unwrap();
        assert!(tx.commit().unwrap_err().is_conflict(), "read path {read}");
    }
}

#[test]
fn a_newer_version_in_a_read_range_conflicts_and_one_outside_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for k in ["a", "c", "e", "x"] {
        db.put(k, "0").unwrap();
    }
    for flush in [false, true] {
        // Inside the traversed part of a range: conflict (memtable, then a file).
        let tx = db.transaction().unwrap();
        assert_eq!(tx.range("b".."f").unwrap().count(), 2);
        tx.put("sum", "2").unwrap();
        db.put("d", "phantom").unwrap();
        if flush {
            db.flush().unwrap();
        }
        assert_eq!(conflict_key(tx.commit().unwrap_err()).1, b"d".to_vec(), "flush {flush}");
        db.delete("d").unwrap();

        // Outside the range (below it, at its excluded end, past it): commits.
        let tx = db.transaction().unwrap();
        assert_eq!(tx.range("b".."f").unwrap().count(), 2);
        tx.put("sum", "2").unwrap();
        db.put("a", "below").unwrap();
        db.put("f", "at-the-excluded-end").unwrap();
        db.put("g", "past").unwrap();
        if flush {
            db.flush().unwrap();
        }
        tx.commit().unwrap();
    }

    // Only the traversed part counts: a scan stopped after one entry read up to it.
    let tx = db.transaction().unwrap();
    let mut it = tx.range("a"..).unwrap();
    assert_eq!(it.next().unwrap().unwrap().0, b"a".to_vec());
    drop(it);
    tx.put("sum", "1").unwrap();
    db.put("y", "beyond what was read").unwrap();
    tx.commit().unwrap();

    // A prefix read is its whole prefix range.
    let tx = db.transaction().unwrap();
    assert_eq!(tx.prefix("p/").unwrap().count(), 0);
    tx.put("sum", "0").unwrap();
    db.put("p/new", "1").unwrap();
    assert!(tx.commit().unwrap_err().is_conflict());

    // A cursor: the span from its seek to where it stopped.
    let tx = db.transaction().unwrap();
    let mut c = tx.cursor().unwrap();
    c.seek(b"c").unwrap();
    c.next().unwrap();
    assert_eq!(c.key(), b"e");
    drop(c);
    tx.put("sum", "0").unwrap();
    db.put("d2", "between").unwrap();
    assert!(tx.commit().unwrap_err().is_conflict());
}

#[test]
fn a_newer_range_tombstone_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    for k in ["a", "b", "c"] {
        db.put(k, "0").unwrap();
    }
    for flush in [false, true] {
        let tx = db.transaction().unwrap();
        assert_eq!(tx.get("q").unwrap(), None);
        assert_eq!(tx.range("a"..="b").unwrap().count(), 2);
        tx.put("out", "1").unwrap();
        db.delete_range("b".."bb").unwrap();
        if flush {
            db.flush().unwrap();
        }
        let (ks, key, end) = conflict_key(tx.commit().unwrap_err());
        assert_eq!((ks.as_str(), key, end), ("default", b"b".to_vec(), Some(b"bb".to_vec())));
        db.put("b", "0").unwrap();

        // A point read covered by a newer range tombstone.
        let tx = db.transaction().unwrap();
        assert_eq!(tx.get("q").unwrap(), None);
        tx.put("out", "1").unwrap();
        db.delete_range("p".."r").unwrap();
        if flush {
            db.flush().unwrap();
        }
        assert_eq!(conflict_key(tx.commit().unwrap_err()).1, b"q".to_vec());
    }
}

/// The classic write-skew pair: each transaction reads x and y and writes one of them.
fn write_skew(iso: Isolation) -> (bool, bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    db.put("x", "1").unwrap();
    db.put("y", "1").unwrap();
    let o = TransactionOptions { isolation: iso, ..TransactionOptions::default() };
    let t1 = db.transaction_opt(o.clone()).unwrap();
    let t2 = db.transaction_opt(o).unwrap();
    for t in [&t1, &t2] {
        assert!(t.get("x").unwrap().is_some() && t.get("y").unwrap().is_some());
    }
    t1.put("x", "0").unwrap();
    t2.put("y", "0").unwrap();
    (t1.commit().is_ok(), t2.commit().is_ok())
}

#[test]
fn write_skew_commits_under_snapshot_isolation_only() {
    assert_eq!(write_skew(Isolation::Snapshot), (true, true));
    assert_eq!(write_skew(Isolation::Serializable), (true, false));
}

#[test]
fn snapshot_isolation_checks_written_keys_and_ranges_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let t = db.transaction_opt(snapshot_isolation()).unwrap();
    t.get("read").unwrap();
    t.put("w", "1").unwrap();
    db.put("read", "changed").unwrap();
    t.commit().unwrap();

    let t = db.transaction_opt(snapshot_isolation()).unwrap();
    t.put("w", "2").unwrap();
    db.put("w", "concurrent").unwrap();
    assert_eq!(conflict_key(t.commit().unwrap_err()).1, b"w".to_vec());

    let t = db.transaction_opt(snapshot_isolation()).unwrap();
    t.delete_range("m".."n").unwrap();
    db.put("mm", "concurrent").unwrap();
    assert!(t.commit().unwrap_err().is_conflict());

    // Read-only transactions commit under both levels, whatever changed.
    for iso in [Isolation::Serializable, Isolation::Snapshot] {
        let o = TransactionOptions { isolation: iso, ..TransactionOptions::default() };
        let t = db.transaction_opt(o).unwrap();
        t.get("w").unwrap();
        db.put("w", "again").unwrap();
        t.commit().unwrap();
    }
}

#[test]
fn concurrent_counter_increments_with_retry_lose_nothing() {
    const THREADS: u64 = 4;
    const N: u64 = 300;
    let dir = tempfile::tempdir().unwrap();
    let db =
        Db::open(dir.path().join("db"), Options { memtable_size: 64 << 10, ..opts() }).unwrap();
    let conflicts = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..N {
                    loop {
                        let tx = db.transaction().unwrap();
                        let n = tx
                            .get("counter")
                            .unwrap()
                            .map_or(0, |v| u64::from_le_bytes(v.try_into().expect("8 bytes")));
                        tx.put("counter", (n + 1).to_le_bytes()).unwrap();
                        // Padding so memtables rotate and flush during the run.
                        tx.put(format!("pad{n}"), [0u8; 200]).unwrap();
                        match tx.commit() {
                            Ok(()) => break,
                            Err(e) if e.is_conflict() => {
                                conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    let n = u64::from_le_bytes(db.get("counter").unwrap().unwrap().try_into().unwrap());
    assert_eq!(n, THREADS * N);
    // Each committed increment wrote its own pad key: none was lost or duplicated.
    assert_eq!(db.prefix("pad").unwrap().count() as u64, THREADS * N);
}

#[test]
fn synced_commit_survives_reopen_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(&dir);
        let o = TransactionOptions {
            write: siftdb::WriteOptions { sync: true },
            ..TransactionOptions::default()
        };
        let tx = db.transaction_opt(o).unwrap();
        for i in 0..100 {
            tx.put(format!("k{i:03}"), "v").unwrap();
        }
        tx.commit().unwrap();
        let tx = db.transaction().unwrap();
        tx.put("never", "v").unwrap();
        // dropped, not committed
    }
    let db = open(&dir);
    assert_eq!(db.prefix("k").unwrap().count(), 100);
    assert_eq!(db.get("never").unwrap(), None);
}

#[test]
fn an_empty_or_crossed_range_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let tx = db.transaction().unwrap();
    tx.put("b", "1").unwrap();
    assert_eq!(tx.range("c".."a").unwrap().count(), 0);
    assert_eq!(tx.range("b".."b").unwrap().count(), 0);
    assert_eq!(collect(tx.range("b"..="b").unwrap()), pairs(&[("b", "1")]));
}

/// A transaction that only writes: under `Serializable` it has nothing to check (blind writes
/// commute at its commit point) and takes no snapshot, so a concurrent write of the same key
/// does not fail it; under `Snapshot` isolation its read point is begin, and a write of the key
/// committed after begin fails it (first committer wins).
#[test]
fn blind_writes_conflict_only_under_snapshot_isolation() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(&dir);
    let serializable = db.transaction().unwrap();
    let snapshot = db.transaction_opt(snapshot_isolation()).unwrap();
    serializable.put("k", "s").unwrap();
    snapshot.put("k", "i").unwrap();
    db.put("k", "outside").unwrap();
    serializable.commit().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"s"[..]));
    let e = snapshot.commit().unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"s"[..]));
}
