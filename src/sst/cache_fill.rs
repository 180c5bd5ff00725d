//! [`CacheFill`]: whether a cursor puts the data blocks it reads from the file into the block
//! cache.
//!
//! An engine scan fills the cache up to a budget of a quarter of the cache's capacity, then
//! reads around it. Under LRU, a scan longer than the cache evicts every block it inserted
//! before reaching it again, and every block the point lookups had cached on the way: it
//! pays for each insertion and its eviction and gets no hit back. With the budget, a scan
//! displaces at most a quarter of the cache, short scans (a range within the budget) are
//! cached as before, and a scan repeated over a range that fits is cached a quarter of the
//! cache more on each pass (its hits do not spend the budget). PostgreSQL's sequential scans
//! of tables over a quarter of its buffer pool go through a small ring for the same reason.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The fill policy of one cursor; cloned into each of its table cursors, which then share one
/// budget.
#[derive(Clone, Debug)]
pub(crate) enum CacheFill {
    /// Insert nothing (`ReadOptions::fill_cache = false`, compaction, tools).
    Never,
    /// Insert every block read (single-table cursors, tests).
    Always,
    /// Insert until this many bytes of blocks (their cache charge) were inserted.
    Budget(Arc<AtomicUsize>),
}

impl CacheFill {
    /// A budget of `bytes` shared by the clones of the result.
    pub(crate) fn budget(bytes: usize) -> CacheFill {
        CacheFill::Budget(Arc::new(AtomicUsize::new(bytes)))
    }

    /// Whether a block read from the file, charged `charge` bytes, goes in the cache; spends
    /// the budget if so. A block larger than what is left still goes in (once), so a budget
    /// smaller than one block admits one.
    pub(crate) fn admit(&self, charge: usize) -> bool {
        match self {
            CacheFill::Never => false,
            CacheFill::Always => true,
            // One cursor moves on one thread at a time: no other update can race this one
            // in a way that matters (a lost update only misplaces one block's charge).
            CacheFill::Budget(left) => {
                let l = left.load(Ordering::Relaxed);
                if l == 0 {
                    return false;
                }
                left.store(l.saturating_sub(charge), Ordering::Relaxed);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_admits_blocks_until_spent_and_is_shared_by_clones() {
        let fill = CacheFill::budget(10_000);
        let other = fill.clone();
        assert!(fill.admit(4_000));
        assert!(other.admit(4_000));
        assert!(fill.admit(4_000), "2,000 left: a larger block still goes in once");
        assert!(!other.admit(1));
        assert!(!fill.admit(1));
    }

    #[test]
    fn never_and_always_do_not_change() {
        for _ in 0..3 {
            assert!(!CacheFill::Never.admit(1));
            assert!(CacheFill::Always.admit(usize::MAX));
        }
    }
}
