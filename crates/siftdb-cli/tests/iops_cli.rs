//! `siftdb iops FILE`: reports reads/s and MB/s per queue depth, never writes or creates the
//! file, and rejects bad input with a message.

use siftdb::filter::rng::SplitMix64;
use std::process::{Command, Output};

fn iops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_siftdb")).arg("iops").args(args).output().expect("run")
}

/// A 1 MiB file of seeded random bytes, `data` in `dir`: its path and contents.
fn random_file(dir: &std::path::Path, seed: u64) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join("data");
    let mut bytes = vec![0u8; 1 << 20];
    SplitMix64::new(seed).fill(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

#[test]
fn iops_on_a_small_file_reports_both_queue_depths_and_leaves_the_file_unchanged() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (path, bytes) = random_file(tmp.path(), 9);
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let out = iops(&[path.to_str().unwrap(), "--seconds", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for depth in ["1", "32"] {
        let row = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(depth))
            .unwrap_or_else(|| panic!("a QD{depth} row in {stdout}"));
        let reads_per_sec: f64 = row.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(reads_per_sec > 0.0, "{row}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), modified);
}

#[test]
fn iops_refuses_a_missing_file_without_creating_it() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = tmp.path().join("absent");
    let out = iops(&[path.to_str().unwrap(), "--seconds", "1"]);
    assert!(!out.status.success());
    assert!(!path.exists(), "iops created {}", path.display());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("absent"), "{stderr}");
}

#[test]
fn iops_rejects_a_file_shorter_than_one_block_and_out_of_range_flags() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = tmp.path().join("tiny");
    std::fs::write(&path, b"tiny").unwrap();
    let p = path.to_str().unwrap();
    let out = iops(&[p, "--seconds", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 4096"));
    let big = tmp.path().join("big");
    std::fs::write(&big, vec![1u8; 8192]).unwrap();
    let b = big.to_str().unwrap();
    let out = iops(&[b, "--seconds", "0"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seconds=0 is out of range"));
    let out = iops(&[b, "--seconds", "1", "--depths", "0"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--depths value 0 is out of range"));
    for (sizes, why) in [("6", "--sizes value 6 is out of range"), ("12", "larger than")] {
        let out = iops(&[b, "--seconds", "1", "--sizes", sizes]);
        assert!(!out.status.success(), "{sizes}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(why), "{sizes}");
    }
    // Two pages read whole: 8 KiB reads of the 8 KiB file.
    let out = iops(&[b, "--seconds", "0.2", "--depths", "1", "--sizes", "4,8"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("random 4 KiB reads") && stdout.contains("random 8 KiB reads"));
    assert_eq!(std::fs::read(&path).unwrap(), b"tiny");
}

#[test]
fn iops_batches_report_a_row_per_batch_size_or_say_io_uring_is_refused() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (path, bytes) = random_file(tmp.path(), 5);
    let p = path.to_str().unwrap();
    let out = iops(&[p, "--seconds", "0.3", "--depths", "1", "--batches", "3,20"]);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        // A sandbox that refuses io_uring: a message naming it, after the depth table.
        assert!(stderr.contains("io_uring"), "{stdout}{stderr}");
        return;
    }
    let table: Vec<&str> =
        stdout.lines().skip_while(|l| !l.trim_start().starts_with("batch")).skip(1).collect();
    for batch in ["3", "20"] {
        let row = table
            .iter()
            .find(|l| l.split_whitespace().next() == Some(batch))
            .unwrap_or_else(|| panic!("a row for batches of {batch} in {stdout}"));
        let cols: Vec<f64> = row.split_whitespace().map(|c| c.parse().unwrap()).collect();
        // reads/s > 0, and us per batch = batch size / reads per second.
        assert!(cols[1] > 0.0, "{row}");
        let expect = cols[0] * 1e6 / cols[1];
        assert!((cols[3] - expect).abs() <= 0.01 * expect + 0.1, "{row}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let out = iops(&[p, "--seconds", "1", "--batches", "0"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--batches value 0 is out of range"));
}
