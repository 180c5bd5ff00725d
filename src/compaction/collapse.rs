//! Which versions of one user key a flush or compaction writes, and how merge operands
//! collapse (design.md#compaction: the job; "Merge operator").
//!
//! The versions of a key, newest first, fall into *stripes*: a new stripe starts at a version
//! when a live snapshot `s` lies between it and the next newer version (`v.seq <= s <
//! newer.seq`). Every reader sees the newest version of a stripe or nothing of it: the current
//! state reads the first stripe, a snapshot the newest stripe at or below it. So:
//! 1. A stripe whose newest version is a Put or Delete keeps that version alone.
//! 2. A stripe whose newest versions are merge operands keeps what its readers merge: the
//!    operands down to the stripe's first Put or Delete, if any. With an operator configured:
//!    - operands that reach a Put or Delete in their stripe become one Put, `full_merge` of
//!      them onto that base (Delete: no base), at the newest operand's sequence number;
//!    - operands of the oldest stripe at the bottommost level (nothing older exists anywhere)
//!      become one Put, `full_merge` onto no base;
//!    - otherwise neighbouring operands are combined with `partial_merge` where it agrees.
//!
//!    A failed merge (an operand the operator cannot read) keeps the operands as they are,
//!    so the read that meets them reports the error. Without an operator they are kept.
//!    Operands are never combined across a stripe boundary: a snapshot between them would
//!    then read a merge of versions newer than itself.
//! 3. At the bottommost level a Delete left as the oldest kept version hides nothing and is
//!    dropped (repeatedly).

use crate::error::{Error, Result};
use crate::ikey::ValueKind;
use crate::merge::{answers_to, MergeOperator, SharedMergeOperator};
use std::collections::BTreeSet;

/// The operator a compaction merges with and the name its outputs record, from the names the
/// inputs holding operands recorded (`""`: unknown, flushed without an operator).
/// - Every known name is one the configured operator answers to (its name or a former name,
///   [`MergeOperator::former_names`]): merge with it, record its current name.
/// - The inputs agree on one name the configured operator does not answer to (the operator was
///   replaced, or none is configured): copy the operands unchanged and record that name, so
///   they stay readable by their own operator and are refused by any other.
/// - Any other mix of names: [`Error::InvalidArgument`] naming them; the outputs could not
///   record both, and merging or relabelling either would silently change what it means.
pub fn compaction_operator(
    configured: Option<&SharedMergeOperator>,
    recorded: &[&str],
) -> Result<(Option<SharedMergeOperator>, String)> {
    let known: BTreeSet<&str> = recorded.iter().copied().filter(|n| !n.is_empty()).collect();
    if let Some(op) = configured {
        if known.iter().all(|n| answers_to(op.as_ref(), n)) {
            return Ok((Some(op.clone()), op.name().to_string()));
        }
    }
    let mut names = known.iter();
    match (names.next(), names.next()) {
        (None, _) => Ok((None, String::new())),
        (Some(&only), None) => Ok((None, only.to_string())),
        (Some(_), Some(_)) => Err(Error::invalid(format!(
            "compaction input tables hold merge operands of several operators ({known:?}; \
             configured: {:?}, former names {:?}): they cannot be merged or recorded together",
            configured.map(|op| op.name()),
            configured.map(|op| op.former_names()).unwrap_or_default()
        ))),
    }
}

/// One version of a user key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Sequence number.
    pub seq: u64,
    /// Put, Delete or Merge.
    pub kind: ValueKind,
    /// The value (operand for a Merge, empty for a Delete).
    pub value: Vec<u8>,
}

/// The versions of `user_key` to write, newest first, from all of them (`versions`, newest
/// first), per the module documentation.
pub fn collapse(
    user_key: &[u8],
    versions: Vec<Version>,
    snapshots: &BTreeSet<u64>,
    bottommost: bool,
    op: Option<&dyn MergeOperator>,
) -> Vec<Version> {
    let mut stripes: Vec<Vec<Version>> = Vec::new();
    let mut newer = u64::MAX;
    for v in versions {
        if stripes.is_empty() || snapshots.range(v.seq..newer).next().is_some() {
            stripes.push(Vec::with_capacity(1));
        }
        newer = v.seq;
        stripes.last_mut().expect("a stripe").push(v);
    }
    let last = stripes.len().saturating_sub(1);
    let mut keep: Vec<Version> = Vec::with_capacity(stripes.len());
    for (i, stripe) in stripes.into_iter().enumerate() {
        keep_of_stripe(user_key, stripe, bottommost && i == last, op, &mut keep);
    }
    if bottommost {
        while keep.last().is_some_and(|v| v.kind == ValueKind::Delete) {
            keep.pop();
        }
    }
    keep
}

/// Appends what `stripe` (non-empty, newest first) keeps to `keep`. `oldest`: nothing older
/// than this stripe exists anywhere (bottommost level, last stripe).
fn keep_of_stripe(
    user_key: &[u8],
    stripe: Vec<Version>,
    oldest: bool,
    op: Option<&dyn MergeOperator>,
    keep: &mut Vec<Version>,
) {
    let mut it = stripe.into_iter();
    let head = it.next().expect("stripes are non-empty");
    if head.kind != ValueKind::Merge {
        keep.push(head);
        return;
    }
    let mut operands = vec![head];
    let base = loop {
        match it.next() {
            Some(v) if v.kind == ValueKind::Merge => operands.push(v),
            other => break other,
        }
    };
    // The stripe's versions below `base` are hidden by it: dropped.
    let Some(op) = op else {
        keep.extend(operands);
        keep.extend(base);
        return;
    };
    if base.is_some() || oldest {
        let base_value = base.as_ref().filter(|b| b.kind == ValueKind::Put).map(|b| &b.value[..]);
        let oldest_first: Vec<&[u8]> = operands.iter().rev().map(|v| &v.value[..]).collect();
        if let Ok(value) = op.full_merge(user_key, base_value, &oldest_first) {
            keep.push(Version { seq: operands[0].seq, kind: ValueKind::Put, value });
            return;
        }
        keep.extend(operands);
        keep.extend(base);
        return;
    }
    // No base in reach: combine neighbours, oldest first, while the operator agrees.
    let mut combined: Vec<Version> = Vec::with_capacity(1);
    for newer in operands.into_iter().rev() {
        let merged = combined
            .last()
            .and_then(|older| op.partial_merge(user_key, &older.value, &newer.value));
        match merged {
            Some(value) => {
                *combined.last_mut().expect("checked") =
                    Version { seq: newer.seq, kind: ValueKind::Merge, value };
            }
            None => combined.push(newer),
        }
    }
    keep.extend(combined.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::U64AddOperator;

    fn put(seq: u64, n: u64) -> Version {
        Version { seq, kind: ValueKind::Put, value: n.to_le_bytes().to_vec() }
    }
    fn merge(seq: u64, n: u64) -> Version {
        Version { seq, kind: ValueKind::Merge, value: n.to_le_bytes().to_vec() }
    }
    fn del(seq: u64) -> Version {
        Version { seq, kind: ValueKind::Delete, value: Vec::new() }
    }
    fn snaps(s: &[u64]) -> BTreeSet<u64> {
        s.iter().copied().collect()
    }
    const ADD: Option<&dyn MergeOperator> = Some(&U64AddOperator);

    #[test]
    fn operands_reaching_a_put_become_one_put_at_the_newest_sequence() {
        let v = vec![merge(9, 1), merge(8, 2), put(7, 10), put(3, 99)];
        assert_eq!(collapse(b"k", v, &snaps(&[]), false, ADD), vec![put(9, 13)]);
    }

    #[test]
    fn operands_over_a_delete_merge_onto_no_base() {
        let v = vec![merge(9, 1), merge(8, 2), del(7), put(3, 99)];
        assert_eq!(collapse(b"k", v, &snaps(&[]), false, ADD), vec![put(9, 3)]);
    }

    #[test]
    fn operands_without_a_base_are_combined_partially_above_the_bottom() {
        let v = vec![merge(9, 1), merge(8, 2), merge(7, 4)];
        assert_eq!(collapse(b"k", v.clone(), &snaps(&[]), false, ADD), vec![merge(9, 7)]);
        // At the bottom nothing older exists: a full merge onto no base.
        assert_eq!(collapse(b"k", v, &snaps(&[]), true, ADD), vec![put(9, 7)]);
    }

    #[test]
    fn a_snapshot_between_operands_keeps_them_apart() {
        // Snapshot 8 sees merge(8)+merge(7)+put(5) = 16; the current state sees 17.
        let v = vec![merge(9, 1), merge(8, 2), merge(7, 4), put(5, 10)];
        let got = collapse(b"k", v, &snaps(&[8]), false, ADD);
        assert_eq!(got, vec![merge(9, 1), put(8, 16)]);
        // A snapshot below the base: the stripe above it merges, the base's stripe stays.
        let v = vec![merge(9, 1), put(5, 10), put(4, 20)];
        assert_eq!(collapse(b"k", v, &snaps(&[4]), false, ADD), vec![put(9, 11), put(4, 20)]);
        // Snapshot 7 between partial merges: two operands, not one.
        let v = vec![merge(9, 1), merge(8, 2), merge(7, 4), merge(6, 8)];
        let got = collapse(b"k", v, &snaps(&[7]), false, ADD);
        assert_eq!(got, vec![merge(9, 3), merge(7, 12)]);
    }

    #[test]
    fn without_an_operator_operands_are_kept_down_to_their_base() {
        let v = vec![merge(9, 1), merge(8, 2), put(7, 10), put(3, 99)];
        let got = collapse(b"k", v, &snaps(&[]), true, None);
        assert_eq!(got, vec![merge(9, 1), merge(8, 2), put(7, 10)]);
        // At the bottom, a tombstone below operands is dropped: no base either way.
        let v = vec![merge(9, 1), del(7), put(3, 99)];
        assert_eq!(collapse(b"k", v, &snaps(&[]), true, None), vec![merge(9, 1)]);
    }

    #[test]
    fn a_failing_merge_keeps_the_operands_for_the_read_to_report() {
        let bad = Version { seq: 8, kind: ValueKind::Merge, value: b"abc".to_vec() };
        let v = vec![merge(9, 1), bad.clone(), put(7, 10)];
        let got = collapse(b"k", v, &snaps(&[]), false, ADD);
        assert_eq!(got, vec![merge(9, 1), bad.clone(), put(7, 10)]);
        // Partial merge declines the bad operand; its neighbours stay separate around it.
        let v = vec![merge(9, 1), bad.clone(), merge(7, 2), merge(6, 3)];
        let got = collapse(b"k", v, &snaps(&[]), false, ADD);
        assert_eq!(got, vec![merge(9, 1), bad, merge(7, 5)]);
    }

    #[test]
    fn compaction_never_merges_or_relabels_operands_of_another_operator() {
        let op: SharedMergeOperator = std::sync::Arc::new(U64AddOperator);
        let (got, name) = compaction_operator(Some(&op), &["", "siftdb.u64add"]).unwrap();
        assert_eq!((got.is_some(), name.as_str()), (true, "siftdb.u64add"));
        let (got, name) = compaction_operator(Some(&op), &[]).unwrap();
        assert_eq!((got.is_some(), name.as_str()), (true, "siftdb.u64add"));
        // Another operator's operands alone: copied unchanged under their own name.
        let (got, name) = compaction_operator(Some(&op), &["app.max", ""]).unwrap();
        assert_eq!((got.is_none(), name.as_str()), (true, "app.max"));
        let (got, name) = compaction_operator(None, &["app.max"]).unwrap();
        assert_eq!((got.is_none(), name.as_str()), (true, "app.max"));
        let (got, name) = compaction_operator(None, &[""]).unwrap();
        assert_eq!((got.is_none(), name.as_str()), (true, ""));
        // Two operators' operands: refused, naming both.
        let e = compaction_operator(Some(&op), &["app.max", "siftdb.u64add"]).err().unwrap();
        assert!(e.to_string().contains("app.max") && e.to_string().contains("siftdb.u64add"));
        assert!(compaction_operator(None, &["a", "b"]).is_err());
    }

    #[test]
    fn an_operator_merges_and_relabels_the_operands_of_its_former_names() {
        struct Renamed;
        impl MergeOperator for Renamed {
            fn name(&self) -> &str {
                "app.add.v2"
            }
            fn former_names(&self) -> &[&str] {
                &["app.add"]
            }
            fn full_merge(&self, k: &[u8], b: Option<&[u8]>, ops: &[&[u8]]) -> Result<Vec<u8>> {
                U64AddOperator.full_merge(k, b, ops)
            }
        }
        let op: SharedMergeOperator = std::sync::Arc::new(Renamed);
        let (got, name) = compaction_operator(Some(&op), &["app.add", "app.add.v2", ""]).unwrap();
        assert_eq!((got.is_some(), name.as_str()), (true, "app.add.v2"));
        let (got, name) = compaction_operator(Some(&op), &["app.add"]).unwrap();
        assert_eq!((got.is_some(), name.as_str()), (true, "app.add.v2"));
        // A name it does not answer to beside one it does: refused as any two operators are.
        assert!(compaction_operator(Some(&op), &["app.add", "app.max"]).is_err());
    }

    #[test]
    fn versions_without_operands_follow_the_snapshot_rule_as_before() {
        let v = vec![put(9, 1), put(8, 2), del(7), put(5, 3), put(2, 4)];
        assert_eq!(collapse(b"k", v.clone(), &snaps(&[]), false, ADD), vec![put(9, 1)]);
        let got = collapse(b"k", v.clone(), &snaps(&[7, 3]), false, ADD);
        assert_eq!(got, vec![put(9, 1), del(7), put(2, 4)]);
        let got = collapse(b"k", vec![del(9), put(5, 3)], &snaps(&[]), true, ADD);
        assert_eq!(got, vec![]);
    }
}
