//! The kill -9 crash loop, bounded (issue 7): `siftdb crashtest` with 300 cycles must report no
//! lost acknowledged write, no hole and no failed open. Longer runs:
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
    for clean in ["acknowledged writes lost 0,", "holes 0,", "failed opens 0"] {
        assert!(summary.contains(clean), "{summary}");
    }
    // The loop must actually acknowledge writes, or it proves nothing.
    let acked: u64 = summary
        .split("acknowledged writes ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|s| s.parse().ok())
        .expect("acknowledged count");
    assert!(acked >= 300, "only {acked} acknowledged writes in 300 cycles");
}
