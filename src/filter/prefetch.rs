//! A read-prefetch hint used by the batch operations of the Bloom family.
//!
//! Batch lookups compute every key's probe position first, ask the CPU to start loading those
//! cache lines, and only then probe, so several cache misses are in flight at once instead of one
//! after another (the "bulk" mode of Boost.Bloom 1.90).

/// Hints the CPU to bring the cache line holding `*ptr` into cache. Never faults, never changes
/// program state; a no-op on targets without a prefetch instruction.
#[inline(always)]
pub fn prefetch_read<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `_mm_prefetch` is a pure hint. It does not dereference the pointer in the
        // language sense and cannot fault even on an invalid address; SSE is part of the x86_64
        // baseline, so the intrinsic is always available.
        unsafe {
            core::arch::x86_64::_mm_prefetch(ptr as *const i8, core::arch::x86_64::_MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = ptr;
    }
}
