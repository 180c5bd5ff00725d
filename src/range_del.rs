//! Range tombstones: `delete_range(start, end)` writes one tombstone that deletes every version
//! of every user key in `[start, end)` with a lower sequence number (RocksDB's DeleteRange).
//!
//! Tombstones live beside the point entries, never among them: in a memtable in a list of their
//! own, in an SST in its range-deletion block (docs/format.md#range-deletion-block). Every reader
//! asks one question of a set of tombstones: "the largest sequence number `<= snapshot` of a
//! tombstone covering key `k`" ([`Fragments::max_covering_seq`]); a point version of `k` with a
//! lower sequence number than the largest such answer over the sources read so far is deleted.
//!
//! [`Fragments`] answers it in O(log n): the tombstones are cut at every start and end key into
//! fragments that do not overlap (RocksDB's `FragmentedRangeTombstoneList`); each fragment keeps
//! the sequence numbers of the tombstones that cover it, newest first. Two fragments are either
//! disjoint or (in the flattened [`Fragments::tombstones`] form) share exactly the same bounds.
//!
//! Sequence number 0 is never given to a write, so 0 serves as "no covering tombstone": no
//! version has a sequence number below it.

/// One range tombstone: deletes the user keys in `[start, end)` written before `seq`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RangeTombstone {
    /// First user key deleted (inclusive).
    pub start: Vec<u8>,
    /// First user key not deleted (exclusive); always greater than `start`.
    pub end: Vec<u8>,
    /// Sequence number of the `delete_range`.
    pub seq: u64,
}

impl RangeTombstone {
    /// Whether the tombstone's range holds `key`.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.start.as_slice() <= key && key < self.end.as_slice()
    }
}

/// A fragment: the user keys `[start, end)` are covered by tombstones with sequence numbers
/// `seqs` (newest first, no duplicates, never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// First user key of the fragment (inclusive).
    pub start: Vec<u8>,
    /// End of the fragment (exclusive).
    pub end: Vec<u8>,
    /// Sequence numbers of the tombstones covering the fragment, descending.
    pub seqs: Vec<u64>,
}

impl Fragment {
    /// The newest sequence number `<= snapshot` (0 if none).
    fn newest_at(&self, snapshot: u64) -> u64 {
        // `seqs` is descending: the first one at or below the snapshot.
        let i = self.seqs.partition_point(|&s| s > snapshot);
        self.seqs.get(i).copied().unwrap_or(0)
    }
}

/// Tombstones cut into sorted, non-overlapping fragments. See the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fragments {
    frags: Vec<Fragment>,
    /// Bytes of keys held (for memory accounting).
    key_bytes: usize,
}

impl Fragments {
    /// Fragments `tombstones` (any order, may overlap; empty ranges are ignored).
    pub fn new(tombstones: &[RangeTombstone]) -> Fragments {
        let live: Vec<&RangeTombstone> = tombstones.iter().filter(|t| t.start < t.end).collect();
        if live.is_empty() {
            return Fragments::default();
        }
        // Every start and end is a cut point; each tombstone spans consecutive pieces.
        let mut cuts: Vec<&[u8]> =
            live.iter().flat_map(|t| [t.start.as_slice(), t.end.as_slice()]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut seqs: Vec<Vec<u64>> = vec![Vec::new(); cuts.len() - 1];
        for t in &live {
            let from = cuts.partition_point(|c| *c < t.start.as_slice());
            let to = cuts.partition_point(|c| *c < t.end.as_slice());
            for s in &mut seqs[from..to] {
                s.push(t.seq);
            }
        }
        let mut frags = Vec::new();
        for (i, mut s) in seqs.into_iter().enumerate() {
            if s.is_empty() {
                continue;
            }
            s.sort_unstable_by(|a, b| b.cmp(a));
            s.dedup();
            frags.push(Fragment { start: cuts[i].to_vec(), end: cuts[i + 1].to_vec(), seqs: s });
        }
        let key_bytes = frags.iter().map(|f| f.start.len() + f.end.len()).sum();
        Fragments { frags, key_bytes }
    }

    /// The same fragments with every tombstone at sequence `seq` (an ingested table's, whose
    /// tombstones are stored at 0 and read at its global sequence number).
    pub fn at_seq(mut self, seq: u64) -> Fragments {
        for f in &mut self.frags {
            f.seqs = vec![seq];
        }
        self
    }

    /// True when no tombstone is held.
    pub fn is_empty(&self) -> bool {
        self.frags.is_empty()
    }

    /// The fragments in key order.
    pub fn fragments(&self) -> &[Fragment] {
        &self.frags
    }

    /// The index of the fragment holding `key`, if any.
    fn find(&self, key: &[u8]) -> Option<usize> {
        // The last fragment starting at or before `key`; fragments are sorted and disjoint.
        let i = self.frags.partition_point(|f| f.start.as_slice() <= key);
        let f = self.frags.get(i.checked_sub(1)?)?;
        (key < f.end.as_slice()).then_some(i - 1)
    }

    /// The largest sequence number `<= snapshot` of a tombstone covering `key`; 0 if none.
    pub fn max_covering_seq(&self, key: &[u8], snapshot: u64) -> u64 {
        match self.find(key) {
            Some(i) => self.frags[i].newest_at(snapshot),
            None => 0,
        }
    }

    /// The sequence numbers of the tombstones covering `key`, newest first (empty if none).
    pub fn covering_seqs(&self, key: &[u8]) -> &[u64] {
        match self.find(key) {
            Some(i) => &self.frags[i].seqs,
            None => &[],
        }
    }

    /// Whether a version of `key` with sequence number `seq` is deleted by a tombstone visible
    /// at `snapshot`.
    pub fn covers(&self, key: &[u8], seq: u64, snapshot: u64) -> bool {
        seq < self.max_covering_seq(key, snapshot)
    }

    /// Every (fragment, sequence number) pair as a tombstone, in internal-key order of
    /// `(start, seq)` (start ascending, seq descending): the range-deletion block's entries.
    pub fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.frags.iter().flat_map(|f| {
            f.seqs.iter().map(|&seq| RangeTombstone {
                start: f.start.clone(),
                end: f.end.clone(),
                seq,
            })
        })
    }

    /// The tombstones (as fragments) that intersect `[lo, hi)` (`None` = unbounded), clipped to
    /// it, keeping only sequence numbers `<= snapshot`.
    pub fn clipped(
        &self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        snapshot: u64,
    ) -> Vec<RangeTombstone> {
        let mut out = Vec::new();
        for f in &self.frags {
            let start = match lo {
                Some(l) if f.start.as_slice() < l => l,
                _ => f.start.as_slice(),
            };
            let end = match hi {
                Some(h) if f.end.as_slice() > h => h,
                _ => f.end.as_slice(),
            };
            if start >= end {
                continue;
            }
            for &seq in f.seqs.iter().filter(|&&s| s <= snapshot) {
                out.push(RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq });
            }
        }
        out
    }

    /// Number of (fragment, sequence number) pairs.
    pub fn len(&self) -> usize {
        self.frags.iter().map(|f| f.seqs.len()).sum()
    }

    /// Smallest user key covered (the first fragment's start).
    pub fn smallest_key(&self) -> Option<&[u8]> {
        self.frags.first().map(|f| f.start.as_slice())
    }

    /// The largest user key a file holding these tombstones must claim
    /// (docs/format.md#range-deletion-block): the last fragment's end, exclusive, written as an
    /// inclusive bound. An end `e ++ [0]` covers no key above `e`, so `e` is exact and is returned
    /// instead; compaction cuts outputs at such keys, so neighbouring outputs stay disjoint.
    pub fn largest_key(&self) -> Option<Vec<u8>> {
        let end = &self.frags.last()?.end;
        Some(match end.split_last() {
            Some((0, head)) => head.to_vec(),
            _ => end.clone(),
        })
    }

    /// Approximate bytes of memory held.
    pub fn memory_bytes(&self) -> usize {
        self.key_bytes + self.frags.iter().map(|f| 64 + 8 * f.seqs.len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64 as Rng;

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone { start: start.into(), end: end.into(), seq }
    }

    #[test]
    fn overlapping_tombstones_become_disjoint_fragments() {
        let f = Fragments::new(&[t("a", "e", 5), t("c", "g", 9), t("x", "x", 3)]);
        let got: Vec<(&[u8], &[u8], Vec<u64>)> = f
            .fragments()
            .iter()
            .map(|f| (f.start.as_slice(), f.end.as_slice(), f.seqs.clone()))
            .collect();
        let want: Vec<(&[u8], &[u8], Vec<u64>)> =
            vec![(b"a", b"c", vec![5]), (b"c", b"e", vec![9, 5]), (b"e", b"g", vec![9])];
        assert_eq!(got, want);
        assert_eq!(f.len(), 4);
        assert_eq!(f.max_covering_seq(b"d", 100), 9);
        assert_eq!(f.max_covering_seq(b"d", 8), 5);
        assert_eq!(f.max_covering_seq(b"d", 4), 0);
        assert_eq!(f.max_covering_seq(b"g", 100), 0);
        assert!(f.covers(b"a", 4, 5) && !f.covers(b"a", 6, 100));
    }

    #[test]
    fn fragments_answer_like_the_plain_tombstone_list() {
        let mut rng = Rng::new(14);
        for _ in 0..200 {
            let n = rng.below(8) as usize;
            let key = |r: &mut Rng| vec![b'a' + r.below(10) as u8];
            let ts: Vec<RangeTombstone> = (0..n)
                .map(|i| {
                    let (a, b) = (key(&mut rng), key(&mut rng));
                    RangeTombstone {
                        start: a.clone().min(b.clone()),
                        end: b.max(a),
                        seq: i as u64 + 1,
                    }
                })
                .collect();
            let f = Fragments::new(&ts);
            let again = Fragments::new(&f.tombstones().collect::<Vec<_>>());
            assert_eq!(again.fragments(), f.fragments(), "fragmenting is idempotent");
            for k in b'a'..=b'k' {
                for snap in 0..=n as u64 + 1 {
                    let want =
                        ts.iter().filter(|t| t.contains(&[k]) && t.seq <= snap).map(|t| t.seq);
                    assert_eq!(f.max_covering_seq(&[k], snap), want.max().unwrap_or(0));
                }
            }
        }
    }

    #[test]
    fn largest_key_is_exact_for_an_end_with_a_trailing_zero() {
        assert_eq!(Fragments::new(&[t("a", "m", 1)]).largest_key(), Some(b"m".to_vec()));
        let z = RangeTombstone { start: b"a".to_vec(), end: b"k\0".to_vec(), seq: 1 };
        assert_eq!(Fragments::new(&[z]).largest_key(), Some(b"k".to_vec()));
        assert_eq!(Fragments::default().largest_key(), None);
    }

    #[test]
    fn clipping_keeps_the_part_inside_the_bounds_and_the_snapshot() {
        let f = Fragments::new(&[t("a", "m", 4), t("c", "z", 7)]);
        let got = f.clipped(Some(b"b"), Some(b"d"), 5);
        assert_eq!(got, vec![t("b", "c", 4), t("c", "d", 4)]);
        assert_eq!(f.clipped(None, None, 100).len(), 4);
    }
}
