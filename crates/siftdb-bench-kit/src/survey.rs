//! Filter survey: every filter of `siftdb-filter` measured on the same seeded keys, one
//! [`SurveyRow`] per (filter, configuration) with bits per key, measured and theoretical FPR and
//! the time per insert (or per key of a static build) and per negative query.
//!
//! This is the measurement code behind `examples/filter_table.rs` (the table in the README) and
//! the FPR-against-bits plot of `siftdb readamp`; both call it, so the two always agree.
//!
//! Method: keys and negatives are independent uniform 64-bit hashes from a seeded
//! [`SplitMix64`], so a negative equals a key with probability about `n m / 2^64` (negligible).
//! Every key is probed first; a "no" for an inserted key (a false negative) is an error. The
//! measured FPR is the fraction of negatives answered "maybe"; its binomial standard deviation is
//! `sqrt(p (1 - p) / m)` for `m` negatives ([`cost::binomial_sigma`]). Bits per key are the
//! filter's table bytes ([`Filter::memory_bytes`]) times 8 over the keys inserted.

use siftdb_filter::cost;
use siftdb_filter::prelude::*;
use siftdb_filter::rng::SplitMix64;
use siftdb_filter::{
    cuckoo_fpr, BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom,
    BumpedRibbon, CountingBloom, Cuckoo, PackedBinaryFuse, Ribbon, ScalableBloom, SplitBlockBloom,
    StandardBloom, TwoBitBloom, Xor16, Xor8,
};
use siftdb_filter::{FilterError, FilterKind, Result};
use std::hint::black_box;
use std::time::Instant;

/// One measured filter configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SurveyRow {
    /// Filter family, snake case (`standard_bloom`, `ribbon`, ...).
    pub filter: &'static str,
    /// Configuration, `;`-separated `name=value` pairs (`bpk=10;k=7`).
    pub config: String,
    /// Keys inserted.
    pub keys: usize,
    /// Table bits per inserted key.
    pub bits_per_key: f64,
    /// Measured false-positive rate.
    pub fpr: f64,
    /// The family's formula at the filter's actual shape.
    pub fpr_theory: f64,
    /// Nanoseconds per insert (static filters: build time per key).
    pub insert_ns: f64,
    /// Nanoseconds per negative query.
    pub query_ns: f64,
}

/// Keys to insert and negatives to probe.
#[derive(Debug, Clone)]
pub struct SurveyData {
    /// Hashes inserted into the filter.
    pub keys: Vec<u64>,
    /// Hashes probed to measure the FPR.
    pub negatives: Vec<u64>,
}

impl SurveyData {
    /// `keys` key hashes, then `negatives` negative hashes, from `SplitMix64::new(seed)`.
    pub fn new(keys: usize, negatives: usize, seed: u64) -> SurveyData {
        let mut rng = SplitMix64::new(seed);
        SurveyData { keys: rng.hashes(keys), negatives: rng.hashes(negatives) }
    }
}

/// Checks every key is found (else `FilterError::Corruption`: the filter contradicts its contents),
/// then probes every negative; returns (measured FPR, ns per negative query).
pub fn probe(f: &dyn Filter, data: &SurveyData) -> Result<(f64, f64)> {
    if let Some(k) = data.keys.iter().find(|&&k| !f.contains_hash(k)) {
        return Err(FilterError::corruption(
            format!("false negative in {} for key hash {k:#x}", f.kind().name()),
            None,
        ));
    }
    let t = Instant::now();
    let fp = data.negatives.iter().filter(|&&h| black_box(f.contains_hash(h))).count();
    let m = data.negatives.len().max(1) as f64;
    Ok((fp as f64 / m, t.elapsed().as_nanos() as f64 / m))
}

/// Per-key time of `run` over `keys` keys, in ns.
fn per_key_ns(keys: usize, run: impl FnOnce()) -> f64 {
    let t = Instant::now();
    run();
    t.elapsed().as_nanos() as f64 / keys.max(1) as f64
}

/// A Bloom-family row: sized with `with_bits_per_key(bpk)` and the optimal probe count, keys
/// inserted one at a time; `theory(actual_bits_per_key, probes)`.
pub fn bloom_row<F: InsertFilter + BloomShape>(
    filter: &'static str,
    bpk: f64,
    data: &SurveyData,
    theory: impl Fn(f64, u32) -> f64,
) -> Result<SurveyRow> {
    let probes = F::probes_for_bits_per_key(bpk);
    let f = F::with_bits_per_key(bpk).expected_items(data.keys.len() as u64)?;
    insert_row(filter, format!("bpk={bpk};k={probes}"), f, probes, data, theory)
}

/// Inserts every key into the empty filter `f` one at a time, then probes.
pub fn insert_row<F: InsertFilter>(
    filter: &'static str,
    config: String,
    mut f: F,
    probes: u32,
    data: &SurveyData,
    theory: impl Fn(f64, u32) -> f64,
) -> Result<SurveyRow> {
    let insert_ns =
        per_key_ns(data.keys.len(), || data.keys.iter().for_each(|&k| f.insert_hash(k)));
    let bits_per_key = f.memory_bytes() as f64 * 8.0 / data.keys.len().max(1) as f64;
    let (fpr, query_ns) = probe(&f, data)?;
    let fpr_theory = theory(bits_per_key, probes);
    let keys = data.keys.len();
    Ok(SurveyRow { filter, config, keys, bits_per_key, fpr, fpr_theory, insert_ns, query_ns })
}

/// A two-bit (`two_bit_bloom`, k = 2, Floe) or one-bit (`one_bit_bloom`, k = 1) word-blocked
/// filter of `bits` bits (a power of two), keys inserted through the lock-free atomic path the
/// memtable uses; `bpk` only labels the row (the caller sizes `data` to `bits / bpk` keys).
pub fn word_bloom_row(
    filter: &'static str,
    bits: u64,
    bpk: f64,
    data: &SurveyData,
) -> Result<SurveyRow> {
    let one_bit = filter == "one_bit_bloom";
    let f = if one_bit { TwoBitBloom::one_bit(bits)? } else { TwoBitBloom::new(bits)? };
    let insert_ns =
        per_key_ns(data.keys.len(), || data.keys.iter().for_each(|&k| f.insert_hash_atomic(k)));
    let (fpr, query_ns) = probe(&f, data)?;
    let bits_per_key = f.memory_bytes() as f64 * 8.0 / data.keys.len().max(1) as f64;
    let k = if one_bit { 1 } else { 2 };
    Ok(SurveyRow {
        filter,
        config: format!("bpk={bpk};k={k};u32 words"),
        keys: data.keys.len(),
        bits_per_key,
        fpr,
        fpr_theory: cost::blocked_bloom_fpr(32, 32.0 / bits_per_key, k),
        insert_ns,
        query_ns,
    })
}

/// A static-filter row: `build` constructs the filter from all keys at once (`insert_ns` is the
/// build time per key); `theory` gets the built filter.
pub fn static_row<F: Filter>(
    filter: &'static str,
    config: String,
    data: &SurveyData,
    build: impl FnOnce(&[u64]) -> Result<F>,
    theory: impl Fn(&F) -> f64,
) -> Result<SurveyRow> {
    let t = Instant::now();
    let f = build(&data.keys)?;
    let insert_ns = t.elapsed().as_nanos() as f64 / data.keys.len().max(1) as f64;
    let (fpr, query_ns) = probe(&f, data)?;
    Ok(SurveyRow {
        filter,
        config,
        keys: data.keys.len(),
        bits_per_key: f.memory_bytes() as f64 * 8.0 / data.keys.len().max(1) as f64,
        fpr,
        fpr_theory: theory(&f),
        insert_ns,
        query_ns,
    })
}

/// Xor, binary fuse and 4-wise binary fuse filters with 8- and 16-bit fingerprints (FPR `2^-8`,
/// `2^-16`; their bits per key are fixed by the fingerprint width and the slot overhead).
pub fn fingerprint_rows(data: &SurveyData) -> Result<Vec<SurveyRow>> {
    let (p8, p16) = (2f64.powi(-8), 2f64.powi(-16));
    let w = || "3-wise".to_string();
    let w4 = || "4-wise".to_string();
    Ok(vec![
        static_row("xor8", w(), data, Xor8::build, |_| p8)?,
        static_row("xor16", w(), data, Xor16::build, |_| p16)?,
        static_row("binary_fuse8", w(), data, BinaryFuse8::build, |_| p8)?,
        static_row("binary_fuse16", w(), data, BinaryFuse16::build, |_| p16)?,
        static_row("binary_fuse4_8", w4(), data, BinaryFuse4Wise8::build, |_| p8)?,
        static_row("binary_fuse4_16", w4(), data, BinaryFuse4Wise16::build, |_| p16)?,
        packed_fuse_row(8, data)?,
    ])
}

/// A 4-wise packed binary fuse row of `w`-bit fingerprints (FPR `2^-w`).
pub fn packed_fuse_row(w: u32, data: &SurveyData) -> Result<SurveyRow> {
    let build = |k: &[u64]| PackedBinaryFuse::build(k, w);
    static_row("packed_binary_fuse", format!("4-wise;w={w}"), data, build, |f| f.fpr())
}

/// The packed binary fuse row the engine builds for a `bpk` budget: the FPR `2^-(bpk / 1.075)`
/// (`FilterKind::PackedBinaryFuse.bits_per_log2()`) rounded to a whole width.
pub fn packed_fuse_budget_row(bpk: f64, data: &SurveyData) -> Result<SurveyRow> {
    let c = FilterKind::PackedBinaryFuse.bits_per_log2().expect("a cost per log2");
    packed_fuse_row(PackedBinaryFuse::bits_for_fpr(2f64.powf(-bpk / c)), data)
}

/// A Ribbon row built for the FPR the engine gives a `bpk` budget: `2^-(bpk / 1.05)`
/// (`FilterKind::Ribbon.bits_per_log2()`), clamped to Ribbon's `[2^-32, 1/2]`.
pub fn ribbon_budget_row(bpk: f64, data: &SurveyData) -> Result<SurveyRow> {
    let target = 2f64.powf(-bpk / 1.05).clamp(2f64.powi(-32), 0.5);
    let build = |k: &[u64]| Ribbon::with_false_pos(target).build(k);
    static_row("ribbon", format!("bpk={bpk};w=128"), data, build, |f| f.fpr())
}

/// A bumped Ribbon row built for the FPR the engine gives a `bpk` budget: `2^-(bpk / 1.01)`
/// (`FilterKind::BumpedRibbon.bits_per_log2()`), clamped to `[2^-32, 1/2]`.
pub fn bumped_ribbon_budget_row(bpk: f64, data: &SurveyData) -> Result<SurveyRow> {
    let c = FilterKind::BumpedRibbon.bits_per_log2().expect("a cost per log2");
    let target = 2f64.powf(-bpk / c).clamp(2f64.powi(-32), 0.5);
    let build = |k: &[u64]| BumpedRibbon::with_false_pos(target).build(k);
    static_row("bumped_ribbon", format!("bpk={bpk};w=128"), data, build, |f| f.fpr())
}

/// A scalable Bloom filter starting at 1/1000 of the keys and growing (factor 2) to hold all
/// of them, at a 1% compound target with tightening ratio `ratio`.
pub fn scalable_row(ratio: f64, data: &SurveyData) -> Result<SurveyRow> {
    let mut f =
        ScalableBloom::new((data.keys.len() as u64 / 1000).max(1), 0.01)?.with_ratio(ratio)?;
    let insert_ns =
        per_key_ns(data.keys.len(), || data.keys.iter().for_each(|&k| f.insert_hash(k)));
    let (fpr, query_ns) = probe(&f, data)?;
    Ok(SurveyRow {
        filter: "scalable_bloom",
        config: format!("P=0.01;r={ratio};s=2;stages={}", f.stage_count()),
        keys: data.keys.len(),
        bits_per_key: f.memory_bytes() as f64 * 8.0 / data.keys.len().max(1) as f64,
        fpr,
        fpr_theory: f.theoretical_fpr(),
        insert_ns,
        query_ns,
    })
}

/// Cuckoo filters of `2^buckets_log2` buckets of 4 slots with `f_bits`-bit fingerprints, filled
/// to 95% (the load a full cuckoo filter runs at), so bits per key are those of a full filter.
/// Keys and `negatives` negatives come from `SplitMix64::new(seed)`.
pub fn cuckoo_row(
    buckets_log2: u32,
    f_bits: u32,
    negatives: usize,
    seed: u64,
) -> Result<SurveyRow> {
    let n = (0.95 * (4u64 << buckets_log2) as f64) as usize;
    let data = SurveyData::new(n, negatives, seed);
    let mut f = Cuckoo::with_buckets(buckets_log2, f_bits)?;
    let t = Instant::now();
    for &k in &data.keys {
        f.insert_hash(k)?;
    }
    let insert_ns = t.elapsed().as_nanos() as f64 / n.max(1) as f64;
    let (fpr, query_ns) = probe(&f, &data)?;
    Ok(SurveyRow {
        filter: "cuckoo",
        config: format!("f={f_bits};b=4;load=0.95"),
        keys: n,
        bits_per_key: f.memory_bytes() as f64 * 8.0 / n.max(1) as f64,
        fpr,
        fpr_theory: cuckoo_fpr(f_bits, f.load_factor()),
        insert_ns,
        query_ns,
    })
}

/// The standard Bloom row at `bpk` (theory: [`cost::standard_bloom_fpr`]).
pub fn standard_row(bpk: f64, data: &SurveyData) -> Result<SurveyRow> {
    bloom_row::<StandardBloom>("standard_bloom", bpk, data, cost::standard_bloom_fpr)
}

/// The cache-line-blocked Bloom row at `bpk` (theory: Putze et al.'s blocked formula).
pub fn blocked_row(bpk: f64, data: &SurveyData) -> Result<SurveyRow> {
    bloom_row::<BlockedBloom>("blocked_bloom", bpk, data, |b, k| {
        cost::blocked_bloom_fpr(512, 512.0 / b, k)
    })
}

/// The counting Bloom row at `counters` 4-bit counters per key (memory `4 counters` bits/key).
pub fn counting_row(counters: f64, data: &SurveyData) -> Result<SurveyRow> {
    let mut row = bloom_row::<CountingBloom>("counting_bloom", counters, data, |b, k| {
        cost::standard_bloom_fpr(b / 4.0, k)
    })?;
    row.config = row.config.replace("bpk=", "counters/key=");
    Ok(row)
}

/// Parquet's split-block filter over a `table_bits`-bit (power of two) bitset, k = 8, with the
/// key count chosen so the bitset is exactly `bpk` bits per key (Parquet writers size the
/// bitset to a power of two bytes). Keys and negatives from `SplitMix64::new(seed)`.
pub fn split_block_row(
    bpk: f64,
    table_bits: u64,
    negatives: usize,
    seed: u64,
) -> Result<SurveyRow> {
    let n = (table_bits as f64 / bpk).round() as usize;
    let data = SurveyData::new(n, negatives, seed);
    let f = SplitBlockBloom::from_shape(table_bits, 8)?;
    let theory = |b: f64, _| cost::split_block_fpr(8, 32, 256.0 / b);
    insert_row("split_block_bloom", format!("bpk={bpk};k=8"), f, 8, &data, theory)
}

/// The FPR-against-memory sweep of `siftdb readamp`: for each budget in `bits`, the standard,
/// blocked, split-block, two-bit, counting (`bits / 4` counters per key, from 1 counter up),
/// Ribbon and packed binary fuse (the width nearest the budget) filters; then the filters
/// whose size is fixed by a fingerprint width at their own sizes (xor and 3- and 4-wise binary
/// fuse 8/16, cuckoo f = 8/12/16 at 95% load). About `keys` keys per row (the power-of-two
/// filters adjust the count to the budget), `negatives` negatives each.
pub fn sweep(bits: &[f64], keys: usize, negatives: usize, seed: u64) -> Result<Vec<SurveyRow>> {
    if keys == 0 || negatives == 0 || bits.iter().any(|&b| !(b > 0.0 && b <= 64.0)) {
        return Err(FilterError::invalid("survey sweep: keys and negatives > 0, bits in (0, 64]"));
    }
    let data = SurveyData::new(keys, negatives, seed);
    // Power-of-two tables about 8 bits per key of `keys`, filled to each budget.
    let table_bits = ((keys as u64) * 8).next_power_of_two();
    let mut rows = Vec::new();
    for &b in bits {
        rows.push(standard_row(b, &data)?);
        rows.push(blocked_row(b, &data)?);
        rows.push(split_block_row(b, table_bits, negatives, seed + 1)?);
        let n = (table_bits as f64 / b).round() as usize;
        let two_bit_data = SurveyData::new(n, negatives, seed + 2);
        rows.push(word_bloom_row("two_bit_bloom", table_bits, b, &two_bit_data)?);
        if b >= 4.0 {
            rows.push(counting_row(b / 4.0, &data)?);
        }
        rows.push(ribbon_budget_row(b, &data)?);
        rows.push(bumped_ribbon_budget_row(b, &data)?);
        rows.push(packed_fuse_budget_row(b, &data)?);
    }
    rows.extend(fingerprint_rows(&data)?);
    // Buckets of 4 slots at 95% load: the largest power of two holding at most `keys`.
    let buckets_log2 = ((keys as f64 / (4.0 * 0.95)).log2().floor() as u32).clamp(1, 30);
    for f_bits in [8, 12, 16] {
        rows.push(cuckoo_row(buckets_log2, f_bits, negatives, seed + 3)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_rows_are_within_five_sigma_of_theory() {
        // Tolerance per row: 5 binomial sigmas sqrt(p (1 - p) / m) around the family's formula
        // plus 25% relative model error (the blocked and two-bit formulas are Poisson
        // approximations; Ribbon's fpr() is its exact 2^-r up to the solver's slack).
        let m = 200_000;
        let rows = sweep(&[6.0, 10.0], 20_000, m, 7).unwrap();
        assert!(rows.iter().any(|r| r.filter == "cuckoo"));
        for r in &rows {
            let tol = 5.0 * cost::binomial_sigma(r.fpr_theory, m as u64) + 0.25 * r.fpr_theory;
            assert!(
                (r.fpr - r.fpr_theory).abs() <= tol,
                "{} {}: measured {} theory {}",
                r.filter,
                r.config,
                r.fpr,
                r.fpr_theory
            );
        }
    }

    #[test]
    fn sweep_rejects_bad_arguments() {
        assert!(sweep(&[0.0], 100, 100, 1).is_err());
        assert!(sweep(&[8.0], 0, 100, 1).is_err());
    }
}
