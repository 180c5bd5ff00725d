//! YCSB's request distributions.
//!
//! Zipfian: the rejection-free generator of Gray et al., "Quickly Generating Billion-Record
//! Synthetic Databases" (SIGMOD 1994), as YCSB's `ZipfianGenerator`. With
//! `zeta(n) = sum_{i=1..n} 1/i^theta`, `alpha = 1/(1-theta)` and
//! `eta = (1 - (2/n)^(1-theta)) / (1 - zeta(2)/zeta(n))`, a uniform `u` maps to rank 0 if
//! `u*zeta(n) < 1`, to rank 1 if `u*zeta(n) < 1 + 0.5^theta`, else to
//! `floor(n * (eta*u - eta + 1)^alpha)`. Ranks 0 and 1 thus have exactly the Zipf probabilities
//! `1/zeta(n)` and `0.5^theta/zeta(n)`; the tail is a continuous approximation.
//!
//! Scrambled zipfian (YCSB's default request distribution, `ScrambledZipfianGenerator`): draw a
//! rank from a zipfian over 10^10 items (YCSB's fixed `ITEM_COUNT`, theta 0.99, whose zeta YCSB
//! hard-codes as 26.46902820178302) and map it to `fnv1a64(rank) mod records`, so the popular
//! items are spread over the key space instead of clustered at its start.
//!
//! Latest (workload D, `SkewedLatestGenerator`): `last - zipfian(last)`, the most recently
//! inserted records being the most popular.

use siftdb::filter::rng::SplitMix64;

/// YCSB's zipfian constant.
pub const THETA: f64 = 0.99;
/// Items of the scrambled zipfian's underlying distribution (YCSB `ITEM_COUNT`).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
/// zeta(10^10, 0.99), as YCSB hard-codes it (a sum of 10^10 terms is too slow to compute).
const SCRAMBLED_ZETA: f64 = 26.46902820178302;

/// FNV-1a over the 8 little-endian bytes of `v`, made non-negative as YCSB's `fnvhash64`.
pub fn fnv1a64(mut v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// `sum_{i=from+1..=to} 1/i^theta`.
fn zeta_range(from: u64, to: u64, theta: f64) -> f64 {
    (from + 1..=to).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// Zipfian over ranks `0..n` (rank 0 most popular); `n` may grow (zeta is extended
/// incrementally, as YCSB does for workload D).
#[derive(Debug, Clone)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// A zipfian over `n >= 1` items with exponent `theta` in (0, 1).
    pub fn new(n: u64, theta: f64) -> Zipfian {
        Zipfian::with_zeta(n, theta, zeta_range(0, n, theta))
    }

    fn with_zeta(n: u64, theta: f64, zetan: f64) -> Zipfian {
        let zeta2 = zeta_range(0, 2, theta);
        let mut z = Zipfian { n, theta, alpha: 1.0 / (1.0 - theta), zeta2, zetan, eta: 0.0 };
        z.eta = z.eta_for();
        z
    }

    fn eta_for(&self) -> f64 {
        (1.0 - (2.0 / self.n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// Probability of rank 0 (`1/zeta(n)`).
    #[cfg(test)]
    pub fn p_rank0(&self) -> f64 {
        1.0 / self.zetan
    }

    /// Grows the item count to `n` (no-op if not larger).
    pub fn grow(&mut self, n: u64) {
        if n > self.n {
            self.zetan += zeta_range(self.n, n, self.theta);
            self.n = n;
            self.eta = self.eta_for();
        }
    }

    /// A rank in `0..n`.
    pub fn next(&self, rng: &mut SplitMix64) -> u64 {
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

/// YCSB's scrambled zipfian over `0..records`.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    records: u64,
    inner: Zipfian,
}

impl ScrambledZipfian {
    /// Over `records >= 1` items, theta 0.99.
    pub fn new(records: u64) -> ScrambledZipfian {
        ScrambledZipfian {
            records,
            inner: Zipfian::with_zeta(SCRAMBLED_ITEMS, THETA, SCRAMBLED_ZETA),
        }
    }

    /// Probability of the underlying rank 0 (a lower bound on the top item's frequency).
    #[cfg(test)]
    pub fn p_rank0(&self) -> f64 {
        self.inner.p_rank0()
    }

    /// An item in `0..records`.
    pub fn next(&self, rng: &mut SplitMix64) -> u64 {
        fnv1a64(self.inner.next(rng)) % self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank-0 and rank-1 frequencies of the zipfian against the exact Zipf probabilities
    /// `1/zeta(n)` and `0.5^theta/zeta(n)` (Gray's generator is exact for those two ranks).
    /// Tolerance: 5 binomial sigmas, 5 * sqrt(p(1-p)/N); no model error term is needed.
    #[test]
    fn zipfian_head_frequencies_match_theory() {
        let (n, samples) = (1000u64, 200_000u64);
        let z = Zipfian::new(n, THETA);
        let mut rng = SplitMix64::new(7);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            counts[z.next(&mut rng) as usize] += 1;
        }
        for (rank, p) in [(0, z.p_rank0()), (1, 0.5f64.powf(THETA) * z.p_rank0())] {
            let f = counts[rank] as f64 / samples as f64;
            let tol = 5.0 * (p * (1.0 - p) / samples as f64).sqrt();
            assert!((f - p).abs() < tol, "rank {rank}: {f} vs {p} (tol {tol})");
        }
        // Popularity decreases with rank on average: the top decile gets most of the mass.
        let head: u64 = counts[..100].iter().sum();
        assert!(head as f64 > 0.6 * samples as f64, "head {head}");
    }

    /// The scrambled zipfian's most frequent item gets at least the underlying rank 0's
    /// probability 1/26.469 = 3.78% (other ranks may hash to the same item, never fewer),
    /// minus 5 binomial sigmas; and every item stays in range.
    #[test]
    fn scrambled_zipfian_top_item_and_range() {
        let (records, samples) = (10_000u64, 200_000u64);
        let z = ScrambledZipfian::new(records);
        let mut rng = SplitMix64::new(11);
        let mut counts = vec![0u64; records as usize];
        for _ in 0..samples {
            counts[z.next(&mut rng) as usize] += 1;
        }
        let p = z.p_rank0();
        let top = *counts.iter().max().unwrap() as f64 / samples as f64;
        let tol = 5.0 * (p * (1.0 - p) / samples as f64).sqrt();
        assert!(top > p - tol, "top {top} vs rank-0 probability {p}");
        assert!((p - 1.0 / 26.469).abs() < 1e-4);
    }

    #[test]
    fn growing_matches_fresh_zeta() {
        let mut z = Zipfian::new(100, THETA);
        z.grow(5000);
        let fresh = Zipfian::new(5000, THETA);
        assert!((z.p_rank0() - fresh.p_rank0()).abs() < 1e-12);
    }
}
