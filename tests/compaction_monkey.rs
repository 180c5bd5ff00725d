//! Monkey allocation against fixed bits per key at (nearly) equal filter memory on a database
//! with at least 3 compacted levels: expected and observed wasted block reads per missing-key
//! lookup (the sum over levels of the FPRs such a lookup pays).

use siftdb::filter::rng::SplitMix64;
use siftdb::storage::MemStorage;
use siftdb::{
    CompactionOptions, Db, FilterAllocation, FilterPolicy, LevelBudget, Options, WriteBatch,
};
use std::path::Path;
use std::sync::Arc;

const KEYS: u64 = 600_000;
const LOOKUPS: u64 = 200_000;
const BITS_PER_KEY: f64 = 6.0;

struct Outcome {
    levels: usize,
    l1_observed: f64,
    bits_per_key: f64,
    expected_wasted: f64,
    observed_wasted: f64,
}

fn run(allocation: FilterAllocation) -> Outcome {
    let storage = MemStorage::new();
    let opts = Options {
        // Level capacities 192 KiB, 1.9 MiB, 19 MiB against about 18 MB of data: the levels end
        // near the 1:10:100 shape Monkey's analysis assumes.
        memtable_size: 64 << 10,
        compaction: CompactionOptions {
            max_bytes_for_level_base: 192 << 10,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size: 64 << 10,
            ..CompactionOptions::default()
        },
        filter_policy: FilterPolicy { allocation, ..FilterPolicy::default() },
        storage: Some(Arc::new(storage)),
        ..Options::default()
    };
    let db = Db::open(Path::new("/db"), opts).unwrap();
    let mut rng = SplitMix64::new(5);
    for _ in 0..KEYS / 1000 {
        let mut b = WriteBatch::new();
        for _ in 0..1000 {
            // Even keys present; odd keys are the missing ones looked up below.
            b.put((rng.next_u64() & !1).to_be_bytes(), [7u8; 8]);
        }
        db.write(b).unwrap();
        // Settle the compactions after each batch, so that the files' layout (and the FPR
        // each file was built with) depends little on how they interleave with the writes on
        // a loaded machine (a flush under way may still land during the next batch).
        db.wait_for_compactions().unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    // Move L0 out of the way so the comparison is about the compacted levels only.
    let s0 = db.stats();
    let before = db.stats();
    for _ in 0..LOOKUPS {
        let k = rng.next_u64() | 1;
        assert_eq!(db.get(k.to_be_bytes()).unwrap(), None);
    }
    let d = db.stats().since(&before);
    let deep: Vec<_> = s0.levels.iter().filter(|l| l.level > 0 && l.files > 0).collect();
    let entries: u64 = deep.iter().map(|l| l.entries).sum();
    let filter_bits: u64 = deep.iter().map(|l| l.filter_bytes * 8).sum();
    // Expected wasted reads: each level's configured FPR times the share of lookups that
    // reach a file of that level (its key range covers the probe).
    let expected: f64 = d
        .levels
        .iter()
        .filter(|l| l.level > 0 && l.files > 0)
        .map(|l| {
            let reach = l.reads.filter_checks as f64 / LOOKUPS as f64;
            l.configured_fpr.unwrap_or(1.0) * reach
        })
        .sum();
    let observed: f64 = d
        .levels
        .iter()
        .filter(|l| l.level > 0)
        .map(|l| l.reads.false_positives() as f64)
        .sum::<f64>()
        / LOOKUPS as f64;
    for l in &deep {
        let dl = &d.levels[l.level];
        eprintln!(
            "  L{} entries {:>7} bits/key {:>5.2} configured {:.3}% observed {}",
            l.level,
            l.entries,
            l.filter_bits_per_key(),
            l.configured_fpr.unwrap_or(1.0) * 100.0,
            dl.reads.observed_fpr().map_or("-".into(), |f| format!("{:.3}%", f * 100.0))
        );
    }
    Outcome {
        levels: deep.len(),
        l1_observed: d.levels[1].reads.observed_fpr().unwrap_or(0.0),
        bits_per_key: filter_bits as f64 / entries as f64,
        expected_wasted: expected,
        observed_wasted: observed,
    }
}

#[test]
fn monkey_wastes_fewer_block_reads_than_fixed_bits_per_key_at_equal_memory() {
    eprintln!("fixed {BITS_PER_KEY} bits/key:");
    let fixed = run(FilterAllocation::PerLevel(vec![LevelBudget::BitsPerKey(BITS_PER_KEY)]));
    eprintln!("Monkey, {BITS_PER_KEY} bits/key in total:");
    let monkey = run(FilterAllocation::Monkey { bits_per_key: BITS_PER_KEY });
    for (name, o) in [("fixed", &fixed), ("monkey", &monkey)] {
        eprintln!(
            "{name}: {} levels, {:.2} filter bits/key, wasted reads per missing lookup: \
             expected {:.4}, observed {:.4}",
            o.levels, o.bits_per_key, o.expected_wasted, o.observed_wasted
        );
    }
    assert!(fixed.levels >= 3 && monkey.levels >= 3);
    // Equal memory within 10% (Monkey's FPRs were fixed when each file was written, from the
    // level sizes of that moment, so the final split is not exact).
    assert!((monkey.bits_per_key / fixed.bits_per_key - 1.0).abs() < 0.10);
    // What Monkey promises for the current level sizes: fewer expected wasted reads.
    assert!(monkey.expected_wasted < fixed.expected_wasted);
    // The small level's filter is far sharper (about 0.04% against 1.9% configured; 1% is
    // more than 5 sigmas of either at ~100k probes).
    assert!(monkey.l1_observed < fixed.l1_observed / 2.0);
    // Observed totals: files keep the FPR they were built with (L2 files written while L2 was
    // the deepest level carry that level's high FPR until rewritten; see the report's Monkey
    // note). With compactions settled after every batch the layout is nearly repeatable:
    // observed 0.029 against 0.046 wasted reads per lookup in three runs. Each figure counts
    // about 6,000-9,000 false positives in 200k lookups, a relative sd of about 1.2%
    // (Poisson, 1/sqrt(n)), so "fewer" is tens of sigmas away from chance.
    assert!(monkey.observed_wasted < fixed.observed_wasted);
}
