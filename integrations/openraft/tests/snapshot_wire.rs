//! The compact snapshot transport over real HTTP: two in-process nodes serve the service's routes
//! (`service::router`) and talk through `network::Network`. A snapshot of a few MiB, sent in
//! 64 KiB chunks as binary bodies (`snapshot_wire`), arrives byte for byte; a truncated or
//! corrupted chunk body is refused with HTTP 400 and the typed `ChunkError`'s text, and leaves
//! nothing on the receiver.

// openraft's error types are returned by value, as its traits do.
#![allow(clippy::result_large_err)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{InstallSnapshotError, RPCError, RaftError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::RaftStateMachine;
use openraft::{BasicNode, Config, SnapshotPolicy};
use siftdb_openraft::network::{Connection, Network};
use siftdb_openraft::snapshot_wire::{self, ChunkError};
use siftdb_openraft::store::{self, StateMachine};
use siftdb_openraft::{service, NodeId, Raft, Request, TypeConfig};

const CHUNK: u64 = 64 << 10;

/// `Network` (HTTP), recording the offset, length and `done` of every snapshot chunk sent.
#[derive(Clone, Default)]
struct Recording {
    inner: Network,
    chunks: Arc<Mutex<Vec<(u64, usize, bool)>>>,
}

struct RecordingConn {
    inner: Connection,
    chunks: Arc<Mutex<Vec<(u64, usize, bool)>>>,
}

impl RaftNetworkFactory<TypeConfig> for Recording {
    type Network = RecordingConn;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> RecordingConn {
        RecordingConn {
            inner: self.inner.new_client(target, node).await,
            chunks: self.chunks.clone(),
        }
    }
}

impl RaftNetwork<TypeConfig> for RecordingConn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.inner.append_entries(rpc, option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.chunks.lock().unwrap().push((rpc.offset, rpc.data.len(), rpc.done));
        self.inner.install_snapshot(rpc, option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.inner.vote(rpc, option).await
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

/// Opens node `id` in `dir`, starts Raft on it and serves its routes on a free local port.
async fn start(
    config: &Arc<Config>,
    net: &Recording,
    dir: &std::path::Path,
    id: NodeId,
) -> (Raft, StateMachine, String) {
    let (log, sm) = store::open(dir, id).unwrap();
    let raft = Raft::new(id, config.clone(), net.clone(), log, sm.clone()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let router = service::router(raft.clone(), Arc::new(sm.clone()));
    tokio::spawn(async move { axum::serve(listener, router).await });
    (raft, sm, addr)
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_streams_over_http_as_binary_chunks_and_bad_chunks_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let config = Config {
        heartbeat_interval: 100,
        election_timeout_min: 300,
        election_timeout_max: 600,
        snapshot_policy: SnapshotPolicy::Never,
        snapshot_max_chunk_size: CHUNK,
        install_snapshot_timeout: 60_000,
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..Default::default()
    };
    let config = Arc::new(config.validate().unwrap());
    let net = Recording::default();
    let (raft1, mut sm1, addr1) = start(&config, &net, &root.path().join("n1"), 1).await;
    raft1.initialize(BTreeMap::from([(1, BasicNode { addr: addr1 })])).await.unwrap();
    let wait = Some(Duration::from_secs(60));
    raft1.wait(wait).state(openraft::ServerState::Leader, "node 1 leads").await.unwrap();

    // 4 MiB of state: 64 values of 64 KiB.
    for n in 0..64u64 {
        let req = Request::set(format!("k{n:03}"), value(n, 64 << 10));
        raft1.client_write(req).await.unwrap();
    }
    let last = common::snapshot_and_purge(&raft1, wait).await;
    let sent = fs::read(root.path().join("n1/snapshot")).unwrap();
    assert!(sent.len() as u64 > 60 * CHUNK, "snapshot of {} bytes", sent.len());

    let dir2 = root.path().join("n2");
    let (raft2, sm2, addr2) = start(&config, &net, &dir2, 2).await;

    // Bad bodies straight at node 2's route: the first chunk of node 1's snapshot, truncated by
    // one byte, then with one chunk byte flipped. Each is refused before openraft sees it.
    let meta = sm1.get_current_snapshot().await.unwrap().unwrap().meta;
    let vote = raft1.metrics().borrow().vote;
    let first = InstallSnapshotRequest::<TypeConfig> {
        vote,
        meta,
        offset: 0,
        data: sent[..CHUNK as usize].to_vec(),
        done: false,
    };
    let body = snapshot_wire::encode(&first);
    let truncated = body[..body.len() - 1].to_vec();
    let mut flipped = body.clone();
    let at = body.len() - 1000;
    flipped[at] ^= 0x10;
    assert_eq!(
        snapshot_wire::decode(&truncated).unwrap_err(),
        ChunkError::LengthMismatch { announced: CHUNK, got: CHUNK - 1 }
    );
    assert!(matches!(snapshot_wire::decode(&flipped), Err(ChunkError::CrcMismatch { .. })));
    let http = reqwest::Client::new();
    for (bad, says) in [
        (truncated, "the header announces 65536 chunk bytes, the body has 65535"),
        (flipped, "chunk CRC mismatch"),
    ] {
        let reply = http
            .post(format!("http://{addr2}/raft/snapshot"))
            .header(reqwest::header::CONTENT_TYPE, snapshot_wire::CONTENT_TYPE)
            .body(bad)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), reqwest::StatusCode::BAD_REQUEST);
        let text = reply.text().await.unwrap();
        assert!(text.starts_with("refused snapshot chunk: ") && text.contains(says), "{text}");
    }
    assert_eq!(names(&dir2), ["NODE", "db", "raftlog"], "a refused chunk left something");
    assert!(net.chunks.lock().unwrap().is_empty());

    // Node 2 joins: the entries it lacks are purged, so node 1 streams the snapshot over HTTP.
    raft1.add_learner(2, BasicNode { addr: addr2 }, true).await.unwrap();
    raft2.wait(wait).applied_index_at_least(Some(last.index), "node 2 caught up").await.unwrap();
    assert_eq!(sm2.dump().unwrap(), sm1.dump().unwrap());
    assert_eq!(sm2.dump().unwrap().len(), 64);

    // Consecutive chunks of at most CHUNK bytes, the last one `done`; byte for byte.
    let chunks = net.chunks.lock().unwrap().clone();
    assert_eq!(chunks.len() as u64, (sent.len() as u64).div_ceil(CHUNK), "{chunks:?}");
    let mut offset = 0u64;
    for (i, &(at, len, done)) in chunks.iter().enumerate() {
        assert_eq!(at, offset, "chunk {i}");
        assert!(len as u64 <= CHUNK && len > 0, "chunk {i}: {len}");
        assert_eq!(done, i + 1 == chunks.len(), "chunk {i}");
        offset += len as u64;
    }
    assert_eq!(offset, sent.len() as u64);
    assert_eq!(fs::read(dir2.join("snapshot")).unwrap(), sent);
    assert_eq!(names(&dir2), ["NODE", "db", "raftlog", "snapshot"]);

    raft2.shutdown().await.unwrap();
    raft1.shutdown().await.unwrap();
}
