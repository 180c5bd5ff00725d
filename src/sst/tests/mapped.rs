//! The borrowed-bytes read path ([`RandomAccessFile::as_bytes`], a memory-mapped SST) gives the
//! same answers as the `pread` path and the same typed errors on damaged files.

use super::*;
use crate::filter::hash_key;
use crate::sst::{Compression, GetResult, ReadCounters};
use crate::storage::{FsStorage, Storage};

/// A file that exposes its bytes, as a mapped file does. `len` may overstate the bytes to
/// model a map shorter than the length reported at open.
struct SliceFile {
    bytes: Vec<u8>,
    len: u64,
}

impl RandomAccessFile for SliceFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= self.bytes.len() as u64);
        let Some(end) = end else {
            return Err(Error::corruption("read past the end of the file", Some(offset)));
        };
        buf.copy_from_slice(&self.bytes[offset as usize..end as usize]);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn as_bytes(&self) -> Option<&[u8]> {
        Some(&self.bytes)
    }
}

fn open_slice(bytes: Vec<u8>, len: u64) -> Result<Table> {
    Table::open(Arc::new(SliceFile { bytes, len }), 7, None, "000007.sst")
}

/// A zstd table of several blocks (compressible values, so blocks really are compressed).
fn zstd_table() -> (Vec<Entry>, Vec<u8>) {
    compressed_table(Compression::Zstd { level: 3 })
}

/// A table of several blocks compressed with `compression`.
fn compressed_table(compression: Compression) -> (Vec<Entry>, Vec<u8>) {
    let entries = simple_entries(400);
    let opts = TableOptions { block_size: 512, compression, ..Default::default() };
    (entries.clone(), build(&entries, opts, bloom_source()).0)
}

/// Every key's `get` result and the full scan, or the first error.
fn contents(t: Table, entries: &[Entry]) -> Result<(Vec<GetResult>, usize)> {
    let t = Arc::new(t);
    let c = ReadCounters::new();
    let gets = entries
        .iter()
        .map(|(k, ..)| t.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()))
        .collect::<Result<Vec<_>>>()?;
    let mut it = t.iter(false);
    it.seek_to_first()?;
    let mut n = 0;
    while it.valid() {
        n += 1;
        assert!(n <= entries.len(), "iteration does not terminate");
        it.next()?;
    }
    Ok((gets, n))
}

#[test]
fn mapped_and_pread_tables_answer_alike() {
    mapped_and_pread_answer_alike(Compression::Zstd { level: 3 });
    mapped_and_pread_answer_alike(Compression::Lz4);
}

fn mapped_and_pread_answer_alike(compression: Compression) {
    let (entries, bytes) = compressed_table(compression);
    let want = contents(open(bytes.clone(), None).unwrap(), &entries).unwrap();
    assert_eq!(want.1, entries.len());
    assert!(want.0.iter().all(|g| matches!(g, GetResult::Found(_))));
    let len = bytes.len() as u64;
    assert_eq!(contents(open_slice(bytes.clone(), len).unwrap(), &entries).unwrap(), want);
    // The real mapping, through the storage.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000007.sst");
    std::fs::write(&path, &bytes).unwrap();
    let storage = FsStorage::with_mmap(true);
    let file = storage.open_immutable(&path).unwrap();
    assert_eq!(file.as_bytes().is_some(), storage.mmap());
    let t = Table::open(file, 7, None, &path).unwrap();
    assert_eq!(contents(t, &entries).unwrap(), want);
}

#[test]
fn every_byte_flip_in_a_mapped_table_is_a_corruption_error() {
    let (entries, bytes) = zstd_table();
    let len = bytes.len() as u64;
    for i in (0..bytes.len()).step_by(3) {
        let mut bad = bytes.clone();
        bad[i] ^= 0x20;
        let e = open_slice(bad, len).and_then(|t| contents(t, &entries)).unwrap_err();
        assert!(e.is_corruption(), "byte {i}: {e}");
    }
}

#[test]
fn truncated_mapped_table_is_a_corruption_error() {
    let (entries, bytes) = zstd_table();
    for len in 0..bytes.len() {
        let r = open_slice(bytes[..len].to_vec(), len as u64).and_then(|t| contents(t, &entries));
        assert!(r.unwrap_err().is_corruption(), "len {len}");
    }
    // Bytes shorter than the length reported at open (a map that lost its tail): blocks past
    // the bytes fail with a corruption error at open or at read, never a panic.
    let full = bytes.len() as u64;
    for cut in [1, 64, 65, 300, bytes.len() / 2] {
        let r = open_slice(bytes[..bytes.len() - cut].to_vec(), full)
            .and_then(|t| contents(t, &entries));
        assert!(r.unwrap_err().is_corruption(), "cut {cut}");
    }
    // A truncated file on disk, mapped for real.
    let dir = tempfile::tempdir().unwrap();
    let storage = FsStorage::with_mmap(true);
    for len in [0, 10, 64, bytes.len() / 2, bytes.len() - 1] {
        let path = dir.path().join(format!("{len}.sst"));
        std::fs::write(&path, &bytes[..len]).unwrap();
        let r = storage
            .open_immutable(&path)
            .and_then(|f| Table::open(f, 7, None, &path))
            .and_then(|t| contents(t, &entries));
        assert!(r.unwrap_err().is_corruption(), "len {len}");
    }
}
