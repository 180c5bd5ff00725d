//! The write path: group commit, the WAL append, memtable application, and memtable rotation.
//!
//! Group commit (as in LevelDB): every writer enqueues its batch and waits. The writer at the
//! front of the queue becomes the leader: it merges the queued batches (up to `MAX_GROUP_BYTES`)
//! into one WAL record, appends it (and fsyncs once if any member asked for sync), applies it to
//! the memtable, publishes the last sequence number, and then wakes the members with the shared
//! result. While a leader works, new writers queue behind it and form the next group, so under
//! concurrency one fsync covers many writes.
//!
//! A queued writer waits adaptively, as RocksDB's write thread does (`AwaitState`): it first
//! watches the count of finished groups for [`SPIN_WAIT`], then yields its core until
//! [`YIELD_WAIT`], and only then sleeps on the condition variable. A group of small batches
//! commits in about a microsecond, while a sleep and wake-up through the kernel costs several
//! (a `ycsba` profile with two writers on two cores spent a fifth of its samples waking and
//! switching threads) and hands the next group to a thread the scheduler must first run.
//!
//! A failed WAL append or sync leaves the log in an unknown state: the database turns read-only
//! (`DbInner::set_bg_error`) and never retries the sync.
//!
//! User code on the write path (the prefix extractor) runs first, outside every lock, under
//! `catch_unwind`: its panic fails that write with nothing logged. A panic anywhere in a
//! leader's commit (a bug, or user code that panics only the second time) turns the database
//! read-only and fails the whole group, whose tickets are still popped so no writer waits
//! forever; the group's WAL record, if appended, comes back whole at the next open.

use super::{DbInner, SuperVersion};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filename;
use crate::filter::hash_key;
use crate::filter_plan::{self, TreeShape};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::wal::WalWriter;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Largest merged group; a leader with a small batch stops at `SMALL_LEADER_GROUP_BYTES` so a
/// small write is not delayed behind megabytes of others (LevelDB's rule).
const MAX_GROUP_BYTES: usize = 1 << 20;
const SMALL_LEADER_GROUP_BYTES: usize = 128 << 10;
/// Entry size assumed to size the first memtable's filter, before any memtable filled up.
const ASSUMED_ENTRY_BYTES: usize = 128;
/// How long a queued writer watches for its group to finish before yielding its core, and how
/// long (in all) before it sleeps; see the module comment.
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(4);
const YIELD_WAIT: std::time::Duration = std::time::Duration::from_micros(50);

/// The WAL being written and the last allocated sequence number. Guarded by
/// `DbInner::writer`, which only the group-commit leader and memtable rotation take.
pub(crate) struct WriterState {
    pub wal: WalWriter,
    pub wal_number: u64,
    pub last_seq: u64,
}

struct Pending {
    batch: WriteBatch,
    sync: bool,
    /// A transaction's batch: committed in a group of its own (its validation may fail it
    /// alone), never merged with others.
    solo: bool,
}

/// A check run by the group-commit leader under the writer lock, after the state up to the
/// last sequence is applied and before the batch gets its sequence numbers; an error fails
/// the write with nothing logged. `&SuperVersion` holds every write up to that sequence.
pub(crate) type Validator<'a> = &'a mut dyn FnMut(&SuperVersion) -> Result<()>;

#[derive(Default)]
struct QueueState {
    next_ticket: u64,
    /// Tickets in arrival order; the front is the current or next leader.
    order: VecDeque<u64>,
    /// Batches not yet taken by a leader.
    waiting: HashMap<u64, Pending>,
    /// Results for members of finished groups.
    done: HashMap<u64, Result<()>>,
}

/// The queue of writers waiting for group commit.
#[derive(Default)]
pub(crate) struct WriteQueue {
    state: Mutex<QueueState>,
    cv: Condvar,
    /// Groups finished so far, bumped under `state`'s lock with each group's results: a writer
    /// waiting without the lock watches it change (see [`WriteQueue::await_change`]).
    groups_done: AtomicU64,
}

impl WriteQueue {
    /// Marks a group finished (with `state` locked) and wakes the writers sleeping for it.
    fn finish_group(&self) {
        self.groups_done.fetch_add(1, Ordering::Release);
        self.cv.notify_all();
    }

    /// Waits, with `st` unlocked, until a group finishes after `seen` or the adaptive wait's
    /// time is up; the caller then checks the queue again under the lock, and sleeps on the
    /// condition variable only if nothing changed. Sleeping after a change that happened here
    /// is impossible: the check and the sleep are both under the lock the change takes.
    fn await_change(&self, seen: u64) {
        let start = Instant::now();
        let changed = || self.groups_done.load(Ordering::Acquire) != seen;
        loop {
            for _ in 0..64 {
                if changed() {
                    return;
                }
                std::hint::spin_loop();
            }
            let waited = start.elapsed();
            if waited >= YIELD_WAIT {
                return;
            }
            if waited >= SPIN_WAIT {
                std::thread::yield_now();
            }
        }
    }
}

/// Writes `batch` atomically, durably if `sync`.
pub(crate) fn write(inner: &DbInner, batch: WriteBatch, sync: bool) -> Result<()> {
    write_checked(inner, batch, sync, None)
}

/// [`write`], with `validate` (if any) run by the leader atomically with the sequence
/// assignment (a transaction's commit, src/txn/validate.rs). A validated batch leads a group of
/// one and is never merged into another leader's group.
pub(crate) fn write_checked(
    inner: &DbInner,
    batch: WriteBatch,
    sync: bool,
    mut validate: Option<Validator<'_>>,
) -> Result<()> {
    batch.validate()?;
    inner.check_writable()?;
    super::keyspace::check_batch(inner, &batch)?;
    if batch.has_merges() && inner.opts.merge_operator.is_none() {
        return Err(Error::invalid(
            "a merge needs a merge operator, and Options::merge_operator is None",
        ));
    }
    vet_user_code(inner, &batch)?;
    if batch.is_empty() {
        // Nothing to log, but a synced write promises that every earlier write is durable.
        return if sync { sync_wal(inner) } else { Ok(()) };
    }
    super::compact::throttle(inner)?;
    let user_bytes: usize = batch.iter().map(|r| r.key.len() + r.value.len()).sum();
    inner.counters.user_bytes.fetch_add(user_bytes as u64, Ordering::Relaxed);
    let batch = super::ttl::stamp(inner, batch); // after counting: the user's bytes only
    let q = &inner.write;
    let mut st = q.state.lock();
    let ticket = st.next_ticket;
    st.next_ticket += 1;
    st.order.push_back(ticket);
    if st.order.len() == 1 {
        // Fast path: no leader is active and nobody waits, so this writer leads a group of
        // one without parking its batch in the queue or copying it into a merged batch.
        // Writers arriving meanwhile queue behind this ticket exactly as behind any leader.
        drop(st);
        let mut batch = batch;
        let result = commit_guarded(inner, &mut batch, sync, validate);
        inner.counters.write_groups.fetch_add(1, Ordering::Relaxed);
        inner.counters.write_batches.fetch_add(1, Ordering::Relaxed);
        let mut st = q.state.lock();
        let front = st.order.pop_front();
        debug_assert_eq!(front, Some(ticket), "the fast-path leader is the front of the queue");
        if !st.order.is_empty() {
            q.finish_group();
        }
        return result;
    }
    let solo = validate.is_some();
    st.waiting.insert(ticket, Pending { batch, sync, solo });
    let mut adaptive = true;
    loop {
        if let Some(result) = st.done.remove(&ticket) {
            return result;
        }
        if st.order.front() == Some(&ticket) {
            break;
        }
        if adaptive {
            // Once per wait: if the time runs out, the writer sleeps until woken.
            adaptive = false;
            let seen = q.groups_done.load(Ordering::Acquire);
            parking_lot::MutexGuard::unlocked(&mut st, || q.await_change(seen));
            continue;
        }
        q.cv.wait(&mut st);
        adaptive = true;
    }

    // Leader: take a group of consecutive waiting batches, starting with our own.
    let mut group = Vec::new();
    let mut taken: Vec<WriteBatch> = Vec::new();
    let mut any_sync = false;
    let mut group_bytes = 0;
    let mut limit = MAX_GROUP_BYTES;
    let queued: Vec<u64> = st.order.iter().copied().collect();
    for (i, &t) in queued.iter().enumerate() {
        let Some(p) = st.waiting.get(&t) else { break };
        if i > 0 && (solo || p.solo) {
            break;
        }
        if i == 0 && p.batch.encoded_len() <= SMALL_LEADER_GROUP_BYTES {
            limit = SMALL_LEADER_GROUP_BYTES;
        }
        if i > 0 && group_bytes + p.batch.encoded_len() > limit {
            break;
        }
        let p = st.waiting.remove(&t).expect("present");
        group_bytes += p.batch.encoded_len();
        taken.push(p.batch);
        any_sync |= p.sync;
        group.push(t);
    }
    drop(st);

    // A group of one is committed as is; a larger group is merged into one batch (one record).
    let mut merged = if taken.len() == 1 {
        taken.pop().expect("one batch")
    } else {
        let mut m = WriteBatch::with_capacity(group_bytes);
        for b in &taken {
            m.append(b);
        }
        m
    };
    let result = commit_guarded(inner, &mut merged, any_sync, validate.take());
    inner.counters.write_groups.fetch_add(1, Ordering::Relaxed);
    inner.counters.write_batches.fetch_add(group.len() as u64, Ordering::Relaxed);

    let mut st = q.state.lock();
    for &t in &group {
        let front = st.order.pop_front();
        debug_assert_eq!(front, Some(t), "a group is always the front of the queue");
        if t != ticket {
            let r = match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(e.duplicate()),
            };
            st.done.insert(t, r);
        }
    }
    q.finish_group();
    result
}

/// Fsyncs the WAL under the writer lock: every write acknowledged before the call has been
/// appended to it (acknowledgement happens after the append, under the same lock), and older
/// WALs were synced when they were rotated out. A failure turns the database read-only.
pub(crate) fn sync_wal(inner: &DbInner) -> Result<()> {
    let mut w = inner.writer.lock();
    inner.check_writable()?;
    inner.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = w.wal.sync() {
        inner.set_bg_error(&e);
        return Err(e);
    }
    Ok(())
}

/// Runs the prefix extractor (user code) on every point record's key, as the memtable will,
/// and turns a panic into [`Error::InvalidArgument`] naming the extractor and the key. Only
/// `prefix()` runs here, not the hashing, so the second call in the memtable costs little.
fn vet_user_code(inner: &DbInner, batch: &WriteBatch) -> Result<()> {
    let Some(extractor) = inner.opts.prefix_extractor.as_deref() else {
        return Ok(());
    };
    for r in batch.iter().filter(|r| r.kind != crate::ikey::ValueKind::RangeDelete) {
        let call = std::panic::AssertUnwindSafe(|| extractor.prefix(r.key).map(<[u8]>::len));
        if let Err(payload) = std::panic::catch_unwind(call) {
            return Err(Error::invalid(format!(
                "the prefix extractor {:?} panicked on key {:?} ({}); nothing was written",
                extractor.name(),
                r.key.escape_ascii().to_string(),
                super::panic_message(payload.as_ref())
            )));
        }
    }
    Ok(())
}

/// [`commit_group`], with a panic inside it turned into a read-only database and an error for
/// the group (the caller then pops the group's tickets as after any failure).
fn commit_guarded(
    inner: &DbInner,
    batch: &mut WriteBatch,
    sync: bool,
    validate: Option<Validator<'_>>,
) -> Result<()> {
    let commit = std::panic::AssertUnwindSafe(|| commit_group(inner, batch, sync, validate));
    std::panic::catch_unwind(commit).unwrap_or_else(|payload| {
        let why = format!(
            "a write panicked ({}); its record may be in the WAL and comes back whole at the \
             next open; reopen the database",
            super::panic_message(payload.as_ref())
        );
        inner.life.set_read_only(why.clone());
        Err(Error::ReadOnly(why))
    })
}

/// Appends the merged batch to the WAL, applies it to the memtable and publishes it.
fn commit_group(
    inner: &DbInner,
    batch: &mut WriteBatch,
    sync: bool,
    validate: Option<Validator<'_>>,
) -> Result<()> {
    let mut w = inner.writer.lock();
    inner.check_writable()?;
    let sv = make_room(inner, &mut w)?;
    if let Some(validate) = validate {
        // Under the writer lock every write up to `last_seq` is applied and published, and
        // none can be added before this batch takes `last_seq + 1`: the check and the commit
        // are one step. The current super-version (a flush may have moved memtables to L0
        // meanwhile, never losing a version) holds all of them.
        validate(&inner.super_version())?;
    }
    let first = w.last_seq + 1;
    let record = batch.stamp(first);
    if let Err(e) = w.wal.add_record(record) {
        inner.set_bg_error(&e);
        return Err(e);
    }
    if sync {
        inner.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
        if crate::testing::enabled("wal.commit_sync") {
            if let Err(e) = w.wal.sync() {
                inner.set_bg_error(&e);
                return Err(e);
            }
        }
    }
    for (i, r) in batch.iter().enumerate() {
        sv.mem.add_in(first + i as u64, r.kind, r.keyspace, r.key, hash_key(r.key), r.value);
    }
    w.last_seq = first + batch.len() as u64 - 1;
    // Release: the memtable entries and filter bits above happen-before any reader that
    // observes this sequence number (src/memtable/mod.rs, invariant 2).
    inner.visible_seq.store(w.last_seq, Ordering::Release);
    Ok(())
}

/// Rotates the memtable when it is full, first waiting (a write stall) while the maximum number
/// of immutable memtables is already queued for flush. Returns the super-version whose `mem`
/// takes the write (only the writer, who holds `w`, replaces `mem`).
fn make_room(inner: &DbInner, w: &mut WriterState) -> Result<Arc<SuperVersion>> {
    loop {
        let sv = inner.super_version();
        if sv.mem.approximate_bytes() < inner.opts.memtable_size {
            return Ok(sv);
        }
        if sv.imm.len() >= inner.opts.max_immutable_memtables.max(1) {
            let start = Instant::now();
            let mut g = inner.bg_lock.lock();
            while inner.super_version().imm.len() >= inner.opts.max_immutable_memtables.max(1) {
                inner.check_writable()?;
                inner.bg_cv.wait_for(&mut g, std::time::Duration::from_millis(100));
            }
            drop(g);
            let waited = start.elapsed().as_micros() as u64;
            inner.counters.write_stall_micros.fetch_add(waited, Ordering::Relaxed);
            continue;
        }
        rotate(inner, w)?;
    }
}

/// Freezes the active memtable and starts a new one with a new WAL. The old WAL is closed
/// (cut to its length) and synced first, so a later synced write in the new WAL never survives a power loss that an earlier
/// buffered write of the old WAL did not (the recovered state stays a prefix of history).
pub(crate) fn rotate(inner: &DbInner, w: &mut WriterState) -> Result<()> {
    // Cut the old log to its length before its sync (a mapped log has reserved zeros after its
    // last record; only the newest log may end in zeros, "Recovery").
    if let Err(e) = w.wal.close() {
        inner.set_bg_error(&e);
        return Err(e);
    }
    if crate::testing::enabled("wal.rotate_sync") {
        if let Err(e) = w.wal.sync() {
            inner.set_bg_error(&e);
            return Err(e);
        }
    }
    let number = inner.new_file_number();
    let path = inner.dir.join(filename::wal_name(number));
    // The old log is closed: with no log to write to, the database stops taking writes.
    let file = inner.storage.create_log(&path).inspect_err(|e| inner.set_bg_error(e))?;
    if crate::testing::enabled("wal.rotate_sync_dir") {
        if let Err(e) = inner.storage.sync_dir(&inner.dir) {
            inner.set_bg_error(&e);
            return Err(e);
        }
    }
    let old = inner.super_version();
    let expected = expected_entries(&inner.opts, Some(&old.mem));
    // When the new memtable is flushed, the frozen ones (`old.imm` and `old.mem`) will have
    // gone to L0 before it.
    let l0 = super::plan::l0_runs_beside(&old.version, 0, old.imm.len() + 2);
    let shape =
        super::plan::live_shape(inner, &old.version, l0, crate::filter_plan::Writes::Ongoing);
    let mem = Arc::new(new_memtable(&inner.opts, &shape, number, expected));
    w.wal = WalWriter::new(file);
    w.wal_number = number;
    // Read-modify-write under the write lock: a flush may have installed a new super-version
    // since `old` was read (only `mem` is ours to replace; `imm` and `version` must be the
    // latest). Building from `old` here lost flushed files and re-flushed their memtables into
    // newer L0 files holding stale versions (found by tests/reliability_power_loss.rs).
    inner.install_super_version(|cur| {
        let mut imm = Vec::with_capacity(cur.imm.len() + 1);
        imm.push(cur.mem.clone());
        imm.extend(cur.imm.iter().cloned());
        SuperVersion { mem, imm, version: cur.version.clone() }
    });
    let _g = inner.bg_lock.lock();
    inner.bg_cv.notify_all();
    Ok(())
}

/// Keys the next memtable is expected to hold: the previous full memtable's count plus 10%
/// headroom, or `memtable_size / 128` before any memtable filled up. The memtable's two-bit
/// filter has a fixed size, so this decides its FPR.
pub(crate) fn expected_entries(opts: &Options, previous: Option<&Memtable>) -> u64 {
    match previous {
        Some(m) if !m.is_empty() && m.approximate_bytes() >= opts.memtable_size => {
            m.len() + m.len() / 10
        }
        _ => (opts.memtable_size / ASSUMED_ENTRY_BYTES).max(1024) as u64,
    }
}

/// An empty memtable for WAL `wal_number` sized for `expected` entries: its key filter, and a
/// prefix Bloom of the same size when `Options::prefix_extractor` is set. `shape` is the tree
/// the flush filter's share is allocated in (`filter_plan::memtable_filter_bits`).
pub(crate) fn new_memtable(
    opts: &Options,
    shape: &TreeShape,
    wal_number: u64,
    expected: u64,
) -> Memtable {
    let bits = filter_plan::memtable_filter_bits(&opts.filter_policy, shape, expected);
    Memtable::new(wal_number, bits).with_prefix_filter(opts.prefix_extractor.clone(), bits)
}

/// A writable-state check used by `Db::flush`.
pub(crate) fn rotate_if_nonempty(inner: &DbInner) -> Result<()> {
    let mut w = inner.writer.lock();
    inner.check_writable()?;
    if inner.super_version().mem.is_empty() {
        return Ok(());
    }
    rotate(inner, &mut w)
}

impl Error {
    /// A copy of this error for the other members of a failed write group (`std::io::Error` is
    /// not `Clone`; the copy keeps its kind and message).
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Corruption { file, offset, what } => {
                Error::Corruption { file: file.clone(), offset: *offset, what: what.clone() }
            }
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::UnknownFilterKind(k) => Error::UnknownFilterKind(*k),
            Error::FilterFull(s) => Error::FilterFull(s.clone()),
            Error::Locked(p) => Error::Locked(p.clone()),
            Error::NotADatabase { dir, why } => {
                Error::NotADatabase { dir: dir.clone(), why: why.clone() }
            }
            Error::ReadOnly(s) => Error::ReadOnly(s.clone()),
            Error::Closed => Error::Closed,
            Error::MergeFailed { operator, key, what } => Error::MergeFailed {
                operator: operator.clone(),
                key: key.clone(),
                what: what.clone(),
            },
            Error::Conflict { keyspace, key, end } => {
                Error::Conflict { keyspace: keyspace.clone(), key: key.clone(), end: end.clone() }
            }
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
        }
    }
}
