//! A conflict-serializability checker for histories of committed transactions: Adya's direct
//! serialization graph (DSG; Adya, "Weak Consistency", MIT PhD thesis 1999, section 3.4) and a
//! cycle search over it. A history is serializable (no G0, G1c or G2 phenomenon) iff its DSG is
//! acyclic.
//!
//! Input: the committed transactions in commit order, each with the versions it read (key ->
//! the transaction whose write it saw, or [`Version::Initial`]) and the keys it wrote. Versions
//! are identified by their values: the harness writes [`version_value`] (the writer's id and
//! the key) and decodes what a read returned with [`version_of`].
//!
//! Version order: a key's versions are installed in the commit order of their writers (an
//! optimistic engine installs a transaction's writes when it commits), so the writers of a key,
//! taken in the history's order, are its version order; `Initial` precedes them all. Edges,
//! with `w(k, i)` the i-th writer of key k:
//! - WW: `w(k, i) -> w(k, i+1)` (only consecutive writers: later ones follow by transitivity,
//!   which keeps the graph linear in the input);
//! - WR: `w(k, i) -> T` when T read the version of `w(k, i)`;
//! - RW (anti-dependency): `T -> w(k, i+1)` when T read the version of `w(k, i)` (or
//!   `Initial`, then `w(k, 0)`): T saw a state the next writer overwrote.
//!
//! Self-edges are skipped (a read-modify-write of one key reads the previous version and
//! installs the next). Reads are the reads of the snapshot: a harness records a key's first
//! read only when the transaction had not written it before (a read of its own write is no
//! dependency).
//!
//! The graph has at most `reads + 2 * reads + writes` edges; building it is hashing and the
//! cycle search an iterative three-colour DFS, both linear in transactions plus edges, so
//! histories of tens of thousands of transactions check in milliseconds.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt;

/// A transaction's id, unique in a history.
pub type TxId = u64;

/// The version of a key a transaction read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// The key's state before any transaction of the history (absent, or preloaded).
    Initial,
    /// The write of this committed transaction.
    By(TxId),
}

/// One committed transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Committed {
    /// Its id.
    pub id: TxId,
    /// The versions it read from its snapshot: key and whose write it saw (each key at most
    /// once; a repeated key must name the same version).
    pub reads: Vec<(Vec<u8>, Version)>,
    /// The keys it wrote (each at most once).
    pub writes: Vec<Vec<u8>>,
}

impl Committed {
    /// A transaction with no reads or writes yet.
    pub fn new(id: TxId) -> Committed {
        Committed { id, reads: Vec::new(), writes: Vec::new() }
    }

    /// Adds a read of `key` that saw `version`.
    pub fn read(mut self, key: &[u8], version: Version) -> Committed {
        self.reads.push((key.to_vec(), version));
        self
    }

    /// Adds a write of `key`.
    pub fn write(mut self, key: &[u8]) -> Committed {
        self.writes.push(key.to_vec());
        self
    }
}

/// Why an edge of the DSG exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Write dependency: `to` installed the version after `from`'s.
    Ww,
    /// Read dependency: `to` read `from`'s version.
    Wr,
    /// Anti-dependency: `from` read a version that `to` overwrote.
    Rw,
}

/// One edge of a cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Transaction the edge leaves.
    pub from: TxId,
    /// Transaction the edge enters.
    pub to: TxId,
    /// Its kind.
    pub kind: EdgeKind,
    /// The key it is about.
    pub key: Vec<u8>,
}

/// Why a history is not serializable, or not a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A cycle of the DSG: `edges[i].to == edges[i + 1].from`, and the last edge returns to
    /// the first one's `from`.
    Cycle(Vec<Edge>),
    /// A read saw a version no committed transaction of the history wrote (an aborted or
    /// uncommitted write, Adya's G1a, or a harness bug).
    UnknownVersion {
        /// The reader.
        reader: TxId,
        /// The key read.
        key: Vec<u8>,
        /// The writer it claims to have seen.
        writer: TxId,
    },
    /// The input is malformed: a duplicate transaction id, a key written twice by one
    /// transaction, or a key read twice with different versions.
    Malformed(String),
}

impl Violation {
    /// The cycle's edge kinds, in order (empty for other violations).
    pub fn cycle_kinds(&self) -> Vec<EdgeKind> {
        match self {
            Violation::Cycle(edges) => edges.iter().map(|e| e.kind).collect(),
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Cycle(edges) => {
                write!(f, "not serializable, DSG cycle:")?;
                for e in edges {
                    write!(f, " T{} -{:?}({})-> T{}", e.from, e.kind, show(&e.key), e.to)?;
                }
                Ok(())
            }
            Violation::UnknownVersion { reader, key, writer } => write!(
                f,
                "T{reader} read {} as written by T{writer}, which committed no write of it",
                show(key)
            ),
            Violation::Malformed(why) => write!(f, "malformed history: {why}"),
        }
    }
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// Checks a history given in commit order: `Ok` when its DSG is acyclic (the history is
/// conflict-serializable), else the first violation found.
pub fn check(history: &[Committed]) -> Result<(), Violation> {
    let graph = Graph::build(history)?;
    match graph.find_cycle() {
        None => Ok(()),
        Some(path) => Err(Violation::Cycle(
            path.into_iter()
                .map(|(from, e)| Edge {
                    from: history[from].id,
                    to: history[e.to].id,
                    kind: e.kind,
                    key: e.key.to_vec(),
                })
                .collect(),
        )),
    }
}

/// An edge in the adjacency list: target index, kind, key.
#[derive(Clone, Copy)]
struct Out<'a> {
    to: usize,
    kind: EdgeKind,
    key: &'a [u8],
}

struct Graph<'a> {
    adj: Vec<Vec<Out<'a>>>,
}

impl<'a> Graph<'a> {
    fn build(history: &'a [Committed]) -> Result<Graph<'a>, Violation> {
        let mut index: HashMap<TxId, usize> = HashMap::with_capacity(history.len());
        for (i, t) in history.iter().enumerate() {
            if index.insert(t.id, i).is_some() {
                return Err(Violation::Malformed(format!("transaction id {} appears twice", t.id)));
            }
        }
        // Each key's writers in commit order, and each (key, writer)'s position among them.
        let mut writers: HashMap<&[u8], Vec<usize>> = HashMap::new();
        let mut position: HashMap<(&[u8], usize), usize> = HashMap::new();
        for (i, t) in history.iter().enumerate() {
            for k in &t.writes {
                let list = writers.entry(k.as_slice()).or_default();
                if position.insert((k.as_slice(), i), list.len()).is_some() {
                    return Err(Violation::Malformed(format!(
                        "T{} writes {} twice",
                        t.id,
                        show(k)
                    )));
                }
                list.push(i);
            }
        }
        let mut adj: Vec<Vec<Out<'a>>> = vec![Vec::new(); history.len()];
        // In history order, so the cycle reported is the same on every run.
        for (i, t) in history.iter().enumerate() {
            for k in &t.writes {
                let k = k.as_slice();
                let next = writers.get(k).and_then(|l| l.get(position[&(k, i)] + 1));
                if let Some(&w) = next {
                    adj[i].push(Out { to: w, kind: EdgeKind::Ww, key: k });
                }
            }
        }
        for (r, t) in history.iter().enumerate() {
            let mut seen: HashMap<&[u8], Version> = HashMap::new();
            for (k, v) in &t.reads {
                let k = k.as_slice();
                if let Some(prev) = seen.insert(k, *v) {
                    if prev != *v {
                        return Err(Violation::Malformed(format!(
                            "T{} reads {} twice with different versions ({prev:?}, {v:?})",
                            t.id,
                            show(k)
                        )));
                    }
                    continue;
                }
                let list = writers.get(k).map_or(&[][..], |l| l.as_slice());
                // Position of the next version after the one read.
                let next = match *v {
                    Version::Initial => 0,
                    Version::By(w) => {
                        let unknown = || Violation::UnknownVersion {
                            reader: t.id,
                            key: k.to_vec(),
                            writer: w,
                        };
                        let wi = *index.get(&w).ok_or_else(unknown)?;
                        let pos = *position.get(&(k, wi)).ok_or_else(unknown)?;
                        if wi != r {
                            adj[wi].push(Out { to: r, kind: EdgeKind::Wr, key: k });
                        }
                        pos + 1
                    }
                };
                if let Some(&nw) = list.get(next) {
                    if nw != r {
                        adj[r].push(Out { to: nw, kind: EdgeKind::Rw, key: k });
                    }
                }
            }
        }
        Ok(Graph { adj })
    }

    /// A cycle as (source index, edge) pairs, found by an iterative DFS with three colours:
    /// an edge into a node still on the DFS stack (grey) closes a cycle. O(nodes + edges).
    fn find_cycle(&self) -> Option<Vec<(usize, Out<'a>)>> {
        const WHITE: u8 = 0;
        const GREY: u8 = 1;
        const BLACK: u8 = 2;
        let n = self.adj.len();
        let mut colour = vec![WHITE; n];
        // The DFS path: node and the index of its next edge to follow.
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for root in 0..n {
            if colour[root] != WHITE {
                continue;
            }
            colour[root] = GREY;
            stack.push((root, 0));
            while let Some(top) = stack.last_mut() {
                let (node, next) = *top;
                let Some(&e) = self.adj[node].get(next) else {
                    colour[node] = BLACK;
                    stack.pop();
                    continue;
                };
                top.1 += 1;
                match colour[e.to] {
                    WHITE => {
                        colour[e.to] = GREY;
                        stack.push((e.to, 0));
                    }
                    GREY => {
                        // The path from e.to to node, then e back to e.to. Each stack entry's
                        // followed edge is the one before its cursor.
                        let start = stack.iter().position(|&(v, _)| v == e.to)?;
                        let mut cycle: Vec<(usize, Out<'a>)> = stack[start..stack.len() - 1]
                            .iter()
                            .map(|&(v, cur)| (v, self.adj[v][cur - 1]))
                            .collect();
                        cycle.push((node, e));
                        return Some(cycle);
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

/// The value a harness writes to `key` in transaction `tx` (`Version::Initial` for a preload):
/// `"sv"`, the version's tag (0 initial, 1 by a transaction), the id as 8 big-endian bytes,
/// then the key, so a read tells whose write it saw and that it is this key's.
pub fn version_value(version: Version, key: &[u8]) -> Vec<u8> {
    let (tag, id) = match version {
        Version::Initial => (0u8, 0u64),
        Version::By(t) => (1, t),
    };
    let mut v = Vec::with_capacity(11 + key.len());
    v.extend_from_slice(b"sv");
    v.push(tag);
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(key);
    v
}

/// The version a read of `key` returned: `None` (absent) is `Initial`; a value not made by
/// [`version_value`] for this key is an error naming the key.
pub fn version_of(key: &[u8], value: Option<&[u8]>) -> Result<Version, String> {
    let Some(v) = value else { return Ok(Version::Initial) };
    let bad = || format!("the value of {} is not a version value: {v:?}", show(key));
    let rest = v.strip_prefix(b"sv").ok_or_else(bad)?;
    let (&tag, rest) = rest.split_first().ok_or_else(bad)?;
    let (id, k) = rest.split_at_checked(8).ok_or_else(bad)?;
    if k != key {
        return Err(bad());
    }
    let id = u64::from_be_bytes(id.try_into().map_err(|_| bad())?);
    match tag {
        0 => Ok(Version::Initial),
        1 => Ok(Version::By(id)),
        _ => Err(bad()),
    }
}
