//! The streamed snapshot format (`SFRSNAP2`): a header (meta, then each table's length and
//! CRC-32) followed by the tables `build_snapshot` exported, concatenated. Written, sent and
//! unpacked in bounded buffers, never whole. The byte table is in docs/snapshots.md, the one
//! description of it; keep the two in step. The older in-memory format (`SFRSNAP1`,
//! snapshot_file.rs) is still read.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::direct_writer::DirectWriter;
use super::snapshot_file::Meta;

/// The first 8 bytes of a streamed snapshot.
pub const STREAM_MAGIC: &[u8; 8] = b"SFRSNAP2";

/// Bytes copied at a time while writing, checking or unpacking a snapshot.
const COPY_BUF: usize = 1 << 20;
/// Bounds on the header's counts, checked before its CRC can be (so a corrupt length cannot
/// make the reader allocate without limit).
const MAX_META_BYTES: u32 = 16 << 20;
const MAX_FILES: u32 = 1 << 20;

/// Why a snapshot could not be read or unpacked.
#[derive(Debug)]
pub(crate) enum Bad {
    /// The bytes fail a check (the text names it).
    Corrupt(String),
    /// A file-system call failed.
    Io(io::Error),
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Corrupt(what) => write!(f, "corrupt snapshot: {what}"),
            Bad::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for Bad {
    fn from(e: io::Error) -> Bad {
        Bad::Io(e)
    }
}

/// A checked header.
#[derive(Debug)]
pub(crate) struct Header {
    /// The snapshot's meta.
    pub meta: Meta,
    /// Each table's length and CRC-32, in order.
    pub files: Vec<(u64, u32)>,
    /// The header's bytes as read, from the magic through its CRC.
    pub raw: Vec<u8>,
}

impl Header {
    /// The length of the whole stream: this header and its tables.
    pub(crate) fn stream_len(&self) -> u64 {
        self.raw.len() as u64 + self.files.iter().map(|&(len, _)| len).sum::<u64>()
    }
}

/// The header of a stream holding tables with these `(length, CRC-32)`, from its magic through
/// its CRC.
pub(crate) fn encode_header(meta: &Meta, files: &[(u64, u32)]) -> Vec<u8> {
    let meta_json = serde_json::to_vec(meta).expect("SnapshotMeta serializes");
    let mut header = Vec::with_capacity(24 + meta_json.len() + 12 * files.len());
    header.extend_from_slice(STREAM_MAGIC);
    header.extend_from_slice(&(meta_json.len() as u32).to_le_bytes());
    header.extend_from_slice(&meta_json);
    header.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for &(len, crc) in files {
        header.extend_from_slice(&len.to_le_bytes());
        header.extend_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32fast::hash(&header);
    header.extend_from_slice(&crc.to_le_bytes());
    header
}

fn read_exact(r: &mut impl Read, n: usize, what: &str) -> Result<Vec<u8>, Bad> {
    let mut v = vec![0u8; n];
    match r.read_exact(&mut v) {
        Ok(()) => Ok(v),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Err(Bad::Corrupt(format!("it ends inside the {what}")))
        }
        Err(e) => Err(Bad::Io(e)),
    }
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_le_bytes(a)
}

/// Reads and checks the header of a container whose 8-byte magic was already read (and was
/// [`STREAM_MAGIC`]).
pub(crate) fn read_header_after_magic(r: &mut impl Read) -> Result<Header, Bad> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(STREAM_MAGIC);
    let b = read_exact(r, 4, "meta length")?;
    crc.update(&b);
    let meta_len = le_u32(&b);
    if meta_len > MAX_META_BYTES {
        return Err(Bad::Corrupt(format!("meta length {meta_len} is over {MAX_META_BYTES}")));
    }
    let meta_bytes = read_exact(r, meta_len as usize, "meta")?;
    crc.update(&meta_bytes);
    let b = read_exact(r, 4, "file count")?;
    crc.update(&b);
    let count = le_u32(&b);
    if count > MAX_FILES {
        return Err(Bad::Corrupt(format!("file count {count} is over {MAX_FILES}")));
    }
    let table = read_exact(r, count as usize * 12, "file table")?;
    crc.update(&table);
    let stored_bytes = read_exact(r, 4, "header CRC")?;
    let stored = le_u32(&stored_bytes);
    let computed = crc.finalize();
    if stored != computed {
        return Err(Bad::Corrupt(format!(
            "header CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
        )));
    }
    let meta: Meta = serde_json::from_slice(&meta_bytes)
        .map_err(|e| Bad::Corrupt(format!("meta at byte 12 is not SnapshotMeta JSON: {e}")))?;
    let files = table.chunks_exact(12).map(|c| (le_u64(&c[..8]), le_u32(&c[8..]))).collect();
    let mut raw = Vec::with_capacity(24 + meta_bytes.len() + table.len());
    raw.extend_from_slice(STREAM_MAGIC);
    raw.extend_from_slice(&meta_len.to_le_bytes());
    raw.extend_from_slice(&meta_bytes);
    raw.extend_from_slice(&count.to_le_bytes());
    raw.extend_from_slice(&table);
    raw.extend_from_slice(&stored_bytes);
    Ok(Header { meta, files, raw })
}

/// Reads the tables that follow `header` from `r`, checking each one's length and CRC and that
/// nothing follows the last; with `dest`, writes them there as `000001.sst`, `000002.sst`, ...
/// (new files, handed to `done` once written and checked, which may sync them) and returns
/// their paths.
pub(crate) fn unpack(
    r: &mut impl Read,
    header: &Header,
    dest: Option<&Path>,
    done: &mut dyn FnMut(fs::File) -> io::Result<()>,
) -> Result<Vec<PathBuf>, Bad> {
    let mut buf = vec![0u8; COPY_BUF];
    let mut out = Vec::new();
    for (i, &(len, want)) in header.files.iter().enumerate() {
        let mut sink = match dest {
            Some(d) => {
                let p = super::snapshot_dir::table_path(d, i);
                let w = DirectWriter::create_new(&p, COPY_BUF)?;
                out.push(p);
                Some(w)
            }
            None => None,
        };
        let (mut left, mut crc) = (len, crc32fast::Hasher::new());
        while left > 0 {
            let want_n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = r.read(&mut buf[..want_n])?;
            if n == 0 {
                return Err(Bad::Corrupt(format!(
                    "it ends {left} bytes before the end of file {} of {}",
                    i + 1,
                    header.files.len()
                )));
            }
            crc.update(&buf[..n]);
            if let Some(s) = sink.as_mut() {
                s.write_all(&buf[..n])?;
            }
            left -= n as u64;
        }
        let got = crc.finalize();
        if got != want {
            return Err(Bad::Corrupt(format!(
                "CRC mismatch in file {} of {}: stored {want:#010x}, computed {got:#010x}",
                i + 1,
                header.files.len()
            )));
        }
        if let Some(s) = sink {
            done(s.finish()?)?;
        }
    }
    let mut extra = [0u8; 1];
    if r.read(&mut extra)? != 0 {
        return Err(Bad::Corrupt("bytes follow the last file".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::snapshot_file::tests::meta;

    fn check(bytes: &[u8]) -> Result<Header, Bad> {
        let mut r = bytes;
        let magic = read_exact(&mut r, 8, "magic")?;
        if magic != STREAM_MAGIC {
            return Err(Bad::Corrupt("magic".into()));
        }
        let h = read_header_after_magic(&mut r)?;
        unpack(&mut r, &h, None, &mut |_| Ok(()))?;
        Ok(h)
    }

    #[test]
    fn round_trip_and_every_flipped_bit_and_truncation_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = b"first table bytes".to_vec();
        let b = vec![7u8; 3000];
        let files = [(a.len() as u64, crc32fast::hash(&a)), (b.len() as u64, crc32fast::hash(&b))];
        let mut bytes = encode_header(&meta(), &files);
        bytes.extend_from_slice(&a);
        bytes.extend_from_slice(&b);
        let h = check(&bytes).unwrap();
        assert_eq!(h.meta, meta());
        assert_eq!(h.files.len(), 2);
        let unpacked = dir.path().join("un");
        fs::create_dir(&unpacked).unwrap();
        let mut r = &bytes[8..];
        let h = read_header_after_magic(&mut r).unwrap();
        let mut synced = 0;
        let paths = unpack(&mut r, &h, Some(&unpacked), &mut |_| {
            synced += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((fs::read(&paths[0]).unwrap(), fs::read(&paths[1]).unwrap()), (a, b));
        assert_eq!(synced, 2);
        assert_eq!(h.stream_len(), bytes.len() as u64);
        // CRC-32 detects every single-bit error: in the header (its CRC), in a table (its own).
        for i in 8..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(check(&bad).is_err(), "flip of bit {bit} of byte {i} accepted");
            }
        }
        for n in 0..bytes.len() {
            assert!(check(&bytes[..n]).is_err(), "truncation to {n} accepted");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(check(&longer).unwrap_err().to_string().contains("follow the last file"));
    }
}
