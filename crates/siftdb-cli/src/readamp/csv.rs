//! `readamp.csv` (one row per policy x budget x level, plus a totals row per run) and
//! `fpr_vs_bits.csv` (the data of the FPR plot).

use super::measure::LevelRow;
use super::Run;
use siftdb::{Error, Result};
use siftdb_bench_kit::survey::SurveyRow;
use std::fmt::Write as _;
use std::path::Path;

/// Header of `readamp.csv`.
pub const HEADER: &str = "policy,budget_bits_per_key,level,files,entries,filter,filter_bytes,\
bits_per_key,configured_fpr,built_fpr,observed_fpr,checks_per_missing,blocks_per_missing,\
predicted_blocks_per_missing,blocks_per_present,blocks_per_lookup_mix,file_reads_per_missing,\
file_reads_per_present,us_per_missing,us_per_present,equal_memory,note";

fn opt(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| format!("{v:.6e}"))
}

/// One row; `times` (microseconds per missing and per present lookup) on the totals row only.
fn level_line(s: &mut String, run: &Run, equal: &str, r: &LevelRow, times: Option<(f64, f64)>) {
    let level = r.level.map_or("total".to_string(), |l| format!("L{l}"));
    let (us_missing, us_present) = times
        .map_or((String::new(), String::new()), |(m, p)| (format!("{m:.3}"), format!("{p:.3}")));
    let _ = writeln!(
        s,
        "{},{},{level},{},{},{},{},{:.4},{},{},{},{:.4},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},\
         {us_missing},{us_present},{equal},",
        run.policy.name(),
        run.budget,
        r.files,
        r.entries,
        r.filter,
        r.filter_bytes,
        r.bits_per_key(),
        opt(r.configured_fpr),
        opt(r.built_fpr),
        opt(r.observed_fpr),
        r.checks_per_missing,
        r.blocks_per_missing,
        r.predicted_per_missing,
        r.blocks_per_present,
        r.blocks_per_mix,
        r.file_reads_per_missing,
        r.file_reads_per_present,
    );
}

/// The text of `readamp.csv`. `tolerance` decides the `equal_memory` column (see
/// [`Run::equal_memory`]); unreachable budgets get one totals row with empty figures and the
/// reason in `note` (commas replaced, so the row stays one field per column).
pub fn readamp_csv(runs: &[Run], tolerance: f64) -> String {
    let mut s = String::new();
    s.push_str(HEADER);
    s.push('\n');
    for run in runs {
        let equal = run.equal_memory(tolerance);
        match &run.outcome {
            Ok(m) => {
                for r in &m.levels {
                    level_line(&mut s, run, &equal, r, None);
                }
                let times = (m.us_per_missing, m.us_per_present);
                level_line(&mut s, run, &equal, &m.total, Some(times));
            }
            Err(reason) => {
                let _ = writeln!(
                    s,
                    "{},{},total,,,,,,,,,,,,,,,,,,{equal},{}",
                    run.policy.name(),
                    run.budget,
                    reason.replace(',', ";")
                );
            }
        }
    }
    s
}

/// The text of `fpr_vs_bits.csv`.
pub fn fpr_csv(rows: &[SurveyRow]) -> String {
    let mut s = String::from("filter,config,keys,bits_per_key,fpr,fpr_theory\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{:.4},{:.6e},{:.6e}",
            r.filter, r.config, r.keys, r.bits_per_key, r.fpr, r.fpr_theory
        );
    }
    s
}

/// Writes `text` to `path`, refusing to follow a symbolic link there (`O_NOFOLLOW`): readamp
/// overwrites only files it wrote itself, never the target of a link named like one.
pub fn write(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e| Error::io(format!("writing {}", path.display()), e);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)
}
