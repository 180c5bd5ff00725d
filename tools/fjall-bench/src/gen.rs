//! Key, value and random-number generation identical to siftdb's `src/rng.rs` (SplitMix64) and
//! `src/bin/siftdb/bench/keys.rs` (db_bench keys, compressible values). Duplicated (a few lines)
//! so this crate builds without compiling siftdb; `scripts/compare.sh` checks that the found
//! counts of both tools agree, which they only do if the generators are identical.

/// SplitMix64 (Steele, Lea, Flood 2014), as `siftdb::rng::SplitMix64`.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// db_bench key: low min(key_size, 8) bytes of `v` big-endian, then '0' bytes.
pub fn make_key(v: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let fill = key_size.min(8);
    for i in 0..fill {
        out.push((v >> ((fill - i - 1) * 8)) as u8);
    }
    out.resize(key_size, b'0');
}

/// Slices of a 1 MiB pool of 100-byte pieces, each 50 random printable bytes twice.
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    pub fn new(seed: u64, value_size: usize) -> ValueGen {
        let mut rng = SplitMix64::new(seed ^ 0x5eed_7a1e);
        let target = (1 << 20).max(value_size);
        let mut data = Vec::with_capacity(target + 100);
        while data.len() < target {
            let raw: Vec<u8> = (0..50).map(|_| b' ' + rng.below(95) as u8).collect();
            data.extend_from_slice(&raw);
            data.extend_from_slice(&raw);
        }
        ValueGen { data, pos: 0 }
    }
    pub fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }
}
