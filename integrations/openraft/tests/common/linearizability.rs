//! A linearizability checker for a history of reads and writes of independent registers (one
//! per key): the Wing-Gong search with Lowe's memoisation of (linearized set, value) states.
//! An operation whose outcome the client never learned has no completion time: it may take
//! effect at any point after its invocation, or never.

use std::collections::{BTreeMap, HashSet};

/// What an operation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Set the key to the value.
    Write(String),
    /// Read the key and saw this.
    Read(Option<String>),
}

/// One operation on one key.
#[derive(Debug, Clone)]
pub struct Op {
    pub key: String,
    pub kind: Kind,
    /// When it was sent (nanoseconds since the test began).
    pub invoke: u64,
    /// When its reply came; `None` if the outcome is unknown (a write only).
    pub complete: Option<u64>,
}

/// Checks every key's history; the error names the first key with no valid order.
pub fn check(history: &[Op]) -> Result<(), String> {
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in history {
        by_key.entry(&op.key).or_default().push(op);
    }
    for (key, ops) in by_key {
        if ops.len() > 128 {
            return Err(format!(
                "key {key}: {} operations; the checker takes at most 128 per key",
                ops.len()
            ));
        }
        if !Search::new(&ops).run(0, None) {
            let mut lines: Vec<String> = ops.iter().map(|o| format!("{o:?}")).collect();
            lines.sort();
            return Err(format!("key {key} has no linearization:\n{}", lines.join("\n")));
        }
    }
    Ok(())
}

struct Search<'a> {
    ops: &'a [&'a Op],
    /// The operations that must be linearized (the completed ones).
    required: u128,
    /// (linearized set, value) states already shown to lead nowhere.
    failed: HashSet<(u128, Option<String>)>,
}

impl<'a> Search<'a> {
    fn new(ops: &'a [&'a Op]) -> Search<'a> {
        let required = ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.complete.is_some())
            .fold(0u128, |m, (i, _)| m | 1 << i);
        Search { ops, required, failed: HashSet::new() }
    }

    fn run(&mut self, done: u128, value: Option<String>) -> bool {
        if done & self.required == self.required {
            return true;
        }
        if self.failed.contains(&(done, value.clone())) {
            return false;
        }
        // An operation may go next only if no pending operation completed before it began.
        let first_completion = (0..self.ops.len())
            .filter(|i| done & (1 << i) == 0)
            .filter_map(|i| self.ops[i].complete)
            .min()
            .unwrap_or(u64::MAX);
        for i in 0..self.ops.len() {
            let op = self.ops[i];
            if done & (1 << i) != 0 || op.invoke > first_completion {
                continue;
            }
            let next = match &op.kind {
                Kind::Read(seen) if *seen == value => value.clone(),
                Kind::Read(_) => continue,
                Kind::Write(v) => Some(v.clone()),
            };
            if self.run(done | 1 << i, next) {
                return true;
            }
        }
        self.failed.insert((done, value));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: Kind, invoke: u64, complete: Option<u64>) -> Op {
        Op { key: "k".into(), kind, invoke, complete }
    }
    fn w(v: &str) -> Kind {
        Kind::Write(v.into())
    }
    fn r(v: Option<&str>) -> Kind {
        Kind::Read(v.map(str::to_string))
    }

    #[test]
    fn accepts_sequential_and_overlapping_histories() {
        check(&[op(w("a"), 0, Some(1)), op(r(Some("a")), 2, Some(3))]).unwrap();
        // The read overlaps the write: it may see either.
        check(&[op(w("a"), 0, Some(10)), op(r(None), 1, Some(2))]).unwrap();
        check(&[op(w("a"), 0, Some(10)), op(r(Some("a")), 1, Some(2))]).unwrap();
        // An unknown write may take effect late...
        check(&[op(w("a"), 0, None), op(r(None), 5, Some(6)), op(r(Some("a")), 7, Some(8))])
            .unwrap();
        // ...or never.
        check(&[op(w("a"), 0, None), op(r(None), 5, Some(6))]).unwrap();
    }

    #[test]
    fn rejects_stale_and_lost_reads() {
        // A read after a completed write must see it.
        assert!(check(&[op(w("a"), 0, Some(1)), op(r(None), 2, Some(3))]).is_err());
        // Two sequential writes, then a read of the first: stale.
        let h = [op(w("a"), 0, Some(1)), op(w("b"), 2, Some(3)), op(r(Some("a")), 4, Some(5))];
        assert!(check(&h).is_err());
        // Reads must not go back in time: b then a again with no write of a in between.
        let h = [
            op(w("a"), 0, Some(1)),
            op(w("b"), 2, Some(20)),
            op(r(Some("b")), 3, Some(4)),
            op(r(Some("a")), 5, Some(6)),
        ];
        assert!(check(&h).is_err());
        // A value nobody wrote.
        assert!(check(&[op(r(Some("z")), 0, Some(1))]).is_err());
    }
}
