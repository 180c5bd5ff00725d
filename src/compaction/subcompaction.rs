//! Subcompactions (RocksDB's `max_subcompactions`): a keyspace's compaction input that is large
//! is split into disjoint user-key ranges, each merged on its own thread into its own outputs
//! by the job (`job::run_ranges`). This module only cuts the ranges: it is a pure function of
//! the input files' metadata and never calls into the job.
//!
//! Where to cut ([`plan`]): at the inputs' file boundaries (a file's largest or smallest user
//! key `b` gives the cut `b ++ [0]`, the smallest key above `b`),
//! chosen so each range holds about the same input bytes. A file that straddles a cut counts
//! the share of its bytes below it interpolated by key position (the eight bytes after the
//! common prefix of its smallest and largest keys), which evens out the L0 files of an L0 -> L1
//! compaction that each span the whole key range.
//!
//! Invariants: the ranges are ordered, disjoint and cover every user key; every version of a
//! user key falls in one range (ranges are cut between user keys), so collapse, snapshot and
//! tombstone decisions are those of a single job; range `i`'s outputs are returned before
//! range `i + 1`'s, so the job's outputs stay in key order. A range whose cut is `b ++ [0]`
//! ends its outputs' tombstones there, so its files claim keys up to `b` at most and the next
//! range's files start above `b` (src/range_del.rs, `Fragments::largest_key`).

use crate::manifest::FileMeta;
use crate::version::TableFile;
use std::sync::Arc;

/// A user-key range `[lo, hi)` of one keyspace (`None`: unbounded on that side).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyRange {
    /// Smallest user key in the range.
    pub lo: Option<Vec<u8>>,
    /// First user key above the range.
    pub hi: Option<Vec<u8>>,
}

impl KeyRange {
    /// Whether a file claiming user keys `[smallest, largest]` may hold keys of the range.
    pub(crate) fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        self.lo.as_deref().is_none_or(|lo| largest >= lo)
            && self.hi.as_deref().is_none_or(|hi| smallest < hi)
    }
}

/// The key ranges to merge separately: one unbounded range unless the input holds at least two
/// target files' worth of bytes; then up to `max` ranges (at most one per `target_file_size` of
/// input), fewer when the file boundaries do not allow an even split.
pub fn plan(runs: &[Vec<Arc<TableFile>>], max: usize, target_file_size: u64) -> Vec<KeyRange> {
    let files: Vec<&FileMeta> = runs.iter().flatten().map(|f| &f.meta).collect();
    let cuts = cut_keys(&files, max, target_file_size);
    let mut ranges = Vec::with_capacity(cuts.len() + 1);
    let mut lo: Option<Vec<u8>> = None;
    for c in cuts {
        ranges.push(KeyRange { lo: lo.take(), hi: Some(c.clone()) });
        lo = Some(c);
    }
    ranges.push(KeyRange { lo, hi: None });
    ranges
}

/// The cut keys of [`plan`] (strictly increasing; a cut `c` puts user keys `< c` left of it).
fn cut_keys(files: &[&FileMeta], max: usize, target_file_size: u64) -> Vec<Vec<u8>> {
    let total: u64 = files.iter().map(|f| f.size).sum();
    let n = max.min((total / target_file_size.max(1)) as usize);
    if n < 2 || files.is_empty() {
        return Vec::new();
    }
    let min = files.iter().map(|f| f.smallest_key.as_slice()).min().expect("not empty");
    let mut candidates: Vec<Vec<u8>> = Vec::with_capacity(files.len() * 2);
    // Every cut is `b ++ [0]`: a range's tombstones clipped to end there make its files claim
    // keys up to `b` only (`Fragments::largest_key`); a cut at any other key `c` would make
    // them claim `c`, which the next range's files may start with.
    for f in files {
        for k in [&f.largest_key, &f.smallest_key] {
            let mut above = k.clone();
            above.push(0);
            candidates.push(above);
        }
    }
    // A cut at or below the smallest key leaves an empty range on its left.
    candidates.retain(|c| c.as_slice() > min);
    candidates.sort_unstable();
    candidates.dedup();
    let below: Vec<f64> = candidates.iter().map(|c| bytes_below(files, c)).collect();
    let mut cuts = Vec::with_capacity(n - 1);
    let mut prev = 0.0f64;
    let mut from = 0;
    for i in 1..n {
        let goal = total as f64 * i as f64 / n as f64;
        // The first candidate at or past the goal, or the one before it if that is closer.
        let Some(mut j) = (from..candidates.len()).find(|&j| below[j] >= goal) else { break };
        if j > from && goal - below[j - 1] < below[j] - goal {
            j -= 1;
        }
        // Every range must hold some input, and the last one too.
        if below[j] <= prev || below[j] >= total as f64 {
            continue;
        }
        cuts.push(candidates[j].clone());
        prev = below[j];
        from = j + 1;
    }
    cuts
}

/// Estimated input bytes of user keys `< cut`.
fn bytes_below(files: &[&FileMeta], cut: &[u8]) -> f64 {
    files
        .iter()
        .map(|f| {
            if f.largest_key.as_slice() < cut {
                f.size as f64
            } else if f.smallest_key.as_slice() >= cut {
                0.0
            } else {
                f.size as f64 * fraction_below(&f.smallest_key, &f.largest_key, cut)
            }
        })
        .sum()
}

/// Where `cut` (with `smallest < cut <= largest`) lies between the two keys, in `[0, 1]`, from
/// the eight bytes after their common prefix (every key between them shares that prefix).
fn fraction_below(smallest: &[u8], largest: &[u8], cut: &[u8]) -> f64 {
    let p = smallest.iter().zip(largest).take_while(|(a, b)| a == b).count();
    let pos = |k: &[u8]| {
        let mut b = [0u8; 8];
        let tail = k.get(p..).unwrap_or(&[]);
        let n = tail.len().min(8);
        b[..n].copy_from_slice(&tail[..n]);
        u64::from_be_bytes(b) as f64
    };
    let (s, l, c) = (pos(smallest), pos(largest), pos(cut));
    if l <= s {
        return 0.5;
    }
    ((c - s) / (l - s)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(number: u64, smallest: &str, largest: &str, size: u64) -> FileMeta {
        FileMeta {
            number,
            size,
            smallest_key: smallest.as_bytes().to_vec(),
            largest_key: largest.as_bytes().to_vec(),
            smallest_seq: 1,
            largest_seq: 1,
            entries: 1,
            keyspace: 0,
            global_seq: None,
            stored_keyspace: None,
        }
    }

    fn above(k: &str) -> Vec<u8> {
        let mut v = k.as_bytes().to_vec();
        v.push(0);
        v
    }

    #[test]
    fn a_small_input_is_one_range() {
        let f = [meta(1, "a", "m", 10), meta(2, "n", "z", 10)];
        let files: Vec<&FileMeta> = f.iter().collect();
        assert!(cut_keys(&files, 4, 15).is_empty(), "20 bytes < 2 target files of 15");
        assert!(cut_keys(&files, 1, 1).is_empty(), "max 1 never splits");
    }

    #[test]
    fn a_level_of_equal_files_splits_at_the_file_boundaries_into_equal_ranges() {
        let f = [
            meta(1, "a", "c", 100),
            meta(2, "d", "f", 100),
            meta(3, "g", "i", 100),
            meta(4, "j", "l", 100),
        ];
        let files: Vec<&FileMeta> = f.iter().collect();
        assert_eq!(cut_keys(&files, 2, 100), vec![above("f")]);
        assert_eq!(cut_keys(&files, 4, 100), vec![above("c"), above("f"), above("i")]);
        // More ranges than the input's target files: one per target file.
        assert_eq!(cut_keys(&files, 8, 200), vec![above("f")]);
    }

    #[test]
    fn files_spanning_the_whole_range_are_split_by_key_position() {
        // Two L0 files over everything, and a level below of four files.
        let f = [
            meta(1, "a", "z", 400),
            meta(2, "a", "z", 400),
            meta(3, "a", "f", 100),
            meta(4, "g", "m", 100),
            meta(5, "n", "s", 100),
            meta(6, "t", "z", 100),
        ];
        let files: Vec<&FileMeta> = f.iter().collect();
        let cuts = cut_keys(&files, 2, 100);
        assert_eq!(cuts.len(), 1);
        let below = bytes_below(&files, &cuts[0]);
        assert!((below - 600.0).abs() < 120.0, "{below} of 1200 bytes left of the cut");
    }

    #[test]
    fn the_plan_covers_every_key_with_ordered_disjoint_ranges() {
        let f: Vec<FileMeta> = (0..20u64)
            .map(|i| meta(i, &format!("k{:03}", i * 10), &format!("k{:03}", i * 10 + 9), 50))
            .collect();
        let tables: Vec<Arc<TableFile>> = Vec::new();
        assert_eq!(plan(&[tables], 4, 10), vec![KeyRange::default()], "no input, one range");
        let files: Vec<&FileMeta> = f.iter().collect();
        let cuts = cut_keys(&files, 3, 100);
        assert_eq!(cuts.len(), 2);
        assert!(cuts.windows(2).all(|w| w[0] < w[1]));
        assert!(cuts.iter().all(|c| c.as_slice() > b"k000".as_slice()));
    }

    #[test]
    fn fraction_below_interpolates_after_the_common_prefix() {
        assert_eq!(fraction_below(b"p\x00", b"p\xff", b"p\x00"), 0.0);
        assert_eq!(fraction_below(b"p\x00", b"p\xff", b"p\xff"), 1.0);
        let mid = fraction_below(b"p\x00", b"p\xff", b"p\x80");
        assert!((mid - 0.5).abs() < 0.01, "{mid}");
        assert_eq!(fraction_below(b"same", b"same", b"same"), 0.5);
    }
}
