//! Bumped Ribbon (BuRR): standard Ribbon's rows and solution, in layers that bump the keys a
//! bucket cannot hold to the next layer instead of sizing one table for them all.
//!
//! Dillinger, P. C., Hübschle-Schneider, L., Sanders, P. and Walzer, S., "Fast Succinct
//! Retrieval and Approximate Membership Using Ribbon", SEA 2022.
//!
//! # Why
//! Standard ribbon needs `m / n` slots per key of 1.02-1.07 (more as `n` grows: 1.047 at 1M keys)
//! so that banding rarely fails; those spare slots are bits per key spent on nothing. A bumped
//! layer is *overloaded* (0.98 slots per key): where a bucket of 512 starts cannot take all its
//! keys, the ones starting earliest in it go to the next layer, and 2 bits per bucket say how
//! many. About 2% of the keys go on, then 2% of those, and the few thousand left form a small
//! standard ribbon (a set of 4,096 keys or fewer is only that layer). Total: 1.001-1.01 slots
//! per key (4.4% fewer bits than [`Ribbon`](super::Ribbon) at 1M keys, 2.4-2.7% at 9,000 to
//! 30,000), the same FPR. The price is construction time: a full layer bands slower
//! (docs/format.md#bumped-ribbon).
//!
//! # Query
//! Layer by layer: mix the hash with the layer's seed; if the layer's threshold for the key's
//! bucket bumps it, go on to the next layer; else probe this layer as standard ribbon does (the
//! same rows, interleaved solution and column mix). The last layer bumps nothing. A non-key ends
//! in exactly one layer and passes there with that layer's `2^-cols`, so the FPR is the
//! layers' FPRs weighted by how many non-keys end in each ([`BumpedRibbon::fpr`]). Most keys
//! read one layer, plus its threshold word; about 2% read a second.
//!
//! Construction is in [`super::bumping`]; the byte layout in docs/format.md#bumped-ribbon.

use super::bumping::{self, BuiltLayer, Thresholds};
use super::solution::{self, Layout, W};
use super::{Target, SEED_STEP};
use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::error::{FilterError, Result};
use crate::hash::mix64;
use crate::{Filter, FilterKind, StaticFilter};

/// Most layers a filter may have (bumped ones plus the last).
const MAX_LAYERS: usize = bumping::MAX_BUMPED_LAYERS + 1;

/// Builder of a [`BumpedRibbon`]: the target FPR (or fixed result bits) and the seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BumpedRibbonBuilder {
    target: Target,
    seed: u64,
    threads: usize,
}

impl BumpedRibbonBuilder {
    /// Uses `seed` for the first layer (default [`BumpedRibbon::DEFAULT_SEED`]). The same keys
    /// and seed always give the same filter.
    pub fn seed(mut self, seed: u64) -> BumpedRibbonBuilder {
        self.seed = seed;
        self
    }

    /// Bands each layer of more than 65,536 starts on up to `threads` threads (default 1; 0
    /// counts as 1). The filter is the same, byte for byte, for every thread count.
    pub fn threads(mut self, threads: usize) -> BumpedRibbonBuilder {
        self.threads = threads.max(1);
        self
    }

    /// Builds the filter of `hashes` (duplicates are removed; the empty set gives a filter that
    /// answers "no" to everything). Targets are checked as [`Ribbon`](super::Ribbon)'s are; the
    /// bumped layers cannot fail, and the last one retries seeds and grows as standard ribbon
    /// does ([`FilterError::Full`] only if that fails too).
    pub fn build(&self, hashes: &[u64]) -> Result<BumpedRibbon> {
        self.target.validate()?;
        let mut seed = self.seed;
        // Each layer mixes the previous layer's mixed hashes (the key hashes for the first)
        // with its own seed: `mix64` is a bijection, so they stay distinct (deduplicating the
        // first layer's deduplicates the keys), and sorted they are in start order.
        let mut h1s = super::banding::mixed_sorted(hashes, seed);
        let num_keys = h1s.len() as u64;
        let slots_per_key = bumping::slots_per_key(num_keys);
        let th = Thresholds::for_layers(bumping::BUCKET_LOG2, slots_per_key);
        if banding_limit_exceeded(num_keys) {
            return Err(FilterError::invalid(format!(
                "{num_keys} keys exceed the ribbon size limit"
            )));
        }
        let mut layers = Vec::new();
        // The hashes the next layer mixes: the keys', until a layer bumps some of its own.
        let mut keys: Vec<u64> = Vec::new();
        let mut remaining = h1s.len();
        while remaining > bumping::LAST_LAYER_KEYS && layers.len() < bumping::MAX_BUMPED_LAYERS {
            if !layers.is_empty() {
                h1s = super::banding::mixed_sorted(&keys, seed);
            }
            let layout = self.target.layout(bumping::bumped_layer_blocks(h1s.len(), slots_per_key));
            let (meta, words, bumped) = bumping::band_layer(&h1s, &layout, &th, self.threads);
            layers.push(BuiltLayer { seed, layout, meta, words });
            seed = seed.wrapping_add(SEED_STEP);
            remaining = bumped.len();
            keys = bumped;
        }
        if layers.is_empty() {
            // One standard layer (4,096 keys or fewer): it mixes the distinct key hashes.
            keys = hashes.to_vec();
            keys.sort_unstable();
            keys.dedup();
        }
        if !keys.is_empty() {
            let target = self.target;
            let last =
                bumping::band_last(&keys, seed, SEED_STEP, super::Ribbon::MAX_ATTEMPTS, |b| {
                    target.layout(b)
                })
                .ok_or_else(|| {
                    FilterError::Full(format!(
                        "bumped ribbon: the last layer of {} keys failed to band",
                        keys.len()
                    ))
                })?;
            layers.push(last);
        } else if let Some(last) = layers.last_mut() {
            // Nothing was bumped from the last bumped layer, so every threshold in it is 3 and
            // it can be the last layer, which stores none.
            debug_assert!(last.meta.iter().all(|&w| w == u64::MAX));
            last.meta.clear();
        }
        Ok(BumpedRibbon { num_keys, thresholds: th, layers })
    }
}

/// Whether `n` keys would need more blocks than a layout allows.
fn banding_limit_exceeded(n: u64) -> bool {
    super::banding::num_blocks_for(n).is_none()
}

/// A bumped ribbon filter (static: built once from a key set). See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BumpedRibbon {
    num_keys: u64,
    thresholds: Thresholds,
    layers: Vec<BuiltLayer>,
}

impl BumpedRibbon {
    /// Default seed of [`BumpedRibbonBuilder`].
    pub const DEFAULT_SEED: u64 = 0x4255_5252_0000_0001;

    /// A builder targeting false-positive rate `fpr` in `[2^-32, 1/2]` (each layer mixes
    /// `floor(log2(1/fpr))` and one more result bits, as [`Ribbon`](super::Ribbon) does).
    pub fn with_false_pos(fpr: f64) -> BumpedRibbonBuilder {
        BumpedRibbonBuilder {
            target: Target::Fpr(fpr),
            seed: BumpedRibbon::DEFAULT_SEED,
            threads: 1,
        }
    }

    /// A builder with exactly `bits` result bits per slot (`1..=32`): FPR `2^-bits`.
    pub fn with_result_bits(bits: u32) -> BumpedRibbonBuilder {
        BumpedRibbonBuilder {
            target: Target::ResultBits(bits),
            seed: BumpedRibbon::DEFAULT_SEED,
            threads: 1,
        }
    }

    /// The expected false-positive rate: each layer's rate weighted by the share of non-keys
    /// that end in it (from the stored thresholds). Zero for the empty filter.
    pub fn fpr(&self) -> f64 {
        expected_fpr(
            &self.thresholds,
            self.layers.iter().map(|l| (l.layout, (!l.meta.is_empty()).then_some(&l.meta[..]))),
        )
    }

    /// Payload bits (solutions and thresholds) per distinct key (0 for the empty filter).
    pub fn bits_per_key(&self) -> f64 {
        if self.num_keys == 0 {
            return 0.0;
        }
        self.memory_bytes() as f64 * 8.0 / self.num_keys as f64
    }

    /// Distinct keys the filter was built from.
    pub fn num_keys(&self) -> u64 {
        self.num_keys
    }

    /// Slots of each layer, first to last.
    pub fn layer_slots(&self) -> Vec<u64> {
        self.layers.iter().map(|l| l.layout.num_slots()).collect()
    }

    /// Reads a serialized bumped ribbon filter into an owned one (copies the payload; use
    /// [`BumpedRibbonView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<BumpedRibbon> {
        let view =
            BumpedRibbonView::parse(&envelope::decode_kind(bytes, FilterKind::BumpedRibbon)?)?;
        let layers = view
            .layers
            .iter()
            .map(|l| BuiltLayer {
                seed: l.seed,
                layout: l.layout,
                meta: l.meta.to_vec(),
                words: l.words.to_vec(),
            })
            .collect();
        Ok(BumpedRibbon { num_keys: view.num_keys, thresholds: view.thresholds, layers })
    }
}

/// The probe shared by the owned filter and the view: the first layer that does not bump the
/// key answers. Every layer's meta and words must match its validated layout.
#[inline(always)]
fn probe_layers<'l, M, S>(
    th: &Thresholds,
    layers: impl ExactSizeIterator<Item = (u64, &'l Layout, &'l M, &'l S)>,
    hash: u64,
) -> bool
where
    M: Words<u64> + ?Sized + 'l,
    S: Words<u64> + ?Sized + 'l,
{
    let last = layers.len().saturating_sub(1);
    let mut h = hash;
    for (i, (seed, layout, meta, words)) in layers.enumerate() {
        // Layer i sees the hash mixed with the seeds of layers 0..=i in turn.
        h = mix64(h, seed);
        if i < last && bumping::is_bumped(th, layout, meta, h) {
            continue;
        }
        return solution::probe_mixed(words, layout, h);
    }
    false // the empty filter holds nothing
}

/// See [`BumpedRibbon::fpr`]: `layers` yields each layer's layout and thresholds (`None` for
/// the last).
#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn expected_fpr<'m, M: Words<u64> + ?Sized + 'm>(
    th: &Thresholds,
    layers: impl Iterator<Item = (Layout, Option<&'m M>)>,
) -> f64 {
    let (mut reach, mut fpr) = (1.0, 0.0);
    for (layout, meta) in layers {
        let (kept, kept_fpr) = bumping::layer_terms(th, &layout, meta);
        fpr += reach * kept * kept_fpr;
        reach *= 1.0 - kept;
    }
    fpr
}

impl Filter for BumpedRibbon {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        let layers = self.layers.iter().map(|l| (l.seed, &l.layout, &l.meta[..], &l.words[..]));
        probe_layers(&self.thresholds, layers, hash)
    }

    fn kind(&self) -> FilterKind {
        FilterKind::BumpedRibbon
    }

    fn memory_bytes(&self) -> usize {
        self.layers.iter().map(|l| (l.meta.len() + l.words.len()) * 8).sum()
    }

    fn to_bytes(&self) -> Vec<u8> {
        let th = &self.thresholds;
        let mut params = ParamWriter::new()
            .u64(self.num_keys)
            .u8(W as u8)
            .u8(th.bucket_log2 as u8)
            .u16(th.lower as u16)
            .u16(th.upper as u16)
            .u8(self.layers.len() as u8);
        for l in &self.layers {
            params = params
                .u64(l.seed)
                .u64(l.layout.num_blocks)
                .u64(l.layout.upper_start_block)
                .u8(l.layout.lower_columns as u8);
        }
        envelope::encode(FilterKind::BumpedRibbon, &params.finish(), |out| {
            for l in &self.layers {
                envelope::write_words(&l.meta, out);
                envelope::write_words(&l.words, out);
            }
        })
    }
}

impl StaticFilter for BumpedRibbon {
    /// A bumped ribbon filter at 1% FPR.
    fn build(hashes: &[u64]) -> Result<BumpedRibbon> {
        BumpedRibbon::with_false_pos(0.01).build(hashes)
    }
}

/// One layer of a view: its seed, layout, thresholds (none for the last) and solution.
#[derive(Debug, Clone, Copy)]
struct LayerView<'a> {
    seed: u64,
    layout: Layout,
    meta: LeWords<'a, u64>,
    words: LeWords<'a, u64>,
}

/// A bumped ribbon filter probed in place over its serialized bytes. Not `Copy`: it holds a
/// small `Vec` of layer views (parsed once per table open).
#[derive(Debug, Clone)]
pub struct BumpedRibbonView<'a> {
    num_keys: u64,
    thresholds: Thresholds,
    layers: Vec<LayerView<'a>>,
    fpr: f64,
}

impl<'a> BumpedRibbonView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `BumpedRibbon`. After
    /// this every layer's layout is valid and its thresholds and solution hold exactly the words
    /// it implies, so no query can index out of bounds.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<BumpedRibbonView<'a>> {
        let mut r = ParamReader::new(env);
        let num_keys = r.u64("num_keys")?;
        let coeff_bits = r.u8("coeff_bits")?;
        let bucket_log2 = r.u8("bucket_log2")? as u32;
        let lower = r.u16("lower")? as u32;
        let upper = r.u16("upper")? as u32;
        let num_layers = r.u8("num_layers")? as usize;
        let invalid = |what: String| ParamReader::new(env).invalid(what);
        if coeff_bits as u64 != W {
            return Err(invalid(format!("coeff_bits {coeff_bits} is not 128")));
        }
        let thresholds = Thresholds { bucket_log2, lower, upper };
        thresholds.validate().map_err(invalid)?;
        if num_layers > MAX_LAYERS || (num_layers == 0) != (num_keys == 0) {
            return Err(invalid(format!("{num_layers} layers for {num_keys} keys")));
        }
        let mut shapes = Vec::with_capacity(num_layers);
        for _ in 0..num_layers {
            let seed = r.u64("seed")?;
            let num_blocks = r.u64("num_blocks")?;
            let upper_start_block = r.u64("upper_start_block")?;
            let lower_columns = r.u8("lower_columns")? as u32;
            shapes.push((seed, Layout { num_blocks, upper_start_block, lower_columns }));
        }
        r.finish()?;
        let mut payload = env.payload;
        let mut layers = Vec::with_capacity(num_layers);
        let mut slots = 0u64;
        for (i, (seed, layout)) in shapes.into_iter().enumerate() {
            layout.validate().map_err(|e| invalid(format!("layer {i}: {e}")))?;
            if layout.num_blocks == 0 {
                return Err(invalid(format!("layer {i} has no blocks")));
            }
            slots += layout.num_slots();
            let meta_words = if i + 1 < num_layers {
                bumping::meta_words(thresholds.num_buckets(layout.num_starts()))
            } else {
                0
            };
            let meta = take_words(&mut payload, meta_words, "bumped ribbon thresholds")?;
            let words = take_words(&mut payload, layout.total_words(), "bumped ribbon payload")?;
            layers.push(LayerView { seed, layout, meta, words });
        }
        if !payload.is_empty() {
            return Err(invalid(format!("{} payload bytes after the last layer", payload.len())));
        }
        if num_keys > slots {
            return Err(invalid(format!("num_keys {num_keys} impossible in {slots} slots")));
        }
        let last = layers.len().saturating_sub(1);
        let fpr = expected_fpr(
            &thresholds,
            layers.iter().enumerate().map(|(i, l)| (l.layout, (i < last).then_some(&l.meta))),
        );
        Ok(BumpedRibbonView { num_keys, thresholds, layers, fpr })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let layers = self.layers.iter().map(|l| (l.seed, &l.layout, &l.meta, &l.words));
        probe_layers(&self.thresholds, layers, hash)
    }

    /// Starts loading what `contains_hash(hash)` reads in the first layer, its threshold word
    /// and solution lines (a hint: see [`crate::FilterView::prefetch_hash`]); the few keys it
    /// bumps load the rest late.
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        if let Some(hint) = self.probe_hint() {
            hint.prefetch(hash);
        }
    }

    /// The numbers a prefetch needs without the view ([`crate::ProbeHint`]): those of
    /// the first layer, which is a ribbon layout probed with the hash mixed with its seed, as
    /// a standard ribbon's, and, when a layer follows it, where its thresholds are (later
    /// layers are not hinted). `None` for the empty filter.
    pub(crate) fn probe_hint(&self) -> Option<crate::ProbeHint> {
        let first = self.layers.first()?;
        Some(crate::ProbeHint::Ribbon {
            base: first.words.ptr(0) as usize,
            seed: first.seed,
            num_blocks: first.layout.num_blocks,
            upper_start_block: first.layout.upper_start_block,
            lower_columns: first.layout.lower_columns,
            thresholds: (self.layers.len() > 1)
                .then(|| (first.meta.ptr(0) as usize, self.thresholds.bucket_log2)),
        })
    }

    /// Distinct keys the filter was built from.
    pub fn num_keys(&self) -> u64 {
        self.num_keys
    }

    /// The expected false-positive rate (see [`BumpedRibbon::fpr`]).
    pub fn fpr(&self) -> f64 {
        self.fpr
    }

    /// Bytes the view requested from the allocator (its layer list's buffer).
    pub(crate) fn heap_request_bytes(&self) -> usize {
        self.layers.capacity() * std::mem::size_of::<LayerView<'a>>()
    }
}

/// Splits the next `count` little-endian u64 words off `payload`.
#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn take_words<'a>(payload: &mut &'a [u8], count: u64, what: &str) -> Result<LeWords<'a, u64>> {
    let len = count.checked_mul(8).filter(|&l| l <= payload.len() as u64).ok_or_else(|| {
        FilterError::corruption(
            format!(
                "{what}: {} payload bytes left, the parameters imply {count} more words",
                payload.len()
            ),
            None,
        )
    })? as usize;
    let (head, rest) = payload.split_at(len);
    *payload = rest;
    LeWords::new(head, count, what)
}
