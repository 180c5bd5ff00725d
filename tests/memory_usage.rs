//! `Db::memory_usage`: each figure follows what the database holds.

use siftdb::{Db, Options};

#[test]
fn memory_usage_follows_memtables_cache_and_open_tables() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { memtable_size: 1 << 20, block_cache_bytes: 4 << 20, ..Options::default() };
    let db = Db::open(dir.path(), opts).unwrap();
    let empty = db.memory_usage();
    assert_eq!((empty.block_cache, empty.table_filters, empty.open_tables), (0, 0, 0));
    assert_eq!(empty.block_cache_capacity, 4 << 20);
    for i in 0..50_000u32 {
        db.put(format!("key{i:08}"), [7u8; 40]).unwrap();
    }
    assert!(db.memory_usage().memtables > 0);
    db.flush().unwrap();
    db.compact().unwrap();
    for i in (0..50_000u32).step_by(97) {
        assert!(db.get(format!("key{i:08}")).unwrap().is_some());
    }
    let m = db.memory_usage();
    let stats = db.stats();
    let files: usize = stats.levels.iter().map(|l| l.files).sum();
    assert_eq!(m.open_tables, files, "every table was opened by the reads (default cache)");
    let filter_bytes: u64 = stats.levels.iter().map(|l| l.filter_bytes).sum();
    // The levels' figure counts filter blocks; the tables', what holding them allocates (the
    // block's buffer and the parsed filter's `Arc`, and a bumped ribbon view's list of layers,
    // allocator headers included).
    let slack = 512 * files as u64;
    assert!(
        (filter_bytes..=filter_bytes + slack).contains(&m.table_filters),
        "open tables hold the levels' filters: {} for {filter_bytes}",
        m.table_filters
    );
    assert!(m.table_indexes > 0);
    assert!(m.block_cache > 0 && m.block_cache <= m.block_cache_capacity);
    assert!(m.table_readers > 0, "each open table's reader is counted");
    let outside = m.table_filters + m.table_indexes + m.table_readers;
    assert_eq!(m.total(), m.memtables + m.block_cache + outside + m.filter_arena_free);
    assert_eq!(m.block_cache, m.block_cache_data, "by default the cache holds data blocks only");
    assert_eq!((m.block_cache_index, m.block_cache_filter, m.block_cache_pinned), (0, 0, 0));
    assert!(format!("{m}").contains("table filters"));
}
