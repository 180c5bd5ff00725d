//! Finding room for a fingerprint whose two buckets are full: a breadth-first search for a
//! shortest chain of moves ("kick path") that ends in an empty slot, found first and applied only
//! if it exists, so a failed insert leaves the table untouched (the approach of libcuckoo, Li et
//! al. 2014, "Algorithmic improvements for fast concurrent cuckoo hashing", instead of the
//! paper's random walk, which evicts as it searches and must then drop or undo a fingerprint).
//!
//! Nodes of the search are buckets. Expanding full bucket `B` looks at each of its fingerprints
//! `fp`: that fingerprint may move to `alt(B, fp)`. If that bucket has an empty lane the path is
//! complete; otherwise it becomes a node if the budget allows and it is not already on the path
//! to `B`. Every node is a full bucket and the final bucket has an empty lane, so the final
//! bucket is never on the path; with no bucket repeated along a path, applying the moves from the
//! far end back to the root touches each slot once and reads only slots not yet written.
//!
//! Victim order is seeded and deterministic: bucket `B`'s lanes are tried starting at lane
//! `mix64(B, seed) % 4`, so two filters with the same seed and history have identical bytes.

use super::layout::{Geometry, SLOTS};
use crate::hash::mix64;

/// Most buckets a search examines: the analogue of the paper's 500 kicks. A breadth-first tree
/// with this many nodes reaches depth 4 (2 + 8 + 32 + 128 + 330 nodes), so a path moves at most
/// five fingerprints.
pub const MAX_NODES: usize = 500;
const ROOT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    bucket: u64,
    /// Index of the parent node, or `ROOT`.
    parent: u32,
    /// Lane of the parent bucket whose fingerprint would move into this bucket.
    lane: u32,
}

/// A chain of slots `(bucket, lane)`: the fingerprint in each slot moves to the next slot, the
/// last slot is empty, and the first slot (in one of the key's two buckets) is freed.
pub type Path = Vec<(u64, u32)>;

/// Searches for a kick path out of the full buckets `i1`, `i2`. `None` when none exists within
/// [`MAX_NODES`]; the table is only read.
pub fn find_path(g: &Geometry, words: &[u64], seed: u64, i1: u64, i2: u64) -> Option<Path> {
    let mut nodes = Vec::with_capacity(MAX_NODES);
    nodes.push(Node { bucket: i1, parent: ROOT, lane: 0 });
    if i2 != i1 {
        nodes.push(Node { bucket: i2, parent: ROOT, lane: 0 });
    }
    let mut head = 0;
    while head < nodes.len() {
        let b = nodes[head].bucket;
        let value = g.read(words, b);
        let start = (mix64(b, seed) % SLOTS as u64) as u32;
        for r in 0..SLOTS {
            let lane = (start + r) % SLOTS;
            let next = g.alt(b, g.lane(value, lane));
            if let Some(empty) = g.find(g.read(words, next), 0) {
                return Some(trace(&nodes, head, lane, next, empty));
            }
            if nodes.len() < MAX_NODES && !on_path(&nodes, head, next) {
                nodes.push(Node { bucket: next, parent: head as u32, lane });
            }
        }
        head += 1;
    }
    None
}

/// Is `bucket` node `at` or one of its ancestors?
fn on_path(nodes: &[Node], mut at: usize, bucket: u64) -> bool {
    loop {
        if nodes[at].bucket == bucket {
            return true;
        }
        match nodes[at].parent {
            ROOT => return false,
            p => at = p as usize,
        }
    }
}

/// The slots from the root down to `(nodes[leaf].bucket, lane)`, then the empty slot.
fn trace(nodes: &[Node], leaf: usize, lane: u32, target: u64, empty: u32) -> Path {
    let mut path = vec![(target, empty), (nodes[leaf].bucket, lane)];
    let mut at = leaf;
    while nodes[at].parent != ROOT {
        let child = nodes[at];
        at = child.parent as usize;
        path.push((nodes[at].bucket, child.lane));
    }
    path.reverse();
    path
}

/// Applies a path from [`find_path`] to the table it was found in, last move first. Afterwards
/// the path's first slot is empty and every moved fingerprint sits in its other bucket.
pub fn apply(g: &Geometry, words: &mut [u64], path: &Path) {
    for pair in path.windows(2).rev() {
        let ((from_b, from_l), (to_b, to_l)) = (pair[0], pair[1]);
        let from = g.read(words, from_b);
        let fp = g.lane(from, from_l);
        debug_assert_eq!(g.lane(g.read(words, to_b), to_l), 0, "kick target slot not empty");
        debug_assert_eq!(g.alt(from_b, fp), to_b, "kick moves a fingerprint off its buckets");
        let to = g.read(words, to_b);
        g.write(words, to_b, g.with_lane(to, to_l, fp));
        g.write(words, from_b, g.with_lane(g.read(words, from_b), from_l, 0));
    }
}
