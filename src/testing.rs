//! Test hooks: named durability points that a test can switch off, to show that the crash tests
//! notice when one is missing (tests/reliability_power_loss.rs, "sharpness").
//!
//! Every `sync` and `sync_dir` the engine relies on for durability is wrapped as
//! `if testing::enabled("wal.commit_sync") { file.sync()? }`. With the cargo feature
//! `fault-injection` (turned on only for this crate's own tests, through a dev-dependency on
//! itself) [`skip`] disables a point for the whole process; without the feature [`enabled`] is a
//! constant `true` and the hooks compile away.
//!
//! The switch is process-global (the engine's flush thread must see it too), so a test that uses
//! it runs its cases one after another and restores the switch with [`restore_all`].
//!
//! Some syncs sit in shared code that several callers rely on (the table builder's "sst.sync"
//! serves flushes and compactions). A caller names its own point for such a sync with
//! [`within`]: `testing::within("compaction.sst_sync", "sst.sync", || builder.finish(..))` runs
//! the closure with "sst.sync" disabled on this thread while "compaction.sst_sync" is, so each
//! caller's reliance on the shared sync is switched (and tested) separately.

/// Writes logs record by record, for tests that craft damaged or unusual logs.
pub use crate::wal::WalWriter;

/// Every durability point the engine consults, with the file that holds it.
pub const SYNC_POINTS: &[&str] = &[
    // src/db/write.rs: fsync of the WAL after a group with a synced write.
    "wal.commit_sync",
    // src/db/write.rs: fsync of the old WAL before switching to a new one.
    "wal.rotate_sync",
    // src/db/write.rs: directory sync making the new WAL's entry durable.
    "wal.rotate_sync_dir",
    // src/sst/builder.rs: fsync of a finished table.
    "sst.sync",
    // src/db/flush.rs: directory sync making a new table's entry durable.
    "flush.sync_dir",
    // src/sst/blob.rs: fsync of a finished blob file (flush and compaction), before the manifest
    // edit that names it.
    "blob.sync",
    // src/manifest/mod.rs: fsync of a new manifest's snapshot edit.
    "manifest.create_sync",
    // src/manifest/mod.rs: directory sync of the new manifest's entry.
    "manifest.create_sync_dir",
    // src/manifest/mod.rs: fsync of an appended version edit.
    "manifest.append_sync",
    // src/manifest/mod.rs: fsync of CURRENT.tmp before it is renamed.
    "current.sync",
    // src/manifest/mod.rs: directory sync making the rename of CURRENT durable.
    "current.sync_dir",
    // src/compaction/job.rs: fsync of each compaction output (the builder's "sst.sync", switched
    // for compactions only through `within`).
    "compaction.sst_sync",
    // src/compaction/job.rs: directory sync making the outputs' entries durable before the
    // manifest edit names them.
    "compaction.sync_dir",
    // src/db/compact.rs: fsync of the compaction's manifest edit ("manifest.append_sync",
    // switched for compactions only through `within`) before its inputs are deleted.
    "compaction.manifest_sync",
];

#[cfg(feature = "fault-injection")]
mod imp {
    use parking_lot::Mutex;
    use std::cell::RefCell;
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Fast path: false while no point is disabled (the normal case), so a hook costs one
    /// relaxed load.
    static ANY: AtomicBool = AtomicBool::new(false);
    static SKIPPED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

    thread_local! {
        /// `(outer, inner)` pairs of the [`super::within`] calls active on this thread.
        static SCOPES: RefCell<Vec<(&'static str, &'static str)>> = const { RefCell::new(Vec::new()) };
    }

    pub fn enabled(point: &str) -> bool {
        if !ANY.load(Ordering::Relaxed) {
            return true;
        }
        let skipped = SKIPPED.lock();
        if skipped.contains(point) {
            return false;
        }
        !SCOPES.with(|s| s.borrow().iter().any(|&(o, i)| i == point && skipped.contains(o)))
    }

    pub fn within<R>(outer: &'static str, inner: &'static str, f: impl FnOnce() -> R) -> R {
        /// Pops the scope even if `f` unwinds.
        struct Pop;
        impl Drop for Pop {
            fn drop(&mut self) {
                SCOPES.with(|s| s.borrow_mut().pop());
            }
        }
        SCOPES.with(|s| s.borrow_mut().push((outer, inner)));
        let _pop = Pop;
        f()
    }

    pub fn skip(point: &'static str) {
        SKIPPED.lock().insert(point);
        ANY.store(true, Ordering::SeqCst);
    }

    pub fn restore_all() {
        let mut s = SKIPPED.lock();
        s.clear();
        ANY.store(false, Ordering::SeqCst);
    }

    use super::OutputHook;
    static OUTPUT_HOOK: Mutex<Option<OutputHook>> = Mutex::new(None);

    pub fn set_compaction_output_hook(hook: Option<OutputHook>) {
        *OUTPUT_HOOK.lock() = hook;
    }

    pub fn compaction_output_started(at: &super::OutputStart<'_>) {
        // Cloned out of the lock: the hook may block or panic.
        let hook = OUTPUT_HOOK.lock().clone();
        if let Some(hook) = hook {
            hook(at);
        }
    }
}

/// Where a compaction is when it has just created an output file (the argument of the hook
/// [`set_compaction_output_hook`] installs).
pub struct OutputStart<'a> {
    /// Index of the subcompaction (key range) creating the file; 0 runs on the thread that
    /// runs the compaction.
    pub range: usize,
    /// The file's number.
    pub number: u64,
    /// Whether the database is closing (`Db::close` or its drop began).
    pub closing: &'a (dyn Fn() -> bool + Sync),
    /// Begins closing the database, as the first step of `Db::close` does (a test stops a
    /// manual compaction with it, since no close can overlap `Db::compact`).
    pub begin_close: &'a (dyn Fn() + Sync),
}

/// A compaction output hook (see [`set_compaction_output_hook`]).
pub type OutputHook = std::sync::Arc<dyn Fn(&OutputStart<'_>) + Send + Sync>;

/// Installs (`Some`) or removes a process-wide hook every compaction calls right after creating
/// an output file, on the thread creating it: a test panics in it to fail a subcompaction
/// thread, or blocks in it to hold a compaction mid-run. Without the `fault-injection` feature
/// this does nothing and returns `false`.
pub fn set_compaction_output_hook(hook: Option<OutputHook>) -> bool {
    #[cfg(feature = "fault-injection")]
    {
        imp::set_compaction_output_hook(hook);
        true
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = hook;
        false
    }
}

/// Calls the hook of [`set_compaction_output_hook`], if any.
#[inline]
pub(crate) fn compaction_output_started(at: &OutputStart<'_>) {
    #[cfg(feature = "fault-injection")]
    imp::compaction_output_started(at);
    #[cfg(not(feature = "fault-injection"))]
    let _ = at;
}

/// Whether durability point `point` is active (always, unless a test disabled it).
#[inline]
pub fn enabled(point: &str) -> bool {
    #[cfg(feature = "fault-injection")]
    {
        imp::enabled(point)
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = point;
        true
    }
}

/// Runs `f`, during which the shared point `inner` (consulted by code `f` calls) is also
/// disabled on this thread whenever the caller's own point `outer` is. Without the
/// `fault-injection` feature this is just `f()`.
#[inline]
pub fn within<R>(outer: &'static str, inner: &'static str, f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "fault-injection")]
    {
        imp::within(outer, inner, f)
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = (outer, inner);
        f()
    }
}

/// Disables `point` for the whole process until [`restore_all`]. Without the
/// `fault-injection` feature this does nothing and returns `false`.
pub fn skip(point: &'static str) -> bool {
    #[cfg(feature = "fault-injection")]
    {
        imp::skip(point);
        true
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = point;
        false
    }
}

/// Re-enables every point.
pub fn restore_all() {
    #[cfg(feature = "fault-injection")]
    imp::restore_all();
}

#[cfg(target_os = "linux")]
pub use counting::{live_heap_bytes, CountingAllocator};

/// The counting allocator of the memory-charge tests (Linux: it asks glibc for chunk sizes).
#[cfg(target_os = "linux")]
mod counting {
    /// A global allocator that forwards to the system allocator and counts, per thread, the bytes
    /// of every live allocation as glibc malloc lays it out: `malloc_usable_size + 8` (the chunk
    /// header and the rounding to 16 bytes included), the model `crate::heap` charges by. A test
    /// binary installs it with `#[global_allocator] static A: CountingAllocator = CountingAllocator;`
    /// and reads [`live_heap_bytes`] before and after the work it measures.
    pub struct CountingAllocator;

    thread_local! {
        static LIVE_HEAP_BYTES: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
    }

    /// Live heap bytes this thread allocated through [`CountingAllocator`] less those it freed
    /// (a thread may free what another allocated: only differences on one thread mean anything).
    pub fn live_heap_bytes() -> i64 {
        LIVE_HEAP_BYTES.with(|c| c.get())
    }

    /// Bytes glibc's chunk at `p` takes: its usable size plus the 8-byte size header.
    fn chunk_bytes(p: *mut u8) -> i64 {
        // SAFETY: `p` came from the system allocator and is still allocated.
        (unsafe { libc::malloc_usable_size(p.cast()) } + 8) as i64
    }

    fn count(delta: i64) {
        // `try_with`: a thread being torn down may still free memory.
        let _ = LIVE_HEAP_BYTES.try_with(|c| c.set(c.get() + delta));
    }

    // SAFETY: every call is forwarded to `System` unchanged; counting touches a thread-local
    // integer only (no allocation).
    unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            let p = unsafe { std::alloc::System.alloc(layout) };
            if !p.is_null() {
                count(chunk_bytes(p));
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            let p = unsafe { std::alloc::System.alloc_zeroed(layout) };
            if !p.is_null() {
                count(chunk_bytes(p));
            }
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: std::alloc::Layout) {
            count(-chunk_bytes(p));
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { std::alloc::System.dealloc(p, layout) }
        }

        unsafe fn realloc(
            &self,
            p: *mut u8,
            layout: std::alloc::Layout,
            new_size: usize,
        ) -> *mut u8 {
            let old = chunk_bytes(p);
            // SAFETY: forwarded with the caller's guarantees.
            let q = unsafe { std::alloc::System.realloc(p, layout, new_size) };
            if !q.is_null() {
                count(chunk_bytes(q) - old);
            }
            q
        }
    }
}
