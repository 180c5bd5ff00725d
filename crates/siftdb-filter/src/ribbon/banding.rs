//! Construction side of a ribbon filter: how many slots a key count needs, how the result
//! columns are mixed to hit a target FPR, and on-the-fly Gaussian banding.

use super::solution::{key_row, Layout, MAX_BLOCKS, W};
use crate::hash::mix64;

/// Slots per key that 128-bit standard ribbon needs for a construction failure chance of about
/// 1 in 20, at `2^8 ..= 2^17` slots. Figures from RocksDB's `ribbon_config.cc`
/// (`kOneIn20`, 128-bit, no smash; measured with their FindOccupancy test): e.g. 2^17 slots hold
/// 126,506 keys, a factor of 1.0361.
const KNOWN_FACTOR: [f64; 10] =
    [1.02873, 1.02496, 1.02271, 1.02197, 1.02257, 1.02395, 1.02614, 1.02953, 1.03292, 1.03609];
/// Beyond 2^17 slots, each doubling of the slot count adds this to the factor (same source).
const FACTOR_PER_DOUBLING: f64 = 0.0038;

/// Slots-per-key factor at `2^log2_slots` slots: interpolated in the table, linear in `log2`
/// beyond it.
fn overhead_factor(log2_slots: f64) -> f64 {
    if log2_slots <= 8.0 {
        return KNOWN_FACTOR[0];
    }
    if log2_slots >= 17.0 {
        return KNOWN_FACTOR[9] + FACTOR_PER_DOUBLING * (log2_slots - 17.0);
    }
    let i = (log2_slots - 8.0).floor() as usize;
    let frac = log2_slots - 8.0 - i as f64;
    KNOWN_FACTOR[i] * (1.0 - frac) + KNOWN_FACTOR[i + 1] * frac
}

/// Blocks of 128 slots for `n` distinct keys (0 for none, at least 2 otherwise, as the table
/// starts at 256 slots), or `None` beyond [`MAX_BLOCKS`].
pub(super) fn num_blocks_for(n: u64) -> Option<u64> {
    if n == 0 {
        return Some(0);
    }
    // Fixed point of slots = n * factor(log2 slots); the factor moves by < 0.4% per doubling, so
    // two refinements from a close guess settle it.
    let mut slots = n as f64 * KNOWN_FACTOR[9];
    for _ in 0..2 {
        slots = n as f64 * overhead_factor(slots.log2());
    }
    let blocks = ((slots / W as f64).ceil() as u64).max(2);
    (blocks <= MAX_BLOCKS).then_some(blocks)
}

/// The column mix for a target FPR `p` in `[2^-32, 1/2]` over `num_blocks` blocks: `k =
/// floor(log2(1/p))` columns everywhere, plus one in just enough trailing blocks that the
/// expected FPR is at most `p` ("fractional bits per key", as RocksDB's `upper_num_columns`).
pub(super) fn layout_for_fpr(p: f64, num_blocks: u64) -> Layout {
    let k = ((-p.log2()).floor() as u32).clamp(1, 32);
    let mut layout = Layout { num_blocks, upper_start_block: num_blocks, lower_columns: k };
    if k == 32 || num_blocks == 0 {
        return layout;
    }
    // Fraction f of starts needing k + 1 columns: (1 - f) 2^-k + f 2^-(k+1) = p.
    let f = (2.0 - p * 2f64.powi(k as i32 + 1)).clamp(0.0, 1.0);
    let starts = layout.num_starts() as f64;
    // Upper starts for U < B are (B - 1 - U) * 128 + 1; take the largest U reaching f * starts.
    let need = f * starts;
    let guess = if need <= 0.0 {
        num_blocks
    } else {
        let u = (num_blocks - 1) as f64 - ((need - 1.0) / W as f64).ceil();
        u.clamp(0.0, (num_blocks - 1) as f64) as u64
    };
    layout.upper_start_block = guess;
    // Guard against rounding: move toward more upper blocks until the target holds.
    while layout.upper_start_block > 0 && layout.fpr() > p * (1.0 + 1e-9) {
        layout.upper_start_block -= 1;
    }
    layout
}

/// Key hashes re-mixed with `seed`, sorted and deduplicated. `mix64` is a bijection for a fixed
/// seed, so duplicates here are exactly duplicates of the input, and sorted order is start order
/// (the start is `fastrange` of this value).
pub(super) fn mixed_sorted(hashes: &[u64], seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = hashes.iter().map(|&h| mix64(h, seed)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The banded system: `coeffs[i]` / `results[i]` is the row whose leading 1 is at slot `i`, or
/// zero for a free slot. Rows never change once stored.
pub(super) struct Band {
    pub coeffs: Vec<u128>,
    pub results: Vec<u32>,
}

/// On-the-fly Gaussian elimination (Dillinger & Walzer 2021, Algorithm 1) of the keys whose
/// sorted mixed hashes are `h1s`. Returns `None` if the system is inconsistent (two different
/// combinations of keys demand different results), in which case the caller retries with a new
/// seed. `band` is reused across attempts.
pub(super) fn band(h1s: &[u64], layout: &Layout, band: &mut Band) -> bool {
    let m = layout.num_slots() as usize;
    band.coeffs.clear();
    band.coeffs.resize(m, 0);
    band.results.clear();
    band.results.resize(m, 0);
    let starts = layout.num_starts();
    let mask = super::solution::column_mask(layout.upper_columns());
    for &h1 in h1s {
        let (start, coeff, result) = key_row(h1, starts);
        // A row implied by stored ones (consistent) is fine; a contradiction fails the attempt.
        let row = insert(&mut band.coeffs, &mut band.results, start as usize, coeff, result & mask);
        // `Beyond` cannot happen over the whole band (see `insert`); it fails like a
        // contradiction rather than being trusted away.
        if matches!(row, Inserted::Reduced { consistent: false } | Inserted::Beyond) {
            return false;
        }
    }
    true
}

/// What [`insert`] did with a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Inserted {
    /// Stored as the row whose leading 1 is at this slot.
    At(usize),
    /// Reduced to zero coefficients by stored rows: implied by them if `consistent` (its
    /// result reduced to zero too, e.g. a hash collision), contradicting them otherwise.
    Reduced { consistent: bool },
    /// Its leading 1 moved past the last slot of `coeffs` (only when `coeffs` is a window of
    /// the band, as a chunk of a bumped layer is): nothing was stored.
    Beyond,
}

/// Inserts one row with its leading 1 at slot `i` of `coeffs`. Over the whole band the row's
/// highest set bit is at most `start + 127 <= m - 1`, and XOR with a stored row (whose bits lie
/// in `i..i + 128`, also `<= m - 1`) cannot raise it, so `i` stays below `m`; over a window of
/// the band the leading 1 may pass the window's end, which is [`Inserted::Beyond`].
#[inline]
pub(super) fn insert(
    coeffs: &mut [u128],
    results: &mut [u32],
    mut i: usize,
    mut c: u128,
    mut r: u32,
) -> Inserted {
    // One length for both: the bounds check of `coeffs[i]` then covers `results[i]`.
    let results = &mut results[..coeffs.len()];
    loop {
        if i >= coeffs.len() {
            return Inserted::Beyond;
        }
        let stored = coeffs[i];
        if stored == 0 {
            coeffs[i] = c;
            results[i] = r;
            return Inserted::At(i);
        }
        c ^= stored;
        r ^= results[i];
        if c == 0 {
            return Inserted::Reduced { consistent: r == 0 };
        }
        let tz = c.trailing_zeros();
        i += tz as usize;
        c >>= tz;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_counts_follow_the_overhead_table() {
        assert_eq!(num_blocks_for(0), Some(0));
        assert_eq!(num_blocks_for(1), Some(2));
        // 2^17 slots hold 126,506 keys at the 1-in-20 failure chance.
        let b = num_blocks_for(126_506).unwrap();
        assert!((1023..=1026).contains(&b), "{b}");
        let per_key = num_blocks_for(1_000_000).unwrap() as f64 * 128.0 / 1e6;
        assert!((1.045..1.050).contains(&per_key), "{per_key}");
        assert_eq!(num_blocks_for(u64::MAX), None);
    }

    #[test]
    fn column_mix_meets_the_target_fpr() {
        for p in [0.5, 0.3, 0.01, 0.001, 0.0078125, 1e-6] {
            let l = layout_for_fpr(p, 5000);
            l.validate().unwrap();
            assert!(l.fpr() <= p * (1.0 + 1e-9), "p {p}: {}", l.fpr());
            // One block fewer upper blocks would miss the target (so it is as small as it can be).
            if l.upper_start_block < 5000 {
                let fewer = Layout { upper_start_block: l.upper_start_block + 1, ..l };
                assert!(fewer.fpr() > p * (1.0 - 1e-3), "p {p}");
            }
        }
        assert_eq!(layout_for_fpr(0.0078125, 100).upper_start_block, 100); // exactly 2^-7
    }

    #[test]
    fn dependent_rows_pass_only_with_consistent_results() {
        let mut coeffs = vec![0u128; 256];
        let mut results = vec![0u32; 256];
        // A covers slots {3, 4, 6}, B slots {4, 5}.
        assert_eq!(insert(&mut coeffs, &mut results, 3, 0b1011, 5), Inserted::At(3));
        assert_eq!(insert(&mut coeffs, &mut results, 4, 0b11, 6), Inserted::At(4));
        // A ^ B = slots {3, 5, 6}: implied with result 5 ^ 6 = 3, nothing new is stored ...
        let implied = Inserted::Reduced { consistent: true };
        assert_eq!(insert(&mut coeffs, &mut results, 3, 0b1101, 3), implied);
        assert!(coeffs[5..].iter().all(|&c| c == 0));
        // ... and contradictory with any other result.
        let contradiction = Inserted::Reduced { consistent: false };
        assert_eq!(insert(&mut coeffs, &mut results, 3, 0b1101, 1), contradiction);
        // Slots {3, 4, 5} reduce by A to {5, 6}, stored at slot 5 with result 7 ^ 5.
        assert_eq!(insert(&mut coeffs, &mut results, 3, 0b111, 7), Inserted::At(5));
        assert_eq!((coeffs[5], results[5]), (0b11, 2));
    }

    #[test]
    fn a_row_leaving_a_window_is_beyond_and_stores_nothing() {
        // A window of 4 slots whose slots 1..4 are taken: a row from slot 1 with bits {1, 5}
        // reduces past slot 3 and is refused; its rows are untouched.
        let mut coeffs = vec![0, 0b1, 0b1, 0b1];
        let mut results = vec![0, 1, 2, 3];
        assert_eq!(insert(&mut coeffs, &mut results, 1, 0b10001, 9), Inserted::Beyond);
        assert_eq!((coeffs, results), (vec![0, 1, 1, 1], vec![0, 1, 2, 3]));
    }

    #[test]
    fn overfull_band_reports_failure_instead_of_panicking() {
        // 300 random equations in 256 unknowns cannot all hold: banding must say so.
        let layout = Layout { num_blocks: 2, upper_start_block: 2, lower_columns: 8 };
        let h1s = mixed_sorted(&crate::rng::SplitMix64::new(1).hashes(300), 0);
        let mut b = Band { coeffs: Vec::new(), results: Vec::new() };
        assert!(!band(&h1s, &layout, &mut b));
        // The same buffers then serve a feasible attempt.
        assert!(band(&h1s[..100], &layout, &mut b));
    }
}
