//! The kill -9 crash loop, bounded (issue 7): `siftdb crashtest` with 300 cycles (the child
//! writes synced batches while a second thread compacts) must report no lost acknowledged
//! write, no hole and no failed open, with kills landing in recovery and in compactions. Longer runs:
//! `cargo run --release -- crashtest --cycles 100000 --seed N --dir /path`.

use std::process::Command;

#[test]
fn three_hundred_kill_9_cycles_lose_no_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args(["crashtest", "--cycles", "300", "--seed", "11", "--dir"])
        .arg(tmp.path())
        .output()
        .expect("run siftdb crashtest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "crashtest failed: {stdout}{stderr}");
    let summary =
        stdout.lines().find(|l| l.starts_with("crashtest: cycles")).expect("summary line");
    assert!(summary.starts_with("crashtest: cycles 300,"), "{summary}");
    for clean in ["acknowledged writes lost 0,", "holes 0,", "failed opens 0,"] {
        assert!(summary.contains(clean), "{summary}");
    }
    // The loop must actually acknowledge writes, compact, and kill the child inside recovery
    // and inside compactions, or it proves little. (A run of seed 11 on a shared 2-core machine
    // counted 7,640 writes, 372 compactions, 84 kills in recovery, 110 in compaction; the
    // bounds leave room for slower or faster disks, which shift where the kills land.)
    let count = |name: &str| -> u64 {
        summary
            .split(name)
            .nth(1)
            .and_then(|s| s.trim_start().split([',', ' ']).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no {name:?} in {summary}"))
    };
    let acked = count("acknowledged writes ");
    assert!(acked >= 300, "only {acked} acknowledged writes in 300 cycles");
    let compactions = count("compactions ");
    assert!(compactions >= 50, "only {compactions} compactions");
    let recovery = count("kills during recovery ");
    assert!(recovery >= 10, "only {recovery} kills during recovery");
    let compaction = count("during compaction ");
    assert!(compaction >= 10, "only {compaction} kills during compaction");
}
