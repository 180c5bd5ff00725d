//! A merge operator renamed without a change of meaning lists its old name in
//! `MergeOperator::former_names`: tables written under either name are read and compacted
//! together, outputs record the new name, and nothing turns the database read-only.

use siftdb::{Db, Error, MergeOperator, Options, Result};
use std::sync::Arc;

/// Adds 8-byte little-endian counters, under any name.
struct Add {
    name: &'static str,
    former: &'static [&'static str],
}

impl MergeOperator for Add {
    fn name(&self) -> &str {
        self.name
    }
    fn former_names(&self) -> &[&str] {
        self.former
    }
    fn full_merge(&self, _key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>> {
        let n = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let sum = base.map_or(0, n) + operands.iter().map(|o| n(o)).sum::<u64>();
        Ok(sum.to_le_bytes().to_vec())
    }
}

fn opts(name: &'static str, former: &'static [&'static str]) -> Options {
    Options { merge_operator: Some(Arc::new(Add { name, former })), ..Options::default() }
}

fn counter(db: &Db, key: &str) -> u64 {
    let v = db.get(key).unwrap().expect("a value");
    u64::from_le_bytes(v.try_into().unwrap())
}

/// Operands of `keys` counters under the operator of `o`, in two flushed tables.
fn add_in_two_tables(db: &Db, keys: usize) {
    for round in 0..2 {
        for k in 0..keys {
            db.merge(format!("c{k:03}"), 1u64.to_le_bytes()).unwrap();
        }
        if round == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
}

#[test]
fn a_renamed_operator_listing_its_former_name_compacts_both_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), opts("app.add", &[])).unwrap();
    add_in_two_tables(&db, 50);
    db.close().unwrap();

    let db = Db::open(tmp.path(), opts("app.add.v2", &["app.add"])).unwrap();
    assert_eq!(counter(&db, "c007"), 2, "operands of the former name are read");
    add_in_two_tables(&db, 50);
    db.compact().unwrap();
    db.wait_for_compactions().unwrap();
    for k in 0..50 {
        assert_eq!(counter(&db, &format!("c{k:03}")), 4);
    }
    db.put("still-writable", "yes").unwrap();
    db.close().unwrap();

    // The outputs record the new name: an operator that no longer lists the old one reads
    // and compacts them.
    let db = Db::open(tmp.path(), opts("app.add.v2", &[])).unwrap();
    db.merge("c000", 1u64.to_le_bytes()).unwrap();
    db.compact().unwrap();
    assert_eq!(counter(&db, "c000"), 5);
    assert_eq!(counter(&db, "c049"), 4);
    db.put("still-writable", "yes").unwrap();
}

#[test]
fn a_renamed_operator_without_its_former_name_is_refused_by_reads_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), opts("app.add", &[])).unwrap();
    add_in_two_tables(&db, 5);
    db.close().unwrap();
    let db = Db::open(tmp.path(), opts("app.add.v2", &[])).unwrap();
    match db.get("c001") {
        Err(Error::InvalidArgument(why)) => {
            assert!(why.contains("app.add") && why.contains("app.add.v2"), "{why}")
        }
        other => panic!("expected the name mismatch, got {other:?}"),
    }
}
