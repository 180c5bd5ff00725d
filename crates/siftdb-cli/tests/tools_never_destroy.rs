//! The CLI never deletes or overwrites what siftdb did not create (design.md#tool-safety):
//! `bench --db`, `demo --db` and `readamp --out` refuse a directory holding anything
//! else with one line and a non-zero exit, and leave it byte-identical. Also the bench flag
//! checks that reach `Options::validate` and the key generator's limits.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn siftdb(args: &[&str], dir_args: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_siftdb"));
    cmd.args(args);
    for (flag, path) in dir_args {
        cmd.arg(flag).arg(path);
    }
    cmd.output().expect("run siftdb")
}

// One copy of the helper, shared with the engine's tests/db_destroy.rs.
#[path = "../../../tests/common/tree_snapshot.rs"]
mod tree_snapshot;
use tree_snapshot::snapshot;

/// A directory holding a precious file and a subdirectory.
fn precious_dir(root: &Path) -> PathBuf {
    let dir = root.join("v");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("precious.txt"), b"x\n").unwrap();
    std::fs::write(dir.join("sub").join("notes"), b"y").unwrap();
    dir
}

/// Asserts a failed run whose stderr has exactly one `siftdb:` error line containing every
/// piece of `expect`.
fn refused_with_one_line(out: &Output, expect: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted; stderr: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("siftdb:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    for part in expect {
        assert!(errors[0].contains(part), "{:?} does not mention {part:?}", errors[0]);
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

const TINY_BENCH: &[&str] =
    &["bench", "--benchmarks=fillrandom,readrandom", "--num=200", "--compression_type=none"];

#[test]
fn bench_refuses_a_directory_with_a_precious_file_and_leaves_it_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = precious_dir(tmp.path());
    let before = snapshot(&dir);
    let out = siftdb(TINY_BENCH, &[("--db", &dir)]);
    refused_with_one_line(&out, &["refusing to use --db", "precious.txt"]);
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn bench_refuses_a_database_directory_that_also_holds_a_foreign_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let out = siftdb(TINY_BENCH, &[("--db", &dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(dir.join("precious.txt"), b"x").unwrap();
    let before = snapshot(&dir);
    let out = siftdb(TINY_BENCH, &[("--db", &dir)]);
    refused_with_one_line(&out, &["precious.txt"]);
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn bench_uses_an_empty_directory_and_replaces_its_own_database_on_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    for _ in 0..2 {
        let out = siftdb(TINY_BENCH, &[("--db", &dir)]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("readrandom"), "{stdout}");
        assert!(names(&dir).contains(&"CURRENT".to_string()));
    }
    // --use_existing_db keeps the database: the reads find the keys of the last fill.
    let out = siftdb(
        &["bench", "--benchmarks=readrandom", "--num=200", "--use_existing_db=1"],
        &[("--db", &dir)],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let line = stdout.lines().find(|l| l.starts_with("readrandom")).expect("readrandom line");
    assert!(!line.contains("(0 of 200 found)"), "{line}");
}

#[test]
fn bench_rejects_zero_threads_with_one_line() {
    let out = siftdb(&["bench", "--num=10", "--threads=0"], &[]);
    refused_with_one_line(&out, &["--threads=0"]);
}

#[test]
fn bench_rejects_a_key_size_below_the_generators_eight_bytes() {
    let out = siftdb(&["bench", "--num=10", "--key_size=7"], &[]);
    refused_with_one_line(&out, &["--key_size=7", "at least 8"]);
    let out = siftdb(&["bench", "--num=10", "--key_size=8", "--benchmarks=fillseq"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn bench_flags_reach_options_validate() {
    for (flag, field) in [
        ("--write_buffer_size=0", "memtable_size = 0"),
        ("--target_file_size_base=0", "compaction.target_file_size = 0"),
        ("--max_bytes_for_level_multiplier=1", "compaction.max_bytes_for_level_multiplier"),
        ("--level0_file_num_compaction_trigger=0", "compaction.l0_compaction_trigger = 0"),
        ("--flush_bits=100", "filter_policy.flush.bits_per_key = 100"),
    ] {
        let out = siftdb(&["bench", "--num=10", "--flush_filter=two_bit", flag], &[]);
        let flag_name = flag.split('=').next().unwrap();
        refused_with_one_line(&out, &[field, "valid", flag_name]);
    }
}

const TINY_DEMO: &[&str] = &["demo", "--keys", "500", "--lookups", "100"];

#[test]
fn demo_refuses_a_directory_with_a_precious_file_and_leaves_it_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = precious_dir(tmp.path());
    let before = snapshot(&dir);
    let out = siftdb(TINY_DEMO, &[("--db", &dir)]);
    refused_with_one_line(&out, &["refusing to use --db", "precious.txt"]);
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn demo_refuses_a_siftdb_database_it_did_not_create() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    drop(siftdb::Db::open(&dir, siftdb::Options::default()).unwrap());
    let before = snapshot(&dir);
    let out = siftdb(TINY_DEMO, &[("--db", &dir)]);
    refused_with_one_line(&out, &["did not create"]);
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn demo_creates_its_database_and_runs_again_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    for _ in 0..2 {
        let out = siftdb(TINY_DEMO, &[("--db", &dir)]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("(0 of 100 found)"), "{stdout}");
    }
    assert!(names(&dir).contains(&"SIFTDB-DEMO".to_string()));
}

#[test]
fn demo_with_zero_keys_is_rejected_with_a_clear_message_not_a_corruption() {
    let out = siftdb(&["demo", "--keys", "0", "--lookups", "10"], &[]);
    refused_with_one_line(&out, &["--keys=0", "at least one key"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("corruption"));
}

/// A tiny readamp run (a few seconds).
const TINY_READAMP: &[&str] = &[
    "readamp",
    "--bits",
    "4",
    "--keys",
    "4000",
    "--flush-keys",
    "1000",
    "--level-base-kib",
    "64",
    "--file-kib",
    "64",
    "--lookups",
    "1000",
    "--fpr-keys",
    "2000",
    "--tolerance",
    "5",
];

#[test]
fn readamp_refuses_an_output_directory_with_a_precious_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = precious_dir(tmp.path());
    std::fs::write(dir.join("readamp.csv"), b"an old report the user keeps").unwrap();
    let before = snapshot(&dir);
    let out = siftdb(TINY_READAMP, &[("--out", &dir)]);
    refused_with_one_line(&out, &["refusing to use --out", "readamp did not write"]);
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn readamp_overwrites_a_directory_holding_only_its_own_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("report");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("readamp.csv"), b"stale").unwrap();
    let out = siftdb(TINY_READAMP, &[("--out", &dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        names(&dir),
        [
            "blocks_per_lookup.svg",
            "equal_memory.csv",
            "fpr_vs_bits.csv",
            "fpr_vs_bits.svg",
            "readamp.csv"
        ]
    );
    let csv = std::fs::read_to_string(dir.join("readamp.csv")).unwrap();
    assert!(csv.starts_with("policy,"), "{csv}");
}

#[test]
fn readamp_without_out_writes_into_a_new_directory_it_prints() {
    let out = siftdb(TINY_READAMP, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find(|l| l.starts_with("output directory: ")).expect("printed");
    let dir = PathBuf::from(line.trim_start_matches("output directory: "));
    assert!(dir.file_name().unwrap().to_string_lossy().starts_with("siftdb-readamp-"));
    assert_eq!(names(&dir).len(), 5, "{:?}", names(&dir));
    // The directory is this test run's own (just created by the command it ran).
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A siftdb database a user made (no tool marker), with one key.
fn user_database(root: &Path) -> PathBuf {
    let dir = root.join("users-db");
    let db = siftdb::Db::open(&dir, siftdb::Options::default()).unwrap();
    db.put("mine", "precious").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    dir
}

fn still_holds_the_users_key(dir: &Path) {
    let db = siftdb::Db::open(dir, siftdb::Options::default()).unwrap();
    assert_eq!(db.get("mine").unwrap(), Some(b"precious".to_vec()));
}

#[test]
fn bench_refuses_a_siftdb_database_it_did_not_create_unless_told_to_destroy_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = user_database(tmp.path());
    let before = snapshot(&dir);
    let out = siftdb(TINY_BENCH, &[("--db", &dir)]);
    refused_with_one_line(&out, &["did not create", "SIFTDB-BENCH", "--destroy_existing_db"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("micros/op"));
    assert_eq!(snapshot(&dir), before);
    still_holds_the_users_key(&dir);

    let args = [TINY_BENCH, &["--destroy_existing_db"]].concat();
    let out = siftdb(&args, &[("--db", &dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(names(&dir).contains(&"SIFTDB-BENCH".to_string()));
    let db = siftdb::Db::open(&dir, siftdb::Options::default()).unwrap();
    assert_eq!(db.get("mine").unwrap(), None, "replaced by the bench database, as asked");
}

#[test]
fn bench_marks_its_database_and_a_later_run_replaces_only_that() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let out = siftdb(TINY_BENCH, &[("--db", &dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(names(&dir).contains(&"SIFTDB-BENCH".to_string()));
    // The marker alone does not make a symlink or directory under its name bench's.
    std::fs::remove_file(dir.join("SIFTDB-BENCH")).unwrap();
    std::fs::create_dir(dir.join("SIFTDB-BENCH")).unwrap();
    let before = snapshot(&dir);
    let out = siftdb(TINY_BENCH, &[("--db", &dir)]);
    refused_with_one_line(&out, &["refusing to use --db"]);
    assert_eq!(snapshot(&dir), before);
}

const TINY_YCSB: &[&str] = &["ycsb", "--records", "200", "--operations", "200"];

#[test]
fn ycsb_refuses_a_siftdb_database_it_did_not_create_and_reuses_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = user_database(tmp.path());
    let before = snapshot(&dir);
    let out = siftdb(TINY_YCSB, &[("--db", &dir)]);
    refused_with_one_line(&out, &["refusing to use --db", "did not create", "SIFTDB-YCSB"]);
    assert_eq!(snapshot(&dir), before);
    still_holds_the_users_key(&dir);

    let own = tmp.path().join("ycsb");
    for _ in 0..2 {
        let out = siftdb(TINY_YCSB, &[("--db", &own)]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(names(&own).contains(&"SIFTDB-YCSB".to_string()));
    let precious = precious_dir(tmp.path());
    let before = snapshot(&precious);
    let out = siftdb(TINY_YCSB, &[("--db", &precious)]);
    refused_with_one_line(&out, &["precious.txt"]);
    assert_eq!(snapshot(&precious), before);
}

#[test]
fn crashtest_refuses_an_existing_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = user_database(tmp.path());
    let before = snapshot(&dir);
    let out = siftdb(&["crashtest", "--cycles", "1"], &[("--dir", &dir)]);
    refused_with_one_line(&out, &["refusing to use --dir", "siftdb database"]);
    assert_eq!(snapshot(&dir), before);
    still_holds_the_users_key(&dir);
}

#[test]
fn readamp_refuses_a_symlink_named_like_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target.txt");
    std::fs::write(&target, b"the user's file").unwrap();
    let dir = tmp.path().join("report");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("readamp.csv")).unwrap();
    let before = snapshot(&dir);
    let out = siftdb(TINY_READAMP, &[("--out", &dir)]);
    refused_with_one_line(&out, &["refusing to use --out", "readamp.csv", "not a regular file"]);
    assert_eq!(snapshot(&dir), before);
    assert_eq!(std::fs::read(&target).unwrap(), b"the user's file");
}

#[test]
fn the_engine_never_writes_through_a_symlink_planted_as_current_tmp() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = user_database(tmp.path());
    let target = tmp.path().join("victim.txt");
    std::fs::write(&target, b"not siftdb's").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("CURRENT.tmp")).unwrap();
    match siftdb::Db::open(&dir, siftdb::Options::default()) {
        Err(siftdb::Error::Io { context, .. }) => {
            assert!(context.contains("symbolic link"), "{context}")
        }
        other => panic!("expected an I/O error naming the link, got {:?}", other.map(|_| ())),
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"not siftdb's");
    std::fs::remove_file(dir.join("CURRENT.tmp")).unwrap();
    still_holds_the_users_key(&dir);
}
