//! The Raft log in siftdb: openraft's `RaftLogStorage`.
//!
//! Durability, where openraft requires it (README.md, "What is synced"):
//! - `save_vote`, `truncate` and `purge` are synced writes: they return once the WAL is fsynced.
//! - `append` writes the entries without waiting and hands the callback to the flusher thread,
//!   which fsyncs the WAL once for every callback queued meanwhile (group commit) and only then
//!   reports the entries persisted. siftdb's WAL is ordered, so that fsync covers every earlier
//!   write too.
//! - `save_committed` is not synced; openraft allows losing it.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote};
use parking_lot::Mutex;
use siftdb::{Db, Keyspace, WriteBatch, WriteOptions};

use super::{log_key, to_any};
use crate::{NodeId, TypeConfig};

/// Above every log key (which are 8 bytes): the exclusive end of "everything from here on".
const PAST_LAST_KEY: [u8; 9] = [0xff; 9];

type Flushed = LogFlushed<TypeConfig>;

/// The log store. Clones share the database; a clone is also the log reader.
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

struct Shared {
    db: Arc<Db>,
    log: Keyspace,
    meta: Keyspace,
    flusher: Mutex<Option<(mpsc::Sender<Flushed>, JoinHandle<()>)>>,
}

impl LogStore {
    pub(super) fn new(db: Arc<Db>, log: Keyspace, meta: Keyspace) -> siftdb::Result<LogStore> {
        let (tx, rx) = mpsc::channel::<Flushed>();
        let flusher_db = db.clone();
        let handle = std::thread::Builder::new()
            .name("raft-log-flusher".into())
            .spawn(move || flush_loop(&flusher_db, &rx))
            .map_err(|e| {
                siftdb::Error::InvalidArgument(format!("cannot start the flusher thread: {e}"))
            })?;
        Ok(LogStore {
            shared: Arc::new(Shared { db, log, meta, flusher: Mutex::new(Some((tx, handle))) }),
        })
    }

    fn get_meta<T: serde::de::DeserializeOwned>(
        &self,
        key: &[u8],
    ) -> Result<Option<T>, StorageIOError<NodeId>> {
        let Some(bytes) = self.shared.meta.get(key).map_err(|e| StorageIOError::read(to_any(e)))?
        else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            StorageIOError::read(to_any(format!(
                "raft_meta key {:?}: {e}",
                String::from_utf8_lossy(key)
            )))
        })
    }

    fn write(&self, batch: WriteBatch, sync: bool) -> siftdb::Result<()> {
        self.shared.db.write_opt(batch, WriteOptions { sync })
    }
}

/// Drains the queue of append callbacks: one WAL fsync per wake-up covers every append queued
/// before it. Ends when the store is dropped.
fn flush_loop(db: &Db, rx: &mpsc::Receiver<Flushed>) {
    while let Ok(first) = rx.recv() {
        let mut waiting = vec![first];
        waiting.extend(rx.try_iter());
        let result = db.sync_wal();
        for callback in waiting {
            let r = match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(std::io::Error::other(format!("sync the WAL: {e}"))),
            };
            callback.log_io_completed(r);
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.flusher.lock().take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}

fn decode_entry(key: &[u8], value: &[u8]) -> Result<Entry<TypeConfig>, StorageIOError<NodeId>> {
    super::entry_codec::decode(value)
        .map_err(|e| StorageIOError::read_logs(to_any(format!("log entry at key {key:?}: {e}"))))
}

fn key_bound(b: Bound<&u64>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(&i) => Bound::Included(log_key(i).to_vec()),
        Bound::Excluded(&i) => Bound::Excluded(log_key(i).to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let bounds = (key_bound(range.start_bound()), key_bound(range.end_bound()));
        let iter =
            self.shared.log.range(bounds).map_err(|e| StorageIOError::read_logs(to_any(e)))?;
        let mut out = Vec::new();
        for item in iter {
            let (k, v) = item.map_err(|e| StorageIOError::read_logs(to_any(e)))?;
            out.push(decode_entry(&k, &v)?);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let last_purged: Option<LogId<NodeId>> = self.get_meta(b"last_purged")?;
        let mut iter = self.shared.log.scan().map_err(|e| StorageIOError::read_logs(to_any(e)))?;
        let last = match iter.next_back() {
            Some(item) => {
                let (k, v) = item.map_err(|e| StorageIOError::read_logs(to_any(e)))?;
                Some(decode_entry(&k, &v)?.log_id)
            }
            None => last_purged,
        };
        Ok(LogState { last_purged_log_id: last_purged, last_log_id: last })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut b = WriteBatch::new();
        b.put_in(&self.shared.meta, b"vote", serde_json::to_vec(vote).expect("Vote serializes"));
        self.write(b, true).map_err(|e| StorageIOError::write_vote(to_any(e)))?;
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(self.get_meta(b"vote")?)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        let mut b = WriteBatch::new();
        b.put_in(
            &self.shared.meta,
            b"committed",
            serde_json::to_vec(&committed).expect("LogId serializes"),
        );
        self.write(b, false).map_err(|e| StorageIOError::write(to_any(e)))?;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        Ok(self.get_meta::<Option<LogId<NodeId>>>(b"committed")?.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: Flushed) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut b = WriteBatch::new();
        for entry in entries {
            let mut value = Vec::with_capacity(64);
            super::entry_codec::encode(&entry, &mut value);
            b.put_in(&self.shared.log, log_key(entry.log_id.index), value);
        }
        self.write(b, false).map_err(|e| StorageIOError::write_logs(to_any(e)))?;
        let flusher = self.shared.flusher.lock();
        let sent = flusher.as_ref().map(|(tx, _)| tx.send(callback));
        match sent {
            Some(Ok(())) => Ok(()),
            // The flusher is gone only while the store is being dropped.
            _ => Err(StorageIOError::write_logs(to_any("the log flusher has stopped")).into()),
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut b = WriteBatch::new();
        b.delete_range_in(
            &self.shared.log,
            log_key(log_id.index).as_slice()..PAST_LAST_KEY.as_slice(),
        );
        self.write(b, true).map_err(|e| StorageIOError::write_logs(to_any(e)))?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        // The purged id is recorded in the same batch as the deletion, so the log state read back
        // after a crash is one or the other, never "entries gone, purge point unknown".
        let mut b = WriteBatch::new();
        b.put_in(
            &self.shared.meta,
            b"last_purged",
            serde_json::to_vec(&log_id).expect("LogId serializes"),
        );
        match log_id.index.checked_add(1) {
            Some(end) => b.delete_range_in(&self.shared.log, log_key(0)..log_key(end)),
            None => {
                b.delete_range_in(&self.shared.log, log_key(0).as_slice()..PAST_LAST_KEY.as_slice())
            }
        };
        // Synced: this also makes every state-machine write before it durable, so the applied
        // state read back after power loss is never behind the purge point (README.md).
        self.write(b, true).map_err(|e| StorageIOError::write_logs(to_any(e)))?;
        Ok(())
    }
}
