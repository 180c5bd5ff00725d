//! [`Radix`]: buckets of equal width over a sorted array of integer keys, narrowing a search
//! for the first key at or above a target to the one bucket it falls in.
//!
//! Why: the searches of a point lookup (a level's files by their largest keys' briefs, a
//! table's data blocks by their separators' prefixes) were binary searches or small search
//! trees, each step a load that waited for the one before. On a cold array every step is a
//! cache miss: at 100M keys a table's index search took about twelve, 36% of a readrandom
//! profile. Keys drawn from numbers, hashes or random ids spread evenly over their range, and
//! then the target's bucket names the one or two keys the answer lies between: two loads.
//! Where keys cluster, a bucket can hold many; callers search such a bucket their usual way.
//!
//! Layout: bucket `b` holds the keys in `base + (b << shift) .. base + ((b + 1) << shift)`,
//! `base` being the smallest key, and `starts[b]` counts the keys below its start;
//! `starts[buckets]` counts them all. Invariant: derived from the keys by [`Radix::new`] and
//! never changed apart; no keys give no bucket (`starts == [0]`).

/// The integer keys a [`Radix`] can bucket.
pub(crate) trait RadixKey: Copy + Ord {
    /// Bits of the type.
    const BITS: u32;
    /// `self - other` for `self >= other`.
    fn minus(self, other: Self) -> Self;
    /// Leading zero bits.
    fn leading_zeros(self) -> u32;
    /// `self >> shift`, saturated to `usize`.
    fn shifted(self, shift: u32) -> usize;
    /// `base + (bucket << shift)`, for a bucket at or below the last key's.
    fn bucket_start(base: Self, bucket: usize, shift: u32) -> Self;
    /// Zero.
    const ZERO: Self;
}

/// The same impl for each unsigned width the callers use.
macro_rules! radix_key {
    ($($t:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            const ZERO: $t = 0;
            #[inline(always)]
            fn minus(self, other: $t) -> $t {
                self - other
            }
            #[inline(always)]
            fn leading_zeros(self) -> u32 {
                <$t>::leading_zeros(self)
            }
            #[inline(always)]
            fn shifted(self, shift: u32) -> usize {
                usize::try_from(self >> shift).unwrap_or(usize::MAX)
            }
            #[inline(always)]
            fn bucket_start(base: $t, bucket: usize, shift: u32) -> $t {
                base + ((bucket as $t) << shift)
            }
        }
    )*};
}

radix_key!(u64, u128);

/// See the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct Radix<K> {
    base: K,
    shift: u32,
    starts: Box<[u32]>,
}

impl<K: RadixKey> Default for Radix<K> {
    fn default() -> Radix<K> {
        Radix { base: K::ZERO, shift: 0, starts: Box::new([0]) }
    }
}

impl<K: RadixKey> Radix<K> {
    /// The buckets of `keys` (sorted, fewer than 2^32): the span of the keys cut into equal
    /// widths of a power of two, at most `max_buckets` rounded up to a power of two (and at
    /// least two, so a shift stays below the key's width), and more than half of that when the
    /// span is wider than it.
    pub(crate) fn new(keys: &[K], max_buckets: usize) -> Radix<K> {
        let (Some(&base), Some(&last)) = (keys.first(), keys.last()) else {
            return Radix::default();
        };
        debug_assert!(keys.windows(2).all(|w| w[0] <= w[1]), "keys must be sorted");
        if last < base {
            return Radix::default(); // unsorted: no answer is meaningful; none panics
        }
        let bucket_bits = max_buckets.max(2).next_power_of_two().trailing_zeros();
        let span = last.minus(base);
        let shift = (K::BITS - span.leading_zeros()).saturating_sub(bucket_bits);
        let buckets = span.shifted(shift) + 1;
        let mut starts = Vec::with_capacity(buckets + 1);
        let mut below = 0;
        for b in 0..buckets {
            // Bucket b starts at or before the last key, so for sorted keys the scan stops
            // inside `keys` (the bound only keeps unsorted ones from indexing past it).
            let start = K::bucket_start(base, b, shift);
            while below < keys.len() && keys[below] < start {
                below += 1;
            }
            starts.push(below as u32);
        }
        starts.push(keys.len() as u32);
        Radix { base, shift, starts: starts.into_boxed_slice() }
    }

    /// `(lo, hi)` with `lo <= keys.partition_point(|&k| k < target) <= hi`, for the keys the
    /// radix was made of: `lo` counts the keys below the start of `target`'s bucket, `hi` those
    /// below the next bucket's start (before the first bucket or past the last, `lo == hi`).
    #[inline(always)]
    pub(crate) fn narrow(&self, target: K) -> (usize, usize) {
        if target < self.base {
            return (0, 0);
        }
        let last = self.starts.len() - 1;
        let b = target.minus(self.base).shifted(self.shift).min(last);
        let lo = self.starts[b] as usize;
        let hi = if b < last { self.starts[b + 1] as usize } else { lo };
        (lo, hi)
    }

    /// Starts loading the bucket bounds [`Radix::narrow`] of `target` reads (a hint).
    #[inline]
    pub(crate) fn prefetch(&self, target: K) {
        if target >= self.base {
            let b = target.minus(self.base).shifted(self.shift).min(self.starts.len() - 1);
            crate::filter::prefetch_read(&self.starts[b]);
        }
    }

    /// Bytes of the bucket bounds (no allocator overhead).
    pub(crate) fn bytes(&self) -> usize {
        self.starts.len() * std::mem::size_of::<u32>()
    }

    /// Bytes of heap memory held.
    pub(crate) fn memory_bytes(&self) -> usize {
        crate::heap::vec_bytes::<u32>(self.starts.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn check<K: RadixKey + std::fmt::Debug>(keys: &[K], buckets: usize, targets: &[K]) -> usize {
        let radix = Radix::new(keys, buckets);
        assert!(radix.starts.len() <= buckets.max(2).next_power_of_two() + 1);
        let mut widest = 0;
        for &t in targets {
            let (lo, hi) = radix.narrow(t);
            let want = keys.partition_point(|&k| k < t);
            assert!(lo <= want && want <= hi, "{t:?}: {want} outside {lo}..={hi}");
            widest = widest.max(hi - lo);
        }
        widest
    }

    #[test]
    fn the_answer_lies_in_the_targets_bucket_for_any_keys() {
        let mut rng = SplitMix64::new(3);
        for len in (0..40).chain([100, 1000]) {
            for distinct in [1u64, 3, 1 << 10, u64::MAX] {
                let mut keys: Vec<u64> = (0..len).map(|_| rng.below(distinct)).collect();
                keys.sort();
                let targets: Vec<u64> = (0..300)
                    .map(|_| rng.below(distinct))
                    .chain(keys.iter().flat_map(|&k| [k, k.saturating_add(1), k.saturating_sub(1)]))
                    .chain([0, u64::MAX])
                    .collect();
                for buckets in [0, 1, 2, 7, 64, 4 * len] {
                    check(&keys, buckets, &targets);
                }
            }
        }
        // The ends of u128's range the callers use (keyspace ids above 64 bits of key).
        let keys: Vec<u128> = vec![0, 1, 5, (1 << 96) - 7, (1 << 96) - 1];
        check(&keys, 8, &[0, 1, 2, 6, 1 << 64, (1 << 96) - 8, (1 << 96) - 1, 1 << 96, u128::MAX]);
    }

    #[test]
    fn evenly_spread_keys_fall_a_few_to_a_bucket() {
        // 1,000 numbers drawn uniformly below 10^8, 2,048 buckets asked for: the span's 27 bits
        // give 1,526 buckets of 2^16, a bucket's count about Poisson(0.66), and among them the
        // fullest holds well under 16 (P(>= 8) ~ 5e-7 each).
        let mut rng = SplitMix64::new(9);
        let mut keys: Vec<u64> = (0..1000).map(|_| rng.below(100_000_000)).collect();
        keys.sort();
        let targets: Vec<u64> = (0..10_000).map(|_| rng.below(100_000_001)).collect();
        let widest = check(&keys, 2 * keys.len(), &targets);
        assert!(widest < 16, "a bucket of {widest} keys");
    }
}
