//! Policies compared at equal measured memory: `equal_memory.csv` and its table on stdout.
//!
//! Each build spends its own bits per key (flush filters are powers of two, fixed-width kinds
//! spend what their width costs, files keep the FPR they were built with while the tree grows),
//! so two policies run at the same budget rarely spend the same memory. Every policy's measured
//! points (bits per key spent, data blocks per missing lookup) form its curve; a policy is read
//! at any bits inside its curve by interpolating `ln(blocks)` linearly in bits between the two
//! measured points around it (a filter's FPR falls exponentially with its bits, so this is exact
//! for one static filter and close for a sum of them), never outside it (no extrapolation), and
//! not next to a measured zero (a log has no place for 0).
//!
//! The comparison is made at every measured point of every policy that lies inside the
//! default's curve: there the default and every other policy whose curve covers those bits are
//! read, and the default's blocks are set against the fewest. A point no other policy covers
//! is not compared (it is not a win).
//!
//! Each figure counts blocks over the build's missing-key lookups, a Poisson count, so a
//! ratio of two of them carries a relative standard error of about `sqrt(1/n_a + 1/n_b)` for
//! `n` the blocks counted (for an interpolated reading, its blocks per lookup times the
//! lookups): `sigma` in the table and the CSV, so that a gap of a few percent over a few
//! hundred blocks is not read as a difference.

use super::build::Policy;
use super::Run;
use std::fmt::Write as _;

/// The policy siftdb's `FilterPolicy::default()` is (at its budget; `tests` check the match).
pub const DEFAULT: Policy = Policy::BumpedAllRuns;

/// A policy's blocks per missing lookup read off its curve at one point.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The policy.
    pub policy: Policy,
    /// Blocks per missing lookup at the compared bits per key (measured or interpolated).
    pub blocks: f64,
    /// Whether `blocks` was measured at exactly these bits.
    pub measured: bool,
}

/// The comparison at one measured point.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The budget of the run measured here.
    pub budget: f64,
    /// The policy of that run.
    pub source: Policy,
    /// Bits per key the run spent: where every policy is read.
    pub bits: f64,
    /// The default first, then every other policy whose curve covers `bits`, best (fewest
    /// blocks) first.
    pub readings: Vec<Reading>,
}

impl Comparison {
    /// The relative standard error of `blocks / readings[0].blocks` over `lookups` lookups
    /// (module documentation); infinite where either count is 0.
    pub fn ratio_sigma(&self, other: &Reading, lookups: u64) -> f64 {
        let n = |blocks: f64| blocks * lookups as f64;
        (1.0 / n(self.readings[0].blocks) + 1.0 / n(other.blocks)).sqrt()
    }

    /// The best other policy, if any covers these bits.
    pub fn best_other(&self) -> Option<&Reading> {
        self.readings.get(1)
    }

    /// The default's blocks over the best other policy's (below 1: the default reads fewer);
    /// `None` where no other policy covers these bits.
    pub fn default_over_best(&self) -> Option<f64> {
        self.best_other().map(|b| self.readings[0].blocks / b.blocks)
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
/// (module documentation), and whether `x` is a measured point; `None` outside the measured
/// range or next to a zero.
pub fn read_at(pts: &[(f64, f64)], x: f64) -> Option<(f64, bool)> {
    let hi = pts.iter().position(|&(b, _)| b >= x)?;
    let (x1, y1) = pts[hi];
    if x1 == x {
        return Some((y1, true));
    }
    let (x0, y0) = pts[hi.checked_sub(1)?];
    if y0 <= 0.0 || y1 <= 0.0 || x1 <= x0 {
        return None;
    }
    let t = (x - x0) / (x1 - x0);
    Some(((y0.ln() * (1.0 - t) + y1.ln() * t).exp(), false))
}

/// One comparison per measured point inside the default's curve (module documentation), in
/// run order.
pub fn compare(runs: &[Run]) -> Vec<Comparison> {
    let curves: Vec<(Policy, Vec<(f64, f64)>)> = Policy::ALL
        .iter()
        .filter(|&&p| p != Policy::NoFilter)
        .map(|&p| (p, curve(runs, p)))
        .collect();
    let default_curve = &curves.iter().find(|(p, _)| *p == DEFAULT).expect("in ALL").1;
    runs.iter()
        .filter(|r| r.policy != Policy::NoFilter)
        .filter_map(|r| r.outcome.as_ref().ok().map(|m| (r, m.total.bits_per_key())))
        .filter_map(|(r, bits)| {
            let (blocks, measured) = read_at(default_curve, bits)?;
            let own = Reading { policy: DEFAULT, blocks, measured };
            let mut others: Vec<Reading> = curves
                .iter()
                .filter(|(p, _)| *p != DEFAULT)
                .filter_map(|(p, pts)| {
                    let (blocks, measured) = read_at(pts, bits)?;
                    Some(Reading { policy: *p, blocks, measured })
                })
                .collect();
            others.sort_by(|a, b| a.blocks.total_cmp(&b.blocks));
            let readings = std::iter::once(own).chain(others).collect();
            Some(Comparison { budget: r.budget, source: r.policy, bits, readings })
        })
        .collect()
}

/// The text of `equal_memory.csv`: one row per measured point and policy read there, with the
/// relative standard error of `over_default` over `lookups` missing-key lookups.
pub fn csv(comparisons: &[Comparison], lookups: u64) -> String {
    let mut s = String::from(
        "budget,measured_policy,bits_per_key,policy,blocks_per_missing,measured,over_default,\
         sigma\n",
    );
    for c in comparisons {
        let own = c.readings[0].blocks;
        for r in &c.readings {
            let _ = writeln!(
                s,
                "{},{},{:.4},{},{:.6},{},{:.4},{:.4}",
                c.budget,
                c.source.name(),
                c.bits,
                r.policy.name(),
                r.blocks,
                if r.measured { "yes" } else { "interpolated" },
                if own > 0.0 { r.blocks / own } else { f64::NAN },
                c.ratio_sigma(r, lookups)
            );
        }
    }
    s
}

/// The comparison on stdout, one line per point another policy covers, by bits per key; a
/// ratio above 1 is a point where the default reads more blocks than the best other policy.
pub fn print(comparisons: &[Comparison], lookups: u64) {
    println!(
        "\nat equal measured memory: {} against the best other policy at every measured point",
        DEFAULT.name()
    );
    println!(
        "{:>9} {:<29} {:>6} {:>12} {:<29} {:>12} {:>13} {:>7}",
        "bits/key",
        "measured",
        "budget",
        "default_blk",
        "best other",
        "best_blk",
        "default/best",
        "sigma"
    );
    let mut sorted: Vec<&Comparison> =
        comparisons.iter().filter(|c| c.default_over_best().is_some()).collect();
    sorted.sort_by(|a, b| a.bits.total_cmp(&b.bits));
    for c in sorted {
        let best = c.best_other().expect("compared");
        println!(
            "{:>9.2} {:<29} {:>6} {:>12.5} {:<29} {:>12.5} {:>13.3} {:>6.1}%",
            c.bits,
            c.source.name(),
            c.budget,
            c.readings[0].blocks,
            best.policy.name(),
            best.blocks,
            c.default_over_best().expect("compared"),
            100.0 * c.ratio_sigma(best, lookups)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_log_linear_between_the_bracketing_points_and_never_extrapolated() {
        let pts = [(4.0, 0.1), (8.0, 0.01), (12.0, 0.0)];
        assert_eq!(read_at(&pts, 4.0), Some((0.1, true)));
        let (mid, measured) = read_at(&pts, 6.0).unwrap();
        assert!(!measured);
        assert!((mid - 0.1f64.sqrt() * 0.01f64.sqrt()).abs() < 1e-12, "{mid}");
        assert_eq!(read_at(&pts, 3.9), None);
        assert_eq!(read_at(&pts, 12.1), None);
        // Next to a zero there is no log to interpolate.
        assert_eq!(read_at(&pts, 10.0), None);
        assert_eq!(read_at(&pts, 12.0), Some((0.0, true)));
    }
}
