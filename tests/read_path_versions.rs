//! The lock-free read path (design.md#concurrency) racing version changes.
//!
//! Two readers do point lookups while a writer overwrites every key in generations and manual
//! and automatic compactions replace the files under them. Checked:
//! * every lookup returns the value of its own key from a generation no older than one the
//!   reader saw before (a borrowed super-version is never torn and never goes back);
//! * a snapshot held across flushes and compactions keeps answering with its moment's values;
//! * the striped read counters sum to exactly the lookups made;
//! * once the readers stop, no old super-version stays pinned: after a final compaction the
//!   directory holds exactly the SSTs of the live version (a borrowed super-version that leaked
//!   would keep replaced files on disk).

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Options, WriteBatch};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

mod common;
use common::{key6 as key, small_tree};

const KEYS: u64 = 4_000;
const GENERATIONS: u64 = 12;

fn value(i: u64, generation: u64) -> Vec<u8> {
    format!("{i:06}:{generation:04}:{}", "v".repeat(40)).into_bytes()
}

/// `(key number, generation)` of a value; panics on bytes no writer wrote.
fn decode(v: &[u8]) -> (u64, u64) {
    let s = std::str::from_utf8(v).unwrap();
    (s[0..6].parse().unwrap(), s[7..11].parse().unwrap())
}

fn options() -> Options {
    small_tree(64 << 10)
}

/// Lookups done by one reader: plain gets and gets through snapshots.
fn reader(db: &Db, seed: u64, done: &AtomicBool, start: &Barrier) -> u64 {
    start.wait();
    let mut rng = SplitMix64::new(seed);
    let mut seen = vec![0u64; KEYS as usize];
    let mut lookups = 0u64;
    let mut rounds = 0;
    while !done.load(Ordering::Acquire) || rounds < 3 {
        rounds += 1;
        let snap = db.snapshot();
        let probes: Vec<u64> = (0..8).map(|_| rng.below(KEYS)).collect();
        let at_snapshot: Vec<Option<Vec<u8>>> =
            probes.iter().map(|&i| snap.get(key(i)).unwrap()).collect();
        lookups += probes.len() as u64;
        for _ in 0..500 {
            let i = rng.below(KEYS);
            let v = db.get(key(i)).unwrap().expect("every key is always present");
            lookups += 1;
            let (k, generation) = decode(&v);
            assert_eq!(k, i, "get({i}) returned another key's value");
            assert!(
                generation >= seen[i as usize],
                "key {i}: generation went back from {} to {generation}",
                seen[i as usize]
            );
            seen[i as usize] = generation;
        }
        // The snapshot outlived flushes and compactions of the round: same answers.
        for (&i, before) in probes.iter().zip(&at_snapshot) {
            assert_eq!(&snap.get(key(i)).unwrap(), before, "snapshot changed for key {i}");
        }
        lookups += probes.len() as u64;
    }
    lookups
}

#[test]
fn lookups_racing_compactions_see_whole_versions_and_pin_nothing_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(500) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(key(i), value(i, 0));
        }
        db.write(b).unwrap();
    }
    db.compact().unwrap();
    let gets_before = db.stats().gets;

    let done = AtomicBool::new(false);
    let start = Barrier::new(3);
    let db = Arc::new(db);
    let lookups = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (db, done, start) = (&db, &done, &start);
                s.spawn(move || reader(db, 7 + r, done, start))
            })
            .collect();
        start.wait();
        for generation in 1..=GENERATIONS {
            for chunk in (0..KEYS).collect::<Vec<_>>().chunks(250) {
                let mut b = WriteBatch::new();
                for &i in chunk {
                    b.put(key(i), value(i, generation));
                }
                db.write(b).unwrap();
            }
            if generation % 4 == 0 {
                db.compact().unwrap();
            }
        }
        done.store(true, Ordering::Release);
        readers.into_iter().map(|r| r.join().unwrap()).sum::<u64>()
    });

    let stats = db.stats();
    assert_eq!(stats.gets - gets_before, lookups, "striped counters lost or invented lookups");
    assert!(stats.compactions >= 3, "the test must race compactions: {}", stats.compactions);
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, GENERATIONS)));
    }

    db.compact().unwrap();
    db.wait_for_compactions().unwrap();
    let live: usize = db.stats().levels.iter().map(|l| l.files).sum();
    let on_disk = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sst"))
        .count();
    assert_eq!(on_disk, live, "replaced SSTs are still on disk: an old version is pinned");
}
