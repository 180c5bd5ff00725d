//! The filters' own cost model: bits per key for an FPR, and the FPR at a number of bits per
//! key, for each kind and set size, from the false-positive formulas and each layout's sizing
//! rule. The engine's filter planning (Monkey allocation, the per-level budget) and the
//! FPR it reports for a built filter are written against these, so a filter's cost is stated in
//! one place: here, beside the filter.
//!
//! The formulas the planning and the measurement tools need are public below; the rest of
//! `math` (the Poisson mixture behind them) stays private.

pub use crate::math::{
    binomial_sigma, blocked_bloom_fpr, blocked_optimal_probes, split_block_fpr, standard_bloom_fpr,
    standard_optimal_probes,
};

use crate::ribbon::BUMPED_RIBBON_SINGLE_LAYER_KEYS;
use crate::sizing::BloomShape;
use crate::xor::fuse_slots_per_key;
use crate::{BlockedBloom, FilterKind, StandardBloom, TwoBitBloom};

impl FilterKind {
    /// Bits per key the kind spends per bit of `log2(1/FPR)` in large sets (the `c` of
    /// design.md#monkey in the repository), for the kinds whose size follows the FPR that way:
    /// 1.05 for Ribbon (its slot overhead at about 10^5..10^7 keys), 1.01 for bumped Ribbon (its
    /// measured 8.01-8.09 bits per key at `2^-8`), `1/ln 2 = 1.44` for the standard Bloom
    /// filter, 1.5 for the blocked Bloom filter (its 9.9 bits/key at 1%), the binary fuse
    /// layouts' slots per key (1.125 3-wise, 1.075 4-wise) and the xor filter's 1.23. `None` for
    /// the kinds whose size is not chosen from an FPR this way (two-bit, counting, scalable,
    /// split-block, cuckoo, grafite).
    pub fn bits_per_log2(self) -> Option<f64> {
        Some(match self {
            FilterKind::Ribbon => 1.05,
            FilterKind::BumpedRibbon => 1.01,
            FilterKind::StandardBloom => std::f64::consts::LOG2_E,
            FilterKind::BlockedBloom => 1.5,
            FilterKind::BinaryFuse8 | FilterKind::BinaryFuse16 => 1.125,
            FilterKind::BinaryFuse4Wise8
            | FilterKind::BinaryFuse4Wise16
            | FilterKind::PackedBinaryFuse => 1.075,
            FilterKind::Xor8 | FilterKind::Xor16 => 1.23,
            _ => return None,
        })
    }

    /// [`FilterKind::bits_per_log2`] for filters of `keys` keys each: the binary fuse kinds'
    /// slots per key, from their sizing formula (1.22 for the 4-wise layout at 9,000 keys, 1.13
    /// at 100,000, 1.077 at a million); for bumped Ribbon, Ribbon's 1.05 up to 4,096 keys (one
    /// standard layer), then `1.01 + 270 / keys` (1.040 at 9,000 keys, 1.013 at 100,000); the
    /// other kinds' constants, which hold at every size. A `keys` that is not finite gives the
    /// large-set constant.
    pub fn bits_per_log2_at(self, keys: f64) -> Option<f64> {
        let c = self.bits_per_log2()?;
        Some(match self {
            _ if !keys.is_finite() => c,
            FilterKind::BinaryFuse8 | FilterKind::BinaryFuse16 => fuse_slots_per_key(keys, 3),
            FilterKind::BinaryFuse4Wise8
            | FilterKind::BinaryFuse4Wise16
            | FilterKind::PackedBinaryFuse => fuse_slots_per_key(keys, 4),
            // A bumped ribbon of this few keys is one standard ribbon layer; above, the last
            // layer's spare slots and the encoding's fixed bytes cost about 270 slots' worth
            // (measured, fractional FPRs, envelope included: 1.039 at 9,100 keys, 1.017 at
            // 100,000).
            FilterKind::BumpedRibbon if keys <= BUMPED_RIBBON_SINGLE_LAYER_KEYS as f64 => 1.05,
            FilterKind::BumpedRibbon => c + 270.0 / keys,
            _ => c,
        })
    }

    /// The FPR a filter of this kind was built for, from its bits per key and key count: the
    /// Bloom layouts' formulas at their probe count for those bits, Ribbon's `2^(-b / c)`, the
    /// fixed `2^-w` of the 8- and 16-bit fingerprint kinds, and the packed fuse filter's width
    /// as its sizing rounds it. `None` for the kinds without such a curve (counting, scalable,
    /// split-block, cuckoo, grafite). Clamped to `[0, 1]`.
    pub fn fpr_at(self, bits_per_key: f64, keys: u64) -> Option<f64> {
        let b = bits_per_key;
        let fpr = match self {
            FilterKind::TwoBitBloom => <TwoBitBloom as BloomShape>::theoretical_fpr(b, 2),
            FilterKind::BlockedBloom => <BlockedBloom as BloomShape>::theoretical_fpr(
                b,
                <BlockedBloom as BloomShape>::probes_for_bits_per_key(b),
            ),
            FilterKind::StandardBloom => <StandardBloom as BloomShape>::theoretical_fpr(
                b,
                <StandardBloom as BloomShape>::probes_for_bits_per_key(b),
            ),
            FilterKind::Ribbon | FilterKind::BumpedRibbon => 2f64.powf(-b / self.bits_per_log2()?),
            FilterKind::BinaryFuse8 | FilterKind::BinaryFuse4Wise8 | FilterKind::Xor8 => {
                1.0 / 256.0
            }
            FilterKind::BinaryFuse16 | FilterKind::BinaryFuse4Wise16 | FilterKind::Xor16 => {
                1.0 / 65536.0
            }
            FilterKind::PackedBinaryFuse => {
                let slots_per_key = fuse_slots_per_key(keys.max(1) as f64, 4);
                2f64.powf(-(b / slots_per_key).round().clamp(1.0, 32.0))
            }
            _ => return None,
        };
        Some(fpr.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use crate::rng::SplitMix64;
    use crate::{FilterKind, PackedBinaryFuse};

    #[test]
    fn fpr_at_follows_each_kinds_curve() {
        let ribbon = FilterKind::Ribbon.fpr_at(10.5, 1000).unwrap();
        assert!((ribbon - 2f64.powi(-10)).abs() < 1e-12);
        assert_eq!(FilterKind::BinaryFuse8.fpr_at(9.0, 1000), Some(1.0 / 256.0));
        assert_eq!(FilterKind::Xor16.fpr_at(20.0, 1000), Some(1.0 / 65536.0));
        assert_eq!(FilterKind::Cuckoo.fpr_at(12.0, 1000), None);
        // The packed filter's width from its bits per key and key count, as built.
        let keys = SplitMix64::new(6).hashes(9000);
        for w in [3, 9, 14] {
            let f = PackedBinaryFuse::build(&keys, w).unwrap();
            let fpr = FilterKind::PackedBinaryFuse.fpr_at(f.bits_per_key(), 9000);
            assert_eq!(fpr, Some(f.fpr()), "w {w}");
        }
        // The two-bit filter: falls with memory, far above a Bloom filter's at 16 bits/key.
        let two_bit = |b| FilterKind::TwoBitBloom.fpr_at(b, 1000).unwrap();
        assert!(two_bit(8.0) > two_bit(16.0) && two_bit(16.0) > two_bit(32.0));
        assert!(two_bit(16.0) > 10.0 * FilterKind::BlockedBloom.fpr_at(16.0, 1000).unwrap());
    }

    #[test]
    fn bits_per_log2_at_reaches_the_large_set_constant() {
        let c = |k: FilterKind, n: f64| k.bits_per_log2_at(n).unwrap();
        assert_eq!(c(FilterKind::BumpedRibbon, 1000.0), c(FilterKind::Ribbon, 1000.0));
        assert!((c(FilterKind::BumpedRibbon, 1e5) - 1.0127).abs() < 1e-9);
        assert_eq!(c(FilterKind::Xor8, f64::INFINITY), 1.23);
        assert!(c(FilterKind::PackedBinaryFuse, 9000.0) > c(FilterKind::PackedBinaryFuse, 1e6));
        assert_eq!(FilterKind::Cuckoo.bits_per_log2_at(1e5), None);
    }
}
