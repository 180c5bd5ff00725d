//! The probe filter of a hash join, built from the build side's distinct keys.
//!
//! * Exact IN-list (sorted keys, binary search) when the build side is small: no false
//!   positives, and the same keys drive chunk-filter skipping.
//! * [`TwoBitBloom`] (Floe): a fixed-size table of 32-bit words, two bits per key in one word,
//!   filled by several threads at once with `insert_hash_atomic` (one relaxed `fetch_or` per key,
//!   no lock): the way a parallel build pipeline fills it. Sized at `bits_per_key` times the
//!   build count before any thread starts (24 bits/key gives about 1%, the blocked formula).
//! * [`BlockedBloom`]: 512-bit blocks, sized from the build count for the target FPR.
//!
//! Keys are hashed with [`key_hash`], a bijective mixer of the `u64` key (keys are already
//! integers; XXH3 of their bytes would cost more for no better spread).

use crate::error::Result;
use crate::filter::hash::mix64;
use crate::filter::{BlockedBloom, BloomShape, Filter, InsertFilter, TwoBitBloom};

/// Seed of [`key_hash`].
const KEY_SEED: u64 = 0x6a6f_696e_6b65_7931;

/// The probe-filter hash of a join key.
#[inline]
pub fn key_hash(key: u64) -> u64 {
    mix64(key, KEY_SEED)
}

/// Which probe filter a join builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterChoice {
    /// An IN-list when the build side has at most `in_list_max` distinct keys, else a
    /// [`TwoBitBloom`] filled in parallel.
    Auto,
    /// Always an exact IN-list.
    InList,
    /// Always a [`TwoBitBloom`].
    TwoBit,
    /// Always a [`BlockedBloom`].
    Blocked,
}

/// A built probe filter.
pub(crate) enum ProbeFilter {
    InList(Vec<u64>),
    TwoBit(TwoBitBloom),
    Blocked(BlockedBloom),
}

impl ProbeFilter {
    /// Builds the filter over distinct `keys` (any order).
    pub(crate) fn build(
        keys: &[u64],
        choice: FilterChoice,
        in_list_max: usize,
        two_bit_bits_per_key: f64,
        blocked_fpr: f64,
        threads: usize,
    ) -> Result<ProbeFilter> {
        let choice = match choice {
            FilterChoice::Auto if keys.len() <= in_list_max => FilterChoice::InList,
            FilterChoice::Auto => FilterChoice::TwoBit,
            c => c,
        };
        Ok(match choice {
            FilterChoice::InList | FilterChoice::Auto => {
                let mut v = keys.to_vec();
                v.sort_unstable();
                ProbeFilter::InList(v)
            }
            FilterChoice::TwoBit => {
                let bits = (keys.len().max(1) as f64 * two_bit_bits_per_key).ceil() as u64;
                let f = TwoBitBloom::new(bits.max(64))?;
                let per = keys.len().div_ceil(threads.max(1)).max(1);
                std::thread::scope(|s| {
                    for part in keys.chunks(per) {
                        let f = &f;
                        s.spawn(move || {
                            for &k in part {
                                f.insert_hash_atomic(key_hash(k));
                            }
                        });
                    }
                });
                f.set_keys_inserted(keys.len() as u64);
                ProbeFilter::TwoBit(f)
            }
            FilterChoice::Blocked => {
                let mut f =
                    BlockedBloom::with_false_pos(blocked_fpr).expected_items(keys.len() as u64)?;
                for &k in keys {
                    f.insert_hash(key_hash(k));
                }
                ProbeFilter::Blocked(f)
            }
        })
    }

    /// May `key` be on the build side? `false` is certain.
    #[inline]
    pub(crate) fn contains(&self, key: u64) -> bool {
        match self {
            ProbeFilter::InList(v) => v.binary_search(&key).is_ok(),
            ProbeFilter::TwoBit(f) => f.contains_hash(key_hash(key)),
            ProbeFilter::Blocked(f) => f.contains_hash(key_hash(key)),
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ProbeFilter::InList(_) => "in_list",
            ProbeFilter::TwoBit(_) => "two_bit_bloom",
            ProbeFilter::Blocked(_) => "blocked_bloom",
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        match self {
            ProbeFilter::InList(v) => (v.len() * 8) as u64,
            ProbeFilter::TwoBit(f) => f.memory_bytes() as u64,
            ProbeFilter::Blocked(f) => f.memory_bytes() as u64,
        }
    }

    /// The theoretical FPR at the filter's load (0 for the exact list).
    pub(crate) fn configured_fpr(&self) -> f64 {
        match self {
            ProbeFilter::InList(_) => 0.0,
            ProbeFilter::TwoBit(f) => f.theoretical_fpr(),
            ProbeFilter::Blocked(f) => f.theoretical_fpr(),
        }
    }
}
