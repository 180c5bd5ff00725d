//! db_bench's key and value generation, so the same flags mean the same work in both tools.
//!
//! Keys (RocksDB `GenerateKeyFromInt` with `keys_per_prefix = 0`): the low `min(key_size, 8)`
//! bytes of the key number in big-endian order, then `'0'` bytes up to `key_size`. Keys
//! therefore sort in numeric order. `readmissing` runs `readrandom` with `key_size + 1`: the
//! key of an existing number plus one `'0'` byte, which sorts right after that key, so misses
//! land inside the SSTs' key ranges and only a filter can reject them without a block read.
//!
//! Values (RocksDB `RandomGenerator` with the default `compression_ratio = 0.5`): a 1 MiB pool
//! of 100-byte pieces, each 50 random printable bytes repeated twice, so a block compresses to
//! about half; values are successive slices of the pool. Compression then has the same work to
//! do in both engines.

use siftdb::filter::rng::SplitMix64;

/// Writes the db_bench key of number `v` into `out` (cleared first).
pub fn make_key(v: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let fill = key_size.min(8);
    for i in 0..fill {
        out.push((v >> ((fill - i - 1) * 8)) as u8);
    }
    out.resize(key_size, b'0');
}

/// The value source: slices of a compressible pool, as db_bench's `RandomGenerator`.
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    /// A pool seeded by `seed`, large enough for values of `value_size` bytes.
    pub fn new(seed: u64, value_size: usize) -> ValueGen {
        let mut rng = SplitMix64::new(seed ^ 0x5eed_7a1e);
        let target = (1 << 20).max(value_size);
        let mut data = Vec::with_capacity(target + 100);
        while data.len() < target {
            // One 100-byte piece: 50 random printable bytes, repeated (compression ratio 0.5).
            let raw: Vec<u8> = (0..50).map(|_| b' ' + rng.below(95) as u8).collect();
            data.extend_from_slice(&raw);
            data.extend_from_slice(&raw);
        }
        ValueGen { data, pos: 0 }
    }

    /// The next value of `len` bytes.
    pub fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_big_endian_padded_with_ascii_zero() {
        let mut k = Vec::new();
        make_key(0x0102, 16, &mut k);
        assert_eq!(&k[..8], &[0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(&k[8..], b"00000000");
        make_key(0x0102, 4, &mut k);
        assert_eq!(k, vec![0, 0, 1, 2]);
        // Numeric order is key order, and the readmissing key sorts right after its base key.
        let (mut a, mut b, mut m) = (Vec::new(), Vec::new(), Vec::new());
        make_key(255, 16, &mut a);
        make_key(256, 16, &mut b);
        make_key(255, 17, &mut m);
        assert!(a < m && m < b);
    }
}
