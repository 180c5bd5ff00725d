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

/// Every durability point the engine consults, with the file that holds it.
pub const SYNC_POINTS: &[&str] = &[
    // src/db/write.rs: fsync of the WAL after a group with a synced write.
    "wal.commit_sync",
    // src/db/write.rs: fsync of the old WAL before switching to a new one.
    "wal.rotate_sync",
    // src/db/write.rs: directory sync making the new WAL's entry durable.
    "wal.rotate_sync_dir",
    // src/db/open.rs: fsync of the WALs recovery replayed (a killed writer may not have).
    "open.wal_sync",
    // src/sst/builder.rs: fsync of a finished table.
    "sst.sync",
    // src/db/flush.rs: directory sync making a new table's entry durable.
    "flush.sync_dir",
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
];

#[cfg(feature = "fault-injection")]
mod imp {
    use parking_lot::Mutex;
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Fast path: false while no point is disabled (the normal case), so a hook costs one
    /// relaxed load.
    static ANY: AtomicBool = AtomicBool::new(false);
    static SKIPPED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

    pub fn enabled(point: &str) -> bool {
        if !ANY.load(Ordering::Relaxed) {
            return true;
        }
        !SKIPPED.lock().contains(point)
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
