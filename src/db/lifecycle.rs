//! The life cycle of an open database, one state machine every handle checks
//! (design.md#life-cycle):
//!
//! ```text
//!   Open --(failed WAL/manifest write or sync, background panic)--> ReadOnly
//!   Open | ReadOnly --(Db::close or drop of the Db)--> Closing --(threads joined, WAL synced,
//!                                                                LOCK released)--> Closed
//! ```
//!
//! - **Open**: reads and writes are served.
//! - **ReadOnly**: reads are served; every write fails with [`Error::ReadOnly`] carrying the
//!   first failure's description (the failure left durable state unknown; reopening recovers).
//! - **Closing / Closed**: every call through any handle (`Keyspace`, `Snapshot`, iterators,
//!   cursors, batches written through a keyspace) fails with [`Error::Closed`]. Calls that
//!   passed their check before the transition finish; a write that passed it is in the WAL that
//!   `close` syncs, so nothing acknowledged is lost and nothing is acknowledged after `Closing`.
//!
//! The state is one atomic read on every call (readers write no shared cache line); the
//! read-only reason sits behind a mutex touched only on the failure path.

use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

const OPEN: u8 = 0;
const READ_ONLY: u8 = 1;
const CLOSING: u8 = 2;
const CLOSED: u8 = 3;

/// The state of one open database (shared by every handle on it).
#[derive(Debug)]
pub(crate) struct Lifecycle {
    state: AtomicU8,
    /// Why the database turned read-only (the first failure), kept across `Closing`.
    read_only_why: Mutex<Option<String>>,
}

impl Lifecycle {
    /// An open database.
    pub fn open() -> Lifecycle {
        Lifecycle { state: AtomicU8::new(OPEN), read_only_why: Mutex::new(None) }
    }

    /// A database that refuses writes from the start for `why` (`Db::open_read_only`).
    pub fn read_only(why: impl Into<String>) -> Lifecycle {
        Lifecycle { state: AtomicU8::new(READ_ONLY), read_only_why: Mutex::new(Some(why.into())) }
    }

    /// Fails with [`Error::Closed`] once closing has begun: the check of every read.
    #[inline]
    pub fn check_open(&self) -> Result<()> {
        if self.state.load(Ordering::Acquire) >= CLOSING {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Fails with [`Error::Closed`] once closing has begun, else with [`Error::ReadOnly`] if the
    /// database is read-only: the check of every write.
    #[inline]
    pub fn check_writable(&self) -> Result<()> {
        match self.state.load(Ordering::Acquire) {
            OPEN => Ok(()),
            READ_ONLY => Err(Error::ReadOnly(self.read_only_reason())),
            _ => Err(Error::Closed),
        }
    }

    /// Whether closing has begun (background threads stop at their next check).
    #[inline]
    pub fn is_closing(&self) -> bool {
        self.state.load(Ordering::Acquire) >= CLOSING
    }

    /// Whether the database refuses writes because of a failure (or was opened read-only).
    pub fn is_read_only(&self) -> bool {
        self.read_only_why.lock().is_some()
    }

    /// Turns the database read-only for `why` unless it already is (the first reason is kept).
    /// After closing began the reason is still recorded (`Db::close` reports it), but the state
    /// stays `Closing`/`Closed`.
    pub fn set_read_only(&self, why: String) {
        let mut w = self.read_only_why.lock();
        if w.is_none() {
            *w = Some(why);
        }
        drop(w);
        let _ = self.state.compare_exchange(OPEN, READ_ONLY, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The read-only reason (empty if none was recorded).
    pub fn read_only_reason(&self) -> String {
        self.read_only_why.lock().clone().unwrap_or_default()
    }

    /// `Open | ReadOnly -> Closing`; false if closing had already begun.
    pub fn begin_close(&self) -> bool {
        self.state.fetch_max(CLOSING, Ordering::AcqRel) < CLOSING
    }

    /// `Closing -> Closed`.
    pub fn finish_close(&self) {
        self.state.store(CLOSED, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions() {
        let l = Lifecycle::open();
        assert!(l.check_open().is_ok() && l.check_writable().is_ok());
        l.set_read_only("disk full".into());
        l.set_read_only("second failure".into());
        assert!(l.check_open().is_ok());
        assert!(matches!(l.check_writable(), Err(Error::ReadOnly(w)) if w == "disk full"));
        assert!(l.begin_close());
        assert!(!l.begin_close(), "closing begins once");
        assert!(matches!(l.check_open(), Err(Error::Closed)));
        assert!(matches!(l.check_writable(), Err(Error::Closed)));
        l.set_read_only("late".into());
        assert!(matches!(l.check_writable(), Err(Error::Closed)), "a late failure keeps Closing");
        l.finish_close();
        assert!(l.is_closing() && matches!(l.check_open(), Err(Error::Closed)));
        assert_eq!(l.read_only_reason(), "disk full");
    }

    #[test]
    fn opened_read_only() {
        let l = Lifecycle::read_only("opened read-only");
        assert!(l.check_open().is_ok());
        assert!(matches!(l.check_writable(), Err(Error::ReadOnly(w)) if w == "opened read-only"));
    }
}
