//! `siftdb bench` end to end through the binary, at tiny sizes: db_bench's result-line format,
//! and found counts that follow from db_bench's key semantics (checked against the generator,
//! re-derived here from the documented seeding: thread i of the k-th threaded benchmark of a run
//! uses `SplitMix64::new(seed + k*threads + i)`, and key numbers are `below(num)`).

use siftdb::filter::rng::SplitMix64;
use std::collections::HashSet;
use std::process::Command;

/// Runs `siftdb bench` with `args`; returns the result lines as (name, operations, found).
fn bench(args: &[&str]) -> Vec<(String, u64, Option<u64>)> {
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .arg("bench")
        .args(args)
        .output()
        .expect("run siftdb bench");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        out.status.success(),
        "siftdb bench failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().filter(|l| l.contains(" micros/op ")).map(parse_line).collect()
}

/// Parses `name : 1.234 micros/op 5 ops/sec 0.001 seconds 10 operations;[ x MB/s][ (f of n found)]`
/// and asserts the fixed parts of db_bench's format (`%-12s : %11.3f micros/op %ld ops/sec
/// %.3f seconds %lu operations;`).
fn parse_line(l: &str) -> (String, u64, Option<u64>) {
    let (head, rest) = l.split_once(" : ").expect("name : ...");
    assert!(head.len() >= 12, "name padded to 12: {l:?}");
    let (micros, rest) = rest.split_once(" micros/op ").expect("micros/op");
    assert!(micros.len() >= 11, "micros/op right-aligned in 11: {l:?}");
    assert_eq!(micros.trim().split_once('.').expect("decimals").1.len(), 3, "{l:?}");
    let (ops_sec, rest) = rest.split_once(" ops/sec ").expect("ops/sec");
    ops_sec.parse::<u64>().expect("integer ops/sec");
    let (secs, rest) = rest.split_once(" seconds ").expect("seconds");
    assert_eq!(secs.split_once('.').expect("seconds decimals").1.len(), 3);
    let (ops, rest) = rest.split_once(" operations;").expect("operations;");
    let found = rest.split_once('(').map(|(_, f)| {
        let (n, tail) = f.split_once(" of ").expect("of");
        assert!(tail.ends_with(" found)"), "{l:?}");
        n.parse().expect("found count")
    });
    (head.trim().to_string(), ops.parse().expect("operations"), found)
}

#[test]
fn fillrandom_readseq_readrandom_readmissing_follow_db_bench_semantics() {
    let (num, seed) = (4000u64, 3u64);
    let lines = bench(&[
        "--benchmarks=fillrandom,readseq,readrandom,readmissing,stats",
        "--num=4000",
        "--bloom_bits=10",
        "--compression_type=zstd",
        "--write_buffer_size=65536",
        "--seed=3",
        "--statistics=1",
    ]);
    let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(names, ["fillrandom", "readseq", "readrandom", "readmissing"]);

    // fillrandom: num keys drawn with repeats from [0, num) by the first benchmark's thread.
    let mut rng = SplitMix64::new(seed);
    let written: HashSet<u64> = (0..num).map(|_| rng.below(num)).collect();
    assert_eq!(lines[0].1, num);
    // About 1 - 1/e of the key space is present: the distinct count of n draws from n has
    // standard deviation below sqrt(n)/2 = 32 here, and 0.03 * 4000 = 120 is about 4 of them.
    assert!((written.len() as f64 / num as f64 - 0.632).abs() < 0.03);
    // readseq visits each distinct key once.
    assert_eq!(lines[1].1, written.len() as u64);
    // readrandom (third benchmark, seed + 2) finds exactly the draws that were written.
    let mut rng = SplitMix64::new(seed + 2);
    let expect = (0..num).filter(|_| written.contains(&rng.below(num))).count() as u64;
    assert_eq!(lines[2], ("readrandom".to_string(), num, Some(expect)));
    // readmissing's keys (one '0' byte longer) exist nowhere.
    assert_eq!(lines[3], ("readmissing".to_string(), num, Some(0)));
}

#[test]
fn fillseq_then_reads_find_every_key_with_two_threads() {
    let lines = bench(&[
        "--benchmarks=fillseq,readrandom,seekrandom,compact",
        "--num=2000",
        "--reads=1500",
        "--threads=2",
        "--flush_filter=two_bit",
        "--write_buffer_size=32768",
    ]);
    // Each of the 2 threads writes all 2000 keys, then reads 1500: all present.
    assert_eq!(lines[0], ("fillseq".to_string(), 4000, None));
    assert_eq!(lines[1], ("readrandom".to_string(), 3000, Some(3000)));
    assert_eq!(lines[2], ("seekrandom".to_string(), 3000, Some(3000)));
    assert_eq!(lines[3], ("compact".to_string(), 1, None));
}

#[test]
fn use_existing_db_on_a_missing_database_is_an_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for db in [dir.path().join("absent"), dir.path().to_path_buf()] {
        let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
            .args(["bench", "--use_existing_db=1", "--benchmarks=readmissing", "--num=100"])
            .arg(format!("--db={}", db.display()))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(!String::from_utf8_lossy(&out.stdout).contains(" micros/op "));
    }
    assert!(!dir.path().join("absent").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing created");
}

#[test]
fn unknown_benchmark_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args(["bench", "--benchmarks=fillrandom,nosuch", "--num=10"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch"));
}

#[test]
fn snappy_runs_as_lz4_with_a_note_and_an_unknown_codec_is_an_error() {
    let run = |codec: &str| {
        Command::new(env!("CARGO_BIN_EXE_siftdb"))
            .args(["bench", "--benchmarks=fillrandom", "--num=100", codec])
            .output()
            .expect("run")
    };
    let out = run("--compression_type=snappy");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("snappy is not built in; using lz4"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Compression: Lz4"));
    let out = run("--compression_type=zlib");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("zlib") && stderr.contains("none, lz4, zstd"), "{stderr}");
}

/// Runs `siftdb bench` and returns its whole stdout (asserting success).
fn bench_stdout(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb")).arg("bench").args(args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The per-level rows of the `stats` benchmark's level table: (level, filter name, bits/key).
fn level_rows(stdout: &str) -> Vec<(String, String, f64)> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("Level  Files"))
        .skip(1)
        .take_while(|l| l.starts_with('L'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[4].to_string(), f[6].parse().expect("bits/key"))
        })
        .collect()
}

#[test]
fn compaction_flags_reach_the_engine() {
    let common = [
        "--benchmarks=fillrandom,compact,stats",
        "--num=20000",
        "--bloom_bits=10",
        "--write_buffer_size=65536",
        "--target_file_size_base=131072",
        "--max_bytes_for_level_base=262144",
        "--seed=5",
    ];
    // Default with --bloom_bits: bumped ribbon on compacted levels at the blocked Bloom's FPR
    // at 10 bits/key (0.957%). At the ~1,000 keys per file of this test it is one standard
    // ribbon layer: ~1.05 * log2(1/0.00957) = 7.05 bits/key plus the slot overhead of small
    // files (~0.7 bits/key).
    let rows = level_rows(&bench_stdout(&common));
    assert!(!rows.is_empty() && rows.iter().all(|r| r.0 != "L0"), "{rows:?}");
    for (level, filter, bits) in &rows {
        assert_eq!(filter, "bumped_ribbon", "{level}");
        assert!((6.5..8.5).contains(bits), "{level}: {bits} bits/key");
    }
    // A small target file size splits the compacted run into several files, and a small L1
    // pushes data below it.
    let out = bench_stdout(&[&common[..], &["--compaction_filter=blocked"]].concat());
    let rows = level_rows(&out);
    assert!(rows.iter().any(|r| r.0 != "L1"), "a level below L1 exists: {rows:?}");
    for (level, filter, bits) in &rows {
        assert_eq!(filter, "blocked_bloom", "{level}");
        assert!((9.9..10.6).contains(bits), "{level}: {bits} bits/key");
    }
    // The 4-wise binary fuse filter by its CLI name: FPR fixed at 2^-8, its bits per key set by
    // the ~1,000 keys per file (size factor 0.77 + 0.305 ln(6e5) / ln(1000) = 1.36, so ~11).
    let out = bench_stdout(&[&common[..], &["--compaction_filter=binary_fuse4_8"]].concat());
    let rows = level_rows(&out);
    assert!(!rows.is_empty(), "{out}");
    for (level, filter, bits) in &rows {
        assert_eq!(filter, "binary_fuse4_8", "{level}");
        assert!((8.5..13.0).contains(bits), "{level}: {bits} bits/key");
    }
    // The packed binary fuse filter: at --bloom_bits=10 the width nearest the blocked Bloom's
    // FPR there (0.957%: 7 bits), or the width --fingerprint_bits gives each level (3 bits on
    // L1, 9 below). Every table's filter must carry exactly one of those widths, which its
    // parameters state (`sst dump` prints the FPR 2^-w they fix), and the last level the
    // deepest one's.
    for (extra, fprs) in
        [(&["--fingerprint_bits=3,9"][..], &["12.5000%", "0.1953%"][..]), (&[], &["0.7812%"])]
    {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("db");
        let db_flag = format!("--db={}", db.display());
        let flags =
            [&common[..], &["--compaction_filter=packed_binary_fuse", &db_flag], extra].concat();
        let rows = level_rows(&bench_stdout(&flags));
        assert!(!rows.is_empty() && rows.iter().all(|r| r.1 == "packed_binary_fuse"), "{rows:?}");
        let mut seen = HashSet::new();
        for entry in std::fs::read_dir(&db).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "sst") {
                continue;
            }
            let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
                .args(["sst", "dump", path.to_str().unwrap()])
                .output()
                .unwrap();
            let out = String::from_utf8(out.stdout).unwrap();
            let line = out.lines().find(|l| l.starts_with("filter ")).expect("a filter line");
            let fpr = line.rsplit("FPR ").next().unwrap();
            assert!(line.contains("packed_binary_fuse") && fprs.contains(&fpr), "{line}");
            seen.insert(fpr.to_string());
        }
        assert!(seen.contains(*fprs.last().unwrap()), "{extra:?}: {seen:?}");
    }
    // One budget over all runs: after the full compaction every key is in one level, with no L0
    // run beside it and no writes coming (a settled tree, design.md#all-runs), so the level
    // spends the whole 4 bits per key, within 5%.
    let out =
        bench_stdout(&[&common[..], &["--flush_filter=two_bit", "--all_runs_bits=4"]].concat());
    let rows = level_rows(&out);
    assert!(rows.len() == 1 && (3.8..4.2).contains(&rows[0].2), "{rows:?}");
    // optimize_filters_for_hits: no filter on the deepest level, here the only one.
    let out = bench_stdout(&[&common[..], &["--optimize_filters_for_hits"]].concat());
    let rows = level_rows(&out);
    assert!(rows.len() == 1 && rows[0].1 == "none", "{rows:?}");
    for bad in [
        ["--all_runs_bits=8", "--monkey"],
        ["--all_runs_bits=0", "--monkey=false"],
        ["--all_runs_bits=8", "--skew_aware_bits=8"],
        ["--all_runs_bits=8", "--fingerprint_bits=8"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
            .args(["bench", "--num=10", "--bloom_bits=10"])
            .args(bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("all_runs") || err.contains("AllRuns"), "{bad:?}: {err}");
    }
    // Contradictory filter flags are an invalid argument, not a silent choice.
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args(["bench", "--num=10", "--use_ribbon_filter", "--compaction_filter=xor8"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("contradicts"));
    for bad in ["--fingerprint_bits=0", "--fingerprint_bits=8,33", "--fingerprint_bits=8,x"] {
        let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
            .args(["bench", "--num=10", "--bloom_bits=10", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("out of range"), "{bad}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args(["bench", "--num=10", "--fingerprint_bits=8"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("needs a compaction filter"), "{err}");
}

#[test]
fn open_files_bounds_the_table_cache_and_rejects_out_of_range_values() {
    // ~170 compacted files of 4 KiB read through a table cache of 16: the reads find what an
    // unlimited cache finds, the cache reports at most 16 open tables, and its misses (file
    // opens, also the rocksdb.no.file.opens ticker) show tables were reopened.
    let run = |open_files: &str| {
        bench_stdout(&[
            "--benchmarks=fillrandom,compact,readrandom,stats",
            "--num=6000",
            "--bloom_bits=10",
            "--write_buffer_size=65536",
            "--target_file_size_base=4096",
            open_files,
            "--seed=7",
            "--statistics=1",
        ])
    };
    let found = |out: &str| {
        let l = out.lines().find(|l| l.starts_with("readrandom ")).expect("readrandom line");
        parse_line(l).2.expect("found count")
    };
    let (small, unlimited) = (run("--open_files=16"), run("--open_files=-1"));
    assert_eq!(found(&small), found(&unlimited));
    let line = small.lines().find(|l| l.starts_with("table cache: ")).expect("table cache line");
    let f: Vec<&str> = line.split_whitespace().collect();
    let (open, misses): (u64, u64) = (f[2].parse().unwrap(), f[6].parse().unwrap());
    assert!((1..=16).contains(&open), "{line}");
    assert!(misses > 0, "{line}");
    let files: u64 = small
        .lines()
        .skip_while(|l| !l.starts_with("Level  Files"))
        .skip(1)
        .take_while(|l| l.starts_with('L'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(files > 16, "the database has more files than the cache holds: {files}");
    let opens = small.lines().find(|l| l.starts_with("rocksdb.no.file.opens COUNT : ")).unwrap();
    assert_eq!(opens.rsplit(' ').next().unwrap().parse::<u64>().unwrap(), misses);
    for bad in ["--open_files=0", "--open_files=15", "--open_files=-2"] {
        let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
            .args(["bench", "--num=10", "--benchmarks=fillseq", bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad} accepted");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--open_files"), "{bad}");
    }
}

#[test]
fn subcompactions_flag_splits_compactions_keeps_results_and_rejects_out_of_range_values() {
    let run = |n: &str| {
        bench_stdout(&[
            "--benchmarks=fillrandom,compact,readrandom",
            "--num=20000",
            "--bloom_bits=10",
            "--write_buffer_size=65536",
            "--target_file_size_base=16384",
            "--max_bytes_for_level_base=131072",
            "--seed=9",
            "--statistics=1",
            n,
        ])
    };
    let ticker = |out: &str| {
        let l = out.lines().find(|l| l.starts_with("siftdb.subcompactions COUNT : ")).unwrap();
        l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
    };
    let found = |out: &str| {
        let l = out.lines().find(|l| l.starts_with("readrandom ")).expect("readrandom line");
        parse_line(l).2.expect("found count")
    };
    let (one, four) = (run("--subcompactions=1"), run("--subcompactions=4"));
    assert_eq!(ticker(&one), 0, "one thread never splits");
    assert!(ticker(&four) >= 2, "{}", ticker(&four));
    assert_eq!(found(&one), found(&four), "the same keys are found");
    for bad in ["--subcompactions=0", "--subcompactions=65"] {
        let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
            .args(["bench", "--num=10", "--benchmarks=fillseq", bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--subcompactions") && err.contains("1..=64"), "{bad}: {err}");
    }
}

/// The `key=value` fields of the `scan filters : NAME ...` line of benchmark `name`.
fn scan_fields(stdout: &str, name: &str) -> std::collections::HashMap<String, String> {
    let head = format!("scan filters : {name} ");
    let line = stdout.lines().find(|l| l.starts_with(&head)).expect("scan filters line");
    line[head.len()..]
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// The field `k` of [`scan_fields`] as a number.
fn field(fields: &std::collections::HashMap<String, String>, k: &str) -> f64 {
    fields.get(k).unwrap_or_else(|| panic!("no {k} in {fields:?}")).parse().expect("a number")
}

/// The result line of benchmark `name` in `stdout`.
fn result_of(stdout: &str, name: &str) -> (String, u64, Option<u64>) {
    let head = format!("{name:<12} : ");
    parse_line(stdout.lines().find(|l| l.starts_with(&head)).expect("result line"))
}

#[test]
fn seekrandom_with_seek_nexts_reads_the_entries_after_each_seek_over_spaced_keys() {
    let (num, nexts) = (2000u64, 4u64);
    let out = bench_stdout(&[
        "--benchmarks=fillseq,seekrandom",
        "--num=2000",
        "--key_spacing=3",
        "--seek_nexts=4",
        "--write_buffer_size=65536",
    ]);
    // Every seek lands on its key (the spacing applies to fills and seeks alike).
    assert_eq!(result_of(&out, "seekrandom"), ("seekrandom".to_string(), num, Some(num)));
    // seekrandom is the second benchmark (seed 0 + 1): from number v a seek reads its entry and
    // up to 4 more, min(5, num - v) in all.
    let mut rng = SplitMix64::new(1);
    let want: u64 = (0..num).map(|_| (nexts + 1).min(num - rng.below(num))).sum();
    let line = out.lines().find(|l| l.starts_with("scan entries : seekrandom ")).expect("line");
    assert!(line.contains(&format!("({want} entries, {num} seeks, --seek_nexts=4)")), "{line}");
}

#[test]
fn rangeempty_finds_exactly_the_ranges_aimed_at_keys_in_both_flavours() {
    for flavour in ["uncorrelated", "correlated"] {
        let out = bench_stdout(&[
            "--benchmarks=fillseq,compact,rangeempty",
            "--num=3000",
            "--key_spacing=64",
            "--range_filter_bits=14",
            "--empty_fraction=0.5",
            "--write_buffer_size=65536",
            "--target_file_size_base=32768",
            &format!("--range_flavour={flavour}"),
        ]);
        let (_, ops, found) = result_of(&out, "rangeempty");
        assert_eq!(ops, 3000);
        let f = scan_fields(&out, "rangeempty");
        // fillseq wrote every number, so a range aimed at a key finds it and a range in a gap
        // finds nothing: the found share is the aimed share, Binomial(3000, 1 - 0.5) / 3000,
        // whose sigma is sqrt(0.25 / 3000) = 0.0091; 5 sigma = 0.046.
        let share = field(&f, "found_share");
        assert_eq!(found, Some((share * 3000.0).round() as u64), "{flavour}");
        assert_eq!(share, field(&f, "targeted_share"), "{flavour}");
        assert!((share - 0.5).abs() < 5.0 * (0.25f64 / 3000.0).sqrt(), "{flavour}: {share}");
        // Configured FPR: the mean of w / 2^12 over w uniform in [2, 16] (mean 9, sigma of
        // the mean 4.3 / sqrt(3000) = 0.08).
        let cfg = field(&f, "fpr_configured") * 4096.0;
        assert!((8.5..9.5).contains(&cfg), "{flavour}: mean width {cfg}");
        for k in ["skipped/op", "passed/op", "blocks/op"] {
            assert!(field(&f, k) >= 0.0, "{flavour}: {k}");
        }
    }
}

#[test]
fn after_fillrandom_ranges_aimed_at_keys_find_them_whatever_the_reads_seed_and_length() {
    // fillrandom writes about 63% of the numbers. The ranges aimed at keys take them from the
    // fill's own draws (--fill_seed), so all of them find their key even when the reads use
    // another seed and ask many more questions than the fill made draws (4 draws per range).
    let dir = tempfile::tempdir().unwrap();
    let db = format!("--db={}", dir.path().join("db").display());
    let common = ["--num=2000", "--key_spacing=64", "--write_buffer_size=65536", &db];
    bench_stdout(&[&["--benchmarks=fillrandom", "--seed=3"][..], &common].concat());
    let read = |extra: &[&str]| {
        let base = ["--benchmarks=rangeempty", "--use_existing_db=1", "--reads=20000"];
        bench_stdout(&[&base[..], &common, extra].concat())
    };
    for flavour in ["--range_flavour=uncorrelated", "--range_flavour=correlated"] {
        let out = read(&["--seed=11", "--fill_seed=3", flavour]);
        let f = scan_fields(&out, "rangeempty");
        assert_eq!(field(&f, "found_share"), field(&f, "targeted_share"), "{flavour}: {out}");
        // Binomial(20000, 0.5) aimed share: sigma 0.0035, 5 sigma 0.018.
        assert!((field(&f, "targeted_share") - 0.5).abs() < 0.018, "{flavour}");
        assert!(!out.contains("warning"), "{out}");
    }
    // Told the wrong fill, a third of the aimed ranges miss, and the run says so.
    let out = read(&["--seed=11"]);
    let f = scan_fields(&out, "rangeempty");
    assert!(field(&f, "found_share") < 0.4, "{out}");
    assert!(out.contains("warning: rangeempty:") && out.contains("--fill_seed=11"), "{out}");
}

#[test]
fn prefixscan_finds_nothing_under_absent_prefixes() {
    let run = |fraction: &str| {
        bench_stdout(&[
            "--benchmarks=fillseq,compact,prefixscan",
            "--num=2000",
            "--prefix_size=7",
            "--key_spacing=512",
            fraction,
            "--write_buffer_size=65536",
        ])
    };
    // Groups of 256 numbers, keys 512 apart: every other group holds exactly one key.
    let out = run("--empty_fraction=0.5");
    let f = scan_fields(&out, "prefixscan");
    let share = field(&f, "found_share");
    assert_eq!(share, field(&f, "targeted_share"), "only the prefixes of written keys are found");
    assert_eq!(share, field(&f, "entries/op"), "one key per present prefix");
    assert!((share - 0.5).abs() < 5.0 * (0.25f64 / 2000.0).sqrt(), "{share}");
    let out = run("--empty_fraction=1");
    assert_eq!(result_of(&out, "prefixscan").2, Some(0));
    assert_eq!(field(&scan_fields(&out, "prefixscan"), "entries/op"), 0.0);
}

#[test]
fn bad_scan_flags_are_errors_naming_the_flag_not_panics() {
    for (args, want) in [
        (&["--benchmarks=fillseq", "--empty_fraction=2"][..], &["--empty_fraction=2"][..]),
        (&["--benchmarks=fillseq", "--key_spacing=0"], &["--key_spacing=0"]),
        (
            &["--benchmarks=rangeempty", "--key_spacing=16"],
            &["--key_spacing=16", "--range_max_width"],
        ),
        (
            &["--benchmarks=prefixscan", "--prefix_size=7", "--key_spacing=256"],
            &["--prefix_size=7", "--key_spacing=256"],
        ),
        (&["--benchmarks=fillseq", "--range_filter_bits=-1"], &["--range_filter_bits"]),
        (&["--benchmarks=fillseq", "--range_flavour=sideways"], &["--range_flavour"]),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_siftdb"))
            .args(["bench", "--num=100"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for w in want {
            assert!(err.contains(w), "{args:?}: {err}");
        }
    }
}

#[test]
fn bench_takes_the_db_bench_flags_and_prints_the_memory_report() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args([
            "bench",
            "--benchmarks=fillrandom,readrandom,stats",
            "--num=3000",
            "--write_buffer_size=65536",
            "--cache_size=1048576",
            "--cache_index_and_filter_blocks",
            "--pin_l0_filter_and_index_blocks_in_cache=1",
            "--statistics",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for needle in [
        "rocksdb.block.cache.index.miss COUNT",
        "rocksdb.block.cache.filter.hit COUNT",
        "    index blocks",
        "    filter blocks",
        "    pinned (of above)",
        "table readers",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_siftdb"))
        .args([
            "bench",
            "--benchmarks=fillseq",
            "--num=10",
            "--pin_l0_filter_and_index_blocks_in_cache",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("cache_index_and_filter_blocks"), "{err}");
}

/// The YCSB benchmarks through the binary: the load writes every record, and each workload
/// finds every record it reads (loaded, or inserted and acknowledged by workload D), with a
/// latency line per operation type of its mix.
#[test]
fn ycsb_benchmarks_load_every_record_and_each_workload_finds_what_it_reads() {
    let out = bench_stdout(&[
        "--benchmarks=ycsbload,ycsba,ycsbb,ycsbc,ycsbf,ycsbd,ycsbe",
        "--num=3000",
        "--value_size=200",
        "--reads=2000",
        "--threads=2",
    ]);
    let (name, ops, _) = result_of(&out, "ycsbload");
    assert_eq!((name.as_str(), ops), ("ycsbload", 3000), "{out}");
    let ops_of = |w: &str| -> Vec<&str> {
        out.lines()
            .filter_map(|l| l.strip_prefix(&format!("latency      : {w}.")))
            .map(|l| l.split_once(' ').expect("op then figures").0)
            .collect()
    };
    for (w, want) in [
        ("ycsba", vec!["READ", "UPDATE"]),
        ("ycsbb", vec!["READ", "UPDATE"]),
        ("ycsbc", vec!["READ"]),
        ("ycsbf", vec!["READ", "READ-MODIFY-WRITE"]),
        ("ycsbd", vec!["READ", "INSERT"]),
        ("ycsbe", vec!["INSERT", "SCAN"]),
    ] {
        assert_eq!(result_of(&out, w).1, 4000, "{w}: 2 threads x 2000: {out}");
        assert_eq!(ops_of(w), want, "{w}: {out}");
        if w != "ycsbe" {
            let found = out
                .lines()
                .find_map(|l| l.strip_prefix(&format!("ycsb         : {w} reads found ")))
                .unwrap_or_else(|| panic!("no found line of {w}: {out}"));
            let (f, n) = found.split_once(" of ").expect("F of N");
            assert_eq!(f, n, "{w}: every read finds its record: {out}");
        }
    }
}

#[test]
fn histogram_prints_read_latency_and_fills_print_write_amplification() {
    let out = bench_stdout(&[
        "--benchmarks=fillrandom,waitforcompaction,readrandom,readwhilewriting",
        "--num=2000",
        "--histogram",
        "--benchmark_write_rate_limit=1000000",
    ]);
    let results = out.lines().filter(|l| l.contains(" micros/op ")).count();
    assert_eq!(results, 4, "{out}");
    for want in ["readrandom", "readwhilewriting"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("latency      : {want} p50 ")))
            .unwrap_or_else(|| panic!("no latency line of {want}: {out}"));
        assert!(line.contains(" p99.9 ") && line.ends_with("(2000 operations)"), "{line}");
    }
    assert!(out.lines().any(|l| l.starts_with("write amp    : fillrandom ")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("write amp    : waitforcompaction ")), "{out}");
    // Without --histogram no read is timed.
    let plain = bench_stdout(&["--benchmarks=fillrandom,readrandom", "--num=500"]);
    assert!(!plain.contains("latency      :"), "{plain}");
}

#[test]
fn ingest_loads_every_key_and_reports_write_load_and_total() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let lines = bench(&[
        &format!("--db={}", db.display()),
        "--benchmarks=ingest,readseq,readrandom",
        "--num=3000",
        "--ingest_keys_per_file=700",
    ]);
    let names: Vec<&str> = lines.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(names, ["ingest", "readseq", "readrandom"]);
    assert_eq!(lines[0].1, 3000);
    // Every key written in order is in the database: a full scan reads all, reads find all.
    assert_eq!(lines[1].1, 3000);
    assert_eq!(lines[2].2, Some(3000));
    // The files were moved in: the temporary directory beside the database is gone.
    let left: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("db")], "{left:?}");
    let out = bench_stdout(&["--benchmarks=ingest", "--num=3000", "--ingest_keys_per_file=700"]);
    assert!(out.contains("ingest parts : 3000 keys in 5 files"), "{out}");
}
