//! The probe filter of a hash join, built from the build side's distinct keys.
//!
//! * Exact IN-list when the build side is small: no false positives, and the same keys drive
//!   chunk-filter skipping. The keys sit in an open-addressing table at most a quarter full
//!   (linear probing: about 1.4 slots read per absent key), so a probe costs a few
//!   nanoseconds; a binary search over 1,000 sorted keys took longer than the hash-table lookup
//!   the filter exists to save.
//! * [`TwoBitBloom`] (Floe): a fixed-size table of 32-bit words, two bits per key in one word,
//!   filled by several threads at once with `insert_hash_atomic` (one relaxed `fetch_or` per key,
//!   no lock): the way a parallel build pipeline fills it. Sized at `bits_per_key` times the
//!   build count before any thread starts (24 bits/key gives about 1%, the blocked formula).
//! * [`BlockedBloom`]: 512-bit blocks, sized from the build count for the target FPR.
//!
//! Keys are hashed with [`key_hash`], a bijective mixer of the `u64` key (keys are already
//! integers; XXH3 of their bytes would cost more for no better spread).

use siftdb::filter::hash::mix64;
use siftdb::filter::{BlockedBloom, BloomShape, Filter, InsertFilter, TwoBitBloom};
use siftdb::Result;

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

/// An exact set of `u64` keys: open addressing with linear probing, at most a quarter full,
/// behind a one-bit-per-hash bitmap of 64 bits per key (a one-hash Bloom filter, about 1.5%
/// false positives) that rejects most absent keys without a branch the CPU mispredicts.
pub(crate) struct KeySet {
    /// `EMPTY` marks a free slot; the key `EMPTY` itself is kept in `has_empty`.
    slots: Vec<u64>,
    mask: usize,
    has_empty: bool,
    /// Bit `key_hash(k) >> bitmap_shift` is set for every key `k`.
    bitmap: Vec<u64>,
    bitmap_shift: u32,
}

const EMPTY: u64 = u64::MAX;

impl KeySet {
    fn new(keys: &[u64]) -> KeySet {
        let cap = (keys.len() * 4).next_power_of_two().max(16);
        let bitmap_bits = (keys.len() * 64).next_power_of_two().max(4096);
        let mut set = KeySet {
            slots: vec![EMPTY; cap],
            mask: cap - 1,
            has_empty: false,
            bitmap: vec![0; bitmap_bits / 64],
            bitmap_shift: 64 - bitmap_bits.trailing_zeros(),
        };
        for &k in keys {
            let bit = key_hash(k) >> set.bitmap_shift;
            set.bitmap[(bit / 64) as usize] |= 1 << (bit % 64);
            if k == EMPTY {
                set.has_empty = true;
                continue;
            }
            let mut i = key_hash(k) as usize & set.mask;
            while set.slots[i] != EMPTY && set.slots[i] != k {
                i = (i + 1) & set.mask;
            }
            set.slots[i] = k;
        }
        set
    }

    /// Whether the bitmap may hold `k` (no false negatives).
    #[inline]
    fn may_contain(&self, k: u64) -> bool {
        let bit = key_hash(k) >> self.bitmap_shift;
        self.bitmap[(bit / 64) as usize] >> (bit % 64) & 1 == 1
    }

    #[inline]
    fn contains(&self, k: u64) -> bool {
        if !self.may_contain(k) {
            return false;
        }
        if k == EMPTY {
            return self.has_empty;
        }
        let mut i = key_hash(k) as usize & self.mask;
        loop {
            match self.slots[i] {
                s if s == k => return true,
                EMPTY => return false,
                _ => i = (i + 1) & self.mask,
            }
        }
    }
}

/// A built probe filter.
pub(crate) enum ProbeFilter {
    InList(KeySet),
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
            FilterChoice::InList | FilterChoice::Auto => ProbeFilter::InList(KeySet::new(keys)),
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
            ProbeFilter::InList(set) => set.contains(key),
            ProbeFilter::TwoBit(f) => f.contains_hash(key_hash(key)),
            ProbeFilter::Blocked(f) => f.contains_hash(key_hash(key)),
        }
    }

    /// Appends to `out` the index of every key of `keys` the filter may hold: one loop per
    /// filter kind, so the per-key dispatch of [`ProbeFilter::contains`] is paid once a batch.
    pub(crate) fn select(&self, keys: &[u64], out: &mut Vec<u32>) {
        fn run(keys: &[u64], out: &mut Vec<u32>, f: impl Fn(u64) -> bool) {
            for (j, &k) in keys.iter().enumerate() {
                if f(k) {
                    out.push(j as u32);
                }
            }
        }
        match self {
            ProbeFilter::InList(set) => {
                // The bitmap first, branch-free (every index is written, the length advances
                // on a hit), then the exact check on the few that pass.
                let start = out.len();
                out.resize(start + keys.len(), 0);
                let mut len = start;
                for (j, &k) in keys.iter().enumerate() {
                    out[len] = j as u32;
                    len += usize::from(set.may_contain(k));
                }
                out.truncate(len);
                let mut kept = start;
                for r in start..len {
                    let j = out[r];
                    if set.contains(keys[j as usize]) {
                        out[kept] = j;
                        kept += 1;
                    }
                }
                out.truncate(kept);
            }
            ProbeFilter::TwoBit(f) => run(keys, out, |k| f.contains_hash(key_hash(k))),
            ProbeFilter::Blocked(f) => run(keys, out, |k| f.contains_hash(key_hash(k))),
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
            ProbeFilter::InList(set) => (set.slots.len() * 8 + set.bitmap.len() * 8) as u64,
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
