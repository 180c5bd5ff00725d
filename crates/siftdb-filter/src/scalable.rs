//! The scalable Bloom filter (Almeida, Baquero, Preguica, Hutchison 2007, "Scalable Bloom
//! Filters"): a chain of standard Bloom filters ("stages") that grows when the key count is not
//! known in advance, while keeping the compound false-positive rate under a target `P`.
//!
//! Stage 0 is sized for `n0` keys (the initial capacity) at FPR `p0 = P (1 - r)`. Keys go into
//! the newest stage; when it holds its capacity, a new stage is added with capacity multiplied
//! by the growth factor `s` and FPR multiplied by the tightening ratio `r`: stage `i` holds
//! `ceil(n0 s^i)` keys at FPR `p0 r^i`. A key may be in any stage, so the filter answers "no" only
//! when *every* stage says no, and "maybe" when any stage does. The compound FPR is therefore
//! `1 - prod_i (1 - p_i) <= sum_i p0 r^i < p0 / (1 - r) = P`, however many stages are added.
//!
//! # Choosing `r` and `s`
//! Stage `i` costs `(ln(1/p0) + i ln(1/r)) / ln(2)^2` bits per key, i.e. the cost of a
//! standard filter at `P` plus `ln(1/(1-r)) / ln(2)^2` for stage 0 plus `ln(1/r) / ln(2)^2` per
//! stage. The default `r = 0.5` adds 1.44 bits per key on stage 0 and 1.44 per stage; Almeida et
//! al. suggest `r` in 0.8-0.9, which adds 3.4-4.8 bits per key on stage 0 but only 0.46-0.22 per
//! stage. The break-even is after two to three stages, so the default suits an initial capacity
//! that is a fair estimate (growth by up to ~4-8x), and `r = 0.9` suits growth by orders of
//! magnitude: grown to 1000x its initial capacity with `s = 2` (10 stages, `P = 1%`), `r = 0.5`
//! measured 23.1 bits/key at 0.97% FPR and `r = 0.9` 16.5 bits/key at 0.63%. The default `s = 2`
//! keeps the unfilled part of the newest stage small relative to the total; `s = 4` needs fewer
//! stages (fewer probes per negative lookup) for fast growth.
//!
//! # Limits
//! At most [`ScalableBloom::MAX_STAGES`] stages and 2^40 bits in total.
//! [`ScalableBloom::try_insert_hash`] reports a filter that cannot grow as [`FilterError::Full`]
//! without inserting; the infallible [`InsertFilter::insert_hash`] then over-fills the last stage
//! instead (its FPR rises above the target, but there is never a false negative).
//!
//! Duplicates are not detected: inserting a key twice uses two slots of the stage's capacity.
//!
//! Encoding (kind tag 6, docs/format.md#scalable-bloom): params `target_fpr:f64 ratio:f64
//! growth:f64 initial_capacity:u64 stage_count:u32`; payload = `stage_count` records
//! `capacity:u64 env_len:u64 envelope pad`, each envelope a complete `standard_bloom` filter.

use crate::envelope::{self, ParamWriter};
use crate::error::{FilterError, Result};
use crate::sizing::MAX_BITS;
use crate::{
    hash_key, BloomShape, FillInfo, Filter, FilterKind, InsertFilter, SetOps, StandardBloom,
};

/// Most stages a scalable filter may have.
pub(crate) const MAX_STAGES: usize = 64;
/// Default growth factor `s`: each stage holds twice the keys of the one before.
const DEFAULT_GROWTH: f64 = 2.0;
/// Default tightening ratio `r` (see the module documentation for the trade-off).
const DEFAULT_RATIO: f64 = 0.5;
/// Largest growth factor accepted.
const MAX_GROWTH: f64 = 16.0;

/// One stage: a standard Bloom filter and the number of keys it was sized for.
mod view;
use view::stage_records;
pub use view::ScalableBloomView;

#[derive(Debug, Clone, PartialEq)]
struct Stage {
    capacity: u64,
    bloom: StandardBloom,
}

/// A scalable Bloom filter: a growing chain of standard Bloom filters whose compound FPR stays
/// below a target. See the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalableBloom {
    target_fpr: f64,
    ratio: f64,
    growth: f64,
    initial_capacity: u64,
    /// Never empty; the last stage receives new keys.
    stages: Vec<Stage>,
    /// Keys inserted into the last stage.
    current: u64,
}

#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn check_config(
    target_fpr: f64,
    ratio: f64,
    growth: f64,
    initial: u64,
) -> std::result::Result<(), String> {
    if !(target_fpr.is_finite() && target_fpr > 0.0 && target_fpr < 1.0) {
        return Err(format!("target false-positive rate {target_fpr} is not in (0, 1)"));
    }
    if !(ratio.is_finite() && ratio > 0.0 && ratio < 1.0) {
        return Err(format!("tightening ratio {ratio} is not in (0, 1)"));
    }
    if !(growth.is_finite() && (1.0..=MAX_GROWTH).contains(&growth)) {
        return Err(format!("growth factor {growth} is not in [1, {MAX_GROWTH}]"));
    }
    if initial == 0 {
        return Err("initial capacity must be at least 1".into());
    }
    Ok(())
}

impl ScalableBloom {
    /// Most stages a scalable filter may have (64).
    pub const MAX_STAGES: usize = MAX_STAGES;
    /// Default growth factor `s` (2): each stage holds twice the keys of the one before.
    pub const DEFAULT_GROWTH: f64 = DEFAULT_GROWTH;
    /// Default tightening ratio `r` (0.5; see the module documentation for the trade-off).
    pub const DEFAULT_RATIO: f64 = DEFAULT_RATIO;

    /// A filter whose first stage holds `initial_capacity` keys and whose compound FPR stays
    /// below `target_fpr` as it grows, with the default growth (2) and ratio (0.5).
    pub fn new(initial_capacity: u64, target_fpr: f64) -> Result<ScalableBloom> {
        ScalableBloom::with_config(target_fpr, DEFAULT_RATIO, DEFAULT_GROWTH, initial_capacity)
    }

    fn with_config(target_fpr: f64, ratio: f64, growth: f64, initial: u64) -> Result<Self> {
        check_config(target_fpr, ratio, growth, initial).map_err(FilterError::invalid)?;
        let mut f = ScalableBloom {
            target_fpr,
            ratio,
            growth,
            initial_capacity: initial,
            stages: Vec::new(),
            current: 0,
        };
        // A first stage that cannot be built is a bad argument, not a full filter.
        let stage = f.next_stage().map_err(|e| match e {
            FilterError::Full(why) => FilterError::invalid(why),
            other => other,
        })?;
        f.stages.push(stage);
        Ok(f)
    }

    /// Sets the growth factor `s` in `[1, 16]`; only before the first insert.
    pub fn with_growth(self, growth: f64) -> Result<ScalableBloom> {
        self.check_unused()?;
        ScalableBloom::with_config(self.target_fpr, self.ratio, growth, self.initial_capacity)
    }

    /// Sets the tightening ratio `r` in `(0, 1)`; only before the first insert.
    pub fn with_ratio(self, ratio: f64) -> Result<ScalableBloom> {
        self.check_unused()?;
        ScalableBloom::with_config(self.target_fpr, ratio, self.growth, self.initial_capacity)
    }

    fn check_unused(&self) -> Result<()> {
        if self.stages.len() != 1 || self.current != 0 {
            return Err(FilterError::invalid(
                "growth and ratio can only be set before the first insert",
            ));
        }
        Ok(())
    }

    /// The stage that follows the current last one, sized by the formulas of the module doc.
    fn next_stage(&self) -> Result<Stage> {
        let i = self.stages.len();
        if i >= MAX_STAGES {
            return Err(FilterError::Full(format!("scalable Bloom has {MAX_STAGES} stages")));
        }
        let capacity = (self.initial_capacity as f64 * self.growth.powi(i as i32)).ceil();
        let fpr = self.target_fpr * (1.0 - self.ratio) * self.ratio.powi(i as i32);
        let full = |why: String| FilterError::Full(format!("scalable Bloom stage {i}: {why}"));
        if capacity > MAX_BITS as f64 {
            return Err(full(format!("capacity {capacity} keys is above 2^40")));
        }
        let (bpk, probes) =
            StandardBloom::with_false_pos(fpr).shape_per_key().map_err(|e| full(e.to_string()))?;
        let bits = (capacity * bpk).ceil();
        let used: u64 = self.stages.iter().map(|s| s.bloom.num_bits()).sum();
        if bits + used as f64 > MAX_BITS as f64 {
            return Err(full(format!("{bits} more bits would exceed the 2^40 total")));
        }
        let bloom =
            StandardBloom::from_shape(bits as u64, probes).map_err(|e| full(e.to_string()))?;
        Ok(Stage { capacity: capacity as u64, bloom })
    }

    /// Inserts a key hash, adding a stage first if the last one is at capacity. If no stage can
    /// be added ([`ScalableBloom::MAX_STAGES`] or the 2^40-bit total), returns
    /// [`FilterError::Full`] and inserts nothing.
    pub fn try_insert_hash(&mut self, hash: u64) -> Result<()> {
        if self.current >= self.last().capacity {
            let stage = self.next_stage()?;
            self.stages.push(stage);
            self.current = 0;
        }
        self.stages.last_mut().expect("never empty").bloom.insert_hash(hash);
        self.current += 1;
        Ok(())
    }

    /// [`ScalableBloom::try_insert_hash`] of [`hash_key`]`(key)`.
    pub fn try_insert(&mut self, key: &[u8]) -> Result<()> {
        self.try_insert_hash(hash_key(key))
    }

    fn last(&self) -> &Stage {
        self.stages.last().expect("never empty")
    }

    /// Number of stages (at least 1).
    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    /// The compound FPR bound `P` the filter was configured for.
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// The tightening ratio `r`.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// The growth factor `s`.
    pub fn growth(&self) -> f64 {
        self.growth
    }

    /// Keys stage 0 was sized for.
    pub fn initial_capacity(&self) -> u64 {
        self.initial_capacity
    }

    /// `1 - prod_i (1 - p_i)` with `p_i` the standard formula at stage `i`'s current load.
    pub fn theoretical_fpr(&self) -> f64 {
        1.0 - self.stages.iter().map(|s| 1.0 - s.bloom.theoretical_fpr()).product::<f64>()
    }

    /// Reads a serialized scalable Bloom filter into an owned one (copies every stage).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<ScalableBloom> {
        let env = envelope::decode_kind(bytes, FilterKind::ScalableBloom)?;
        let view = ScalableBloomView::parse(&env)?;
        let mut stages = Vec::with_capacity(view.stages.len());
        for (capacity, stage_bytes) in stage_records(env.payload, view.stages.len())? {
            stages.push(Stage { capacity, bloom: StandardBloom::from_bytes(stage_bytes)? });
        }
        let current = stages.last().expect("parse checked stage_count >= 1").bloom.info();
        Ok(ScalableBloom {
            target_fpr: view.target_fpr,
            ratio: view.ratio,
            growth: view.growth,
            initial_capacity: view.initial_capacity,
            stages,
            current: current.keys_inserted,
        })
    }

    /// Both filters have the same configuration and the same stages (count and shapes).
    fn same_shape(&self, other: &ScalableBloom) -> Result<()> {
        let config = |f: &ScalableBloom| {
            (f.target_fpr.to_bits(), f.ratio.to_bits(), f.growth.to_bits(), f.initial_capacity)
        };
        let stage = |s: &Stage| (s.capacity, s.bloom.num_bits(), s.bloom.probes());
        if config(self) != config(other)
            || self.stages.len() != other.stages.len()
            || self.stages.iter().zip(&other.stages).any(|(a, b)| stage(a) != stage(b))
        {
            return Err(FilterError::invalid(format!(
                "scalable Bloom shapes differ ({} vs {} stages, or a different configuration)",
                self.stages.len(),
                other.stages.len()
            )));
        }
        Ok(())
    }
}

impl Filter for ScalableBloom {
    /// Newest stage first: it is the largest and holds most keys, so positives end early.
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.stages.iter().rev().any(|s| s.bloom.contains_hash(hash))
    }

    // `contains_batch` keeps the trait's per-hash loop: running each stage's prefetching batch
    // probe over the still-undecided hashes measured about 2x slower than this loop (every
    // negative visits every stage either way, and the bookkeeping costs more than the prefetch
    // saves), so there is no override.

    fn kind(&self) -> FilterKind {
        FilterKind::ScalableBloom
    }

    fn memory_bytes(&self) -> usize {
        self.stages.iter().map(|s| s.bloom.memory_bytes()).sum()
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params = ParamWriter::new()
            .f64(self.target_fpr)
            .f64(self.ratio)
            .f64(self.growth)
            .u64(self.initial_capacity)
            .u32(self.stages.len() as u32)
            .finish();
        envelope::encode(FilterKind::ScalableBloom, &params, |out| {
            for s in &self.stages {
                let env = s.bloom.to_bytes();
                out.extend_from_slice(&s.capacity.to_le_bytes());
                out.extend_from_slice(&(env.len() as u64).to_le_bytes());
                out.extend_from_slice(&env);
                out.resize(out.len().div_ceil(8) * 8, 0);
            }
        })
    }
}

impl InsertFilter for ScalableBloom {
    /// Like [`ScalableBloom::try_insert_hash`], but a filter that cannot grow any more inserts
    /// into its last stage beyond that stage's capacity (the FPR rises; no false negatives).
    fn insert_hash(&mut self, hash: u64) {
        if self.try_insert_hash(hash).is_err() {
            self.stages.last_mut().expect("never empty").bloom.insert_hash(hash);
            self.current += 1;
        }
    }

    /// Sums over the stages; the FPR estimate is `1 - prod_i (1 - fill_i^k_i)`.
    fn info(&self) -> FillInfo {
        let mut total = FillInfo { keys_inserted: 0, bits: 0, bits_set: 0, estimated_fpr: 0.0 };
        let mut none = 1.0;
        for s in &self.stages {
            let i = s.bloom.info();
            total.keys_inserted += i.keys_inserted;
            total.bits += i.bits;
            total.bits_set += i.bits_set;
            none *= 1.0 - i.estimated_fpr;
        }
        total.estimated_fpr = 1.0 - none;
        total
    }
}

impl SetOps for ScalableBloom {
    /// Stage-wise OR; both filters must have the same configuration and stages.
    fn union_with(&mut self, other: &ScalableBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, b) in self.stages.iter_mut().zip(&other.stages) {
            a.bloom.union_with(&b.bloom)?;
        }
        self.current += other.current;
        Ok(())
    }

    /// Stage-wise AND; both filters must have the same configuration and stages.
    fn intersect_with(&mut self, other: &ScalableBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, b) in self.stages.iter_mut().zip(&other.stages) {
            a.bloom.intersect_with(&b.bloom)?;
        }
        self.current = self.current.min(other.current);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
