//! The Raft log: openraft's `RaftLogStorage` over append-only segment files (segment.rs), with
//! the vote, the committed and the purged log ids in siftdb's `raft_meta` keyspace. docs/log.md
//! has the byte format and the crash story.
//!
//! Durability, where openraft requires it (README.md, "What is synced"):
//! - `append` adds the entries to the last segment's tail in memory and hands the callback to
//!   the flusher thread, which writes the tail's unwritten bytes and fdatasyncs that segment once
//!   for every callback queued meanwhile (group commit), and only then reports the entries
//!   persisted. Earlier segments were written and synced when the next one was created.
//! - `save_vote` and `purge` are synced siftdb writes; `truncate` fsyncs the segment it cuts.
//! - `save_committed` is not synced; openraft allows losing it.

use std::fmt::Debug;
use std::fs;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote};
use parking_lot::{Mutex, RwLock};
use siftdb::{Db, Keyspace, KeyspaceOptions, WriteBatch, WriteOptions};

use super::segment::{self, SegmentLog};
use super::{to_any, StoreError, LOG_DIR, LOG_KEYSPACE, LOG_MIGRATE_DIR};
use crate::{NodeId, TypeConfig};

/// A segment past this many bytes is closed and the next append starts a new one.
pub(crate) const SEGMENT_BYTES: u64 = 64 << 20;

/// Most bytes of entries (as framed in the segments, about their size on the wire) one
/// `limited_get_log_entries` returns, so one AppendEntries carries at most this much (or one
/// entry, when that alone is larger). openraft 0.9 gives each AppendEntries
/// `Config::heartbeat_interval` (100 ms here) to be encoded, sent, appended, synced and answered,
/// and on a timeout resends the same range: without a byte bound a follower that fell behind by
/// up to `max_payload_entries` (300) large entries is sent hundreds of MiB per request, every
/// request times out, and it never catches up (docs/log.md, "Replication").
pub(crate) const APPEND_PAYLOAD_BYTES: u64 = 2 << 20;

type Flushed = LogFlushed<TypeConfig>;

/// The log store. Clones share the log; a clone is also the log reader.
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

/// The segments and the purge point, changed together under one lock.
struct Log {
    segments: SegmentLog,
    /// The durable purge point (also in `raft_meta`): entries at or below it are not read back
    /// even while their segment still holds later ones.
    last_purged: Option<LogId<NodeId>>,
}

struct Shared {
    db: Arc<Db>,
    meta: Keyspace,
    log: Arc<RwLock<Log>>,
    flusher: Mutex<Option<(mpsc::Sender<Flushed>, JoinHandle<()>)>>,
}

fn read_meta<T: serde::de::DeserializeOwned>(
    meta: &Keyspace,
    key: &[u8],
) -> Result<Option<T>, String> {
    let Some(bytes) = meta.get(key).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| format!("raft_meta key {:?}: {e}", String::from_utf8_lossy(key)))
}

impl LogStore {
    /// Opens the log of the node directory `dir`: its segments under `raftlog/`, made from the
    /// `raft_log` keyspace of an earlier version when that directory does not exist yet.
    pub(super) fn open(db: Arc<Db>, meta: Keyspace, dir: &Path) -> Result<LogStore, StoreError> {
        let last_purged: Option<LogId<NodeId>> = read_meta(&meta, b"last_purged")
            .map_err(|e| StoreError::Db(siftdb::Error::InvalidArgument(e)))?;
        migrate(&db, dir)?;
        let (segments, _recovery) =
            SegmentLog::open(&dir.join(LOG_DIR), last_purged.map(|l| l.index), SEGMENT_BYTES)?;
        let log = Arc::new(RwLock::new(Log { segments, last_purged }));
        let (tx, rx) = mpsc::channel::<Flushed>();
        let flusher_log = log.clone();
        let handle = std::thread::Builder::new()
            .name("raft-log-flusher".into())
            .spawn(move || flush_loop(&flusher_log, &rx))
            .map_err(|e| StoreError::Io {
                what: "start the log flusher thread".into(),
                source: e,
            })?;
        Ok(LogStore {
            shared: Arc::new(Shared { db, meta, log, flusher: Mutex::new(Some((tx, handle))) }),
        })
    }

    fn get_meta<T: serde::de::DeserializeOwned>(
        &self,
        key: &[u8],
    ) -> Result<Option<T>, StorageIOError<NodeId>> {
        read_meta(&self.shared.meta, key).map_err(|e| StorageIOError::read(to_any(e)))
    }

    fn write(&self, batch: WriteBatch, sync: bool) -> siftdb::Result<()> {
        self.shared.db.write_opt(batch, WriteOptions { sync })
    }

    /// Writes `entries` into the segments, unsynced (the flusher syncs them).
    fn write_entries(&self, entries: &[Entry<TypeConfig>]) -> Result<(), StoreError> {
        let mut log = self.shared.log.write();
        if let (Some(first), Some(next)) =
            (entries.first().map(|e| e.log_id.index), log.segments.next_index())
        {
            // Entries replacing held ones: openraft may append over entries it no longer counts
            // (those past a state machine that was ahead of the log at startup, which it purged
            // to). The replaced ones go first, durably, as `truncate` does.
            if first < next {
                log.segments.truncate(first)?;
            }
        }
        log.segments.append(entries)
    }

    /// The last log id: the last entry's, or the purge point when no entry is held.
    fn last_log_id(log: &Log) -> Option<LogId<NodeId>> {
        log.segments.last_log_id().or(log.last_purged)
    }
}

/// Makes `raftlog/` if it does not exist: from the entries of the `raft_log` keyspace an earlier
/// version wrote, if any. The segments are written into `raftlog.migrate/`, synced, and the
/// directory renamed (so `raftlog/` is complete or absent), then the keyspace is dropped. A crash
/// before the rename redoes the copy; after it, the open drops the keyspace it left.
fn migrate(db: &Db, dir: &Path) -> Result<(), StoreError> {
    let io = |what: &str, path: &Path, e: std::io::Error| StoreError::Io {
        what: format!("{what} {}", path.display()),
        source: e,
    };
    let log_dir = dir.join(LOG_DIR);
    let staging = dir.join(LOG_MIGRATE_DIR);
    let has_keyspace = db.keyspace_names().iter().any(|n| n == LOG_KEYSPACE);
    if !log_dir.exists() {
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(|e| io("remove", &staging, e))?;
        }
        fs::create_dir(&staging).map_err(|e| io("create", &staging, e))?;
        if has_keyspace {
            let old = db.keyspace(LOG_KEYSPACE, KeyspaceOptions::default())?;
            let (mut segments, _) = SegmentLog::open(&staging, None, SEGMENT_BYTES)?;
            let mut batch = Vec::new();
            for item in old.scan()? {
                let (k, v) = item?;
                let entry = super::entry_codec::decode(&v).map_err(|e| {
                    StoreError::Db(siftdb::Error::InvalidArgument(format!(
                        "raft_log entry at key {k:?}: {e}"
                    )))
                })?;
                batch.push(entry);
                if batch.len() == 1024 {
                    segments.append(&batch)?;
                    batch.clear();
                }
            }
            segments.append(&batch)?;
            segments.sync()?;
        }
        segment::sync_dir(&staging)?;
        fs::rename(&staging, &log_dir).map_err(|e| io("rename", &staging, e))?;
        segment::sync_dir(dir)?;
    }
    if has_keyspace {
        db.drop_keyspace(LOG_KEYSPACE)?;
    }
    Ok(())
}

/// Drains the queue of append callbacks: one write and one fdatasync of the last segment per
/// wake-up cover every append queued before it. Ends when the store is dropped.
fn flush_loop(log: &RwLock<Log>, rx: &mpsc::Receiver<Flushed>) {
    let io = log.read().segments.io_lock();
    while let Ok(first) = rx.recv() {
        let mut waiting = vec![first];
        waiting.extend(rx.try_iter());
        // After the callbacks: every append they stand for is in this tail or in a segment
        // synced before it was created (or in one a truncate or purge removed since).
        let result = flush(log, &io);
        for callback in waiting {
            let r = match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(std::io::Error::other(e.to_string())),
            };
            callback.log_io_completed(r);
        }
    }
}

/// Writes the last segment's unwritten bytes and syncs it, without holding the log's lock
/// through the I/O (appends and reads go on meanwhile).
fn flush(log: &RwLock<Log>, io: &parking_lot::Mutex<()>) -> Result<(), StoreError> {
    let held = log.read();
    // Free at once: a roll or truncation takes it only under the log's write lock.
    let io_held = io.lock();
    let Some((pending, file)) = held.segments.to_flush() else { return Ok(()) };
    drop(held);
    let sync_err = |e| StoreError::Io { what: "write and sync the log segment".into(), source: e };
    let done = pending.map(|p| p.write(&file)).transpose().map_err(sync_err)?;
    file.sync_data().map_err(sync_err)?;
    // Released before the write lock is taken: a roll waits for `io` under that lock.
    drop(io_held);
    match done {
        Some(done) => log.write().segments.written(&done),
        None => Ok(()),
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

/// `range` as a half-open `start..end` of indexes.
fn index_range(range: &impl RangeBounds<u64>) -> (u64, u64) {
    let start = match range.start_bound() {
        Bound::Included(&i) => i,
        Bound::Excluded(&i) => i.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&i) => i.saturating_add(1),
        Bound::Excluded(&i) => i,
        Bound::Unbounded => u64::MAX,
    };
    (start, end)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let (start, end) = index_range(&range);
        let log = self.shared.log.read();
        let start = match log.last_purged {
            Some(p) => start.max(p.index.saturating_add(1)),
            None => start,
        };
        Ok(log.segments.read(start, end).map_err(|e| StorageIOError::read_logs(to_any(e)))?)
    }

    /// The entries from `start` whose bytes add up to at most `APPEND_PAYLOAD_BYTES` (at least
    /// one): what replication sends in one AppendEntries.
    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let log = self.shared.log.read();
        let start = match log.last_purged {
            Some(p) => start.max(p.index.saturating_add(1)),
            None => start,
        };
        let end = log.segments.end_within(start, end, APPEND_PAYLOAD_BYTES);
        Ok(log.segments.read(start, end).map_err(|e| StorageIOError::read_logs(to_any(e)))?)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let log = self.shared.log.read();
        Ok(LogState { last_purged_log_id: log.last_purged, last_log_id: Self::last_log_id(&log) })
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
        let committed = self.get_meta::<Option<LogId<NodeId>>>(b"committed")?.flatten();
        // The committed id and the segments are synced independently: after a power loss the
        // id may name entries the log no longer holds. openraft would re-apply up to it and fail
        // to read them, so it is reported lost instead (allowed: it is re-learned from the
        // leader, and what was applied is in the state machine).
        let last = Self::last_log_id(&self.shared.log.read());
        Ok(committed.filter(|c| Some(*c) <= last))
    }

    async fn append<I>(&mut self, entries: I, callback: Flushed) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        self.write_entries(&entries).map_err(|e| StorageIOError::write_logs(to_any(e)))?;
        let flusher = self.shared.flusher.lock();
        let sent = flusher.as_ref().map(|(tx, _)| tx.send(callback));
        match sent {
            Some(Ok(())) => Ok(()),
            // The flusher is gone only while the store is being dropped.
            _ => Err(StorageIOError::write_logs(to_any("the log flusher has stopped")).into()),
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.shared
            .log
            .write()
            .segments
            .truncate(log_id.index)
            .map_err(|e| StorageIOError::write_logs(to_any(e)))?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        // The purge point is recorded durably before any segment is removed: a crash in between
        // leaves segments at or below it, which the next open removes (docs/log.md).
        let mut b = WriteBatch::new();
        b.put_in(
            &self.shared.meta,
            b"last_purged",
            serde_json::to_vec(&log_id).expect("LogId serializes"),
        );
        // Synced: this also makes every state-machine write before it durable, so the applied
        // state read back after power loss is never behind the purge point (README.md).
        self.write(b, true).map_err(|e| StorageIOError::write_logs(to_any(e)))?;
        let mut log = self.shared.log.write();
        log.last_purged = Some(log_id);
        log.segments.purge(log_id.index).map_err(|e| StorageIOError::write_logs(to_any(e)))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{self, DB_DIR};
    use crate::Request;
    use openraft::testing::blank_ent;
    use openraft::EntryPayload;
    use siftdb::Options;

    fn ent(index: u64) -> Entry<TypeConfig> {
        let mut e = blank_ent::<TypeConfig>(2, 1, index);
        e.payload = EntryPayload::Normal(Request::set(format!("k{index}"), "v"));
        e
    }

    /// A node directory as the previous version left it: entries 3..=9 in the `raft_log`
    /// keyspace (odd ones binary, even ones JSON, as versions before the binary codec wrote),
    /// and the purge point 2 in `raft_meta`.
    fn old_node_dir(dir: &Path) {
        store::claim_dir(dir, 1).unwrap();
        let db = Db::open(dir.join(DB_DIR), Options::default()).unwrap();
        let log = db.keyspace(LOG_KEYSPACE, KeyspaceOptions::default()).unwrap();
        for i in 3..=9u64 {
            let v = if i % 2 == 1 {
                let mut b = Vec::new();
                crate::store::entry_codec::encode(&ent(i), &mut b);
                b
            } else {
                serde_json::to_vec(&ent(i)).unwrap()
            };
            log.put(i.to_be_bytes(), v).unwrap();
        }
        let meta = db.keyspace("raft_meta", KeyspaceOptions::default()).unwrap();
        let purged = blank_ent::<TypeConfig>(1, 1, 2).log_id;
        meta.put(b"last_purged", serde_json::to_vec(&purged).unwrap()).unwrap();
        db.close().unwrap();
    }

    fn keyspaces(dir: &Path) -> Vec<String> {
        let db = Db::open(dir.join(DB_DIR), Options::default()).unwrap();
        let names = db.keyspace_names();
        db.close().unwrap();
        names
    }

    #[tokio::test]
    async fn a_log_in_the_keyspace_moves_into_segments() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("node");
        old_node_dir(&dir);
        // A copy a crash interrupted before its rename: redone from the keyspace.
        fs::create_dir(dir.join(LOG_MIGRATE_DIR)).unwrap();
        fs::write(dir.join(LOG_MIGRATE_DIR).join("junk"), b"x").unwrap();
        let (mut log, _sm) = store::open(&dir, 1).unwrap();
        let want: Vec<_> = (3..=9).map(ent).collect();
        assert_eq!(log.try_get_log_entries(0..).await.unwrap(), want);
        let st = log.get_log_state().await.unwrap();
        assert_eq!(st.last_log_id, Some(ent(9).log_id));
        assert_eq!(st.last_purged_log_id, Some(blank_ent::<TypeConfig>(1, 1, 2).log_id));
        assert!(!dir.join(LOG_MIGRATE_DIR).exists());
        assert_eq!(fs::read_dir(dir.join(LOG_DIR)).unwrap().count(), 1);
        drop((log, _sm));
        assert!(!keyspaces(&dir).iter().any(|n| n == LOG_KEYSPACE));

        // A crash after the rename, before the drop: the keyspace is dropped at the next open
        // and the segments are what is read.
        let db = Db::open(dir.join(DB_DIR), Options::default()).unwrap();
        let stale = db.keyspace(LOG_KEYSPACE, KeyspaceOptions::default()).unwrap();
        stale.put(100u64.to_be_bytes(), b"not read").unwrap();
        db.close().unwrap();
        let (mut log, _sm) = store::open(&dir, 1).unwrap();
        assert_eq!(log.try_get_log_entries(0..).await.unwrap(), want);
        drop((log, _sm));
        assert!(!keyspaces(&dir).iter().any(|n| n == LOG_KEYSPACE));
    }

    #[tokio::test]
    async fn purge_truncate_and_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("node");
        let (mut log, sm) = store::open(&dir, 1).unwrap();
        log.write_entries(&(1..=10).map(ent).collect::<Vec<_>>()).unwrap();
        // A purge inside the only segment keeps its file but hides the purged entries.
        log.purge(ent(4).log_id).await.unwrap();
        let got = log.try_get_log_entries(0..).await.unwrap();
        assert_eq!(got.first().map(|e| e.log_id.index), Some(5));
        log.truncate(ent(8).log_id).await.unwrap();
        // Committed past the end of the log (its segments lost in a power loss) reads as lost.
        log.save_committed(Some(ent(9).log_id)).await.unwrap();
        assert_eq!(log.read_committed().await.unwrap(), None);
        log.save_committed(Some(ent(6).log_id)).await.unwrap();
        assert_eq!(log.read_committed().await.unwrap(), Some(ent(6).log_id));
        drop((log, sm));
        let (mut log, _sm) = store::open(&dir, 1).unwrap();
        let got = log.try_get_log_entries(0..).await.unwrap();
        assert_eq!(got, (5..=7).map(ent).collect::<Vec<_>>());
        let st = log.get_log_state().await.unwrap();
        assert_eq!(
            (st.last_purged_log_id, st.last_log_id),
            (Some(ent(4).log_id), Some(ent(7).log_id))
        );
        // Appending over held entries replaces them (and everything after).
        let mut six = ent(6);
        six.log_id.leader_id.term = 3;
        log.write_entries(&[six.clone()]).unwrap();
        assert_eq!(log.try_get_log_entries(5..).await.unwrap(), vec![ent(5), six]);
        // A gap is refused.
        let e = log.write_entries(&[ent(9)]).unwrap_err();
        assert!(matches!(e, StoreError::LogOrder { index: 9, expected: 7 }), "{e}");
        // Past the end: the segment goes; the purge point is the last log id.
        log.purge(ent(20).log_id).await.unwrap();
        assert_eq!(fs::read_dir(dir.join(LOG_DIR)).unwrap().count(), 0);
        let st = log.get_log_state().await.unwrap();
        assert_eq!(st.last_log_id, Some(ent(20).log_id));
        assert!(log.try_get_log_entries(0..).await.unwrap().is_empty());
    }
}
