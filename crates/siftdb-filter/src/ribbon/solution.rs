//! The solution side of a ribbon filter: the interleaved layout of the solution `Z`, the
//! derivation of a key's row from its hash, back-substitution from the banded system into `Z`,
//! and the query.
//!
//! # Interleaved layout
//! The `m = 128 * B` slots are cut into `B` blocks of 128 consecutive slots. Block `b` stores
//! `cols(b)` units of 128 bits, one per result column: bit `t` of unit `j` of block `b` is
//! `Z[128 b + t][j]`. Blocks `0..U` (`U` = `upper_start_block`) have `k` columns (the "lower"
//! count), blocks `U..B` have `k + 1`. Units are stored block after block, columns in order, each
//! as two u64 words (low half first). Lower blocks come first so that a key starting in the last
//! lower block and spilling into the first upper block reads only columns both blocks have.
//!
//! The exact byte layout is in docs/format.md#ribbon.

use crate::envelope::{LeWords, Words};
use crate::hash::{fast_range64, mix64};
use crate::prefetch::prefetch_read;

/// Width of a coefficient row in slots, and of a block.
pub(super) const W: u64 = 128;
/// Seeds of the two re-mixes that expand a key's mixed hash into its 128-bit coefficient row.
const COEFF_LO_SEED: u64 = 0x0C0E_FF10_0000_0001;
const COEFF_HI_SEED: u64 = 0x0C0E_FF10_0000_0002;
/// Most blocks a filter may have (2^39 slots), so every offset computation fits a u64.
pub(super) const MAX_BLOCKS: u64 = 1 << 32;

/// Shape of the solution: block count and column mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `B`: blocks of 128 slots. Zero only for the empty filter.
    pub num_blocks: u64,
    /// `U`: first block with `lower_columns + 1` columns (`U == B`: none has).
    pub upper_start_block: u64,
    /// `k`: columns (result bits) of blocks `0..U`.
    pub lower_columns: u32,
}

impl Layout {
    /// Checks the invariants every other method relies on; `Err` names the violated one.
    #[deny(clippy::unwrap_used, clippy::indexing_slicing)]
    pub fn validate(&self) -> Result<(), String> {
        if self.num_blocks > MAX_BLOCKS {
            return Err(format!("num_blocks {} exceeds 2^32", self.num_blocks));
        }
        if self.upper_start_block > self.num_blocks {
            return Err(format!(
                "upper_start_block {} exceeds num_blocks {}",
                self.upper_start_block, self.num_blocks
            ));
        }
        if !(1..=32).contains(&self.lower_columns) {
            return Err(format!("lower_columns {} is not in 1..=32", self.lower_columns));
        }
        if self.upper_columns() > 32 {
            return Err("upper blocks would need 33 result columns".to_string());
        }
        Ok(())
    }

    /// `validate().is_ok()`, inlined and without building a message (the probe-hint path
    /// checks every hint it reads).
    #[inline(always)]
    pub fn is_valid(&self) -> bool {
        self.num_blocks <= MAX_BLOCKS
            && self.upper_start_block <= self.num_blocks
            && (1..=32).contains(&self.lower_columns)
            && self.upper_columns() <= 32
    }

    /// Result columns of blocks `U..B` (equal to the lower count when there are none).
    pub fn upper_columns(&self) -> u32 {
        self.lower_columns + u32::from(self.upper_start_block < self.num_blocks)
    }

    /// Slots `m = 128 B`.
    pub fn num_slots(&self) -> u64 {
        self.num_blocks * W
    }

    /// Possible start positions `0..=m - 128`; zero for the empty filter.
    pub fn num_starts(&self) -> u64 {
        if self.num_blocks == 0 {
            0
        } else {
            (self.num_blocks - 1) * W + 1
        }
    }

    /// Columns stored for block `block`.
    #[inline(always)]
    pub fn columns(&self, block: u64) -> u32 {
        self.lower_columns + u32::from(block >= self.upper_start_block)
    }

    /// Index (in 128-bit units) of the first unit of `block`; `first_unit(B)` is the total.
    #[inline(always)]
    pub fn first_unit(&self, block: u64) -> u64 {
        block * self.lower_columns as u64 + block.saturating_sub(self.upper_start_block)
    }

    /// Payload length in u64 words.
    pub fn total_words(&self) -> u64 {
        2 * self.first_unit(self.num_blocks)
    }

    /// Expected false-positive rate: a non-key's start is uniform over the starts, and it
    /// passes with probability `2^-cols` of its start block.
    pub fn fpr(&self) -> f64 {
        let starts = self.num_starts();
        if starts == 0 {
            return 0.0;
        }
        let lower = (self.upper_start_block * W).min(starts);
        let k = self.lower_columns as i32;
        (lower as f64 * 0.5f64.powi(k) + (starts - lower) as f64 * 0.5f64.powi(k + 1))
            / starts as f64
    }
}

/// The row of a key: start slot, 128-bit coefficients (bit `t` multiplies slot `start + t`;
/// bit 0 always set) and 32 result bits (column `j` is bit `j`).
///
/// `h1` is the key hash re-mixed with the filter seed. The start is `fastrange(h1)`, monotone in
/// `h1`, which lets construction band keys in start order by sorting their `h1` values; the result
/// comes from the low bits of `h1` and the coefficients from two independent re-mixes, so result
/// bits are independent of the start and coefficients, which is what makes the FPR `2^-cols`.
#[inline(always)]
pub(super) fn key_row(h1: u64, num_starts: u64) -> (u64, u128, u32) {
    let start = fast_range64(h1, num_starts);
    let lo = mix64(h1, COEFF_LO_SEED) | 1;
    let hi = mix64(h1, COEFF_HI_SEED);
    (start, ((hi as u128) << 64) | lo as u128, h1 as u32)
}

/// Mask of the low `cols` bits, `1 <= cols <= 32`.
#[inline(always)]
pub(super) fn column_mask(cols: u32) -> u32 {
    u32::MAX >> (32 - cols)
}

#[inline(always)]
fn parity(x: u128) -> u32 {
    ((x as u64) ^ ((x >> 64) as u64)).count_ones() & 1
}

#[inline(always)]
fn unit<W2: Words<u64> + ?Sized>(words: &W2, unit: usize) -> u128 {
    words.word(2 * unit) as u128 | ((words.word(2 * unit + 1) as u128) << 64)
}

/// Starts loading the cache lines [`probe`] reads for `hash`: the columns of the key's block
/// and, when its row spills over, of the next block (a hint; no-op for the empty filter).
#[inline(always)]
pub(super) fn prefetch(words: &LeWords<'_, u64>, layout: &Layout, seed: u64, hash: u64) {
    if let Some((first, end)) = probe_span(layout, seed, hash) {
        prefetch_lines(first, end, |w| words.ptr(w));
    }
}

/// [`prefetch`] from a probe hint's numbers (`crate::ProbeHint`): the words at
/// address `base`, which may no longer be the filter's (a stale hint, or one read torn by a
/// concurrent update). A layout that fails validation is skipped; a valid one bounds the span
/// to two blocks, so any numbers cost at most a few wasted loads, never a fault. With
/// `thresholds` (`(address, bucket_log2)` of a bumped ribbon layer's threshold words), also the
/// word holding the key's bucket's threshold, which the probe reads first.
#[inline(always)]
pub(crate) fn prefetch_at(
    base: usize,
    layout: &Layout,
    seed: u64,
    hash: u64,
    thresholds: Option<(usize, u32)>,
) {
    if !layout.is_valid() {
        return;
    }
    let Some((first, end)) = probe_span(layout, seed, hash) else { return };
    if let Some((meta, bucket_log2)) = thresholds {
        // As `bumping::threshold`: 32 buckets of 2 bits a word.
        let start = fast_range64(mix64(hash, seed), layout.num_starts());
        let word = (start >> (bucket_log2 & 63)) / 32;
        prefetch_read(meta.wrapping_add((word as usize).wrapping_mul(8)) as *const u8);
    }
    prefetch_lines(first, end, |w| base.wrapping_add(w.wrapping_mul(8)) as *const u8);
}

/// Hints the lines of words `[first, end)` (`first < end`), word `w` being at `ptr(w)`: one
/// per 64-byte line (8 words) of the span, and one for its last word.
#[inline(always)]
fn prefetch_lines(first: usize, end: usize, ptr: impl Fn(usize) -> *const u8) {
    let mut w = first;
    while w < end {
        prefetch_read(ptr(w));
        w += 8;
    }
    prefetch_read(ptr(end - 1));
}

/// The words `[first, end)` a probe of `hash` reads (`None`: the empty filter, or none).
#[inline(always)]
fn probe_span(layout: &Layout, seed: u64, hash: u64) -> Option<(usize, usize)> {
    let num_starts = layout.num_starts();
    if num_starts == 0 {
        return None;
    }
    let (start, _, _) = key_row(mix64(hash, seed), num_starts);
    let block = start / W;
    let first = 2 * layout.first_unit(block) as usize;
    // The units [first_unit(block), first_unit(block + 1) + cols) are contiguous; the next
    // block's columns follow this block's, so the span ends at most at first_unit(block + 2).
    let end = if start % W == 0 {
        2 * layout.first_unit(block + 1) as usize
    } else {
        2 * layout.first_unit(block + 2).min(layout.first_unit(layout.num_blocks)) as usize
    };
    (end > first).then_some((first, end))
}

/// Membership test shared by the owned filter and its view. `words` must hold
/// `layout.total_words()` words of a validated layout; then every index below is in bounds: a
/// start in block `b` with non-zero offset has `b + 1 < B`, and `cols(b + 1) >= cols(b)`.
#[inline(always)]
pub(super) fn probe<W2: Words<u64> + ?Sized>(
    words: &W2,
    layout: &Layout,
    seed: u64,
    hash: u64,
) -> bool {
    if layout.num_starts() == 0 {
        return false; // the empty filter holds nothing
    }
    probe_mixed(words, layout, mix64(hash, seed))
}

/// [`probe`] of a key whose hash is already mixed with the seed (`h1`), in a non-empty layout
/// (a bumped ribbon layer, which mixed it to find the key's bucket).
#[inline(always)]
pub(super) fn probe_mixed<W2: Words<u64> + ?Sized>(words: &W2, layout: &Layout, h1: u64) -> bool {
    let num_starts = layout.num_starts();
    debug_assert!(num_starts > 0);
    let (start, coeff, result) = key_row(h1, num_starts);
    let block = start / W;
    let offset = (start % W) as u32;
    let cols = layout.columns(block);
    let first = layout.first_unit(block) as usize;
    // Slot start + t is bit offset + t of this block while that is < 128, else bit
    // offset + t - 128 of the next block. At offset 0 nothing spills over: `right` is zero and
    // the block itself stands in for the next one (which may not exist).
    let left = coeff << offset;
    let (right, next) = if offset == 0 {
        (0, first)
    } else {
        (coeff >> (128 - offset), layout.first_unit(block + 1) as usize)
    };
    // All columns are computed without branching. An early exit at the first mismatching column
    // reads fewer words for non-keys but mispredicts half the time; measured, it was no faster.
    let mut got = 0u32;
    for j in 0..cols as usize {
        let z = (unit(words, first + j) & left) ^ (unit(words, next + j) & right);
        got |= parity(z) << j;
    }
    got == result & column_mask(cols)
}

/// Back-substitution: solves the banded (upper-triangular) system for every column, from the
/// last slot down, and writes `Z` in the interleaved layout.
///
/// `coeffs[i]` / `results[i]` hold the row whose leading coefficient is slot `i` (bit 0 of
/// `coeffs[i]`), or zero for a free slot, whose `Z` bits are set to 0 (in standard ribbon any
/// value is correct and the FPR does not depend on it). For each column `j`, `state[j]` holds
/// `Z[i..i + 128][j]` with bit `t = Z[i + t]`; after the 128 slots of a block it is that block's
/// unit. Column `k` (the extra upper one) is solved only over upper blocks: rows whose start lies
/// in an upper block involve only upper slots, and rows starting in lower blocks are never
/// checked against column `k`.
pub(super) fn back_substitute(coeffs: &[u128], results: &[u32], layout: &Layout) -> Vec<u64> {
    debug_assert_eq!(coeffs.len() as u64, layout.num_slots());
    let mut words = vec![0u64; layout.total_words() as usize];
    let mut state = [0u128; 32];
    for block in (0..layout.num_blocks).rev() {
        let cols = layout.columns(block) as usize;
        let base = (block * W) as usize;
        for i in (base..base + W as usize).rev() {
            let c = coeffs[i];
            let r = results[i];
            for (j, s) in state.iter_mut().enumerate().take(cols) {
                let shifted = *s << 1;
                let bit = (parity(shifted & c) ^ (r >> j)) & 1;
                *s = shifted | bit as u128;
            }
        }
        let first = layout.first_unit(block) as usize;
        for (j, s) in state.iter().enumerate().take(cols) {
            words[2 * (first + j)] = *s as u64;
            words[2 * (first + j) + 1] = (*s >> 64) as u64;
        }
    }
    words
}
