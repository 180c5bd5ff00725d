//! Monkey allocation: each sorted level's FPR proportional to its entries.
//!
//! Dayan, Athanassoulis and Idreos, "Monkey: Optimal Navigable Key-Value Store", SIGMOD 2017.
//! A lookup of a missing key probes one filter per level (levels >= 1 are sorted runs) and
//! reads a block for every false positive, so its expected wasted reads are `sum_i p_i`. A
//! filter of `n_i` keys at FPR `p_i` costs `c n_i log2(1/p_i)` bits (`c` per kind). Minimising
//! `sum_i p_i` subject to `sum_i c n_i log2(1/p_i) = M` with a Lagrange multiplier `λ`:
//! `1 - λ c n_i / (p_i ln 2) = 0`, so `p_i = K n_i` for one constant `K`: each level's FPR is
//! proportional to its entries, and the small upper levels get the low FPRs. `K` follows from
//! the budget: `sum_i n_i log2(1/(K n_i)) = M / c`, i.e.
//! `log2(1/K) = (M / c + sum_i n_i log2 n_i) / N` with `N = sum_i n_i`. A level with `K n_i >= 1`
//! gets no filter (`p_i = 1`, zero bits) and `K` is solved again over the others.
//!
//! The weights ([`level_weights`]) are the levels' entries at capacity, on the tree as a
//! compaction or trivial move leaves it ([`LevelMove`]).

use crate::options::CompactionOptions;

/// Entries a compaction moves from one level to the next (its inputs from the upper level; the
/// lower level's inputs are rewritten in place), so that filters are planned on the tree as
/// the compaction or trivial move leaves it.
#[derive(Debug, Clone, Copy)]
pub struct LevelMove {
    /// The level the entries leave.
    pub from: usize,
    /// The level they join.
    pub to: usize,
    /// Entries moved.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl LevelMove {
    /// Moves the entries and bytes between per-level counts.
    pub fn apply(&self, entries: &mut [u64], bytes: &mut [u64]) {
        if self.from >= entries.len() || self.to >= entries.len() {
            return;
        }
        entries[self.from] = entries[self.from].saturating_sub(self.entries);
        bytes[self.from] = bytes[self.from].saturating_sub(self.bytes);
        entries[self.to] += self.entries;
        bytes[self.to] += self.bytes;
    }
}

/// Monkey's weight of each level (index 0, L0, is ignored): the entries a level holds at
/// capacity, `target_bytes(l) / bytes_per_entry`, for the levels above the deepest non-empty
/// one; for the deepest, its actual entries but at least the capacity of the level above it
/// (the last level is rarely full, and a young last level must not be given the small FPRs of
/// a small level). Capacities rather than the current counts make a level's FPR stable while
/// its files are rewritten one at a time, as Monkey's analysis assumes levels at capacity.
pub fn level_weights(copts: &CompactionOptions, entries: &[u64], bytes: &[u64]) -> Vec<f64> {
    let n: u64 = entries.iter().skip(1).sum();
    let b: u64 = bytes.iter().skip(1).sum();
    if n == 0 {
        return entries.iter().map(|&e| e as f64).collect();
    }
    let per_entry = (b as f64 / n as f64).max(1.0);
    let deepest = (1..entries.len()).rev().find(|&l| entries[l] > 0).unwrap_or(1);
    // Levels above a dynamic base level are empty and never written: no capacity.
    let (targets, _) = copts.level_targets(bytes);
    let cap = |l: usize| match targets.get(l) {
        Some(t) if t.is_finite() => t / per_entry,
        _ => 0.0,
    };
    (0..entries.len())
        .map(|l| match l {
            0 => 0.0,
            l if l < deepest => cap(l),
            l if l == deepest && l > 1 => (entries[l] as f64).max(cap(l - 1)),
            l if l == deepest => entries[l] as f64,
            _ => 0.0,
        })
        .collect()
}

/// Monkey's FPR per level for levels of `entries[i]` keys, a total of `bits_per_key` filter
/// bits per key over all of them and `c` bits per key per bit of `log2(1/p)`: `p_i = K n_i`
/// capped at 1 (module documentation). Empty levels get `p = K` (what a first file would get
/// if it were tiny), so a level that is about to be written is never left unfiltered.
pub fn monkey_fprs(entries: &[f64], bits_per_key: f64, c: f64) -> Vec<f64> {
    let total: f64 = entries.iter().sum();
    let mut fprs = vec![1.0; entries.len()];
    if total <= 0.0 || c <= 0.0 {
        return vec![2f64.powf(-bits_per_key / c.max(1e-9)); entries.len()];
    }
    let memory = bits_per_key * total / c; // sum of n_i log2(1/p_i) to spend
    let mut active: Vec<usize> = (0..entries.len()).filter(|&i| entries[i] > 0.0).collect();
    let mut log2_inv_k = 0.0;
    loop {
        let n: f64 = active.iter().map(|&i| entries[i]).sum();
        if n <= 0.0 {
            break;
        }
        let s: f64 = active.iter().map(|&i| entries[i] * entries[i].log2()).sum();
        log2_inv_k = (memory + s) / n;
        // Levels whose FPR would reach 1 drop out (zero bits) and K is solved again.
        let before = active.len();
        active.retain(|&i| log2_inv_k - entries[i].log2() > 0.0);
        if active.len() == before {
            break;
        }
    }
    for &i in &active {
        fprs[i] = 2f64.powf(entries[i].log2() - log2_inv_k);
    }
    for (i, p) in fprs.iter_mut().enumerate() {
        if entries[i] <= 0.0 {
            *p = 2f64.powf(-log2_inv_k).min(1.0);
        }
    }
    fprs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monkey_fpr_is_proportional_to_entries_and_spends_the_budget() {
        let entries = [1e4, 1e5, 1e6];
        let (bpk, c) = (8.0, 1.05);
        let p = monkey_fprs(&entries, bpk, c);
        // Proportionality p_i / n_i constant (the Lagrangian optimum).
        assert!((p[1] / p[0] - 10.0).abs() < 1e-9 && (p[2] / p[1] - 10.0).abs() < 1e-9);
        // Memory identity: sum c n_i log2(1/p_i) = bpk * N.
        let spent: f64 = entries.iter().zip(&p).map(|(n, p)| c * n * (1.0 / p).log2()).sum();
        let total: f64 = entries.iter().sum();
        assert!((spent - bpk * total).abs() / (bpk * total) < 1e-9);
        // Monkey beats the uniform split at equal memory: uniform p = 2^(-bpk / c).
        let uniform = 3.0 * 2f64.powf(-bpk / c);
        assert!(p.iter().sum::<f64>() < uniform, "{p:?} vs {uniform}");
    }

    #[test]
    fn monkey_caps_levels_at_fpr_one() {
        // A tiny budget: the largest level would exceed FPR 1, so it goes unfiltered and the
        // whole budget goes to the small level.
        let p = monkey_fprs(&[1e3, 1e6], 0.001, 1.05);
        assert_eq!(p[1], 1.0);
        let spent = 1.05 * 1e3 * (1.0 / p[0]).log2();
        assert!((spent - 0.001 * 1.001e6).abs() < 1e-6 * spent, "{p:?}");
    }
}
