//! siftdb as the storage of an [openraft](https://docs.rs/openraft/0.9) cluster.
//!
//! - [`store::open`] opens a node's directory and returns its log store ([`store::LogStore`],
//!   openraft's `RaftLogStorage`) and state machine ([`store::StateMachine`], `RaftStateMachine`).
//!   The log's entries live in append-only segment files (docs/log.md), the vote and the state
//!   machine in one siftdb database; the layout is in README.md.
//! - [`service`] is a replicated KV service over HTTP built on them (the `siftdb-raft` binary),
//!   [`client`] its client, [`network`] the Raft RPCs between nodes ([`snapshot_wire`]: the
//!   binary body carrying a whole snapshot, [`snapshot_transfer`]: its sending and receiving
//!   ends, [`kv_wire`]: the binary bodies of the client routes, [`tls`]: TLS and the shared
//!   secret, off unless configured).
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
pub mod kv_wire;
pub mod network;
#[cfg(feature = "rocksdb-peer")]
pub mod peer_rocksdb;
pub mod service;
pub mod snapshot_transfer;
pub mod snapshot_wire;
pub mod store;
pub mod tls;

use std::fmt;

use serde::{Deserialize, Serialize};

/// A node's id in the cluster.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The openraft types of the KV service: requests are [`Request`], responses [`Response`],
    /// snapshots are files ([`store::SnapshotData`], the format in docs/snapshots.md), each sent
    /// as one streamed body ([`snapshot_transfer`]).
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

/// A write the state machine applies. Keys and values are arbitrary bytes.
///
/// As JSON (the Raft RPCs between nodes, the JSON client routes, earlier versions' log
/// entries) a key or value is a string when its bytes are UTF-8 (the form earlier versions
/// wrote, so their entries and clients still work) and `{"base64": "..."}` otherwise
/// ([`bytes_json`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// Sets `key` to `value`.
    Set {
        /// The key.
        #[serde(with = "bytes_json")]
        key: Vec<u8>,
        /// The value.
        #[serde(with = "bytes_json")]
        value: Vec<u8>,
    },
    /// Removes `key` (a no-op when it is absent).
    Delete {
        /// The key.
        #[serde(with = "bytes_json")]
        key: Vec<u8>,
    },
    /// These requests, applied in order as one log entry (the service batches concurrent client
    /// writes so that they share one append and one fsync). Requests in it are never batches.
    Batch(Vec<Request>),
}

impl Request {
    /// A [`Request::Set`] of `key` to `value`.
    pub fn set(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Request {
        Request::Set { key: key.into(), value: value.into() }
    }

    /// A [`Request::Delete`] of `key`.
    pub fn delete(key: impl Into<Vec<u8>>) -> Request {
        Request::Delete { key: key.into() }
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::Set { key, value } => {
                write!(f, "set {}={}", key.escape_ascii(), value.escape_ascii())
            }
            Request::Delete { key } => write!(f, "delete {}", key.escape_ascii()),
            Request::Batch(reqs) => write!(f, "batch of {}", reqs.len()),
        }
    }
}

/// What applying a [`Request`] returned: the key's value before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// The value the key had before the request, if any.
    #[serde(default, with = "bytes_json::option")]
    pub previous: Option<Vec<u8>>,
    /// For a [`Request::Batch`], one response per request in it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<Response>,
}

/// Key-value pairs in key order (a dump of the applied state).
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The reads the service makes of a state machine (local, not linearizable by themselves).
pub trait KvRead: Send + Sync + 'static {
    /// The applied value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// Every applied pair in key order.
    fn dump(&self) -> Result<Pairs, String>;
}

/// The JSON form of a key or value (serde `with` module): a string when the bytes are UTF-8,
/// else `{"base64": "<standard base64, padded>"}`. Both forms are read back; so is an array of
/// byte numbers.
pub mod bytes_json {
    use std::fmt;

    use base64::Engine as _;
    use serde::de::{self, MapAccess, SeqAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    /// The object key of the base64 form.
    pub const BASE64_KEY: &str = "base64";

    /// Writes `bytes` as a string when they are UTF-8, else as `{"base64": ...}`.
    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(bytes) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(
                    BASE64_KEY,
                    &base64::engine::general_purpose::STANDARD.encode(bytes),
                )?;
                m.end()
            }
        }
    }

    /// Reads either form written by [`serialize`], or an array of byte numbers.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_any(BytesVisitor)
    }

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string, {\"base64\": string} or an array of bytes")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
            Ok(v.as_bytes().to_vec())
        }

        fn visit_string<E: de::Error>(self, v: String) -> Result<Vec<u8>, E> {
            Ok(v.into_bytes())
        }

        fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(out)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<u8>, A::Error> {
            let mut out = None;
            while let Some(k) = map.next_key::<String>()? {
                if k != BASE64_KEY || out.is_some() {
                    return Err(de::Error::custom(format!(
                        "unexpected field {k:?}: bytes are a string or {{\"{BASE64_KEY}\": ...}}"
                    )));
                }
                let text: String = map.next_value()?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text.as_bytes())
                    .map_err(|e| de::Error::custom(format!("{BASE64_KEY}: {e}")))?;
                out = Some(bytes);
            }
            out.ok_or_else(|| de::Error::custom(format!("missing field {BASE64_KEY:?}")))
        }
    }

    /// The same for an `Option` (`null` when absent).
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        /// `null`, or the value as [`super::serialize`] writes it.
        pub fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
            match v {
                Some(b) => super::serialize(b, s),
                None => s.serialize_none(),
            }
        }

        /// Reads what [`serialize`] writes.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
            #[derive(Deserialize)]
            struct Wrap(#[serde(with = "super")] Vec<u8>);
            Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
        }
    }
}
