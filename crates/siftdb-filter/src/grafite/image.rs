//! The order-preserving map from byte-string keys to the u64 "images" a Grafite filter hashes,
//! and the clamping of query bounds against it (docs/format.md#grafite: "Byte-string keys").
//!
//! A filter built from sorted keys fixes a *window*: `P`, the common prefix of its first and last
//! key (at most 255 bytes, `s = len(P)`), and a width `w` in `1..=8`. Every key of the set lies
//! between the first and the last, so it starts with `P`. The image of such a key is the
//! big-endian integer of its bytes `[s, s + w)`, zero-padded on the right to `w` bytes.
//!
//! Truncating to `w` bytes and padding with zeros never reverses two keys (a shorter key that
//! is a prefix of a longer one pads with zeros, which are at most any byte), so the map is
//! monotone non-decreasing: every key `k` with `lo <= k <= hi` has
//! `image(lo) <= image(k) <= image(hi)`. That is the whole no-false-negative argument; keys that
//! differ only past `s + w` share an image, which costs false positives, never negatives.

use crate::error::{FilterError, Result};
use std::cmp::Ordering;

/// Longest common prefix `P` a window keeps (its length is stored in a u8).
pub(super) const MAX_PREFIX: usize = 255;
/// Widest window in bytes (a u64 image).
pub(super) const MAX_WIDTH: u8 = 8;

/// Picks the window of sorted `keys` (non-decreasing; duplicates allowed): `(P, w)`. `None`
/// for no keys. Unsorted input is [`FilterError::InvalidArgument`].
///
/// `w = clamp(D - s, 1, 8)` where `D = 1 +` the largest position at which two adjacent distinct
/// keys first differ: the depth that tells the set's keys apart.
pub(super) fn choose<'a>(keys: impl Iterator<Item = &'a [u8]>) -> Result<Option<(Vec<u8>, u8)>> {
    let (mut first, mut prev): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    let mut deepest: Option<usize> = None;
    for (i, key) in keys.enumerate() {
        match prev {
            None => first = Some(key),
            Some(p) => match p.cmp(key) {
                Ordering::Greater => {
                    return Err(FilterError::invalid(format!(
                        "grafite keys are not sorted: key {i} sorts before key {}",
                        i - 1
                    )))
                }
                Ordering::Equal => {}
                Ordering::Less => deepest = deepest.max(Some(common_prefix(p, key))),
            },
        }
        prev = Some(key);
    }
    let (Some(first), Some(last)) = (first, prev) else { return Ok(None) };
    let s = common_prefix(first, last).min(MAX_PREFIX);
    // Adjacent keys lie between first and last, so they agree on P and differ at >= s.
    let w = deepest.map_or(1, |d| (d + 1).saturating_sub(s).clamp(1, MAX_WIDTH as usize));
    Ok(Some((first[..s].to_vec(), w as u8)))
}

/// The image of `key` under the window `(s, w)`: bytes `[s, s + w)` big-endian, missing bytes
/// read as zero. Meaningful for keys that start with `P`.
pub(super) fn image(key: &[u8], s: usize, w: u8) -> u64 {
    let tail = key.get(s..).unwrap_or(&[]);
    (0..w as usize).fold(0u64, |v, i| v << 8 | tail.get(i).copied().unwrap_or(0) as u64)
}

/// The largest image of width `w`: `2^(8w) - 1`.
pub(super) fn max_image(w: u8) -> u64 {
    if w >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * w as u32)) - 1
    }
}

/// Where a bound lies relative to the keys that start with `P`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Before every key starting with `P` (it sorts before `P`, or is a proper prefix of it).
    Below,
    /// After every key starting with `P`.
    Above,
    /// Starts with `P`: its image is meaningful.
    Within,
}

fn side(bound: &[u8], prefix: &[u8]) -> Side {
    let k = bound.len().min(prefix.len());
    match bound[..k].cmp(&prefix[..k]) {
        Ordering::Less => Side::Below,
        Ordering::Greater => Side::Above,
        Ordering::Equal if bound.len() < prefix.len() => Side::Below,
        Ordering::Equal => Side::Within,
    }
}

/// The image range `[a, b]` that holds the image of every key `k` starting with `P` with
/// `lo <= k <= hi`, or `None` when no such key can exist.
pub(super) fn query_images(prefix: &[u8], w: u8, lo: &[u8], hi: &[u8]) -> Option<(u64, u64)> {
    let s = prefix.len();
    let a = match side(lo, prefix) {
        Side::Below => 0,
        Side::Above => return None,
        Side::Within => image(lo, s, w),
    };
    let b = match side(hi, prefix) {
        Side::Below => return None,
        Side::Above => max_image(w),
        Side::Within => image(hi, s, w),
    };
    (a <= b).then_some((a, b))
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(keys: &[&[u8]]) -> (Vec<u8>, u8) {
        choose(keys.iter().copied()).unwrap().unwrap()
    }

    #[test]
    fn db_bench_keys_map_to_their_key_numbers() {
        let key = |n: u64| {
            let mut k = n.to_be_bytes().to_vec();
            k.extend_from_slice(b"00000000");
            k
        };
        // Key numbers below 2^24 share five zero bytes; adjacent numbers 3, 4 differ in the
        // last byte of the number, so the window is its low three bytes.
        let numbers = [3u64, 4, 700, 70_000, 1 << 23];
        let keys: Vec<Vec<u8>> = numbers.map(key).to_vec();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let (p, w) = window(&refs);
        assert_eq!((p.as_slice(), w), (&[0u8; 5][..], 3));
        for n in numbers {
            assert_eq!(image(&key(n), p.len(), w), n);
        }
        // Without 4 the last byte tells no two keys apart: it is left out (3 and 4 would then
        // share an image, a false positive, never a negative).
        let (p, w) = window(&[refs[0], refs[2], refs[3], refs[4]]);
        assert_eq!((p.len(), w), (5, 2));
        assert_eq!(image(&key(700), p.len(), w), 700 >> 8);
    }

    #[test]
    fn window_rules() {
        assert_eq!(window(&[b"a", b"b"]), (vec![], 1));
        assert_eq!(window(&[b"user:0001", b"user:0002", b"user:0099"]), (b"user:00".to_vec(), 2));
        // A key that is a prefix of the next differs at its own length.
        assert_eq!(window(&[b"ab", b"ab", b"abc"]), (b"ab".to_vec(), 1));
        assert_eq!(window(&[b"same", b"same"]), (b"same".to_vec(), 1));
        // Deep differences are cut at 8 bytes.
        assert_eq!(window(&[b"k", b"k0123456789x", b"k0123456789y"]).1, 8);
        assert!(choose([&b"b"[..], b"a"].into_iter()).unwrap_err().to_string().contains("sorted"));
        assert!(choose(std::iter::empty()).unwrap().is_none());
    }

    #[test]
    fn bounds_are_clamped_against_the_prefix() {
        let p = b"m".as_slice();
        assert_eq!(query_images(p, 1, b"a", b"zz"), Some((0, 255)));
        assert_eq!(query_images(p, 1, b"", b"m"), Some((0, 0)));
        assert_eq!(query_images(p, 1, b"mb", b"n"), Some((b'b' as u64, 255)));
        assert_eq!(query_images(p, 1, b"n", b"z"), None, "lo above every key");
        assert_eq!(query_images(p, 1, b"a", b"l\xff"), None, "hi below every key");
        assert_eq!(query_images(b"mm", 1, b"a", b"m"), None, "hi a proper prefix of P");
        assert_eq!(query_images(b"mm", 1, b"m", b"mm\x05"), Some((0, 5)));
        assert_eq!(query_images(p, 2, b"mz", b"ma"), None);
        assert_eq!(max_image(8), u64::MAX);
        assert_eq!(max_image(2), 65535);
    }
}
