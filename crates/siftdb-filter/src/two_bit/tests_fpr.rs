//! Statistical tests: measured false-positive rates against the formulas and against Floe.
//!
//! Model (`word_model`, exact up to the Poisson approximation of the word loads): a word holding
//! `i` keys has had `k i` positions drawn with replacement among its `w` bits; its popcount `X`
//! is the occupancy of `k i` balls in `w` bins (a Markov chain `X -> X + 1` with probability
//! `(w - X) / w` per draw), and a query's `k` independent positions all hit with probability
//! `g = (X / w)^k`. The filter's rate is `E[g]` with the load `L ~ Poisson(n / W)`.
//! `math::blocked_bloom_fpr` approximates `E[g | L = i]` by `(E[X] / w)^k`, which by Jensen's
//! inequality is low for `k >= 2` (5.692% against the exact 5.756% at 4 keys per u32 word, k = 2);
//! tests against that formula add this computed gap as its model error.
//!
//! Tolerance: a measured rate varies because of the finite probe sample,
//! `sigma_probe = sqrt(p (1 - p) / N)`, and because the instance's own rate, the mean of `g` over
//! its `W` words, is random. With the key count fixed the part of `g` linear in the load averages
//! out, so `sigma_instance = sqrt(Var_resid / W)` with `Var_resid = Var[g] - Cov[g, L]^2 / Var[L]`.
//! A test accepts `|measured - p| <= 5 sqrt(sigma_probe^2 + sigma_instance^2)`, plus 0.2% of `p`
//! for the Poisson approximation of the multinomial loads (its error is O(1 / W)).

use super::*;
use crate::conformance::measured_fpr;
use crate::hash::hash_key;
use crate::math::binomial_sigma;
use crate::rng::SplitMix64;

/// The exact rate `E[g]` and the residual per-word variance `Var_resid` (module documentation)
/// for `w`-bit words, `k` bits per key and `lambda` keys per word.
fn word_model(w: u32, k: u32, lambda: f64) -> (f64, f64) {
    let w_us = w as usize;
    let mut occupancy = vec![0.0f64; w_us + 1]; // P(X = x) for the current load i
    occupancy[0] = 1.0;
    let mut pois = (-lambda).exp(); // Pois(i; lambda), i = 0
    let (mut eg, mut eg2, mut egl) = (0.0, 0.0, 0.0);
    let last = (lambda + 12.0 * lambda.sqrt() + 30.0) as u64;
    for i in 0..=last {
        let (mut g1, mut g2) = (0.0, 0.0);
        for (x, &px) in occupancy.iter().enumerate() {
            let g = (x as f64 / w as f64).powi(k as i32);
            g1 += px * g;
            g2 += px * g * g;
        }
        eg += pois * g1;
        eg2 += pois * g2;
        egl += pois * i as f64 * g1;
        for _ in 0..k {
            let mut next = vec![0.0f64; w_us + 1];
            for (x, &px) in occupancy.iter().enumerate() {
                let fresh = (w_us - x) as f64 / w as f64;
                next[x] += px * (1.0 - fresh);
                if x < w_us {
                    next[x + 1] += px * fresh;
                }
            }
            occupancy = next;
        }
        pois *= lambda / (i + 1) as f64;
    }
    let var = eg2 - eg * eg;
    let cov = egl - eg * lambda;
    (eg, (var - cov * cov / lambda).max(0.0))
}

/// The acceptance band around the exact rate `p` of a filter with `words` words whose residual
/// per-word variance is `var_resid`, measured with `probes` queries (module documentation).
fn tolerance(p: f64, var_resid: f64, words: u64, probes: u64) -> f64 {
    let sigma_probe = binomial_sigma(p, probes);
    let sigma_instance = (var_resid / words as f64).sqrt();
    5.0 * (sigma_probe.powi(2) + sigma_instance.powi(2)).sqrt() + 0.002 * p
}

#[test]
fn floe_reproduction_one_bit_is_11_7_percent_and_two_bits_in_one_u32_is_5_7_percent() {
    // Floe's setup: 2^21 bits (256 KiB) of u32 words, 262,144 random keys, 10M negative probes.
    const BITS: u64 = 1 << 21;
    const KEYS: u64 = 262_144;
    const PROBES: u64 = 10_000_000;
    let mut one = TwoBitBloom::one_bit(BITS).unwrap();
    let mut two = TwoBitBloom::new(BITS).unwrap();
    assert_eq!((one.memory_bytes(), two.memory_bytes()), (256 << 10, 256 << 10));
    let mut rng = SplitMix64::new(2026);
    for _ in 0..KEYS {
        let h = hash_key(&rng.next_u64().to_le_bytes());
        one.insert_hash(h);
        two.insert_hash(h);
    }
    let (mut fp_one, mut fp_two) = (0u64, 0u64);
    for _ in 0..PROBES {
        // Fresh random 8-byte keys; a collision with an inserted key has probability ~2^-46.
        let h = hash_key(&rng.next_u64().to_le_bytes());
        fp_one += one.contains_hash(h) as u64;
        fp_two += two.contains_hash(h) as u64;
    }
    let (m1, m2) = (fp_one as f64 / PROBES as f64, fp_two as f64 / PROBES as f64);
    let words = BITS / 32;
    let lambda = KEYS as f64 / words as f64; // 4 keys per word

    // One bit: 1 - (1 - 1/m)^n ~ 1 - e^(-n/m) = 11.75%. For k = 1 the word model is exact and
    // equal to the formula (E[X/w] = 1 - (1 - 1/w)^i), so the gap term below is ~0.
    let p1 = 1.0 - (1.0 - 1.0 / BITS as f64).powf(KEYS as f64);
    assert!((p1 - (1.0 - (-(KEYS as f64) / BITS as f64).exp())).abs() < 1e-6);
    let (x1, var1) = word_model(32, 1, lambda);
    let tol1 = tolerance(x1, var1, words, PROBES) + (x1 - p1).abs();
    assert!((m1 - p1).abs() <= tol1, "one bit: measured {m1}, formula {p1} +- {tol1}");
    // Two bits in one u32: the exact model (5.756%) and the blocked formula (5.692%), the latter
    // with its computed Jensen gap as model error.
    let (x2, var2) = word_model(32, 2, lambda);
    let tol2 = tolerance(x2, var2, words, PROBES);
    assert!((m2 - x2).abs() <= tol2, "two bits: measured {m2}, exact model {x2} +- {tol2}");
    let p2 = math::blocked_bloom_fpr(32, 4.0, 2);
    let gap = x2 - p2;
    assert!((0.0..0.02 * p2).contains(&gap), "Jensen gap {gap} should be small and positive");
    assert!((m2 - p2).abs() <= tol2 + gap, "two bits: measured {m2}, formula {p2}");
    // And Floe's reported figures, 11.68% and 5.69%, within 0.2 percentage points.
    assert!((m1 - 0.1168).abs() <= 0.002, "one bit: measured {m1}, Floe 11.68%");
    assert!((m2 - 0.0569).abs() <= 0.002, "two bits: measured {m2}, Floe 5.69%");
    assert!(m2 < 0.52 * m1, "two bits should halve the rate: {m2} vs {m1}");
}

#[test]
fn measured_fpr_matches_the_word_model_and_blocked_formula_across_budgets() {
    const BITS: u64 = 1 << 20;
    const PROBES: u64 = 1_000_000;
    // Floe's k = 2 in u32 words, and k = 3 in u64 words.
    let configs = [TwoBitConfig::FLOE, TwoBitConfig { word_bits: 64, bits_per_key_in_word: 3 }];
    for (c, config) in configs.into_iter().enumerate() {
        for bpk in [6.0, 8.0, 10.0, 12.0, 16.0] {
            let n = (BITS as f64 / bpk).round() as usize;
            let mut f = TwoBitBloom::with_config(config, BITS).unwrap();
            assert_eq!(f.num_bits(), BITS); // already a power of two: no rounding
            f.insert_batch(&SplitMix64::new(100 + c as u64).hashes(n));
            let words = f.num_words();
            let lambda = n as f64 / words as f64;
            let (w, k) = (config.word_bits, config.bits_per_key_in_word);
            let p = math::blocked_bloom_fpr(w, lambda, k);
            assert!((p - f.theoretical_fpr()).abs() < 1e-12);
            let (exact, var) = word_model(w, k, lambda);
            let m = measured_fpr(&f, PROBES, 7 + bpk as u64);
            let tol = tolerance(exact, var, words, PROBES);
            let at = format!("{config:?} bpk {bpk}: measured {m}, exact {exact}, formula {p}");
            assert!((m - exact).abs() <= tol, "{at} +- {tol}");
            // The formula, with its computed Jensen gap (below 3% of p on this grid).
            assert!((0.0..0.03 * p).contains(&(exact - p)), "{at}");
            assert!((m - p).abs() <= tol + (exact - p), "{at}");
        }
    }
}

#[test]
fn estimated_fpr_from_the_bits_matches_the_measured_rate() {
    // `estimated_fpr` is exactly this instance's rate for uniformly random queries, so the only
    // spread is the probe sample's: 5 binomial sigmas sqrt(p(1-p)/N), no model error.
    const PROBES: u64 = 2_000_000;
    let configs = [
        (TwoBitConfig::FLOE, 8),
        (TwoBitConfig::FLOE, 2), // overfilled memtable: 4x the keys it was sized for
        (TwoBitConfig::ONE_BIT, 8),
        (TwoBitConfig { word_bits: 64, bits_per_key_in_word: 5 }, 12),
    ];
    for (i, (config, bpk)) in configs.into_iter().enumerate() {
        let f = TwoBitBloom::with_config(config, 1 << 19).unwrap();
        let n = (1u64 << 19) / bpk;
        // Filled through the concurrent path, the way the memtable fills it.
        f.insert_batch_atomic(&SplitMix64::new(i as u64).hashes(n as usize));
        f.set_keys_inserted(n);
        let info = f.info();
        let m = measured_fpr(&f, PROBES, 50 + i as u64);
        let tol = 5.0 * binomial_sigma(info.estimated_fpr, PROBES);
        assert!(
            (m - info.estimated_fpr).abs() <= tol,
            "{config:?} bpk {bpk}: measured {m}, estimated {}",
            info.estimated_fpr
        );
        // The estimate also sits near the exact model (instance spread only: no probes).
        let words = f.num_words();
        let lambda = n as f64 / words as f64;
        let (exact, var) = word_model(config.word_bits, config.bits_per_key_in_word, lambda);
        let tol = tolerance(exact, var, words, u64::MAX);
        let est = info.estimated_fpr;
        assert!((est - exact).abs() <= tol, "estimate {est} vs exact model {exact} +- {tol}");
        assert_eq!(info.bits, 1 << 19);
        assert!(info.bits_set > 0 && info.bits_set <= n * config.bits_per_key_in_word as u64);
    }
    let empty = TwoBitBloom::new(1 << 10).unwrap().info();
    assert_eq!((empty.bits_set, empty.estimated_fpr, empty.fill_ratio()), (0, 0.0, 0.0));
}

#[test]
fn bloom_shape_theory_is_the_blocked_formula_for_u32_words() {
    for bpk in [4.0, 8.0, 16.0] {
        let want = math::blocked_bloom_fpr(32, 32.0 / bpk, 2);
        assert_eq!(<TwoBitBloom as BloomShape>::theoretical_fpr(bpk, 2), want);
        assert_eq!(<TwoBitBloom as BloomShape>::probes_for_bits_per_key(bpk), 2);
    }
    assert_eq!(<TwoBitBloom as BloomShape>::theoretical_fpr(0.0, 2), 1.0);
}
