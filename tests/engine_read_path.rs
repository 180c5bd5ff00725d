//! Filters in the read path, checked on the read-amplification counters of `Db::stats()`.
//!
//! Four L0 files are flushed whose key ranges all span the whole key space (present keys are the
//! even numbers, dealt round-robin to the files), and the odd numbers in between are looked up.
//! Every such lookup falls inside every file's key range, so only the filters can reject it:
//! * a lookup whose filter says "no" reads no index and no data block, so per level
//!   `data_blocks_read == false positives` and `filter_useful + false positives == filter_checks`;
//! * the observed FPR matches the theory of the two-bit filter at its actual bits per key;
//! * a present key is a true positive and reads a data block.

use siftdb::filter::cost::{binomial_sigma, blocked_bloom_fpr};
use siftdb::filter::TwoBitConfig;
use siftdb::{Db, FilterAllocation, FilterConfig, FilterPolicy, Options, Stats, WriteBatch};

const FILES: u64 = 4;
const KEYS_PER_FILE: u64 = 10_000;
const MISSING_LOOKUPS: u64 = 40_000;

fn key(i: u64) -> Vec<u8> {
    format!("user{i:010}").into_bytes()
}

/// Loads `FILES` L0 files; file `f` holds keys `2 * (FILES * j + f)`.
fn load(flush: FilterConfig) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options {
        memtable_size: 16 << 20, // holds a whole file: only the explicit flushes cut files
        // The flush filter as configured: a per-level allocation has no budget, so no floor
        // turns the two-bit filter into another kind (design.md#all-runs, "The floor").
        filter_policy: FilterPolicy {
            flush,
            allocation: FilterAllocation::PerLevel(vec![]),
            ..FilterPolicy::default()
        },
        ..Options::default()
    };
    // This test measures the flush filters of L0 files; keep compaction from merging them.
    opts.compaction.auto = false;
    let db = Db::open(dir.path(), opts).unwrap();
    for f in 0..FILES {
        let mut b = WriteBatch::new();
        for j in 0..KEYS_PER_FILE {
            let i = 2 * (FILES * j + f);
            b.put(key(i), format!("value{i}"));
            if b.len() == 1000 {
                db.write(std::mem::take(&mut b)).unwrap();
            }
        }
        db.write(b).unwrap();
        db.flush().unwrap();
    }
    let s = db.stats();
    assert_eq!((s.levels[0].files, s.levels[0].entries), (FILES as usize, FILES * KEYS_PER_FILE));
    (dir, db)
}

/// Looks up `n` odd (missing) keys spread over the key space; returns the counters they moved.
fn look_up_missing(db: &Db, n: u64) -> Stats {
    let before = db.stats();
    let span = 2 * FILES * KEYS_PER_FILE;
    for t in 0..n {
        // Odd numbers between the largest first key (2 * FILES - 2) and the smallest last key
        // (span - 2 * FILES) of the files, so each lookup is inside every file's key range,
        // visited in scrambled order by a prime stride.
        let i = 2 * FILES + 1 + 2 * (t * 7919 % (span / 2 - 2 * FILES));
        assert_eq!(db.get(key(i)).unwrap(), None);
    }
    db.stats().since(&before)
}

#[test]
fn a_missing_key_rejected_by_the_filter_reads_no_block() {
    let (_dir, db) = load(FilterConfig::TwoBitBloom { bits_per_key: 16.0 });
    let d = look_up_missing(&db, MISSING_LOOKUPS);
    assert_eq!((d.gets, d.gets_found), (MISSING_LOOKUPS, 0));
    for l in &d.levels {
        let r = &l.reads;
        assert_eq!(
            r.filter_true_positive, 0,
            "L{}: a missing key cannot be a true positive",
            l.level
        );
        assert_eq!(r.filter_useful + r.false_positives(), r.filter_checks, "L{}", l.level);
        // Only the lookups the filter let through touch blocks: one index and one data block each.
        assert_eq!(r.data_blocks_read, r.false_positives(), "L{}: {r:?}", l.level);
        assert_eq!(r.index_blocks_read, r.false_positives(), "L{}: {r:?}", l.level);
    }
    let l0 = &d.levels[0].reads;
    assert_eq!(l0.filter_checks, MISSING_LOOKUPS * FILES, "every lookup probes every L0 filter");
    assert_eq!(d.total_reads().data_blocks_read, l0.false_positives());
}

#[test]
fn the_observed_fpr_of_the_two_bit_filter_matches_its_theory() {
    let (_dir, db) = load(FilterConfig::TwoBitBloom { bits_per_key: 10.0 });
    let d = look_up_missing(&db, MISSING_LOOKUPS);
    let l0 = &d.levels[0];
    assert_eq!(l0.filter_kinds, vec!["two_bit_bloom".to_string()]);
    // The four files hold equally many keys and were flushed alike, so they share one size and
    // the level's bits per key is each file's.
    let bits_per_key = l0.filter_bits_per_key();
    assert!((10.0..=40.0).contains(&bits_per_key), "bits/key {bits_per_key}");
    let c = TwoBitConfig::default();
    // Blocked Bloom formula (Putze et al.) with one word as the block: a key sets k = 2 bits of
    // a 32-bit word, words receive Poisson(word_bits / bits_per_key) keys.
    let p =
        blocked_bloom_fpr(c.word_bits, c.word_bits as f64 / bits_per_key, c.bits_per_key_in_word);
    let negatives = l0.reads.filter_useful + l0.reads.false_positives();
    let observed = l0.reads.observed_fpr().unwrap();
    // 5 binomial sigmas sqrt(p(1-p)/N), plus 5% of p for the formula's model error (it is about
    // 1% optimistic for k = 2, see two_bit's module docs) and the filter envelope's header bytes
    // counted in bits per key.
    let tolerance = 5.0 * binomial_sigma(p, negatives) + 0.05 * p;
    assert!(
        (observed - p).abs() <= tolerance,
        "observed FPR {observed:.5} vs theory {p:.5} +- {tolerance:.5} at {bits_per_key:.2} bits/key"
    );
}

#[test]
fn a_present_key_is_a_true_positive_that_reads_a_data_block() {
    let (_dir, db) = load(FilterConfig::TwoBitBloom { bits_per_key: 16.0 });
    let before = db.stats();
    assert_eq!(db.get(key(2 * FILES * 100)).unwrap().as_deref(), Some(&b"value800"[..]));
    let d = db.stats().since(&before);
    let r = d.total_reads();
    assert_eq!((d.gets, d.gets_found), (1, 1));
    assert_eq!(r.filter_true_positive, 1, "{r:?}");
    assert!(r.data_blocks_read >= 1, "{r:?}");
    // Many present keys: each is exactly one true positive (it lives in one file) and reads at
    // least one data block; other files' filters may add false positives.
    let before = db.stats();
    for j in 0..2000 {
        assert!(db.get(key(2 * j)).unwrap().is_some());
    }
    let r = db.stats().since(&before).total_reads();
    assert_eq!(r.filter_true_positive, 2000, "{r:?}");
    assert_eq!(r.data_blocks_read, r.filter_positive, "one data block per positive: {r:?}");
}

#[test]
fn without_a_filter_every_missing_lookup_in_range_reads_a_data_block() {
    // The contrast that shows what the filters save: same data, no filter.
    let (_dir, db) = load(FilterConfig::None);
    let n = 2000;
    let d = look_up_missing(&db, n);
    let l0 = &d.levels[0].reads;
    assert_eq!(l0.filter_checks, 0);
    assert_eq!(l0.data_blocks_read, n * FILES, "{l0:?}");
}
