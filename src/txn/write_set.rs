//! The buffered writes of a transaction: per keyspace, the state of each written key and the
//! range deletions, plus a copy of that state at each savepoint.
//!
//! A key's state is a base and the merge operands written onto it since (oldest first): the
//! base is the snapshot's value (only merges were written), "deleted" (a delete, or a
//! `delete_range` that covered it) or a value (a put). A `delete_range` turns the state of
//! every buffered key it covers into "deleted" and is kept as a range: a key read from the
//! snapshot with no buffered state of its own is hidden when a buffered range covers it.
//!
//! At commit the writes become one batch: per keyspace the range deletions first, then every
//! key's state (a put, or a delete, then its operands). Inside one batch later records get
//! higher sequence numbers, so a range tombstone never hides a point write of the same
//! transaction, and a point write made before the `delete_range` was already turned into a
//! delete: the batch has the same effect as the operations in their order.

use std::collections::BTreeMap;
use std::ops::Bound;

/// What a key's state starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Base {
    /// The snapshot's value (only merge operands were written).
    Snapshot,
    /// No value (a delete, or a covering `delete_range`).
    Deleted,
    /// A put's value.
    Value(Vec<u8>),
}

/// A buffered key's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PointWrite {
    pub base: Base,
    /// Merge operands written onto the base, oldest first.
    pub operands: Vec<Vec<u8>>,
}

/// The buffered writes of one keyspace.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyspaceWrites {
    pub points: BTreeMap<Vec<u8>, PointWrite>,
    /// Range deletions `[start, end)`, in the order written.
    pub ranges: Vec<(Vec<u8>, Vec<u8>)>,
}

impl KeyspaceWrites {
    /// Whether a buffered range deletion covers `key`.
    pub fn range_covers(&self, key: &[u8]) -> bool {
        self.ranges.iter().any(|(s, e)| s.as_slice() <= key && key < e.as_slice())
    }

    /// The buffered state of `key`, or `None` when reads of it go to the snapshot as they are;
    /// a key only covered by a range deletion reads as deleted.
    pub fn state(&self, key: &[u8]) -> Option<PointWrite> {
        match self.points.get(key) {
            Some(p) => Some(p.clone()),
            None if self.range_covers(key) => {
                Some(PointWrite { base: Base::Deleted, operands: Vec::new() })
            }
            None => None,
        }
    }

    /// A bound's key and whether it is included (`None`: unbounded).
    fn ends(b: Bound<&[u8]>) -> Option<(&[u8], bool)> {
        match b {
            Bound::Included(k) => Some((k, true)),
            Bound::Excluded(k) => Some((k, false)),
            Bound::Unbounded => None,
        }
    }

    /// The writes whose keys lie within `lo..hi`, and every range deletion (a copy for an
    /// iterator, which sees the writes made before it).
    pub fn within(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> KeyspaceWrites {
        // A range whose ends cross holds nothing (and would make `BTreeMap::range` panic).
        if let (Some((l, l_in)), Some((h, h_in))) = (Self::ends(lo), Self::ends(hi)) {
            if l > h || (l == h && !(l_in && h_in)) {
                return KeyspaceWrites { points: BTreeMap::new(), ranges: self.ranges.clone() };
            }
        }
        let points =
            self.points.range::<[u8], _>((lo, hi)).map(|(k, v)| (k.clone(), v.clone())).collect();
        KeyspaceWrites { points, ranges: self.ranges.clone() }
    }

    /// Applies `op`, moving its bytes into the state (one copy of a write's bytes in all).
    fn apply(&mut self, op: Op) {
        match op {
            Op::Put { key, value, .. } => {
                let w = PointWrite { base: Base::Value(value), operands: Vec::new() };
                self.points.insert(key, w);
            }
            Op::Delete { key, .. } => {
                let w = PointWrite { base: Base::Deleted, operands: Vec::new() };
                self.points.insert(key, w);
            }
            Op::Merge { key, operand, .. } => {
                let covered = self.range_covers(&key);
                let w = self.points.entry(key).or_insert_with(|| PointWrite {
                    base: if covered { Base::Deleted } else { Base::Snapshot },
                    operands: Vec::new(),
                });
                w.operands.push(operand);
            }
            Op::DeleteRange { start, end, .. } => {
                for w in self.points.range_mut::<[u8], _>((
                    Bound::Included(start.as_slice()),
                    Bound::Excluded(end.as_slice()),
                )) {
                    *w.1 = PointWrite { base: Base::Deleted, operands: Vec::new() };
                }
                self.ranges.push((start, end));
            }
        }
    }
}

/// One buffered operation.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Put {
        keyspace: u32,
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        keyspace: u32,
        key: Vec<u8>,
    },
    Merge {
        keyspace: u32,
        key: Vec<u8>,
        operand: Vec<u8>,
    },
    /// `[start, end)`, never empty.
    DeleteRange {
        keyspace: u32,
        start: Vec<u8>,
        end: Vec<u8>,
    },
}

impl Op {
    fn keyspace(&self) -> u32 {
        match self {
            Op::Put { keyspace, .. }
            | Op::Delete { keyspace, .. }
            | Op::Merge { keyspace, .. }
            | Op::DeleteRange { keyspace, .. } => *keyspace,
        }
    }
}

/// A transaction's buffered writes, with savepoints.
#[derive(Debug, Default)]
pub(crate) struct WriteSet {
    /// The state the writes lead to, per keyspace id. Every write adds to it, so it is empty
    /// exactly when nothing was written.
    pub by_keyspace: BTreeMap<u32, KeyspaceWrites>,
    /// The state at each savepoint, oldest first. A savepoint copies the state (savepoints are
    /// rare), so that a write costs one map update and one copy of its bytes, with no log.
    savepoints: Vec<BTreeMap<u32, KeyspaceWrites>>,
}

impl WriteSet {
    /// Records `op`.
    pub fn push(&mut self, op: Op) {
        self.by_keyspace.entry(op.keyspace()).or_default().apply(op);
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.by_keyspace.is_empty()
    }

    /// The writes of `keyspace`, if any.
    pub fn keyspace(&self, keyspace: u32) -> Option<&KeyspaceWrites> {
        self.by_keyspace.get(&keyspace)
    }

    /// Pushes a savepoint: the current state.
    pub fn savepoint(&mut self) {
        self.savepoints.push(self.by_keyspace.clone());
    }

    /// Undoes the writes since the last savepoint and pops it; `false` when none is set.
    pub fn rollback_to_savepoint(&mut self) -> bool {
        let Some(saved) = self.savepoints.pop() else {
            return false;
        };
        self.by_keyspace = saved;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, value: &str) -> Op {
        Op::Put { keyspace: 0, key: key.into(), value: value.into() }
    }

    #[test]
    fn delete_range_turns_covered_writes_into_deletes_and_later_writes_win() {
        let mut ws = WriteSet::default();
        ws.push(put("b", "1"));
        ws.push(Op::Merge { keyspace: 0, key: b"c".to_vec(), operand: b"+".to_vec() });
        ws.push(Op::DeleteRange { keyspace: 0, start: b"a".to_vec(), end: b"d".to_vec() });
        ws.push(put("c", "2"));
        ws.push(Op::Merge { keyspace: 0, key: b"a".to_vec(), operand: b"+".to_vec() });
        let ks = ws.keyspace(0).unwrap();
        assert_eq!(ks.state(b"b").unwrap().base, Base::Deleted);
        assert_eq!(ks.state(b"c").unwrap().base, Base::Value(b"2".to_vec()));
        // A merge onto a key the range deleted merges onto nothing, not the snapshot.
        assert_eq!(ks.state(b"a").unwrap().base, Base::Deleted);
        assert_eq!(ks.state(b"bb").unwrap().base, Base::Deleted);
        assert_eq!(ks.state(b"d"), None);
    }

    #[test]
    fn savepoints_undo_back_to_their_position_and_pop() {
        let mut ws = WriteSet::default();
        ws.push(put("a", "1"));
        ws.savepoint();
        ws.push(put("a", "2"));
        ws.savepoint();
        ws.push(Op::Delete { keyspace: 7, key: b"x".to_vec() });
        assert!(ws.rollback_to_savepoint());
        assert!(ws.keyspace(7).is_none());
        assert_eq!(ws.keyspace(0).unwrap().state(b"a").unwrap().base, Base::Value(b"2".to_vec()));
        assert!(ws.rollback_to_savepoint());
        assert_eq!(ws.keyspace(0).unwrap().state(b"a").unwrap().base, Base::Value(b"1".to_vec()));
        assert!(!ws.rollback_to_savepoint());
        assert!(!ws.is_empty());
    }
}
