//! What a serializable transaction read from its snapshot, checked at commit: point keys and
//! key ranges per keyspace. A range is the part an iterator or cursor actually traversed, kept
//! in a slot the reader widens as it moves (so a range is tracked from its first step, even if
//! the iterator is leaked rather than dropped).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// A key range read: `(lower, upper)`.
pub(crate) type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Tracked reads.
#[derive(Debug, Default)]
pub(crate) struct ReadSet {
    /// Point keys per keyspace id.
    pub points: BTreeMap<u32, BTreeSet<Vec<u8>>>,
    /// Ranges as `(keyspace, range)`; `None` for a slot an iterator holds that covers nothing
    /// yet.
    pub ranges: Vec<(u32, Option<KeyRange>)>,
}

impl ReadSet {
    /// Tracks a read of `key`.
    pub fn add_key(&mut self, keyspace: u32, key: &[u8]) {
        let keys = self.points.entry(keyspace).or_default();
        if !keys.contains(key) {
            keys.insert(key.to_vec());
        }
    }

    /// A new, empty range slot of `keyspace`; its index for [`ReadSet::set_range`].
    pub fn new_slot(&mut self, keyspace: u32) -> usize {
        self.ranges.push((keyspace, None));
        self.ranges.len() - 1
    }

    /// Sets the range of slot `slot`.
    pub fn set_range(&mut self, slot: usize, range: KeyRange) {
        if let Some(s) = self.ranges.get_mut(slot) {
            s.1 = Some(range);
        }
    }
}

/// The smaller of two lower bounds (the one admitting more keys).
pub(crate) fn min_lower(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    use Bound::*;
    match (a, b) {
        (Unbounded, _) | (_, Unbounded) => Unbounded,
        (Included(x), Included(y)) => Included(x.min(y)),
        (Included(x), Excluded(y)) | (Excluded(y), Included(x)) => {
            if x <= y {
                Included(x)
            } else {
                Excluded(y)
            }
        }
        (Excluded(x), Excluded(y)) => Excluded(x.min(y)),
    }
}

/// The larger of two upper bounds.
pub(crate) fn max_upper(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    use Bound::*;
    match (a, b) {
        (Unbounded, _) | (_, Unbounded) => Unbounded,
        (Included(x), Included(y)) => Included(x.max(y)),
        (Included(x), Excluded(y)) | (Excluded(y), Included(x)) => {
            if x >= y {
                Included(x)
            } else {
                Excluded(y)
            }
        }
        (Excluded(x), Excluded(y)) => Excluded(x.max(y)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Bound::*;

    #[test]
    fn bounds_widen_to_the_larger_range() {
        assert_eq!(
            min_lower(Included(b"b".to_vec()), Excluded(b"a".to_vec())),
            Excluded(b"a".to_vec())
        );
        assert_eq!(
            min_lower(Included(b"a".to_vec()), Excluded(b"a".to_vec())),
            Included(b"a".to_vec())
        );
        assert_eq!(
            max_upper(Included(b"a".to_vec()), Excluded(b"a".to_vec())),
            Included(b"a".to_vec())
        );
        assert_eq!(
            max_upper(Excluded(b"c".to_vec()), Included(b"b".to_vec())),
            Excluded(b"c".to_vec())
        );
        assert_eq!(max_upper(Unbounded, Included(b"b".to_vec())), Unbounded);
        let mut rs = ReadSet::default();
        let s = rs.new_slot(0);
        assert_eq!(rs.ranges[s].1, None);
        rs.set_range(s, (Unbounded, Included(b"x".to_vec())));
        assert_eq!(rs.ranges[s].1, Some((Unbounded, Included(b"x".to_vec()))));
    }
}
