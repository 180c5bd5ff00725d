//! Blob files: large values kept apart from the SSTs (key-value separation,
//! design.md#key-value-separation; byte tables in docs/format.md#blob-file).
//!
//! ```text
//! blob_file := header record* footer
//! header    := magic:u64 "SIFTBLOB" version:u32 (1) keyspace:u32                  16 bytes
//! record    := header_crc:u32 key_len:u32 value_len:u32 key value value_crc:u32
//! footer    := count:u64 value_bytes:u64 crc:u32 magic:u64 "SIFTBEND"              28 bytes
//! reference := file_number:varint64 offset:varint64 size:varint64 compression:u8
//! ```
//!
//! `header_crc` covers `key_len`, `value_len` and the key; `value_crc` covers the value (a read
//! by reference reads the value and its CRC only: `size + 4` bytes at `offset`). The footer's
//! `crc` covers `count` and `value_bytes`. A reference's `compression` is 0 (stored as is);
//! any other value is corruption (reserved for compressed blobs).
//!
//! A flush writes a blob file per keyspace it separates values of; a compaction writes one per
//! output range when it relocates values (garbage collection) or separates values it inlined.
//! Every file is synced, and the directory, before the manifest edit that names it.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::cache::EntryKind;
use crate::coding::{get_varint64, put_varint64};
use crate::error::{Error, Result};
use crate::sst::BlockCache;
use crate::storage::{RandomAccessFile, Storage, WritableFile};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Magic number at the start of a blob file (`"SIFTBLOB"` as bytes).
pub const HEADER_MAGIC: [u8; 8] = *b"SIFTBLOB";
/// Magic number at the end of a blob file (`"SIFTBEND"` as bytes).
pub const FOOTER_MAGIC: [u8; 8] = *b"SIFTBEND";
/// The blob file format version this build writes and reads.
pub const BLOB_VERSION: u32 = 1;
/// Bytes of the header.
pub const HEADER_LEN: usize = 16;
/// Bytes of the footer.
pub const FOOTER_LEN: usize = 28;

/// Where a separated value lives: the SST entry of kind `BlobIndex` holds this, encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobRef {
    /// The blob file's number (`NNNNNN.blob`).
    pub file: u64,
    /// Offset of the value's first byte in the file.
    pub offset: u64,
    /// Bytes of the stored value.
    pub size: u64,
    /// 0: stored as is (the only value written).
    pub compression: u8,
}

impl BlobRef {
    /// Appends the encoding (module documentation) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.file);
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
        out.push(self.compression);
    }

    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        self.encode_into(&mut out);
        out
    }

    /// Decodes a reference, consumed exactly; anything else is corruption.
    pub fn decode(bytes: &[u8]) -> Result<BlobRef> {
        let mut pos = 0;
        let file = get_varint64(bytes, &mut pos, "blob reference file number")?;
        let offset = get_varint64(bytes, &mut pos, "blob reference offset")?;
        let size = get_varint64(bytes, &mut pos, "blob reference size")?;
        let compression = match bytes.get(pos..) {
            Some([c]) => *c,
            _ => {
                let msg = format!("blob reference of {} bytes is malformed", bytes.len());
                return Err(Error::corruption(msg, Some(pos as u64)));
            }
        };
        if compression != 0 {
            let msg = format!("blob reference compression {compression} is unknown");
            return Err(Error::corruption(msg, Some(pos as u64)));
        }
        if offset < HEADER_LEN as u64 || size > crate::batch::MAX_VALUE_SIZE as u64 {
            let msg = format!("blob reference offset {offset} size {size} is out of range");
            return Err(Error::corruption(msg, Some(0)));
        }
        Ok(BlobRef { file, offset, size, compression })
    }
}

/// One blob file as the manifest records it, with its garbage so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlobMeta {
    /// File number.
    pub number: u64,
    /// The keyspace whose values it holds.
    pub keyspace: u32,
    /// Values written.
    pub count: u64,
    /// Bytes of the values written (the sum of their references' sizes).
    pub bytes: u64,
    /// Values no SST refers to any more.
    pub garbage_count: u64,
    /// Their bytes.
    pub garbage_bytes: u64,
}

impl BlobMeta {
    /// Whether every value is garbage: the file is obsolete.
    pub fn all_garbage(&self) -> bool {
        self.garbage_count >= self.count
    }

    /// Live bytes (values some SST still refers to).
    pub fn live_bytes(&self) -> u64 {
        self.bytes.saturating_sub(self.garbage_bytes)
    }
}

/// Writes one blob file.
pub struct BlobWriter {
    file: Box<dyn WritableFile>,
    number: u64,
    keyspace: u32,
    count: u64,
    bytes: u64,
    buf: Vec<u8>,
}

impl BlobWriter {
    /// Creates blob file `number` of `keyspace` in `dir` and writes its header.
    pub fn create(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        keyspace: u32,
    ) -> Result<BlobWriter> {
        let path = dir.join(crate::filename::blob_name(number));
        let mut file = storage.create_immutable(&path)?;
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(&HEADER_MAGIC);
        header.extend_from_slice(&BLOB_VERSION.to_le_bytes());
        header.extend_from_slice(&keyspace.to_le_bytes());
        file.append(&header)?;
        Ok(BlobWriter { file, number, keyspace, count: 0, bytes: 0, buf: Vec::new() })
    }

    /// Appends `value` of `user_key` and returns its reference.
    pub fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<BlobRef> {
        let b = &mut self.buf;
        b.clear();
        let lens = [(user_key.len() as u32).to_le_bytes(), (value.len() as u32).to_le_bytes()];
        let mut h = crc32fast::Hasher::new();
        h.update(&lens[0]);
        h.update(&lens[1]);
        h.update(user_key);
        b.extend_from_slice(&h.finalize().to_le_bytes());
        b.extend_from_slice(&lens[0]);
        b.extend_from_slice(&lens[1]);
        b.extend_from_slice(user_key);
        let offset = self.file.len() + b.len() as u64;
        b.extend_from_slice(value);
        b.extend_from_slice(&crc32fast::hash(value).to_le_bytes());
        self.file.append(b)?;
        self.count += 1;
        self.bytes += value.len() as u64;
        Ok(BlobRef { file: self.number, offset, size: value.len() as u64, compression: 0 })
    }

    /// Writes the footer and syncs the file; returns its record (no garbage yet) and its size.
    pub fn finish(mut self) -> Result<(BlobMeta, u64)> {
        let mut f = Vec::with_capacity(FOOTER_LEN);
        f.extend_from_slice(&self.count.to_le_bytes());
        f.extend_from_slice(&self.bytes.to_le_bytes());
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_le_bytes());
        f.extend_from_slice(&FOOTER_MAGIC);
        self.file.append(&f)?;
        if crate::testing::enabled("blob.sync") {
            self.file.sync()?;
        }
        self.file.close()?;
        let size = self.file.len();
        let meta = BlobMeta {
            number: self.number,
            keyspace: self.keyspace,
            count: self.count,
            bytes: self.bytes,
            ..BlobMeta::default()
        };
        Ok((meta, size))
    }
}

/// Reads values by reference, through the block cache, opening blob files on demand.
pub struct BlobStore {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    cache: Option<Arc<BlockCache>>,
    open: Mutex<HashMap<u64, Arc<dyn RandomAccessFile>>>,
}

impl std::fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStore").field("dir", &self.dir).finish()
    }
}

impl BlobStore {
    /// A store over the blob files of `dir`.
    pub fn new(
        storage: Arc<dyn Storage>,
        dir: PathBuf,
        cache: Option<Arc<BlockCache>>,
    ) -> BlobStore {
        let cache = cache.filter(|c| c.is_enabled());
        BlobStore { storage, dir, cache, open: Mutex::new(HashMap::new()) }
    }

    fn path(&self, number: u64) -> PathBuf {
        self.dir.join(crate::filename::blob_name(number))
    }

    fn file(&self, number: u64) -> Result<Arc<dyn RandomAccessFile>> {
        if let Some(f) = self.open.lock().get(&number) {
            return Ok(f.clone());
        }
        let path = self.path(number);
        let f = self.storage.open_immutable(&path).map_err(|e| match e {
            Error::Io { ref source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::Corruption {
                    file: Some(path.clone()),
                    offset: None,
                    what: format!("blob file is missing: {e}"),
                }
            }
            e => e,
        })?;
        self.open.lock().insert(number, f.clone());
        Ok(f)
    }

    /// Forgets blob file `number` (deleted): its handle and cached values.
    pub fn evict(&self, number: u64) {
        self.open.lock().remove(&number);
        if let Some(c) = &self.cache {
            c.erase_file(number);
        }
    }

    /// The value `r` refers to, its CRC verified. A missing file, a read past its end or a CRC
    /// mismatch is [`Error::Corruption`] naming the file.
    pub fn get(&self, r: &BlobRef) -> Result<Vec<u8>> {
        if let Some(c) = &self.cache {
            if let Some(v) = c.get_kind::<Vec<u8>>(r.file, r.offset, EntryKind::Data) {
                return Ok(v.as_ref().clone());
            }
        }
        let value = self.read(r)?;
        if let Some(c) = &self.cache {
            let charge = value.capacity() + std::mem::size_of::<Vec<u8>>() + 16;
            c.insert_kind(r.file, r.offset, Arc::new(value.clone()), charge, EntryKind::Data);
        }
        Ok(value)
    }

    fn read(&self, r: &BlobRef) -> Result<Vec<u8>> {
        let path = self.path(r.file);
        let corrupt = |what: String| Error::Corruption {
            file: Some(path.clone()),
            offset: Some(r.offset),
            what,
        };
        let f = self.file(r.file)?;
        let end = r.offset.checked_add(r.size + 4);
        if end.is_none_or(|e| e > f.len().saturating_sub(FOOTER_LEN as u64)) {
            return Err(corrupt(format!(
                "blob value of {} bytes at offset {} runs past the records (file of {} bytes)",
                r.size,
                r.offset,
                f.len()
            )));
        }
        let mut buf = vec![0u8; r.size as usize + 4];
        f.read_exact_at(r.offset, &mut buf).map_err(|e| e.in_file(&path, r.offset))?;
        let (value, crc) = buf.split_at(r.size as usize);
        let stored = u32::from_le_bytes(crc.try_into().map_err(|_| corrupt("crc".into()))?);
        if crc32fast::hash(value) != stored {
            return Err(corrupt("blob value checksum mismatch".into()));
        }
        buf.truncate(r.size as usize);
        Ok(buf)
    }
}

/// One record of a blob file, as [`scan`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRecord {
    /// The user key the value was written for.
    pub key: Vec<u8>,
    /// The value's reference.
    pub reference: BlobRef,
}

/// What [`scan`] found in a whole blob file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFileSummary {
    /// The header's keyspace.
    pub keyspace: u32,
    /// Every record, in file order.
    pub records: Vec<BlobRecord>,
    /// The footer's value count.
    pub count: u64,
    /// The footer's value bytes.
    pub bytes: u64,
}

/// Decodes and verifies a whole blob file `bytes` (file number `number`): header, every record
/// with both CRCs, footer. Used by the dump tool, the fuzz target and the tests; any violation
/// is [`Error::Corruption`] with the offset.
pub fn scan(number: u64, bytes: &[u8]) -> Result<BlobFileSummary> {
    let bad = |what: String, at: usize| Error::corruption(what, Some(at as u64));
    if bytes.len() < HEADER_LEN + FOOTER_LEN {
        return Err(bad(format!("blob file of {} bytes is too short", bytes.len()), 0));
    }
    let (head, rest) = bytes.split_at(HEADER_LEN);
    let (body, foot) = rest.split_at(rest.len() - FOOTER_LEN);
    let u32_at = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let u64_at = |b: &[u8], at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
    };
    if head.get(..8) != Some(&HEADER_MAGIC[..]) {
        return Err(bad("blob file header magic mismatch".into(), 0));
    }
    let version = u32_at(head, 8).unwrap_or(0);
    if version != BLOB_VERSION {
        return Err(bad(format!("blob file version {version} is unknown"), 8));
    }
    let keyspace = u32_at(head, 12).unwrap_or(0);
    let foot_at = bytes.len() - FOOTER_LEN;
    if foot.get(20..28) != Some(&FOOTER_MAGIC[..]) {
        return Err(bad("blob file footer magic mismatch".into(), foot_at + 20));
    }
    let count = u64_at(foot, 0).unwrap_or(0);
    let total = u64_at(foot, 8).unwrap_or(0);
    let crc = u32_at(foot, 16).unwrap_or(0);
    if crc32fast::hash(foot.get(..16).unwrap_or_default()) != crc {
        return Err(bad("blob file footer checksum mismatch".into(), foot_at + 16));
    }
    let mut records = Vec::new();
    let mut pos = 0usize;
    let mut sum = 0u64;
    while pos < body.len() {
        let at = HEADER_LEN + pos;
        let (Some(hcrc), Some(klen), Some(vlen)) =
            (u32_at(body, pos), u32_at(body, pos + 4), u32_at(body, pos + 8))
        else {
            return Err(bad("blob record header is truncated".into(), at));
        };
        let (klen, vlen) = (klen as usize, vlen as usize);
        let key_at = pos + 12;
        let Some(key) = body.get(key_at..key_at.saturating_add(klen)) else {
            return Err(bad("blob record key is truncated".into(), at));
        };
        let mut h = crc32fast::Hasher::new();
        h.update(body.get(pos + 4..pos + 12).unwrap_or_default());
        h.update(key);
        if h.finalize() != hcrc {
            return Err(bad("blob record header checksum mismatch".into(), at));
        }
        let value_at = key_at + klen;
        let Some(value) = body.get(value_at..value_at.saturating_add(vlen)) else {
            return Err(bad("blob record value is truncated".into(), HEADER_LEN + value_at));
        };
        let Some(vcrc) = u32_at(body, value_at + vlen) else {
            return Err(bad("blob record checksum is truncated".into(), HEADER_LEN + value_at));
        };
        if crc32fast::hash(value) != vcrc {
            return Err(bad("blob value checksum mismatch".into(), HEADER_LEN + value_at));
        }
        records.push(BlobRecord {
            key: key.to_vec(),
            reference: BlobRef {
                file: number,
                offset: (HEADER_LEN + value_at) as u64,
                size: vlen as u64,
                compression: 0,
            },
        });
        sum += vlen as u64;
        pos = value_at + vlen + 4;
    }
    if records.len() as u64 != count || sum != total {
        let msg = format!(
            "blob file footer says {count} values of {total} bytes, the records hold {} of {sum}",
            records.len()
        );
        return Err(bad(msg, foot_at));
    }
    Ok(BlobFileSummary { keyspace, records, count, bytes: total })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;

    #[test]
    fn write_read_and_scan_round_trip_and_corruption_is_detected() {
        let storage: Arc<dyn Storage> = Arc::new(MemStorage::new());
        let dir = PathBuf::from("/db");
        storage.create_dir_all(&dir).unwrap();
        let mut w = BlobWriter::create(&*storage, &dir, 7, 3).unwrap();
        let a = w.add(b"k1", &[1u8; 100]).unwrap();
        let b = w.add(b"key2", b"").unwrap();
        let c = w.add(b"k3", &[9u8; 5000]).unwrap();
        let (meta, size) = w.finish().unwrap();
        assert_eq!((meta.count, meta.bytes, meta.keyspace), (3, 5100, 3));
        let store = BlobStore::new(storage.clone(), dir.clone(), None);
        assert_eq!(store.get(&a).unwrap(), vec![1u8; 100]);
        assert_eq!(store.get(&b).unwrap(), Vec::<u8>::new());
        assert_eq!(store.get(&BlobRef::decode(&c.encode()).unwrap()).unwrap(), vec![9u8; 5000]);
        let bytes = storage.read_all(&dir.join("000007.blob")).unwrap();
        assert_eq!(bytes.len() as u64, size);
        let s = scan(7, &bytes).unwrap();
        let refs: Vec<BlobRef> = s.records.iter().map(|r| r.reference).collect();
        assert_eq!(refs, vec![a, b, c]);
        // A flipped byte in a value: scan and the read by reference both report it.
        let mut bad = bytes.clone();
        bad[a.offset as usize + 10] ^= 1;
        assert!(scan(7, &bad).unwrap_err().is_corruption());
        let mut f = storage.create(&dir.join("000007.blob")).unwrap();
        f.append(&bad).unwrap();
        f.sync().unwrap();
        let store = BlobStore::new(storage.clone(), dir.clone(), None);
        let e = store.get(&a).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("000007.blob"), "{e}");
        // A reference past the end, and to a missing file.
        let past = BlobRef { offset: size, ..a };
        assert!(store.get(&past).unwrap_err().is_corruption());
        let missing = BlobRef { file: 8, ..a };
        assert!(store.get(&missing).unwrap_err().to_string().contains("000008.blob"));
        // Every truncation of the file is refused by scan, never a panic.
        for n in 0..bytes.len() {
            assert!(scan(7, &bytes[..n]).is_err());
        }
    }

    #[test]
    fn references_round_trip_and_malformed_ones_are_corruption() {
        let r = BlobRef { file: 123_456, offset: 16, size: 4096, compression: 0 };
        assert_eq!(BlobRef::decode(&r.encode()).unwrap(), r);
        let mut e = r.encode();
        e.push(0);
        assert!(BlobRef::decode(&e).unwrap_err().is_corruption());
        let mut c = r.encode();
        *c.last_mut().unwrap() = 1;
        assert!(BlobRef::decode(&c).unwrap_err().is_corruption());
        for n in 0..r.encode().len() {
            assert!(BlobRef::decode(&r.encode()[..n]).is_err());
        }
    }
}
