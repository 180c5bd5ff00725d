//! TTL and compaction filters as the engine applies them (design.md#ttl and
//! #compaction-filters): the write time stamped on values of TTL keyspaces, the expiry rule of
//! reads, and the [`Retention`] flush and compaction apply.
//!
//! Reads: the write time of a version is assigned when its batch is written, from a clock
//! made monotonic per database, so along one key's versions (newest first) write times never
//! increase. An expired version therefore hides every older one, exactly as a tombstone at its
//! sequence number would: a read treats it as a Delete. The read paths collect a key's newest
//! version and the merge operands above its base unchanged; [`resolve`] then cuts the operands
//! at the first expired one (the base and older operands are expired too), drops an expired
//! base, merges the rest with the operator (which sees values without times) and strips the
//! time of what is returned.

use super::keyspace::KeyspaceSet;
use super::DbInner;
use crate::batch::WriteBatch;
use crate::compaction_filter::{Clock, Retention, TtlMerge};
use crate::ikey::DEFAULT_KEYSPACE;
use crate::merge::SharedMergeOperator;
use crate::options::Options;
pub(crate) use crate::write_time::ReadTtl;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The clock's time, never below a time it returned before for this process's databases.
pub(crate) fn now_ms(opts: &Options) -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = match &opts.clock {
        Some(c) => c.now_ms(),
        None => crate::compaction_filter::SystemClock.now_ms(),
    };
    if opts.clock.is_some() {
        return now; // a test clock is taken as it is (it may be set back between databases)
    }
    LAST.fetch_max(now, Ordering::Relaxed).max(now)
}

/// The TTL of `keyspace` in ms (`None`: its values carry no write time).
pub(crate) fn ttl_ms(opts: &Options, set: &KeyspaceSet, keyspace: u32) -> Option<u64> {
    let ttl = if keyspace == DEFAULT_KEYSPACE {
        opts.ttl
    } else {
        set.live.get(&keyspace).and_then(|k| k.options.ttl)
    };
    ttl.map(clamped_ms)
}

/// A TTL in ms, within what a write time can carry.
fn clamped_ms(ttl: std::time::Duration) -> u64 {
    ttl.as_millis().clamp(1, crate::compaction_filter::MAX_TTL_MS as u128) as u64
}

/// What flush and compaction apply to `keyspace`, at `now_ms`.
pub(crate) fn retention(opts: &Options, set: &KeyspaceSet, keyspace: u32, now: u64) -> Retention {
    let filter = if keyspace == DEFAULT_KEYSPACE {
        opts.compaction_filter.clone()
    } else {
        set.live.get(&keyspace).and_then(|k| k.options.compaction_filter.clone())
    };
    Retention { ttl_ms: ttl_ms(opts, set, keyspace), filter, now_ms: now }
}

/// `batch` with the write time on the values of TTL keyspaces.
pub(crate) fn stamp(inner: &DbInner, batch: WriteBatch) -> WriteBatch {
    let set = inner.keyspaces.load();
    if inner.opts.ttl.is_none() && set.live.values().all(|k| k.options.ttl.is_none()) {
        return batch;
    }
    let now = now_ms(&inner.opts);
    batch.with_write_times(|ks| ttl_ms(&inner.opts, &set, ks).is_some(), now).unwrap_or(batch)
}

/// The merge operator of reads and compactions of a keyspace: the configured one, wrapped to
/// strip write times in a TTL keyspace.
pub(crate) fn operator_for(
    op: Option<&SharedMergeOperator>,
    ttl: Option<u64>,
) -> Option<SharedMergeOperator> {
    match (op, ttl) {
        (Some(op), Some(_)) => Some(Arc::new(TtlMerge(op.clone()))),
        (op, _) => op.cloned(),
    }
}

/// The read state of `keyspace` of `inner` (`None`: no TTL): its TTL and the time of the read.
pub(crate) fn read_ttl(inner: &DbInner, keyspace: u32) -> Option<ReadTtl> {
    // The default keyspace's TTL is an option: read without loading the keyspace set (an
    // arc-swap load and release, on every lookup).
    let ttl = if keyspace == DEFAULT_KEYSPACE {
        inner.opts.ttl.map(clamped_ms)?
    } else {
        ttl_ms(&inner.opts, &inner.keyspaces.load(), keyspace)?
    };
    Some(ReadTtl { ttl_ms: ttl, now_ms: now_ms(&inner.opts) })
}
