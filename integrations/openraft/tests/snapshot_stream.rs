//! Snapshots stream: a state much larger than openraft's chunk size is built as a file, sent in
//! chunks of `Config::snapshot_max_chunk_size` by openraft's own chunked transport to a node
//! that joins after the log it needs was purged, written chunk by chunk into a file there and
//! installed. And an install that fails between unpack and switch leaves the old state, in the
//! running store and after a reopen.

// openraft's error types are returned by value, as its traits do.
#![allow(clippy::result_large_err)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::testing::{blank_ent, membership_ent};
use openraft::{BasicNode, Config, EntryPayload, RaftSnapshotBuilder, SnapshotPolicy};
use siftdb_openraft::store::{self, StateMachine};
use siftdb_openraft::{NodeId, Raft, Request, TypeConfig};
use tokio::io::AsyncWriteExt;

const CHUNK: u64 = 64 << 10;

/// One snapshot chunk as the network saw it.
#[derive(Debug, Clone)]
struct Chunk {
    offset: u64,
    len: usize,
    done: bool,
}

/// The nodes of one test process, and every snapshot chunk sent between them.
#[derive(Default)]
struct Router {
    nodes: Mutex<BTreeMap<NodeId, Raft>>,
    chunks: Mutex<Vec<Chunk>>,
}

#[derive(Clone)]
struct Net(Arc<Router>);

struct Conn {
    router: Arc<Router>,
    target: NodeId,
}

impl RaftNetworkFactory<TypeConfig> for Net {
    type Network = Conn;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Conn {
        Conn { router: self.0.clone(), target }
    }
}

impl Conn {
    fn raft<E: std::error::Error>(
        &self,
    ) -> Result<Raft, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        let nodes = self.router.nodes.lock().unwrap();
        nodes.get(&self.target).cloned().ok_or_else(|| {
            let e = std::io::Error::other(format!("node {} is not running", self.target));
            RPCError::Unreachable(Unreachable::new(&e))
        })
    }

    fn remote<T, E: std::error::Error>(
        &self,
        r: Result<T, RaftError<NodeId, E>>,
    ) -> Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let raft = self.raft()?;
        self.remote(raft.append_entries(rpc).await)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let chunk = Chunk { offset: rpc.offset, len: rpc.data.len(), done: rpc.done };
        self.router.chunks.lock().unwrap().push(chunk);
        let raft = self.raft()?;
        self.remote(raft.install_snapshot(rpc).await)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        let raft = self.raft()?;
        self.remote(raft.vote(rpc).await)
    }
}

/// Deterministic, poorly compressible text (xorshift64, seeded).
fn value(seed: u64, len: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

async fn start(
    router: &Arc<Router>,
    config: &Arc<Config>,
    dir: &Path,
    id: NodeId,
) -> (Raft, StateMachine) {
    let (log, sm) = store::open(dir, id).unwrap();
    let raft = Raft::new(id, config.clone(), Net(router.clone()), log, sm.clone()).await.unwrap();
    router.nodes.lock().unwrap().insert(id, raft.clone());
    (raft, sm)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_much_larger_than_a_chunk_streams_in_chunks_to_a_new_node() {
    let root = tempfile::tempdir().unwrap();
    let config = Config {
        heartbeat_interval: 100,
        election_timeout_min: 300,
        election_timeout_max: 600,
        snapshot_policy: SnapshotPolicy::Never,
        snapshot_max_chunk_size: CHUNK,
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..Default::default()
    };
    let config = Arc::new(config.validate().unwrap());
    let router = Arc::new(Router::default());
    let (raft1, sm1) = start(&router, &config, &root.path().join("n1"), 1).await;
    let members = BTreeMap::from([(1, BasicNode { addr: "n1".into() })]);
    raft1.initialize(members).await.unwrap();
    let wait = Some(Duration::from_secs(30));
    raft1.wait(wait).state(openraft::ServerState::Leader, "node 1 leads").await.unwrap();

    // 16 MiB of state: 256 values of 64 KiB, written 8 at a time.
    for round in 0..32u64 {
        let writes = (0..8u64).map(|i| {
            let n = round * 8 + i;
            let req = Request::set(format!("k{n:04}"), value(n, 64 << 10));
            let raft = raft1.clone();
            async move { raft.client_write(req).await }
        });
        for r in futures_join(writes).await {
            r.unwrap();
        }
    }
    let last = common::snapshot_and_purge(&raft1, wait).await;

    // Node 2 joins: the entries it lacks are purged, so it is sent the snapshot.
    let (raft2, sm2) = start(&router, &config, &root.path().join("n2"), 2).await;
    raft1.add_learner(2, BasicNode { addr: "n2".into() }, true).await.unwrap();
    raft2.wait(wait).applied_index_at_least(Some(last.index), "node 2 caught up").await.unwrap();
    assert_eq!(sm2.dump().unwrap(), sm1.dump().unwrap());
    assert_eq!(sm2.dump().unwrap().len(), 256);
    // The exported tables went in as they were sent: adopted into node 2's fresh keyspace
    // (another id than node 1's), none rewritten.
    let (tables, rewritten) = sm2.installed_tables();
    assert!(tables > 0 && rewritten == 0, "{tables} tables installed, {rewritten} rewritten");

    // The snapshot went as consecutive chunks of at most CHUNK bytes, the last one `done`, and
    // arrived byte for byte as node 2's current snapshot.
    let sent = fs::read(root.path().join("n1/snapshot")).unwrap();
    assert!(sent.len() as u64 > 200 * CHUNK, "snapshot of {} bytes", sent.len());
    let chunks = router.chunks.lock().unwrap().clone();
    assert_eq!(chunks.len() as u64, (sent.len() as u64).div_ceil(CHUNK), "{chunks:?}");
    let mut offset = 0u64;
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.offset, offset, "chunk {i}");
        assert!(c.len as u64 <= CHUNK && c.len > 0, "chunk {i}: {c:?}");
        assert_eq!(c.done, i + 1 == chunks.len(), "chunk {i}");
        offset += c.len as u64;
    }
    assert_eq!(offset, sent.len() as u64);
    assert_eq!(fs::read(root.path().join("n2/snapshot")).unwrap(), sent);
    // Nothing was left behind by the receive and the install.
    let names: Vec<String> = fs::read_dir(root.path().join("n2"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| ["NODE", "db", "raftlog", "snapshot"].contains(&n.as_str())),
        "{names:?}"
    );

    raft2.shutdown().await.unwrap();
    raft1.shutdown().await.unwrap();
}

/// Joins futures without pulling in the `futures` crate.
async fn futures_join<F: std::future::Future + Send + 'static>(
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send,
{
    let handles: Vec<_> = fs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

fn set(term: u64, index: u64, key: &str, value: &str) -> openraft::Entry<TypeConfig> {
    let mut e = blank_ent::<TypeConfig>(term, 1, index);
    e.payload = EntryPayload::Normal(Request::set(key, value));
    e
}

#[tokio::test]
async fn an_install_that_fails_between_unpack_and_switch_leaves_the_old_state() {
    let root = tempfile::tempdir().unwrap();
    let (_l1, mut sm1) = store::open(root.path().join("n1"), 1).unwrap();
    let mut entries = vec![membership_ent::<TypeConfig>(1, 1, 1, vec![[1].into()])];
    entries.extend((0..500).map(|i| set(1, 2 + i, &format!("new{i:03}"), &value(i, 1000))));
    sm1.apply(entries).await.unwrap();
    let snapshot = sm1.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let bytes = fs::read(snapshot.snapshot.path()).unwrap();
    let new_state = sm1.dump().unwrap();

    let dir2 = root.path().join("n2");
    let (log2, mut sm2) = store::open(&dir2, 2).unwrap();
    sm2.apply(vec![blank_ent::<TypeConfig>(1, 2, 1), set(1, 2, "old", "state")]).await.unwrap();
    let old_applied = sm2.applied_state().await.unwrap();
    let old_state = sm2.dump().unwrap();

    let receive = |sm: &mut StateMachine| {
        let mut sm = sm.clone();
        let bytes = bytes.clone();
        async move {
            let mut data = sm.begin_receiving_snapshot().await.unwrap();
            data.write_all(&bytes).await.unwrap();
            data.shutdown().await.unwrap();
            data
        }
    };
    sm2.fail_next_install_before_switch();
    let data = receive(&mut sm2).await;
    let err = sm2.install_snapshot(&snapshot.meta, data).await.unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert_eq!(sm2.applied_state().await.unwrap(), old_applied);
    assert_eq!(sm2.dump().unwrap(), old_state);
    assert!(sm2.get_current_snapshot().await.unwrap().is_none());
    drop((log2, sm2));

    // A crash there: the reopened node has its old state and nothing of the half install.
    let (log2, mut sm2) = store::open(&dir2, 2).unwrap();
    assert_eq!(sm2.applied_state().await.unwrap(), old_applied);
    assert_eq!(sm2.dump().unwrap(), old_state);
    let names: Vec<String> = fs::read_dir(&dir2)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| ["NODE", "db", "raftlog"].contains(&n.as_str())), "{names:?}");

    // The same snapshot then installs, and survives a reopen.
    let data = receive(&mut sm2).await;
    sm2.install_snapshot(&snapshot.meta, data).await.unwrap();
    assert_eq!(sm2.dump().unwrap(), new_state);
    drop((log2, sm2));
    let (mut log2, mut sm2) = store::open(&dir2, 2).unwrap();
    assert_eq!(sm2.dump().unwrap(), new_state);
    assert_eq!(sm2.applied_state().await.unwrap().0, snapshot.meta.last_log_id);
    assert!(log2.get_log_state().await.is_ok());
}
