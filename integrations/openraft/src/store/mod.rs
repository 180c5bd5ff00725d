//! A node's storage: the Raft log in segment files, one siftdb database holding the vote and
//! the state machine in their own keyspaces, and the current snapshot file. The directory layout
//! and the keys are in README.md ("Storage layout"); this module opens the directory and refuses one that is not this node's.

mod aligned_buf;
pub(crate) mod apply;
mod direct_writer;
pub(crate) mod entry_codec;
mod error;
mod log_store;
mod log_tail;
mod segment;
mod snapshot_data;
pub(crate) mod snapshot_dir;
pub(crate) mod snapshot_file;
pub(crate) mod snapshot_stream;
mod state_machine;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use siftdb::{Db, KeyspaceOptions, Options};

pub use error::StoreError;
pub use log_store::LogStore;
#[cfg(feature = "rocksdb-peer")]
pub(crate) use log_store::APPEND_PAYLOAD_BYTES;
pub use snapshot_data::SnapshotData;
pub(crate) use snapshot_data::{Parts, Tables};
pub use snapshot_dir::POINTER_MAGIC;
pub use snapshot_file::{decode_snapshot, encode_snapshot, DecodedSnapshot, SNAPSHOT_MAGIC};
pub use snapshot_stream::STREAM_MAGIC;
pub use state_machine::{SnapshotBuilder, StateMachine};

use crate::NodeId;

/// The identity file: written once when the directory is created, checked on every open.
const NODE_FILE: &str = "NODE";
/// The siftdb database, under the node directory.
pub(crate) const DB_DIR: &str = "db";
/// The current snapshot: a pointer naming its tables directory `snapshot.tables.<k>`
/// (snapshot_dir.rs), or a single file of an earlier version; replaced by rename.
pub(crate) const SNAPSHOT_FILE: &str = "snapshot";
/// A pointer (or, in earlier versions, a snapshot) being written, renamed to
/// [`SNAPSHOT_FILE`] once synced.
const SNAPSHOT_TMP: &str = "snapshot.tmp";
/// Where `build_snapshot` exports the tables of a new snapshot.
const BUILD_DIR: &str = "snapshot.build";
/// Where `install_snapshot` unpacks a snapshot handed over as one stream.
const INSTALL_DIR: &str = "snapshot.install";
/// Files and directories a snapshot is received into: `snapshot.incoming.<n>` (and its
/// `.tables` directory).
const INCOMING_PREFIX: &str = "snapshot.incoming.";
/// The environment variable naming a step where the process aborts (a test hook).
const CRASH_ENV: &str = "SIFTDB_OPENRAFT_CRASH_AT";

/// The log's segment files (segment.rs, docs/log.md), under the node directory.
pub(crate) const LOG_DIR: &str = "raftlog";
/// Where the entries of [`LOG_KEYSPACE`] are copied before the directory becomes [`LOG_DIR`].
const LOG_MIGRATE_DIR: &str = "raftlog.migrate";
/// Keyspace of the log in earlier versions (key = index as 8 big-endian bytes, value = the
/// entry): moved into segments, then dropped, when a node directory is opened.
const LOG_KEYSPACE: &str = "raft_log";
/// Keyspace of the vote, committed and last purged log ids (JSON) and the node id.
const RAFT_META_KEYSPACE: &str = "raft_meta";
/// Keyspace of the state machine's last applied log id, membership and data keyspace's name.
const SM_META_KEYSPACE: &str = "sm_meta";
/// Prefix of the state machine's data keyspaces: `sm_data.<generation>`. Installing a snapshot
/// fills the next generation and switches to it in one write.
const SM_DATA_PREFIX: &str = "sm_data.";

/// The first line of the NODE file, followed by the node id.
const NODE_FILE_HEADER: &str = "siftdb-openraft node";

/// The current snapshot of the node directory `dir` as the one stream it is sent as (its
/// tables directory's header and tables, or a single file of an earlier version); empty if
/// there is none. Reads it whole: for tests of small snapshots.
#[doc(hidden)]
pub fn current_snapshot_stream(dir: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let pointer = dir.as_ref().join(SNAPSHOT_FILE);
    let bad = |b: snapshot_stream::Bad| std::io::Error::other(b.to_string());
    match snapshot_dir::pointed_dir(&pointer).map_err(bad)? {
        Some(name) => {
            let tables = dir.as_ref().join(name);
            let header = snapshot_dir::read_header(&tables).map_err(bad)?;
            let mut out = Vec::new();
            snapshot_dir::TablesReader::open(&tables, &header)?.read_to_end(&mut out)?;
            Ok(out)
        }
        None => match fs::read(&pointer) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            r => r,
        },
    }
}

/// Opens (creating if needed) the storage of node `id` in `dir`.
///
/// Refuses, changing nothing, a directory that holds another node's data, a non-empty
/// directory that is not a node directory, and a node whose current snapshot file is corrupt.
pub fn open(dir: impl AsRef<Path>, id: NodeId) -> Result<(LogStore, StateMachine), StoreError> {
    let dir = dir.as_ref().to_path_buf();
    claim_dir(&dir, id)?;
    let snapshot_path = dir.join(SNAPSHOT_FILE);
    // Checked before the database is opened, so a corrupt one changes nothing.
    let current = snapshot_file::check_any(&snapshot_path)?;
    let db = Arc::new(Db::open(dir.join(DB_DIR), Options::default())?);
    let raft_meta = db.keyspace(RAFT_META_KEYSPACE, KeyspaceOptions::default())?;
    match raft_meta.get(b"node_id")? {
        None => raft_meta.put(b"node_id", id.to_be_bytes())?,
        Some(v) if v == id.to_be_bytes() => {}
        Some(v) => {
            return Err(StoreError::OtherNode {
                dir,
                found: format!("node_id key {v:?}"),
                wanted: id,
            })
        }
    }
    let log = LogStore::open(db.clone(), raft_meta, &dir)?;
    let sm = StateMachine::open(db, dir, current)?;
    Ok((log, sm))
}

/// Checks that `dir` is node `id`'s directory, or makes it one if it is missing or empty.
pub(crate) fn claim_dir(dir: &Path, id: NodeId) -> Result<(), StoreError> {
    let io = |what: &str, e: std::io::Error| StoreError::Io {
        what: format!("{what} {}", dir.display()),
        source: e,
    };
    let node_file = dir.join(NODE_FILE);
    match fs::read_to_string(&node_file) {
        Ok(text) => {
            let found = text.trim_end();
            let Some(n) = found.strip_prefix(NODE_FILE_HEADER).map(str::trim) else {
                return Err(StoreError::NotANodeDir {
                    dir: dir.to_path_buf(),
                    why: format!("its NODE file does not start with '{NODE_FILE_HEADER}'"),
                });
            };
            if n.parse::<NodeId>().ok() != Some(id) {
                return Err(StoreError::OtherNode {
                    dir: dir.to_path_buf(),
                    found: format!("node {n}"),
                    wanted: id,
                });
            }
            return Ok(());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("read the NODE file of", e)),
    }
    if dir.exists() {
        let mut entries = fs::read_dir(dir).map_err(|e| io("list", e))?;
        if entries.next().is_some() {
            return Err(StoreError::NotANodeDir {
                dir: dir.to_path_buf(),
                why: "it is not empty and has no NODE file".into(),
            });
        }
    } else {
        fs::create_dir_all(dir).map_err(|e| io("create", e))?;
    }
    let tmp = dir.join("NODE.tmp");
    let mut f = fs::File::create(&tmp).map_err(|e| io("create NODE.tmp in", e))?;
    f.write_all(format!("{NODE_FILE_HEADER} {id}\n").as_bytes())
        .map_err(|e| io("write NODE.tmp in", e))?;
    f.sync_all().map_err(|e| io("sync NODE.tmp in", e))?;
    fs::rename(&tmp, &node_file).map_err(|e| io("rename NODE.tmp in", e))?;
    sync_dir(dir).map_err(|e| io("sync", e))
}

/// fsyncs a directory so a rename or create inside it survives power loss.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

/// Converts a storage failure into openraft's error with the subject it concerns.
fn to_any(e: impl std::fmt::Display) -> openraft::AnyError {
    openraft::AnyError::error(e)
}
