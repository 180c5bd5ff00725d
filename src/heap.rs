//! What a heap allocation really takes, for the memory charges (design.md#memory-accounting):
//! the block cache's entry charges and the bytes open tables report holding.
//!
//! A charge that counts only the bytes asked for misses the allocator's own header and rounding
//! and the `Arc` that holds the value, which for a few-KiB block is a few percent, and for the
//! small entries (top-level indexes, index partitions) much more. The model is glibc malloc's
//! (the allocator a Rust binary uses on Linux unless it installs another): a chunk is the
//! request plus an 8-byte size header, rounded up to 16 bytes, at least 32. Size-class
//! allocators (mimalloc, jemalloc) space their classes a quarter of a power of two apart above
//! a few KiB: a data block's 4.1-4.4 KiB buffer takes their 5 KiB class, about 17% more than
//! this model charges (the Python module runs on mimalloc: docs/python.md says what that means
//! for its cache); small entries stay within a few percent. `tests/cache_charges.rs` checks
//! the charges against a counting allocator.

/// Bytes a chunk for a request of `n` bytes takes from glibc malloc (0 for no allocation).
#[inline]
pub(crate) const fn alloc_bytes(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let chunk = (n + 8 + 15) & !15;
    if chunk < 32 {
        32
    } else {
        chunk
    }
}

/// Bytes the allocation of an `Arc<T>` takes: its two reference counts and the `T`.
#[inline]
pub(crate) const fn arc_bytes<T>() -> usize {
    alloc_bytes(2 * std::mem::size_of::<usize>() + std::mem::size_of::<T>())
}

/// Bytes the buffer of a vector of capacity `capacity` takes.
#[inline]
pub(crate) const fn vec_bytes<T>(capacity: usize) -> usize {
    alloc_bytes(capacity * std::mem::size_of::<T>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_add_the_header_and_round_to_sixteen_bytes() {
        assert_eq!(alloc_bytes(0), 0);
        assert_eq!(alloc_bytes(1), 32);
        assert_eq!(alloc_bytes(24), 32);
        assert_eq!(alloc_bytes(25), 48);
        assert_eq!(alloc_bytes(4096), 4112);
        assert_eq!(arc_bytes::<u64>(), 32);
        assert_eq!(vec_bytes::<u64>(512), 4112);
    }
}
