//! A read-prefetch hint used by the batch operations of the Bloom family.
//!
//! Batch lookups compute every key's probe position first, ask the CPU to start loading those
//! cache lines, and only then probe, so several cache misses are in flight at once instead of one
//! after another (the "bulk" mode of Boost.Bloom 1.90). Point lookups prefetch from a
//! [`ProbeHint`] kept beside each open table.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Hints the CPU to bring the cache line holding `*ptr` into cache. Never faults, never changes
/// program state; a no-op on targets without a prefetch instruction.
#[inline(always)]
pub fn prefetch_read<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `_mm_prefetch` is a pure hint. It does not dereference the pointer in the
        // language sense and cannot fault even on an invalid address; SSE is part of the x86_64
        // baseline, so the intrinsic is always available.
        unsafe {
            core::arch::x86_64::_mm_prefetch(ptr as *const i8, core::arch::x86_64::_MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ptr;
    }
}

/// Where a filter's probe of a hash reads, as plain numbers copied out of an open filter, for
/// kinds whose probe position is arithmetic on a few parameters (Ribbon, and the first layer
/// of bumped Ribbon, the default filter of compaction outputs; other kinds have none). Kept beside a table-cache slot
/// ([`SharedProbeHint`]), it lets a point lookup start loading the filter lines as soon as it
/// has found the file, before it has walked from the file to its open table and its filter.
/// Only ever used for prefetch hints: a stale hint (its filter since freed) costs a wasted
/// load, never a wrong answer or a fault. Only this crate makes hints ([`crate::FilterView::probe_hint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeHint {
    /// A Ribbon filter's words (at address `base`), seed and layout; for a bumped Ribbon
    /// filter, its first layer's, with where that layer's bumping thresholds are.
    #[non_exhaustive]
    Ribbon {
        /// Address of the filter's first word.
        base: usize,
        /// The filter's hash seed.
        seed: u64,
        /// Blocks of the solution.
        num_blocks: u64,
        /// First block with `lower_columns + 1` columns.
        upper_start_block: u64,
        /// Columns of the blocks below `upper_start_block`.
        lower_columns: u32,
        /// A bumped Ribbon's first layer (followed by another): the address of its threshold
        /// words and its `bucket_log2` (2 bits a bucket of `2^bucket_log2` starts). A probe
        /// reads the key's threshold word before the solution: a separate line, as often
        /// missed at scale.
        thresholds: Option<(usize, u32)>,
    },
}

impl ProbeHint {
    /// Starts loading the lines a probe of `hash` reads (a hint only).
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) {
        let ProbeHint::Ribbon {
            base,
            seed,
            num_blocks,
            upper_start_block,
            lower_columns,
            thresholds,
        } = *self;
        let layout = (num_blocks, upper_start_block, lower_columns);
        super::ribbon::prefetch_hinted(base, seed, layout, hash, thresholds)
    }
}

/// A [`ProbeHint`] (or none) that one thread sets and others read, in relaxed atomics: a read
/// racing a `set` may mix the old and new numbers, which [`ProbeHint::prefetch`] tolerates (it
/// validates the layout and only prefetches).
#[derive(Debug, Default)]
pub struct SharedProbeHint {
    /// Bits 0-7: the kind (`HINT_*`); bits 8-15: the thresholds' `bucket_log2` (0: none);
    /// bits 32-63: `lower_columns`.
    kind: AtomicU64,
    /// `base`, `seed`, `num_blocks`, `upper_start_block`, the thresholds' address.
    words: [AtomicU64; 5],
}

const HINT_NONE: u64 = 0;
const HINT_RIBBON: u64 = 1;

impl SharedProbeHint {
    /// Replaces the hint.
    pub fn set(&self, hint: Option<ProbeHint>) {
        let (kind, words) = match hint {
            None => (HINT_NONE, [0; 5]),
            Some(ProbeHint::Ribbon {
                base,
                seed,
                num_blocks,
                upper_start_block,
                lower_columns,
                thresholds,
            }) => {
                // bucket_log2 is 7..=16 for a bumped Ribbon: 0 says there are no thresholds.
                let (meta, bucket_log2) = thresholds.unwrap_or((0, 0));
                let packed = HINT_RIBBON
                    | u64::from(bucket_log2 & 0xff) << 8
                    | u64::from(lower_columns) << 32;
                (packed, [base as u64, seed, num_blocks, upper_start_block, meta as u64])
            }
        };
        // The kind last: a reader that sees it sees a hint of that kind (maybe mixed with an
        // older one of the same kind, which is harmless).
        self.kind.store(HINT_NONE, Relaxed);
        for (w, v) in self.words.iter().zip(words) {
            w.store(v, Relaxed);
        }
        self.kind.store(kind, Relaxed);
    }

    /// The hint as it is now (see the type's documentation for a read racing `set`).
    #[inline(always)]
    pub fn load(&self) -> Option<ProbeHint> {
        let w = |i: usize| self.words[i].load(Relaxed);
        let packed = self.kind.load(Relaxed);
        if packed & 0xff != HINT_RIBBON {
            return None;
        }
        let bucket_log2 = (packed >> 8) as u8 as u32;
        Some(ProbeHint::Ribbon {
            base: w(0) as usize,
            seed: w(1),
            num_blocks: w(2),
            upper_start_block: w(3),
            lower_columns: (packed >> 32) as u32,
            thresholds: (bucket_log2 != 0).then(|| (w(4) as usize, bucket_log2)),
        })
    }

    /// Prefetches the lines a probe of `hash` reads, by the hint; false if there is none.
    #[inline(always)]
    pub fn prefetch(&self, hash: u64) -> bool {
        match self.load() {
            Some(hint) => {
                hint.prefetch(hash);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;
    use crate::rng::SplitMix64;
    use crate::{hash_key, ribbon, BlockedBloom, FilterView, Ribbon};

    #[test]
    fn a_ribbon_view_gives_a_hint_that_round_trips_through_the_shared_slot() {
        let keys: Vec<u64> = (0..5000u64).map(|i| hash_key(&i.to_le_bytes())).collect();
        let bytes = Ribbon::build(&keys).unwrap().to_bytes();
        let view = FilterView::parse(&bytes).unwrap();
        let hint = view.probe_hint().expect("a non-empty ribbon filter has a hint");
        let ProbeHint::Ribbon { base, num_blocks, lower_columns, thresholds, .. } = hint;
        assert_eq!(thresholds, None, "a standard ribbon has no thresholds");
        assert!(bytes.as_ptr_range().contains(&(base as *const u8)), "base inside the filter");
        assert!(num_blocks > 0 && (1..=32).contains(&lower_columns));
        let shared = SharedProbeHint::default();
        assert_eq!(shared.load(), None);
        assert!(!shared.prefetch(keys[0]), "no hint, no prefetch");
        shared.set(Some(hint));
        assert_eq!(shared.load(), Some(hint));
        for &k in &keys {
            assert!(shared.prefetch(k));
            assert!(view.contains_hash(k), "a hint never changes an answer");
        }
        shared.set(None);
        assert_eq!(shared.load(), None);
        // A bumped ribbon's hint is its first layer's: its solution and thresholds, inside its
        // bytes, round-tripping through the shared slot.
        let bumped = crate::BumpedRibbon::build(&keys).unwrap().to_bytes();
        let bview = FilterView::parse(&bumped).unwrap();
        let hint = bview.probe_hint().expect("non-empty: a hint");
        let ProbeHint::Ribbon { base, thresholds: Some((meta, bucket_log2)), .. } = hint else {
            panic!("5000 keys take more than one layer, whose thresholds are hinted: {hint:?}")
        };
        let inside = |a: usize| bumped.as_ptr_range().contains(&(a as *const u8));
        assert!(inside(base) && inside(meta), "solution and thresholds inside the filter");
        assert!((7..=16).contains(&bucket_log2));
        shared.set(Some(hint));
        assert_eq!(shared.load(), Some(hint));
        assert!(keys.iter().all(|&k| shared.prefetch(k) && bview.contains_hash(k)));
        shared.set(None);
        // Up to the last layer's size, one layer: the hint is a ribbon's.
        let small = crate::BumpedRibbon::build(&keys[..100]).unwrap().to_bytes();
        let hint = FilterView::parse(&small).unwrap().probe_hint();
        assert!(matches!(hint, Some(ProbeHint::Ribbon { thresholds: None, .. })), "{hint:?}");
        // Other kinds have none.
        let mut bloom = BlockedBloom::with_false_pos(0.01).expected_items(5000).unwrap();
        keys.iter().for_each(|&h| bloom.insert_hash(h));
        assert_eq!(FilterView::parse(&bloom.to_bytes()).unwrap().probe_hint(), None);
    }

    #[test]
    fn any_numbers_in_a_hint_cost_a_prefetch_at_most_never_a_panic() {
        // A torn or stale hint: arbitrary layouts (valid or not) at arbitrary addresses.
        let mut rng = SplitMix64::new(17);
        let mut valid_layouts = 0u32;
        for i in 0..100_000u64 {
            let pick = |r: &mut SplitMix64, small: u64| {
                if i % 2 == 0 {
                    r.next_u64()
                } else {
                    r.below(small)
                }
            };
            let (base, seed) = (rng.next_u64() as usize, rng.next_u64());
            let num_blocks = pick(&mut rng, 1 << 33);
            let upper_start_block = pick(&mut rng, 1 << 33);
            let lower_columns = pick(&mut rng, 40) as u32;
            let hint = |thresholds| ProbeHint::Ribbon {
                base,
                seed,
                num_blocks,
                upper_start_block,
                lower_columns,
                thresholds,
            };
            hint(None).prefetch(rng.next_u64());
            let (meta, bucket_log2) = (rng.next_u64() as usize, pick(&mut rng, 80) as u32);
            let bumped = hint(Some((meta, bucket_log2)));
            bumped.prefetch(rng.next_u64());
            // Through the shared slot, whose packing keeps 8 bits of `bucket_log2`.
            let shared = SharedProbeHint::default();
            shared.set(Some(bumped));
            shared.prefetch(rng.next_u64());
            let valid = ribbon::hint_layout_valid(num_blocks, upper_start_block, lower_columns);
            valid_layouts += u32::from(valid.expect("the inline check agrees with validate()"));
        }
        // Odd rounds draw small numbers, a tenth of which make valid layouts (num_blocks within
        // 2^32: 1/2; upper_start_block within num_blocks: 1/4; 1..=32 columns: 4/5): ~5,000.
        assert!(valid_layouts > 2_000, "{valid_layouts} valid layouts");
    }
}
