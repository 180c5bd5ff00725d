//! Prefix extractors: how [`crate::Options::prefix_extractor`] maps a key to the prefix its
//! table's prefix filter holds (design.md#scan-filters).
//!
//! A prefix filter may skip a file only for a range all of whose keys have one extracted
//! prefix; the contract on [`PrefixExtractor`] is what lets the engine decide that from the
//! range's bounds alone, so a scan returns the same keys with prefix filters on or off.

use std::fmt::Debug;

/// Maps a key to its prefix (RocksDB's `SliceTransform`), or to none (the key is out of the
/// extractor's domain and adds nothing to a prefix filter).
///
/// # Contract
/// 1. `prefix(k)`, when `Some(p)`, is a leading slice of `k`.
/// 2. Every key that starts with such a `p` has the prefix `p` too.
///
/// Rule 2 is what RocksDB's prefix seek lacks ("a longstanding known design flaw", its PR
/// 13026): with it, every key of a range whose lower bound has prefix `p` and whose upper
/// bound also starts with `p` (or is the first key past all keys starting with `p`) has prefix
/// `p`, so a filter that says "no `p` here" proves the file holds no key of the range. A fixed
/// length and "up to and including the first delimiter" both satisfy it; "up to the last
/// delimiter" does not. An extractor that breaks it can make scans miss keys.
///
/// [`PrefixExtractor::name`] is stored in every table whose prefix filter it built; a table
/// written under another name (the extractor changed) is read without its prefix filter, never
/// with a wrong answer. Change the name whenever the mapping changes.
pub trait PrefixExtractor: Send + Sync + Debug {
    /// A stable name for this mapping (recorded in each table's properties).
    fn name(&self) -> &str;
    /// The key's prefix, a leading slice of `key`, or `None` when `key` is out of the domain.
    fn prefix<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]>;
}

/// The first `n` bytes of keys at least `n` bytes long (RocksDB's `NewFixedPrefixTransform`);
/// shorter keys are out of the domain. Name `siftdb.FixedPrefix.<n>`.
#[derive(Debug, Clone)]
pub struct FixedPrefix {
    len: usize,
    name: String,
}

impl FixedPrefix {
    /// Prefixes of `len` bytes (`len >= 1`; 0 is treated as 1).
    pub fn new(len: usize) -> FixedPrefix {
        let len = len.max(1);
        FixedPrefix { len, name: format!("siftdb.FixedPrefix.{len}") }
    }
}

impl PrefixExtractor for FixedPrefix {
    fn name(&self) -> &str {
        &self.name
    }

    fn prefix<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        key.get(..self.len)
    }
}

/// Everything up to and including the first `delimiter` byte (`"user/"` of `"user/42/name"`);
/// keys without the delimiter are out of the domain. Name `siftdb.DelimitedPrefix.<byte>`.
#[derive(Debug, Clone)]
pub struct DelimitedPrefix {
    delimiter: u8,
    name: String,
}

impl DelimitedPrefix {
    /// Prefixes ending at the first `delimiter`.
    pub fn new(delimiter: u8) -> DelimitedPrefix {
        DelimitedPrefix { delimiter, name: format!("siftdb.DelimitedPrefix.{delimiter}") }
    }
}

impl PrefixExtractor for DelimitedPrefix {
    fn name(&self) -> &str {
        &self.name
    }

    fn prefix<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        key.iter().position(|&b| b == self.delimiter).map(|i| &key[..=i])
    }
}

/// The prefix every user key in a range has, if the contract of [`PrefixExtractor`] proves
/// there is one: the lower bound's prefix `p`, when the upper bound starts with `p` too or is
/// exactly the first key past every key starting with `p` (an exclusive `prefix_successor`).
/// `lower` and `upper` are the range's bound keys (either inclusive or exclusive: the answer
/// holds for both).
pub(crate) fn common_prefix<'k>(
    extractor: &dyn PrefixExtractor,
    lower: &'k [u8],
    upper: &[u8],
    upper_excluded: bool,
) -> Option<&'k [u8]> {
    let p = extractor.prefix(lower)?;
    let successor_of_p = upper_excluded && is_successor(p, upper);
    (upper.starts_with(p) || successor_of_p).then_some(p)
}

/// The smallest key greater than every key starting with `prefix`, or `None` if there is none
/// (the prefix is empty or all 0xFF).
pub(crate) fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let n = successor_len(prefix)?;
    let mut s = prefix[..n].to_vec();
    s[n - 1] += 1;
    Some(s)
}

/// Whether `key == successor(prefix)`, without building it.
fn is_successor(prefix: &[u8], key: &[u8]) -> bool {
    match successor_len(prefix) {
        Some(n) => {
            key.len() == n && key[..n - 1] == prefix[..n - 1] && key[n - 1] == prefix[n - 1] + 1
        }
        None => false,
    }
}

/// The length of [`successor`]`(prefix)`: it is `prefix[..n]` with its last byte (not 0xFF)
/// increased by one. `None` when every byte is 0xFF.
pub(crate) fn successor_len(prefix: &[u8]) -> Option<usize> {
    prefix.iter().rposition(|&b| b != 0xFF).map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_delimited_prefixes() {
        let f = FixedPrefix::new(4);
        assert_eq!(f.prefix(b"user/1"), Some(&b"user"[..]));
        assert_eq!(f.prefix(b"usr"), None);
        assert_eq!(f.name(), "siftdb.FixedPrefix.4");
        let d = DelimitedPrefix::new(b'/');
        assert_eq!(d.prefix(b"user/42/name"), Some(&b"user/"[..]));
        assert_eq!(d.prefix(b"nodelim"), None);
    }

    #[test]
    fn a_range_has_a_common_prefix_only_when_both_bounds_prove_it() {
        let f = FixedPrefix::new(4);
        // Both bounds start with "user".
        assert_eq!(common_prefix(&f, b"user/1", b"user/9", false), Some(&b"user"[..]));
        // A prefix scan of "user": upper = successor("user") = "uses", excluded.
        assert_eq!(common_prefix(&f, b"user", b"uses", true), Some(&b"user"[..]));
        // The same upper bound included would admit "uses" itself: not provable.
        assert_eq!(common_prefix(&f, b"user", b"uses", false), None);
        // Bounds in different prefixes.
        assert_eq!(common_prefix(&f, b"user/1", b"zone/1", false), None);
        // Lower bound out of the domain.
        assert_eq!(common_prefix(&f, b"us", b"user", false), None);
        assert_eq!(successor(b"ab\xff"), Some(b"ac".to_vec()));
        assert_eq!(successor(b"\xff\xff"), None);
    }

    #[test]
    fn successor_len_and_is_successor_agree_with_successor() {
        let long = [7u8; 70];
        for p in [&b""[..], b"a", b"ab\xff", b"\xff\xff", b"a\xff\xff", b"\x00", &long] {
            let s = successor(p);
            assert_eq!(successor_len(p), s.as_ref().map(Vec::len), "{p:?}");
            let near = s.clone().map(|mut k| {
                k.push(0); // one byte longer
                k
            });
            for k in [s.clone(), near, Some(p.to_vec()), Some(b"zz".to_vec())].into_iter().flatten()
            {
                assert_eq!(is_successor(p, &k), s.as_deref() == Some(&k[..]), "{p:?} {k:?}");
            }
        }
    }
}
