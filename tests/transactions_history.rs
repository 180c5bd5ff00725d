//! Histories of concurrent serializable transactions checked for serializability
//! (tests/model_support/serializability.rs: Adya's dependency graph and a cycle search). A few
//! hot keys, so that transactions overlap and conflict; each reads two or three keys (points,
//! or a short range) and writes one or two of them back, every written value naming its writer
//! (`version_value`), so each read tells whose write it saw.
//!
//! Commits go through one harness mutex that also appends to the history, which is what gives
//! the checker the commit order (an optimistic engine installs writes at commit, so the commit
//! order is each key's version order). The engine validates under its writer lock anyway, so
//! the mutex removes no interleaving of validation with other commits; reads and writes run
//! concurrently with commits.

mod model_support;

use model_support::serializability::{check, version_of, version_value, Committed, Version};
use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Options};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const KEYS: u64 = 6;
const THREADS: u64 = 3;
const PER_THREAD: u64 = 1_500;

fn key(i: u64) -> Vec<u8> {
    format!("k{i}").into_bytes()
}

#[test]
fn concurrent_serializable_transactions_form_an_acyclic_history() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { memtable_size: 32 << 10, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    let history = Mutex::new(Vec::<Committed>::new());
    let (next_id, aborted) = (AtomicU64::new(1), AtomicU64::new(0));
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (db, history, next_id, aborted) = (&db, &history, &next_id, &aborted);
            s.spawn(move || {
                let mut rng = SplitMix64::new(40 + t);
                let mut done = 0;
                while done < PER_THREAD {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let tx = db.transaction().unwrap();
                    let mut record = Committed::new(id);
                    let mut read: Vec<u64> = Vec::new();
                    if rng.next_u64().is_multiple_of(4) {
                        // A range read of two or three neighbouring keys.
                        let lo = rng.next_u64() % (KEYS - 1);
                        let hi = (lo + 2 + rng.next_u64() % 2).min(KEYS);
                        let seen: Vec<(Vec<u8>, Vec<u8>)> =
                            tx.range(key(lo)..key(hi)).unwrap().map(|e| e.unwrap()).collect();
                        for i in lo..hi {
                            let k = key(i);
                            let v = seen.iter().find(|(sk, _)| *sk == k).map(|(_, v)| v.as_slice());
                            record = record.read(&k, version_of(&k, v).unwrap());
                            read.push(i);
                        }
                    } else {
                        for _ in 0..2 + rng.next_u64() % 2 {
                            let i = rng.next_u64() % KEYS;
                            if read.contains(&i) {
                                continue;
                            }
                            let k = key(i);
                            let v = tx.get(&k).unwrap();
                            record = record.read(&k, version_of(&k, v.as_deref()).unwrap());
                            read.push(i);
                        }
                    }
                    let writes = 1 + rng.next_u64() % 2.min(read.len() as u64);
                    for &i in read.iter().take(writes as usize) {
                        let k = key(i);
                        tx.put(&k, version_value(Version::By(id), &k)).unwrap();
                        record = record.write(&k);
                    }
                    // Let the others run before committing: on two cores transactions rarely
                    // overlap otherwise.
                    if rng.next_u64().is_multiple_of(2) {
                        std::thread::yield_now();
                    }
                    let mut h = history.lock().unwrap();
                    match tx.commit() {
                        Ok(()) => {
                            h.push(record);
                            done += 1;
                        }
                        Err(e) if e.is_conflict() => {
                            aborted.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    let history = history.into_inner().unwrap();
    assert_eq!(history.len() as u64, THREADS * PER_THREAD);
    if let Err(v) = check(&history) {
        panic!("{v}");
    }
    eprintln!("{} committed, {} aborted", history.len(), aborted.into_inner());
}
