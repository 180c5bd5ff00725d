//! Key hashing and hash-to-range reduction shared by every filter.
//!
//! A key is hashed exactly once, with XXH3-64 ([`hash_key`]); every filter takes that 64-bit hash
//! (`insert_hash` / `contains_hash`). The engine therefore hashes a key once per `get` and probes
//! the filter of every level with the same value. Filters that need more independent bits than
//! one 64-bit hash offers derive them with [`mix64`], a bijective finaliser, so no entropy is lost.

use xxhash_rust::xxh3::xxh3_64;

/// The hash every siftdb filter is built on: XXH3-64 with the default secret and seed 0.
///
/// Changing this function changes every persisted filter; it is part of the format
/// (docs/format.md#filter-hashing).
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    xxh3_64(key)
}

/// Hashes every key of a slice; convenience for building static filters and batch probes.
pub fn hash_keys<K: AsRef<[u8]>>(keys: &[K]) -> Vec<u64> {
    keys.iter().map(|k| hash_key(k.as_ref())).collect()
}

/// Maps a 64-bit hash uniformly onto `0..n` without a division (Lemire's multiply-shift
/// "fastrange"). Uses the high bits of `h`, so callers that also take low bits of the same hash
/// for another purpose get nearly independent values.
#[inline]
pub fn fast_range64(h: u64, n: u64) -> u64 {
    ((h as u128 * n as u128) >> 64) as u64
}

/// 32-bit fastrange: maps `h` uniformly onto `0..n`.
#[inline]
pub fn fast_range32(h: u32, n: u32) -> u32 {
    ((h as u64 * n as u64) >> 32) as u32
}

/// A bijective 64-bit mixer (the MurmurHash3 `fmix64` finaliser) applied to `h + seed`.
///
/// Used to re-randomise a key hash under a seed: static filters retry their construction with a
/// new seed, and Bloom filters derive a second, independent probe stride. Being a bijection, it
/// maps distinct key hashes to distinct outputs for a fixed seed.
#[inline]
pub fn mix64(h: u64, seed: u64) -> u64 {
    let mut x = h.wrapping_add(seed);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_key_is_xxh3_with_seed_zero() {
        // Reference value from the xxHash test vectors: XXH3_64bits("") = 0x2D06800538D394C2.
        assert_eq!(hash_key(b""), 0x2D06_8005_38D3_94C2);
    }

    #[test]
    fn fast_range_stays_in_range_and_covers_ends() {
        assert_eq!(fast_range64(0, 10), 0);
        assert_eq!(fast_range64(u64::MAX, 10), 9);
        assert_eq!(fast_range32(u32::MAX, 7), 6);
        for h in [1u64, 1 << 40, u64::MAX / 3] {
            assert!(fast_range64(h, 1000) < 1000);
        }
    }

    #[test]
    fn mix64_is_a_bijection_on_a_sample() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..10_000u64 {
            assert!(seen.insert(mix64(i, 7)));
        }
    }
}
