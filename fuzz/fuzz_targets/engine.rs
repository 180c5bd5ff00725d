//! The engine against a `BTreeMap`: bytes drive puts, deletes, batches, gets, scans, flushes,
//! reopens and simulated crashes on a `MemStorage`. Between crashes every read must equal the
//! model; after a crash that drops unsynced data, the state must keep every synced write and
//! be a prefix of the writes since the last check (values name their write).
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::storage::MemStorage;
use siftdb::{Db, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

type State = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts(s: &MemStorage) -> Options {
    Options {
        storage: Some(Arc::new(s.clone())),
        memtable_size: 1024,
        block_size: 128,
        ..Options::default()
    }
}

fn scan(db: &Db) -> State {
    db.scan().unwrap().map(|r| r.unwrap()).collect()
}

fuzz_target!(|data: &[u8]| {
    let dir = Path::new("/f");
    let s = MemStorage::new();
    let mut db = Some(Db::open(dir, opts(&s)).unwrap());
    let mut base = State::new();
    let mut pending: Vec<Vec<(Vec<u8>, Option<Vec<u8>>)>> = Vec::new();
    let mut floor = 0;
    let mut model = State::new();
    let mut bytes = data.iter().copied();
    let mut n = 0u32;
    while let Some(op) = bytes.next() {
        let d = db.as_ref().unwrap();
        match op % 16 {
            0..=8 => {
                let count = 1 + (op >> 4) as usize % 3;
                let sync = op & 0x80 != 0;
                let mut recs = Vec::new();
                let mut b = WriteBatch::new();
                for _ in 0..count {
                    let k = bytes.next().unwrap_or(0);
                    let key = vec![b'k', k % 32];
                    n += 1;
                    if k >= 224 {
                        b.delete(&key);
                        recs.push((key, None));
                    } else {
                        let v = format!("{n}:{}", "v".repeat(k as usize % 40)).into_bytes();
                        b.put(&key, &v);
                        recs.push((key, Some(v)));
                    }
                }
                d.write_opt(b, WriteOptions { sync }).unwrap();
                for (k, v) in &recs {
                    match v {
                        Some(v) => model.insert(k.clone(), v.clone()),
                        None => model.remove(k),
                    };
                }
                pending.push(recs);
                if sync {
                    floor = pending.len();
                }
            }
            9..=11 => {
                let key = vec![b'k', bytes.next().unwrap_or(0) % 32];
                assert_eq!(d.get(&key).unwrap(), model.get(&key).cloned());
            }
            12 => assert_eq!(scan(d), model),
            13 => {
                d.flush().unwrap();
                floor = pending.len();
            }
            14 => {
                drop(db.take());
                db = Some(Db::open(dir, opts(&s)).unwrap());
                assert_eq!(scan(db.as_ref().unwrap()), model);
            }
            _ => {
                s.crash_drop_unsynced();
                drop(db.take());
                db = Some(Db::open(dir, opts(&s)).unwrap());
                let got = scan(db.as_ref().unwrap());
                let mut cand = base.clone();
                let mut ok = None;
                for j in 0..=pending.len() {
                    if j > 0 {
                        for (k, v) in &pending[j - 1] {
                            match v {
                                Some(v) => cand.insert(k.clone(), v.clone()),
                                None => cand.remove(k),
                            };
                        }
                    }
                    if cand == got {
                        ok = Some(j);
                    }
                }
                let j = ok.expect("recovered state is a prefix of the history");
                assert!(j >= floor, "synced writes lost");
                base = got.clone();
                model = got;
                pending.clear();
                floor = 0;
            }
        }
    }
});
