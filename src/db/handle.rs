//! One shape for every handle. [`Db`](super::Db), [`Keyspace`](super::Keyspace) and
//! [`Snapshot`](super::Snapshot) read through the same methods with the same signatures, and
//! `Db` and `Keyspace` write through the same methods: both sets are generated here from one
//! definition ([`read_methods!`], [`write_methods!`]), so they cannot drift apart. A handle only
//! says where its reads go ([`ReadView`]: which keyspace, at which moment) and where its writes
//! go (a keyspace).

use super::cursor::{CursorConfig, DbCursor};
use super::DbInner;
use crate::db::read::ReadAt;
use crate::error::{Error, Result};
use crate::options::ReadOptions;
use std::ops::Bound;
use std::sync::Arc;

/// Where a handle's reads go.
pub(crate) struct ReadView<'a> {
    pub inner: &'a Arc<DbInner>,
    pub keyspace: u32,
    pub at: ReadAt,
}

impl ReadView<'_> {
    /// A seekable cursor over the view, positioned on no entry.
    pub(crate) fn cursor(&self, opts: &ReadOptions) -> Result<DbCursor> {
        self.inner.life.check_open()?;
        // The super-version before the sequence (design.md#concurrency, rule 2).
        let sv = self.inner.super_version();
        let seq = self.at.sequence(self.inner);
        let config = CursorConfig::of(self.inner, self.keyspace).reading(opts);
        let reads = self.inner.reads.clone();
        Ok(DbCursor::new(sv, reads, self.keyspace, seq, Bound::Unbounded, Bound::Unbounded, config))
    }
}

/// The error of a multi-key read through a handle that cannot read, once per key.
pub(crate) fn failed_each(e: &Error, keys: usize) -> Vec<Result<Option<Vec<u8>>>> {
    (0..keys).map(|_| Err(e.duplicate())).collect()
}

/// The read methods of a handle that has `fn read_view(&self) -> Result<ReadView<'_>>`.
/// `$when` completes "as of …" in the docs ("now", "the snapshot").
macro_rules! read_methods {
    ($when:literal) => {
        #[doc = concat!("The value of `key`, as of ", $when, ".")]
        pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
            let v = self.read_view()?;
            crate::db::read::get(v.inner, v.keyspace, key.as_ref(), v.at)
        }

        #[doc = concat!("The value of `key`, as of ", $when, ", without copying it: a value \
            found in a table stays in its data block, which the returned \
            [`PinnedValue`](crate::PinnedValue) holds (RocksDB's `PinnableSlice`).")]
        pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<crate::PinnedValue>> {
            let v = self.read_view()?;
            crate::db::read::get_pinned(v.inner, v.keyspace, key.as_ref(), v.at)
        }

        #[doc = concat!("Whether `key` has a value as of ", $when, ": a `get` that copies no \
            value. A key that no filter admits costs filter probes only.")]
        pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool> {
            let v = self.read_view()?;
            crate::db::read::contains_key(v.inner, v.keyspace, key.as_ref(), v.at)
        }

        #[doc = concat!("The values of `keys` as of ", $when, ", in their order (duplicates \
            allowed): the answers of one `get` per key at one common moment, with every key \
            hashed once, each file's filter probed for all keys before any of its blocks is \
            read, and blocks read in key order. A failed block read is the result of the keys \
            that needed it only.")]
        pub fn multi_get<K: AsRef<[u8]>>(
            &self,
            keys: impl IntoIterator<Item = K>,
        ) -> Vec<Result<Option<Vec<u8>>>> {
            self.multi_get_opt(keys, &crate::ReadOptions::default())
        }

        /// [`multi_get`](Self::multi_get) with read options: with
        /// [`ReadOptions::multi_get_threads`](crate::ReadOptions::multi_get_threads) above 1 a
        /// large batch is looked up on several threads. Options out of range fail every key
        /// with [`Error::InvalidArgument`](crate::Error::InvalidArgument).
        pub fn multi_get_opt<K: AsRef<[u8]>>(
            &self,
            keys: impl IntoIterator<Item = K>,
            opts: &crate::ReadOptions,
        ) -> Vec<Result<Option<Vec<u8>>>> {
            let keys: Vec<K> = keys.into_iter().collect();
            let v = match opts.validate().and_then(|()| self.read_view()) {
                Ok(v) => v,
                Err(e) => return crate::db::handle::failed_each(&e, keys.len()),
            };
            let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
            let threads = opts.multi_get_threads;
            crate::db::multi_get::multi_get(v.inner, v.keyspace, &keys, v.at, threads)
        }

        #[doc = concat!("Entries with keys in `range`, in key order (double-ended), as of ", $when, ".")]
        pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
            &self,
            range: R,
        ) -> Result<crate::db::DbIterator> {
            self.range_opt(range, &crate::ReadOptions::default())
        }

        /// [`range`](Self::range) with read options (say, a bulk scan that leaves the block
        /// cache as it found it).
        pub fn range_opt<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
            &self,
            range: R,
            opts: &crate::ReadOptions,
        ) -> Result<crate::db::DbIterator> {
            let v = self.read_view()?;
            crate::db::DbIterator::new(v.inner.clone(), v.keyspace, &range, v.at, opts)
        }

        #[doc = concat!("Every entry in key order, as of ", $when, ".")]
        pub fn scan(&self) -> Result<crate::db::DbIterator> {
            self.range::<&[u8], _>(..)
        }

        #[doc = concat!("Entries whose key starts with `prefix`, as of ", $when, ".")]
        pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<crate::db::DbIterator> {
            let v = self.read_view()?;
            let opts = crate::ReadOptions::default();
            crate::db::DbIterator::with_prefix(v.inner.clone(), v.keyspace, prefix.as_ref(), v.at, &opts)
        }

        #[doc = concat!("A seekable cursor over the entries as of ", $when, ", moving both ways \
            (RocksDB's iterator: `seek`, `seek_for_prev`, `next`, `prev`). It starts on no entry.")]
        pub fn cursor(&self) -> Result<crate::db::DbCursor> {
            self.cursor_opt(&crate::ReadOptions::default())
        }

        /// [`cursor`](Self::cursor) with read options.
        pub fn cursor_opt(&self, opts: &crate::ReadOptions) -> Result<crate::db::DbCursor> {
            self.read_view()?.cursor(opts)
        }
    };
}

/// The write methods of a handle that has `fn keyspace_ref(&self) -> Option<&Keyspace>` (`None`:
/// the default keyspace) and `fn db_inner(&self) -> &Arc<DbInner>`.
macro_rules! write_methods {
    () => {
        /// Sets `key` to `value` (buffered durability; see [`WriteOptions`](crate::WriteOptions)).
        pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
            let (key, value) = (key.as_ref(), value.as_ref());
            let mut b =
                crate::WriteBatch::with_capacity(crate::WriteBatch::put_size(key, value) + 5);
            match self.keyspace_ref() {
                Some(ks) => b.put_in(ks, key, value),
                None => b.put(key, value),
            };
            self.write(b)
        }

        /// Merges `operand` into `key` (RocksDB's `Merge`): records the operand without reading
        /// the key; a read applies [`Options::merge_operator`](crate::Options::merge_operator)
        /// to the key's base value and the operands written since, so concurrent
        /// read-modify-writes (counters, appends) lose nothing. Without a merge operator
        /// configured it is [`Error::InvalidArgument`](crate::Error::InvalidArgument) and
        /// nothing is written.
        pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
            let (key, operand) = (key.as_ref(), operand.as_ref());
            let mut b =
                crate::WriteBatch::with_capacity(crate::WriteBatch::put_size(key, operand) + 5);
            match self.keyspace_ref() {
                Some(ks) => b.merge_in(ks, key, operand),
                None => b.merge(key, operand),
            };
            self.write(b)
        }

        /// Deletes `key` (writes a tombstone).
        pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
            let mut b = crate::WriteBatch::new();
            match self.keyspace_ref() {
                Some(ks) => b.delete_in(ks, key),
                None => b.delete(key),
            };
            self.write(b)
        }

        /// Deletes every key in `range` with one range tombstone (design.md#range-tombstones):
        /// point lookups, scans, snapshots taken later, flush and compaction all
        /// respect it; snapshots taken before still see the keys, and later writes into the
        /// range are visible. `a..b`, `a..=b`, `..b` are all accepted; a range open at the top
        /// (`a..`) has no end for a tombstone and is
        /// [`Error::InvalidArgument`](crate::Error::InvalidArgument), as is a start past the
        /// end (naming both bounds). An empty range writes nothing.
        pub fn delete_range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
            &self,
            range: R,
        ) -> Result<()> {
            let mut b = crate::WriteBatch::new();
            match self.keyspace_ref() {
                Some(ks) => b.delete_range_in(ks, range),
                None => b.delete_range(range),
            };
            self.write(b)
        }

        /// Applies a batch atomically with default write options.
        pub fn write(&self, batch: crate::WriteBatch) -> Result<()> {
            self.write_opt(batch, crate::WriteOptions::default())
        }

        /// Applies a batch atomically: after a crash either every record is present or none.
        /// The batch names its keyspaces itself ([`WriteBatch::put_in`](crate::WriteBatch::put_in));
        /// through any handle it goes to the handle's database. An empty batch writes nothing;
        /// with `sync` it still fsyncs the WAL, so every earlier write is durable when it
        /// returns (as [`Db::sync_wal`](crate::Db::sync_wal)).
        pub fn write_opt(&self, batch: crate::WriteBatch, opts: crate::WriteOptions) -> Result<()> {
            crate::db::write::write(self.db_inner(), batch, opts.sync)
        }
    };
}

pub(crate) use read_methods;
pub(crate) use write_methods;
