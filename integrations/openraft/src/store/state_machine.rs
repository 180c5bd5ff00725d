//! The state machine in siftdb: openraft's `RaftStateMachine`.
//!
//! The KV data lives in a keyspace `sm_data.<generation>`; `sm_meta` names the current one and
//! holds the last applied log id and membership. Every `apply` call is one write batch (data and
//! meta together), so the applied state read back after a crash is always one `apply` boundary.
//! Installing a snapshot fills the next generation, switches `sm_meta` to it in one synced write
//! and drops the old keyspace: a crash leaves either the old state or the new, and an unfinished
//! generation is dropped when the node opens.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    LogId, OptionalSend, RaftSnapshotBuilder, StorageError, StorageIOError, StoredMembership,
};
use parking_lot::{Mutex, RwLock};
use siftdb::{Db, Keyspace, KeyspaceOptions, WriteBatch, WriteOptions};

use super::apply::DataWrite;
use super::snapshot_file::{self, Meta};
use super::{to_any, SM_DATA_PREFIX, SM_META_KEYSPACE, SNAPSHOT_FILE};
use crate::{NodeId, Response, TypeConfig};

type Membership = StoredMembership<NodeId, openraft::BasicNode>;

/// Data batches of an installed snapshot are cut at this many bytes.
const INSTALL_BATCH_BYTES: usize = 4 << 20;

/// The state machine. Clones share it; [`StateMachine::get`] serves reads.
#[derive(Clone)]
pub struct StateMachine {
    shared: Arc<Shared>,
}

/// Builds snapshots of the state machine it came from.
pub struct SnapshotBuilder {
    shared: Arc<Shared>,
}

struct Shared {
    db: Arc<Db>,
    dir: PathBuf,
    meta: Keyspace,
    /// The current data keyspace. Written under the read lock by `apply` (which openraft never
    /// runs concurrently with an install); replaced under the write lock by an install.
    data: RwLock<Keyspace>,
    /// Serialises snapshot builds with each other and with installs (one snapshot file).
    snapshot_file: Mutex<()>,
}

impl StateMachine {
    pub(super) fn open(db: Arc<Db>, dir: PathBuf) -> Result<StateMachine, siftdb::Error> {
        let meta = db.keyspace(SM_META_KEYSPACE, KeyspaceOptions::default())?;
        let name = match meta.get(b"data_keyspace")? {
            Some(n) => String::from_utf8(n).map_err(|_| {
                siftdb::Error::InvalidArgument("sm_meta data_keyspace is not UTF-8".into())
            })?,
            None => {
                let name = format!("{SM_DATA_PREFIX}0");
                meta.put(b"data_keyspace", name.as_bytes())?;
                name
            }
        };
        let data = db.keyspace(&name, KeyspaceOptions::default())?;
        // A generation an interrupted install was filling: ours, never switched to.
        for other in db.keyspace_names() {
            if other.starts_with(SM_DATA_PREFIX) && other != name {
                db.drop_keyspace(&other)?;
            }
        }
        Ok(StateMachine {
            shared: Arc::new(Shared {
                db,
                dir,
                meta,
                data: RwLock::new(data),
                snapshot_file: Mutex::new(()),
            }),
        })
    }

    /// The value of `key` in the applied state (a local read: linearizable only after
    /// `Raft::ensure_linearizable`).
    pub fn get(&self, key: &str) -> siftdb::Result<Option<String>> {
        let v = self.shared.data.read().get(key.as_bytes())?;
        Ok(v.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Every key and value of the applied state, in key order.
    pub fn dump(&self) -> siftdb::Result<Vec<(String, String)>> {
        let data = self.shared.data.read();
        data.scan()?
            .map(|item| {
                item.map(|(k, v)| {
                    (
                        String::from_utf8_lossy(&k).into_owned(),
                        String::from_utf8_lossy(&v).into_owned(),
                    )
                })
            })
            .collect()
    }
}

impl crate::KvRead for StateMachine {
    fn get(&self, key: &str) -> Result<Option<String>, String> {
        StateMachine::get(self, key).map_err(|e| e.to_string())
    }

    fn dump(&self) -> Result<Vec<(String, String)>, String> {
        StateMachine::dump(self).map_err(|e| e.to_string())
    }
}

impl Shared {
    fn applied_state(
        &self,
        snap: Option<&siftdb::Snapshot>,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageIOError<NodeId>> {
        let read = |key: &[u8]| match snap {
            Some(s) => s.keyspace(&self.meta).and_then(|s| s.get(key)),
            None => self.meta.get(key),
        };
        let err = |e: String| StorageIOError::read_state_machine(to_any(e));
        let applied = match read(b"last_applied").map_err(|e| err(e.to_string()))? {
            Some(b) => {
                serde_json::from_slice(&b).map_err(|e| err(format!("sm_meta last_applied: {e}")))?
            }
            None => None,
        };
        let membership = match read(b"membership").map_err(|e| err(e.to_string()))? {
            Some(b) => {
                serde_json::from_slice(&b).map_err(|e| err(format!("sm_meta membership: {e}")))?
            }
            None => Membership::default(),
        };
        Ok((applied, membership))
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, Membership), StorageError<NodeId>> {
        Ok(self.shared.applied_state(None)?)
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let data = self.shared.data.read();
        let plan = super::apply::plan(entries, |key| {
            let v = data.get(key.as_bytes())?;
            Ok::<_, siftdb::Error>(v.map(|v| String::from_utf8_lossy(&v).into_owned()))
        })?;
        let mut batch = WriteBatch::new();
        for write in &plan.writes {
            match write {
                DataWrite::Put(k, v) => batch.put_in(&data, k.as_bytes(), v.as_bytes()),
                DataWrite::Delete(k) => batch.delete_in(&data, k.as_bytes()),
            };
        }
        let (responses, membership) = (plan.responses, plan.membership);
        let Some(last) = plan.last else { return Ok(responses) };
        batch.put_in(
            &self.shared.meta,
            b"last_applied",
            serde_json::to_vec(&Some(last)).expect("LogId serializes"),
        );
        if let Some(m) = membership {
            batch.put_in(
                &self.shared.meta,
                b"membership",
                serde_json::to_vec(&m).expect("membership serializes"),
            );
        }
        // Not synced: the log is the durable record; see README.md "What is synced".
        self.shared.db.write(batch).map_err(|e| StorageIOError::apply(last, to_any(e)))?;
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder { shared: self.shared.clone() }
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let sig = Some(meta.signature());
        let bytes = snapshot.into_inner();
        // Every check runs before anything is changed.
        let decoded = snapshot_file::check_received(meta, &bytes)?;
        let shared = &self.shared;
        let _file = shared.snapshot_file.lock();
        let mut data = shared.data.write();
        let werr = |e: siftdb::Error| {
            StorageError::from(StorageIOError::write_snapshot(sig.clone(), to_any(e)))
        };
        let old_name = data.name().to_string();
        let generation: u64 = old_name[SM_DATA_PREFIX.len()..].parse().unwrap_or(0);
        let new_name = format!("{SM_DATA_PREFIX}{}", generation + 1);
        // A generation left half-filled by an install that failed without a crash (the open
        // drops those after one) must not lend its pairs to this one.
        if shared.db.existing_keyspace(&new_name).is_some() {
            shared.db.drop_keyspace(&new_name).map_err(werr)?;
        }
        let fresh = shared.db.keyspace(&new_name, KeyspaceOptions::default()).map_err(werr)?;
        let mut batch = WriteBatch::new();
        for (k, v) in &decoded.pairs {
            batch.put_in(&fresh, k, v);
            if batch.encoded_len() >= INSTALL_BATCH_BYTES {
                shared.db.write(std::mem::take(&mut batch)).map_err(werr)?;
            }
        }
        batch.put_in(&shared.meta, b"data_keyspace", new_name.as_bytes());
        batch.put_in(
            &shared.meta,
            b"last_applied",
            serde_json::to_vec(&meta.last_log_id).expect("serializes"),
        );
        batch.put_in(
            &shared.meta,
            b"membership",
            serde_json::to_vec(&meta.last_membership).expect("serializes"),
        );
        shared.db.write_opt(batch, WriteOptions { sync: true }).map_err(werr)?;
        *data = fresh;
        shared.db.drop_keyspace(&old_name).map_err(werr)?;
        snapshot_file::write_file(&shared.dir.join(SNAPSHOT_FILE), &bytes)
            .map_err(|e| StorageError::from(StorageIOError::write_snapshot(sig, to_any(e))))?;
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let _file = self.shared.snapshot_file.lock();
        let path = self.shared.dir.join(SNAPSHOT_FILE);
        match snapshot_file::read_file(&path) {
            Ok(None) => Ok(None),
            Ok(Some((bytes, decoded))) => {
                Ok(Some(Snapshot { meta: decoded.meta, snapshot: Box::new(Cursor::new(bytes)) }))
            }
            Err(e) => Err(StorageIOError::read_snapshot(None, to_any(e)).into()),
        }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let shared = &self.shared;
        let _file = shared.snapshot_file.lock();
        let data = shared.data.read();
        // One siftdb snapshot covers both keyspaces, and `apply` writes data and meta in one
        // batch: the pairs are exactly the state at `last_applied`.
        let view = shared.db.snapshot();
        let (last_applied, last_membership) = shared.applied_state(Some(&view))?;
        let rerr =
            |e: siftdb::Error| StorageError::from(StorageIOError::read_state_machine(to_any(e)));
        let mut pairs = Vec::new();
        for item in view.keyspace(&data).and_then(|v| v.scan()).map_err(rerr)? {
            pairs.push(item.map_err(rerr)?);
        }
        let snapshot_id = match last_applied {
            Some(id) => format!("{}-{}-{}", id.leader_id, id.index, view.sequence()),
            None => format!("none-{}", view.sequence()),
        };
        let meta = Meta { last_log_id: last_applied, last_membership, snapshot_id };
        let bytes =
            snapshot_file::encode_snapshot(&meta, pairs.iter().map(|(k, v)| (&k[..], &v[..])));
        snapshot_file::write_file(&shared.dir.join(SNAPSHOT_FILE), &bytes)
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), to_any(e)))?;
        Ok(Snapshot { meta, snapshot: Box::new(Cursor::new(bytes)) })
    }
}
