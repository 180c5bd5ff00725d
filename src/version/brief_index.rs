//! A level's search structure: its files' largest briefs, sorted, with a static search tree of
//! fan-out [`FAN`] over them, so finding a key's file takes a few rounds of independent loads
//! instead of a chain of log2(files) dependent ones.
//!
//! Why: at 50M keys a sorted level holds hundreds of files, and a missing-key lookup's binary
//! search over their briefs was 15% of a readmissing profile: nine steps, each waiting for the
//! load the previous one chose (the briefs are evicted from L1 and L2 by the filter probes
//! between lookups). Here each round counts, over one group of at most 16 briefs (four cache
//! lines, loaded together), how many are below the target: 262 files take three rounds.
//!
//! Layout: `summaries[0][g]` is the largest brief of group `g` (briefs `16 g .. 16 g + 16`),
//! `summaries[1]` the same over `summaries[0]`, and so on until a level of at most 16 entries.
//! Invariant: every summary level is derived from the briefs by `new`, never changed apart.
//!
//! A radix table over the briefs' span goes first ([`Radix`]): where the files' keys spread
//! evenly (numbers, hashes, random ids), the key's bucket names the one or two files it can
//! fall in, and the search is two loads instead of three rounds (1 to 4 buckets a file). In a 100M-key readmissing
//! profile (482 files) the three rounds were 11% of the time, and the filter's cache miss
//! cannot start before the search ends. Where a bucket holds more than a group's worth of
//! briefs (clustered keys, long runs of equal briefs) the summaries answer.

use super::Brief;
use crate::radix::Radix;

/// Briefs per group.
const FAN: usize = 16;

/// Sorted briefs and their summaries (see the module documentation).
#[derive(Clone, Debug, Default)]
pub(super) struct BriefIndex {
    briefs: Vec<Brief>,
    /// Finest first; empty when the briefs fit one group.
    summaries: Vec<Vec<Brief>>,
    radix: Radix<Brief>,
}

/// Buckets per brief asked for: the power of two of buckets and the span's own width make it 1
/// to 4, so a bucket holds one or two briefs when they spread evenly.
const BUCKETS_PER_BRIEF: usize = 2;

impl BriefIndex {
    /// The index of `briefs`, which must be sorted.
    pub(super) fn new(briefs: Vec<Brief>) -> BriefIndex {
        debug_assert!(briefs.windows(2).all(|w| w[0] <= w[1]), "briefs must be sorted");
        let mut summaries: Vec<Vec<Brief>> = Vec::new();
        loop {
            let finer = summaries.last().unwrap_or(&briefs);
            if finer.len() <= FAN {
                break;
            }
            let coarser = finer.chunks(FAN).map(|g| g[g.len() - 1]).collect();
            summaries.push(coarser);
        }
        let radix = Radix::new(&briefs, briefs.len() * BUCKETS_PER_BRIEF);
        BriefIndex { briefs, summaries, radix }
    }

    /// The briefs, sorted.
    pub(super) fn briefs(&self) -> &[Brief] {
        &self.briefs
    }

    /// `briefs().partition_point(|&b| b < target)`: within the target's radix bucket when it
    /// holds at most a group's worth of briefs, else through the summaries.
    #[inline]
    pub(super) fn first_at_or_after(&self, target: Brief) -> usize {
        let (lo, hi) = self.radix.narrow(target);
        if hi - lo <= FAN {
            return lo + count_below(&self.briefs[lo..hi], target);
        }
        self.search_summaries(target)
    }

    /// `first_at_or_after` through the summaries: per round, the count of the group's
    /// entries below `target` (no branch, independent loads) picks the group of the next
    /// finer level. The entries before a group are all below `target`, so the count made
    /// global is the number of finer groups wholly below it: the answer lies in the next.
    fn search_summaries(&self, target: Brief) -> usize {
        let mut below = 0;
        for level in self.summaries.iter().rev().map(Vec::as_slice).chain([self.briefs()]) {
            let lo = (below * FAN).min(level.len());
            let group = &level[lo..(lo + FAN).min(level.len())];
            below = lo + count_below(group, target);
        }
        below
    }
}

/// How many of `briefs` are `< target`, each compared without a branch ([`super::below`]).
#[inline(always)]
fn count_below(briefs: &[Brief], target: Brief) -> usize {
    briefs.iter().map(|&b| super::below(b, target)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn agrees_with_partition_point_at_every_length_and_target() {
        let mut rng = SplitMix64::new(31);
        // Lengths around every group boundary of one, two and three summary levels.
        let lengths = (0..70).chain([255, 256, 257, 262, 272, 4095, 4096, 4097, 5000]);
        for len in lengths {
            for spread in [3u64, 1 << 20] {
                // Few distinct values (spread 3 x 20): long runs of equal briefs.
                let distinct = if spread == 3 { 20 } else { len as u64 + 1 };
                let mut briefs: Vec<Brief> =
                    (0..len).map(|_| (rng.below(distinct) * spread) as Brief).collect();
                briefs.sort();
                let index = BriefIndex::new(briefs.clone());
                assert_eq!(index.briefs(), &briefs[..]);
                let max = distinct * spread + 2;
                let targets = (0..200).map(|_| rng.below(max) as Brief).chain([0, max as Brief]);
                for target in targets.chain(briefs.iter().flat_map(|&b| [b, b + 1]).take(300)) {
                    let want = briefs.partition_point(|&b| b < target);
                    assert_eq!(index.first_at_or_after(target), want, "{target} in {len}");
                }
            }
        }
    }

    #[test]
    fn briefs_at_the_ends_of_their_range() {
        // The comparison is the sign of a difference: check next to 0 and 2^96.
        let ends: Vec<Brief> =
            (0..40).map(|i| if i < 20 { i } else { (1 << 96) - 40 + i }).collect();
        let index = BriefIndex::new(ends.clone());
        for target in [0, 1, 19, 20, (1 << 96) - 21, (1 << 96) - 20, (1 << 96) - 1, 1 << 96] {
            let want = ends.partition_point(|&b| b < target);
            assert_eq!(index.first_at_or_after(target), want, "{target:#x}");
        }
    }
}
