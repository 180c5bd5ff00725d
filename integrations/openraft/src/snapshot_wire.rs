//! The body of a `POST /raft/snapshot`: one chunk of openraft's chunked `install_snapshot` RPC
//! with the chunk's bytes as they are (not a JSON array of numbers: that cost about 3.5 wire bytes
//! and a parse per snapshot byte). All integers little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `SRC1` |
//! | 4 | header length H (at most [`MAX_HEADER_BYTES`]) |
//! | H | the header as JSON: `vote`, `meta`, `offset`, `done` of the request, and the chunk's `len` and `crc32` (CRC-32 of its bytes, crc32fast) |
//! | len | the chunk's bytes |
//!
//! The body ends exactly after the chunk. [`decode`] checks every field before the request
//! reaches openraft, so a truncated or corrupted chunk is refused with a [`ChunkError`] and never
//! written into the receiving node's incoming file.

use std::fmt;

use openraft::raft::InstallSnapshotRequest;
use openraft::{BasicNode, SnapshotMeta, Vote};
use serde::{Deserialize, Serialize};

use crate::{NodeId, TypeConfig};

/// The first 4 bytes of a chunk body.
pub const MAGIC: &[u8; 4] = b"SRC1";
/// The largest header accepted (it holds the snapshot's membership, a few hundred bytes).
pub const MAX_HEADER_BYTES: u32 = 1 << 20;
/// The `Content-Type` of a chunk body.
pub const CONTENT_TYPE: &str = "application/x-siftdb-snapshot-chunk";

#[derive(Serialize, Deserialize)]
struct Header {
    vote: Vote<NodeId>,
    meta: SnapshotMeta<NodeId, BasicNode>,
    offset: u64,
    done: bool,
    len: u64,
    crc32: u32,
}

/// Why a chunk body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkError {
    /// The body is shorter than the magic and the header length.
    TooShort {
        /// The body's length.
        len: usize,
    },
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
    /// The body ends inside the header.
    HeaderTruncated {
        /// The stated header length.
        header_len: u32,
        /// The bytes that follow the header length.
        have: usize,
    },
    /// The header is not the expected JSON.
    Header(String),
    /// The chunk's bytes are not as many as the header says (a truncated or extended body).
    LengthMismatch {
        /// The header's `len`.
        announced: u64,
        /// The bytes that follow the header.
        got: u64,
    },
    /// The chunk's bytes fail the header's CRC-32.
    CrcMismatch {
        /// The header's `crc32`.
        stored: u32,
        /// The CRC-32 of the bytes received.
        computed: u32,
    },
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused snapshot chunk: ")?;
        match self {
            ChunkError::TooShort { len } => write!(f, "a body of {len} bytes has no header"),
            ChunkError::BadMagic { found } => {
                write!(f, "it starts with {found:02x?}, not the magic {MAGIC:02x?}")
            }
            ChunkError::HeaderTooLong { len } => {
                write!(f, "header length {len} is over {MAX_HEADER_BYTES}")
            }
            ChunkError::HeaderTruncated { header_len, have } => {
                write!(f, "the body ends inside the header ({have} of {header_len} bytes)")
            }
            ChunkError::Header(e) => write!(f, "the header is not chunk JSON: {e}"),
            ChunkError::LengthMismatch { announced, got } => {
                write!(f, "the header announces {announced} chunk bytes, the body has {got}")
            }
            ChunkError::CrcMismatch { stored, computed } => {
                write!(f, "chunk CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")
            }
        }
    }
}

impl std::error::Error for ChunkError {}

/// The body carrying `req`.
pub fn encode(req: &InstallSnapshotRequest<TypeConfig>) -> Vec<u8> {
    let header = Header {
        vote: req.vote,
        meta: req.meta.clone(),
        offset: req.offset,
        done: req.done,
        len: req.data.len() as u64,
        crc32: crc32fast::hash(&req.data),
    };
    let json = serde_json::to_vec(&header).expect("a chunk header serializes");
    let mut body = Vec::with_capacity(8 + json.len() + req.data.len());
    body.extend_from_slice(MAGIC);
    body.extend_from_slice(&(json.len() as u32).to_le_bytes());
    body.extend_from_slice(&json);
    body.extend_from_slice(&req.data);
    body
}

/// The request in `body`, every field checked.
pub fn decode(body: &[u8]) -> Result<InstallSnapshotRequest<TypeConfig>, ChunkError> {
    let (Some(magic), Some(len_bytes)) = (body.get(..4), body.get(4..8)) else {
        return Err(ChunkError::TooShort { len: body.len() });
    };
    if magic != MAGIC {
        return Err(ChunkError::BadMagic { found: magic.to_vec() });
    }
    let mut n = [0u8; 4];
    n.copy_from_slice(len_bytes);
    let header_len = u32::from_le_bytes(n);
    if header_len > MAX_HEADER_BYTES {
        return Err(ChunkError::HeaderTooLong { len: header_len });
    }
    let rest = body.get(8..).unwrap_or_default();
    let (Some(json), Some(data)) =
        (rest.get(..header_len as usize), rest.get(header_len as usize..))
    else {
        return Err(ChunkError::HeaderTruncated { header_len, have: rest.len() });
    };
    let header: Header =
        serde_json::from_slice(json).map_err(|e| ChunkError::Header(e.to_string()))?;
    if header.len != data.len() as u64 {
        return Err(ChunkError::LengthMismatch { announced: header.len, got: data.len() as u64 });
    }
    let computed = crc32fast::hash(data);
    if computed != header.crc32 {
        return Err(ChunkError::CrcMismatch { stored: header.crc32, computed });
    }
    Ok(InstallSnapshotRequest {
        vote: header.vote,
        meta: header.meta,
        offset: header.offset,
        data: data.to_vec(),
        done: header.done,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(data: Vec<u8>) -> InstallSnapshotRequest<TypeConfig> {
        InstallSnapshotRequest {
            vote: Vote::new_committed(3, 1),
            meta: SnapshotMeta {
                last_log_id: Some(openraft::testing::log_id(3, 1, 99)),
                last_membership: Default::default(),
                snapshot_id: "3-99-7".into(),
            },
            offset: 1 << 20,
            data,
            done: false,
        }
    }

    #[test]
    fn round_trip_and_every_flipped_bit_and_truncation_is_refused() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        let req = request(data.clone());
        let body = encode(&req);
        let got = decode(&body).unwrap();
        assert_eq!(
            (got.vote, &got.meta, got.offset, got.done),
            (req.vote, &req.meta, req.offset, req.done)
        );
        assert_eq!(got.data, data);
        // The body is the chunk plus a small header, not a JSON array of numbers.
        assert!(body.len() < data.len() + 400, "{} bytes", body.len());
        // A flipped bit anywhere is refused or (inside the JSON header, where it may still
        // parse) changes nothing of the chunk's bytes unnoticed: CRC-32 detects every
        // single-bit error in the chunk, and the magic and lengths are checked.
        let header_end = body.len() - data.len();
        for i in 0..body.len() {
            for bit in 0..8 {
                let mut bad = body.clone();
                bad[i] ^= 1 << bit;
                match decode(&bad) {
                    Err(_) => {}
                    Ok(r) => {
                        assert!((8..header_end).contains(&i), "flip of bit {bit} of byte {i}");
                        assert_eq!(r.data, data);
                    }
                }
            }
        }
        for n in 0..body.len() {
            assert!(decode(&body[..n]).is_err(), "truncation to {n} accepted");
        }
        let mut longer = body.clone();
        longer.push(0);
        assert_eq!(
            decode(&longer).unwrap_err(),
            ChunkError::LengthMismatch { announced: 3000, got: 3001 }
        );
    }

    #[test]
    fn a_header_length_over_the_bound_is_refused_before_reading_it() {
        let mut body = encode(&request(vec![1, 2, 3]));
        body[4..8].copy_from_slice(&(MAX_HEADER_BYTES + 1).to_le_bytes());
        assert_eq!(
            decode(&body).unwrap_err(),
            ChunkError::HeaderTooLong { len: MAX_HEADER_BYTES + 1 }
        );
    }
}
