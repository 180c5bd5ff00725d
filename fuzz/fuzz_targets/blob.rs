//! The blob file decoder (header, records with both CRCs, footer) and the blob reference.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::blob::{scan, BlobRef};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = BlobRef::decode(data) {
        assert_eq!(BlobRef::decode(&r.encode()).unwrap(), r);
    }
    if let Ok(s) = scan(7, data) {
        assert_eq!(s.records.len() as u64, s.count);
        let sum: u64 = s.records.iter().map(|r| r.reference.size).sum();
        assert_eq!(sum, s.bytes);
        for r in &s.records {
            let end = r.reference.offset + r.reference.size + 4;
            assert!(end <= data.len() as u64, "a record runs past the file");
        }
    }
});
