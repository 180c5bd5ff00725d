//! Construction side of a bumped ribbon filter: the bucket thresholds, the 2-bit bucket
//! metadata, and banding with bumping (one layer), which never fails.
//!
//! A layer's start positions are cut into buckets of `2^bucket_log2` starts. Within a bucket a
//! key's *class* is 0, 1 or 2 by how far its start lies from the bucket's end: class 0 for the
//! last `lower + 1` starts, class 2 for the first `2^bucket_log2 - 1 - upper`, class 1 between.
//! Keys are banded bucket by bucket, in each bucket from class 0 to class 2 (from the highest
//! start down: rows starting late in a bucket have the free slots of the next bucket ahead of
//! them, rows starting early compete with what the previous bucket spilled). At the first row
//! that does not fit, the bucket's threshold becomes that row's class `c`, the rows of class `c`
//! already stored in the bucket are taken out again, and every key of class `c` or more in the
//! bucket is *bumped* to the next layer. A query reads the bucket's threshold `t` (2 bits) and
//! probes this layer if its class is below `t`, the next layer otherwise (`t = 3`: nothing
//! bumped, the value of a bucket no key falls in).
//!
//! Taking rows out is sound because a row is only ever reduced by rows stored before it, and the
//! rows removed are exactly the last ones stored (same bucket, same class): no kept row was
//! reduced by a removed one.

use super::banding::{self, Band, Inserted};
use super::layer_chunks::{self, Chunk};
use super::solution::{self, key_row, Layout, W};
use crate::envelope::Words;
use crate::hash::fast_range64;

/// Buckets of 512 starts: Walzer et al.'s recommended `w^2 / (4 log2 w)` for 128-bit rows with
/// 2-bit thresholds, rounded down to a power of two.
pub(super) const BUCKET_LOG2: u32 = 9;
/// Slots per key of each bumped layer of a filter of fewer than [`LARGE_FILTER_KEYS`] keys
/// (overloaded: about 2% of the keys go on to the next layer).
pub(super) const SLOTS_PER_KEY: f64 = 0.98;
/// Slots per key of each bumped layer of a filter of [`LARGE_FILTER_KEYS`] keys or more.
/// Banding a full layer is slower than banding standard ribbon's 4.7% of spare slots (rows
/// travel further to a free slot), and the fuller the slower. Measured on one thread of the
/// 2-core VM at 1% (whole builds, `crates/siftdb-filter/examples/bumped_build.rs`): 0.98 takes
/// 193 ns a key at 100,000 and 1M keys, 1.0 takes 130 and 150, for 0.4% and 0.25% more bytes
/// (at 9,100 keys, 168 against 124 ns for 1.4% more bytes, hence the cut).
pub(super) const LARGE_SLOTS_PER_KEY: f64 = 1.0;
/// Distinct keys from which a filter's bumped layers take [`LARGE_SLOTS_PER_KEY`].
pub(super) const LARGE_FILTER_KEYS: u64 = 65_536;

/// Slots per key of the bumped layers of a filter of `num_keys` distinct keys.
pub(super) fn slots_per_key(num_keys: u64) -> f64 {
    if num_keys >= LARGE_FILTER_KEYS {
        LARGE_SLOTS_PER_KEY
    } else {
        SLOTS_PER_KEY
    }
}
/// Layers with bumping at most; what is left after them goes to the last, standard, layer.
pub(super) const MAX_BUMPED_LAYERS: usize = 6;
/// Keys at or below which the rest go to the last layer, a standard ribbon. A filter of this
/// many keys or fewer is that one layer: below about 6,000 keys the bumped layers' tail (a
/// last layer of at least 128 slots, and the slots a bumped layer leaves empty) costs more than
/// standard ribbon's spare slots (measured at 2^-8: +4.4% bits at 3,000 keys with a 256-slot
/// tail, even at 6,000, -2.7% at 9,000, -4.4% at 1M).
pub(super) const LAST_LAYER_KEYS: usize = 4096;

/// Bucket size and class boundaries of a bumped ribbon (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Thresholds {
    pub bucket_log2: u32,
    /// Largest offset-from-the-end of class 0.
    pub lower: u32,
    /// Largest offset-from-the-end of class 1.
    pub upper: u32,
}

impl Thresholds {
    /// The boundaries for layers of `slots_per_key` (`eps = slots_per_key - 1`): BuRR's fitted
    /// `(0.78 + 1.30 eps) B` and `(0.91 + 0.75 eps) B` for rows of 64 bits or more (Dillinger,
    /// Hübschle-Schneider, Sanders and Walzer, SEA 2022).
    pub fn for_layers(bucket_log2: u32, slots_per_key: f64) -> Thresholds {
        let b = (1u64 << bucket_log2) as f64;
        let eps = slots_per_key - 1.0;
        let lower = ((0.78 + 1.30 * eps) * b) as u32;
        let upper = ((0.91 + 0.75 * eps) * b) as u32;
        Thresholds { bucket_log2, lower, upper }
    }

    /// Checks what a reader relies on; `Err` names the violated rule.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn validate(&self) -> Result<(), String> {
        if !(7..=16).contains(&self.bucket_log2) {
            return Err(format!("bucket_log2 {} is not in 7..=16", self.bucket_log2));
        }
        if !(self.lower < self.upper && self.upper < (1 << self.bucket_log2)) {
            return Err(format!(
                "thresholds {} < {} < 2^{} do not hold",
                self.lower, self.upper, self.bucket_log2
            ));
        }
        Ok(())
    }

    /// The class (0, 1 or 2) of a start: by its offset from its bucket's last start.
    #[inline(always)]
    pub fn class(&self, start: u64) -> u64 {
        let from_end = (start & ((1 << self.bucket_log2) - 1)) ^ ((1 << self.bucket_log2) - 1);
        u64::from(from_end > self.lower as u64) + u64::from(from_end > self.upper as u64)
    }

    /// Buckets over `num_starts` starts.
    pub fn num_buckets(&self, num_starts: u64) -> u64 {
        num_starts.div_ceil(1 << self.bucket_log2)
    }

    /// Starts kept (not bumped) at the end of a bucket whose threshold is `t`.
    pub fn kept_per_bucket(&self, t: u64) -> u64 {
        match t {
            0 => 0,
            1 => self.lower as u64 + 1,
            2 => self.upper as u64 + 1,
            _ => 1 << self.bucket_log2,
        }
    }
}

/// u64 words of 2-bit thresholds for `num_buckets` buckets.
#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
pub(super) fn meta_words(num_buckets: u64) -> u64 {
    num_buckets.div_ceil(32)
}

/// The threshold of `bucket`.
#[inline(always)]
pub(super) fn threshold<M: Words<u64> + ?Sized>(meta: &M, bucket: u64) -> u64 {
    (meta.word((bucket / 32) as usize) >> (2 * (bucket % 32))) & 3
}

fn set_threshold(meta: &mut [u64], bucket: u64, t: u64) {
    let word = &mut meta[(bucket / 32) as usize];
    let shift = 2 * (bucket % 32);
    *word = (*word & !(3 << shift)) | (t << shift);
}

/// Whether a layer (not the last) sends the key with mixed hash `h1` on to the next layer.
#[inline(always)]
pub(super) fn is_bumped<M: Words<u64> + ?Sized>(
    th: &Thresholds,
    layout: &Layout,
    meta: &M,
    h1: u64,
) -> bool {
    let start = fast_range64(h1, layout.num_starts());
    th.class(start) >= threshold(meta, start >> th.bucket_log2)
}

/// One built layer: seed, shape, thresholds (empty for the last layer) and solution words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BuiltLayer {
    pub seed: u64,
    pub layout: Layout,
    pub meta: Vec<u64>,
    pub words: Vec<u64>,
}

/// Bands the keys whose hashes mixed with this layer's seed are `h1s` (sorted, distinct: start
/// order) into a layer of `layout` with bumping, in chunks on up to `threads` threads (the
/// result does not depend on `threads`: [`super::layer_chunks`]); returns the layer's
/// thresholds and solution, and the mixed hashes of the bumped keys (the next layer mixes these
/// again).
pub(super) fn band_layer(
    h1s: &[u64],
    layout: &Layout,
    th: &Thresholds,
    threads: usize,
) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let starts = layout.num_starts();
    let m = layout.num_slots() as usize;
    // Zeroed by writing, not `vec![0; m]`: calloc's lazily zeroed pages are first read by the
    // banding, then written, and that copy-on-write flushes the TLB of every core the chunks
    // run on (7% of a 500,000-key build on two threads, perf).
    let mut band = Band { coeffs: zeroed(m), results: zeroed(m) };
    // Every bucket starts as "nothing bumped" (3), which buckets without keys keep.
    let mut meta = vec![u64::MAX; meta_words(th.num_buckets(starts)) as usize];
    let mask = solution::column_mask(layout.upper_columns());
    let bumped =
        layer_chunks::band_in_chunks(h1s, starts, th, &mut band, &mut meta, threads, &|c| {
            band_chunk(c, starts, th, mask)
        });
    let words = solution::back_substitute(&band.coeffs, &band.results, layout);
    (meta, words, bumped)
}

/// `n` zeros, written. The fill value goes through `black_box` so the compiler cannot see that
/// it stores zeros into zeroed memory and drop the fill (it would be `calloc`, whose pages
/// stay unmapped until touched).
fn zeroed<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    v.fill(std::hint::black_box(T::default()));
    v
}

/// Bands one chunk's keys bucket by bucket; returns the keys it bumped.
fn band_chunk(chunk: Chunk<'_>, starts: u64, th: &Thresholds, mask: u32) -> Vec<u64> {
    let Chunk { h1s, coeffs, results, slot_base, meta, bucket_base } = chunk;
    let mut bumped = Vec::new();
    // Rows stored in the current bucket for the current class: (pivot slot, mixed hash).
    let mut stored: Vec<(usize, u64)> = Vec::new();
    let mut i = 0;
    while i < h1s.len() {
        // The keys of one bucket are a run of the sorted hashes (the start is monotone in h1);
        // they are banded from the last start down, so by class 0, 1, 2.
        let bucket = fast_range64(h1s[i], starts) >> th.bucket_log2;
        let mut end = i + 1;
        while end < h1s.len() && fast_range64(h1s[end], starts) >> th.bucket_log2 == bucket {
            end += 1;
        }
        stored.clear();
        let mut class = u64::MAX;
        let mut full = false;
        for &h1 in h1s[i..end].iter().rev() {
            if full {
                bumped.push(h1);
                continue;
            }
            let (start, coeff, result) = key_row(h1, starts);
            let c = th.class(start);
            if c != class {
                class = c;
                stored.clear();
            }
            // A row that reduces to zero is bumped even if its result reduced to zero too: it
            // would rest on rows a later bump of this bucket may take out. So is a row that
            // leaves the chunk's window.
            let local = start as usize - slot_base;
            match banding::insert(coeffs, results, local, coeff, result & mask) {
                Inserted::At(pivot) => stored.push((pivot, h1)),
                Inserted::Reduced { .. } | Inserted::Beyond => {
                    set_threshold(meta, bucket - bucket_base, c);
                    full = true;
                    for (pivot, kept) in stored.drain(..) {
                        coeffs[pivot] = 0;
                        results[pivot] = 0;
                        bumped.push(kept);
                    }
                    bumped.push(h1);
                }
            }
        }
        i = end;
    }
    bumped
}

/// The last layer: a standard ribbon of `keys` in `layout_for(blocks)`, trying `attempts` seeds
/// from `seed` (stepping by `step`) at each block count from the overhead table's (for a few
/// hundred keys of a bumped filter's tail, one 128-slot block can be enough: a standalone
/// ribbon's two-block floor would double it) up to twice that. `None` if all of that failed.
pub(super) fn band_last(
    keys: &[u64],
    mut seed: u64,
    step: u64,
    attempts: u32,
    layout_for: impl Fn(u64) -> Layout,
) -> Option<BuiltLayer> {
    let table = banding::num_blocks_for(keys.len() as u64)?;
    let first = if keys.len() <= 120 { 1 } else { table };
    let mut band = Band { coeffs: Vec::new(), results: Vec::new() };
    for blocks in first..=2 * table {
        let layout = layout_for(blocks);
        for _ in 0..attempts {
            let h1s = banding::mixed_sorted(keys, seed);
            if banding::band(&h1s, &layout, &mut band) {
                let words = solution::back_substitute(&band.coeffs, &band.results, &layout);
                return Some(BuiltLayer { seed, layout, meta: Vec::new(), words });
            }
            seed = seed.wrapping_add(step);
        }
    }
    None
}

/// Blocks of a bumped layer for `n` keys.
pub(super) fn bumped_layer_blocks(n: usize, slots_per_key: f64) -> u64 {
    ((n as f64 * slots_per_key / W as f64).ceil() as u64).max(2)
}

/// `(fraction of starts kept, FPR of a non-key that is kept)` of one layer: every start of the
/// last layer (`meta = None`) is kept; elsewhere bucket `j` keeps its last
/// `kept_per_bucket(t_j)` starts, which check `k` result bits below block `U` and `k + 1` from it.
pub(super) fn layer_terms<M: Words<u64> + ?Sized>(
    th: &Thresholds,
    layout: &Layout,
    meta: Option<&M>,
) -> (f64, f64) {
    let starts = layout.num_starts();
    if starts == 0 {
        return (0.0, 0.0);
    }
    let lower_end = (layout.upper_start_block * W).min(starts);
    let (mut kept_lower, mut kept_upper) = (0u64, 0u64);
    let mut count = |from: u64, to: u64| {
        // Kept starts [from, to) split at the first upper start.
        kept_lower += to.min(lower_end).saturating_sub(from);
        kept_upper += to.saturating_sub(from.max(lower_end));
    };
    match meta {
        None => count(0, starts),
        Some(meta) => {
            let b = 1u64 << th.bucket_log2;
            for bucket in 0..th.num_buckets(starts) {
                let end = (bucket * b + b).min(starts);
                let kept = th.kept_per_bucket(threshold(meta, bucket));
                // The kept starts are the bucket's last `kept` ones, clipped to the real starts.
                let from = (bucket * b + b).saturating_sub(kept).max(bucket * b);
                count(from.min(end), end);
            }
        }
    }
    let k = layout.lower_columns as i32;
    let kept = kept_lower + kept_upper;
    if kept == 0 {
        return (0.0, 0.0);
    }
    let fpr =
        (kept_lower as f64 * 0.5f64.powi(k) + kept_upper as f64 * 0.5f64.powi(k + 1)) / kept as f64;
    (kept as f64 / starts as f64, fpr)
}
