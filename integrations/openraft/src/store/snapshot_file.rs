//! The snapshot format: what `build_snapshot` writes, what travels to a follower, what
//! `install_snapshot` checks before it changes anything. The byte table is in README.md
//! ("Snapshot format"), the one description of it; keep the two in step.

use std::fs;
use std::io::Write;
use std::path::Path;

use openraft::SnapshotMeta;

use super::{sync_dir, StoreError};
use crate::NodeId;

/// The first 8 bytes of every snapshot.
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"SFRSNAP1";

/// The meta of a snapshot.
pub type Meta = SnapshotMeta<NodeId, openraft::BasicNode>;

/// A snapshot that passed every check.
#[derive(Debug)]
pub struct DecodedSnapshot {
    /// Its meta.
    pub meta: Meta,
    /// Its key-value pairs, keys strictly ascending.
    pub pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Encodes a snapshot of `pairs` (ascending keys) with `meta`.
pub fn encode_snapshot<'a>(
    meta: &Meta,
    pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
) -> Vec<u8> {
    let meta_json = serde_json::to_vec(meta).expect("SnapshotMeta serializes");
    let mut out = Vec::with_capacity(64 + meta_json.len());
    out.extend_from_slice(SNAPSHOT_MAGIC);
    out.extend_from_slice(&(meta_json.len() as u32).to_le_bytes());
    out.extend_from_slice(&meta_json);
    let count_at = out.len();
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut count = 0u64;
    for (k, v) in pairs {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
        count += 1;
    }
    out[count_at..count_at + 8].copy_from_slice(&count.to_le_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes and checks a snapshot: magic, CRC, lengths, meta, ascending keys. The error says
/// which check failed.
pub fn decode_snapshot(bytes: &[u8]) -> Result<DecodedSnapshot, String> {
    if bytes.len() < 8 + 4 + 8 + 4 {
        return Err(format!("{} bytes is shorter than any snapshot", bytes.len()));
    }
    if &bytes[..8] != SNAPSHOT_MAGIC {
        return Err(format!("magic is {:?}, not {:?}", &bytes[..8], SNAPSHOT_MAGIC));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    let actual = crc32fast::hash(body);
    if stored != actual {
        return Err(format!("CRC mismatch: stored {stored:#010x}, computed {actual:#010x}"));
    }
    let mut r = Reader { bytes: body, at: 8 };
    let meta_len = r.u32("meta length")? as usize;
    let meta: Meta = serde_json::from_slice(r.take(meta_len, "meta")?)
        .map_err(|e| format!("meta at byte 12 is not SnapshotMeta JSON: {e}"))?;
    let count = r.u64("pair count")?;
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for i in 0..count {
        let at = r.at;
        let klen = r.u32("key length")? as usize;
        let key = r.take(klen, "key")?.to_vec();
        let vlen = r.u32("value length")? as usize;
        let value = r.take(vlen, "value")?.to_vec();
        if pairs.last().is_some_and(|(prev, _)| *prev >= key) {
            return Err(format!("pair {i} at byte {at}: key not above the previous one"));
        }
        pairs.push((key, value));
    }
    if r.at != body.len() {
        return Err(format!("{} bytes after the last pair", body.len() - r.at));
    }
    Ok(DecodedSnapshot { meta, pairs })
}

/// Checks a snapshot received for installation: it must decode (see [`decode_snapshot`]) and
/// carry the meta it was announced with.
pub(crate) fn check_received(
    announced: &Meta,
    bytes: &[u8],
) -> Result<DecodedSnapshot, openraft::StorageError<NodeId>> {
    let refuse = |what: String| {
        let any = openraft::AnyError::error(format!("corrupt snapshot: {what}"));
        openraft::StorageIOError::read_snapshot(Some(announced.signature()), any).into()
    };
    let decoded = decode_snapshot(bytes).map_err(refuse)?;
    if decoded.meta.last_log_id != announced.last_log_id
        || decoded.meta.last_membership != announced.last_membership
    {
        return Err(refuse(format!(
            "its own meta {} differs from the announced {}",
            decoded.meta, announced
        )));
    }
    Ok(decoded)
}

/// Bounds-checked reads over the snapshot body.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!("{what} at byte {} runs {n} bytes past the end", self.at));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }
}

/// Reads and checks the snapshot file at `path`; `None` if there is none.
pub(crate) fn read_file(path: &Path) -> Result<Option<(Vec<u8>, DecodedSnapshot)>, StoreError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(StoreError::Io { what: format!("read {}", path.display()), source: e })
        }
    };
    match decode_snapshot(&bytes) {
        Ok(d) => Ok(Some((bytes, d))),
        Err(what) => Err(StoreError::CorruptSnapshot { path: path.to_path_buf(), what }),
    }
}

/// Checks the snapshot file at `path`, in either format (the streamed one in bounded memory),
/// and returns its meta; `None` if there is none.
pub(crate) fn check_any(path: &Path) -> Result<Option<Meta>, StoreError> {
    use super::snapshot_stream::{self, Bad};
    use std::io::Read;
    let io =
        |e: std::io::Error| StoreError::Io { what: format!("read {}", path.display()), source: e };
    let corrupt = |what: String| StoreError::CorruptSnapshot { path: path.to_path_buf(), what };
    let bad = |b: Bad| match b {
        Bad::Corrupt(what) => corrupt(what),
        Bad::Io(e) => io(e),
    };
    // A pointer: the tables directory it names, header and every table checked.
    if let Some(name) = super::snapshot_dir::pointed_dir(path).map_err(bad)? {
        let dir = path.parent().expect("the snapshot file is inside the node directory").join(name);
        let header = super::snapshot_dir::read_header(&dir).map_err(bad)?;
        super::snapshot_dir::check_tables(&dir, &header).map_err(bad)?;
        return Ok(Some(header.meta));
    }
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut r = std::io::BufReader::with_capacity(64 << 10, file);
    let mut magic = [0u8; 8];
    match r.read_exact(&mut magic) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(corrupt("shorter than its magic".into()))
        }
        Err(e) => return Err(io(e)),
    }
    if &magic != snapshot_stream::STREAM_MAGIC {
        return read_file(path).map(|d| d.map(|(_, d)| d.meta));
    }
    let header = snapshot_stream::read_header_after_magic(&mut r).map_err(bad)?;
    snapshot_stream::unpack(&mut r, &header, None, &mut |_| Ok(())).map_err(bad)?;
    Ok(Some(header.meta))
}

/// Replaces the snapshot file at `path` with `bytes` durably: a temporary file, fsync, rename,
/// fsync of the directory.
#[cfg_attr(not(feature = "rocksdb-peer"), allow(dead_code))]
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    fs::rename(&tmp, path)?;
    sync_dir(path.parent().expect("the snapshot file is inside the node directory"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A snapshot meta for the format tests of this module and its neighbours.
    pub(crate) fn meta() -> Meta {
        Meta {
            last_log_id: Some(openraft::testing::log_id(2, 1, 7)),
            last_membership: Default::default(),
            snapshot_id: "2-7-1".into(),
        }
    }

    #[test]
    fn round_trip_and_every_flipped_byte_is_refused() {
        let pairs: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"b", b""), (b"c", b"333")];
        let bytes = encode_snapshot(&meta(), pairs.iter().copied());
        let d = decode_snapshot(&bytes).unwrap();
        assert_eq!(d.meta, meta());
        let got: Vec<(&[u8], &[u8])> = d.pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        assert_eq!(got, pairs);
        // CRC-32 detects every single-bit error, so every flip must be refused.
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_snapshot(&bad).is_err(), "flip of bit {bit} of byte {i} accepted");
            }
        }
        for n in 0..bytes.len() {
            assert!(decode_snapshot(&bytes[..n]).is_err(), "truncation to {n} accepted");
        }
    }

    #[test]
    fn unsorted_keys_are_refused_even_with_a_good_crc() {
        let pairs: Vec<(&[u8], &[u8])> = vec![(b"b", b"1"), (b"a", b"2")];
        let bytes = encode_snapshot(&meta(), pairs);
        assert!(decode_snapshot(&bytes).unwrap_err().contains("not above"));
    }
}
