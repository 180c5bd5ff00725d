//! A two-keyspace model shared by the model, power-loss and checkpoint tests: records of every
//! kind (put, delete, delete_range, merge as u64 add) in the default keyspace (index 0) or in
//! "ks2" (index 1), their effect on a model state (one `BTreeMap` per keyspace), the batch that
//! writes them, and the database handles that read both keyspaces back.
//!
//! Merges go to a few hot keys and follow `U64AddOperator` (values are 8-byte little-endian
//! u64; no value counts as 0). A merge onto a key holding a value of another length would make
//! reads fail, so [`records`] writes a delete of the key first in the same batch.

#![allow(dead_code)]

pub mod serializability;

use proptest::prelude::*;
use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Keyspace, KeyspaceOptions, Options, WriteBatch};
use std::collections::BTreeMap;
use std::path::Path;

/// One keyspace's contents.
pub type Map = BTreeMap<Vec<u8>, Vec<u8>>;
/// Both keyspaces: `[default, ks2]`.
pub type State = [Map; 2];
/// The records of one write, in batch order.
pub type Records = Vec<Rec>;

/// The name of the second keyspace.
pub const KS2: &str = "ks2";
/// Key numbers that merges go to (in the middle of the key space, so range deletes and puts
/// meet them too).
pub const HOT: [u8; 4] = [3, 11, 19, 27];

/// What a record does to its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Put(Vec<u8>),
    Delete,
    /// Deletes `[key, end)`.
    DeleteRange(Vec<u8>),
    /// Adds the operand to the key's u64.
    Merge(u64),
}

/// One record of a write batch: keyspace index, key, effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub ks: usize,
    pub key: Vec<u8>,
    pub kind: Kind,
}

/// A record before it is made concrete (values name the write that made them; a merge may need
/// a delete before it, which depends on the state): what proptest generates and shrinks.
#[derive(Debug, Clone)]
pub enum RecSpec {
    /// Keyspace, key number, value padding length.
    Put(usize, u8, u8),
    Delete(usize, u8),
    /// `[key(a), key(b))`; nothing when `a >= b`.
    DeleteRange(usize, u8, u8),
    /// Keyspace, hot key index (into [`HOT`]), operand.
    Merge(usize, u8, u16),
}

/// Records over 32 keys, a quarter of them in "ks2".
pub fn rec_spec() -> impl Strategy<Value = RecSpec> {
    let ks = prop::bool::weighted(0.25).prop_map(usize::from);
    prop_oneof![
        24 => (ks.clone(), 0u8..32, 0u8..64).prop_map(|(s, k, l)| RecSpec::Put(s, k, l)),
        5 => (ks.clone(), 0u8..32).prop_map(|(s, k)| RecSpec::Delete(s, k)),
        2 => (ks.clone(), 0u8..33, 0u8..33).prop_map(|(s, a, b)| RecSpec::DeleteRange(s, a, b)),
        8 => (ks, 0u8..4, any::<u16>()).prop_map(|(s, h, n)| RecSpec::Merge(s, h, n)),
    ]
}

/// 1..=5 random records (the seeded counterpart of [`rec_spec`]): a third in "ks2"; 45% puts
/// of 24..24 + `pad` bytes, 15% deletes, 10% range deletes, 30% merges.
pub fn random_specs(rng: &mut SplitMix64, pad: u8) -> Vec<RecSpec> {
    (0..1 + rng.below(5))
        .map(|_| {
            let ks = usize::from(rng.below(3) == 0);
            let (a, b) = (rng.below(32) as u8, rng.below(33) as u8);
            match rng.below(20) {
                0..=8 => RecSpec::Put(ks, a, 24 + rng.below(u64::from(pad)) as u8),
                9..=11 => RecSpec::Delete(ks, a),
                12..=13 => RecSpec::DeleteRange(ks, a.min(b), a.max(b)),
                _ => RecSpec::Merge(ks, rng.below(4) as u8, 1 + rng.below(1000) as u16),
            }
        })
        .collect()
}

pub fn key(k: u8) -> Vec<u8> {
    format!("key{k:02}").into_bytes()
}

/// The value written by write number `n` (values name their write, so prefixes are exact).
pub fn value(n: usize, len: u8) -> Vec<u8> {
    let mut v = format!("w{n}/").into_bytes();
    v.resize(v.len() + len as usize, b'#');
    v
}

/// Makes the records of write number `n` from `specs`, given the state before it.
pub fn records(state: &State, specs: &[RecSpec], n: usize) -> Records {
    let mut after = state.clone();
    let mut recs = Records::new();
    for spec in specs {
        let (ks, k, kind) = match *spec {
            RecSpec::Put(ks, k, len) => (ks, key(k), Kind::Put(value(n, len))),
            RecSpec::Delete(ks, k) => (ks, key(k), Kind::Delete),
            RecSpec::DeleteRange(ks, a, b) if a < b => (ks, key(a), Kind::DeleteRange(key(b))),
            RecSpec::DeleteRange(..) => continue,
            RecSpec::Merge(ks, h, operand) => {
                let k = key(HOT[h as usize % HOT.len()]);
                if after[ks].get(&k).is_some_and(|v| v.len() != 8) {
                    let rec = Rec { ks, key: k.clone(), kind: Kind::Delete };
                    apply_one(&mut after, &rec);
                    recs.push(rec);
                }
                (ks, k, Kind::Merge(u64::from(operand)))
            }
        };
        let rec = Rec { ks, key: k, kind };
        apply_one(&mut after, &rec);
        recs.push(rec);
    }
    recs
}

/// Applies one record to a model state.
pub fn apply_one(state: &mut State, rec: &Rec) {
    let m = &mut state[rec.ks];
    match &rec.kind {
        Kind::Put(v) => drop(m.insert(rec.key.clone(), v.clone())),
        Kind::Delete => drop(m.remove(&rec.key)),
        Kind::DeleteRange(end) => m.retain(|x, _| !(rec.key <= *x && x < end)),
        Kind::Merge(n) => {
            let old = match m.get(&rec.key) {
                None => 0,
                Some(v) => u64::from_le_bytes(v[..].try_into().expect("records() keeps counters")),
            };
            m.insert(rec.key.clone(), old.wrapping_add(*n).to_le_bytes().to_vec());
        }
    }
}

/// Applies the records of one write to a model state.
pub fn apply(state: &mut State, recs: &Records) {
    for r in recs {
        apply_one(state, r);
    }
}

/// The largest `j` such that `base` plus the first `j` writes of `pending` equals `got`.
pub fn prefix_match(base: &State, pending: &[Records], got: &State) -> Option<usize> {
    let mut candidate = base.clone();
    let mut matched = None;
    for j in 0..=pending.len() {
        if j > 0 {
            apply(&mut candidate, &pending[j - 1]);
        }
        if &candidate == got {
            matched = Some(j);
        }
    }
    matched
}

/// An open database and its "ks2" handle (dropped together: a keyspace handle keeps the
/// engine state, and so the directory lock, alive).
pub struct Handles {
    pub ks2: Keyspace,
    pub db: Db,
}

impl Handles {
    /// Opens the database in `dir` and "ks2" (created on the first open).
    pub fn open(dir: &Path, opts: Options) -> Handles {
        let db = Db::open(dir, opts).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()));
        let ks2 = db.keyspace(KS2, KeyspaceOptions::default()).expect("keyspace ks2");
        Handles { ks2, db }
    }

    /// Like [`Handles::open`], with errors returned (for tests that crash mid-run).
    pub fn try_open(dir: &Path, opts: Options) -> siftdb::Result<Handles> {
        let db = Db::open(dir, opts)?;
        let ks2 = db.keyspace(KS2, KeyspaceOptions::default())?;
        Ok(Handles { ks2, db })
    }

    /// The batch writing `recs`.
    pub fn batch(&self, recs: &Records) -> WriteBatch {
        let mut b = WriteBatch::new();
        for r in recs {
            let ks2 = (r.ks == 1).then_some(&self.ks2);
            match (&r.kind, ks2) {
                (Kind::Put(v), None) => b.put(&r.key, v),
                (Kind::Put(v), Some(ks)) => b.put_in(ks, &r.key, v),
                (Kind::Delete, None) => b.delete(&r.key),
                (Kind::Delete, Some(ks)) => b.delete_in(ks, &r.key),
                (Kind::DeleteRange(end), None) => b.delete_range(r.key.as_slice()..end.as_slice()),
                (Kind::DeleteRange(end), Some(ks)) => {
                    b.delete_range_in(ks, r.key.as_slice()..end.as_slice())
                }
                (Kind::Merge(n), None) => b.merge(&r.key, n.to_le_bytes()),
                (Kind::Merge(n), Some(ks)) => b.merge_in(ks, &r.key, n.to_le_bytes()),
            };
        }
        b
    }

    /// Both keyspaces, scanned in full.
    pub fn scan(&self) -> State {
        self.try_scan().expect("scan")
    }

    /// Both keyspaces, scanned in full, with errors returned.
    pub fn try_scan(&self) -> siftdb::Result<State> {
        let a = self.db.scan()?.collect::<siftdb::Result<Map>>()?;
        let b = self.ks2.scan()?.collect::<siftdb::Result<Map>>()?;
        Ok([a, b])
    }
}
