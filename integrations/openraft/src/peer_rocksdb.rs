//! The RocksDB-backed store the README's throughput table compares with (feature
//! `rocksdb-peer`, `siftdb-raft node --store rocksdb`). It keeps the siftdb store's semantics so
//! the comparison is of the engines: the same keys and values (log entries in the binary
//! encoding of store/entry_codec.rs, the rest JSON) in four column families
//! instead of keyspaces, the same synced points (vote, truncate, purge; appends acknowledged by a
//! group-commit flusher calling `FlushWAL(sync)`) and NODE file; its snapshots keep the earlier
//! in-memory format (`SFRSNAP1`), read and written whole through the file-backed
//! `SnapshotData` (snapshots are not what it is compared on). RocksDB
//! options: its defaults with `increase_parallelism(2)` and no compression, as siftdb's default.
//! An installed snapshot replaces the data column family with one range delete and the pairs in
//! one write batch (atomic; the siftdb store switches keyspaces instead).

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage, RaftStateMachine, Snapshot};
use openraft::{
    Entry, LogId, OptionalSend, RaftLogReader, RaftSnapshotBuilder, StorageError, StorageIOError,
    StoredMembership, Vote,
};
use parking_lot::Mutex;
use rocksdb::{ColumnFamily, Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB};

use crate::store::apply::DataWrite;
use crate::store::entry_codec;
use crate::store::snapshot_file::{self, read_file};
use crate::store::{claim_dir, SnapshotData, StoreError, SNAPSHOT_FILE};
use crate::{KvRead, NodeId, Response, TypeConfig};

type Membership = StoredMembership<NodeId, openraft::BasicNode>;
type Meta = openraft::SnapshotMeta<NodeId, openraft::BasicNode>;
type Flushed = LogFlushed<TypeConfig>;

const CFS: [&str; 4] = ["raft_log", "raft_meta", "sm_meta", "sm_data"];
const PAST_LAST_KEY: [u8; 9] = [0xff; 9];

fn any(e: impl std::fmt::Display) -> openraft::AnyError {
    openraft::AnyError::error(e)
}

struct Shared {
    db: Arc<DB>,
    dir: PathBuf,
    flusher: Mutex<Option<(mpsc::Sender<Flushed>, JoinHandle<()>)>>,
    snapshot_file: Mutex<()>,
    /// Numbers the `snapshot.incoming.<n>` files.
    incoming: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn cf(&self, name: &str) -> &ColumnFamily {
        self.db.cf_handle(name).expect("every column family is created at open")
    }

    fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        cf: &str,
        key: &[u8],
    ) -> Result<Option<T>, StorageIOError<NodeId>> {
        match self.db.get_cf(self.cf(cf), key).map_err(|e| StorageIOError::read(any(e)))? {
            None => Ok(None),
            Some(b) => {
                serde_json::from_slice(&b).map(Some).map_err(|e| StorageIOError::read(any(e)))
            }
        }
    }

    fn write(&self, batch: WriteBatch, sync: bool) -> Result<(), rocksdb::Error> {
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        self.db.write_opt(batch, &wo)
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

/// The RocksDB log store.
#[derive(Clone)]
pub struct RocksLogStore {
    shared: Arc<Shared>,
}

/// The RocksDB state machine.
#[derive(Clone)]
pub struct RocksStateMachine {
    shared: Arc<Shared>,
}

/// Opens node `id`'s RocksDB-backed storage in `dir`, with the siftdb store's refusals.
pub fn open(dir: &Path, id: NodeId) -> Result<(RocksLogStore, RocksStateMachine), StoreError> {
    claim_dir(dir, id)?;
    read_file(&dir.join(SNAPSHOT_FILE))?;
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.increase_parallelism(2);
    opts.set_compression_type(rocksdb::DBCompressionType::None);
    let db = DB::open_cf(&opts, dir.join("rocksdb"), CFS).map_err(|e| StoreError::Io {
        what: format!("open RocksDB in {}", dir.display()),
        source: std::io::Error::other(e),
    })?;
    let db = Arc::new(db);
    let (tx, rx) = mpsc::channel::<Flushed>();
    let flusher_db = db.clone();
    let handle = std::thread::spawn(move || {
        while let Ok(first) = rx.recv() {
            let mut waiting = vec![first];
            waiting.extend(rx.try_iter());
            let r = flusher_db.flush_wal(true);
            for cb in waiting {
                cb.log_io_completed(
                    r.as_ref().map(|_| ()).map_err(|e| std::io::Error::other(e.to_string())),
                );
            }
        }
    });
    let shared = Arc::new(Shared {
        db,
        dir: dir.to_path_buf(),
        flusher: Mutex::new(Some((tx, handle))),
        snapshot_file: Mutex::new(()),
        incoming: std::sync::atomic::AtomicU64::new(0),
    });
    Ok((RocksLogStore { shared: shared.clone() }, RocksStateMachine { shared }))
}

fn json_or_none<T: serde::de::DeserializeOwned>(
    bytes: Option<Vec<u8>>,
) -> Result<Option<T>, StorageIOError<NodeId>> {
    match bytes {
        None => Ok(None),
        Some(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| StorageIOError::read_state_machine(any(e))),
    }
}

fn decode_entry(v: &[u8]) -> Result<Entry<TypeConfig>, StorageIOError<NodeId>> {
    entry_codec::decode(v).map_err(|e| StorageIOError::read_logs(any(e)))
}

impl RaftLogReader<TypeConfig> for RocksLogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let start = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i + 1,
            Bound::Unbounded => 0,
        };
        let mode = IteratorMode::From(&start.to_be_bytes(), Direction::Forward);
        let mut out = Vec::new();
        for item in self.shared.db.iterator_cf(self.shared.cf("raft_log"), mode) {
            let (k, v) = item.map_err(|e| StorageIOError::read_logs(any(e)))?;
            let index = u64::from_be_bytes(
                k[..8].try_into().map_err(|e| StorageIOError::read_logs(any(e)))?,
            );
            if !range.contains(&index) {
                break;
            }
            out.push(decode_entry(&v)?);
        }
        Ok(out)
    }

    /// As the siftdb log store's: entries from `start` adding up to at most
    /// `APPEND_PAYLOAD_BYTES` of encoded entries (at least one), so that one AppendEntries fits
    /// in openraft's timeout (docs/log.md, "Replication").
    async fn limited_get_log_entries(
        &mut self,
        start: u64,
        end: u64,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let mode = IteratorMode::From(&start.to_be_bytes(), Direction::Forward);
        let mut out = Vec::new();
        let mut bytes = 0u64;
        for item in self.shared.db.iterator_cf(self.shared.cf("raft_log"), mode) {
            let (k, v) = item.map_err(|e| StorageIOError::read_logs(any(e)))?;
            let index = u64::from_be_bytes(
                k[..8].try_into().map_err(|e| StorageIOError::read_logs(any(e)))?,
            );
            bytes += v.len() as u64;
            if index >= end || (!out.is_empty() && bytes > crate::store::APPEND_PAYLOAD_BYTES) {
                break;
            }
            out.push(decode_entry(&v)?);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for RocksLogStore {
    type LogReader = RocksLogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let last_purged: Option<LogId<NodeId>> =
            self.shared.get_json("raft_meta", b"last_purged")?;
        let last = match self
            .shared
            .db
            .iterator_cf(self.shared.cf("raft_log"), IteratorMode::End)
            .next()
        {
            Some(item) => {
                Some(decode_entry(&item.map_err(|e| StorageIOError::read_logs(any(e)))?.1)?.log_id)
            }
            None => last_purged,
        };
        Ok(LogState { last_purged_log_id: last_purged, last_log_id: last })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut b = WriteBatch::default();
        b.put_cf(
            self.shared.cf("raft_meta"),
            b"vote",
            serde_json::to_vec(vote).expect("serializes"),
        );
        self.shared.write(b, true).map_err(|e| StorageIOError::write_vote(any(e)))?;
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(self.shared.get_json("raft_meta", b"vote")?)
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        let mut b = WriteBatch::default();
        b.put_cf(
            self.shared.cf("raft_meta"),
            b"committed",
            serde_json::to_vec(&committed).expect("serializes"),
        );
        self.shared.write(b, false).map_err(|e| StorageIOError::write(any(e)))?;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        Ok(self.shared.get_json::<Option<LogId<NodeId>>>("raft_meta", b"committed")?.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: Flushed) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut b = WriteBatch::default();
        for e in entries {
            let mut value = Vec::with_capacity(64);
            entry_codec::encode(&e, &mut value);
            b.put_cf(self.shared.cf("raft_log"), e.log_id.index.to_be_bytes(), value);
        }
        self.shared.write(b, false).map_err(|e| StorageIOError::write_logs(any(e)))?;
        let flusher = self.shared.flusher.lock();
        match flusher.as_ref().map(|(tx, _)| tx.send(callback)) {
            Some(Ok(())) => Ok(()),
            _ => Err(StorageIOError::write_logs(any("the log flusher has stopped")).into()),
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut b = WriteBatch::default();
        b.delete_range_cf(
            self.shared.cf("raft_log"),
            &log_id.index.to_be_bytes()[..],
            &PAST_LAST_KEY[..],
        );
        self.shared.write(b, true).map_err(|e| StorageIOError::write_logs(any(e)))?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        let mut b = WriteBatch::default();
        b.put_cf(
            self.shared.cf("raft_meta"),
            b"last_purged",
            serde_json::to_vec(&log_id).expect("serializes"),
        );
        let end = match log_id.index.checked_add(1) {
            Some(e) => e.to_be_bytes().to_vec(),
            None => PAST_LAST_KEY.to_vec(),
        };
        b.delete_range_cf(self.shared.cf("raft_log"), &0u64.to_be_bytes()[..], &end[..]);
        self.shared.write(b, true).map_err(|e| StorageIOError::write_logs(any(e)))?;
        Ok(())
    }
}

impl KvRead for RocksStateMachine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.shared.db.get_cf(self.shared.cf("sm_data"), key).map_err(|e| e.to_string())
    }

    fn dump(&self) -> Result<crate::Pairs, String> {
        let mut out = Vec::new();
        for item in self.shared.db.iterator_cf(self.shared.cf("sm_data"), IteratorMode::Start) {
            let (k, v) = item.map_err(|e| e.to_string())?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }
}

impl RaftStateMachine<TypeConfig> for RocksStateMachine {
    type SnapshotBuilder = RocksStateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        let applied =
            self.shared.get_json::<Option<LogId<NodeId>>>("sm_meta", b"last_applied")?.flatten();
        let membership = self.shared.get_json("sm_meta", b"membership")?.unwrap_or_default();
        Ok((applied, membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let plan = crate::store::apply::plan(entries, |key| self.get(key))?;
        let (data, meta) = (self.shared.cf("sm_data"), self.shared.cf("sm_meta"));
        let mut batch = WriteBatch::default();
        for write in &plan.writes {
            match write {
                DataWrite::Put(k, v) => batch.put_cf(data, k, v),
                DataWrite::Delete(k) => batch.delete_cf(data, k),
            }
        }
        if let Some(m) = &plan.membership {
            batch.put_cf(meta, b"membership", serde_json::to_vec(m).expect("serializes"));
        }
        let Some(last) = plan.last else { return Ok(plan.responses) };
        batch.put_cf(meta, b"last_applied", serde_json::to_vec(&Some(last)).expect("serializes"));
        self.shared.write(batch, false).map_err(|e| StorageIOError::apply(last, any(e)))?;
        Ok(plan.responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<SnapshotData>, StorageError<NodeId>> {
        let n = self.shared.incoming.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = self.shared.dir.join(format!("snapshot.incoming.{n}"));
        let data = SnapshotData::create_new(&path)
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        Ok(Box::new(data))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<SnapshotData>,
    ) -> Result<(), StorageError<NodeId>> {
        let sig = Some(meta.signature());
        // This store keeps the in-memory snapshot format (`SFRSNAP1`): the bytes are read whole.
        let (mut file, path) = snapshot
            .into_std()
            .await
            .map_err(|e| StorageIOError::read_snapshot(sig.clone(), any(e)))?;
        let mut bytes = Vec::new();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))
            .and_then(|_| std::io::Read::read_to_end(&mut file, &mut bytes))
            .map_err(|e| StorageIOError::read_snapshot(sig.clone(), any(e)))?;
        if path.parent() == Some(self.shared.dir.as_path()) {
            let _ = std::fs::remove_file(&path);
        }
        let decoded = snapshot_file::check_received(meta, &bytes)?;
        let _file = self.shared.snapshot_file.lock();
        let (data, m) = (self.shared.cf("sm_data"), self.shared.cf("sm_meta"));
        let mut batch = WriteBatch::default();
        // Keys are UTF-8, which never holds a 0xff byte: every key sorts below this end.
        batch.delete_range_cf(data, &[][..], &[0xffu8; 64][..]);
        for (k, v) in &decoded.pairs {
            batch.put_cf(data, k, v);
        }
        batch.put_cf(
            m,
            b"last_applied",
            serde_json::to_vec(&meta.last_log_id).expect("serializes"),
        );
        batch.put_cf(
            m,
            b"membership",
            serde_json::to_vec(&meta.last_membership).expect("serializes"),
        );
        self.shared
            .write(batch, true)
            .map_err(|e| StorageIOError::write_snapshot(sig.clone(), any(e)))?;
        snapshot_file::write_file(&self.shared.dir.join(SNAPSHOT_FILE), &bytes)
            .map_err(|e| StorageIOError::write_snapshot(sig, any(e)))?;
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let _file = self.shared.snapshot_file.lock();
        match read_file(&self.shared.dir.join(SNAPSHOT_FILE)) {
            Ok(None) => Ok(None),
            Ok(Some((_, d))) => {
                // Opened under the lock, so the handle is the file whose meta was read.
                let path = self.shared.dir.join(SNAPSHOT_FILE);
                let file = std::fs::File::open(&path)
                    .map_err(|e| StorageIOError::read_snapshot(None, any(e)))?;
                let data = SnapshotData::from_std(file, path);
                Ok(Some(Snapshot { meta: d.meta, snapshot: Box::new(data) }))
            }
            Err(e) => Err(StorageIOError::read_snapshot(None, any(e)).into()),
        }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for RocksStateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let _file = self.shared.snapshot_file.lock();
        let view = self.shared.db.snapshot();
        let rerr =
            |e: rocksdb::Error| StorageError::from(StorageIOError::read_state_machine(any(e)));
        let last_applied: Option<LogId<NodeId>> =
            json_or_none(view.get_cf(self.shared.cf("sm_meta"), b"last_applied").map_err(rerr)?)?
                .flatten();
        let last_membership: Membership =
            json_or_none(view.get_cf(self.shared.cf("sm_meta"), b"membership").map_err(rerr)?)?
                .unwrap_or_default();
        let mut pairs = Vec::new();
        for item in view.iterator_cf(self.shared.cf("sm_data"), IteratorMode::Start) {
            let (k, v) = item.map_err(rerr)?;
            pairs.push((k.to_vec(), v.to_vec()));
        }
        let snapshot_id = match last_applied {
            Some(id) => format!("{}-{}-rocksdb", id.leader_id, id.index),
            None => "none-rocksdb".to_string(),
        };
        let meta = Meta { last_log_id: last_applied, last_membership, snapshot_id };
        let bytes =
            snapshot_file::encode_snapshot(&meta, pairs.iter().map(|(k, v)| (&k[..], &v[..])));
        snapshot_file::write_file(&self.shared.dir.join(SNAPSHOT_FILE), &bytes)
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), any(e)))?;
        let path = self.shared.dir.join(SNAPSHOT_FILE);
        let file =
            std::fs::File::open(&path).map_err(|e| StorageIOError::read_snapshot(None, any(e)))?;
        Ok(Snapshot { meta, snapshot: Box::new(SnapshotData::from_std(file, path)) })
    }
}
