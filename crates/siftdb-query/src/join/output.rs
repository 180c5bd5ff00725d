//! Join plumbing: the hash-table hasher, the per-cell checksum hash and the output accumulator.

use crate::column::Value;
use crate::schema::ColumnType;
use siftdb::filter::hash::mix64;
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
    match v {
        Value::Null => numeric_cell_hash(ColumnType::U64, None, col),
        Value::U64(x) => numeric_cell_hash(ColumnType::U64, Some(*x), col),
        Value::I64(x) => numeric_cell_hash(ColumnType::I64, Some(*x as u64), col),
        Value::F64(x) => numeric_cell_hash(ColumnType::F64, Some(x.to_bits()), col),
        Value::Bytes(b) => mix64(siftdb::filter::hash_key(b), col as u64 + 11),
    }
}

/// [`cell_hash`] of a numeric cell of type `ty` given as its stored bits (`None`: null), so
/// a column is hashed from its gathered bits without building [`Value`]s.
#[inline]
pub(crate) fn numeric_cell_hash(ty: ColumnType, bits: Option<u64>, col: usize) -> u64 {
    let h = match (bits, ty) {
        (None, _) => 0x9e37_79b9_7f4a_7c15,
        (Some(x), ColumnType::U64) => mix64(x, 1),
        (Some(x), ColumnType::I64) => mix64(x, 2),
        (Some(x), _) => mix64(x, 3),
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
