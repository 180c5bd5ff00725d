//! The body of a `POST /raft/snapshot`: one whole snapshot, streamed (sent and received by
//! [`crate::snapshot_transfer`]). All integers little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `SFT1` |
//! | 4 | header length H (at most [`MAX_HEADER_BYTES`]) |
//! | H | the header as JSON: the leader's `vote`, the snapshot's `meta` and its length `len` in bytes |
//! | len | the snapshot file's bytes as they are |
//! | 4 | CRC-32 (crc32fast) of those `len` bytes |
//!
//! The body ends exactly after the CRC. The receiver checks the magic, the header's bound and
//! JSON, that exactly `len` bytes and the CRC arrive and that the CRC matches, before the snapshot
//! reaches openraft; a body failing one is refused with a [`TransferError`].

use std::fmt;

use openraft::{BasicNode, SnapshotMeta, Vote};
use serde::{Deserialize, Serialize};

use crate::NodeId;

/// The first 4 bytes of a snapshot body.
pub const MAGIC: &[u8; 4] = b"SFT1";
/// The largest header accepted (it holds the snapshot's membership, a few hundred bytes).
pub const MAX_HEADER_BYTES: u32 = 1 << 20;
/// The `Content-Type` of a snapshot body.
pub const CONTENT_TYPE: &str = "application/x-siftdb-snapshot";
/// Bytes of the body before the header: the magic and the header length.
pub const PREFIX_BYTES: usize = 8;
/// Bytes of the body after the snapshot: its CRC-32.
pub const TRAILER_BYTES: usize = 4;

/// The header of a snapshot body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The sending leader's vote.
    pub vote: Vote<NodeId>,
    /// The snapshot's meta (the receiver's install checks that the snapshot's own is the same).
    pub meta: SnapshotMeta<NodeId, BasicNode>,
    /// The snapshot's length in bytes.
    pub len: u64,
}

/// The magic, header length and header of a body announcing `header`.
pub fn encode_prefix(header: &Header) -> Vec<u8> {
    let json = serde_json::to_vec(header).expect("a snapshot header serializes");
    let mut out = Vec::with_capacity(PREFIX_BYTES + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out
}

/// The header length in the first [`PREFIX_BYTES`] of a body, its magic and bound checked.
pub fn decode_prefix(prefix: &[u8]) -> Result<u32, TransferError> {
    let Some(prefix) = prefix.get(..PREFIX_BYTES) else {
        return Err(TransferError::Truncated {
            inside: "header length",
            got: prefix.len() as u64,
            expected: PREFIX_BYTES as u64,
        });
    };
    if &prefix[..4] != MAGIC {
        return Err(TransferError::BadMagic { found: prefix[..4].to_vec() });
    }
    let len = u32::from_le_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]);
    if len > MAX_HEADER_BYTES {
        return Err(TransferError::HeaderTooLong { len });
    }
    Ok(len)
}

/// The header in `json`.
pub fn decode_header(json: &[u8]) -> Result<Header, TransferError> {
    serde_json::from_slice(json).map_err(|e| TransferError::Header(e.to_string()))
}

/// Why a snapshot body was refused (or could not be received).
#[derive(Debug)]
pub enum TransferError {
    /// The body does not start with [`MAGIC`].
    BadMagic {
        /// Its first bytes.
        found: Vec<u8>,
    },
    /// The header length is over [`MAX_HEADER_BYTES`].
    HeaderTooLong {
        /// The stated length.
        len: u32,
    },
    /// The header is not the expected JSON.
    Header(String),
    /// The body ended (or the connection was closed) before its end: inside the prefix or
    /// header, the snapshot's bytes or the CRC.
    Truncated {
        /// Where it ended.
        inside: &'static str,
        /// Bytes of that part received.
        got: u64,
        /// Bytes of that part expected.
        expected: u64,
    },
    /// Bytes follow the CRC.
    TrailingBytes,
    /// The snapshot's bytes fail the body's CRC-32.
    CrcMismatch {
        /// The CRC at the end of the body.
        stored: u32,
        /// The CRC-32 of the bytes received.
        computed: u32,
    },
    /// No byte arrived for this long.
    Stalled {
        /// The bound that passed, in seconds.
        secs: u64,
        /// Bytes of the body received before.
        got: u64,
    },
    /// The connection failed while the body was read.
    Body(String),
    /// The body arrived whole (its CRC holds) but the snapshot in it fails a check of its own.
    Snapshot(String),
    /// Writing the received bytes to the incoming file or directory failed.
    Io(std::io::Error),
}

impl fmt::Display for TransferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused snapshot: ")?;
        match self {
            TransferError::BadMagic { found } => {
                write!(f, "it starts with {found:02x?}, not the magic {MAGIC:02x?}")
            }
            TransferError::HeaderTooLong { len } => {
                write!(f, "header length {len} is over {MAX_HEADER_BYTES}")
            }
            TransferError::Header(e) => write!(f, "the header is not snapshot JSON: {e}"),
            TransferError::Truncated { inside, got, expected } => {
                write!(f, "the body ends inside the {inside} ({got} of {expected} bytes)")
            }
            TransferError::TrailingBytes => write!(f, "bytes follow the CRC"),
            TransferError::CrcMismatch { stored, computed } => {
                write!(f, "snapshot CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")
            }
            TransferError::Stalled { secs, got } => {
                write!(f, "no byte arrived for {secs} s after {got} bytes of the body")
            }
            TransferError::Body(e) => write!(f, "reading the body failed: {e}"),
            TransferError::Snapshot(e) => write!(f, "corrupt snapshot: {e}"),
            TransferError::Io(e) => write!(f, "writing the incoming file failed: {e}"),
        }
    }
}

impl std::error::Error for TransferError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            vote: Vote::new_committed(3, 1),
            meta: SnapshotMeta {
                last_log_id: Some(openraft::testing::log_id(3, 1, 99)),
                last_membership: Default::default(),
                snapshot_id: "3-99-7".into(),
            },
            len: 5 << 30,
        }
    }

    #[test]
    fn the_prefix_round_trips_and_its_checks_refuse() {
        let bytes = encode_prefix(&header());
        let prefix = &bytes[..PREFIX_BYTES];
        let len = decode_prefix(prefix).unwrap();
        assert_eq!(len as usize, bytes.len() - PREFIX_BYTES);
        assert_eq!(decode_header(&bytes[PREFIX_BYTES..]).unwrap(), header());

        assert!(matches!(
            decode_prefix(&prefix[..7]),
            Err(TransferError::Truncated { got: 7, .. })
        ));
        let mut bad = prefix.to_vec();
        bad[0] ^= 1;
        assert!(matches!(decode_prefix(&bad), Err(TransferError::BadMagic { .. })));
        let mut long = prefix.to_vec();
        long[4..].copy_from_slice(&(MAX_HEADER_BYTES + 1).to_le_bytes());
        assert!(matches!(
            decode_prefix(&long),
            Err(TransferError::HeaderTooLong { len }) if len == MAX_HEADER_BYTES + 1
        ));
        let json = &bytes[PREFIX_BYTES..];
        assert!(matches!(decode_header(&json[..json.len() - 1]), Err(TransferError::Header(_))));
    }
}
