//! A table's index or filter block that is damaged after the table was opened, and read again
//! through the block cache (`Options::cache_index_and_filter_blocks` with a cache too small to
//! keep it), gives a typed `Corruption` error: never a panic, never a wrong answer.

use siftdb::{Db, Error, Options};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

mod common;
use common::key6 as key;

/// (offset, size) of the filter and index blocks, from the footer (docs/format.md#sst-footer).
fn meta_handles(sst: &Path) -> ((u64, u64), (u64, u64)) {
    let mut f = std::fs::File::open(sst).unwrap();
    let mut footer = [0u8; 64];
    f.seek(SeekFrom::End(-64)).unwrap();
    f.read_exact(&mut footer).unwrap();
    let u = |at: usize| u64::from_le_bytes(footer[at..at + 8].try_into().unwrap());
    ((u(0), u(8)), (u(32), u(40)))
}

/// Flips every bit of the byte at `at`.
fn flip(sst: &Path, at: u64) {
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(sst).unwrap();
    let mut b = [0u8; 1];
    f.seek(SeekFrom::Start(at)).unwrap();
    f.read_exact(&mut b).unwrap();
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(&[!b[0]]).unwrap();
    f.sync_all().unwrap();
}

fn only_sst(dir: &Path) -> PathBuf {
    let ssts: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    assert_eq!(ssts.len(), 1, "{ssts:?}");
    ssts.into_iter().next().unwrap()
}

fn is_corruption<T: std::fmt::Debug>(r: siftdb::Result<T>) -> bool {
    matches!(r, Err(Error::Corruption { .. }))
}

#[test]
fn a_damaged_filter_or_index_block_read_through_the_cache_is_a_corruption_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..2_000 {
            db.put(key(i), b"v").unwrap();
        }
        db.flush().unwrap();
    }
    let sst = only_sst(dir.path());
    let ((filter_at, filter_len), (index_at, index_len)) = meta_handles(&sst);
    assert!(filter_len > 0 && index_len > 0);
    // 16 shards of one byte: no index or filter block fits, each use reads it from the file.
    // Buffered reads (no map), so the bytes changed below are what the next read sees.
    let opts = Options {
        block_cache_bytes: 16,
        cache_index_and_filter_blocks: true,
        mmap_reads: false,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(key(7)).unwrap(), Some(b"v".to_vec()));

    flip(&sst, filter_at + filter_len / 2);
    assert!(is_corruption(db.get(key(7))), "{:?}", db.get(key(7)));
    assert!(is_corruption(db.get(b"key000007x")), "a damaged filter is no 'absent' answer");
    let batch = db.multi_get(&[key(1), key(2)]);
    assert!(batch.into_iter().all(is_corruption));
    flip(&sst, filter_at + filter_len / 2); // repaired: the next read succeeds
    assert_eq!(db.get(key(7)).unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get(b"key000007x").unwrap(), None);

    flip(&sst, index_at + index_len / 2);
    assert!(is_corruption(db.get(key(9))), "{:?}", db.get(key(9)));
    // A scan reads the index through the cache too (the iterator positions itself when made).
    let scan = db.scan().and_then(|mut it| it.next().expect("an entry or an error"));
    assert!(matches!(scan, Err(Error::Corruption { .. })), "{scan:?}");
    flip(&sst, index_at + index_len / 2);
    assert_eq!(db.scan().unwrap().count(), 2_000);
    let s = db.stats().levels[0].reads;
    assert!(s.index_cache_misses > 0 && s.filter_cache_misses > 0, "{s:?}");
}
