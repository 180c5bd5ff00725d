//! Scan filters (`Options::prefix_extractor`, `Options::range_filter`; design.md#scan-filters)
//! never change a scan's answer: a database with prefix and range filters and one
//! without take the same seeded history (puts, overwrites, deletes, range deletions, flushes,
//! compactions, a reopen) and must return identical results for random bounded ranges, both
//! ways, prefix scans of present and absent prefixes, and snapshot reads; and the filters must
//! actually skip files (the per-level scan counters), which is the point of having them.

use siftdb::filter::rng::SplitMix64;
use siftdb::{CompactionOptions, Db, FixedPrefix, Options, RangeFilterOptions};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

/// Keys `pNN/iiiii`: 40 prefixes, of which only the even ones are ever written, so odd
/// prefixes are absent everywhere and even ones are present in some files only.
fn key(prefix: u64, i: u64) -> Vec<u8> {
    format!("p{prefix:02}/{i:05}").into_bytes()
}

fn options(filters: bool) -> Options {
    let mut o = Options {
        memtable_size: 32 << 10,
        compaction: CompactionOptions {
            auto: false,
            target_file_size: 16 << 10,
            ..CompactionOptions::default()
        },
        max_subcompactions: 1,
        ..Options::default()
    };
    if filters {
        o.prefix_extractor = Some(Arc::new(FixedPrefix::new(3)));
        o.range_filter = Some(RangeFilterOptions::default());
    }
    o
}

/// One step of the shared history.
fn write_some(db: &Db, rng: &mut SplitMix64, n: usize) {
    for _ in 0..n {
        // Writes cluster in a few prefixes per batch, so files differ in what they hold.
        let prefix = 2 * rng.below(20);
        let k = key(prefix, rng.below(3_000) * 3);
        match rng.below(40) {
            0 => {
                let end = key(prefix, rng.below(3_000) * 3);
                if k < end {
                    db.delete_range(k.as_slice()..end.as_slice()).unwrap();
                }
            }
            1..=5 => db.delete(&k).unwrap(),
            _ => db.put(&k, format!("v{}", rng.next_u64()).as_bytes()).unwrap(),
        }
    }
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn collect(it: impl Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>) -> Entries {
    it.map(|kv| kv.unwrap()).collect()
}

/// Random bounded ranges (short ones within a prefix, some spanning prefixes, every bound
/// kind), both directions, and prefix scans of every prefix.
fn answers(db: &Db, seed: u64) -> Vec<Entries> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    for _ in 0..300 {
        let p = rng.below(40);
        let a = rng.below(9_000);
        let width = if rng.below(4) == 0 { rng.below(3_000) } else { rng.below(20) };
        let lo = key(p, a);
        let hi = if rng.below(8) == 0 { key(p + 1, a) } else { key(p, a + width) };
        let lower = if rng.below(2) == 0 { Bound::Included(&lo) } else { Bound::Excluded(&lo) };
        let upper = if rng.below(2) == 0 { Bound::Included(&hi) } else { Bound::Excluded(&hi) };
        out.push(collect(db.range::<&Vec<u8>, _>((lower, upper)).unwrap()));
        let mut back = collect(db.range::<&Vec<u8>, _>((lower, upper)).unwrap().rev());
        back.reverse();
        out.push(back);
    }
    for p in 0..40 {
        out.push(collect(db.prefix(format!("p{p:02}")).unwrap()));
        out.push(collect(db.prefix(format!("p{p:02}/001")).unwrap()));
    }
    out
}

fn skipped_files(db: &Db) -> u64 {
    db.stats().levels.iter().map(|l| l.scan_reads.filter_useful).sum()
}

#[test]
fn scans_are_identical_with_filters_on_and_off_across_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (on_dir, off_dir) = (dir.path().join("on"), dir.path().join("off"));
    let check = |on: &Db, off: &Db, stage: &str, seed: u64| {
        let (a, b) = (answers(on, seed), answers(off, seed));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                x == y,
                "{stage}: query {i} differs with filters on ({} entries) and off ({})",
                x.len(),
                y.len()
            );
        }
    };
    let open = |p: &Path, f: bool| Db::open(p, options(f)).unwrap();
    let (on, off) = (open(&on_dir, true), open(&off_dir, false));
    let (mut r1, mut r2) = (SplitMix64::new(7), SplitMix64::new(7));
    // Memtable only.
    write_some(&on, &mut r1, 300);
    write_some(&off, &mut r2, 300);
    check(&on, &off, "memtable", 1);
    // Several L0 files, then a compaction into the levels, then L0 over the levels, with a
    // snapshot taken in between.
    for round in 0..6 {
        write_some(&on, &mut r1, 1_500);
        write_some(&off, &mut r2, 1_500);
        on.flush().unwrap();
        off.flush().unwrap();
        if round == 3 {
            on.compact().unwrap();
            off.compact().unwrap();
        }
    }
    check(&on, &off, "L0 over levels", 2);
    let (s_on, s_off) = (on.snapshot(), off.snapshot());
    write_some(&on, &mut r1, 1_000);
    write_some(&off, &mut r2, 1_000);
    let k = key(4, 30);
    let range = |s: &siftdb::Snapshot| collect(s.range(key(4, 0)..=key(4, 90)).unwrap());
    assert_eq!(range(&s_on), range(&s_off), "snapshot range");
    assert_eq!(s_on.get(&k).unwrap(), s_off.get(&k).unwrap());
    drop((s_on, s_off));
    check(&on, &off, "after more writes", 3);
    assert!(skipped_files(&on) > 0, "the filters skipped no file");
    assert_eq!(skipped_files(&off), 0, "a database without filters reports skips");
    drop((on, off));
    // Reopen (tables read back with their filters), then a full compaction.
    let (on, off) = (open(&on_dir, true), open(&off_dir, false));
    check(&on, &off, "reopened", 4);
    on.compact().unwrap();
    off.compact().unwrap();
    check(&on, &off, "compacted", 5);
    // Reopened without the extractor: the prefix filters go unused, the answers stay.
    drop(on);
    let plain = Db::open(&on_dir, options(false)).unwrap();
    check(&plain, &off, "reopened without the extractor", 6);
}

#[test]
fn absent_prefixes_skip_every_file_and_memtable() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(true);
    opts.range_filter = None;
    let db = Db::open(dir.path(), opts).unwrap();
    for p in (0..40).step_by(2) {
        for i in 0..400 {
            db.put(key(p, i), b"value").unwrap();
        }
    }
    db.flush().unwrap();
    db.compact().unwrap();
    for i in 0..100 {
        db.put(key(0, i), b"fresh").unwrap(); // a memtable holding prefix p00 only
    }
    let before = db.stats();
    let files: u64 = before.levels.iter().map(|l| l.files as u64).sum();
    assert!(files > 3, "the test needs several files, has {files}");
    for p in (1..40).step_by(2) {
        assert_eq!(db.prefix(format!("p{p:02}")).unwrap().count(), 0);
    }
    let after = db.stats();
    let blocks =
        |s: &siftdb::Stats| -> u64 { s.levels.iter().map(|l| l.scan_reads.data_blocks_read).sum() };
    assert_eq!(blocks(&after), blocks(&before), "a scan of an absent prefix read a block");
    assert!(skipped_files(&db) > 0);
    // Present prefixes still come back whole.
    assert_eq!(db.prefix("p00").unwrap().count(), 400);
    assert_eq!(db.prefix("p38").unwrap().count(), 400);
}

/// db_bench's key layout: the key number big-endian in 8 bytes, then '0' padding to 16.
fn bench_key(n: u64) -> Vec<u8> {
    let mut k = n.to_be_bytes().to_vec();
    k.resize(16, b'0');
    k
}

#[test]
fn empty_short_ranges_skip_files_at_the_configured_rate() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(true);
    opts.prefix_extractor = None;
    let (bits, width) = (14.0, 16u64);
    opts.range_filter = Some(RangeFilterOptions { bits_per_key: bits, max_range: width });
    let db = Db::open(dir.path(), opts).unwrap();
    // Keys every 32 numbers, written in a scrambled order so every file spans the key space.
    let n = 6_000u64;
    for i in 0..n {
        let j = (i * 2_654_435_761) % n; // a permutation (the multiplier is coprime to n)
        db.put(bench_key(j * 32), b"value").unwrap();
        if i % 1_500 == 1_499 {
            db.flush().unwrap();
        }
    }
    db.compact().unwrap();
    for i in 0..1_000 {
        db.put(bench_key(i * 192), b"again").unwrap(); // an L0 file over the compacted levels
    }
    db.flush().unwrap();
    let before = db.stats();
    // Correlated empty ranges: each starts right after an existing key and spans `width`
    // numbers, all inside the gap to the next key.
    let queries = 3_000;
    let mut rng = SplitMix64::new(11);
    for _ in 0..queries {
        let v = rng.below(n) * 32;
        let (lo, hi) = (bench_key(v + 1), bench_key(v + width));
        assert_eq!(db.range(lo..=hi).unwrap().next().map(|r| r.unwrap()), None);
    }
    let d = db.stats().since(&before);
    let sum = |f: fn(&siftdb::ReadStats) -> u64| -> u64 {
        d.levels.iter().map(|l| f(&l.scan_reads)).sum()
    };
    let (checks, skipped, fp) =
        (sum(|r| r.filter_checks), sum(|r| r.filter_useful), sum(|r| r.false_positives()));
    assert_eq!(checks, skipped + fp, "every passed file of an empty range is a false positive");
    assert!(checks >= queries, "fewer file checks ({checks}) than queries");
    // Grafite's bound for a range of w image units: w / 2^(bits - 2) (here 16 / 4096). The
    // observed share of false positives among `checks` empty files is binomial around at most
    // that; allow 5 standard deviations plus one event.
    let p = width as f64 / 2f64.powf(bits - 2.0);
    let bound = p + 5.0 * (p * (1.0 - p) / checks as f64).sqrt() + 1.0 / checks as f64;
    let observed = fp as f64 / checks as f64;
    assert!(observed <= bound, "observed range FPR {observed} above {bound} ({fp} of {checks})");
    // Ranges holding a key pass every file that holds it.
    let before = db.stats();
    for _ in 0..500 {
        let v = rng.below(n) * 32;
        let (lo, hi) = (bench_key(v.saturating_sub(3)), bench_key(v + 5));
        assert_eq!(db.range(lo..=hi).unwrap().next().unwrap().unwrap().0, bench_key(v));
    }
    let d = db.stats().since(&before);
    let tp: u64 = d.levels.iter().map(|l| l.scan_reads.filter_true_positive).sum();
    assert!(tp >= 500, "only {tp} true positives for 500 non-empty ranges");
}

/// A prefix whose every memtable and file the filters rule out makes an iterator without a
/// cursor (design.md#scan-filters): it is empty from both ends, counts one positioning like
/// any scan, and counts each skipped file once.
#[test]
fn a_scan_every_source_rules_out_is_empty_both_ways_and_counted_like_any_scan() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db"), options(true)).unwrap();
    for i in 0..2_000 {
        db.put(key(2 * (i % 20), i), b"v").unwrap();
    }
    db.flush().unwrap(); // the memtable is empty again: it is ruled out without a probe
    let files: usize = db.stats().levels.iter().map(|l| l.files).sum();
    assert!(files >= 2, "{files} files");
    let (seeks, skipped) = (db.stats().seeks, skipped_files(&db));
    let mut it = db.prefix("p07").unwrap(); // an odd prefix: never written
    assert!(it.next_back().is_none() && it.next().is_none() && it.next_back().is_none());
    assert_eq!(db.stats().seeks, seeks + 1);
    let ruled_out = skipped_files(&db) - skipped;
    assert!(ruled_out >= 1 && ruled_out <= files as u64, "{ruled_out} of {files}");
    // The same prefix's neighbour, which files hold, still reads them.
    assert_eq!(db.prefix("p08").unwrap().count(), 100);
    assert!(collect(db.prefix("p08").unwrap().rev()).len() == 100);
}
