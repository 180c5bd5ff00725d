//! siftdb as the storage of an [openraft](https://docs.rs/openraft/0.9) cluster.
//!
//! - [`store::open`] opens a node's directory and returns its log store ([`store::LogStore`],
//!   openraft's `RaftLogStorage`) and state machine ([`store::StateMachine`], `RaftStateMachine`).
//!   The log's entries live in append-only segment files (docs/log.md), the vote and the state
//!   machine in one siftdb database; the layout is in README.md.
//! - [`service`] is a replicated KV service over HTTP built on them (the `siftdb-raft` binary),
//!   [`client`] its client, [`network`] the Raft RPCs between nodes ([`snapshot_wire`]: the
//!   binary body of a snapshot chunk).
//!
//! Quick start, in-process (the storage only):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use openraft::storage::{RaftLogStorage, RaftStateMachine};
//! let dir = tempfile::tempdir()?;
//! let (mut log, mut sm) = siftdb_openraft::store::open(dir.path().join("node-1"), 1)?;
//! assert_eq!(log.read_vote().await?, None);
//! assert_eq!(sm.applied_state().await?.0, None);
//! # Ok(())
//! # }
//! ```

// openraft's storage traits return its `StorageError` (over 200 bytes) by value; the helpers
// that build those errors return the same type rather than box it and unbox it again.
#![allow(clippy::result_large_err)]

pub mod client;
pub mod network;
#[cfg(feature = "rocksdb-peer")]
pub mod peer_rocksdb;
pub mod service;
pub mod snapshot_wire;
pub mod store;

use std::fmt;

use serde::{Deserialize, Serialize};

/// A node's id in the cluster.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The openraft types of the KV service: requests are [`Request`], responses [`Response`],
    /// snapshots are files ([`store::SnapshotData`], the format in docs/snapshots.md), sent in
    /// chunks of `Config::snapshot_max_chunk_size`.
    pub TypeConfig:
        D = Request,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = store::SnapshotData,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The openraft handle of one node.
pub type Raft = openraft::Raft<TypeConfig>;

/// A write the state machine applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Sets `key` to `value`.
    Set {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Removes `key` (a no-op when it is absent).
    Delete {
        /// The key.
        key: String,
    },
    /// These requests, applied in order as one log entry (the service batches concurrent client
    /// writes so that they share one append and one fsync). Requests in it are never batches.
    Batch(Vec<Request>),
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Set { key, value } => write!(f, "set {key}={value}"),
            Request::Delete { key } => write!(f, "delete {key}"),
            Request::Batch(reqs) => write!(f, "batch of {}", reqs.len()),
        }
    }
}

/// What applying a [`Request`] returned: the key's value before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The value the key had before the request, if any.
    pub previous: Option<String>,
    /// For a [`Request::Batch`], one response per request in it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<Response>,
}

/// The reads the service makes of a state machine (local, not linearizable by themselves).
pub trait KvRead: Send + Sync + 'static {
    /// The applied value of `key`.
    fn get(&self, key: &str) -> Result<Option<String>, String>;
    /// Every applied pair in key order.
    fn dump(&self) -> Result<Vec<(String, String)>, String>;
}
