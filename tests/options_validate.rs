//! `Options::validate` through `Db::open`: every field outside its range is refused with
//! `Error::InvalidArgument` naming the field, the value and the valid range, before anything
//! touches the disk (the database directory is not even created). One test per field.

use siftdb::options::{MAX_MEMTABLE_SIZE, MIN_FILE_SIZE, MIN_MEMTABLE_SIZE};
use siftdb::{
    CompactionOptions, Compression, Db, Error, FilterAllocation, FilterConfig, FilterPolicy,
    LevelBudget, Options,
};

/// Opens a database in a directory that does not exist yet with `opts`; asserts the open is
/// refused with an invalid-argument error whose message contains every piece of `expect`, and
/// that the directory was not created.
fn refused(opts: Options, expect: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let err = match Db::open(&dir, opts) {
        Ok(_) => panic!("open accepted options that should fail with {expect:?}"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(matches!(err, Error::InvalidArgument(_)), "not InvalidArgument: {msg}");
    for part in expect {
        assert!(msg.contains(part), "{msg:?} does not mention {part:?}");
    }
    assert!(msg.contains("valid"), "{msg:?} states no valid range");
    assert!(!dir.exists(), "a refused open created {}", dir.display());
}

fn with_compaction(f: impl FnOnce(&mut CompactionOptions)) -> Options {
    let mut opts = Options::default();
    f(&mut opts.compaction);
    opts
}

fn with_allocation(allocation: FilterAllocation) -> Options {
    Options {
        filter_policy: FilterPolicy { allocation, ..FilterPolicy::default() },
        ..Options::default()
    }
}

#[test]
fn memtable_size_zero_and_too_large_are_refused_and_the_minimum_works() {
    refused(Options { memtable_size: 0, ..Options::default() }, &["memtable_size = 0"]);
    refused(
        Options { memtable_size: MAX_MEMTABLE_SIZE + 1, ..Options::default() },
        &["memtable_size", &(MAX_MEMTABLE_SIZE + 1).to_string()],
    );
    // The smallest accepted memtable takes writes (each one rotating often) without hanging.
    let tmp = tempfile::tempdir().unwrap();
    let db =
        Db::open(tmp.path(), Options { memtable_size: MIN_MEMTABLE_SIZE, ..Options::default() })
            .unwrap();
    for i in 0..200u32 {
        db.put(i.to_be_bytes(), [7u8; 40]).unwrap();
    }
    assert_eq!(db.get(199u32.to_be_bytes()).unwrap(), Some(vec![7u8; 40]));
}

#[test]
fn max_immutable_memtables_zero_is_refused() {
    refused(
        Options { max_immutable_memtables: 0, ..Options::default() },
        &["max_immutable_memtables = 0", "1..=1000"],
    );
}

#[test]
fn block_size_zero_and_too_large_are_refused() {
    refused(Options { block_size: 0, ..Options::default() }, &["block_size = 0", "64..="]);
    refused(Options { block_size: 63, ..Options::default() }, &["block_size = 63"]);
    refused(Options { block_size: (256 << 20) + 1, ..Options::default() }, &["block_size"]);
}

#[test]
fn block_restart_interval_zero_is_refused() {
    refused(
        Options { block_restart_interval: 0, ..Options::default() },
        &["block_restart_interval = 0", "1..=65535"],
    );
}

#[test]
fn zstd_levels_outside_one_to_twenty_two_are_refused() {
    refused(Options { compression: Compression::Zstd(0), ..Options::default() }, &["Zstd", "0"]);
    refused(
        Options { compression: Compression::Zstd(23), ..Options::default() },
        &["Zstd level = 23", "1..=22"],
    );
}

#[test]
fn flush_filter_bits_per_key_zero_nan_and_huge_are_refused() {
    for (bits, shown) in
        [(0.0, "= 0 "), (f64::NAN, "NaN"), (-3.0, "-3"), (65.0, "65"), (1e-7, "0.0000001")]
    {
        for flush in [
            FilterConfig::TwoBitBloom { bits_per_key: bits },
            FilterConfig::BlockedBloom { bits_per_key: bits },
            FilterConfig::StandardBloom { bits_per_key: bits },
        ] {
            let opts = Options {
                filter_policy: FilterPolicy { flush, ..FilterPolicy::default() },
                ..Options::default()
            };
            refused(opts, &["filter_policy.flush.bits_per_key", shown, "[1e-6, 64]"]);
        }
    }
}

#[test]
fn level_fpr_budgets_outside_the_unit_interval_or_nan_are_refused() {
    refused(
        with_allocation(FilterAllocation::PerLevel(vec![LevelBudget::Fpr(2.0)])),
        &["allocation[0] (L1) Fpr = 2", "[2^-32, 1)"],
    );
    refused(
        with_allocation(FilterAllocation::PerLevel(vec![
            LevelBudget::Fpr(0.01),
            LevelBudget::Fpr(1.0),
        ])),
        &["allocation[1] (L2) Fpr = 1 "],
    );
    refused(with_allocation(FilterAllocation::PerLevel(vec![LevelBudget::Fpr(0.0)])), &["Fpr = 0"]);
    refused(
        with_allocation(FilterAllocation::PerLevel(vec![LevelBudget::Fpr(f64::NAN)])),
        &["Fpr = NaN"],
    );
}

#[test]
fn level_bits_per_key_budgets_outside_the_range_are_refused() {
    refused(
        with_allocation(FilterAllocation::PerLevel(vec![LevelBudget::BitsPerKey(0.0)])),
        &["allocation[0] (L1) BitsPerKey = 0", "[1e-6, 64]"],
    );
    refused(
        with_allocation(FilterAllocation::PerLevel(vec![LevelBudget::BitsPerKey(f64::INFINITY)])),
        &["BitsPerKey = inf"],
    );
}

#[test]
fn monkey_bits_per_key_nan_and_zero_are_refused() {
    refused(
        with_allocation(FilterAllocation::Monkey { bits_per_key: f64::NAN }),
        &["Monkey.bits_per_key = NaN"],
    );
    refused(
        with_allocation(FilterAllocation::Monkey { bits_per_key: 0.0 }),
        &["Monkey.bits_per_key = 0"],
    );
}

#[test]
fn l0_compaction_trigger_zero_is_refused() {
    refused(
        with_compaction(|c| c.l0_compaction_trigger = 0),
        &["compaction.l0_compaction_trigger = 0", "1..="],
    );
}

#[test]
fn l0_slowdown_trigger_below_the_compaction_trigger_is_refused() {
    refused(
        with_compaction(|c| {
            c.l0_compaction_trigger = 8;
            c.l0_slowdown_writes_trigger = 4;
        }),
        &["compaction.l0_slowdown_writes_trigger = 4", "l0_compaction_trigger (8)"],
    );
}

#[test]
fn l0_stop_trigger_below_the_slowdown_trigger_is_refused() {
    refused(
        with_compaction(|c| c.l0_stop_writes_trigger = 10),
        &["compaction.l0_stop_writes_trigger = 10", "l0_slowdown_writes_trigger (20)"],
    );
}

#[test]
fn max_bytes_for_level_base_below_one_kib_is_refused() {
    refused(
        with_compaction(|c| c.max_bytes_for_level_base = 0),
        &["compaction.max_bytes_for_level_base = 0", &MIN_FILE_SIZE.to_string()],
    );
}

#[test]
fn level_multiplier_of_one_or_less_or_nan_is_refused() {
    for (m, shown) in [(1.0, "= 1 "), (0.5, "0.5"), (f64::NAN, "NaN"), (1e9, "1000000000")] {
        refused(
            with_compaction(|c| c.max_bytes_for_level_multiplier = m),
            &["compaction.max_bytes_for_level_multiplier", shown, "(1, 1000]"],
        );
    }
}

#[test]
fn target_file_size_zero_is_refused() {
    refused(
        with_compaction(|c| c.target_file_size = 0),
        &["compaction.target_file_size = 0", &MIN_FILE_SIZE.to_string()],
    );
}

#[test]
fn max_open_files_below_sixteen_other_than_minus_one_is_refused() {
    for n in [0, 15, -2] {
        let opts = Options { max_open_files: n, ..Options::default() };
        refused(opts, &["max_open_files", &n.to_string(), "-1 (unlimited)"]);
    }
    let dir = tempfile::tempdir().unwrap();
    for n in [-1, 16] {
        let opts = Options { max_open_files: n, ..Options::default() };
        drop(Db::open(dir.path().join(n.to_string()), opts).unwrap());
    }
}

#[test]
fn a_zstd_level_out_of_range_in_compression_per_level_is_refused() {
    let opts = Options {
        compression_per_level: vec![Compression::None, Compression::Zstd(23)],
        ..Options::default()
    };
    refused(opts, &["compression_per_level[1] Zstd level = 23", "1..=22"]);
}

#[test]
fn dictionary_sizes_out_of_range_are_refused() {
    let dict = |max_dict_bytes, train_bytes| Options {
        compression: Compression::Zstd(3),
        compression_max_dict_bytes: max_dict_bytes,
        compression_zstd_max_train_bytes: train_bytes,
        ..Options::default()
    };
    refused(dict((1 << 20) + 1, 0), &["compression_max_dict_bytes = 1048577", "0..=1048576"]);
    // Training on less than the dictionary's size, or on more than 256 MiB.
    refused(dict(16384, 16383), &["compression_zstd_max_train_bytes = 16383", "16384..=268435456"]);
    refused(dict(16384, (256 << 20) + 1), &["compression_zstd_max_train_bytes = 268435457"]);
}

#[test]
fn bottommost_dictionary_sizes_out_of_range_are_refused_by_their_own_names() {
    let bottom = |dict: Option<usize>, train: Option<usize>, all_train| Options {
        compression: Compression::Zstd(3),
        compression_zstd_max_train_bytes: all_train,
        bottommost_compression_max_dict_bytes: dict,
        bottommost_compression_zstd_max_train_bytes: train,
        ..Options::default()
    };
    refused(
        bottom(Some((1 << 20) + 1), None, 0),
        &["bottommost_compression_max_dict_bytes = 1048577", "0..=1048576"],
    );
    refused(
        bottom(Some(16384), Some(100), 0),
        &["bottommost_compression_zstd_max_train_bytes = 100", "16384..=268435456"],
    );
    // The bottommost size against the training bytes it inherits from the all-levels option.
    refused(
        bottom(Some(65536), None, 32768),
        &["bottommost_compression_zstd_max_train_bytes = 32768", "defaulting"],
    );
    // Valid pairs open, including a bottommost size of 0 under an all-levels training size.
    for opts in [bottom(Some(16384), Some(1 << 20), 0), bottom(Some(0), None, 1 << 20)] {
        let tmp = tempfile::tempdir().unwrap();
        Db::open(tmp.path().join("db"), opts).unwrap();
    }
}

/// The flush filters whose false-positive estimate sums a Poisson mix with mean
/// `block bits / bits_per_key` keys per block.
fn tiny_flush_filters(bits_per_key: f64) -> [FilterConfig; 2] {
    [FilterConfig::BlockedBloom { bits_per_key }, FilterConfig::TwoBitBloom { bits_per_key }]
}

#[test]
fn the_smallest_accepted_filter_budget_flushes_and_reads_back() {
    // 1e-6 bits per key is 5.12e8 keys per 512-bit block: the estimate of its FPR is summed in
    // a bounded number of terms (src/filter/math.rs); it used to take longer than any test.
    for flush in tiny_flush_filters(1e-6) {
        let tmp = tempfile::tempdir().unwrap();
        let opts = Options {
            filter_policy: FilterPolicy { flush, ..FilterPolicy::default() },
            ..Options::default()
        };
        let db = Db::open(tmp.path(), opts).unwrap();
        for i in 0..1000u32 {
            db.put(i.to_be_bytes(), b"v").unwrap();
        }
        db.flush().unwrap();
        db.compact().unwrap();
        assert_eq!(db.get(7u32.to_be_bytes()).unwrap(), Some(b"v".to_vec()), "{flush:?}");
        assert_eq!(db.get(5000u32.to_be_bytes()).unwrap(), None, "{flush:?}");
    }
    for flush in tiny_flush_filters(9e-7) {
        let opts = Options {
            filter_policy: FilterPolicy { flush, ..FilterPolicy::default() },
            ..Options::default()
        };
        refused(opts, &["filter_policy.flush.bits_per_key", "[1e-6, 64]"]);
    }
}

fn budgets(n: usize) -> Options {
    with_allocation(FilterAllocation::PerLevel(vec![LevelBudget::Fpr(0.01); n]))
}

#[test]
fn per_level_budgets_follow_one_rule_for_the_database_and_its_keyspaces() {
    // Seven or more budgets (there are six levels below L0): refused by Db::open, and by the
    // keyspace options made from the same options, with the same words.
    for n in [7, 20] {
        refused(budgets(n), &[&format!("filter_policy.allocation length = {n}"), "0..=6"]);
        let ks = siftdb::KeyspaceOptions::from(&budgets(n));
        let msg = ks.validate().unwrap_err().to_string();
        assert!(
            msg.contains(&format!("allocation length = {n}")) && msg.contains("0..=6"),
            "{msg}"
        );
    }
    // Up to six: accepted by both, so the documented way to open the default keyspace works.
    for n in [0, 1, 6] {
        let tmp = tempfile::tempdir().unwrap();
        let opts = budgets(n);
        let db = Db::open(tmp.path(), opts.clone()).unwrap();
        let ks = db.keyspace("default", siftdb::KeyspaceOptions::from(&opts)).unwrap();
        ks.put("k", "v").unwrap();
        let other = db.keyspace("other", siftdb::KeyspaceOptions::from(&opts)).unwrap();
        other.put("k", "w").unwrap();
        assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
    }
}

#[test]
fn an_l0_base_ratio_below_zero_above_the_cap_or_nan_is_refused() {
    for (r, shown) in [(-0.5, "-0.5"), (f64::NAN, "NaN"), (101.0, "101"), (f64::INFINITY, "inf")] {
        refused(
            with_compaction(|c| c.l0_min_base_ratio = r),
            &["compaction.l0_min_base_ratio", shown, "[0, 100]"],
        );
    }
}
