//! The filter policies compared and the database each is measured on.
//!
//! Every (policy, budget) gets a fresh database built from the same keys, values and options,
//! the filter policy being the only difference. Loading is deterministic: each batch of
//! `flush_keys` keys is flushed to one L0 file and followed by `wait_for_compactions`, so the
//! same files and levels arise whatever the thread timing (the memtable is sized so it never
//! fills up on its own).

use siftdb::filter::prelude::*;
use siftdb::filter::rng::SplitMix64;
use siftdb::filter::{BinaryFuse16, BinaryFuse8};
use siftdb::storage::{MemStorage, Storage};
use siftdb::{
    CompactionOptions, Db, FilterAllocation, FilterConfig, FilterPolicy, LevelBudget, Options,
    Result, StaticFilterKind,
};
use siftdb_bench_kit::load::{self, decimal_key as key};
use siftdb_bench_kit::zipf::{fnv1a64, Zipfian};
use std::path::Path;
use std::sync::Arc;

/// Bits per key of binary fuse filters at the key count of one compaction output file: their
/// size is fixed by the fingerprint width (8 or 16 bits) and a slot overhead that grows for small
/// key counts (about 9.04 and 18.1 bits per key at 1M keys, over 10 and 20 at 9,000).
#[derive(Debug, Clone, Copy)]
pub struct FuseBits {
    /// `BinaryFuse8` bits per key.
    pub fuse8: f64,
    /// `BinaryFuse16` bits per key.
    pub fuse16: f64,
}

impl FuseBits {
    /// Measures both widths on `keys_per_file` seeded random hashes.
    pub fn measure(keys_per_file: usize) -> Result<FuseBits> {
        let n = keys_per_file.max(64);
        let hashes = SplitMix64::new(0xf05e).hashes(n);
        let bits = |bytes: usize| bytes as f64 * 8.0 / n as f64;
        Ok(FuseBits {
            fuse8: bits(BinaryFuse8::build(&hashes)?.memory_bytes()),
            fuse16: bits(BinaryFuse16::build(&hashes)?.memory_bytes()),
        })
    }
}

/// One filter policy of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// No filter anywhere: the baseline.
    NoFilter,
    /// Two-bit Bloom at flush, Ribbon at compaction, the same bits per key on every run (the
    /// default of siftdb before all-runs allocation became it).
    TwoBitRibbon,
    /// Cache-line-blocked Bloom at flush and at compaction (RocksDB's filter family).
    Blocked,
    /// Two-bit at flush, binary fuse (8 or 16-bit, fixed size) at compaction.
    BinaryFuse,
    /// Two-bit at flush, Ribbon at compaction with Monkey's per-level allocation.
    Monkey,
    /// Two-bit at flush, Ribbon at compaction, the budget allocated over every run, L0
    /// included (`FilterAllocation::AllRuns`): siftdb's default policy until bumped Ribbon.
    AllRuns,
    /// `AllRuns` with each level weighted by the lookups it served during the load
    /// (`FilterAllocation::SkewAware`; the load's lookups follow `--hit-fraction`).
    SkewAware,
    /// `AllRuns` over all but the deepest level, which gets no filter
    /// (`FilterPolicy::optimize_filters_for_hits`).
    AllRunsForHits,
    /// Two-bit at flush, 4-wise packed binary fuse at compaction, the budget allocated over
    /// every run: each level's fingerprint width is the one nearest its allocated FPR.
    PackedFuseAllRuns,
    /// Two-bit at flush, bumped Ribbon (BuRR) at compaction, the budget allocated over every
    /// run: siftdb's default policy (`FilterPolicy::default()` at the budget).
    BumpedAllRuns,
}

impl Policy {
    /// Every policy, in report order.
    pub const ALL: [Policy; 10] = [
        Policy::NoFilter,
        Policy::TwoBitRibbon,
        Policy::Blocked,
        Policy::BinaryFuse,
        Policy::Monkey,
        Policy::AllRuns,
        Policy::SkewAware,
        Policy::AllRunsForHits,
        Policy::PackedFuseAllRuns,
        Policy::BumpedAllRuns,
    ];

    /// Name in the table, the CSV and the plot legend.
    pub fn name(self) -> &'static str {
        match self {
            Policy::NoFilter => "no_filter",
            Policy::TwoBitRibbon => "two_bit+ribbon",
            Policy::Blocked => "blocked_bloom",
            Policy::BinaryFuse => "two_bit+binary_fuse",
            Policy::Monkey => "two_bit+ribbon_monkey",
            Policy::AllRuns => "two_bit+ribbon_all_runs",
            Policy::SkewAware => "two_bit+ribbon_skew_aware",
            Policy::AllRunsForHits => "two_bit+ribbon_all_runs_hits",
            Policy::PackedFuseAllRuns => "two_bit+packed_fuse_all_runs",
            Policy::BumpedAllRuns => "two_bit+bumped_ribbon_all_runs",
        }
    }

    /// The engine's filter policy at `bits` filter bits per key, or why the policy cannot
    /// spend that budget. Flush filters get `bits` per key; compacted levels get the budget as
    /// `LevelBudget::BitsPerKey(bits)` (converted by the engine to the FPR the kind reaches with
    /// it) or, for Monkey, as the average over levels 1 and deeper; all-runs allocation takes it
    /// as the average over every run, L0 included, and sizes the flush filters itself. Binary
    /// fuse runs only where one of its widths (`fuse`, at this file size) is within `tolerance`
    /// of `bits`.
    pub fn filter_policy(
        self,
        bits: f64,
        fuse: FuseBits,
        tolerance: f64,
    ) -> std::result::Result<FilterPolicy, String> {
        let two_bit = FilterConfig::TwoBitBloom { bits_per_key: bits };
        let per_level = FilterAllocation::PerLevel(vec![LevelBudget::BitsPerKey(bits)]);
        let p = |flush, compaction, allocation| FilterPolicy {
            flush,
            compaction,
            allocation,
            optimize_filters_for_hits: false,
        };
        Ok(match self {
            Policy::NoFilter => {
                p(FilterConfig::None, StaticFilterKind::None, FilterAllocation::PerLevel(vec![]))
            }
            Policy::TwoBitRibbon => p(two_bit, StaticFilterKind::Ribbon, per_level),
            Policy::Blocked => p(
                FilterConfig::BlockedBloom { bits_per_key: bits },
                StaticFilterKind::BlockedBloom,
                per_level,
            ),
            Policy::BinaryFuse => {
                let near = |native: f64| (native / bits - 1.0).abs() <= tolerance;
                let kind = if near(fuse.fuse8) {
                    StaticFilterKind::BinaryFuse8
                } else if near(fuse.fuse16) {
                    StaticFilterKind::BinaryFuse16
                } else {
                    return Err(format!(
                        "unreachable: binary fuse spends {:.2} (8-bit) or {:.2} (16-bit) bits/key \
                         at this file size, not within {:.0}% of {bits}",
                        fuse.fuse8,
                        fuse.fuse16,
                        tolerance * 100.0
                    ));
                };
                p(two_bit, kind, per_level)
            }
            Policy::Monkey => p(
                two_bit,
                StaticFilterKind::Ribbon,
                FilterAllocation::Monkey { bits_per_key: bits },
            ),
            Policy::AllRuns => p(
                two_bit,
                StaticFilterKind::Ribbon,
                FilterAllocation::AllRuns { bits_per_key: bits },
            ),
            Policy::SkewAware => p(
                two_bit,
                StaticFilterKind::Ribbon,
                FilterAllocation::SkewAware { bits_per_key: bits },
            ),
            Policy::PackedFuseAllRuns => p(
                two_bit,
                StaticFilterKind::PackedBinaryFuse,
                FilterAllocation::AllRuns { bits_per_key: bits },
            ),
            Policy::BumpedAllRuns => p(
                two_bit,
                StaticFilterKind::BumpedRibbon,
                FilterAllocation::AllRuns { bits_per_key: bits },
            ),
            Policy::AllRunsForHits => FilterPolicy {
                optimize_filters_for_hits: true,
                ..p(
                    two_bit,
                    StaticFilterKind::Ribbon,
                    FilterAllocation::AllRuns { bits_per_key: bits },
                )
            },
        })
    }
}

/// Keys, values and LSM shape shared by every build.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Present keys `key(0), key(2), ..., key(2 (keys - 1))`.
    pub keys: u64,
    /// Value bytes.
    pub value_size: usize,
    /// Keys per flush (one L0 file each).
    pub flush_keys: u64,
    /// L1 target bytes.
    pub level_base: u64,
    /// Growth factor between levels.
    pub multiplier: f64,
    /// Compaction output file size.
    pub file_size: u64,
    /// Seed of key order and values.
    pub seed: u64,
    /// Lookups after each flush, on the keys loaded so far.
    pub load_lookups: u64,
    /// Share of present keys among them (the rest are missing keys in the key range).
    pub hit_fraction: f64,
    /// Which present keys the lookups ask for.
    pub present: PresentDist,
    /// Times every key is overwritten after the load (same order and flush cadence).
    pub rewrites: u32,
    /// Compact everything into one level after the load (and the rewrites).
    pub compact: bool,
}

/// The distribution of present-key lookups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PresentDist {
    /// Every loaded key equally often.
    Uniform,
    /// YCSB's scrambled zipfian (theta 0.99): popular keys spread over the key space and over
    /// the load, so over the levels as the keys are.
    Zipfian,
    /// YCSB's latest (workload D): zipfian over recency, the most recently loaded keys the most
    /// popular, so hot keys sit in L0 and the upper levels.
    Latest,
}

/// Draws present keys (their numbers `i`, the key being `key(2 i)`) from the first `loaded`
/// keys of the load order.
pub struct PresentKeys {
    dist: PresentDist,
    zipf: Zipfian,
}

impl PresentKeys {
    /// Draws by `dist`.
    pub fn new(dist: PresentDist) -> PresentKeys {
        PresentKeys { dist, zipf: Zipfian::new(1, ZIPF_THETA) }
    }

    /// A key number among `order[..loaded]`.
    pub fn next(&mut self, rng: &mut SplitMix64, order: &[u64], loaded: usize) -> u64 {
        let n = loaded as u64;
        match self.dist {
            PresentDist::Uniform => order[rng.below(n) as usize],
            PresentDist::Zipfian => {
                self.zipf.grow(n);
                order[(fnv1a64(self.zipf.next(rng)) % n) as usize]
            }
            PresentDist::Latest => {
                self.zipf.grow(n);
                order[loaded - 1 - self.zipf.next(rng).min(n - 1) as usize]
            }
        }
    }
}

/// YCSB's zipfian exponent.
const ZIPF_THETA: f64 = 0.99;

/// The order in which [`build`] loads the key numbers `0..shape.keys`.
pub fn load_order(shape: &Shape) -> Vec<u64> {
    let mut order: Vec<u64> = (0..shape.keys).collect();
    SplitMix64::new(shape.seed).shuffle(&mut order);
    order
}

/// Where a build's files live and how its tables are read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Io {
    /// In a `MemStorage`: the same files and the same block counts (they are counted above the
    /// storage), without fsync waits, which on a shared machine dominate the wall time of these
    /// small builds. The default.
    Memory,
    /// Real files, read through memory maps (the engine's default).
    Disk,
    /// Real files read with `O_DIRECT` through a block cache of `cache_bytes` (0: none), so
    /// every file read is a device read.
    Direct {
        /// `Options::block_cache_bytes`.
        cache_bytes: usize,
    },
}

/// Opens a new database in `dir` with `policy` and loads the shape's keys (module docs), its
/// files kept and read as `io` says.
pub fn build(dir: &Path, shape: &Shape, policy: FilterPolicy, io: Io) -> Result<Db> {
    // Four times a flush batch (entry = key + value + about 32 bytes of memtable overhead), so
    // only the explicit flushes below cut L0 files.
    let batch_bytes = shape.flush_keys as usize * (16 + shape.value_size + 32);
    let opts = Options {
        memtable_size: (4 * batch_bytes).max(1 << 16),
        filter_policy: policy,
        storage: (io == Io::Memory).then(|| Arc::new(MemStorage::new()) as Arc<dyn Storage>),
        direct_reads: matches!(io, Io::Direct { .. }),
        block_cache_bytes: match io {
            Io::Direct { cache_bytes } => cache_bytes,
            _ => Options::default().block_cache_bytes,
        },
        compaction: CompactionOptions {
            max_bytes_for_level_base: shape.level_base,
            max_bytes_for_level_multiplier: shape.multiplier,
            target_file_size: shape.file_size,
            ..CompactionOptions::default()
        },
        // One merge thread: subcompactions cut outputs at other keys, which changes the
        // level shape the shape's flags stand for (and the committed readamp reports'
        // figures were made with).
        max_subcompactions: 1,
        ..Options::default()
    };
    let db = Db::open(dir, opts)?;
    let mut rng = SplitMix64::new(shape.seed);
    let order = load::shuffled(shape.keys, &mut rng);
    let mut value = vec![0u8; shape.value_size];
    // A stream of its own, so the keys and values loaded do not depend on the lookups.
    let mut lookup_rng = SplitMix64::new(shape.seed ^ 0x10ad_100c);
    let mut present = PresentKeys::new(shape.present);
    let mut loaded = 0;
    // Pass 0 loads the keys; each rewrite overwrites all of them in the same order, so the
    // tree keeps its shape while compactions rewrite its files under the final plan.
    for _pass in 0..=shape.rewrites {
        for flush_batch in order.chunks(shape.flush_keys.max(1) as usize) {
            load::load_even_keys(&db, &mut rng, flush_batch, &mut value, |_| ())?;
            db.flush()?;
            db.wait_for_compactions()?;
            loaded = (loaded + flush_batch.len()).min(order.len());
            load_lookups(&db, shape, (&order, loaded), &mut present, &mut lookup_rng)?;
        }
    }
    if shape.compact {
        // A compaction into a level past its target size lets the background spill part of it
        // one level down (L3 at 1M keys under these targets); compacting again merges that into
        // one run on the new deepest level, ten times larger, so this ends within a few rounds.
        loop {
            db.compact()?;
            db.wait_for_compactions()?;
            if db.stats().levels.iter().filter(|l| l.files > 0).count() <= 1 {
                break;
            }
        }
    }
    Ok(db)
}

/// The lookups after a flush: `shape.load_lookups` keys, each present (one of the first
/// `loaded` of `order`, drawn by `present`) with probability `shape.hit_fraction`, else missing
/// (an odd number in the key range). Only skew-aware allocation reads what they leave in the
/// counters; the other policies build the same files with or without them.
fn load_lookups(
    db: &Db,
    shape: &Shape,
    (order, loaded): (&[u64], usize),
    present: &mut PresentKeys,
    rng: &mut SplitMix64,
) -> Result<()> {
    let threshold = (shape.hit_fraction * u64::MAX as f64) as u64;
    for _ in 0..shape.load_lookups {
        let k = if rng.next_u64() < threshold {
            2 * present.next(rng, order, loaded)
        } else {
            2 * rng.below(shape.keys) + 1
        };
        db.get(key(k))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's default (`compare::DEFAULT` at 10 bits per key) is the engine's
    /// `FilterPolicy::default()`: the same kinds and allocation (the flush filter's own
    /// `bits_per_key` is not read under all-runs allocation).
    #[test]
    fn the_reported_default_is_the_engine_default() {
        let fuse = FuseBits { fuse8: 10.0, fuse16: 20.0 };
        let reported = super::super::compare::DEFAULT.filter_policy(10.0, fuse, 0.1).unwrap();
        let engine = FilterPolicy::default();
        assert_eq!(reported.allocation, engine.allocation);
        assert_eq!(reported.compaction, engine.compaction);
        assert_eq!(reported.optimize_filters_for_hits, engine.optimize_filters_for_hits);
        let kind = |c: FilterConfig| std::mem::discriminant(&c);
        assert_eq!(kind(reported.flush), kind(engine.flush));
    }
}
