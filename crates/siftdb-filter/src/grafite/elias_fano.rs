//! The Elias-Fano sequence that stores a Grafite filter's sorted codes, and the one query the
//! filter needs of it: "does some code lie in `[u, v]`?". Layout in docs/format.md#grafite.
//!
//! # Representation
//! `m` strictly increasing codes below the universe `r` are split at `l` bits: the low `l` bits of
//! code `i` are packed at bit `i * l` of the low words (crossing word boundaries); its high part
//! `c >> l` sets bit `(c >> l) + i` of the high bitvector. The high bitvector therefore holds `m`
//! ones and `Z = ((r - 1) >> l) + 1` zeros (one per possible high value, every bucket ending in a
//! zero), `m + Z` bits in all, and its last bit is a zero. With `l = floor(log2(r / m))`,
//! `Z <= 2m`: about `l + 2` bits per code.
//!
//! Bucket `h` (the codes whose high part is `h`) is the run of ones between zero `h - 1` and zero
//! `h`; its codes have indices `[select0(h - 1) - h + 1, select0(h) - h)`. A table holds the
//! position of every [`SAMPLE_EVERY`]th zero, so `select0` is one table read plus a scan over at
//! most [`SAMPLE_EVERY`] zeros (about 8 words when codes and zeros alternate).
//!
//! # Safety of queries
//! The reader checks the popcount, the zero last bit, the zero padding and every sample against
//! the bitvector (`validate_high`), so every scan below stops inside the words: `select0(k)` is
//! asked only for `k < Z`, and `next_zero(p)` only for a `p` at or before an existing zero.

use crate::envelope::Words;

/// Zeros of the high bitvector between two select samples.
pub(super) const SAMPLE_EVERY: u64 = 256;

/// The lengths of a sequence, all derived from the code count, the universe and `l`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// `m`, the number of (distinct) codes.
    pub codes: u64,
    /// `l`, the low bits per code (0..=63).
    pub low_bits: u32,
    /// `m + Z`, the length of the high bitvector in bits (0 for the empty sequence).
    pub high_bits: u64,
    /// Width of a stored select sample: 32 when every position fits, else 64.
    pub sample_bits: u32,
}

impl Shape {
    /// The shape of `codes` codes below `universe` at `low_bits`, or `None` if a length
    /// overflows. The empty sequence has no high bits at all.
    pub fn new(codes: u64, universe: u64, low_bits: u32) -> Option<Shape> {
        let high_bits = if codes == 0 {
            0
        } else {
            let zeros = (universe.checked_sub(1)? >> low_bits).checked_add(1)?;
            codes.checked_add(zeros)?
        };
        let sample_bits = if high_bits <= 1 << 32 { 32 } else { 64 };
        Some(Shape { codes, low_bits, high_bits, sample_bits })
    }

    /// `Z`, zeros of the high bitvector (= possible high parts).
    pub fn zeros(&self) -> u64 {
        self.high_bits - self.codes
    }

    /// Stored select samples: `ceil(Z / 256)`.
    pub fn num_samples(&self) -> u64 {
        self.zeros().div_ceil(SAMPLE_EVERY)
    }

    /// u64 words of packed low bits: `ceil(m l / 64)`, `None` on overflow.
    pub fn low_words(&self) -> Option<u64> {
        Some(self.codes.checked_mul(self.low_bits as u64)?.div_ceil(64))
    }

    /// u64 words of the high bitvector.
    pub fn high_words(&self) -> u64 {
        self.high_bits.div_ceil(64)
    }

    /// u64 words of the sample table (two u32 samples per word at 32 bits).
    pub fn sample_words(&self) -> u64 {
        if self.sample_bits == 32 {
            self.num_samples().div_ceil(2)
        } else {
            self.num_samples()
        }
    }
}

/// An owned, freshly built sequence.
#[derive(Debug)]
pub(super) struct Built {
    pub shape: Shape,
    pub low: Vec<u64>,
    pub high: Vec<u64>,
    pub samples: Vec<u64>,
}

/// Encodes strictly increasing `codes`, all below `universe`, with `low_bits` low bits each.
pub(super) fn build(codes: &[u64], universe: u64, low_bits: u32) -> Built {
    let m = codes.len() as u64;
    let shape = Shape::new(m, universe, low_bits).expect("in-memory code count fits");
    let mut low = vec![0u64; shape.low_words().expect("in-memory code count fits") as usize];
    let mut high = vec![0u64; shape.high_words() as usize];
    let mask = low_mask(low_bits);
    for (i, &c) in codes.iter().enumerate() {
        debug_assert!(c < universe && (i == 0 || codes[i - 1] < c));
        if low_bits > 0 {
            let bit = i as u64 * low_bits as u64;
            let (w, off) = ((bit / 64) as usize, (bit % 64) as u32);
            low[w] |= (c & mask) << off;
            if off + low_bits > 64 {
                low[w + 1] |= (c & mask) >> (64 - off);
            }
        }
        let pos = (c >> low_bits) + i as u64;
        high[(pos / 64) as usize] |= 1 << (pos % 64);
    }
    let mut samples = vec![0u64; shape.sample_words() as usize];
    for_each_sample(&high[..], shape.high_bits, |j, pos| {
        if shape.sample_bits == 32 {
            samples[(j / 2) as usize] |= pos << (32 * (j % 2));
        } else {
            samples[j as usize] = pos;
        }
    });
    Built { shape, low, high, samples }
}

/// Calls `f(j, position)` for zero number `256 j` of the high bitvector, for every `j` in order;
/// returns the number of calls. Bits at or past `high_bits` are not part of the vector.
fn for_each_sample<T: Words<u64> + ?Sized>(
    high: &T,
    high_bits: u64,
    mut f: impl FnMut(u64, u64),
) -> u64 {
    let (mut zeros_before, mut next, mut j) = (0u64, 0u64, 0u64);
    for idx in 0..high.word_count() {
        let valid = high_bits.saturating_sub(idx as u64 * 64).min(64) as u32;
        let zero_bits = !high.word(idx) & low_mask(valid);
        let here = zero_bits.count_ones() as u64;
        while next < zeros_before + here {
            f(j, idx as u64 * 64 + select_in_word(zero_bits, (next - zeros_before) as u32) as u64);
            j += 1;
            next += SAMPLE_EVERY;
        }
        zeros_before += here;
    }
    j
}

/// Checks a high bitvector and its samples read from disk: `m` ones, a zero last bit, zero
/// padding, and each stored sample equal to the position it must hold. `Err` names the field.
#[deny(clippy::unwrap_used, clippy::indexing_slicing)]
pub(super) fn validate_high<T: Words<u64> + ?Sized>(
    shape: &Shape,
    high: &T,
    samples: &T,
) -> Result<(), String> {
    if shape.high_bits == 0 {
        return Ok(());
    }
    let words = high.word_count();
    let tail = (shape.high_bits % 64) as u32;
    if tail != 0 && high.word(words - 1) & !low_mask(tail) != 0 {
        return Err("high bitvector padding bits are not zero".into());
    }
    let ones: u64 = (0..words).map(|i| high.word(i).count_ones() as u64).sum();
    if ones != shape.codes {
        return Err(format!("high bitvector popcount {ones} != num_codes {}", shape.codes));
    }
    let last = shape.high_bits - 1;
    if high.word((last / 64) as usize) >> (last % 64) & 1 != 0 {
        return Err("high bitvector does not end in a zero".into());
    }
    let seq = Seq { shape, low: samples, high, samples };
    let mut bad = None;
    let count = for_each_sample(high, shape.high_bits, |j, pos| {
        if bad.is_none() && seq.sample(j) != pos {
            bad = Some(format!("select sample {j} is {}, the bitvector says {pos}", seq.sample(j)));
        }
    });
    if let Some(e) = bad {
        return Err(e);
    }
    debug_assert_eq!(count, shape.num_samples());
    // Unused upper half of the last 32-bit sample word.
    if shape.sample_bits == 32 && shape.num_samples() % 2 == 1 {
        let w = samples.word(samples.word_count() - 1);
        if w >> 32 != 0 {
            return Err("select sample padding is not zero".into());
        }
    }
    Ok(())
}

/// A sequence over borrowed words: `[u64]` for the owned filter, `LeWords` for the view.
pub(super) struct Seq<'s, T: ?Sized> {
    pub shape: &'s Shape,
    pub low: &'s T,
    pub high: &'s T,
    pub samples: &'s T,
}

impl<T: Words<u64> + ?Sized> Seq<'_, T> {
    /// Whether some code `c` has `u <= c <= v` (`u <= v`).
    pub fn any_in(&self, u: u64, v: u64) -> bool {
        let z = self.shape.zeros();
        let l = self.shape.low_bits;
        let (hu, mut hv) = (u >> l, v >> l);
        let (ul, mut vl) = (u & low_mask(l), v & low_mask(l));
        if self.shape.codes == 0 || hu >= z {
            return false;
        }
        if hv >= z {
            // No code has a high part past the last bucket: clip to it.
            (hv, vl) = (z - 1, low_mask(l));
        }
        let (b0, b1) = self.bucket(hu);
        if hu == hv {
            let i = self.lower_bound(b0, b1, ul);
            return i < b1 && self.low(i) <= vl;
        }
        // Bucket hu's largest code is >= u; or a bucket strictly between holds a code; or bucket
        // hv's smallest code is <= v.
        if b1 > b0 && self.low(b1 - 1) >= ul {
            return true;
        }
        // A short range mostly ends in the next bucket, which starts just past bucket hu's
        // terminating zero (at bit b1 + hu): no second select (the select was a fifth of an
        // empty-range scan's time in a profile).
        let (c0, c1) = if hv == hu + 1 { self.bucket_at(hv, b1 + hu + 1) } else { self.bucket(hv) };
        c0 > b1 || (c1 > c0 && self.low(c0) <= vl)
    }

    /// Element indices `[start, end)` of bucket `h` (`h < Z`).
    fn bucket(&self, h: u64) -> (u64, u64) {
        self.bucket_at(h, if h == 0 { 0 } else { self.select0(h - 1) + 1 })
    }

    /// Element indices `[start, end)` of bucket `h`, whose first bit is `first` in `high`.
    fn bucket_at(&self, h: u64, first: u64) -> (u64, u64) {
        let end = self.next_zero(first);
        (first - h, end - h)
    }

    /// First index in `[lo, hi)` whose low part is `>= x` (`hi` if none); lows are sorted
    /// within a bucket.
    fn lower_bound(&self, mut lo: u64, mut hi: u64, x: u64) -> u64 {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.low(mid) < x {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The low `l` bits of code `i` (`i < m`).
    fn low(&self, i: u64) -> u64 {
        let l = self.shape.low_bits;
        if l == 0 {
            return 0;
        }
        let bit = i * l as u64;
        let (w, off) = ((bit / 64) as usize, (bit % 64) as u32);
        let mut v = self.low.word(w) >> off;
        if off + l > 64 {
            v |= self.low.word(w + 1) << (64 - off);
        }
        v & low_mask(l)
    }

    /// Stored position of zero number `256 j`.
    fn sample(&self, j: u64) -> u64 {
        if self.shape.sample_bits == 32 {
            (self.samples.word((j / 2) as usize) >> (32 * (j % 2))) & 0xFFFF_FFFF
        } else {
            self.samples.word(j as usize)
        }
    }

    /// Position of zero number `k` (`k < Z`).
    fn select0(&self, k: u64) -> u64 {
        let pos = self.sample(k / SAMPLE_EVERY);
        let mut rem = k % SAMPLE_EVERY; // zeros to skip; the sampled one is number 0
        let mut idx = (pos / 64) as usize;
        let mut zeros = !self.high.word(idx) & (!0u64 << (pos % 64));
        loop {
            let c = zeros.count_ones() as u64;
            if rem < c {
                return idx as u64 * 64 + select_in_word(zeros, rem as u32) as u64;
            }
            rem -= c;
            idx += 1;
            zeros = !self.high.word(idx);
        }
    }

    /// Position of the first zero at or after `pos` (one must exist).
    fn next_zero(&self, pos: u64) -> u64 {
        let mut idx = (pos / 64) as usize;
        let mut zeros = !self.high.word(idx) & (!0u64 << (pos % 64));
        while zeros == 0 {
            idx += 1;
            zeros = !self.high.word(idx);
        }
        idx as u64 * 64 + zeros.trailing_zeros() as u64
    }
}

/// The low `bits` bits set (`bits <= 64`).
fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        !0
    } else {
        (1u64 << bits) - 1
    }
}

/// Position of the set bit of rank `r` (0-based) in `w`; `r < popcount(w)`.
fn select_in_word(mut w: u64, mut r: u32) -> u32 {
    let mut base = 0;
    for half in [32u32, 16, 8] {
        let c = (w & low_mask(half)).count_ones();
        if r >= c {
            r -= c;
            w >>= half;
            base += half;
        }
    }
    for _ in 0..r {
        w &= w - 1;
    }
    base + w.trailing_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn select_in_word_finds_every_rank() {
        let mut rng = SplitMix64::new(5);
        for _ in 0..2000 {
            let w = rng.next_u64() & rng.next_u64();
            let positions: Vec<u32> = (0..64).filter(|&b| w >> b & 1 == 1).collect();
            for (r, &p) in positions.iter().enumerate() {
                assert_eq!(select_in_word(w, r as u32), p, "{w:#x} rank {r}");
            }
        }
    }

    #[test]
    fn any_in_agrees_with_a_scan_of_the_codes() {
        let mut rng = SplitMix64::new(6);
        for round in 0..60 {
            let universe = 1 + rng.below(if round % 3 == 0 { 5000 } else { 1 << 40 });
            let m = 1 + rng.below(universe.min(3000));
            let mut codes: Vec<u64> = (0..m).map(|_| rng.below(universe)).collect();
            if round % 4 == 0 {
                // A dense run: one bucket holds many codes.
                let start = rng.below(universe);
                codes.extend((start..universe.min(start + 700)).collect::<Vec<_>>());
            }
            codes.sort_unstable();
            codes.dedup();
            let l = 63 - (universe / codes.len() as u64).leading_zeros();
            let b = build(&codes, universe, l);
            validate_high(&b.shape, &b.high[..], &b.samples[..]).unwrap();
            let seq = Seq {
                shape: &b.shape,
                low: &b.low[..],
                high: &b.high[..],
                samples: &b.samples[..],
            };
            for _ in 0..300 {
                let u = rng.below(universe);
                let reach = universe >> rng.below(20);
                let v = (u + rng.below(1 + reach)).min(universe - 1);
                let i = codes.partition_point(|&c| c < u);
                let truth = i < codes.len() && codes[i] <= v;
                assert_eq!(seq.any_in(u, v), truth, "round {round} [{u}, {v}] l {l}");
            }
        }
    }
}
