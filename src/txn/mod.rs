//! Optimistic transactions (design.md#transactions): reads at a snapshot registered by the first
//! read (at begin under snapshot isolation),
//! merged with the transaction's own buffered writes; writes buffered until [`commit`], which
//! validates (under the writer lock, atomically with taking its sequence numbers) that no
//! version newer than the snapshot exists for what it must check, and writes everything as one
//! batch (one WAL record).
//!
//! - [`Isolation::Serializable`] checks every key and range read from the snapshot: a
//!   committed transaction is equivalent to running alone at its commit point.
//! - [`Isolation::Snapshot`] checks the keys and ranges written (first committer wins); it
//!   allows write skew.
//!
//! The state (buffered writes, tracked reads, keyspace handles) sits behind one mutex, so every
//! method takes `&self` and a [`TxKeyspace`] view, iterators and cursors can live beside the
//! transaction.
//!
//! [`commit`]: Transaction::commit

mod iter;
mod read_set;
mod validate;
mod write_set;

pub use iter::{TxCursor, TxIterator};

use crate::batch::{WriteBatch, MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::db::cursor::CursorConfig;
use crate::db::read::ReadAt;
use crate::db::{DbCursor, DbInner, Keyspace, Snapshot};
use crate::error::{Error, Result};
use crate::ikey::DEFAULT_KEYSPACE;
use crate::options::{ReadOptions, WriteOptions};
use parking_lot::Mutex;
use read_set::ReadSet;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use write_set::{Base, Op, PointWrite, WriteSet};

/// What a transaction's commit checks (design.md#transactions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Every key and range read from the snapshot (get, contains_key, multi_get, the part of a
    /// range an iterator or cursor traversed, a prefix) must have no newer version at commit.
    /// No anomaly: write skew and phantoms are impossible. A read-only transaction always
    /// commits (it read one snapshot).
    #[default]
    Serializable,
    /// Only the keys and ranges written must have no newer version at commit (first committer
    /// wins): lost updates are impossible, write skew is not.
    Snapshot,
}

/// Options of [`crate::Db::transaction_opt`].
#[derive(Debug, Clone, Default)]
pub struct TransactionOptions {
    /// What the commit validates.
    pub isolation: Isolation,
    /// Durability of the commit's batch.
    pub write: WriteOptions,
}

/// The parts of a transaction that its views, iterators and cursors borrow.
pub(crate) struct Shared {
    inner: Arc<DbInner>,
    /// Registered at the first read (at begin under [`Isolation::Snapshot`]): compaction keeps
    /// every version visible at its sequence. A transaction that only writes never takes one:
    /// under `Serializable` nothing of it is checked, so it needs no read point.
    snapshot: std::sync::OnceLock<Snapshot>,
    opts: TransactionOptions,
    state: Mutex<TxState>,
}

#[derive(Default)]
struct TxState {
    writes: WriteSet,
    reads: ReadSet,
    /// The keyspace handles the transaction used, by id (the default keyspace has none).
    keyspaces: BTreeMap<u32, Keyspace>,
}

/// An optimistic transaction, from [`crate::Db::transaction`]. Reads see one snapshot (taken by
/// the first read; at begin under [`Isolation::Snapshot`]) with the transaction's own writes
/// merged in; writes are buffered and applied by
/// [`Transaction::commit`] as one atomic batch, or fail it with [`Error::Conflict`] when a
/// concurrent commit changed what it must check ([`Isolation`]). Dropping it (or
/// [`Transaction::rollback`]) discards the writes. After the database is closed every call
/// fails with [`Error::Closed`].
///
/// ```
/// use siftdb::{Db, Options};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path().join("db"), Options::default())?;
/// db.put("x", "1")?;
/// let tx = db.transaction()?;
/// let x = tx.get("x")?.unwrap();
/// tx.put("y", &x)?;
/// assert_eq!(tx.get("y")?, Some(b"1".to_vec())); // its own write
/// assert_eq!(db.get("y")?, None); // buffered until commit
/// tx.commit()?;
/// assert_eq!(db.get("y")?, Some(b"1".to_vec()));
///
/// // A concurrent commit to a key read makes the commit fail: retry the transaction.
/// let tx = db.transaction()?;
/// tx.get("x")?;
/// db.put("x", "2")?;
/// tx.put("y", "stale")?;
/// assert!(tx.commit().unwrap_err().is_conflict());
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct Transaction {
    shared: Shared,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("read_sequence", &self.shared.snapshot.get().map(Snapshot::sequence))
            .field("isolation", &self.shared.opts.isolation)
            .finish()
    }
}

/// A transaction's view of one keyspace ([`Transaction::keyspace`]): the same reads and writes
/// as the transaction's own, which go to the default keyspace.
#[derive(Debug)]
pub struct TxKeyspace<'a> {
    tx: &'a Transaction,
    ks: Keyspace,
}

impl crate::Db {
    /// An optimistic transaction with default options (serializable; design.md#transactions):
    /// reads at a snapshot taken now, writes buffered until [`Transaction::commit`].
    pub fn transaction(&self) -> Result<Transaction> {
        self.transaction_opt(TransactionOptions::default())
    }

    /// [`Db::transaction`](crate::Db::transaction) with options (isolation level, commit
    /// durability).
    pub fn transaction_opt(&self, opts: TransactionOptions) -> Result<Transaction> {
        begin(self.inner(), opts)
    }
}

/// Begins a transaction on `inner`.
pub(crate) fn begin(inner: &Arc<DbInner>, opts: TransactionOptions) -> Result<Transaction> {
    inner.life.check_open()?;
    let snapshot = std::sync::OnceLock::new();
    if opts.isolation == Isolation::Snapshot {
        // First committer wins from begin on: written keys are checked against begin's
        // sequence even when the transaction reads nothing.
        let _ = snapshot.set(Snapshot::take(inner, None));
    }
    let state = Mutex::new(TxState::default());
    Ok(Transaction { shared: Shared { inner: inner.clone(), snapshot, opts, state } })
}

/// The value a buffered state `w` of `key` reads as, over the snapshot's value `snap` (used
/// only when the base is the snapshot's).
fn resolve(
    tx: &Shared,
    key: &[u8],
    w: &PointWrite,
    snap: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>> {
    let base = match &w.base {
        Base::Snapshot => snap,
        Base::Deleted => None,
        Base::Value(v) => Some(v.clone()),
    };
    if w.operands.is_empty() {
        return Ok(base);
    }
    let op = crate::merge::operator_for(tx.inner.opts.merge_operator.as_ref(), None, key)?;
    let operands: Vec<&[u8]> = w.operands.iter().map(Vec::as_slice).collect();
    // User code: a panic becomes an error of this read, never an unwinding through the
    // transaction's state.
    let call = std::panic::AssertUnwindSafe(|| op.full_merge(key, base.as_deref(), &operands));
    match std::panic::catch_unwind(call) {
        Ok(r) => r.map(Some),
        Err(payload) => Err(Error::MergeFailed {
            operator: op.name().to_string(),
            key: key.to_vec(),
            what: format!("it panicked ({})", crate::db::panic_message(payload.as_ref())),
        }),
    }
}

impl Shared {
    /// The read point, registering the snapshot on first use.
    fn read_sequence(&self) -> u64 {
        self.snapshot.get_or_init(|| Snapshot::take(&self.inner, None)).sequence()
    }

    fn tracks_reads(&self) -> bool {
        self.opts.isolation == Isolation::Serializable
    }

    fn at(&self) -> ReadAt {
        ReadAt::Snapshot(self.read_sequence())
    }

    /// The buffered state of `key` of `keyspace`, if any.
    fn buffered(&self, keyspace: u32, key: &[u8]) -> Option<PointWrite> {
        self.state.lock().writes.keyspace(keyspace).and_then(|w| w.state(key))
    }

    fn track_key(&self, keyspace: u32, key: &[u8]) {
        if self.tracks_reads() {
            self.state.lock().reads.add_key(keyspace, key);
        }
    }

    fn get(&self, keyspace: u32, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.life.check_open()?;
        match self.buffered(keyspace, key) {
            Some(w) if w.base != Base::Snapshot => resolve(self, key, &w, None),
            w => {
                let snap = crate::db::read::get(&self.inner, keyspace, key, self.at())?;
                self.track_key(keyspace, key);
                match w {
                    Some(w) => resolve(self, key, &w, snap),
                    None => Ok(snap),
                }
            }
        }
    }

    fn contains_key(&self, keyspace: u32, key: &[u8]) -> Result<bool> {
        self.inner.life.check_open()?;
        match self.buffered(keyspace, key) {
            None => {
                let found = crate::db::read::contains_key(&self.inner, keyspace, key, self.at())?;
                self.track_key(keyspace, key);
                Ok(found)
            }
            Some(_) => Ok(self.get(keyspace, key)?.is_some()),
        }
    }

    fn multi_get(&self, keyspace: u32, keys: &[&[u8]]) -> Vec<Result<Option<Vec<u8>>>> {
        if let Err(e) = self.inner.life.check_open() {
            return keys.iter().map(|_| Err(e.duplicate())).collect();
        }
        // Keys without a buffered state are read from the snapshot in one batched call.
        let states: Vec<Option<PointWrite>> = {
            let st = self.state.lock();
            let ks = st.writes.keyspace(keyspace);
            keys.iter().map(|k| ks.and_then(|w| w.state(k))).collect()
        };
        let plain: Vec<&[u8]> =
            keys.iter().zip(&states).filter(|(_, s)| s.is_none()).map(|(k, _)| *k).collect();
        let mut answers =
            crate::db::multi_get::multi_get(&self.inner, keyspace, &plain, self.at(), 1)
                .into_iter();
        for k in &plain {
            self.track_key(keyspace, k);
        }
        keys.iter()
            .zip(states)
            .map(|(k, s)| match s {
                None => answers.next().unwrap_or(Err(Error::Closed)),
                Some(_) => self.get(keyspace, k),
            })
            .collect()
    }

    fn cursor(&self, keyspace: u32, (lower, upper): read_set::KeyRange) -> Result<TxCursor<'_>> {
        self.inner.life.check_open()?;
        let writes = {
            let st = self.state.lock();
            st.writes
                .keyspace(keyspace)
                .map(|w| {
                    w.within(crate::version::borrowed(&lower), crate::version::borrowed(&upper))
                })
                .unwrap_or_default()
        };
        let sv = self.inner.super_version();
        let config = CursorConfig::of(&self.inner, keyspace).reading(&ReadOptions::default());
        let reads = self.inner.reads.clone();
        let seq = self.read_sequence();
        let bounds = (lower.clone(), upper.clone());
        let base = DbCursor::new(sv, reads, keyspace, seq, bounds.0, bounds.1, config);
        Ok(TxCursor::new(self, keyspace, base, writes, (lower, upper)))
    }

    fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        keyspace: u32,
        range: R,
    ) -> Result<TxIterator<'_>> {
        let own = |b: Bound<&K>| b.map(|k| k.as_ref().to_vec());
        let bounds = (own(range.start_bound()), own(range.end_bound()));
        TxIterator::new(self.cursor(keyspace, bounds)?)
    }

    fn prefix(&self, keyspace: u32, prefix: &[u8]) -> Result<TxIterator<'_>> {
        let upper = crate::prefix::successor(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        TxIterator::new(self.cursor(keyspace, (Bound::Included(prefix.to_vec()), upper))?)
    }

    fn push(&self, op: Op) -> Result<()> {
        self.inner.check_writable()?;
        self.state.lock().writes.push(op);
        Ok(())
    }

    fn put(&self, keyspace: u32, key: &[u8], value: &[u8]) -> Result<()> {
        check_sizes(key, value)?;
        self.push(Op::Put { keyspace, key: key.to_vec(), value: value.to_vec() })
    }

    fn merge(&self, keyspace: u32, key: &[u8], operand: &[u8]) -> Result<()> {
        check_sizes(key, operand)?;
        if self.inner.opts.merge_operator.is_none() {
            return Err(Error::invalid(
                "a merge needs a merge operator, and Options::merge_operator is None",
            ));
        }
        self.push(Op::Merge { keyspace, key: key.to_vec(), operand: operand.to_vec() })
    }

    fn delete(&self, keyspace: u32, key: &[u8]) -> Result<()> {
        check_sizes(key, &[])?;
        self.push(Op::Delete { keyspace, key: key.to_vec() })
    }

    fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        keyspace: u32,
        range: R,
    ) -> Result<()> {
        let (start, end) =
            crate::batch::tombstone_bounds(&range).map_err(Error::InvalidArgument)?;
        check_sizes(&start, &[])?;
        check_sizes(&end, &[])?;
        if start > end {
            return Err(Error::invalid(format!(
                "delete_range: start {:?} is past end {:?}",
                start.escape_ascii().to_string(),
                end.escape_ascii().to_string()
            )));
        }
        if start == end {
            return self.inner.check_writable();
        }
        self.push(Op::DeleteRange { keyspace, start, end })
    }
}

fn check_sizes(key: &[u8], value: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(Error::invalid(format!(
            "key of {} bytes exceeds MAX_KEY_SIZE ({MAX_KEY_SIZE})",
            key.len()
        )));
    }
    if value.len() > MAX_VALUE_SIZE {
        return Err(Error::invalid(format!(
            "value of {} bytes exceeds MAX_VALUE_SIZE ({MAX_VALUE_SIZE})",
            value.len()
        )));
    }
    Ok(())
}

/// The read and write methods of a transaction view that has
/// `fn view(&self) -> Result<(&Shared, u32)>` (the transaction and a keyspace id).
macro_rules! tx_methods {
    () => {
        /// The value of `key` in the transaction's view (the snapshot with its own writes;
        /// a buffered merge is applied onto the snapshot's value with the merge operator).
        pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
            let (tx, ks) = self.view()?;
            tx.get(ks, key.as_ref())
        }

        /// Whether `key` has a value in the transaction's view.
        pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool> {
            let (tx, ks) = self.view()?;
            tx.contains_key(ks, key.as_ref())
        }

        /// The values of `keys` in the transaction's view, in their order.
        pub fn multi_get<K: AsRef<[u8]>>(
            &self,
            keys: impl IntoIterator<Item = K>,
        ) -> Vec<Result<Option<Vec<u8>>>> {
            let keys: Vec<K> = keys.into_iter().collect();
            let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
            match self.view() {
                Ok((tx, ks)) => tx.multi_get(ks, &keys),
                Err(e) => keys.iter().map(|_| Err(e.duplicate())).collect(),
            }
        }

        /// Entries with keys in `range`, in key order (double-ended), in the transaction's
        /// view as of the call. Serializable: the part traversed is validated at commit.
        pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<TxIterator<'_>> {
            let (tx, ks) = self.view()?;
            tx.range(ks, range)
        }

        /// Every entry in key order, in the transaction's view.
        pub fn scan(&self) -> Result<TxIterator<'_>> {
            self.range::<&[u8], _>(..)
        }

        /// Entries whose key starts with `prefix`, in the transaction's view.
        pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<TxIterator<'_>> {
            let (tx, ks) = self.view()?;
            tx.prefix(ks, prefix.as_ref())
        }

        /// A seekable cursor over the transaction's view as of the call, moving both ways.
        pub fn cursor(&self) -> Result<TxCursor<'_>> {
            let (tx, ks) = self.view()?;
            tx.cursor(ks, (Bound::Unbounded, Bound::Unbounded))
        }

        /// Buffers a put of `key` -> `value`.
        pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
            let (tx, ks) = self.view()?;
            tx.put(ks, key.as_ref(), value.as_ref())
        }

        /// Buffers a merge operand for `key`; without a merge operator configured it is
        /// [`Error::InvalidArgument`] and nothing is buffered.
        pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
            let (tx, ks) = self.view()?;
            tx.merge(ks, key.as_ref(), operand.as_ref())
        }

        /// Buffers a delete of `key`.
        pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
            let (tx, ks) = self.view()?;
            tx.delete(ks, key.as_ref())
        }

        /// Buffers a deletion of every key in `range` (one range tombstone at commit; the
        /// bounds are checked as [`crate::Db::delete_range`] checks them). Reads of the
        /// transaction no longer see the keys it covers, until written again.
        pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<()> {
            let (tx, ks) = self.view()?;
            tx.delete_range(ks, range)
        }
    };
}

impl Transaction {
    tx_methods!();

    fn view(&self) -> Result<(&Shared, u32)> {
        Ok((&self.shared, DEFAULT_KEYSPACE))
    }

    /// A view of keyspace `ks` through this transaction: reads and writes of it join this
    /// transaction. A handle of another database, or of a dropped keyspace, is
    /// [`Error::InvalidArgument`].
    pub fn keyspace(&self, ks: &Keyspace) -> Result<TxKeyspace<'_>> {
        if !ks.belongs_to(&self.shared.inner) {
            return Err(Error::invalid(format!(
                "keyspace '{}' belongs to another database",
                ks.name()
            )));
        }
        ks.check_live()?;
        self.shared.state.lock().keyspaces.entry(ks.id()).or_insert_with(|| ks.clone());
        Ok(TxKeyspace { tx: self, ks: ks.clone() })
    }

    /// The sequence number of the snapshot the transaction reads (taken by its first read, or
    /// by this call; at begin under [`Isolation::Snapshot`]).
    pub fn read_sequence(&self) -> u64 {
        self.shared.read_sequence()
    }

    /// Pushes a savepoint: [`Transaction::rollback_to_savepoint`] undoes the writes made after
    /// it.
    pub fn savepoint(&self) {
        self.shared.state.lock().writes.savepoint();
    }

    /// Undoes the writes made since the last savepoint and pops it. The reads made since stay
    /// tracked: they were made, and what the transaction does next may depend on them. With no
    /// savepoint set it is [`Error::InvalidArgument`].
    pub fn rollback_to_savepoint(&self) -> Result<()> {
        self.shared.inner.life.check_open()?;
        if self.shared.state.lock().writes.rollback_to_savepoint() {
            Ok(())
        } else {
            Err(Error::invalid("rollback_to_savepoint: no savepoint is set"))
        }
    }

    /// Discards the transaction (as dropping it does).
    pub fn rollback(self) {}

    /// Validates and applies the transaction. Its writes become one batch (one WAL record,
    /// atomic, durable as `TransactionOptions::write` says); before the batch gets its
    /// sequence numbers, under the writer lock, the commit checks that no version newer than
    /// [`Transaction::read_sequence`] exists for what the isolation level checks, and fails
    /// with [`Error::Conflict`] naming the first such key or range otherwise (nothing is
    /// written; retry with a new transaction). A transaction that wrote nothing commits without
    /// a check: under serializable isolation it read one snapshot and serializes there.
    pub fn commit(self) -> Result<()> {
        let tx = self.shared;
        let sync = tx.opts.write.sync;
        let st = tx.state.into_inner();
        if st.writes.is_empty() {
            tx.inner.life.check_open()?;
            // A synced commit still promises that every earlier write is durable.
            return if sync { crate::db::write::sync_wal(&tx.inner) } else { Ok(()) };
        }
        tx.inner.check_writable()?;
        let names = |id: u32| -> String {
            match st.keyspaces.get(&id) {
                Some(k) => k.name().to_string(),
                None => crate::keyspace_options::DEFAULT_KEYSPACE_NAME.to_string(),
            }
        };
        let mut batch = WriteBatch::new();
        let mut points: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut ranges: Vec<(u32, read_set::KeyRange)> = Vec::new();
        let snapshot_iso = tx.opts.isolation == Isolation::Snapshot;
        for (&id, w) in &st.writes.by_keyspace {
            let handle = st.keyspaces.get(&id);
            for (start, end) in &w.ranges {
                match handle {
                    Some(ks) => batch.delete_range_in(ks, start.as_slice()..end.as_slice()),
                    None => batch.delete_range(start.as_slice()..end.as_slice()),
                };
                if snapshot_iso {
                    ranges
                        .push((id, (Bound::Included(start.clone()), Bound::Excluded(end.clone()))));
                }
            }
            for (key, p) in &w.points {
                match (&p.base, handle) {
                    (Base::Value(v), Some(ks)) => batch.put_in(ks, key, v),
                    (Base::Value(v), None) => batch.put(key, v),
                    (Base::Deleted, Some(ks)) => batch.delete_in(ks, key),
                    (Base::Deleted, None) => batch.delete(key),
                    (Base::Snapshot, _) => &mut batch,
                };
                for op in &p.operands {
                    match handle {
                        Some(ks) => batch.merge_in(ks, key, op),
                        None => batch.merge(key, op),
                    };
                }
                if snapshot_iso {
                    points.push((id, key.clone()));
                }
            }
        }
        if !snapshot_iso {
            for (&id, keys) in &st.reads.points {
                points.extend(keys.iter().map(|k| (id, k.clone())));
            }
            ranges.extend(st.reads.ranges.iter().filter_map(|(id, r)| Some((*id, r.clone()?))));
        }
        if points.is_empty() && ranges.is_empty() {
            return crate::db::write::write(&tx.inner, batch, sync);
        }
        // Something to check means a read (serializable) or snapshot isolation, which registers
        // the snapshot at begin: either way it exists. Checking against the current sequence
        // instead would pass everything, so its absence is refused rather than assumed.
        let Some(read_seq) = tx.snapshot.get().map(Snapshot::sequence) else {
            debug_assert!(
                false,
                "a transaction with reads or written keys to check has a snapshot"
            );
            return Err(Error::invalid("a transaction to validate has no read snapshot"));
        };
        let inner = &tx.inner;
        let mut check = |sv: &crate::db::SuperVersion| -> Result<()> {
            let conflict = |id: u32, (key, end): validate::Found| Error::Conflict {
                keyspace: names(id),
                key,
                end,
            };
            for (id, key) in &points {
                if let Some(found) = validate::check_key(inner, sv, *id, key, read_seq)? {
                    return Err(conflict(*id, found));
                }
            }
            for (id, (lo, hi)) in &ranges {
                if let Some(found) = validate::check_range(
                    inner,
                    sv,
                    *id,
                    (crate::version::borrowed(lo), crate::version::borrowed(hi)),
                    read_seq,
                )? {
                    return Err(conflict(*id, found));
                }
            }
            Ok(())
        };
        crate::db::write::write_checked(inner, batch, sync, Some(&mut check))
    }
}

impl TxKeyspace<'_> {
    tx_methods!();

    fn view(&self) -> Result<(&Shared, u32)> {
        self.ks.check_live()?;
        Ok((&self.tx.shared, self.ks.id()))
    }
}
