//! Lookups against one built database and the per-level figures taken from `Db::stats()`.
//!
//! Blocks are the `data_blocks_read` counter (data blocks consulted, from the block cache or the
//! file), so the figures count work, independent of what the cache happens to hold. A missing
//! key probes every sorted run whose key range covers it (each L0 file, then one file per deeper
//! level): a filter "no" costs no block, a false positive or an absent filter one block.
//!
//! File reads are the reads that left the block cache (data blocks, and index and filter blocks
//! evicted from it): device reads when the database was opened with `direct_reads`, a copy from
//! the page cache or the storage otherwise. They depend on the cache; the blocks do not.

use super::build::{PresentDist, PresentKeys};
use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Error, LevelStats, ReadStats, Result, Stats};
use siftdb_bench_kit::load::decimal_key as key;
use std::time::Instant;

/// Figures of one level, or of the whole tree (`level == None`).
#[derive(Debug, Clone, Default)]
pub struct LevelRow {
    /// Level number; `None` for the totals row.
    pub level: Option<usize>,
    /// SST files.
    pub files: usize,
    /// Entries.
    pub entries: u64,
    /// Filter kinds, `+`-joined, or "none".
    pub filter: String,
    /// Filter bytes in memory.
    pub filter_bytes: u64,
    /// The FPR the policy configures for the level (`None`: no filter, or the totals row).
    pub configured_fpr: Option<f64>,
    /// The FPR the level's filters were built for (`LevelStats::built_fpr`).
    pub built_fpr: Option<f64>,
    /// Observed FPR of the missing-key lookups: false positives / negatives probed.
    pub observed_fpr: Option<f64>,
    /// Filter probes per missing-key lookup (sorted runs covering the key that have a filter).
    pub checks_per_missing: f64,
    /// Data blocks read per missing-key lookup.
    pub blocks_per_missing: f64,
    /// `checks_per_missing * configured_fpr` (plus one block per unfiltered run): what the
    /// configured FPRs predict for `blocks_per_missing`.
    pub predicted_per_missing: f64,
    /// Data blocks read per present-key lookup.
    pub blocks_per_present: f64,
    /// File reads per missing-key lookup (module docs).
    pub file_reads_per_missing: f64,
    /// File reads per present-key lookup.
    pub file_reads_per_present: f64,
    /// `hit_fraction * blocks_per_present + (1 - hit_fraction) * blocks_per_missing`: a lookup
    /// of the load's mix.
    pub blocks_per_mix: f64,
}

impl LevelRow {
    /// Filter bits per entry.
    pub fn bits_per_key(&self) -> f64 {
        if self.entries == 0 {
            0.0
        } else {
            self.filter_bytes as f64 * 8.0 / self.entries as f64
        }
    }
}

/// Per-level rows (levels holding files) and the totals row.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// One row per non-empty level, L0 first.
    pub levels: Vec<LevelRow>,
    /// Sums over the levels (FPR: pooled false positives over pooled negatives).
    pub total: LevelRow,
    /// Wall-clock microseconds per present-key lookup (one thread, answers checked).
    pub us_per_present: f64,
    /// Wall-clock microseconds per missing-key lookup.
    pub us_per_missing: f64,
}

/// Looks up `lookups` present keys (drawn by `present` from the load `order`; uniform draws
/// key numbers directly, as the committed report was made), then `lookups` random missing keys
/// (odd numbers in the key range), checking every answer, and returns the per-level figures
/// (`hit_fraction` weighs them into [`LevelRow::blocks_per_mix`]).
pub fn measure(
    db: &Db,
    order: &[u64],
    (lookups, seed, hit_fraction): (u64, u64, f64),
    present: PresentDist,
) -> Result<Measured> {
    let keys = order.len() as u64;
    let mut rng = SplitMix64::new(seed ^ 0x5eed_100c);
    let before = db.stats();
    let mut draw = PresentKeys::new(present);
    let mut found = 0;
    let t = Instant::now();
    for _ in 0..lookups {
        let i = match present {
            PresentDist::Uniform => rng.below(keys),
            _ => draw.next(&mut rng, order, order.len()),
        };
        found += u64::from(db.get(key(2 * i))?.is_some());
    }
    let present_secs = t.elapsed().as_secs_f64();
    let mid = db.stats();
    let mut false_found = 0;
    let t = Instant::now();
    for _ in 0..lookups {
        false_found += u64::from(db.get(key(2 * rng.below(keys) + 1))?.is_some());
    }
    let missing_secs = t.elapsed().as_secs_f64();
    let after = db.stats();
    if found != lookups || false_found != 0 {
        return Err(Error::corruption(
            format!("lookups disagree with the load: {found}/{lookups} present keys found, {false_found} missing keys found"),
            None,
        ));
    }
    let mut m = tabulate(&mid.since(&before), &after.since(&mid), lookups, hit_fraction);
    m.us_per_present = present_secs * 1e6 / lookups as f64;
    m.us_per_missing = missing_secs * 1e6 / lookups as f64;
    Ok(m)
}

/// Reads of a level's files that the block cache did not serve (module docs).
fn file_reads(r: &ReadStats) -> u64 {
    r.file_reads + r.index_cache_misses + r.filter_cache_misses
}

fn tabulate(present: &Stats, missing: &Stats, lookups: u64, hit_fraction: f64) -> Measured {
    let per = |n: u64| n as f64 / lookups.max(1) as f64;
    let mix = |present: f64, missing: f64| hit_fraction * present + (1.0 - hit_fraction) * missing;
    let mut levels = Vec::new();
    for (l, p) in missing.levels.iter().zip(&present.levels) {
        if l.files == 0 && l.reads.data_blocks_read == 0 && p.reads.data_blocks_read == 0 {
            continue;
        }
        let checks = per(l.reads.filter_checks);
        let unfiltered = per(l.reads.data_blocks_read) - per(l.reads.false_positives());
        levels.push(LevelRow {
            level: Some(l.level),
            files: l.files,
            entries: l.entries,
            filter: kinds(l),
            filter_bytes: l.filter_bytes,
            configured_fpr: l.configured_fpr,
            built_fpr: l.built_fpr,
            observed_fpr: l.reads.observed_fpr(),
            checks_per_missing: checks,
            blocks_per_missing: per(l.reads.data_blocks_read),
            predicted_per_missing: match l.configured_fpr {
                Some(p) => checks * p + unfiltered.max(0.0),
                None => per(l.reads.data_blocks_read),
            },
            blocks_per_present: per(p.reads.data_blocks_read),
            file_reads_per_missing: per(file_reads(&l.reads)),
            file_reads_per_present: per(file_reads(&p.reads)),
            blocks_per_mix: mix(per(p.reads.data_blocks_read), per(l.reads.data_blocks_read)),
        });
    }
    let reads = missing.total_reads();
    let sum = |f: fn(&LevelRow) -> f64| levels.iter().map(f).sum::<f64>();
    let total = LevelRow {
        level: None,
        files: levels.iter().map(|l| l.files).sum(),
        entries: levels.iter().map(|l| l.entries).sum(),
        filter: "total".into(),
        filter_bytes: levels.iter().map(|l| l.filter_bytes).sum(),
        configured_fpr: None,
        built_fpr: None,
        observed_fpr: reads.observed_fpr(),
        checks_per_missing: sum(|l| l.checks_per_missing),
        blocks_per_missing: sum(|l| l.blocks_per_missing),
        predicted_per_missing: sum(|l| l.predicted_per_missing),
        blocks_per_present: sum(|l| l.blocks_per_present),
        file_reads_per_missing: sum(|l| l.file_reads_per_missing),
        file_reads_per_present: sum(|l| l.file_reads_per_present),
        blocks_per_mix: sum(|l| l.blocks_per_mix),
    };
    Measured { levels, total, us_per_present: 0.0, us_per_missing: 0.0 }
}

fn kinds(l: &LevelStats) -> String {
    if l.filter_kinds.is_empty() {
        "none".into()
    } else {
        l.filter_kinds.join("+")
    }
}
