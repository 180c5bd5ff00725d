//! L0 files that wait for bytes (`CompactionOptions::l0_min_base_ratio`) while writes go on are
//! compacted once scans have read as many bytes of them as the compaction would rewrite
//! (src/db/compact.rs, `scans_paid_for_l0`); without scans they keep waiting.

use siftdb::{CompactionOptions, Db, Options};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const FLUSH_KEYS: u64 = 400;

fn opts() -> Options {
    Options {
        compaction: CompactionOptions {
            l0_compaction_trigger: 4,
            l0_min_base_ratio: 1.0,
            l0_slowdown_writes_trigger: 20,
            l0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 64 << 20,
            target_file_size: 8 << 20,
            ..CompactionOptions::default()
        },
        ..Options::default()
    }
}

/// One L0 file: `FLUSH_KEYS` keys spread over the whole key space (so every file overlaps all
/// of L1), 200-byte values.
fn flush_one(db: &Db, round: u64) {
    for i in 0..FLUSH_KEYS {
        let k = (i * 7919 + round * 13) % 100_000;
        db.put(format!("key{k:08}"), vec![round as u8; 200]).unwrap();
    }
    db.flush().unwrap();
}

fn l0_files(db: &Db) -> usize {
    db.stats().levels[0].files
}

#[test]
fn scans_compact_the_l0_files_that_wait_for_bytes_and_nothing_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    // L1: eight flushes (two L0 compactions at the trigger, settled each time).
    for round in 0..8 {
        flush_one(&db, round);
        if round % 4 == 3 {
            db.wait_for_compactions().unwrap();
        }
    }
    assert_eq!(l0_files(&db), 0);
    assert!(db.stats().levels[1].files > 0);
    // Four more: L0 holds half of L1's bytes, so it waits while writes go on.
    for round in 8..12 {
        flush_one(&db, round);
    }
    assert_eq!(l0_files(&db), 4);

    let stop = AtomicBool::new(false);
    /// Stops the trickle however the scope's body ends (a failed assertion included), so the
    /// scope's join never waits forever.
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|s| {
        // A trickle of writes, so writes never look idle (which would end the wait).
        s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.put(format!("trickle{i:08}"), b"x").unwrap();
                i += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let _stop = StopOnDrop(&stop);
        // Without scans, point lookups only: L0 keeps waiting (the picker runs every 200 ms).
        let until = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < until {
            db.get(b"key00000000").unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        let waited = l0_files(&db);
        // Full scans read every L0 block; a few of them pay for the compaction (it rewrites
        // L0 and L1, about three times L0's bytes).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut scans = 0;
        while l0_files(&db) >= 4 && Instant::now() < deadline {
            assert!(db.scan().unwrap().all(|kv| kv.is_ok()));
            scans += 1;
        }
        assert_eq!(waited, 4, "L0 compacted without scans while writes went on");
        assert!(l0_files(&db) < 4, "{scans} full scans did not compact the waiting L0 files");
    });
    // Every key still reads back.
    for i in 0..FLUSH_KEYS {
        let k = (i * 7919 + 11 * 13) % 100_000;
        assert_eq!(db.get(format!("key{k:08}")).unwrap(), Some(vec![11u8; 200]));
    }
}
