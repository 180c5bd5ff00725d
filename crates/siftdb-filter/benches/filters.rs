//! Filter micro-benchmarks: insert, contains (hit and miss), and batch vs single lookups, at 1M
//! and 10M keys, side by side with the `fastbloom` and `xorf` crates on the same 64-bit hashes.
//!
//! ```sh
//! cargo bench --bench filters                 # everything
//! cargo bench --bench filters -- contains/1M  # one group
//! ```
//! Every measurement iterates over `QUERIES` pre-generated hashes, so criterion's per-element
//! throughput is the cost of one query.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use siftdb_filter::prelude::*;
use siftdb_filter::rng::SplitMix64;
use siftdb_filter::{
    BinaryFuse4Wise8, BinaryFuse8, BlockedBloom, BumpedRibbon, Cuckoo, Ribbon, SplitBlockBloom,
    StandardBloom, TwoBitBloom, Xor8,
};
use std::hint::black_box;
use std::time::Duration;
use xorf::Filter as _;

const QUERIES: usize = 100_000;
const SIZES: [(usize, &str); 2] = [(1_000_000, "1M"), (10_000_000, "10M")];
const BITS_PER_KEY: f64 = 10.0;

struct Keys {
    keys: Vec<u64>,
    hits: Vec<u64>,
    misses: Vec<u64>,
}

fn keys(n: usize) -> Keys {
    let mut rng = SplitMix64::new(n as u64);
    let keys = rng.hashes(n);
    let mut hits: Vec<u64> = (0..QUERIES).map(|_| keys[rng.below(n as u64) as usize]).collect();
    hits.rotate_left(1);
    Keys { keys, hits, misses: rng.hashes(QUERIES) }
}

fn count_single(f: &dyn Filter, hashes: &[u64]) -> usize {
    hashes.iter().filter(|&&h| f.contains_hash(h)).count()
}

fn count_batch(f: &dyn Filter, hashes: &[u64], out: &mut Vec<bool>) -> usize {
    f.contains_batch(hashes, out);
    out.iter().filter(|&&b| b).count()
}

fn filled<F: InsertFilter + BloomShape>(k: &Keys) -> F {
    let mut f = F::with_bits_per_key(BITS_PER_KEY).expected_items(k.keys.len() as u64).unwrap();
    f.insert_batch(&k.keys);
    f
}

/// fastbloom (512-bit blocks) at the same 10 bits per key; its FPR at that size is printed by
/// `filter_table`-style measurement in the README next to ours.
fn fastbloom_filled(k: &Keys) -> fastbloom::BloomFilter {
    let bits = (k.keys.len() as f64 * BITS_PER_KEY) as usize;
    let mut f = fastbloom::BloomFilter::with_num_bits(bits).hashes(7);
    for &h in &k.keys {
        f.insert_hash(h);
    }
    f
}

fn contains(c: &mut Criterion) {
    for (n, label) in SIZES {
        let k = keys(n);
        let standard: StandardBloom = filled(&k);
        let blocked: BlockedBloom = filled(&k);
        let split: SplitBlockBloom = filled(&k);
        let ribbon = Ribbon::with_false_pos(0.01).build(&k.keys).unwrap();
        let bumped = BumpedRibbon::with_false_pos(0.01).build(&k.keys).unwrap();
        let fast = fastbloom_filled(&k);
        let mut g = c.benchmark_group(format!("contains/{label}"));
        g.throughput(Throughput::Elements(QUERIES as u64));
        g.sample_size(20).measurement_time(Duration::from_secs(3));
        for (case, hashes) in [("hit", &k.hits), ("miss", &k.misses)] {
            g.bench_function(BenchmarkId::new("standard_bloom", case), |b| {
                b.iter(|| count_single(&standard, black_box(hashes)))
            });
            g.bench_function(BenchmarkId::new("blocked_bloom", case), |b| {
                b.iter(|| count_single(&blocked, black_box(hashes)))
            });
            g.bench_function(BenchmarkId::new("split_block_bloom", case), |b| {
                b.iter(|| count_single(&split, black_box(hashes)))
            });
            g.bench_function(BenchmarkId::new("ribbon_1pct", case), |b| {
                b.iter(|| count_single(&ribbon, black_box(hashes)))
            });
            g.bench_function(BenchmarkId::new("bumped_ribbon_1pct", case), |b| {
                b.iter(|| count_single(&bumped, black_box(hashes)))
            });
            g.bench_function(BenchmarkId::new("fastbloom", case), |b| {
                b.iter(|| black_box(hashes).iter().filter(|&&h| fast.contains_hash(h)).count())
            });
        }
        g.finish();
    }
}

fn batch(c: &mut Criterion) {
    for (n, label) in SIZES {
        let k = keys(n);
        let standard: StandardBloom = filled(&k);
        let blocked: BlockedBloom = filled(&k);
        let mut g = c.benchmark_group(format!("batch/{label}"));
        g.throughput(Throughput::Elements(QUERIES as u64));
        g.sample_size(20).measurement_time(Duration::from_secs(3));
        let mut out = Vec::new();
        g.bench_function("standard_bloom/single", |b| {
            b.iter(|| count_single(&standard, black_box(&k.misses)))
        });
        g.bench_function("standard_bloom/batch", |b| {
            b.iter(|| count_batch(&standard, black_box(&k.misses), &mut out))
        });
        g.bench_function("blocked_bloom/single", |b| {
            b.iter(|| count_single(&blocked, black_box(&k.misses)))
        });
        g.bench_function("blocked_bloom/batch", |b| {
            b.iter(|| count_batch(&blocked, black_box(&k.misses), &mut out))
        });
        g.finish();
    }
}

fn insert(c: &mut Criterion) {
    let (n, label) = SIZES[0];
    let k = keys(n);
    let mut g = c.benchmark_group(format!("insert/{label}"));
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    g.bench_function("standard_bloom", |b| b.iter(|| filled::<StandardBloom>(&k)));
    g.bench_function("blocked_bloom", |b| b.iter(|| filled::<BlockedBloom>(&k)));
    g.bench_function("split_block_bloom", |b| b.iter(|| filled::<SplitBlockBloom>(&k)));
    g.bench_function("fastbloom", |b| b.iter(|| fastbloom_filled(&k)));
    // Floe's comparison: two bits in one u32 vs one bit, both by one atomic OR per key, 8 bits
    // per key (a 2^23-bit table for 1M keys).
    g.bench_function("two_bit_bloom_atomic", |b| {
        b.iter(|| {
            let f = TwoBitBloom::new(1 << 23).unwrap();
            k.keys.iter().for_each(|&h| f.insert_hash_atomic(h));
            f
        })
    });
    g.bench_function("one_bit_bloom_atomic", |b| {
        b.iter(|| {
            let f = TwoBitBloom::one_bit(1 << 23).unwrap();
            k.keys.iter().for_each(|&h| f.insert_hash_atomic(h));
            f
        })
    });
    g.bench_function("cuckoo_f12", |b| {
        b.iter(|| {
            let mut f = Cuckoo::with_capacity(n as u64, 12).unwrap();
            for &h in &k.keys {
                f.insert_hash(h).unwrap();
            }
            f
        })
    });
    g.finish();
}

/// Static filters: build from 1M keys and query (miss), siftdb (xor, 3-wise and 4-wise binary
/// fuse, ribbon) vs xorf on the same hashes.
fn statics(c: &mut Criterion) {
    let (n, label) = SIZES[0];
    let k = keys(n);
    let mut g = c.benchmark_group(format!("static_build/{label}"));
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function("xor8", |b| b.iter(|| Xor8::build(black_box(&k.keys)).unwrap()));
    g.bench_function("binary_fuse8", |b| {
        b.iter(|| BinaryFuse8::build(black_box(&k.keys)).unwrap())
    });
    g.bench_function("binary_fuse4_8", |b| {
        b.iter(|| BinaryFuse4Wise8::build(black_box(&k.keys)).unwrap())
    });
    g.bench_function("ribbon_1pct", |b| {
        b.iter(|| Ribbon::with_false_pos(0.01).build(black_box(&k.keys)).unwrap())
    });
    g.bench_function("bumped_ribbon_1pct", |b| {
        b.iter(|| BumpedRibbon::with_false_pos(0.01).build(black_box(&k.keys)).unwrap())
    });
    g.bench_function("xorf_xor8", |b| b.iter(|| xorf::Xor8::from(black_box(&k.keys[..]))));
    g.bench_function("xorf_binary_fuse8", |b| {
        b.iter(|| xorf::BinaryFuse8::try_from(black_box(&k.keys[..])).unwrap())
    });
    g.finish();

    let xor8 = Xor8::build(&k.keys).unwrap();
    let fuse8 = BinaryFuse8::build(&k.keys).unwrap();
    let fuse4_8 = BinaryFuse4Wise8::build(&k.keys).unwrap();
    let xorf_xor8 = xorf::Xor8::from(&k.keys[..]);
    let xorf_fuse8 = xorf::BinaryFuse8::try_from(&k.keys[..]).unwrap();
    let mut g = c.benchmark_group(format!("static_contains/{label}"));
    g.throughput(Throughput::Elements(QUERIES as u64));
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    g.bench_function("xor8", |b| b.iter(|| count_single(&xor8, black_box(&k.misses))));
    g.bench_function("binary_fuse8", |b| b.iter(|| count_single(&fuse8, black_box(&k.misses))));
    g.bench_function("binary_fuse4_8", |b| b.iter(|| count_single(&fuse4_8, black_box(&k.misses))));
    g.bench_function("xorf_xor8", |b| {
        b.iter(|| black_box(&k.misses).iter().filter(|h| xorf_xor8.contains(h)).count())
    });
    g.bench_function("xorf_binary_fuse8", |b| {
        b.iter(|| black_box(&k.misses).iter().filter(|h| xorf_fuse8.contains(h)).count())
    });
    g.finish();
}

criterion_group!(benches, contains, batch, insert, statics);
criterion_main!(benches);
