//! `siftdb sst write`, `siftdb ingest` and `siftdb export` end to end through the binary.

use std::process::{Command, Output};

fn siftdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_siftdb")).args(args).output().expect("run siftdb")
}

fn ok(args: &[&str]) -> String {
    let out = siftdb(args);
    assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Fails with exactly one line on stderr that mentions `expect`.
fn fails(args: &[&str], expect: &str) {
    let out = siftdb(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(expect), "{args:?}: {err:?} does not mention {expect:?}");
}

#[test]
fn sst_write_ingest_and_export_move_data_between_databases() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    std::fs::write(p("in.txt"), "a\t1\nb\t2\nc\t3\n").unwrap();
    std::fs::write(p("unsorted.txt"), "b\t1\na\t2\n").unwrap();
    std::fs::write(p("hex.txt"), "00ff\t0a0b\n").unwrap();
    assert!(ok(&["sst", "write", "--input", &p("in.txt"), "--output", &p("x.sst")])
        .contains("3 entries"));
    fails(&["sst", "write", "--input", &p("unsorted.txt"), "--output", &p("y.sst")], "line 2");
    assert!(!tmp.path().join("y.sst").exists(), "a failed write leaves no file");
    fails(&["sst", "write", "--input", &p("in.txt"), "--output", &p("x.sst")], "exists");
    ok(&["sst", "write", "--hex", "--input", &p("hex.txt"), "--output", &p("h.sst")]);

    let db = p("db");
    ok(&["put", &db, "b", "old", "--create"]);
    let out = ok(&["ingest", "--db", &db, &p("x.sst"), "--move"]);
    assert!(out.contains("ingested 1 files"), "{out}");
    assert!(!tmp.path().join("x.sst").exists(), "--move removes the source");
    ok(&["ingest", "--db", &db, "--copy", &p("h.sst")]);
    assert!(tmp.path().join("h.sst").exists(), "--copy keeps the source");
    assert_eq!(ok(&["scan", &db]), "\\x00\\xff => \\x0a\\x0b\na => 1\nb => 2\nc => 3\n");
    fails(&["ingest", "--db", &db, &p("missing.sst")], "does not exist");
    fails(&["ingest", "--db", &db, &p("in.txt")], "corruption");

    let out = ok(&["export", "--db", &db, "--from", "a", "--to", "c", "--dir", &p("out")]);
    assert!(out.contains("exported 2 keys in 1 files"), "{out}");
    fails(&["export", "--db", &db, "--dir", &p("out")], "not empty");
    let db2 = p("db2");
    ok(&["put", &db2, "z", "26", "--create"]);
    let sst = std::fs::read_dir(tmp.path().join("out")).unwrap().next().unwrap().unwrap().path();
    let bad = siftdb(&["ingest", "--db", &db2, "--check", "some", sst.to_str().unwrap()]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid value 'some' for '--check"));
    ok(&["ingest", "--db", &db2, "--check", "metadata", sst.to_str().unwrap()]);
    assert_eq!(ok(&["scan", &db2]), "a => 1\nb => 2\nz => 26\n");

    // A bulk load into a new database: refused without --create, made with it; a directory
    // holding something else is not taken over.
    let fresh = p("fresh");
    fails(&["ingest", "--db", &fresh, sst.to_str().unwrap()], "not a siftdb database");
    assert!(!tmp.path().join("fresh").exists(), "a refused ingest creates nothing");
    ok(&["ingest", "--db", &fresh, "--create", sst.to_str().unwrap()]);
    assert_eq!(ok(&["scan", &fresh]), "a => 1\nb => 2\n");
    std::fs::create_dir(tmp.path().join("foreign")).unwrap();
    std::fs::write(tmp.path().join("foreign").join("notes.txt"), "mine").unwrap();
    let foreign = p("foreign");
    let out = siftdb(&["ingest", "--db", &foreign, "--create", sst.to_str().unwrap()]);
    assert!(!out.status.success(), "a directory holding another program's file is refused");
    assert_eq!(std::fs::read(tmp.path().join("foreign").join("notes.txt")).unwrap(), b"mine");
}
