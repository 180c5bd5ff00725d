//! Builder -> reader tests over an in-memory file pair.

mod adopted_keyspace;
mod aligned;
mod block_reverse;
mod charges;
mod corruption;
mod dictionary;
mod global_seq;
mod huge_pages;
mod mapped;
mod partitioned;
mod partitioned_index;
mod range_del;
mod reopen;
mod roundtrip;
mod scan_filters;
mod table_reverse;

use crate::error::{Error, Result};
use crate::filter::prelude::*;
use crate::filter::StandardBloom;
use crate::ikey::{self, ValueKind};
use crate::sst::BlockCache;
use crate::sst::{FilterBlockSource, Table, TableBuilder, TableOptions, TableSummary};
use crate::storage::{RandomAccessFile, WritableFile};
use parking_lot::Mutex;
use std::sync::Arc;

/// One growable byte buffer serving as both the file being written and the file being read.
#[derive(Clone, Default)]
pub(super) struct MemFile(Arc<Mutex<Vec<u8>>>);

impl MemFile {
    pub(super) fn from_bytes(bytes: Vec<u8>) -> MemFile {
        MemFile(Arc::new(Mutex::new(bytes)))
    }

    pub(super) fn bytes(&self) -> Vec<u8> {
        self.0.lock().clone()
    }
}

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().extend_from_slice(data);
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let data = self.0.lock();
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= data.len() as u64);
        let Some(end) = end else {
            return Err(Error::corruption("read past the end of the file", Some(offset)));
        };
        buf.copy_from_slice(&data[offset as usize..end as usize]);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().len() as u64
    }
}

/// A test entry: user key, sequence number, kind, value.
pub(super) type Entry = (Vec<u8>, u64, ValueKind, Vec<u8>);

/// Sorts entries into internal-key order.
pub(super) fn sort_entries(entries: &mut [Entry]) {
    entries.sort_by(|a, b| {
        ikey::compare(&ikey::encode(&a.0, a.1, a.2), &ikey::encode(&b.0, b.1, b.2))
    });
}

/// A standard Bloom filter at 1% built from the table's hashes.
pub(super) fn bloom_source() -> FilterBlockSource {
    FilterBlockSource::build(|hashes| {
        let mut f =
            StandardBloom::with_false_pos(0.01).expected_items(hashes.len().max(1) as u64)?;
        f.insert_batch(hashes);
        Ok(f.to_bytes())
    })
}

/// Writes `entries` (already sorted) into a table and returns its bytes and summary.
pub(super) fn build(
    entries: &[Entry],
    opts: TableOptions,
    filter: FilterBlockSource,
) -> (Vec<u8>, TableSummary) {
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts).unwrap();
    for (k, seq, kind, v) in entries {
        b.add(&ikey::encode(k, *seq, *kind), v).unwrap();
    }
    let summary = b.finish(filter).unwrap();
    (file.bytes(), summary)
}

/// Opens table bytes as file number 7 named "000007.sst".
pub(super) fn open(bytes: Vec<u8>, cache: Option<Arc<BlockCache>>) -> Result<Table> {
    Table::open(Arc::new(MemFile::from_bytes(bytes)), 7, cache, "000007.sst")
}

/// `n` keys `key00000000`, `key00000002`, ... (even numbers: odd ones are known absent),
/// one Put each with a value derived from the key, at sequence number `i + 1`.
pub(super) fn simple_entries(n: u32) -> Vec<Entry> {
    (0..n)
        .map(|i| {
            let k = format!("key{:08}", 2 * i).into_bytes();
            let v = format!("value-{i}-{}", "x".repeat((i % 13) as usize)).into_bytes();
            (k, i as u64 + 1, ValueKind::Put, v)
        })
        .collect()
}
