//! False-positive-rate formulas, used to size filters, to print the theory column of the filter
//! table, and to derive the tolerances of the statistical tests.
//!
//! * Standard Bloom filter (Bloom 1970; Kirsch and Mitzenmacher 2006 for double hashing):
//!   `FPR = (1 - e^(-k n / m))^k`.
//! * Blocked layouts (a cache line, one machine word, a split block) have a HIGHER rate than the
//!   standard formula, because blocks receive a Poisson-distributed number of keys and the
//!   fullest blocks dominate (Putze, Sanders, Singler 2007, "Cache-, hash- and space-efficient
//!   Bloom filters"): `FPR = sum_i Pois(i; lambda) * f(i)`, with `lambda` the mean keys per block
//!   and `f(i)` the FPR of one block holding `i` keys.

/// Standard Bloom filter FPR for `bits_per_key = m / n` and `k` probes: `(1 - e^(-k/bpk))^k`.
pub fn standard_bloom_fpr(bits_per_key: f64, k: u32) -> f64 {
    if bits_per_key <= 0.0 {
        return 1.0;
    }
    (1.0 - (-(k as f64) / bits_per_key).exp()).powi(k as i32)
}

/// The textbook optimal probe count `round(bits_per_key * ln 2)`, at least 1 and at most 30.
pub fn standard_optimal_probes(bits_per_key: f64) -> u32 {
    ((bits_per_key * std::f64::consts::LN_2).round() as u32).clamp(1, 30)
}

/// Poisson-weighted sum `sum_i Pois(i; lambda) * f(i)` for `f` in `[0, 1]`, summed past the
/// mode until the remaining Poisson mass is below 1e-15, or provably below 1e-30: past the mode
/// the terms fall at least geometrically (ratio `lambda / (i + 1) < 1`), so the tail from term
/// `i` on is at most `p_i / (1 - lambda / (i + 1))`. The second test is the one that ends the
/// sum when rounding keeps `1 - cumulative` from ever reaching 1e-15 (a quarter of all lambdas
/// would otherwise run to the 100,000-term cap).
pub fn poisson_mix(lambda: f64, f: impl Fn(u64) -> f64) -> f64 {
    if lambda <= 0.0 {
        return f(0);
    }
    let mut p = (-lambda).exp(); // Pois(0)
    let mut cumulative = 0.0;
    let mut sum = 0.0;
    let mut i = 0u64;
    // For large lambda e^-lambda underflows (or is subnormal, with too few significant bits for
    // the product recurrence below); work in logs then.
    if p < f64::MIN_POSITIVE {
        return poisson_mix_log(lambda, f);
    }
    loop {
        sum += p * f(i);
        cumulative += p;
        i += 1;
        p *= lambda / i as f64;
        let past_mode = i as f64 > lambda;
        let tail_bound = p / (1.0 - lambda / (i + 1) as f64);
        if (past_mode && (1.0 - cumulative < 1e-15 || tail_bound < 1e-30)) || i > 100_000 {
            break;
        }
    }
    sum
}

/// Most points at which [`poisson_mix_log`] evaluates `f`: its cost is bounded for every
/// `lambda`, however small the bits-per-key budget that produced it.
const MAX_LOG_TERMS: u64 = 1 << 14;

/// [`poisson_mix`] for a `lambda` whose `e^-lambda` underflows (`lambda > 708`), in logs.
///
/// Window: terms `i` within 12 standard deviations of `lambda`. The neglected tail is bounded by
/// the Poisson Chernoff bounds `P(X >= lambda + t) <= exp(-t^2 / (2 (lambda + t / 3)))` and
/// `P(X <= lambda - t) <= exp(-t^2 / (2 lambda))`: with `t = 12 sqrt(lambda)` and `lambda >= 700`
/// they are below `exp(-62)` and `exp(-72)`, so with `f` in `[0, 1]` the sum misses less than
/// `POISSON_LOG_TAIL` of mass.
///
/// Up to [`MAX_LOG_TERMS`] terms the window is summed term by term, each `ln Pois(i)` from the
/// previous one (`+ ln lambda - ln i`): cost `O(sqrt lambda)`. Wider windows (`lambda` above
/// about 466,000) are summed with the midpoint rule over strides of `s <= 24 sqrt(lambda) /
/// MAX_LOG_TERMS` terms, the weights normalised to the window's mass; a stride spans at most
/// 0.0015 standard deviations, so the weights are exact to about `1e-7` relative and the error
/// is at most the largest change of `f` across one stride.
fn poisson_mix_log(lambda: f64, f: impl Fn(u64) -> f64) -> f64 {
    // Past 2^52 the window (12 sd, a relative width below 4e-7) is not resolved by f64 keys
    // counts; no validated configuration comes near (its lambdas are below 1e9).
    if lambda >= (1u64 << 52) as f64 {
        return f(lambda as u64);
    }
    let sd = lambda.sqrt();
    let lo = (lambda - 12.0 * sd).max(0.0).floor() as u64;
    let hi = (lambda + 12.0 * sd).ceil() as u64;
    let stride = (hi - lo) / MAX_LOG_TERMS + 1;
    if stride == 1 {
        let ln_lambda = lambda.ln();
        let mut ln_p = ln_poisson(lo, lambda);
        let mut sum = 0.0;
        for i in lo..=hi {
            sum += ln_p.exp() * f(i);
            ln_p += ln_lambda - ((i + 1) as f64).ln();
        }
        return sum;
    }
    let (mut sum, mut mass) = (0.0, 0.0);
    let mut start = lo;
    while start <= hi {
        let mid = start + stride / 2;
        let w = ln_poisson(mid, lambda).exp();
        sum += w * f(mid);
        mass += w;
        start += stride;
    }
    sum / mass
}

/// Bound on the Poisson mass `poisson_mix_log` leaves out of its window (the tests' tolerance).
#[cfg(test)]
const POISSON_LOG_TAIL: f64 = 1e-26;

/// `ln Pois(i; lambda) = i ln lambda - lambda - ln(i!)`. Above 64 it is computed as
/// `d - i ln(1 + d / lambda) - ln(2 pi i) / 2 - stirling(i)` with `d = i - lambda`, which has no
/// cancellation between terms of size `i ln i` (at `lambda = 1e9` those are 2e10, and their
/// difference, the answer, is below 100).
fn ln_poisson(i: u64, lambda: f64) -> f64 {
    if i <= 64 {
        return i as f64 * lambda.ln() - lambda - ln_factorial(i);
    }
    let x = i as f64;
    let d = x - lambda;
    d - x * (d / lambda).ln_1p() - 0.5 * (2.0 * std::f64::consts::PI * x).ln() - stirling(x)
}

/// The correction terms of Stirling's series, `ln(n!) - (n ln n - n + ln(2 pi n) / 2) =
/// 1/(12 n) - 1/(360 n^3) + 1/(1260 n^5) - 1/(1680 n^7)`, whose first omitted term,
/// `1/(1188 n^9)`, is below `1e-19` for `n > 64`.
fn stirling(x: f64) -> f64 {
    let (inv, inv2) = (1.0 / x, 1.0 / (x * x));
    inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 / 1680.0)))
}

/// `ln(n!)`: the sum of logarithms up to 64, Stirling's series above ([`stirling`]): constant
/// cost for every `n`.
fn ln_factorial(n: u64) -> f64 {
    if n <= 64 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + stirling(x)
}

/// FPR of a blocked Bloom filter (Putze et al.): each key sets `k` independently chosen bits
/// (with replacement) inside one block of `block_bits` bits; `keys_per_block` is the mean number
/// of keys hashed to a block. `f(i) = (1 - (1 - 1/B)^(k i))^k`.
pub fn blocked_bloom_fpr(block_bits: u32, keys_per_block: f64, k: u32) -> f64 {
    let q = 1.0 - 1.0 / block_bits as f64;
    poisson_mix(keys_per_block, |i| (1.0 - q.powf((k as u64 * i) as f64)).powi(k as i32))
}

/// The probe count in `1..=max_k` that minimises [`blocked_bloom_fpr`] for this block size and
/// load. For 512-bit blocks this is below the textbook `bits_per_key * ln 2`.
pub fn blocked_optimal_probes(block_bits: u32, bits_per_key: f64, max_k: u32) -> u32 {
    let lambda = block_bits as f64 / bits_per_key;
    (1..=max_k.max(1))
        .min_by(|&a, &b| {
            blocked_bloom_fpr(block_bits, lambda, a)
                .partial_cmp(&blocked_bloom_fpr(block_bits, lambda, b))
                .expect("finite FPR")
        })
        .expect("non-empty range")
}

/// FPR of a split-block Bloom filter (Parquet): a block of `words` words of `word_bits` bits each;
/// a key sets exactly one bit in every word. `f(i) = (1 - (1 - 1/w)^i)^words`.
pub fn split_block_fpr(words: u32, word_bits: u32, keys_per_block: f64) -> f64 {
    let q = 1.0 - 1.0 / word_bits as f64;
    poisson_mix(keys_per_block, |i| (1.0 - q.powf(i as f64)).powi(words as i32))
}

/// Standard deviation of an observed rate over `trials` independent Bernoulli(p) trials,
/// `sqrt(p (1 - p) / trials)`. Statistical tests accept `|observed - p| <= z * sigma` plus any
/// stated model error.
pub fn binomial_sigma(p: f64, trials: u64) -> f64 {
    (p * (1.0 - p) / trials as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floe_two_bits_in_a_word_is_5_69_percent() {
        // Floe: 2^21 bits in u32 words, 262,144 keys => lambda = 4 keys per word, k = 2.
        let fpr = blocked_bloom_fpr(32, 4.0, 2);
        assert!((fpr - 0.0569).abs() < 0.0005, "{fpr}");
    }

    #[test]
    fn standard_formula_matches_known_values() {
        // 10 bits/key, k = 7: 0.819%.
        assert!((standard_bloom_fpr(10.0, 7) - 0.00819).abs() < 0.0001);
        assert_eq!(standard_optimal_probes(10.0), 7);
        // One bit per key and one probe (Floe's baseline): 1 - e^-(1/8) = 11.75%.
        assert!((standard_bloom_fpr(8.0, 1) - 0.1175).abs() < 0.0005);
    }

    #[test]
    fn blocked_512_at_10_bits_per_key_is_near_rocksdb_figure() {
        // RocksDB's FastLocalBloom: 10 bits/key, 6 probes in a 512-bit line, about 0.95%.
        let fpr = blocked_bloom_fpr(512, 51.2, 6);
        assert!((fpr - 0.0095).abs() < 0.0008, "{fpr}");
        let k = blocked_optimal_probes(512, 10.0, 16);
        assert!(k <= 7, "blocked optimum {k} should not exceed the textbook 7");
    }

    #[test]
    fn poisson_mix_stops_once_the_tail_is_negligible() {
        // Past the mode the tail is below 1e-30 within about lambda + 12 sqrt(lambda) + 40 terms
        // (Poisson tail decay); the cumulative-mass test alone missed that for many lambdas.
        for i in 1..2000 {
            let lambda = i as f64 * 0.37;
            let terms = std::cell::Cell::new(0u64);
            let total = poisson_mix(lambda, |_| {
                terms.set(terms.get() + 1);
                1.0
            });
            let cap = lambda + 12.0 * lambda.sqrt() + 40.0;
            assert!((terms.get() as f64) < cap, "lambda {lambda}: {} terms", terms.get());
            assert!((total - 1.0).abs() < 1e-9, "lambda {lambda}: {total}");
        }
    }

    /// The sum the log path replaced: `ln(n!)` as a sum of logarithms for every term.
    fn slow_poisson_mix_log(lambda: f64, f: impl Fn(u64) -> f64) -> f64 {
        let sd = lambda.sqrt();
        let lo = (lambda - 12.0 * sd).max(0.0) as u64;
        let hi = (lambda + 12.0 * sd) as u64 + 1;
        let ln_fact = |n: u64| (1..=n).map(|i| (i as f64).ln()).sum::<f64>();
        (lo..=hi).map(|i| (-lambda + i as f64 * lambda.ln() - ln_fact(i)).exp() * f(i)).sum()
    }

    #[test]
    fn ln_factorial_matches_the_sum_of_logarithms() {
        for n in (0..200).chain([1_000, 12_345, 100_000]) {
            let exact: f64 = (1..=n).map(|i| (i as f64).ln()).sum();
            let got = ln_factorial(n);
            assert!((got - exact).abs() <= 1e-12 * exact.max(1.0), "n {n}: {got} vs {exact}");
        }
    }

    #[test]
    fn the_log_path_agrees_with_the_old_sum_at_moderate_lambda() {
        // Same window as the old sum (to within a term at each end, whose mass is below the
        // neglected tail); the difference is rounding in ln Pois, below 1e-9 relative.
        for lambda in [750.0, 5_120.0, 20_000.0] {
            for k in [1, 6] {
                let f = |i: u64| (1.0 - (1.0 - 1.0 / 512.0f64).powf((k * i) as f64)).powi(k as i32);
                let (new, old) = (poisson_mix(lambda, f), slow_poisson_mix_log(lambda, f));
                let tol = 1e-9 * old + 2.0 * POISSON_LOG_TAIL;
                assert!((new - old).abs() <= tol, "lambda {lambda} k {k}: {new} vs {old}");
            }
            let total = poisson_mix(lambda, |_| 1.0);
            assert!((total - 1.0).abs() < 1e-9, "lambda {lambda}: {total}");
        }
    }

    #[test]
    fn the_log_path_evaluates_a_bounded_number_of_terms_for_any_lambda() {
        // 1e-6 bits per key in 512-bit blocks: lambda = 5.12e8 (the old sum never returned).
        for lambda in [1e5, 5.12e8, 3.2e7, 1e12, 1e15] {
            let terms = std::cell::Cell::new(0u64);
            let total = poisson_mix(lambda, |_| {
                terms.set(terms.get() + 1);
                1.0
            });
            assert!(terms.get() <= MAX_LOG_TERMS + 2, "lambda {lambda}: {} terms", terms.get());
            assert!((total - 1.0).abs() < 1e-9, "lambda {lambda}: {total}");
            // A step at lambda is seen as about half the mass.
            let half = poisson_mix(lambda, |i| if (i as f64) < lambda { 1.0 } else { 0.0 });
            assert!((half - 0.5).abs() < 0.01, "lambda {lambda}: {half}");
        }
        let fpr = blocked_bloom_fpr(512, 5.12e8, 1);
        assert!(fpr > 0.999_999 && fpr <= 1.0, "{fpr}");
    }

    #[test]
    fn poisson_mix_sums_to_one() {
        for lambda in [0.5, 4.0, 51.2, 800.0] {
            let total = poisson_mix(lambda, |_| 1.0);
            assert!((total - 1.0).abs() < 1e-9, "lambda {lambda}: {total}");
        }
    }
}
