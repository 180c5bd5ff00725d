//! Leveled compaction picking: a pure function of one immutable file set and the options.
//!
//! Scores (as in LevelDB and RocksDB): L0 scores `files / l0_compaction_trigger` (L0 files
//! overlap, so a lookup pays for each, and their count is what hurts), or waits for its bytes
//! to reach `l0_min_base_ratio` of the base bytes they overlap (`l0_score`); level `n >= 1` scores
//! `bytes / target(n)` with `target(n) = max_bytes_for_level_base * multiplier^(n-1)`, or with
//! `dynamic_level_bytes` the targets sized from the last level up
//! (`CompactionOptions::level_targets`; L0 then compacts into the base level, and the empty
//! levels above it score 0). The last level is never scored (nothing is below it). The level
//! with the highest score `>= 1` is compacted first.
//!
//! Inputs:
//! * L0 -> L1 (the base level) takes every L0 file (so no older L0 file is left above newer data moved down) and
//!   every L1 file overlapping their union range.
//! * Ln -> Ln+1 takes one file of Ln: the one with the smallest overlap ratio (bytes of
//!   overlapping Ln+1 files / its own bytes, RocksDB's `kMinOverlappingRatio`), which minimises
//!   the bytes rewritten per byte moved down; ties go to the smaller key. With it come the
//!   overlapping files of Ln+1.
//! * Trivial move: when a single Ln file (n >= 1) overlaps nothing in Ln+1 and Ln's configured
//!   filter serves for Ln+1's (the same kind, an FPR no larger: `LevelFilter::serves_for`),
//!   the file is moved by a manifest edit without rewriting. L0
//!   files are never moved trivially, so every file below L0 carries the compaction filter.
//!
//! `bottommost`: no level below the output level holds a file overlapping the inputs' range, so
//! tombstones that hide nothing older in the compaction can be dropped.

use crate::filter_plan::{level_filter, move_shape, LevelCounts, LevelMove};
use crate::manifest::FileMeta;
use crate::options::{CompactionOptions, FilterPolicy};
use crate::version::TableFile;
use std::sync::Arc;

/// A position in file order: `(keyspace, user key)`. Files hold one keyspace each, and the
/// keyspaces occupy consecutive ranges of the key order, so ranges span keyspaces naturally.
pub type KeyAt<'a> = (u32, &'a [u8]);

/// An owned [`KeyAt`].
pub type OwnedKeyAt = (u32, Vec<u8>);

/// Anything that carries a file's manifest metadata (the picker works on metas alone).
pub trait HasMeta {
    /// The file's metadata.
    fn meta(&self) -> &FileMeta;
}

impl HasMeta for FileMeta {
    fn meta(&self) -> &FileMeta {
        self
    }
}

impl HasMeta for Arc<TableFile> {
    fn meta(&self) -> &FileMeta {
        &self.meta
    }
}

/// A compaction to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    /// Level the inputs come from.
    pub level: usize,
    /// Level the outputs go to (`level + 1`, or `level` for an in-place bottom rewrite).
    pub output_level: usize,
    /// File numbers taken from `level`.
    pub inputs: Vec<u64>,
    /// File numbers taken from `output_level` (empty for an in-place rewrite).
    pub next_inputs: Vec<u64>,
    /// Move `inputs[0]` to `output_level` without rewriting it.
    pub trivial_move: bool,
    /// No deeper level overlaps the inputs: tombstones may be dropped.
    pub bottommost: bool,
    /// The score that chose this compaction (0 for manual ones).
    pub score: f64,
}

/// Entries and bytes of each level of `levels`: what the filter plan weighs
/// (`filter_plan::tree_shape`), for the compaction job and the picker alike.
pub fn level_counts<F: HasMeta>(levels: &[Vec<F>]) -> LevelCounts {
    let sum = |l: &Vec<F>, f: fn(&FileMeta) -> u64| l.iter().map(|g| f(g.meta())).sum();
    LevelCounts {
        entries: levels.iter().map(|l| sum(l, |m| m.entries)).collect(),
        bytes: levels.iter().map(|l| sum(l, |m| m.size)).collect(),
    }
}

/// The score of every level (the last level's is 0), against
/// [`CompactionOptions::level_targets`] (a level above the dynamic base level scores 0).
pub fn scores<F: HasMeta>(levels: &[Vec<F>], opts: &CompactionOptions) -> Vec<f64> {
    let last = levels.len().saturating_sub(1);
    let (targets, _) = opts.level_targets(&all_level_bytes(levels));
    (0..levels.len())
        .map(|l| {
            if l == last {
                0.0
            } else if l == 0 {
                l0_score(levels, opts)
            } else {
                level_bytes(&levels[l]) as f64 / targets[l]
            }
        })
        .collect()
}

/// L0's score: `files / l0_compaction_trigger`, except that an L0 holding fewer bytes than
/// `l0_min_base_ratio` times the base-level bytes its files overlap waits, scoring
/// `files / (l0_slowdown_writes_trigger / 2)`, so it compacts at half the slowdown trigger at
/// the latest. Why: an L0 -> base compaction rewrites the overlapped base bytes `B` for `L`
/// bytes of L0, `1 + B / L` writes per L0 byte; once the base level has grown to several L0
/// flushes (random keys overlap all of it), waiting for `L >= B` holds that to 2, where the
/// trigger alone (4 files against a full 256 MiB base of 30 MiB flushes) pays about 3.
fn l0_score<F: HasMeta>(levels: &[Vec<F>], opts: &CompactionOptions) -> f64 {
    let files = levels[0].len();
    let by_count = files as f64 / opts.l0_compaction_trigger.max(1) as f64;
    let cap = (opts.l0_slowdown_writes_trigger / 2).max(opts.l0_compaction_trigger).max(1);
    if by_count < 1.0 || opts.l0_min_base_ratio <= 0.0 || files >= cap {
        return by_count;
    }
    let base = opts.level_targets(&all_level_bytes(levels)).1;
    let Some(base_files) = levels.get(base) else { return by_count };
    let (lo, hi) = key_range(levels[0].iter().map(|f| f.meta()));
    let overlapped: u64 = base_files
        .iter()
        .filter(|g| overlaps(g.meta(), key_at(&lo), key_at(&hi)))
        .map(|g| g.meta().size)
        .sum();
    if level_bytes(&levels[0]) as f64 >= opts.l0_min_base_ratio * overlapped as f64 {
        by_count
    } else {
        files as f64 / cap as f64
    }
}

/// Bytes of every level.
pub fn all_level_bytes<F: HasMeta>(levels: &[Vec<F>]) -> Vec<u64> {
    levels.iter().map(|l| level_bytes(l)).collect()
}

/// The level a compaction of `level` writes to: the next one, except that L0 compacts into
/// the base level of [`CompactionOptions::level_targets`] (L1 with static targets).
pub fn output_level<F: HasMeta>(
    levels: &[Vec<F>],
    level: usize,
    opts: &CompactionOptions,
) -> usize {
    match level {
        0 => opts.level_targets(&all_level_bytes(levels)).1,
        l => l + 1,
    }
}

/// Bytes of a level's files.
pub fn level_bytes<F: HasMeta>(files: &[F]) -> u64 {
    files.iter().map(|f| f.meta().size).sum()
}

/// The next compaction, or `None` when every score is below 1.
pub fn pick<F: HasMeta>(
    levels: &[Vec<F>],
    opts: &CompactionOptions,
    policy: &FilterPolicy,
) -> Option<Pick> {
    let s = scores(levels, opts);
    let (level, &score) =
        s.iter().enumerate().filter(|(_, &x)| x >= 1.0).max_by(|a, b| a.1.total_cmp(b.1))?;
    let mut p = pick_level(levels, level, (opts, policy), None)?;
    p.score = score;
    Some(p)
}

/// A compaction of `level` into its [`output_level`]: for L0 all files, else the file with the
/// smallest overlap ratio; with `range = Some((start, end))` only files overlapping that key
/// range (inclusive bounds) are candidates, and every one of them is taken. `None` if no file
/// qualifies.
pub fn pick_level<F: HasMeta>(
    levels: &[Vec<F>],
    level: usize,
    (opts, policy): (&CompactionOptions, &FilterPolicy),
    range: Option<(KeyAt<'_>, KeyAt<'_>)>,
) -> Option<Pick> {
    let out = output_level(levels, level, opts);
    if out >= levels.len() {
        return None;
    }
    let candidates: Vec<&F> = levels[level]
        .iter()
        .filter(|f| range.is_none_or(|(s, e)| overlaps(f.meta(), s, e)))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let chosen: Vec<&F> = if level == 0 {
        // Every L0 file that overlaps the chosen ones must go too, or an older version left
        // in L0 would shadow the newer one moved down; taking them all is the simple closure.
        levels[0].iter().collect()
    } else if range.is_some() {
        candidates
    } else {
        let ratio = |f: &F| {
            let (s, e) = (f.meta().smallest(), f.meta().largest());
            let over: u64 = levels[out]
                .iter()
                .filter(|g| overlaps(g.meta(), s, e))
                .map(|g| g.meta().size)
                .sum();
            over as f64 / f.meta().size.max(1) as f64
        };
        let best = candidates
            .iter()
            .map(|f| (ratio(f), *f))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, f)| f)?;
        vec![best]
    };
    let (lo, hi) = key_range(chosen.iter().map(|f| f.meta()));
    let next: Vec<u64> = levels[out]
        .iter()
        .filter(|g| overlaps(g.meta(), key_at(&lo), key_at(&hi)))
        .map(|g| g.meta().number)
        .collect();
    // Judged on the tree as the move would leave it (`filter_plan::move_shape`).
    let shape = || {
        let f = chosen[0].meta();
        let moved = LevelMove { from: level, to: out, entries: f.entries, bytes: f.size };
        move_shape(opts, &level_counts(levels).after(Some(moved)), levels[0].len())
    };
    let trivial_move = level > 0 && chosen.len() == 1 && next.is_empty() && {
        let shape = shape();
        level_filter(policy, level, &shape).serves_for(&level_filter(policy, out, &shape))
    };
    // Judged over every input: a next-level input may reach past the chosen files' range, and a
    // tombstone there hides what a deeper level holds.
    let all_inputs = chosen
        .iter()
        .map(|f| f.meta())
        .chain(levels[out].iter().filter(|g| next.contains(&g.meta().number)).map(|g| g.meta()));
    let (blo, bhi) = key_range(all_inputs);
    let bottommost = is_bottommost(levels, out, key_at(&blo), key_at(&bhi));
    Some(Pick {
        level,
        output_level: out,
        inputs: chosen.iter().map(|f| f.meta().number).collect(),
        next_inputs: next,
        trivial_move,
        bottommost,
        score: 0.0,
    })
}

/// Whether no level below `output_level` has a file overlapping `[lo, hi]`.
pub fn is_bottommost<F: HasMeta>(
    levels: &[Vec<F>],
    output_level: usize,
    lo: KeyAt<'_>,
    hi: KeyAt<'_>,
) -> bool {
    levels.iter().skip(output_level + 1).flatten().all(|f| !overlaps(f.meta(), lo, hi))
}

/// Whether a file's key range intersects `[lo, hi]` (inclusive).
pub fn overlaps(m: &FileMeta, lo: KeyAt<'_>, hi: KeyAt<'_>) -> bool {
    m.largest() >= lo && m.smallest() <= hi
}

/// The borrowed form of an owned key position.
pub fn key_at(k: &OwnedKeyAt) -> KeyAt<'_> {
    (k.0, &k.1)
}

/// The union key range of some files.
pub fn key_range<'a>(metas: impl Iterator<Item = &'a FileMeta>) -> (OwnedKeyAt, OwnedKeyAt) {
    let mut lo: Option<KeyAt<'a>> = None;
    let mut hi: Option<KeyAt<'a>> = None;
    for m in metas {
        lo = Some(lo.map_or(m.smallest(), |l| l.min(m.smallest())));
        hi = Some(hi.map_or(m.largest(), |h| h.max(m.largest())));
    }
    let own = |k: Option<KeyAt<'_>>| k.map_or((0, Vec::new()), |(ks, u)| (ks, u.to_vec()));
    (own(lo), own(hi))
}

#[cfg(test)]
#[path = "sim.rs"]
mod sim;
