//! The kill -9 crash loop, bounded (issue 7): `siftdb crashtest` with 300 cycles (the child
//! writes synced batches while a second thread compacts) must report no lost acknowledged
//! write, no hole and no failed open, with kills landing in recovery and in compactions. Longer runs:
//! `cargo run --release -- crashtest --cycles 100000 --seed N --dir /path`.

use std::process::Command;

/// Figures of one `siftdb crashtest` summary line.
#[derive(Default, Debug)]
struct Summary {
    acked: u64,
    compactions: u64,
    kills_in_recovery: u64,
    kills_in_compaction: u64,
}

/// Runs `cycles` kill/recover cycles with `seed`; asserts the run is clean (no lost acknowledged
/// write, no hole, no failed open) and returns its counts.
fn run_clean(cycles: u32, seed: u64) -> Summary {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args(["crashtest", "--cycles", &cycles.to_string(), "--seed", &seed.to_string(), "--dir"])
        .arg(tmp.path())
        .output()
        .expect("run siftdb crashtest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "crashtest failed: {stdout}{stderr}");
    let summary =
        stdout.lines().find(|l| l.starts_with("crashtest: cycles")).expect("summary line");
    assert!(summary.starts_with(&format!("crashtest: cycles {cycles},")), "{summary}");
    for clean in ["acknowledged writes lost 0,", "holes 0,", "failed opens 0,"] {
        assert!(summary.contains(clean), "{summary}");
    }
    let count = |name: &str| -> u64 {
        summary
            .split(name)
            .nth(1)
            .and_then(|s| s.trim_start().split([',', ' ']).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no {name:?} in {summary}"))
    };
    Summary {
        acked: count("acknowledged writes "),
        compactions: count("compactions "),
        kills_in_recovery: count("kills during recovery "),
        kills_in_compaction: count("during compaction "),
    }
}

#[test]
fn three_hundred_kill_9_cycles_lose_no_acknowledged_write() {
    // The loop must actually acknowledge writes, compact, and kill the child inside recovery
    // and inside compactions, or it proves little. (A run of seed 11 on a shared 2-core machine
    // counted 7,640 writes, 372 compactions, 84 kills in recovery, 110 in compaction.) Where the
    // kills land depends on the machine's speed and load, so a run that falls short of a floor
    // is followed by more rounds of 300 cycles (each one must be clean too), at most 4 in all.
    let mut total = Summary::default();
    for round in 0..4u64 {
        let s = run_clean(300, 11 + round);
        total.acked += s.acked;
        total.compactions += s.compactions;
        total.kills_in_recovery += s.kills_in_recovery;
        total.kills_in_compaction += s.kills_in_compaction;
        if total.acked >= 300
            && total.compactions >= 50
            && total.kills_in_recovery >= 10
            && total.kills_in_compaction >= 10
        {
            return;
        }
    }
    panic!("1,200 cycles without enough coverage: {total:?}");
}
