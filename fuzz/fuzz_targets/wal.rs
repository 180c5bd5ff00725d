//! The WAL reader (fragments, torn tail vs corruption) and the write-batch decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::wal::decode_batch;
use siftdb::inspect::wal::read_wal;
use siftdb::storage::{MemStorage, Storage};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let _ = decode_batch(data);
    let s = MemStorage::new();
    let p = Path::new("w.log");
    let mut f = s.create(p).unwrap();
    f.append(data).unwrap();
    if let Ok(rec) = read_wal(s.open(p).unwrap(), p) {
        assert!(rec.valid_len <= data.len() as u64);
        let total: usize = rec.records.iter().map(Vec::len).sum();
        assert!(total <= data.len());
        for r in &rec.records {
            let _ = decode_batch(r);
        }
    }
});
