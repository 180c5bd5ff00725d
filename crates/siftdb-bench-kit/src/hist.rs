//! A log-bucketed latency histogram in the style of HdrHistogram: values below 2^(S+1) get one
//! bucket each, and each further power-of-two range [2^e, 2^(e+1)) is split into 2^S equal
//! sub-buckets, so a recorded value is known to within a relative error of 2^-S (S = 6: 1.6%)
//! with a fixed 3.8k-bucket array, O(1) recording and exact merging across threads.

/// Sub-bucket bits S.
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets needed for every u64.
const BUCKETS: usize = (((64 - SUB_BITS) as u64 + 1) * SUB) as usize;

/// Latency histogram of u64 values (nanoseconds here).
#[derive(Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.total)
            .field("mean", &self.mean())
            .field("max", &self.max)
            .finish()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BUCKETS], total: 0, sum: 0, max: 0 }
    }
}

fn index(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // e >= SUB_BITS + 1
    let shift = e - SUB_BITS;
    (((shift as u64 + 1) << SUB_BITS) + ((v >> shift) & (SUB - 1))) as usize
}

/// The lowest value of bucket `i` and the bucket's width.
fn bucket(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < 2 * SUB {
        return (i, 1);
    }
    let shift = (i >> SUB_BITS) - 1;
    ((SUB + (i & (SUB - 1))) << shift, 1 << shift)
}

impl Histogram {
    /// Records one value.
    pub fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.total += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
        self.sum += o.sum;
        self.max = self.max.max(o.max);
    }

    /// The largest value recorded (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Mean value (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }

    /// The value at quantile `q` in [0, 1]: the midpoint of the bucket holding the
    /// ceil(q * count)-th smallest value (capped by the maximum seen); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total.max(1));
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank && c > 0 {
                let (lo, w) = bucket(i);
                return (lo + w / 2).min(self.max);
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_relative_error_bounded() {
        let mut next = 0;
        for i in 0..BUCKETS {
            let (lo, w) = bucket(i);
            assert_eq!(lo, next, "bucket {i}");
            assert_eq!(index(lo), i);
            assert_eq!(index(lo + w - 1), i);
            // Width over lowest value is at most 2^-S past the linear range.
            assert!(lo < 2 * SUB || w * SUB <= lo);
            next = lo.wrapping_add(w);
        }
        assert_eq!(next, 0, "the last bucket ends at 2^64");
    }

    #[test]
    fn quantiles_of_uniform_values() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for q in [0.5, 0.99, 0.999] {
            let exact = q * 100_000.0;
            let got = h.quantile(q) as f64;
            assert!((got - exact).abs() <= exact / SUB as f64, "q {q}: {got} vs {exact}");
        }
        assert_eq!(h.count(), 100_000);
        assert!((h.mean() - 50_000.5).abs() < 1e-6);
    }
}
