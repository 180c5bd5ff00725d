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

/// Bits per key a standard Bloom filter needs for `fpr` at the optimal k: `-ln(fpr) / ln(2)^2`.
pub fn standard_bits_per_key_for_fpr(fpr: f64) -> f64 {
    -fpr.ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2)
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

fn poisson_mix_log(lambda: f64, f: impl Fn(u64) -> f64) -> f64 {
    let sd = lambda.sqrt();
    let lo = (lambda - 12.0 * sd).max(0.0) as u64;
    let hi = (lambda + 12.0 * sd) as u64 + 1;
    let mut sum = 0.0;
    for i in lo..=hi {
        let ln_p = -lambda + i as f64 * lambda.ln() - ln_factorial(i);
        sum += ln_p.exp() * f(i);
    }
    sum
}

fn ln_factorial(n: u64) -> f64 {
    (1..=n).map(|i| (i as f64).ln()).sum()
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

    #[test]
    fn poisson_mix_sums_to_one() {
        for lambda in [0.5, 4.0, 51.2, 800.0] {
            let total = poisson_mix(lambda, |_| 1.0);
            assert!((total - 1.0).abs() < 1e-9, "lambda {lambda}: {total}");
        }
    }
}
