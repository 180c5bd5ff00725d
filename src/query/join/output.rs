//! Join plumbing: the hash-table hasher, the per-cell checksum hash and the output accumulator.

use crate::filter::hash::mix64;
use crate::query::column::Value;
use std::hash::Hasher;

/// A `Hasher` for `u64` keys: one bijective mix, far cheaper than SipHash.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix64(self.0 ^ b as u64, 1);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = mix64(k, 0x51_7cc1_b727_220a);
    }
}

/// Hash of one cell for the checksum.
pub(crate) fn cell_hash(v: &Value, col: usize) -> u64 {
    let h = match v {
        Value::Null => 0x9e37_79b9_7f4a_7c15,
        Value::U64(x) => mix64(*x, 1),
        Value::I64(x) => mix64(*x as u64, 2),
        Value::F64(x) => mix64(x.to_bits(), 3),
        Value::Bytes(b) => crate::filter::hash_key(b),
    };
    mix64(h, col as u64 + 11)
}

/// Accumulates joined rows.
pub(crate) struct Output {
    pub(crate) rows: u64,
    pub(crate) checksum: u64,
    pub(crate) pairs: Vec<(u64, u64)>,
    pub(crate) collect: bool,
}

impl Output {
    /// Emits probe row `prow` (row hash `ph`) joined with every build row in the chain `head`.
    #[inline]
    pub(crate) fn emit(&mut self, prow: u64, ph: u64, head: u32, next: &[u32], bhash: &[u64]) {
        let mut b = head;
        while b != u32::MAX {
            self.rows += 1;
            self.checksum =
                self.checksum.wrapping_add(mix64(ph ^ bhash[b as usize].rotate_left(17), 9));
            if self.collect {
                self.pairs.push((prow, b as u64));
            }
            b = next[b as usize];
        }
    }
}
