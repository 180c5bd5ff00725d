//! What readamp prints on stdout besides the equal-memory table: every run's totals, the
//! per-level figures near 10 bits per key, and file reads and time per lookup.

use super::{build, ReadampArgs, Run};

/// Per run: file reads and wall time per lookup (device reads with `--direct-reads`).
pub fn print_file_reads(runs: &[Run], io: build::Io) {
    let reads = if matches!(io, build::Io::Direct { .. }) { "device reads" } else { "file reads" };
    println!("\n{reads} and microseconds per lookup (one thread):");
    println!(
        "{:<29} {:>6} {:>9} {:>12} {:>12} {:>10} {:>10}",
        "policy", "budget", "bits/key", "rd/missing", "rd/present", "us/missing", "us/present"
    );
    for r in runs {
        if let Ok(m) = &r.outcome {
            println!(
                "{:<29} {:>6} {:>9.2} {:>12.4} {:>12.4} {:>10.2} {:>10.2}",
                r.policy.name(),
                r.budget,
                m.total.bits_per_key(),
                m.total.file_reads_per_missing,
                m.total.file_reads_per_present,
                m.us_per_missing,
                m.us_per_present
            );
        }
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.4}%", v * 100.0))
}

/// The totals of every run (with the blocks per missing lookup spent below L0, where the
/// compaction filter and its allocation act), then the per-level figures at the budget nearest
/// 10 bits per key.
pub fn print_report(runs: &[Run], args: &ReadampArgs) {
    println!(
        "\n{:<29} {:>6} {:>9} {:<13} {:>11} {:>11} {:>11} {:>11} {:>9} {:>10} {:>6}",
        "policy",
        "budget",
        "bits/key",
        "equal_memory",
        "blk/missing",
        "L1+ only",
        "predicted",
        "blk/present",
        "blk/mix",
        "obs_fpr",
        "secs"
    );
    for r in runs {
        let eq = r.equal_memory(args.tolerance);
        match &r.outcome {
            Ok(m) => println!(
                "{:<29} {:>6} {:>9.2} {:<13} {:>11.4} {:>11.4} {:>11.4} {:>11.4} {:>9.4} {:>10} {:>6.1}",
                r.policy.name(),
                r.budget,
                m.total.bits_per_key(),
                eq,
                m.total.blocks_per_missing,
                m.levels
                    .iter()
                    .filter(|l| l.level != Some(0))
                    .map(|l| l.blocks_per_missing)
                    .sum::<f64>(),
                m.total.predicted_per_missing,
                m.total.blocks_per_present,
                m.total.blocks_per_mix,
                pct(m.total.observed_fpr),
                r.secs
            ),
            Err(reason) => println!("{:<29} {:>6} {reason}", r.policy.name(), r.budget),
        }
    }
    let near10 =
        args.bits.iter().copied().min_by(|a, b| (a - 10.0).abs().total_cmp(&(b - 10.0).abs()));
    for r in runs.iter().filter(|r| r.budget == 0.0 || Some(r.budget) == near10) {
        let Ok(m) = &r.outcome else { continue };
        println!("\n{} at {} bits/key, per level:", r.policy.name(), r.budget);
        println!(
            "{:<6} {:>5} {:>8} {:<18} {:>9} {:>10} {:>10} {:>10} {:>8} {:>11} {:>11}",
            "level",
            "files",
            "entries",
            "filter",
            "bits/key",
            "cfg_fpr",
            "built_fpr",
            "obs_fpr",
            "checks",
            "blk/missing",
            "blk/present"
        );
        for l in m.levels.iter().chain(std::iter::once(&m.total)) {
            println!(
                "{:<6} {:>5} {:>8} {:<18} {:>9.2} {:>10} {:>10} {:>10} {:>8.3} {:>11.4} {:>11.4}",
                l.level.map_or("total".into(), |v| format!("L{v}")),
                l.files,
                l.entries,
                l.filter,
                l.bits_per_key(),
                pct(l.configured_fpr),
                pct(l.built_fpr),
                pct(l.observed_fpr),
                l.checks_per_missing,
                l.blocks_per_missing,
                l.blocks_per_present
            );
        }
    }
}
