//! `siftdb get|put|delete|delete-range|scan|dump|checkpoint|compact DB` end to end through the
//! binary.

use std::path::Path;
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
fn put_get_delete_scan_dump_compact_and_checkpoint_work_on_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let d = db.to_str().unwrap();
    fails(&["put", d, "a", "1"], "not a siftdb database");
    ok(&["put", d, "a", "1", "--create"]);
    ok(&["put", d, "b", "two"]);
    ok(&["put", d, "bb", "x\ty"]);
    ok(&["put", "--hex", d, "00ff", "0a0b"]);
    assert_eq!(ok(&["get", d, "b"]), "two\n");
    assert_eq!(ok(&["get", "--hex", d, "00ff"]), "0a0b\n");
    fails(&["get", d, "zzz"], "not found");
    assert_eq!(ok(&["scan", d, "--prefix", "b"]), "b => two\nbb => x\\x09y\n");
    assert_eq!(ok(&["scan", d, "--from", "a", "--to", "bb", "--keys-only"]), "a\nb\n");
    assert_eq!(ok(&["scan", d, "--prefix", "b", "--reverse", "--keys-only"]), "bb\nb\n");
    assert_eq!(ok(&["scan", d, "--limit", "1"]), "\\x00\\xff => \\x0a\\x0b\n");
    ok(&["delete", d, "a"]);
    fails(&["get", d, "a"], "not found");
    ok(&["compact", d]);
    assert_eq!(ok(&["dump", d]).lines().count(), 3);
    let cp = tmp.path().join("cp");
    ok(&["checkpoint", d, cp.to_str().unwrap()]);
    assert_eq!(ok(&["get", cp.to_str().unwrap(), "bb"]), "x\\x09y\n");
    fails(&["checkpoint", d, cp.to_str().unwrap()], "already exists");
}

#[test]
fn commands_on_a_missing_or_foreign_directory_print_one_line_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    fails(&["get", missing.to_str().unwrap(), "k"], "not a siftdb database");
    assert!(!missing.exists());
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    for cmd in ["scan", "dump", "compact"] {
        fails(&[cmd, foreign.to_str().unwrap()], "not a siftdb database");
    }
    let names: Vec<_> =
        std::fs::read_dir(&foreign).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1);
    assert!(Path::new(&foreign.join("notes.txt")).exists());
}

#[test]
fn a_locked_database_is_one_clear_line_for_writes_and_readable_beside_its_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    let db = siftdb::Db::open(tmp.path(), siftdb::Options::default()).unwrap();
    db.put("k", "v").unwrap();
    fails(&["put", d, "k", "w"], "already open");
    // Reads open the database read-only: no lock, and the writer's WAL is replayed.
    assert_eq!(ok(&["get", d, "k"]), "v\n");
    assert_eq!(ok(&["scan", d]), "k => v\n");
    drop(db);
    assert_eq!(ok(&["get", d, "k"]), "v\n");
}

/// Every file of `dir` by name with its bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn commands_that_only_read_leave_every_byte_of_the_database_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = dir.to_str().unwrap();
    {
        let db = siftdb::Db::open(&dir, siftdb::Options::default()).unwrap();
        let ks = db.keyspace("other", siftdb::KeyspaceOptions::default()).unwrap();
        for i in 0..50 {
            db.put(format!("k{i:02}"), "flushed").unwrap();
            ks.put(format!("o{i:02}"), "x").unwrap();
        }
        db.flush().unwrap();
        db.put("k99", "in the WAL only").unwrap();
        db.close().unwrap();
    }
    let before = contents(&dir);
    let file = |prefix: &str, suffix: &str| {
        let name =
            before.iter().map(|(n, _)| n).find(|n| n.starts_with(prefix) && n.ends_with(suffix));
        dir.join(name.expect("a file")).to_str().unwrap().to_string()
    };
    let (sst, log, manifest) = (file("", ".sst"), file("", ".log"), file("MANIFEST-", ""));
    assert_eq!(ok(&["get", d, "k99"]), "in the WAL only\n");
    assert_eq!(ok(&["get", d, "--keyspace", "other", "o07"]), "x\n");
    assert_eq!(ok(&["scan", d, "--prefix", "k0", "--keys-only"]).lines().count(), 10);
    assert_eq!(ok(&["dump", d]).lines().count(), 51);
    assert_eq!(ok(&["dump", d, "--keyspace", "other"]).lines().count(), 50);
    assert_eq!(ok(&["keyspaces", d]), "default\nother\n");
    ok(&["stats", d]);
    ok(&["sst", "dump", &sst, "--values"]);
    ok(&["wal", "dump", "--values", &log]);
    ok(&["manifest", "dump", &manifest]);
    fails(&["get", d, "missing"], "not found");
    fails(&["scan", d, "--keyspace", "nope"], "no keyspace");
    assert_eq!(contents(&dir), before, "a read-only command changed the database");
}

/// Adds 8-byte counters like siftdb.u64add, under another name.
struct AppAdd;

impl siftdb::MergeOperator for AppAdd {
    fn name(&self) -> &str {
        "app.add"
    }
    fn full_merge(
        &self,
        key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> siftdb::Result<Vec<u8>> {
        siftdb::U64AddOperator.full_merge(key, base, operands)
    }
}

fn with_operator(op: std::sync::Arc<dyn siftdb::MergeOperator>) -> siftdb::Options {
    siftdb::Options { merge_operator: Some(op), ..siftdb::Options::default() }
}

/// Fails with one line on stderr mentioning `expect`, having printed nothing on stdout.
fn refused_before_printing(args: &[&str], expect: &str) {
    let out = siftdb(args);
    assert!(out.stdout.is_empty(), "{args:?} printed {:?}", String::from_utf8_lossy(&out.stdout));
    fails(args, expect);
}

#[test]
fn scan_merges_with_the_operator_the_tables_name_or_refuses_before_printing() {
    let tmp = tempfile::tempdir().unwrap();
    // Operands of siftdb.u64add in a table and in the WAL: merged without --u64.
    let counters = tmp.path().join("counters");
    {
        let db =
            siftdb::Db::open(&counters, with_operator(std::sync::Arc::new(siftdb::U64AddOperator)))
                .unwrap();
        db.put("a", "1").unwrap();
        db.merge("ctr", 5u64.to_le_bytes()).unwrap();
        db.flush().unwrap();
        db.merge("ctr", 7u64.to_le_bytes()).unwrap();
        db.put("z", "2").unwrap();
    }
    let c = counters.to_str().unwrap();
    let twelve = "\\x0c\\x00\\x00\\x00\\x00\\x00\\x00\\x00";
    assert_eq!(ok(&["scan", c]), format!("a => 1\nctr => {twelve}\nz => 2\n"));
    assert_eq!(ok(&["dump", c, "--u64"]), "a => 1\nctr => 12\nz => 2\n");

    // Operands of another operator in a table: refused before the first entry ("a") is printed.
    let app = tmp.path().join("app");
    {
        let db = siftdb::Db::open(&app, with_operator(std::sync::Arc::new(AppAdd))).unwrap();
        db.put("a", "1").unwrap();
        db.merge("ctr", 5u64.to_le_bytes()).unwrap();
        db.flush().unwrap();
    }
    let a = app.to_str().unwrap();
    refused_before_printing(&["scan", a], "operator \"app.add\"");
    refused_before_printing(&["dump", a, "--u64"], "operator \"app.add\"");
    assert_eq!(ok(&["get", a, "a"]), "1\n");

    // Operands only in the WAL name no operator: refused without --u64, merged with it.
    let wal = tmp.path().join("wal");
    {
        let db = siftdb::Db::open(&wal, with_operator(std::sync::Arc::new(siftdb::U64AddOperator)))
            .unwrap();
        db.put("a", "1").unwrap();
        db.merge("ctr", 5u64.to_le_bytes()).unwrap();
    }
    let w = wal.to_str().unwrap();
    refused_before_printing(&["scan", w], "pass --u64");
    assert_eq!(ok(&["scan", w, "--u64"]), "a => 1\nctr => 5\n");
}

#[test]
fn bad_hex_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("db");
    ok(&["put", d.to_str().unwrap(), "k", "v", "--create"]);
    fails(&["get", "--hex", d.to_str().unwrap(), "abc"], "hex");
}

#[test]
fn sst_dump_values_prints_each_entry_with_its_value() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("db");
    ok(&["put", d.to_str().unwrap(), "apple", "red", "--create"]);
    ok(&["put", d.to_str().unwrap(), "pear", "green"]);
    ok(&["compact", d.to_str().unwrap()]);
    let sst = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("compact wrote a table");
    let out = ok(&["sst", "dump", sst.to_str().unwrap(), "--values"]);
    // The bottom level writes versions every reader sees at sequence 0 (design.md#compaction).
    assert!(out.contains("\"apple\" @0 Put => \"red\""), "{out}");
    assert!(out.contains("\"pear\" @0 Put => \"green\""), "{out}");
    // The compacted table's Ribbon filter at the default 1%: its parameters give the FPR.
    let filter = out.lines().find(|l| l.starts_with("filter ")).expect("a filter line");
    assert!(filter.contains("ribbon") && filter.contains("FPR "), "{filter}");
}

#[test]
fn wal_and_manifest_dump_print_their_records() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("db");
    let ds = d.to_str().unwrap();
    ok(&["put", ds, "apple", "red", "--create"]);
    ok(&["put", ds, "pear", "green"]);
    ok(&["compact", ds]);
    // Each command's open flushes the WAL it replays, so the WAL holds the last command only.
    ok(&["put", ds, "fig", "purple"]);
    let find = |prefix: &str, ext: &str| {
        std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let n = p.file_name().unwrap().to_str().unwrap();
                n.starts_with(prefix) && n.ends_with(ext)
            })
            .unwrap()
    };
    let wal = ok(&["wal", "dump", "--values", find("", ".log").to_str().unwrap()]);
    assert!(wal.contains("@3 Put \"fig\" => \"purple\""), "{wal}");
    assert!(wal.contains("1 batches, 1 entries"), "{wal}");
    let manifest = ok(&["manifest", "dump", find("MANIFEST-", "").to_str().unwrap()]);
    // The compacted table holds both versions at sequence 0 (the bottom level's rule); the
    // manifest still records the last sequence number handed out.
    assert!(manifest.contains("keys \"apple\"..\"pear\", seq 0..=0"), "{manifest}");
    assert!(manifest.contains("last_seq 2"), "{manifest}");
    fails(&["wal", "dump", tmp.path().join("nope.log").to_str().unwrap()], "nope.log");
}

#[test]
fn merge_with_u64_adds_to_a_counter_and_the_dumps_show_merge_records() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("db");
    let ds = d.to_str().unwrap();
    ok(&["put", ds, "a", "1", "--create"]);
    ok(&["merge", ds, "ctr", "5", "--u64"]);
    ok(&["merge", ds, "ctr", "7", "--u64"]);
    fails(&["merge", ds, "ctr", "7"], "needs --u64");
    fails(&["merge", ds, "ctr", "seven", "--u64"], "not a decimal u64");
    assert_eq!(ok(&["get", ds, "ctr", "--u64"]), "12\n");
    // Without --u64 the operator is the one the tables name; the value prints as bytes.
    assert_eq!(ok(&["get", ds, "ctr"]), "\\x0c\\x00\\x00\\x00\\x00\\x00\\x00\\x00\n");
    let sst = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .map(|p| ok(&["sst", "dump", p.to_str().unwrap(), "--values"]))
        .find(|out| out.contains("\"ctr\" @2 Merge"))
        .expect("a flushed table holds the first operand");
    assert!(sst.contains("format version    3"), "{sst}");
    assert!(sst.contains("merge operands    1 (operator siftdb.u64add)"), "{sst}");
    assert!(sst.contains("\"ctr\" @2 Merge => 0x0500000000000000"), "{sst}");
    // The last command's operand is in the WAL.
    ok(&["merge", ds, "ctr", "1", "--u64"]);
    let log = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap();
    let wal = ok(&["wal", "dump", "--values", log.to_str().unwrap()]);
    assert!(wal.contains("@4 Merge \"ctr\" <= 0x0100000000000000"), "{wal}");
    ok(&["compact", ds, "--u64"]);
    assert_eq!(ok(&["dump", ds, "--u64"]), "a => 1\nctr => 13\n");
}

#[test]
fn keyspace_flag_reads_and_writes_one_keyspace_and_reads_never_create_one() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let d = db.to_str().unwrap();
    ok(&["put", d, "k", "default", "--create"]);
    ok(&["put", d, "k", "in-events", "--keyspace", "events"]);
    ok(&["put", d, "j", "also", "--keyspace", "events"]);
    assert_eq!(ok(&["get", d, "k"]), "default\n");
    assert_eq!(ok(&["get", d, "k", "--keyspace", "events"]), "in-events\n");
    assert_eq!(ok(&["scan", d, "--keyspace", "events", "--keys-only"]), "j\nk\n");
    assert_eq!(ok(&["dump", d]), "k => default\n");
    ok(&["delete", d, "j", "--keyspace", "events"]);
    assert_eq!(ok(&["dump", d, "--keyspace", "events"]), "k => in-events\n");
    fails(&["get", d, "k", "--keyspace", "nope"], "no keyspace named \"nope\"");
    fails(&["scan", d, "--keyspace", "nope"], "no keyspace named");
    fails(&["delete", d, "k", "--keyspace", "nope"], "no keyspace named");
    assert_eq!(ok(&["keyspaces", d]), "default\nevents\n", "reads created nothing");
    fails(&["put", d, "k", "v", "--keyspace", "__query/x"], "reserves");
    // The tools show the keyspace of a file and of a manifest edit.
    ok(&["compact", d]);
    let mut ssts: Vec<_> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    ssts.sort();
    let ids: Vec<String> = ssts
        .iter()
        .map(|p| {
            let out = ok(&["sst", "dump", p.to_str().unwrap()]);
            out.lines().find(|l| l.starts_with("keyspace id")).unwrap().to_string()
        })
        .collect();
    assert!(
        ids.iter().any(|l| l.ends_with(" 0")) && ids.iter().any(|l| l.ends_with(" 1")),
        "{ids:?}"
    );
    let manifest = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("MANIFEST"))
        .unwrap();
    let out = ok(&["manifest", "dump", manifest.to_str().unwrap()]);
    assert!(out.contains("keyspace 1 \"events\""), "{out}");
    assert!(out.contains("keyspace 1,"), "{out}");
}

#[test]
fn delete_range_removes_a_span_and_the_dumps_show_its_tombstone() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("db");
    let ds = d.to_str().unwrap();
    // Few opens, so at most three L0 files exist when the dumps run: below the default L0
    // compaction trigger (4), no compaction can apply the tombstone and drop it first.
    ok(&["put", ds, "apple", "1", "--create"]);
    ok(&["put", ds, "cherry", "1"]);
    fails(&["delete-range", ds, "z", "a"], "after its end");
    ok(&["delete-range", ds, "b", "d"]);
    ok(&["delete-range", ds, "x", "x"]); // empty: nothing written
    let files = |ext: &str| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        v.sort();
        v
    };
    // Each open flushes the WAL it replays: the tombstone written by the first delete-range
    // is in a table now (the empty range wrote no record).
    let dumps: Vec<String> =
        files("sst").iter().map(|p| ok(&["sst", "dump", p.to_str().unwrap()])).collect();
    let with = dumps.iter().filter(|o| o.contains("range tombstones  1")).count();
    assert_eq!(with, 1, "{dumps:?}");
    assert!(dumps.iter().any(|o| o.contains("[\"b\", \"d\") @3 RangeDelete")), "{dumps:?}");
    assert_eq!(ok(&["scan", ds, "--keys-only"]), "apple\n");
    ok(&["put", ds, "pear", "1"]);
    assert_eq!(ok(&["scan", ds, "--keys-only"]), "apple\npear\n");
    fails(&["get", ds, "cherry"], "not found");
    ok(&["delete-range", "--hex", ds, "6170", "6171"]); // ["ap", "aq")
    let wal = ok(&["wal", "dump", files("log").last().unwrap().to_str().unwrap()]);
    assert!(wal.contains("DeleteRange [\"ap\", \"aq\")"), "{wal}");
    assert_eq!(ok(&["scan", ds, "--keys-only"]), "pear\n");
}

#[test]
fn keyspaces_and_sst_dump_show_ttl_and_compaction_filter_names() {
    struct KeepAll;
    impl siftdb::CompactionFilter for KeepAll {
        fn name(&self) -> &str {
            "app.keep_all"
        }
        fn filter(&self, _: usize, _: &[u8], _: &[u8], _: siftdb::EntryKind) -> siftdb::Decision {
            siftdb::Decision::Keep
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("db");
    {
        let ttl = Some(std::time::Duration::from_secs(3600));
        let db = siftdb::Db::open(&d, siftdb::Options { ttl, ..Default::default() }).unwrap();
        let opts = siftdb::KeyspaceOptions {
            compaction_filter: Some(std::sync::Arc::new(KeepAll)),
            ..Default::default()
        };
        db.keyspace("events", opts).unwrap().put("e", "1").unwrap();
        db.put("k", "v").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    let dir = d.to_str().unwrap();
    // The default keyspace's TTL is read from the manifest: the CLI opens the database with it.
    assert_eq!(
        ok(&["keyspaces", dir]),
        "default  ttl=3600s\nevents  compaction_filter=app.keep_all\n"
    );
    assert_eq!(ok(&["get", dir, "k"]), "v\n");
    let ssts: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    let dumps: Vec<String> =
        ssts.iter().map(|p| ok(&["sst", "dump", p.to_str().unwrap()])).collect();
    assert_eq!(dumps.iter().filter(|o| o.contains("write times")).count(), 1, "{dumps:?}");
}
