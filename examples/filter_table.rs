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

use siftdb::filter::math;
use siftdb::filter::prelude::*;
use siftdb::filter::{
    cuckoo_fpr, BinaryFuse16, BinaryFuse8, BlockedBloom, CountingBloom, Cuckoo, Ribbon,
    ScalableBloom, SplitBlockBloom, StandardBloom, TwoBitBloom, Xor16, Xor8,
};
use siftdb::rng::SplitMix64;
use std::hint::black_box;
use std::time::Instant;

const KEYS: usize = 1_000_000;
const NEGATIVES: usize = 1_000_000;
const BITS_PER_KEY: [f64; 5] = [6.0, 8.0, 10.0, 12.0, 16.0];

struct Row {
    filter: &'static str,
    config: String,
    keys: usize,
    bits_per_key: f64,
    fpr: f64,
    fpr_theory: f64,
    insert_ns: f64,
    query_ns: f64,
}

struct Data {
    keys: Vec<u64>,
    negatives: Vec<u64>,
}

impl Data {
    fn new(n: usize, seed: u64) -> Data {
        let mut rng = SplitMix64::new(seed);
        Data { keys: rng.hashes(n), negatives: rng.hashes(NEGATIVES) }
    }
}

/// Probes every negative, checks there is no false negative, returns (fpr, ns per query).
fn probe(f: &dyn Filter, data: &Data) -> (f64, f64) {
    assert!(data.keys.iter().all(|&k| f.contains_hash(k)), "false negative in {}", f.kind());
    let t = Instant::now();
    let fp = data.negatives.iter().filter(|&&h| black_box(f.contains_hash(h))).count();
    let ns = t.elapsed().as_nanos() as f64 / data.negatives.len() as f64;
    (fp as f64 / data.negatives.len() as f64, ns)
}

/// A Bloom-family row: size with `with_bits_per_key`, insert one key at a time.
fn insertable<F: InsertFilter + BloomShape>(
    filter: &'static str,
    bpk: f64,
    data: &Data,
    theory: impl Fn(f64, u32) -> f64,
) -> Row {
    let probes = F::probes_for_bits_per_key(bpk);
    let f = F::with_bits_per_key(bpk).expected_items(data.keys.len() as u64).expect("valid size");
    insert_row(filter, format!("bpk={bpk};k={probes}"), f, probes, data, theory)
}

/// Inserts every key into `f` one at a time, then probes; `theory(actual_bpk, probes)`.
fn insert_row<F: InsertFilter>(
    filter: &'static str,
    config: String,
    mut f: F,
    probes: u32,
    data: &Data,
    theory: impl Fn(f64, u32) -> f64,
) -> Row {
    let t = Instant::now();
    for &k in &data.keys {
        f.insert_hash(k);
    }
    let insert_ns = t.elapsed().as_nanos() as f64 / data.keys.len() as f64;
    let actual_bpk = f.memory_bytes() as f64 * 8.0 / data.keys.len() as f64;
    let (fpr, query_ns) = probe(&f, data);
    Row {
        filter,
        config,
        keys: data.keys.len(),
        bits_per_key: actual_bpk,
        fpr,
        fpr_theory: theory(actual_bpk, probes),
        insert_ns,
        query_ns,
    }
}

/// A two-bit (k = 2, Floe) or one-bit (k = 1) word-blocked row over a `bits`-bit table, keys
/// inserted through the lock-free atomic path the memtable uses.
fn word_bloom_row(filter: &'static str, bits: u64, bpk: f64, data: &Data) -> Row {
    let one_bit = filter == "one_bit_bloom";
    let f = if one_bit { TwoBitBloom::one_bit(bits) } else { TwoBitBloom::new(bits) }
        .expect("power-of-two table");
    let t = Instant::now();
    for &k in &data.keys {
        f.insert_hash_atomic(k);
    }
    let insert_ns = t.elapsed().as_nanos() as f64 / data.keys.len() as f64;
    let (fpr, query_ns) = probe(&f, data);
    let actual_bpk = bits as f64 / data.keys.len() as f64;
    let k = if one_bit { 1 } else { 2 };
    Row {
        filter,
        config: format!("bpk={bpk};k={k};u32 words"),
        keys: data.keys.len(),
        bits_per_key: actual_bpk,
        fpr,
        fpr_theory: math::blocked_bloom_fpr(32, 32.0 / actual_bpk, k),
        insert_ns,
        query_ns,
    }
}

/// A static-filter row: `build` constructs the filter from all keys at once; `insert_ns` is the
/// build time per key. `theory` gets the built filter.
fn static_row<F: Filter>(
    filter: &'static str,
    config: String,
    data: &Data,
    build: impl Fn(&[u64]) -> F,
    theory: impl Fn(&F) -> f64,
) -> Row {
    let t = Instant::now();
    let f = build(&data.keys);
    let insert_ns = t.elapsed().as_nanos() as f64 / data.keys.len() as f64;
    let (fpr, query_ns) = probe(&f, data);
    Row {
        filter,
        config,
        keys: data.keys.len(),
        bits_per_key: f.memory_bytes() as f64 * 8.0 / data.keys.len() as f64,
        fpr,
        fpr_theory: theory(&f),
        insert_ns,
        query_ns,
    }
}

/// Static filters: xor and binary fuse (FPR 2^-8, 2^-16), ribbon at 1% and 0.1% targets
/// (fractional result bits) and at r = 7.
fn static_rows(rows: &mut Vec<Row>, data: &Data) {
    let p8 = 2f64.powi(-8);
    let p16 = 2f64.powi(-16);
    rows.push(static_row("xor8", "3-wise".into(), data, |k| Xor8::build(k).unwrap(), |_| p8));
    rows.push(static_row("xor16", "3-wise".into(), data, |k| Xor16::build(k).unwrap(), |_| p16));
    rows.push(static_row(
        "binary_fuse8",
        "3-wise".into(),
        data,
        |k| BinaryFuse8::build(k).unwrap(),
        |_| p8,
    ));
    rows.push(static_row(
        "binary_fuse16",
        "3-wise".into(),
        data,
        |k| BinaryFuse16::build(k).unwrap(),
        |_| p16,
    ));
    for target in [0.01, 0.001] {
        rows.push(static_row(
            "ribbon",
            format!("target={target};w=128"),
            data,
            |k| Ribbon::with_false_pos(target).build(k).expect("ribbon builds"),
            |f| f.fpr(),
        ));
    }
    rows.push(static_row(
        "ribbon",
        "r=7;w=128".into(),
        data,
        |k| Ribbon::with_result_bits(7).build(k).expect("ribbon builds"),
        |f| f.fpr(),
    ));
}

/// Scalable rows: start at 1/1000 of the keys and grow (growth 2) to hold all of them, at a
/// 1% compound target with tightening ratios 0.5 and 0.9.
fn scalable_rows(rows: &mut Vec<Row>, data: &Data) {
    for ratio in [0.5, 0.9] {
        let mut f = ScalableBloom::new(data.keys.len() as u64 / 1000, 0.01)
            .and_then(|f| f.with_ratio(ratio))
            .expect("valid configuration");
        let t = Instant::now();
        for &k in &data.keys {
            f.insert_hash(k);
        }
        let insert_ns = t.elapsed().as_nanos() as f64 / data.keys.len() as f64;
        let (fpr, query_ns) = probe(&f, data);
        rows.push(Row {
            filter: "scalable_bloom",
            config: format!("P=0.01;r={ratio};s=2;stages={}", f.stage_count()),
            keys: data.keys.len(),
            bits_per_key: f.memory_bytes() as f64 * 8.0 / data.keys.len() as f64,
            fpr,
            fpr_theory: f.theoretical_fpr(),
            insert_ns,
            query_ns,
        });
    }
}

/// Cuckoo rows: 2^18 buckets of 4 slots filled to 95% (the load a full cuckoo filter runs at),
/// so bits per key are those of a full filter.
fn cuckoo_rows(rows: &mut Vec<Row>) {
    let buckets_log2 = 18;
    let n = (0.95 * (4u64 << buckets_log2) as f64) as usize;
    let data = Data::new(n, 3);
    for f_bits in [8u32, 12, 16] {
        let mut f = Cuckoo::with_buckets(buckets_log2, f_bits).expect("valid shape");
        let t = Instant::now();
        for &k in &data.keys {
            f.insert_hash(k).expect("95% load fits");
        }
        let insert_ns = t.elapsed().as_nanos() as f64 / n as f64;
        let (fpr, query_ns) = probe(&f, &data);
        rows.push(Row {
            filter: "cuckoo",
            config: format!("f={f_bits};b=4;load=0.95"),
            keys: n,
            bits_per_key: f.memory_bytes() as f64 * 8.0 / n as f64,
            fpr,
            fpr_theory: cuckoo_fpr(f_bits, f.load_factor()),
            insert_ns,
            query_ns,
        });
    }
}

fn rows() -> Vec<Row> {
    let data = Data::new(KEYS, 1);
    let mut rows = Vec::new();
    for bpk in BITS_PER_KEY {
        rows.push(insertable::<StandardBloom>(
            "standard_bloom",
            bpk,
            &data,
            math::standard_bloom_fpr,
        ));
    }
    for bpk in BITS_PER_KEY {
        rows.push(insertable::<BlockedBloom>("blocked_bloom", bpk, &data, |b, k| {
            math::blocked_bloom_fpr(512, 512.0 / b, k)
        }));
    }
    for bpk in BITS_PER_KEY {
        // Parquet writers size the bitset to a power of two bytes; the key count is chosen so
        // that a 1 MiB (2^23-bit) bitset is exactly `bpk` bits per key.
        let n = ((1u64 << 23) as f64 / bpk).round() as usize;
        let sbbf_data = Data::new(n, 4);
        let f = SplitBlockBloom::from_shape(1 << 23, 8).expect("1 MiB bitset");
        rows.push(insert_row(
            "split_block_bloom",
            format!("bpk={bpk};k=8"),
            f,
            8,
            &sbbf_data,
            |b, _| math::split_block_fpr(8, 32, 256.0 / b),
        ));
    }
    // Two-bit (Floe) and its one-bit baseline: the word count is a power of two, so as for the
    // split-block rows the key count makes a 2^23-bit table exactly `bpk` bits per key.
    for bpk in BITS_PER_KEY {
        let n = ((1u64 << 23) as f64 / bpk).round() as usize;
        let d = Data::new(n, 5);
        rows.push(word_bloom_row("two_bit_bloom", 1 << 23, bpk, &d));
        rows.push(word_bloom_row("one_bit_bloom", 1 << 23, bpk, &d));
    }
    // Floe's configuration: 2^21 bits (256 KiB), 262,144 keys (Floe: 11.68% and 5.69%).
    let floe = Data::new(262_144, 6);
    rows.push(word_bloom_row("one_bit_bloom", 1 << 21, 8.0, &floe));
    rows.push(word_bloom_row("two_bit_bloom", 1 << 21, 8.0, &floe));
    // Counting Bloom: the configuration is counters per key; memory is 4 bits per counter.
    for counters in BITS_PER_KEY {
        let mut row = insertable::<CountingBloom>("counting_bloom", counters, &data, |b, k| {
            math::standard_bloom_fpr(b / 4.0, k)
        });
        row.config = row.config.replace("bpk=", "counters/key=");
        rows.push(row);
    }
    scalable_rows(&mut rows, &data);
    static_rows(&mut rows, &data);
    cuckoo_rows(&mut rows);
    rows
}

fn main() {
    let csv = std::env::args().any(|a| a == "--csv");
    let rows = rows();
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
}
