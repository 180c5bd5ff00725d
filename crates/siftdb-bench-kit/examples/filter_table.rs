//! Measures every filter of `siftdb::filter` on the same keys and prints one row per
//! (filter, configuration): bits per key, measured and theoretical FPR, insert (or build) and
//! query time.
//!
//! ```sh
//! cargo run --release --example filter_table            # aligned table
//! cargo run --release --example filter_table -- --csv   # CSV
//! ```
//! Keys are random 64-bit hashes (seeded), 1M per row unless the row says otherwise; the FPR is
//! measured on 1M other random hashes, and `query_ns` is the mean time of those negative probes.
//!
//! The measurement code is the library's [`siftdb_bench_kit::survey`] (shared with the FPR plot of
//! `siftdb readamp`); this example only chooses the rows.

use siftdb::filter::{BumpedRibbon, Ribbon};
use siftdb::Result;
use siftdb_bench_kit::survey::{self, SurveyData as Data, SurveyRow as Row};

const KEYS: usize = 1_000_000;
const NEGATIVES: usize = 1_000_000;
const BITS_PER_KEY: [f64; 5] = [6.0, 8.0, 10.0, 12.0, 16.0];

/// Static filters: xor and 3- and 4-wise binary fuse (FPR 2^-8, 2^-16), ribbon and bumped
/// ribbon at 1% and 0.1% targets (fractional result bits) and at r = 7, packed binary fuse at 4
/// to 12 bits.
fn static_rows(rows: &mut Vec<Row>, data: &Data) -> Result<()> {
    rows.extend(survey::fingerprint_rows(data)?);
    for target in [0.01, 0.001] {
        let build = |k: &[u64]| Ribbon::with_false_pos(target).build(k);
        let config = format!("target={target};w=128");
        rows.push(survey::static_row("ribbon", config, data, build, |f| f.fpr())?);
    }
    let build = |k: &[u64]| Ribbon::with_result_bits(7).build(k);
    rows.push(survey::static_row("ribbon", "r=7;w=128".into(), data, build, |f| f.fpr())?);
    for target in [0.01, 0.001] {
        let build = |k: &[u64]| BumpedRibbon::with_false_pos(target).build(k);
        let config = format!("target={target};w=128");
        rows.push(survey::static_row("bumped_ribbon", config, data, build, |f| f.fpr())?);
    }
    let build = |k: &[u64]| BumpedRibbon::with_result_bits(7).build(k);
    let config = "r=7;w=128".into();
    rows.push(survey::static_row("bumped_ribbon", config, data, build, |f| f.fpr())?);
    // Packed binary fuse at the widths between the byte-wide filters' 8 and 16.
    for w in [4, 7, 10, 12] {
        rows.push(survey::packed_fuse_row(w, data)?);
    }
    Ok(())
}

fn rows() -> Result<Vec<Row>> {
    let data = Data::new(KEYS, NEGATIVES, 1);
    let mut rows = Vec::new();
    for bpk in BITS_PER_KEY {
        rows.push(survey::standard_row(bpk, &data)?);
    }
    for bpk in BITS_PER_KEY {
        rows.push(survey::blocked_row(bpk, &data)?);
    }
    // Parquet writers size the bitset to a power of two bytes; the key count is chosen so that
    // a 1 MiB (2^23-bit) bitset is exactly `bpk` bits per key.
    for bpk in BITS_PER_KEY {
        rows.push(survey::split_block_row(bpk, 1 << 23, NEGATIVES, 4)?);
    }
    // Two-bit (Floe) and its one-bit baseline: the word count is a power of two, so as for the
    // split-block rows the key count makes a 2^23-bit table exactly `bpk` bits per key.
    for bpk in BITS_PER_KEY {
        let n = ((1u64 << 23) as f64 / bpk).round() as usize;
        let d = Data::new(n, NEGATIVES, 5);
        rows.push(survey::word_bloom_row("two_bit_bloom", 1 << 23, bpk, &d)?);
        rows.push(survey::word_bloom_row("one_bit_bloom", 1 << 23, bpk, &d)?);
    }
    // Floe's configuration: 2^21 bits (256 KiB), 262,144 keys (Floe: 11.68% and 5.69%).
    let floe = Data::new(262_144, NEGATIVES, 6);
    rows.push(survey::word_bloom_row("one_bit_bloom", 1 << 21, 8.0, &floe)?);
    rows.push(survey::word_bloom_row("two_bit_bloom", 1 << 21, 8.0, &floe)?);
    // Counting Bloom: the configuration is counters per key; memory is 4 bits per counter.
    for counters in BITS_PER_KEY {
        rows.push(survey::counting_row(counters, &data)?);
    }
    for ratio in [0.5, 0.9] {
        rows.push(survey::scalable_row(ratio, &data)?);
    }
    static_rows(&mut rows, &data)?;
    // Cuckoo: 2^18 buckets of 4 slots filled to 95%.
    for f_bits in [8, 12, 16] {
        rows.push(survey::cuckoo_row(18, f_bits, NEGATIVES, 3)?);
    }
    Ok(rows)
}

fn main() -> Result<()> {
    let csv = std::env::args().any(|a| a == "--csv");
    let rows = rows()?;
    if csv {
        println!("filter,config,keys,bits_per_key,fpr,fpr_theory,insert_ns,query_ns");
        for r in &rows {
            println!(
                "{},{},{},{:.3},{:.6},{:.6},{:.1},{:.1}",
                r.filter,
                r.config,
                r.keys,
                r.bits_per_key,
                r.fpr,
                r.fpr_theory,
                r.insert_ns,
                r.query_ns
            );
        }
    } else {
        println!(
            "{:<18} {:<28} {:>9} {:>8} {:>9} {:>10} {:>9} {:>8}",
            "filter", "config", "keys", "bits/key", "fpr %", "theory %", "insert ns", "query ns"
        );
        for r in &rows {
            println!(
                "{:<18} {:<28} {:>9} {:>8.2} {:>9.4} {:>10.4} {:>9.1} {:>8.1}",
                r.filter,
                r.config,
                r.keys,
                r.bits_per_key,
                r.fpr * 100.0,
                r.fpr_theory * 100.0,
                r.insert_ns,
                r.query_ns
            );
        }
    }
    Ok(())
}
