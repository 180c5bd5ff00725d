//! Skew-aware filter allocation and `optimize_filters_for_hits` (design.md, "Skew-aware
//! allocation"): the per-level count of lookups for keys a level does not hold, filtered or
//! not, is exact; `optimize_filters_for_hits` leaves the deepest level unfiltered under every
//! allocation. The weighted optimum itself is tested in src/compaction/allocation.rs.

use siftdb::storage::MemStorage;
use siftdb::{
    CompactionOptions, Db, FilterAllocation, FilterConfig, FilterPolicy, Options, StaticFilterKind,
    WriteBatch,
};
use std::path::Path;
use std::sync::Arc;

fn options(policy: FilterPolicy) -> Options {
    Options {
        memtable_size: 4 << 20,
        compaction: CompactionOptions {
            auto: false,
            max_bytes_for_level_base: 1 << 20,
            target_file_size: 1 << 20,
            ..CompactionOptions::default()
        },
        filter_policy: policy,
        storage: Some(Arc::new(MemStorage::new())),
        max_subcompactions: 1,
        ..Options::default()
    }
}

fn policy(compaction: StaticFilterKind, allocation: FilterAllocation) -> FilterPolicy {
    FilterPolicy {
        flush: FilterConfig::TwoBitBloom { bits_per_key: 10.0 },
        compaction,
        allocation,
        optimize_filters_for_hits: false,
    }
}

/// The 16-byte key of number `i` (even: present, odd: missing between two present ones).
fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// Writes keys `2 i` for `i` in `range` and flushes them to one L0 file.
fn load(db: &Db, range: std::ops::Range<u64>) {
    load_where(db, range, |_| true);
}

/// Writes keys `2 i` for the `i` in `range` that `pick` accepts, and flushes them to one L0
/// file.
fn load_where(db: &Db, range: std::ops::Range<u64>, pick: impl Fn(u64) -> bool) {
    let mut b = WriteBatch::new();
    for i in range.filter(|&i| pick(i)) {
        b.put(key(2 * i), [7u8; 64]);
    }
    db.write(b).unwrap();
    db.flush().unwrap();
}

/// The deepest non-empty level and its filter bits per key.
fn deepest(db: &Db) -> (usize, f64) {
    let s = db.stats();
    let l = s.levels.iter().rev().find(|l| l.files > 0).unwrap();
    (l.level, l.filter_bits_per_key())
}

#[test]
fn absent_key_lookups_count_every_probe_for_a_key_a_level_lacks_filtered_or_not() {
    for kind in [StaticFilterKind::Ribbon, StaticFilterKind::None] {
        let db =
            Db::open(Path::new("/db"), options(policy(kind, FilterAllocation::PerLevel(vec![]))))
                .unwrap();
        load(&db, 0..20_000);
        db.compact().unwrap();
        let (level, _) = deepest(&db);
        let before = db.stats().levels[level].reads;
        for i in 0..3_000u64 {
            assert!(db.get(key(2 * (i * 5 % 20_000))).unwrap().is_some());
        }
        for i in 0..2_000u64 {
            // Below the largest key: a key past a table's range is not a probe.
            assert!(db.get(key(2 * (i * 7 % 19_999) + 1)).unwrap().is_none());
        }
        let files = db.stats().levels[level].files as u64;
        let r = db.stats().levels[level].reads.minus(&before);
        // One level holds every key, so each of the 2,000 missing keys asks it once, but for
        // those between two files' ranges (at most one per gap), and none of the 3,000
        // present ones does.
        let absent = r.absent_key_lookups();
        assert!((2_000 - (files - 1)..=2_000).contains(&absent), "{kind:?}: {r:?}");
        if kind == StaticFilterKind::None {
            assert_eq!((r.unfiltered_lookups, r.unfiltered_found), (3_000 + absent, 3_000));
            assert_eq!(r.filter_checks, 0);
        } else {
            assert_eq!((r.filter_checks, r.filter_true_positive), (3_000 + absent, 3_000));
            assert_eq!(r.unfiltered_lookups, 0);
        }
    }
}

#[test]
fn optimize_filters_for_hits_leaves_the_deepest_level_unfiltered_and_answers_the_same() {
    for allocation in [
        FilterAllocation::PerLevel(vec![]),
        FilterAllocation::Monkey { bits_per_key: 8.0 },
        FilterAllocation::AllRuns { bits_per_key: 8.0 },
        FilterAllocation::SkewAware { bits_per_key: 8.0 },
    ] {
        let p = FilterPolicy {
            optimize_filters_for_hits: true,
            ..policy(StaticFilterKind::Ribbon, allocation.clone())
        };
        let db = Db::open(Path::new("/db"), options(p)).unwrap();
        load(&db, 0..20_000);
        db.compact().unwrap();
        let (level, bits) = deepest(&db);
        assert_eq!(bits, 0.0, "{allocation:?}: L{level}");
        assert_eq!(db.stats().levels[level].filter_kinds, ["none"]);
        // A newer L0 file keeps its flush filter.
        load(&db, 20_000..21_000);
        assert!(db.stats().levels[0].filter_bits_per_key() > 0.0, "{allocation:?}");
        for i in (0..21_000u64).step_by(7) {
            assert!(db.get(key(2 * i)).unwrap().is_some(), "{allocation:?}: {i}");
            assert!(db.get(key(2 * i + 1)).unwrap().is_none(), "{allocation:?}: {i}");
        }
    }
}
