//! A small deterministic random number generator for tests, examples and benchmarks.
//!
//! SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state advanced by a Weyl constant and passed
//! through a mixer. It is not cryptographic. It is here rather than a crate's generator so that a
//! seed gives the same sequence forever; statistical tests and benchmark key sets depend on it.

/// SplitMix64's Weyl increment (2^64 / golden ratio, odd).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64 generator. `SplitMix64::new(seed)` always yields the same sequence.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The generator `SplitMix64::new(seed)` becomes after `n` calls of
    /// [`SplitMix64::next_u64`]: the state is a counter, so this is one multiply, not `n` steps
    /// (a benchmark reading the keys a fill wrote jumps into the fill's sequence).
    pub fn skipped(seed: u64, n: u64) -> SplitMix64 {
        SplitMix64 { state: seed.wrapping_add(n.wrapping_mul(GAMMA)) }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value uniform in `0..n` (`n > 0`), by multiply-shift; bias below 2^-64 * n.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A float uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }

    /// Shuffles `items` in place (Fisher-Yates): every permutation equally likely, and the same
    /// permutation for the same seed.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }

    /// `n` random 64-bit values (distinct with overwhelming probability for n << 2^32).
    pub fn hashes(&mut self, n: usize) -> Vec<u64> {
        (0..n).map(|_| self.next_u64()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a: Vec<u32> = (0..1000).collect();
        let mut b = a.clone();
        SplitMix64::new(9).shuffle(&mut a);
        SplitMix64::new(9).shuffle(&mut b);
        assert_eq!(a, b, "same seed, same order");
        assert_ne!(a, (0..1000).collect::<Vec<_>>(), "the order changed");
        a.sort_unstable();
        assert_eq!(a, (0..1000).collect::<Vec<_>>(), "nothing lost or repeated");
    }

    #[test]
    fn sequence_is_fixed_for_a_seed() {
        // First outputs of SplitMix64 seeded with 0 (reference values of the published algorithm).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn skipped_continues_the_sequence_where_stepping_would() {
        for seed in [0, 1, 7, u64::MAX] {
            let mut stepped = SplitMix64::new(seed);
            for n in 0..1000u64 {
                let mut jumped = SplitMix64::skipped(seed, n);
                assert_eq!(jumped.next_u64(), stepped.next_u64(), "seed {seed}, n {n}");
            }
        }
    }

    #[test]
    fn below_and_f64_stay_in_range() {
        let mut r = SplitMix64::new(9);
        for _ in 0..1000 {
            assert!(r.below(17) < 17);
            let f = r.next_f64();
            assert!((0.0..1.0).contains(&f));
        }
    }
}
