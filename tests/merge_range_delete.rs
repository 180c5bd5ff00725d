//! Merge operands meet range tombstones: a `delete_range` covering a counter ends its operand
//! chain (it acts as a delete of every older version), so merges after it start from nothing.
//! Every read path must agree: get, multi_get, forward and reverse scans and the cursor, with
//! the versions in the memtable, in L0 and after compaction, in the default keyspace and in
//! another one.

use siftdb::storage::MemStorage;
use siftdb::{Db, KeyspaceOptions, Options, U64AddOperator, WriteBatch};
use std::sync::Arc;

fn le(n: u64) -> [u8; 8] {
    n.to_le_bytes()
}

fn opts(storage: &MemStorage) -> Options {
    Options {
        storage: Some(Arc::new(storage.clone())),
        merge_operator: Some(Arc::new(U64AddOperator)),
        ..Options::default()
    }
}

/// Every read of `key` (through `read`, a scan and a reverse scan of `scan`) gives `want`.
fn check_all_paths(db: &Db, ks: &siftdb::Keyspace, want: u64, what: &str) {
    let want = Some(le(want).to_vec());
    assert_eq!(db.get("c").unwrap(), want, "{what}: get");
    assert_eq!(db.multi_get(["c"])[0].as_ref().unwrap(), &want, "{what}: multi_get");
    let fwd: Vec<_> = db.scan().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(fwd, vec![(b"c".to_vec(), want.clone().unwrap())], "{what}: scan");
    let rev: Vec<_> = db.scan().unwrap().rev().map(|r| r.unwrap()).collect();
    assert_eq!(rev, fwd, "{what}: reverse scan");
    let mut c = db.cursor().unwrap();
    c.seek_to_first().unwrap();
    assert_eq!(c.value(), want.as_deref().unwrap(), "{what}: cursor");
    assert_eq!(ks.get("c").unwrap(), want, "{what}: keyspace get");
    let fwd: Vec<_> = ks.scan().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(fwd, vec![(b"c".to_vec(), want.clone().unwrap())], "{what}: keyspace scan");
    let rev: Vec<_> = ks.scan().unwrap().rev().map(|r| r.unwrap()).collect();
    assert_eq!(rev, fwd, "{what}: keyspace reverse scan");
}

/// Writes 5 + 7, a range deletion over the counter, then 100 (in both keyspaces), flushing
/// after the step numbered `flush_after` (0..=3; 3: never) so versions land on both sides.
fn run(flush_after: usize, tombstone_in_batch: bool) {
    let storage = MemStorage::new();
    let db = Db::open("/db", opts(&storage)).unwrap();
    let ks = db.keyspace("ks2", KeyspaceOptions::default()).unwrap();
    let what =
        format!("flush after step {flush_after}, tombstone in a batch: {tombstone_in_batch}");
    for step in 0..3 {
        match step {
            0 => {
                for n in [5, 7] {
                    db.merge("c", le(n)).unwrap();
                    ks.merge("c", le(n)).unwrap();
                }
            }
            1 if tombstone_in_batch => {
                let mut b = WriteBatch::new();
                b.delete_range("a".."d").delete_range_in(&ks, "a".."d");
                b.merge("c", le(100)).merge_in(&ks, "c", le(100));
                db.write(b).unwrap();
            }
            1 => {
                db.delete_range("a".."d").unwrap();
                ks.delete_range("a".."d").unwrap();
            }
            _ if tombstone_in_batch => {}
            _ => {
                db.merge("c", le(100)).unwrap();
                ks.merge("c", le(100)).unwrap();
            }
        }
        if step == flush_after {
            db.flush().unwrap();
        }
    }
    check_all_paths(&db, &ks, 100, &what);
    db.flush().unwrap();
    check_all_paths(&db, &ks, 100, &format!("{what}, flushed"));
    db.compact().unwrap();
    check_all_paths(&db, &ks, 100, &format!("{what}, compacted"));
}

#[test]
fn merges_after_a_range_deletion_start_from_nothing_in_the_memtable() {
    run(3, false);
    run(3, true);
}

#[test]
fn merges_after_a_range_deletion_start_from_nothing_across_a_flush() {
    for flush_after in 0..3 {
        run(flush_after, false);
        run(flush_after, true);
    }
}

#[test]
fn a_snapshot_before_the_range_deletion_keeps_its_sum_through_flush_and_compaction() {
    let storage = MemStorage::new();
    let db = Db::open("/db", opts(&storage)).unwrap();
    let ks = db.keyspace("ks2", KeyspaceOptions::default()).unwrap();
    let mut b = WriteBatch::new();
    b.merge("c", le(5)).merge_in(&ks, "c", le(5)).merge("c", le(7)).merge_in(&ks, "c", le(7));
    db.write(b).unwrap();
    let before = db.snapshot();
    let mut b = WriteBatch::new();
    b.delete_range("a".."d").delete_range_in(&ks, "a".."d");
    b.merge("c", le(100)).merge_in(&ks, "c", le(100));
    db.write(b).unwrap();
    let after = db.snapshot();
    db.merge("c", le(1000)).unwrap();
    ks.merge("c", le(1000)).unwrap();
    for stage in ["memtable", "flushed", "compacted"] {
        match stage {
            "flushed" => db.flush().unwrap(),
            "compacted" => db.compact().unwrap(),
            _ => {}
        }
        let (w12, w100) = (Some(le(12).to_vec()), Some(le(100).to_vec()));
        assert_eq!(before.get("c").unwrap(), w12, "{stage}: snapshot before");
        assert_eq!(
            before.keyspace(&ks).unwrap().get("c").unwrap(),
            w12,
            "{stage}: snapshot before, ks2"
        );
        assert_eq!(after.get("c").unwrap(), w100, "{stage}: snapshot after");
        assert_eq!(
            after.keyspace(&ks).unwrap().get("c").unwrap(),
            w100,
            "{stage}: snapshot after, ks2"
        );
        let rev: Vec<_> =
            after.keyspace(&ks).unwrap().scan().unwrap().rev().map(|r| r.unwrap().1).collect();
        assert_eq!(rev, vec![le(100).to_vec()], "{stage}: snapshot after, ks2 reverse scan");
        check_all_paths(&db, &ks, 1100, stage);
    }
}
