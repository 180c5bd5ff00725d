//! The state machine in siftdb: openraft's `RaftStateMachine`.
//!
//! The KV data lives in a keyspace `sm_data.<generation>`; `sm_meta` names the current one and
//! holds the last applied log id and membership. Every `apply` call is one write batch (data and
//! meta together), so the applied state read back after a crash is always one `apply` boundary.
//! Installing a snapshot fills the next generation, switches `sm_meta` to it in one synced write
//! and drops the old keyspace: a crash leaves either the old state or the new, and an unfinished
//! generation is dropped when the node opens.

use std::fs;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    LogId, OptionalSend, RaftSnapshotBuilder, StorageError, StorageIOError, StoredMembership,
};
use parking_lot::{Mutex, RwLock};
use siftdb::{
    Db, IngestCheck, IngestMode, IngestOptions, Keyspace, KeyspaceOptions, ReadOptions, WriteBatch,
    WriteOptions,
};

use super::apply::DataWrite;
use super::snapshot_data::{Parts, SnapshotData, Tables};
use super::snapshot_dir::{self, TablesReader, TABLES_PREFIX};
use super::snapshot_file::{self, Meta};
use super::snapshot_stream::{self, Header};
use super::{
    to_any, BUILD_DIR, CRASH_ENV, INCOMING_PREFIX, INSTALL_DIR, SM_DATA_PREFIX, SM_META_KEYSPACE,
    SNAPSHOT_FILE, SNAPSHOT_TMP,
};
use crate::{NodeId, Response, TypeConfig};

type Membership = StoredMembership<NodeId, openraft::BasicNode>;

/// Tables of a built snapshot are cut at this many bytes: a table's builder is the memory a
/// build needs.
const EXPORT_FILE_BYTES: u64 = 64 << 20;

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
    /// Serialises snapshot builds with each other and with installs (one current snapshot).
    snapshot_file: Mutex<()>,
    /// Numbers the `snapshot.incoming.<n>` files.
    incoming: AtomicU64,
    /// The next `k` of a `snapshot.tables.<k>` directory.
    next_tables: AtomicU64,
    /// A test hook: the next install fails between unpack and switch.
    fail_before_switch: AtomicBool,
    /// Tables ingested by installs since the open, and those of them the engine rewrote
    /// instead of adopting ([`StateMachine::installed_tables`]).
    installed_tables: AtomicU64,
    rewritten_tables: AtomicU64,
}

impl StateMachine {
    /// Opens the state machine; `current` is the meta of the node's checked current snapshot.
    pub(super) fn open(
        db: Arc<Db>,
        dir: PathBuf,
        current: Option<Meta>,
    ) -> Result<StateMachine, super::StoreError> {
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
        // What an interrupted build or install left: ours, never referenced.
        let shown = dir.display().to_string();
        let io = |what: &str, e: std::io::Error| super::StoreError::Io {
            what: format!("{what} in {shown}"),
            source: e,
        };
        for leftover in [BUILD_DIR, INSTALL_DIR, SNAPSHOT_TMP] {
            remove_ours(&dir.join(leftover)).map_err(|e| io(&format!("remove {leftover}"), e))?;
        }
        remove_incoming(&dir).map_err(|e| io("remove snapshot.incoming.*", e))?;
        // Tables directories the pointer does not name: a build or install interrupted before
        // its pointer was replaced, or the previous snapshot's after it was.
        let current_dir = snapshot_dir::pointed_dir(&dir.join(SNAPSHOT_FILE))
            .map_err(|e| io("read the snapshot pointer", std::io::Error::other(e.to_string())))?;
        let mut next_tables = 0;
        for e in fs::read_dir(&dir).map_err(|e| io("list", e))? {
            let e = e.map_err(|e| io("list", e))?;
            let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
            let Some(k) = snapshot_dir::tables_number(&name) else { continue };
            next_tables = next_tables.max(k + 1);
            if current_dir.as_deref() != Some(name.as_str()) {
                remove_ours(&e.path()).map_err(|e| io(&format!("remove {name}"), e))?;
            }
        }
        let sm = StateMachine {
            shared: Arc::new(Shared {
                db,
                dir,
                meta,
                data: RwLock::new(data),
                snapshot_file: Mutex::new(()),
                incoming: AtomicU64::new(0),
                next_tables: AtomicU64::new(next_tables),
                fail_before_switch: AtomicBool::new(false),
                installed_tables: AtomicU64::new(0),
                rewritten_tables: AtomicU64::new(0),
            }),
        };
        // A current snapshot newer than the applied state: an install interrupted between its
        // publish and its switch (or a power loss that took unsynced applies the snapshot had
        // seen). Both are committed state: install it again from where it is.
        if let Some(current) = current {
            let shared = &sm.shared;
            let (applied, _) = shared
                .applied_state(None)
                .map_err(|e| io("read sm_meta", std::io::Error::other(e.to_string())))?;
            if current.last_log_id > applied {
                let roll = |e: StorageError<NodeId>| {
                    io("roll the interrupted install forward", std::io::Error::other(e.to_string()))
                };
                let _file = shared.snapshot_file.lock();
                match &current_dir {
                    // Already the node's snapshot: ingested from where it is.
                    Some(name) => {
                        let t = Tables::open(shared.dir.join(name)).map_err(|b| {
                            io("read the snapshot", std::io::Error::other(b.to_string()))
                        })?;
                        shared.install_tables(&current, &t.dir, &t.header, false).map_err(roll)?;
                    }
                    // A single `snapshot` file of an earlier version: unpacked into a tables
                    // directory that replaces it.
                    None => {
                        let path = shared.dir.join(SNAPSHOT_FILE);
                        let file = fs::File::open(&path).map_err(|e| io("open snapshot", e))?;
                        let (staged, header) =
                            shared.unpack_stream(&current, file, &path).map_err(roll)?;
                        shared.install_tables(&current, &staged, &header, true).map_err(roll)?;
                    }
                }
            }
        }
        Ok(sm)
    }

    /// A test hook: the next `install_snapshot` fails after unpacking and ingesting, before the
    /// switch, as a crash there would leave it.
    #[doc(hidden)]
    pub fn fail_next_install_before_switch(&self) {
        self.shared.fail_before_switch.store(true, Ordering::Relaxed);
    }

    /// `(tables, rewritten)`: the tables this node's snapshot installs ingested since it
    /// opened, and how many of them the engine rewrote entry by entry rather than adopting
    /// the received bytes (0: a table exported from the sender's data keyspace is adopted
    /// into the fresh one, siftdb design.md#ingestion-and-export).
    pub fn installed_tables(&self) -> (u64, u64) {
        let s = &self.shared;
        (s.installed_tables.load(Ordering::Relaxed), s.rewritten_tables.load(Ordering::Relaxed))
    }

    /// The value of `key` in the applied state (a local read: linearizable only after
    /// `Raft::ensure_linearizable`).
    pub fn get(&self, key: &[u8]) -> siftdb::Result<Option<Vec<u8>>> {
        self.shared.data.read().get(key)
    }

    /// Every key and value of the applied state, in key order.
    pub fn dump(&self) -> siftdb::Result<crate::Pairs> {
        let data = self.shared.data.read();
        data.scan()?.map(|item| item.map(|(k, v)| (k.to_vec(), v.to_vec()))).collect()
    }
}

impl crate::KvRead for StateMachine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        StateMachine::get(self, key).map_err(|e| e.to_string())
    }

    fn dump(&self) -> Result<crate::Pairs, String> {
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
        let plan = super::apply::plan(entries, |key| data.get(key))?;
        let mut batch = WriteBatch::new();
        for write in &plan.writes {
            match write {
                DataWrite::Put(k, v) => batch.put_in(&data, k, v),
                DataWrite::Delete(k) => batch.delete_in(&data, k),
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
    ) -> Result<Box<SnapshotData>, StorageError<NodeId>> {
        let shared = self.shared.clone();
        let path = blocking(move || shared.new_incoming_path()).await?;
        let data = SnapshotData::create_new(&path)
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, to_any(e)))?;
        Ok(Box::new(data))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<SnapshotData>,
    ) -> Result<(), StorageError<NodeId>> {
        let parts = snapshot.into_parts().await;
        let (shared, meta) = (self.shared.clone(), meta.clone());
        blocking(move || shared.install(&meta, parts)).await
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let shared = self.shared.clone();
        blocking(move || {
            let _file = shared.snapshot_file.lock();
            let path = shared.dir.join(SNAPSHOT_FILE);
            let rerr =
                |e: String| StorageError::from(StorageIOError::read_snapshot(None, to_any(e)));
            // Opened under the lock, so the handles are those of the snapshot whose meta was
            // read, readable whole even after a newer snapshot replaces it.
            match snapshot_dir::pointed_dir(&path) {
                Ok(Some(name)) => {
                    let t = Tables::open(shared.dir.join(&name))
                        .map_err(|b| rerr(format!("{name}: {b}")))?;
                    let reader = TablesReader::open(&t.dir, &t.header)
                        .map_err(|e| rerr(format!("{name}: {e}")))?;
                    let meta = t.header.meta.clone();
                    Ok(Some(Snapshot {
                        meta,
                        snapshot: Box::new(SnapshotData::tables(t, Some(reader))),
                    }))
                }
                Ok(None) => {
                    // A single file of an earlier version (or none).
                    let meta = match snapshot_file::check_any(&path) {
                        Ok(None) => return Ok(None),
                        Ok(Some(meta)) => meta,
                        Err(e) => return Err(rerr(e.to_string())),
                    };
                    let file = std::fs::File::open(&path).map_err(|e| rerr(e.to_string()))?;
                    Ok(Some(Snapshot {
                        meta,
                        snapshot: Box::new(SnapshotData::from_std(file, path)),
                    }))
                }
                Err(b) => Err(rerr(b.to_string())),
            }
        })
        .await
    }
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let shared = self.shared.clone();
        let (meta, data) = blocking(move || shared.build()).await?;
        Ok(Snapshot { meta, snapshot: Box::new(data) })
    }
}

/// Runs `f` on tokio's blocking pool: snapshot builds and installs read and write whole files.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StorageError<NodeId>> + Send + 'static,
) -> Result<T, StorageError<NodeId>> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => {
            Err(StorageIOError::write_snapshot(None, to_any(format!("snapshot task: {e}"))).into())
        }
    }
}

fn io_any(what: &str, path: &Path, e: impl std::fmt::Display) -> openraft::AnyError {
    to_any(format!("{what} {}: {e}", path.display()))
}

/// Removes `path` (a file or directory this store made) if it exists.
fn remove_ours(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

impl Shared {
    /// A fresh `snapshot.incoming.<n>` path; earlier incoming files are removed first (openraft
    /// receives one snapshot at a time: a new stream replaces an unfinished one).
    fn new_incoming_path(&self) -> Result<PathBuf, StorageError<NodeId>> {
        let werr = |e: std::io::Error| {
            StorageError::from(StorageIOError::write_snapshot(None, io_any("clean", &self.dir, e)))
        };
        remove_incoming(&self.dir).map_err(werr)?;
        let n = self.incoming.fetch_add(1, Ordering::Relaxed);
        Ok(self.dir.join(format!("{INCOMING_PREFIX}{n}")))
    }

    /// `build_snapshot`: the data keyspace at one siftdb snapshot, written as tables (bounded
    /// memory: one table's builder) into a tables directory that becomes the node's snapshot.
    fn build(&self) -> Result<(Meta, SnapshotData), StorageError<NodeId>> {
        let _file = self.snapshot_file.lock();
        // Install replaces the keyspace only under `snapshot_file`, held here.
        let data = self.data.read().clone();
        // One siftdb snapshot covers both keyspaces, and `apply` writes data and meta in one
        // batch: the tables are exactly the state at `last_applied`.
        let view = self.db.snapshot();
        let (last_applied, last_membership) = self.applied_state(Some(&view))?;
        let snapshot_id = match last_applied {
            Some(id) => format!("{}-{}-{}", id.leader_id, id.index, view.sequence()),
            None => format!("none-{}", view.sequence()),
        };
        let meta = Meta { last_log_id: last_applied, last_membership, snapshot_id };
        let sig = Some(meta.signature());
        let werr = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
            StorageError::from(StorageIOError::write_snapshot(sig.clone(), io_any(what, path, e)))
        };
        let build_dir = self.dir.join(BUILD_DIR);
        remove_ours(&build_dir).map_err(|e| werr("remove", &build_dir, &e))?;
        fs::create_dir(&build_dir).map_err(|e| werr("create", &build_dir, &e))?;
        let files =
            export_at(&data, &view, &build_dir).map_err(|e| werr("export to", &build_dir, &e))?;
        drop(view);
        let header = snapshot_dir::seal(&build_dir, &meta, files.len())
            .map_err(|e| werr("seal", &build_dir, &e))?;
        let dir = self.publish(&build_dir).map_err(|(p, e)| werr("publish", &p, &e))?;
        let reader = TablesReader::open(&dir, &header).map_err(|e| werr("open", &dir, &e))?;
        Ok((meta, SnapshotData::tables(Tables { dir, header, checked: true }, Some(reader))))
    }

    /// Makes the synced tables directory `staged` the node's snapshot: renamed to the next
    /// `snapshot.tables.<k>`, the pointer file replaced to name it, the previous snapshot's
    /// directory removed. A crash before the pointer's rename leaves the old snapshot (the open
    /// removes the unnamed directory), after it the new one. Returns the new directory.
    fn publish(&self, staged: &Path) -> Result<PathBuf, (PathBuf, std::io::Error)> {
        let pointer = self.dir.join(SNAPSHOT_FILE);
        let previous = snapshot_dir::pointed_dir(&pointer).ok().flatten();
        let name = format!("{TABLES_PREFIX}{}", self.next_tables.fetch_add(1, Ordering::Relaxed));
        let dir = self.dir.join(&name);
        fs::rename(staged, &dir).map_err(|e| (staged.to_path_buf(), e))?;
        super::sync_dir(&self.dir).map_err(|e| (self.dir.clone(), e))?;
        snapshot_dir::write_pointer(&pointer, &name).map_err(|e| (pointer.clone(), e))?;
        if let Some(previous) = previous.filter(|p| *p != name) {
            let old = self.dir.join(previous);
            remove_ours(&old).map_err(|e| (old, e))?;
        }
        Ok(dir)
    }

    /// `install_snapshot`, in the order that makes a crash leave the old state or the new one:
    /// 1. the snapshot is brought into a tables directory of this node, every check run: a body
    ///    the transport unpacked as it arrived (each table's length and CRC checked then) is
    ///    used where it is; any other form is unpacked now ([`Shared::unpack_stream`]); the
    ///    meta must be the announced one;
    /// 2. the tables are ingested by hard link into a new, unreferenced keyspace
    ///    `sm_data.<generation + 1>` (`ingest` checks each table's metadata blocks: every byte
    ///    was already checked against the CRC-32 the leader computed when it built the
    ///    snapshot, so its data blocks are not read back from the disk);
    /// 3. the directory becomes the node's snapshot ([`Shared::publish`]);
    /// 4. one synced write switches `sm_meta` to the new keyspace, `last_applied` and membership;
    /// 5. the old keyspace is dropped.
    ///
    /// A crash before 3 leaves the old state (the open drops the unreferenced generation and
    /// directory); one between 3 and 4 leaves a snapshot newer than the applied state, which the
    /// open installs again from its directory (roll forward); after 4, the new state.
    fn install(&self, announced: &Meta, parts: Parts) -> Result<(), StorageError<NodeId>> {
        let _file = self.snapshot_file.lock();
        let installed = self.stage_and_install(announced, parts);
        // A refused snapshot's files go now, not at the next receive or open: they can be as
        // large as the state.
        let cleaned =
            remove_incoming(&self.dir).and_then(|()| remove_ours(&self.dir.join(INSTALL_DIR)));
        installed?;
        cleaned.map_err(|e| Failures::of(announced).write(io_any("clean", &self.dir, e)))
    }

    /// Steps 1-5 of [`Shared::install`], under the snapshot lock.
    fn stage_and_install(
        &self,
        announced: &Meta,
        parts: Parts,
    ) -> Result<(), StorageError<NodeId>> {
        let failed = Failures::of(announced);
        let werr = |e| failed.write(e);
        let (staged, header) = match parts {
            Parts::Tables(t, _) if t.checked && self.is_incoming(&t.dir) => (t.dir, t.header),
            // Another node's directory (openraft's storage suite hands one over) or one not
            // checked since it was written: read as the stream it holds.
            Parts::Tables(t, reader) => {
                let r = match reader {
                    Some(r) => r,
                    None => TablesReader::open(&t.dir, &t.header)
                        .map_err(|e| werr(io_any("open", &t.dir, e)))?,
                };
                self.unpack_stream(announced, r, &t.dir)?
            }
            Parts::File(mut file, path) => {
                file.seek(SeekFrom::Start(0)).map_err(|e| werr(io_any("seek", &path, e)))?;
                self.unpack_stream(announced, file, &path)?
            }
        };
        self.install_tables(announced, &staged, &header, true)
    }

    /// Whether `dir` is one of this node's incoming directories.
    fn is_incoming(&self, dir: &Path) -> bool {
        dir.parent() == Some(self.dir.as_path())
            && dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(INCOMING_PREFIX))
    }

    /// Step 1 of [`Shared::install`] for a snapshot read as one stream from `r` (read from
    /// `source`, named in errors): unpacked into a new `snapshot.install/`, checking the
    /// header's CRC, that its meta is the announced one, each table's length and CRC, and that
    /// nothing follows the last. A stream of the in-memory format of earlier versions
    /// (`SFRSNAP1`) becomes one table. Returns the synced directory and its header.
    fn unpack_stream(
        &self,
        announced: &Meta,
        r: impl Read,
        source: &Path,
    ) -> Result<(PathBuf, Header), StorageError<NodeId>> {
        let failed = Failures::of(announced);
        let werr = |e| failed.write(e);
        let refuse = |what| failed.refuse(what);
        let bad = |b: snapshot_stream::Bad| match b {
            snapshot_stream::Bad::Corrupt(what) => refuse(what),
            snapshot_stream::Bad::Io(e) => werr(io_any("read", source, e)),
        };
        let staging = self.dir.join(INSTALL_DIR);
        remove_ours(&staging).map_err(|e| werr(io_any("remove", &staging, e)))?;
        fs::create_dir(&staging).map_err(|e| werr(io_any("create", &staging, e)))?;
        let mut r = BufReader::with_capacity(64 << 10, r);
        let mut magic = [0u8; 8];
        match r.read_exact(&mut magic) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(refuse("shorter than its magic".into()))
            }
            Err(e) => return Err(werr(io_any("read", source, e))),
        }
        let header = if &magic == snapshot_stream::STREAM_MAGIC {
            let header = snapshot_stream::read_header_after_magic(&mut r).map_err(bad)?;
            check_meta(announced, &header.meta).map_err(refuse)?;
            // Synced here: ingest syncs only the tables it links (not one it rewrites or copies),
            // and the pointer will name these files.
            snapshot_stream::unpack(&mut r, &header, Some(&staging), &mut |f| f.sync_data())
                .map_err(bad)?;
            let path = staging.join(snapshot_dir::HEADER_FILE);
            let mut f =
                std::fs::File::create_new(&path).map_err(|e| werr(io_any("create", &path, e)))?;
            f.write_all(&header.raw)
                .and_then(|()| f.sync_all())
                .map_err(|e| werr(io_any("write", &path, e)))?;
            header
        } else {
            // The in-memory format of earlier versions: small by construction.
            let mut bytes = magic.to_vec();
            r.read_to_end(&mut bytes).map_err(|e| werr(io_any("read", source, e)))?;
            let decoded = snapshot_file::check_received(announced, &bytes)?;
            let mut count = 0;
            if !decoded.pairs.is_empty() {
                let t = snapshot_dir::table_path(&staging, 0);
                let dberr = |e: siftdb::Error| werr(to_any(e));
                let mut w = self.data.read().sst_writer(&t).map_err(dberr)?;
                for (k, v) in &decoded.pairs {
                    w.put(k, v).map_err(dberr)?;
                }
                w.finish().map_err(dberr)?;
                count = 1;
            }
            snapshot_dir::seal(&staging, &decoded.meta, count)
                .map_err(|e| werr(io_any("seal", &staging, e)))?
        };
        super::sync_dir(&staging).map_err(|e| werr(io_any("sync", &staging, e)))?;
        Ok((staging, header))
    }

    /// Steps 2-5 of [`Shared::install`] for the checked tables directory `staged`; with
    /// `publish` false it is already the node's snapshot (the open rolling an interrupted
    /// install forward).
    fn install_tables(
        &self,
        announced: &Meta,
        staged: &Path,
        header: &Header,
        publish: bool,
    ) -> Result<(), StorageError<NodeId>> {
        let failed = Failures::of(announced);
        let werr = |e| failed.write(e);
        let refuse = |what| failed.refuse(what);
        check_meta(announced, &header.meta).map_err(refuse)?;
        let dberr = |e: siftdb::Error| werr(to_any(e));
        let mut data = self.data.write();
        let old_name = data.name().to_string();
        // Any name `sm_meta` holds, however corrupt, gives a generation (no slicing to panic on).
        let generation: u64 =
            old_name.strip_prefix(SM_DATA_PREFIX).and_then(|g| g.parse().ok()).unwrap_or(0);
        let new_name = format!("{SM_DATA_PREFIX}{}", generation + 1);
        // A generation left half-filled by an install that failed without a crash (the open
        // drops those after one) must not lend its pairs to this one.
        if self.db.existing_keyspace(&new_name).is_some() {
            self.db.drop_keyspace(&new_name).map_err(dberr)?;
        }
        let fresh = self.db.keyspace(&new_name, KeyspaceOptions::default()).map_err(dberr)?;

        // 2. Ingest into the new generation, which nothing references yet. By hard link: the
        // directory keeps its names for the snapshot, and no table is written twice.
        let tables: Vec<PathBuf> =
            (0..header.files.len()).map(|i| snapshot_dir::table_path(staged, i)).collect();
        if !tables.is_empty() {
            let report = fresh
                .ingest(
                    &tables,
                    IngestOptions::with_mode(IngestMode::Link).check(IngestCheck::Metadata),
                )
                .map_err(|e| refuse(format!("ingest refused the tables: {e}")))?;
            let rewritten = report.files.iter().filter(|f| f.rewritten).count() as u64;
            self.installed_tables.fetch_add(report.files.len() as u64, Ordering::Relaxed);
            self.rewritten_tables.fetch_add(rewritten, Ordering::Relaxed);
        }
        crash_point("install-after-ingest");
        if self.fail_before_switch.swap(false, Ordering::Relaxed) {
            return Err(werr(to_any("injected failure between unpack and switch")));
        }

        // 3. The directory becomes the current snapshot.
        if publish {
            self.publish(staged).map_err(|(p, e)| werr(io_any("publish", &p, e)))?;
        }
        crash_point("install-before-switch");

        // 4. The switch.
        let mut batch = WriteBatch::new();
        batch.put_in(&self.meta, b"data_keyspace", new_name.as_bytes());
        batch.put_in(
            &self.meta,
            b"last_applied",
            serde_json::to_vec(&announced.last_log_id).expect("serializes"),
        );
        batch.put_in(
            &self.meta,
            b"membership",
            serde_json::to_vec(&announced.last_membership).expect("serializes"),
        );
        self.db.write_opt(batch, WriteOptions { sync: true }).map_err(dberr)?;
        *data = fresh;
        crash_point("install-after-switch");

        // 5. Clean up.
        self.db.drop_keyspace(&old_name).map_err(dberr)?;
        Ok(())
    }
}

/// An install's failures as openraft's errors, naming the announced snapshot.
struct Failures {
    sig: Option<openraft::storage::SnapshotSignature<NodeId>>,
}

impl Failures {
    fn of(announced: &Meta) -> Failures {
        Failures { sig: Some(announced.signature()) }
    }

    /// A file-system or engine call failed.
    fn write(&self, e: openraft::AnyError) -> StorageError<NodeId> {
        StorageIOError::write_snapshot(self.sig.clone(), e).into()
    }

    /// The snapshot fails the check `what`.
    fn refuse(&self, what: String) -> StorageError<NodeId> {
        let any = to_any(format!("corrupt snapshot: {what}"));
        StorageIOError::read_snapshot(self.sig.clone(), any).into()
    }
}

/// Checks that a snapshot's own meta is the announced one.
fn check_meta(announced: &Meta, own: &Meta) -> Result<(), String> {
    if own.last_log_id != announced.last_log_id || own.last_membership != announced.last_membership
    {
        return Err(format!("its own meta {own} differs from the announced {announced}"));
    }
    Ok(())
}

/// Writes the pairs of `data` as of `view` into tables `000001.sst`, ... in `dir`, each cut at
/// [`EXPORT_FILE_BYTES`]: `Keyspace::export` at a siftdb snapshot rather than at the latest
/// state (the meta must be read at the same moment), with the same writer.
fn export_at(data: &Keyspace, view: &siftdb::Snapshot, dir: &Path) -> siftdb::Result<Vec<PathBuf>> {
    let read = ReadOptions { fill_cache: false, ..ReadOptions::default() };
    let mut files = Vec::new();
    let mut out: Option<siftdb::SstWriter> = None;
    for item in view.keyspace(data)?.range_opt::<&[u8], _>(.., &read)? {
        let (k, v) = item?;
        let w = match out.as_mut() {
            Some(w) => w,
            None => {
                let path = dir.join(format!("{:06}.sst", files.len() + 1));
                files.push(path.clone());
                out.insert(data.sst_writer(&path)?)
            }
        };
        w.put(&k, &v)?;
        if w.estimated_size() >= EXPORT_FILE_BYTES {
            out.take().map(|w| w.finish()).transpose()?;
        }
    }
    out.take().map(|w| w.finish()).transpose()?;
    Ok(files)
}

/// Removes every `snapshot.incoming.*` file of the node directory `dir`.
pub(super) fn remove_incoming(dir: &Path) -> std::io::Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        if e.file_name().to_str().is_some_and(|n| n.starts_with(INCOMING_PREFIX)) {
            remove_ours(&e.path())?;
        }
    }
    Ok(())
}

/// A test hook: with `SIFTDB_OPENRAFT_CRASH_AT=<point>` in the environment, the process aborts
/// at `point` (a kill at exactly that step; tests/snapshot_install.rs).
fn crash_point(point: &str) {
    if std::env::var_os(CRASH_ENV).is_some_and(|v| v == point) {
        eprintln!("siftdb-openraft: {CRASH_ENV}={point}: aborting");
        std::process::abort();
    }
}
