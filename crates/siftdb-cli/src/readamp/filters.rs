//! The per-filter FPR sweep of the second plot: `siftdb_bench_kit::survey::sweep` (the code behind
//! `examples/filter_table.rs`), grouped into one line per filter family, and the reference
//! curves drawn dashed.

use siftdb::filter::cost;
use siftdb::Result;
use siftdb_bench_kit::survey::{self, SurveyRow};

/// Measures every filter family at each budget in `bits`, `keys` keys and four times as many
/// negatives (so that Ribbon at 20 bits per key, FPR about 2^-19, still shows about 8 false
/// positives per million keys instead of a zero that a log axis cannot draw).
pub fn sweep(bits: &[f64], keys: usize, seed: u64) -> Result<Vec<SurveyRow>> {
    Ok(survey::sweep(bits, keys, 4 * keys, seed)?)
}

/// The plot line a survey row belongs to: fingerprint widths of one family share a line
/// (xor8 and xor16 are the "xor" line; the packed 4-wise widths join the 4-wise 8 and 16),
/// every other filter is its own line.
pub fn family(filter: &str) -> &str {
    match filter {
        "xor8" | "xor16" => "xor",
        "binary_fuse8" | "binary_fuse16" => "binary_fuse",
        "binary_fuse4_8" | "binary_fuse4_16" | "packed_binary_fuse" => "binary_fuse4",
        other => other,
    }
}

/// Lines of the plot: (family, points sorted by bits per key), in first-seen order. Rows with
/// no false positive among the negatives have no place on a log axis and are left out.
pub fn lines(rows: &[SurveyRow]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in rows.iter().filter(|r| r.fpr > 0.0) {
        let name = family(r.filter);
        let point = (r.bits_per_key, r.fpr);
        match lines.iter_mut().find(|(n, _)| n == name) {
            Some((_, pts)) => pts.push(point),
            None => lines.push((name.to_string(), vec![point])),
        }
    }
    for (_, pts) in &mut lines {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

/// The classic Bloom filter at `b` bits per key with the optimal integer probe count:
/// `(1 - e^(-k/b))^k` (Bloom 1970; `cost::standard_bloom_fpr`).
pub fn bloom_theory(b: f64) -> f64 {
    cost::standard_bloom_fpr(b, cost::standard_optimal_probes(b))
}

/// The information-theoretic bound `2^-b` no filter of `b` bits per key can beat (Carter et
/// al. 1978).
pub fn lower_bound(b: f64) -> f64 {
    2f64.powf(-b)
}
