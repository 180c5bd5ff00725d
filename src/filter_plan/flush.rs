//! The two-bit filters of the write path: the memtable's (filled as writes arrive, sized before
//! the first write) and, at flush, whether that filter may be written as the L0 file's filter
//! as is or a filter of the planned size must be rebuilt (src/db/flush.rs's "Flush
//! filter rule").

use super::all_runs::flush_filter_bits;
use super::{l0_filter, TreeShape};
use crate::filter::prelude::*;
use crate::filter::TwoBitBloom;
use crate::options::{FilterConfig, FilterPolicy};

/// Bits of the memtable's two-bit filter for `expected` keys in a tree of `shape`, at the flush
/// filter's bits per key when that is a two-bit filter (sized as an L0 file's would be:
/// [`super::L0Filter::nearest`]), else at 16 bits per key (the memtable always filters its own
/// lookups).
pub fn memtable_filter_bits(policy: &FilterPolicy, shape: &TreeShape, expected: u64) -> u64 {
    let l0 = l0_filter(policy, shape);
    match (l0.config, l0.nearest) {
        (FilterConfig::TwoBitBloom { bits_per_key }, true) => {
            flush_filter_bits(bits_per_key, expected)
        }
        (FilterConfig::TwoBitBloom { bits_per_key }, false) => {
            ((expected as f64) * bits_per_key).ceil() as u64
        }
        _ => expected * 16,
    }
}

/// Whether a memtable's two-bit filter of `bits` bits, with FPR `estimated_fpr` estimated from
/// its bits, is the filter the plan wants for an L0 file of `distinct` keys at `bits_per_key`:
/// with `nearest`, exactly the size a rebuild would have (so also its FPR); otherwise an FPR at
/// most the configured one and at most twice the size `bits_per_key` gives for those keys (a
/// memtable of large values would otherwise carry an oversized filter to disk).
pub fn two_bit_as_planned(
    bits_per_key: f64,
    nearest: bool,
    (bits, estimated_fpr): (u64, f64),
    distinct: u64,
) -> bool {
    if nearest {
        bits == flush_filter_bits(bits_per_key, distinct)
    } else {
        let target = <TwoBitBloom as BloomShape>::theoretical_fpr(bits_per_key, 2);
        let right_size_bits = bits_per_key * distinct.max(1) as f64;
        estimated_fpr <= target && (bits as f64) <= 2.0 * right_size_bits
    }
}
