//! The serializability checker (tests/model_support/serializability.rs) on its own: histories
//! it must reject (lost update, write skew, read skew, the read-only anomaly of snapshot
//! isolation, a G1c cycle, a read of an aborted write), histories it must accept (serial ones,
//! concurrent disjoint ones, an old snapshot's reads), and histories of tens of thousands of
//! transactions produced by an in-memory multi-version store under two validation rules:
//! read-set validation (serializable, always accepted) and write-write only (snapshot
//! isolation, whose write skews it must find).

mod model_support;

use model_support::serializability::{
    check, version_of, version_value, Committed, EdgeKind, Version, Violation,
};
use siftdb::filter::rng::SplitMix64;
use std::collections::{BTreeMap, HashMap};

const X: &[u8] = b"x";
const Y: &[u8] = b"y";
const INIT: Version = Version::Initial;

fn by(t: u64) -> Version {
    Version::By(t)
}

fn tx(id: u64) -> Committed {
    Committed::new(id)
}

/// Asserts `h` is rejected with a cycle that is one: consecutive edges meet, the last returns
/// to the first, every edge joins two transactions of the history, and no transaction repeats.
/// Returns the cycle's transactions, in order.
fn assert_cycle(h: &[Committed]) -> Vec<u64> {
    let v = check(h).expect_err("the history is not serializable");
    let Violation::Cycle(edges) = &v else { panic!("expected a cycle, got {v}") };
    assert!(!edges.is_empty());
    for (i, e) in edges.iter().enumerate() {
        let next = &edges[(i + 1) % edges.len()];
        assert_eq!(e.to, next.from, "{v}");
        assert!(h.iter().any(|t| t.id == e.from) && h.iter().any(|t| t.id == e.to));
        assert_ne!(e.from, e.to, "no self-edges: {v}");
    }
    let mut ids: Vec<u64> = edges.iter().map(|e| e.from).collect();
    let order = ids.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), edges.len(), "a simple cycle: {v}");
    order
}

#[test]
fn lost_update_is_rejected() {
    // Both read x's initial version and write it back: T1 -ww-> T2 -rw-> T1.
    let h = [tx(1).read(X, INIT).write(X), tx(2).read(X, INIT).write(X)];
    let mut c = assert_cycle(&h);
    c.sort_unstable();
    assert_eq!(c, vec![1, 2]);
    let kinds = check(&h).unwrap_err().cycle_kinds();
    assert!(kinds.contains(&EdgeKind::Ww) && kinds.contains(&EdgeKind::Rw), "{kinds:?}");
}

#[test]
fn write_skew_is_rejected() {
    // Each reads both keys at the initial state and writes the other's: two anti-dependencies.
    let h =
        [tx(1).read(X, INIT).read(Y, INIT).write(X), tx(2).read(X, INIT).read(Y, INIT).write(Y)];
    assert_cycle(&h);
    assert_eq!(check(&h).unwrap_err().cycle_kinds(), vec![EdgeKind::Rw, EdgeKind::Rw]);
}

#[test]
fn read_skew_is_rejected() {
    // T2 sees T1's y but the x before T1 (a fractured read of T1's two writes).
    let h = [tx(1).write(X).write(Y), tx(2).read(X, INIT).read(Y, by(1))];
    assert_cycle(&h);
    let mut kinds = check(&h).unwrap_err().cycle_kinds();
    kinds.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(kinds, vec![EdgeKind::Rw, EdgeKind::Wr]);
}

#[test]
fn snapshot_isolation_read_only_anomaly_is_rejected() {
    // Fekete, O'Neil & O'Neil (2004): T2 reads x, y and writes y; T1 writes x and commits; the
    // read-only T3 sees T1's x and the old y; then T2 commits. T2 -rw-> T1 -wr-> T3 -rw-> T2.
    let h = [
        tx(1).read(X, INIT).write(X),
        tx(3).read(X, by(1)).read(Y, INIT),
        tx(2).read(X, INIT).read(Y, INIT).write(Y),
    ];
    let mut c = assert_cycle(&h);
    c.sort_unstable();
    assert_eq!(c, vec![1, 2, 3]);
    // Without the read-only transaction the same history is serializable (T2 before T1).
    assert_eq!(check(&[h[0].clone(), h[2].clone()]), Ok(()));
}

#[test]
fn g1c_cycle_of_read_dependencies_is_rejected() {
    // Each reads the other's write: a cycle of WR edges only (Adya's G1c).
    let h = [tx(1).write(X).read(Y, by(2)), tx(2).write(Y).read(X, by(1))];
    assert_cycle(&h);
    assert_eq!(check(&h).unwrap_err().cycle_kinds(), vec![EdgeKind::Wr, EdgeKind::Wr]);
}

#[test]
fn a_read_of_a_version_no_committed_transaction_wrote_is_rejected() {
    // T9 never committed (aborted): G1a.
    let h = [tx(1).write(X), tx(2).read(X, by(9))];
    assert_eq!(check(&h), Err(Violation::UnknownVersion { reader: 2, key: X.to_vec(), writer: 9 }));
    // T1 committed, but did not write y.
    let h = [tx(1).write(X), tx(2).read(Y, by(1))];
    assert!(matches!(check(&h), Err(Violation::UnknownVersion { writer: 1, .. })));
    // Duplicate ids and contradictory reads are not histories.
    assert!(matches!(check(&[tx(1), tx(1)]), Err(Violation::Malformed(_))));
    let h = [tx(1).write(X), tx(2).read(X, INIT).read(X, by(1))];
    assert!(matches!(check(&h), Err(Violation::Malformed(_))));
}

#[test]
fn serial_and_disjoint_histories_are_accepted() {
    // Serial: each reads the latest version.
    let h = [
        tx(1).read(X, INIT).write(X),
        tx(2).read(X, by(1)).read(Y, INIT).write(X).write(Y),
        tx(3).read(X, by(2)).read(Y, by(2)).write(Y),
    ];
    assert_eq!(check(&h), Ok(()));
    // Concurrent (all from the initial snapshot) but on disjoint keys.
    let h = [
        tx(1).read(X, INIT).write(X),
        tx(2).read(Y, INIT).write(Y),
        tx(3).read(b"z", INIT).write(b"z"),
    ];
    assert_eq!(check(&h), Ok(()));
    // A reader of an old snapshot serializes before the writers it missed.
    let h = [tx(1).write(X), tx(2).write(X).write(Y), tx(3).read(X, by(1)).read(Y, INIT)];
    assert_eq!(check(&h), Ok(()));
    // A blind write after a read-modify-write of the same key: T1 -ww-> T2 only.
    let h = [tx(1).read(X, INIT).write(X), tx(2).write(X)];
    assert_eq!(check(&h), Ok(()));
    assert_eq!(check(&[]), Ok(()));
}

#[test]
fn version_values_name_their_writer_and_key() {
    for v in [INIT, by(0), by(7), by(u64::MAX)] {
        assert_eq!(version_of(b"key", Some(&version_value(v, b"key"))), Ok(v));
    }
    assert_eq!(version_of(b"key", None), Ok(INIT));
    // Another key's value, a truncated value, a foreign value: errors naming the key.
    let other = version_value(by(3), b"kez");
    assert!(version_of(b"key", Some(&other)).unwrap_err().contains("key"));
    let v = version_value(by(3), b"key");
    assert!(version_of(b"key", Some(&v[..6])).is_err());
    assert!(version_of(b"key", Some(b"plain value")).is_err());
}

/// How the simulated store validates a commit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Validate {
    /// Every key read must have no version newer than the snapshot (backward OCC validation:
    /// the transaction's reads are still current at its commit point, so it is equivalent to
    /// running alone there).
    ReadSet,
    /// Only the keys written (snapshot isolation's first-committer-wins).
    WriteSet,
}

struct Open {
    id: u64,
    snapshot: u64,
    reads: BTreeMap<Vec<u8>, Version>,
    writes: BTreeMap<Vec<u8>, ()>,
}

/// A multi-version store with `keys` keys and `clients` transactions open at once, each doing
/// random reads and writes (through version values, as an engine harness does) and then
/// committing under `rule`; returns the committed history (`commits` transactions, in commit
/// order) and the number of aborts.
fn simulate(
    seed: u64,
    keys: u64,
    clients: usize,
    commits: usize,
    rule: Validate,
) -> (Vec<Committed>, u64) {
    let mut rng = SplitMix64::new(seed);
    // Per key: (commit sequence, value) in commit order.
    let mut store: HashMap<Vec<u8>, Vec<(u64, Vec<u8>)>> = HashMap::new();
    for k in 0..keys {
        let key = format!("k{k}").into_bytes();
        store.insert(key.clone(), vec![(0, version_value(INIT, &key))]);
    }
    let (mut seq, mut next_id, mut aborts) = (0u64, 1u64, 0u64);
    let mut history = Vec::new();
    let begin = |id: &mut u64, seq: u64| {
        *id += 1;
        Open { id: *id - 1, snapshot: seq, reads: BTreeMap::new(), writes: BTreeMap::new() }
    };
    let mut open: Vec<Open> = (0..clients).map(|_| begin(&mut next_id, seq)).collect();
    while history.len() < commits {
        let c = rng.below(clients as u64) as usize;
        let t = &mut open[c];
        let key = format!("k{}", rng.below(keys)).into_bytes();
        match rng.below(10) {
            0..=4 => {
                // A read of a key not yet written by the transaction goes to its snapshot.
                if !t.writes.contains_key(&key) {
                    let versions = &store[&key];
                    let value = versions.iter().rev().find(|(s, _)| *s <= t.snapshot).map(|v| &v.1);
                    let version = version_of(&key, value.map(Vec::as_slice)).unwrap();
                    t.reads.entry(key).or_insert(version);
                }
            }
            5..=7 => {
                t.writes.insert(key, ());
            }
            _ => {
                let newer = |k: &Vec<u8>| store[k].last().is_some_and(|(s, _)| *s > t.snapshot);
                let conflict = t.writes.keys().any(newer)
                    || (rule == Validate::ReadSet && t.reads.keys().any(newer));
                if conflict {
                    aborts += 1;
                } else if !t.writes.is_empty() || !t.reads.is_empty() {
                    seq += 1;
                    for k in t.writes.keys() {
                        store.get_mut(k).unwrap().push((seq, version_value(by(t.id), k)));
                    }
                    history.push(Committed {
                        id: t.id,
                        reads: std::mem::take(&mut t.reads).into_iter().collect(),
                        writes: std::mem::take(&mut t.writes).into_keys().collect(),
                    });
                }
                open[c] = begin(&mut next_id, seq);
            }
        }
    }
    (history, aborts)
}

#[test]
fn read_set_validated_histories_are_accepted() {
    // 20,000 commits, 4 clients, 6 keys: heavy contention, many aborts, every commit checked.
    let (h, aborts) = simulate(42, 6, 4, 20_000, Validate::ReadSet);
    assert!(aborts > 1000, "contention is what makes this test meaningful: {aborts} aborts");
    assert_eq!(check(&h), Ok(()));
}

#[test]
fn snapshot_isolation_histories_with_write_skew_are_rejected() {
    // The same store validating writes only commits write skews: the checker must see one.
    let (h, _) = simulate(42, 6, 4, 20_000, Validate::WriteSet);
    assert_cycle(&h);
    let kinds = check(&h).unwrap_err().cycle_kinds();
    assert!(kinds.contains(&EdgeKind::Rw), "an SI anomaly needs an anti-dependency: {kinds:?}");
}

#[test]
fn a_large_serial_history_is_accepted_and_one_lost_update_in_it_is_found() {
    // 50,000 serial transactions over 1,000 keys, each reading 3 keys and writing 2.
    let mut rng = SplitMix64::new(7);
    let mut latest: HashMap<Vec<u8>, Version> = HashMap::new();
    let mut h = Vec::new();
    for id in 1..=50_000u64 {
        let mut t = tx(id);
        for _ in 0..3 {
            let k = format!("k{}", rng.below(1000)).into_bytes();
            if !t.reads.iter().any(|(r, _)| *r == k) {
                let v = latest.get(&k).copied().unwrap_or(INIT);
                t.reads.push((k, v));
            }
        }
        for _ in 0..2 {
            let k = format!("k{}", rng.below(1000)).into_bytes();
            if !t.writes.contains(&k) {
                t.writes.push(k);
            }
        }
        for k in &t.writes {
            latest.insert(k.clone(), by(id));
        }
        h.push(t);
    }
    assert_eq!(check(&h), Ok(()));
    // Transaction 40,000 claims to have read the version its predecessor of the same key
    // overwrote, and writes the key: a lost update buried in the history.
    let t = &h[39_999];
    let k = t.writes[0].clone();
    let prev_writer = h[..39_999].iter().rev().filter(|p| p.writes.contains(&k)).nth(1);
    let stale = prev_writer.map_or(INIT, |p| by(p.id));
    let t = &mut h[39_999];
    t.reads.retain(|(r, _)| *r != k);
    t.reads.push((k, stale));
    assert_cycle(&h);
}
