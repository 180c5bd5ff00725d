//! Policies compared at equal measured memory: `equal_memory.csv` and the verdict table.
//!
//! Each build spends its own bits per key (flush filters are powers of two, fixed-width kinds
//! spend what their width costs, files keep the FPR they were built with while the tree grows),
//! so two policies run at the same budget rarely spend the same memory. For each budget this
//! takes the default policy's measured point (bits per key spent, data blocks per missing
//! lookup) and reads every other policy's blocks at those same bits off its own measured curve:
//! `ln(blocks)` interpolated linearly in bits between the two measured points around it (a
//! filter's FPR falls exponentially with its bits, so the interpolation is exact for one static
//! filter and close for a sum of them). A policy whose points do not bracket the default's bits
//! is not compared there (no extrapolation), nor is one with no false positive at either
//! neighbour (a log axis has no place for 0).

use super::build::Policy;
use super::Run;
use std::fmt::Write as _;

/// The policy siftdb's `FilterPolicy::default()` is (at its budget; `tests` check the match).
pub const DEFAULT: Policy = Policy::AllRuns;

/// A policy's blocks per missing lookup read off its curve at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The policy.
    pub policy: Policy,
    /// Blocks per missing lookup at the compared bits per key (measured or interpolated).
    pub blocks: f64,
    /// Whether `blocks` was measured at exactly these bits (the default's own point).
    pub measured: bool,
}

/// One budget's comparison.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The budget the default was configured with.
    pub budget: f64,
    /// Bits per key the default spent: where every policy is read.
    pub bits: f64,
    /// The default first, then every policy whose curve brackets `bits`, best (fewest blocks)
    /// first.
    pub readings: Vec<Reading>,
}

impl Comparison {
    /// The default's blocks over the best policy's: 1 when the default is the best.
    pub fn default_over_best(&self) -> f64 {
        let best = self.readings.iter().map(|r| r.blocks).fold(f64::INFINITY, f64::min);
        self.readings[0].blocks / best
    }

    /// The policy with the fewest blocks.
    pub fn best(&self) -> &Reading {
        self.readings.iter().min_by(|a, b| a.blocks.total_cmp(&b.blocks)).expect("default")
    }
}

/// `(bits per key spent, blocks per missing lookup)` of every measured run of `policy`, by bits.
fn curve(runs: &[Run], policy: Policy) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = runs
        .iter()
        .filter(|r| r.policy == policy)
        .filter_map(|r| r.outcome.as_ref().ok())
        .map(|m| (m.total.bits_per_key(), m.total.blocks_per_missing))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// `ln(blocks)` interpolated linearly in bits at `x` between the measured points bracketing it
/// (module documentation); `None` outside the measured range or next to a zero.
pub fn read_at(pts: &[(f64, f64)], x: f64) -> Option<f64> {
    let hi = pts.iter().position(|&(b, _)| b >= x)?;
    let (x1, y1) = pts[hi];
    if x1 == x {
        return Some(y1);
    }
    let (x0, y0) = pts[hi.checked_sub(1)?];
    if y0 <= 0.0 || y1 <= 0.0 || x1 <= x0 {
        return None;
    }
    let t = (x - x0) / (x1 - x0);
    Some((y0.ln() * (1.0 - t) + y1.ln() * t).exp())
}

/// One comparison per budget the default ran at (module documentation).
pub fn compare(runs: &[Run]) -> Vec<Comparison> {
    let others: Vec<(Policy, Vec<(f64, f64)>)> = Policy::ALL
        .iter()
        .filter(|&&p| p != DEFAULT && p != Policy::NoFilter)
        .map(|&p| (p, curve(runs, p)))
        .collect();
    runs.iter()
        .filter(|r| r.policy == DEFAULT)
        .filter_map(|r| r.outcome.as_ref().ok().map(|m| (r.budget, m)))
        .map(|(budget, m)| {
            let bits = m.total.bits_per_key();
            let own =
                Reading { policy: DEFAULT, blocks: m.total.blocks_per_missing, measured: true };
            let mut read: Vec<Reading> = others
                .iter()
                .filter_map(|(p, pts)| {
                    let blocks = read_at(pts, bits)?;
                    Some(Reading { policy: *p, blocks, measured: false })
                })
                .collect();
            read.sort_by(|a, b| a.blocks.total_cmp(&b.blocks));
            Comparison { budget, bits, readings: std::iter::once(own).chain(read).collect() }
        })
        .collect()
}

/// The text of `equal_memory.csv`: one row per budget and policy read there.
pub fn csv(comparisons: &[Comparison]) -> String {
    let mut s = String::from(
        "default_budget,bits_per_key,policy,blocks_per_missing,measured,over_default\n",
    );
    for c in comparisons {
        let own = c.readings[0].blocks;
        for r in &c.readings {
            let _ = writeln!(
                s,
                "{},{:.4},{},{:.6},{},{:.4}",
                c.budget,
                c.bits,
                r.policy.name(),
                r.blocks,
                if r.measured { "yes" } else { "interpolated" },
                r.blocks / own
            );
        }
    }
    s
}

/// The verdict table on stdout: per budget, the default against the best policy at its bits.
pub fn print(comparisons: &[Comparison]) {
    println!(
        "\nat equal measured memory ({} at each budget; the others read off their curves):",
        DEFAULT.name()
    );
    println!(
        "{:>6} {:>9} {:>12} {:<29} {:>12} {:>14}",
        "budget", "bits/key", "default_blk", "best", "best_blk", "default/best"
    );
    for c in comparisons {
        let best = c.best();
        println!(
            "{:>6} {:>9.2} {:>12.5} {:<29} {:>12.5} {:>14.3}",
            c.budget,
            c.bits,
            c.readings[0].blocks,
            best.policy.name(),
            best.blocks,
            c.default_over_best()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_log_linear_between_the_bracketing_points_and_never_extrapolated() {
        let pts = [(4.0, 0.1), (8.0, 0.01), (12.0, 0.0)];
        assert_eq!(read_at(&pts, 4.0), Some(0.1));
        let mid = read_at(&pts, 6.0).unwrap();
        assert!((mid - 0.1f64.sqrt() * 0.01f64.sqrt()).abs() < 1e-12, "{mid}");
        assert_eq!(read_at(&pts, 3.9), None);
        assert_eq!(read_at(&pts, 12.1), None);
        // Next to a zero there is no log to interpolate.
        assert_eq!(read_at(&pts, 10.0), None);
        assert_eq!(read_at(&pts, 12.0), Some(0.0));
    }
}
