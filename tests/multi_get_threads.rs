//! Batched direct reads leave no thread behind: io_uring rings are per thread and end with
//! it (with any io-wq workers the kernel made for them), and the Db's own threads end with the
//! Db. Alone in its test binary, so no other test's threads change the count.

use siftdb::{Db, Options};
use std::time::{Duration, Instant};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn direct_multi_get_leaves_no_thread_behind_once_the_db_is_dropped() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let before = threads();
    let opts = || Options { direct_reads: true, block_cache_bytes: 0, ..Options::default() };
    {
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..20_000u32 {
            db.put(format!("k{i:06}"), format!("value {i}")).unwrap();
        }
        db.compact().unwrap();
    }
    let db = Db::open(dir.path(), opts()).unwrap();
    let keys: Vec<String> = (0..20_000u32).step_by(3).map(|i| format!("k{i:06}")).collect();
    std::thread::scope(|s| {
        for t in 0..3 {
            let (db, keys) = (&db, &keys);
            s.spawn(move || {
                for chunk in keys[t..].chunks(64) {
                    for got in db.multi_get(chunk) {
                        assert!(got.unwrap().is_some());
                    }
                }
            });
        }
    });
    // This thread's ring too.
    assert!(db.multi_get(&keys[..100]).into_iter().all(|r| r.unwrap().is_some()));
    drop(db);
    // Worker threads end asynchronously: wait for the count to come back. The bound is a hang
    // guard only (generous for a loaded machine), not a speed requirement.
    let deadline = Instant::now() + Duration::from_secs(120);
    while threads() > before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(threads(), before, "threads before the Db and after its drop");
}
