//! The cuckoo filter (Fan, Andersen, Kaminsky, Mitzenmacher 2014, "Cuckoo Filter: Practically
//! Better Than Bloom"): approximate membership with deletion, at close to the space of a
//! static filter.
//!
//! # Theory
//! A table of `2^k` buckets of `b = 4` slots stores an `f`-bit fingerprint per key. With
//! *partial-key cuckoo hashing* a key with hash `h` has two candidate buckets,
//! `i1 = h mod 2^k` and `i2 = i1 XOR H(fp)`, where `fp` comes from other bits of `h`. Since the
//! offset `H(fp)` depends on the fingerprint alone, a stored fingerprint can be moved to its other
//! bucket without knowing its key; this needs the bucket count to be a power of two. An insert
//! takes a free slot in either bucket or, when both are full, relocates ("kicks") resident
//! fingerprints to their other buckets along a path found by a bounded breadth-first search
//! ([`relocate`]). With `b = 4` the table fills to 95-98% before the first insert fails (about 97% measured
//! for every width).
//!
//! A query checks the `2b` slots of its two buckets, so at load `alpha` it meets `2 b alpha`
//! fingerprints and FPR `~ 1 - (1 - 2^-f)^(2 b alpha) ~ 8 alpha / 2^f` ([`cuckoo_fpr`]): about
//! 3% at f = 8, 0.19% at f = 12 and 0.012% at f = 16 when full. Space is `f / alpha` bits per
//! key (12.6 at f = 12 and 95% load) because slots are bit-packed: a 12-bit fingerprint costs
//! 12 bits, not 16.
//!
//! # Deletion caveat
//! [`Cuckoo::remove_hash`] removes one copy of the key's fingerprint from either candidate
//! bucket. Only remove keys that were inserted: removing a key that was never inserted but whose
//! fingerprint and buckets collide with an inserted key's removes *that* key's fingerprint and
//! creates a false negative for it. Duplicates are stored as separate copies (each insert takes a
//! slot, at most `2b = 8` copies of one fingerprint fit), so insert and remove must pair up.
//!
//! ```
//! use siftdb_filter::prelude::*;
//! use siftdb_filter::Cuckoo;
//! let mut f = Cuckoo::with_false_pos(0.002).expected_items(1000).unwrap();
//! f.insert(b"apple").unwrap();
//! assert!(f.contains(b"apple"));
//! f.remove(b"apple").unwrap();
//! ```
//!
//! Encoding (kind tag 7): docs/format.md#cuckoo.

mod layout;
mod relocate;
#[cfg(test)]
mod tests;
mod view;

pub use layout::{cuckoo_fpr, FINGERPRINT_BITS, MAX_BUCKET_LOG2, SLOTS};
pub use view::CuckooView;

use crate::envelope;
use crate::error::{FilterError, Result};
use crate::hash::hash_key;
use crate::prefetch::prefetch_read;
use crate::{Filter, FilterKind};
use layout::Geometry;
use view::Params;

/// Target load used to size a filter from a key count: `buckets = next_pow2(n / (4 * 0.95))`.
pub const SIZING_LOAD: f64 = 0.95;
/// Seed of the relocation order unless [`Cuckoo::seeded`] sets another.
pub const DEFAULT_SEED: u64 = 0xC0C0_5EED_0000_0007;

/// A cuckoo filter. See the module documentation for the theory and the deletion caveat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cuckoo {
    params: Params,
    words: Vec<u64>,
}

impl Cuckoo {
    /// An empty filter of `2^bucket_log2` buckets of four `fingerprint_bits`-bit slots.
    /// `fingerprint_bits` must be 8, 12 or 16 and `bucket_log2` at most 32 (`MAX_BUCKET_LOG2`).
    pub fn with_buckets(bucket_log2: u32, fingerprint_bits: u32) -> Result<Cuckoo> {
        let geometry =
            Geometry::new(fingerprint_bits, bucket_log2).map_err(FilterError::invalid)?;
        Ok(Cuckoo {
            params: Params { geometry, items: 0, seed: DEFAULT_SEED },
            words: vec![0; geometry.word_count() as usize],
        })
    }

    /// An empty filter with room for `n` keys at load `SIZING_LOAD` (0.95) or less: the bucket count
    /// is the next power of two of `n / (4 * 0.95)` (at least one bucket).
    pub fn with_capacity(n: u64, fingerprint_bits: u32) -> Result<Cuckoo> {
        Cuckoo::with_buckets(bucket_log2_for(n)?, fingerprint_bits)
    }

    /// A builder that picks the fingerprint width for a target FPR; finish with
    /// [`CuckooBuilder::expected_items`].
    pub fn with_false_pos(fpr: f64) -> CuckooBuilder {
        CuckooBuilder { fpr, seed: DEFAULT_SEED }
    }

    /// This filter with another relocation seed. The seed only chooses among kick paths (so it
    /// decides the exact bytes after relocations); probes do not depend on it.
    pub fn seeded(mut self, seed: u64) -> Cuckoo {
        self.params.seed = seed;
        self
    }

    /// Adds a key hash's fingerprint. When neither candidate bucket has a free slot and no kick
    /// path exists within the search budget, returns [`FilterError::Full`] with the filter
    /// exactly as it was. Inserting the same hash again stores another copy.
    pub fn insert_hash(&mut self, hash: u64) -> Result<()> {
        let g = self.params.geometry;
        let fp = g.fingerprint(hash);
        let i1 = g.index(hash);
        let i2 = g.alt(i1, fp);
        for b in [i1, i2] {
            let v = g.read(self.words.as_slice(), b);
            if let Some(lane) = g.find(v, 0) {
                g.write(&mut self.words, b, g.with_lane(v, lane, fp));
                self.params.items += 1;
                return Ok(());
            }
        }
        let Some(path) = relocate::find_path(&g, &self.words, self.params.seed, i1, i2) else {
            return Err(FilterError::Full(format!(
                "cuckoo filter: no free slot within {} buckets of the key ({} of {} slots used)",
                relocate::MAX_NODES,
                self.params.items,
                g.slots()
            )));
        };
        relocate::apply(&g, &mut self.words, &path);
        let (b, lane) = path[0];
        let v = g.read(self.words.as_slice(), b);
        g.write(&mut self.words, b, g.with_lane(v, lane, fp));
        self.params.items += 1;
        Ok(())
    }

    /// [`Cuckoo::insert_hash`] of [`hash_key`]`(key)`.
    pub fn insert(&mut self, key: &[u8]) -> Result<()> {
        self.insert_hash(hash_key(key))
    }

    /// Removes one copy of the hash's fingerprint from its first candidate bucket holding one, else
    /// from the second. If neither holds it, returns [`FilterError::InvalidArgument`] and changes
    /// nothing. See the module documentation: removing a never-inserted key may remove another
    /// key's colliding fingerprint.
    pub fn remove_hash(&mut self, hash: u64) -> Result<()> {
        let g = self.params.geometry;
        let fp = g.fingerprint(hash);
        let i1 = g.index(hash);
        for b in [i1, g.alt(i1, fp)] {
            let v = g.read(self.words.as_slice(), b);
            if let Some(lane) = g.find(v, fp) {
                g.write(&mut self.words, b, g.with_lane(v, lane, 0));
                self.params.items -= 1;
                return Ok(());
            }
        }
        Err(FilterError::invalid("cuckoo filter: fingerprint to remove is not present"))
    }

    /// [`Cuckoo::remove_hash`] of [`hash_key`]`(key)`.
    pub fn remove(&mut self, key: &[u8]) -> Result<()> {
        self.remove_hash(hash_key(key))
    }

    /// Fingerprints stored, counting duplicates.
    pub fn len(&self) -> u64 {
        self.params.items
    }

    /// True when no fingerprint is stored.
    pub fn is_empty(&self) -> bool {
        self.params.items == 0
    }

    /// Total slots, `4 * buckets`: an upper bound on [`Cuckoo::len`], reached only in theory.
    pub fn capacity(&self) -> u64 {
        self.params.geometry.slots()
    }

    /// `len / capacity`.
    pub fn load_factor(&self) -> f64 {
        self.params.items as f64 / self.capacity() as f64
    }

    /// Fingerprint width in bits.
    pub fn fingerprint_bits(&self) -> u32 {
        self.params.geometry.fp_bits
    }

    /// Number of buckets (a power of two).
    pub fn bucket_count(&self) -> u64 {
        self.params.geometry.buckets()
    }

    /// The relocation seed.
    pub fn seed(&self) -> u64 {
        self.params.seed
    }

    /// The FPR the layout predicts at the current load ([`cuckoo_fpr`]).
    pub fn theoretical_fpr(&self) -> f64 {
        cuckoo_fpr(self.fingerprint_bits(), self.load_factor())
    }

    /// Reads a serialized cuckoo filter into an owned one (copies the table; use [`CuckooView`]
    /// to probe in place). Besides the view's checks, the item count must equal the number of
    /// occupied slots.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn from_bytes(bytes: &[u8]) -> Result<Cuckoo> {
        let view = CuckooView::parse(&envelope::decode_kind(bytes, FilterKind::Cuckoo)?)?;
        let f = Cuckoo { params: view.params, words: view.words.to_vec() };
        let g = f.params.geometry;
        let used: u64 =
            (0..g.buckets()).map(|b| g.occupied(g.read(f.words.as_slice(), b)) as u64).sum();
        if used != f.params.items {
            return Err(FilterError::corruption(
                format!("cuckoo params: items {} but {used} slots occupied", f.params.items),
                Some(envelope::HEADER_LEN as u64),
            ));
        }
        Ok(f)
    }
}

/// log2 of the bucket count [`Cuckoo::with_capacity`] uses for `n` keys.
fn bucket_log2_for(n: u64) -> Result<u32> {
    let buckets = (n as f64 / (SLOTS as f64 * SIZING_LOAD)).ceil().max(1.0);
    if buckets > (1u64 << MAX_BUCKET_LOG2) as f64 {
        return Err(FilterError::invalid(format!(
            "{n} keys need more than 2^{MAX_BUCKET_LOG2} cuckoo buckets"
        )));
    }
    Ok((buckets as u64).next_power_of_two().trailing_zeros())
}

/// Sizes a cuckoo filter from a target FPR; see [`Cuckoo::with_false_pos`].
#[derive(Debug, Clone, Copy)]
pub struct CuckooBuilder {
    fpr: f64,
    seed: u64,
}

impl CuckooBuilder {
    /// Uses `seed` for the relocation order.
    pub fn seed(mut self, seed: u64) -> CuckooBuilder {
        self.seed = seed;
        self
    }

    /// The fingerprint width the builder chooses for `n` keys: the smallest of 8, 12, 16 whose
    /// [`cuckoo_fpr`] at the load `n` keys give the sized table is at most the target.
    pub fn fingerprint_bits_for(&self, n: u64) -> Result<u32> {
        let p = self.fpr;
        if !(p.is_finite() && p > 0.0 && p < 1.0) {
            return Err(FilterError::invalid(format!("false-positive rate {p} is not in (0, 1)")));
        }
        let slots = (1u64 << bucket_log2_for(n)?) * SLOTS as u64;
        let alpha = n.max(1) as f64 / slots as f64;
        FINGERPRINT_BITS.into_iter().find(|&f| cuckoo_fpr(f, alpha) <= p).ok_or_else(|| {
            FilterError::invalid(format!(
                "false-positive rate {p} is below {:.3e}, the cuckoo filter's rate with 16-bit \
                 fingerprints at load {alpha:.3}",
                cuckoo_fpr(16, alpha)
            ))
        })
    }

    /// An empty filter sized for `n` keys ([`Cuckoo::with_capacity`]) with the chosen width.
    pub fn expected_items(self, n: u64) -> Result<Cuckoo> {
        let bits = self.fingerprint_bits_for(n)?;
        Ok(Cuckoo::with_capacity(n, bits)?.seeded(self.seed))
    }
}

impl Filter for Cuckoo {
    #[inline]
    fn contains_hash(&self, hash: u64) -> bool {
        self.params.geometry.probe(self.words.as_slice(), hash)
    }

    fn contains_batch(&self, hashes: &[u64], out: &mut Vec<bool>) {
        let g = &self.params.geometry;
        view::batch(
            g,
            hashes,
            out,
            |b| prefetch_read(&self.words[g.word_of(b)]),
            |h| self.contains_hash(h),
        );
    }

    fn kind(&self) -> FilterKind {
        FilterKind::Cuckoo
    }

    fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn to_bytes(&self) -> Vec<u8> {
        envelope::encode(FilterKind::Cuckoo, &self.params.write(), |out| {
            envelope::write_words(&self.words, out)
        })
    }
}
