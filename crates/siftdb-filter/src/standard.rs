//! The standard Bloom filter (Bloom 1970): `m` bits, `k` probes per key anywhere in the array.
//!
//! Probe positions come from Kirsch-Mitzenmacher double hashing (2006): `g_i = h1 + i * h2`
//! over 64-bit arithmetic, each reduced onto `0..m` by fastrange. `h1` is the key hash itself and
//! `h2` an odd re-mix of it, so one 64-bit hash yields all `k` positions with the same asymptotic
//! FPR as `k` independent hashes: `(1 - e^(-k n / m))^k`, minimised at `k = (m / n) ln 2`.
//!
//! Encoding (kind tag 1, docs/format.md#filter-encoding): params `num_bits:u64 probes:u32
//! keys_inserted:u64`; payload `ceil(num_bits / 64)` little-endian u64 words, bit `p` of the
//! filter being bit `p % 64` of word `p / 64`.

use crate::envelope::{self, Envelope, LeWords, ParamReader, ParamWriter, Words};
use crate::error::{FilterError, Result};
use crate::hash::{fast_range64, mix64};
use crate::prefetch::prefetch_read;
use crate::{math, BloomShape, FillInfo, Filter, FilterKind, InsertFilter, SetOps};

/// Seed of the re-mix that derives the probe stride `h2` from the key hash.
const STRIDE_SEED: u64 = 0x5EED_0F57_A9D0_B10F;
/// Most probes a key may set; more never helps below 40 bits per key.
pub(crate) const MAX_PROBES: u32 = 30;
/// Keys whose positions are computed and prefetched together by the batch operations.
const BATCH: usize = 8;

/// A standard Bloom filter. See the module documentation for the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardBloom {
    num_bits: u64,
    probes: u32,
    keys_inserted: u64,
    words: Vec<u64>,
}

/// The probe positions of a key: `k` values in `0..num_bits` (Kirsch-Mitzenmacher double
/// hashing, docs/format.md#standard-bloom). Shared with `CountingBloom`, whose counters are probed
/// at the same positions.
#[inline(always)]
pub(crate) fn positions(hash: u64, num_bits: u64, probes: u32) -> impl Iterator<Item = u64> {
    let stride = mix64(hash, STRIDE_SEED) | 1;
    let mut x = hash;
    (0..probes).map(move |_| {
        let p = fast_range64(x, num_bits);
        x = x.wrapping_add(stride);
        p
    })
}

/// The membership test shared by the owned filter and its zero-copy view.
#[inline(always)]
fn probe<W: Words<u64> + ?Sized>(words: &W, num_bits: u64, probes: u32, hash: u64) -> bool {
    positions(hash, num_bits, probes).all(|p| words.word((p / 64) as usize) & (1 << (p % 64)) != 0)
}

#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
fn validate_shape(num_bits: u64, probes: u32) -> std::result::Result<(), String> {
    if num_bits == 0 || num_bits > crate::sizing::MAX_BITS {
        return Err(format!("num_bits {num_bits} is not in 1..=2^40"));
    }
    if probes == 0 || probes > MAX_PROBES {
        return Err(format!("probes {probes} is not in 1..={MAX_PROBES}"));
    }
    Ok(())
}

impl StandardBloom {
    /// Number of bits in the table.
    pub fn num_bits(&self) -> u64 {
        self.num_bits
    }

    /// Bits set per key.
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// Reads a serialized standard Bloom filter into an owned one (copies the payload; use
    /// [`StandardBloomView`] to probe in place).
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<StandardBloom> {
        let view =
            StandardBloomView::parse(&envelope::decode_kind(bytes, FilterKind::StandardBloom)?)?;
        Ok(StandardBloom {
            num_bits: view.num_bits,
            probes: view.probes,
            keys_inserted: view.keys_inserted,
            words: view.words.to_vec(),
        })
    }

    fn same_shape(&self, other: &StandardBloom) -> Result<()> {
        if self.num_bits != other.num_bits || self.probes != other.probes {
            return Err(FilterError::invalid(format!(
                "standard Bloom shapes differ: {} bits/{} probes vs {} bits/{} probes",
                self.num_bits, self.probes, other.num_bits, other.probes
            )));
        }
        Ok(())
    }
}

impl BloomShape for StandardBloom {
    fn from_shape(num_bits: u64, probes: u32) -> Result<StandardBloom> {
        validate_shape(num_bits, probes).map_err(FilterError::invalid)?;
        Ok(StandardBloom {
            num_bits,
            probes,
            keys_inserted: 0,
            words: vec![0; num_bits.div_ceil(64) as usize],
        })
    }
}

impl Filter for StandardBloom {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        probe(self.words.as_slice(), self.num_bits, self.probes, hash)
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        out.clear();
        out.reserve(hashes.len());
        for chunk in hashes.chunks(BATCH) {
            for &h in chunk {
                for p in positions(h, self.num_bits, self.probes) {
                    prefetch_read(&self.words[(p / 64) as usize]);
                }
            }
            out.extend(chunk.iter().map(|&h| self.contains_hash(h)));
        }
    }

    fn kind(&self) -> FilterKind {
        FilterKind::StandardBloom
    }

    fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn to_bytes(&self) -> Vec<u8> {
        let params =
            ParamWriter::new().u64(self.num_bits).u32(self.probes).u64(self.keys_inserted).finish();
        envelope::encode(FilterKind::StandardBloom, &params, |out| {
            envelope::write_words(&self.words, out)
        })
    }
}

impl InsertFilter for StandardBloom {
    #[inline]
    fn insert_hash(&mut self, hash: u64) {
        for p in positions(hash, self.num_bits, self.probes) {
            self.words[(p / 64) as usize] |= 1 << (p % 64);
        }
        self.keys_inserted += 1;
    }

    fn insert_batch(&mut self, hashes: &[u64]) {
        for chunk in hashes.chunks(BATCH) {
            for &h in chunk {
                for p in positions(h, self.num_bits, self.probes) {
                    prefetch_read(&self.words[(p / 64) as usize]);
                }
            }
            for &h in chunk {
                self.insert_hash(h);
            }
        }
    }

    fn info(&self) -> FillInfo {
        let bits_set: u64 = self.words.iter().map(|w| w.count_ones() as u64).sum();
        let fill = bits_set as f64 / self.num_bits as f64;
        FillInfo {
            keys_inserted: self.keys_inserted,
            bits: self.num_bits,
            bits_set,
            estimated_fpr: fill.powi(self.probes as i32),
        }
    }
}

impl SetOps for StandardBloom {
    fn union_with(&mut self, other: &StandardBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
        self.keys_inserted += other.keys_inserted;
        Ok(())
    }

    fn intersect_with(&mut self, other: &StandardBloom) -> Result<()> {
        self.same_shape(other)?;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
        self.keys_inserted = self.keys_inserted.min(other.keys_inserted);
        Ok(())
    }
}

/// A standard Bloom filter probed in place over its serialized bytes.
#[derive(Debug, Clone, Copy)]
pub struct StandardBloomView<'a> {
    num_bits: u64,
    probes: u32,
    keys_inserted: u64,
    words: LeWords<'a, u64>,
}

impl<'a> StandardBloomView<'a> {
    /// Checks the parameters and payload of a decoded envelope of kind `StandardBloom`.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn parse(env: &Envelope<'a>) -> Result<StandardBloomView<'a>> {
        let mut r = ParamReader::new(env);
        let num_bits = r.u64("num_bits")?;
        let probes = r.u32("probes")?;
        let keys_inserted = r.u64("keys_inserted")?;
        r.finish()?;
        validate_shape(num_bits, probes).map_err(|e| r_invalid(env, e))?;
        let words = LeWords::new(env.payload, num_bits.div_ceil(64), "standard_bloom payload")?;
        Ok(StandardBloomView { num_bits, probes, keys_inserted, words })
    }

    /// `false`: certainly absent; `true`: may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        probe(&self.words, self.num_bits, self.probes, hash)
    }

    /// Starts loading the words of all `contains_hash(hash)`'s probes (a hint: see
    /// [`crate::FilterView::prefetch_hash`]).
    #[inline]
    pub fn prefetch_hash(&self, hash: u64) {
        if self.num_bits > 0 {
            for p in positions(hash, self.num_bits, self.probes) {
                prefetch_read(self.words.ptr((p / 64) as usize));
            }
        }
    }
}

fn r_invalid(env: &Envelope<'_>, what: String) -> FilterError {
    ParamReader::new(env).invalid(what)
}

impl StandardBloom {
    /// The layout's theoretical FPR at this filter's current load (`keys_inserted`).
    pub fn theoretical_fpr(&self) -> f64 {
        if self.keys_inserted == 0 {
            return 0.0;
        }
        math::standard_bloom_fpr(self.num_bits as f64 / self.keys_inserted as f64, self.probes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::filled;
    use crate::rng::SplitMix64;
    use crate::FilterView;

    #[test]
    fn no_false_negatives_across_sizes_with_duplicates() {
        for (i, n) in [0usize, 1, 2, 3, 100, 11_500, 1_000_000].into_iter().enumerate() {
            let (mut f, keys) = filled::<StandardBloom>(n, 10.0, i as u64);
            // Re-inserting every key (duplicates) changes nothing about membership.
            for &k in keys.iter().take(1000) {
                f.insert_hash(k);
            }
            assert!(keys.iter().all(|&k| f.contains_hash(k)), "n = {n}");
        }
    }

    #[test]
    fn measured_fpr_matches_the_standard_formula() {
        // Tolerance: 5 binomial standard deviations sqrt(p(1-p)/N) around the formula
        // (1 - e^(-k n/m))^k, plus 5% of p for the formula's own approximation (it treats bit
        // states as independent).
        let n = 200_000;
        let probes = 1_000_000u64;
        for bpk in [6.0, 8.0, 10.0, 12.0, 16.0] {
            let (f, _) = filled::<StandardBloom>(n, bpk, 42);
            let p = f.theoretical_fpr();
            let mut rng = SplitMix64::new(7);
            let fp = (0..probes).filter(|_| f.contains_hash(rng.next_u64())).count();
            let observed = fp as f64 / probes as f64;
            let tol = 5.0 * math::binomial_sigma(p, probes) + 0.05 * p;
            assert!((observed - p).abs() <= tol, "bpk {bpk}: observed {observed}, theory {p}");
        }
    }

    #[test]
    fn builder_meets_target_fpr() {
        let f = StandardBloom::with_false_pos(0.01).expected_items(10_000).unwrap();
        let bpk = f.num_bits() as f64 / 10_000.0;
        assert!((9.5..9.7).contains(&bpk), "{bpk}");
        assert_eq!(f.probes(), 7);
    }

    #[test]
    fn invalid_sizes_are_errors_not_panics() {
        assert!(StandardBloom::with_false_pos(0.0).expected_items(10).is_err());
        assert!(StandardBloom::with_false_pos(1.5).expected_items(10).is_err());
        assert!(StandardBloom::with_false_pos(f64::NAN).expected_items(10).is_err());
        assert!(StandardBloom::with_bits_per_key(-1.0).expected_items(10).is_err());
        assert!(StandardBloom::with_bits_per_key(10.0).expected_items(u64::MAX).is_err());
        assert!(StandardBloom::from_shape(0, 3).is_err());
        assert!(StandardBloom::from_shape(64, 0).is_err());
    }

    #[test]
    fn batch_answers_equal_single_answers() {
        let (f, keys) = filled::<StandardBloom>(10_000, 8.0, 3);
        let mut probes = keys[..500].to_vec();
        probes.extend(SplitMix64::new(99).hashes(5000));
        let mut out = Vec::new();
        f.contains_batch(&probes, &mut out);
        let single: Vec<bool> = probes.iter().map(|&h| f.contains_hash(h)).collect();
        assert_eq!(out, single);
    }

    #[test]
    fn round_trip_and_zero_copy_view_agree() {
        let (f, keys) = filled::<StandardBloom>(5000, 10.0, 11);
        let bytes = f.to_bytes();
        assert_eq!(StandardBloom::from_bytes(&bytes).unwrap(), f);
        let view = FilterView::parse(&bytes).unwrap();
        let mut rng = SplitMix64::new(5);
        for h in keys.iter().copied().chain((0..5000).map(|_| rng.next_u64())) {
            assert_eq!(view.contains_hash(h), f.contains_hash(h));
        }
    }

    #[test]
    fn fill_estimate_tracks_theory() {
        let (f, _) = filled::<StandardBloom>(100_000, 10.0, 8);
        let info = f.info();
        assert_eq!(info.keys_inserted, 100_000);
        // Expected fill 1 - e^(-k n/m) = 1 - e^(-0.7) ~ 0.503.
        assert!((info.fill_ratio() - 0.503).abs() < 0.01, "{}", info.fill_ratio());
        assert!((info.estimated_fpr - f.theoretical_fpr()).abs() < 0.1 * f.theoretical_fpr());
    }
}
