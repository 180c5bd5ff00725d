//! A whole SST from bytes: footer, properties, index, filter, data blocks; open, scan, gets.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::filter::hash_key;
use siftdb::inspect::sst::{ReadCounters, Table};
use siftdb::storage::{MemStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let s = MemStorage::new();
    let p = Path::new("t.sst");
    let mut f = s.create(p).unwrap();
    f.append(data).unwrap();
    let Ok(t) = Table::open(s.open(p).unwrap(), 1, None, p) else { return };
    let t = Arc::new(t);
    let mut keys = Vec::new();
    let mut it = t.iter(false);
    if it.seek_to_first().is_ok() {
        let mut steps = 0;
        while it.valid() && steps <= data.len() {
            if keys.len() < 16 {
                keys.push(it.key().to_vec());
            }
            if it.next().is_err() {
                break;
            }
            steps += 1;
        }
        assert!(steps <= data.len(), "table walk does not end");
    }
    let counters = ReadCounters::new();
    for k in keys {
        let uk = siftdb::inspect::ikey::user_key(&k).to_vec();
        let _ = t.get(&uk, hash_key(&uk), u64::MAX >> 8, &counters, &mut Vec::new());
    }
    let _ = t.get(b"absent", hash_key(b"absent"), u64::MAX >> 8, &counters, &mut Vec::new());
});
