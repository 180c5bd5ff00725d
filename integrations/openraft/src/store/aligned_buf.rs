//! A heap buffer aligned for `O_DIRECT` I/O: the buffer's address must be a multiple of the
//! device's memory alignment, which no `Vec<u8>` promises.

use std::alloc::{self, Layout};

/// Alignment of every buffer: the largest logical block size of the devices this runs on (4 KiB),
/// a multiple of any `O_DIRECT` memory alignment a file system asks for.
pub(crate) const ALIGN: usize = 4096;

/// A heap buffer aligned to [`ALIGN`].
pub(crate) struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain bytes owned by its holder; a shared reference exposes none of
// them (`as_mut` takes `&mut self`).
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    pub(crate) fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len, ALIGN).expect("a valid aligned layout");
        // SAFETY: `layout` has a non-zero size (callers pass a multiple of ALIGN, at least one).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = std::ptr::NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
        AlignedBuf { ptr, layout }
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    pub(crate) fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` owns `layout.size()` initialised (zeroed) bytes for the buffer's life.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    pub(crate) fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` owns `layout.size()` initialised (zeroed) bytes for the buffer's life.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}
