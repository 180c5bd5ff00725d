//! Snapshots stream: a state many times the transfer's block size is built as a file, sent as
//! one body (`snapshot_transfer::SnapshotBody`, read block by block from the file) to a node that
//! joins after the log it needs was purged, received by `snapshot_transfer::receive` into a
//! file there and installed; in one process, without HTTP. And an install that fails between
//! unpack and switch leaves the old state, in the running store and after a reopen.

// openraft's error types are returned by value, as its traits do.
#![allow(clippy::result_large_err)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use openraft::error::{
    Fatal, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::testing::{blank_ent, membership_ent};
use openraft::{
    BasicNode, Config, EntryPayload, OptionalSend, RaftSnapshotBuilder, Snapshot, SnapshotPolicy,
    Vote,
};
use siftdb_openraft::snapshot_transfer::{self, Received, SnapshotBody, BLOCK_BYTES};
use siftdb_openraft::store::{self, StateMachine};
use siftdb_openraft::{NodeId, Raft, Request, TypeConfig};
use tokio::io::AsyncWriteExt;

/// The nodes of one test process, and the frame lengths of every snapshot transfer between
/// them.
#[derive(Default)]
struct Router {
    nodes: Mutex<BTreeMap<NodeId, Raft>>,
    transfers: Mutex<Vec<Vec<usize>>>,
}

/// A body passed through, recording each frame's length.
struct Recorded {
    inner: SnapshotBody,
    frames: Vec<usize>,
    router: Arc<Router>,
}

impl Body for Recorded {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(f))) => this.frames.extend(f.data_ref().map(|d| d.len())),
            Poll::Ready(None) => {
                this.router.transfers.lock().unwrap().push(std::mem::take(&mut this.frames))
            }
            _ => {}
        }
        polled
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
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

    async fn full_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        _cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        let raft = match self.raft::<openraft::error::Infallible>() {
            Ok(r) => r,
            Err(RPCError::Unreachable(u)) => return Err(StreamingError::Unreachable(u)),
            Err(e) => return Err(StreamingError::Network(NetworkError::new(&e))),
        };
        let body = SnapshotBody::new(vote, snapshot)
            .await
            .map_err(|e| StreamingError::Network(NetworkError::new(&e)))?;
        let body = Recorded { inner: body, frames: Vec::new(), router: self.router.clone() };
        match snapshot_transfer::receive(&raft, body, Duration::from_secs(30)).await {
            Ok(Received::Installed(r)) => {
                r.map_err(|f| StreamingError::RemoteError(RemoteError::new(self.target, f)))
            }
            Ok(Received::StaleVote(r)) => Ok(r),
            Err(e) => Err(StreamingError::Network(NetworkError::new(&e))),
        }
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
async fn a_snapshot_many_blocks_long_streams_as_one_body_to_a_new_node() {
    let root = tempfile::tempdir().unwrap();
    let config = Config {
        heartbeat_interval: 100,
        election_timeout_min: 300,
        election_timeout_max: 600,
        snapshot_policy: SnapshotPolicy::Never,
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

    // The snapshot went as one body: the header, then the file in blocks of BLOCK_BYTES (the last
    // one shorter), then the 4-byte CRC; it arrived byte for byte as node 2's current snapshot.
    let sent = store::current_snapshot_stream(root.path().join("n1")).unwrap();
    assert!(sent.len() > 15 * BLOCK_BYTES, "snapshot of {} bytes", sent.len());
    let transfers = router.transfers.lock().unwrap().clone();
    assert_eq!(transfers.len(), 1, "{transfers:?}");
    let frames = &transfers[0];
    let blocks = &frames[1..frames.len() - 1];
    assert_eq!(blocks.len(), sent.len().div_ceil(BLOCK_BYTES), "{frames:?}");
    for (i, &len) in blocks.iter().enumerate() {
        let full = i + 1 < blocks.len();
        assert!(if full { len == BLOCK_BYTES } else { len <= BLOCK_BYTES }, "block {i}: {len}");
    }
    assert_eq!(blocks.iter().sum::<usize>(), sent.len());
    assert_eq!(frames.last(), Some(&4));
    assert_eq!(store::current_snapshot_stream(root.path().join("n2")).unwrap(), sent);
    // Nothing was left behind by the receive and the install.
    let names: Vec<String> = fs::read_dir(root.path().join("n2"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let kept = ["NODE", "db", "raftlog", "snapshot", "snapshot.tables.0"];
    assert!(names.iter().all(|n| kept.contains(&n.as_str())), "{names:?}");

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
    let bytes = snapshot.snapshot.read_stream().unwrap();
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
