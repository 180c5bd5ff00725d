//! The streamed snapshot transport over real HTTP: two in-process nodes serve the service's
//! routes (`service::router`) and talk through `network::Network`. A snapshot of a few MiB goes
//! as one body (`snapshot_wire`) in one request and arrives byte for byte. A body that is
//! truncated, corrupted, followed by extra bytes, cut off by a dropped connection or stalled is
//! refused (HTTP 400 with the typed `TransferError`'s text where a reply can still be read) and
//! leaves nothing on the receiver, whose state is unchanged.

// openraft's error types are returned by value, as its traits do.
#![allow(clippy::result_large_err)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame};
use openraft::error::{Fatal, RPCError, RaftError, ReplicationClosed, StreamingError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::storage::RaftStateMachine;
use openraft::{BasicNode, Config, OptionalSend, Snapshot, SnapshotPolicy, Vote};
use siftdb_openraft::network::{Connection, Network};
use siftdb_openraft::snapshot_transfer;
use siftdb_openraft::snapshot_wire::{self, Header, TransferError};
use siftdb_openraft::store::{self, StateMachine};
use siftdb_openraft::{service, NodeId, Raft, Request, TypeConfig};
use tokio::io::AsyncWriteExt;

/// `Network` (HTTP), counting the snapshot transfers it makes.
#[derive(Clone, Default)]
struct Counting {
    inner: Network,
    transfers: Arc<AtomicU64>,
}

struct CountingConn {
    inner: Connection,
    transfers: Arc<AtomicU64>,
}

impl RaftNetworkFactory<TypeConfig> for Counting {
    type Network = CountingConn;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> CountingConn {
        CountingConn {
            inner: self.inner.new_client(target, node).await,
            transfers: self.transfers.clone(),
        }
    }
}

impl RaftNetwork<TypeConfig> for CountingConn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.inner.append_entries(rpc, option).await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl std::future::Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        self.transfers.fetch_add(1, Ordering::Relaxed);
        self.inner.full_snapshot(vote, snapshot, cancel, option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.inner.vote(rpc, option).await
    }
}

/// A body that yields `first` and then nothing, ever (a sender that stalled).
struct Stalled {
    first: Option<Bytes>,
}

impl Body for Stalled {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut().first.take() {
            Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
            None => Poll::Pending,
        }
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
    net: &Counting,
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

/// Waits until `dir` holds exactly `want` (a refused receive removes its incoming file when its
/// handler ends, which for a dropped connection is after the client saw it close).
async fn wait_for_names(dir: &std::path::Path, want: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = names(dir);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{} holds {got:?}, not {want:?}", dir.display());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_streams_over_http_as_one_body_and_bad_bodies_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let config = Config {
        heartbeat_interval: 100,
        election_timeout_min: 300,
        election_timeout_max: 600,
        snapshot_policy: SnapshotPolicy::Never,
        install_snapshot_timeout: 60_000,
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..Default::default()
    };
    let config = Arc::new(config.validate().unwrap());
    let net = Counting::default();
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
    let sent = store::current_snapshot_stream(root.path().join("n1")).unwrap();
    assert!(sent.len() > 4 << 20, "snapshot of {} bytes", sent.len());

    let dir2 = root.path().join("n2");
    let (raft2, sm2, addr2) = start(&config, &net, &dir2, 2).await;
    let before = (sm2.dump().unwrap(), raft2.metrics().borrow().last_applied);

    // Bad bodies straight at node 2's route, made from node 1's snapshot. Each is refused before
    // openraft sees it.
    let meta = sm1.get_current_snapshot().await.unwrap().unwrap().meta;
    let vote = raft1.metrics().borrow().vote;
    let prefix = snapshot_wire::encode_prefix(&Header { vote, meta, len: sent.len() as u64 });
    let mut body = prefix.clone();
    body.extend_from_slice(&sent);
    body.extend_from_slice(&crc32fast::hash(&sent).to_le_bytes());
    let mut flipped = body.clone();
    flipped[prefix.len() + sent.len() / 2] ^= 0x10;
    let mut longer = body.clone();
    longer.push(0);
    // A body whose own CRC holds around a snapshot that fails its table's CRC (a corrupt
    // sender): refused as it is unpacked, after every byte was read.
    let mut inner = sent.clone();
    inner[sent.len() / 2] ^= 0x10;
    let mut resealed = prefix.clone();
    resealed.extend_from_slice(&inner);
    resealed.extend_from_slice(&crc32fast::hash(&inner).to_le_bytes());
    // Refused after its first 8 bytes, before the rest is read: short enough that the client
    // sent it all (a longer one meets the closed connection: a network error to the sender).
    let mut bad_magic = body[..1024].to_vec();
    bad_magic[0] = b'X';
    let n = sent.len() as u64;
    let http = reqwest::Client::new();
    for (bad, says) in [
        (
            body[..body.len() - 1].to_vec(),
            "the body ends inside the CRC (3 of 4 bytes)".to_string(),
        ),
        (
            body[..body.len() - 1000].to_vec(),
            format!("inside the snapshot ({} of {n} bytes)", n - 996),
        ),
        (flipped, "snapshot CRC mismatch".into()),
        (longer, "bytes follow the CRC".into()),
        (resealed, "corrupt snapshot: CRC mismatch in file".into()),
        (bad_magic, "not the magic".into()),
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
        assert!(text.starts_with("refused snapshot: ") && text.contains(&says), "{text}");
        assert_eq!(names(&dir2), ["NODE", "db", "raftlog"], "a refused body left something");
    }

    // A connection dropped in the middle of the body (a leader killed mid-transfer): the
    // request announced the whole length, half of it arrives, then the socket closes.
    let mut tcp = tokio::net::TcpStream::connect(&addr2).await.unwrap();
    let head = format!(
        "POST /raft/snapshot HTTP/1.1\r\nhost: {addr2}\r\ncontent-type: {}\r\n\
         content-length: {}\r\n\r\n",
        snapshot_wire::CONTENT_TYPE,
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&body[..body.len() / 2]).await.unwrap();
    tcp.flush().await.unwrap();
    // The incoming file exists while the body arrives; it goes when the connection does.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !names(&dir2).iter().any(|n| n.starts_with("snapshot.incoming.")) {
        assert!(Instant::now() < deadline, "no incoming file: {:?}", names(&dir2));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(tcp);
    wait_for_names(&dir2, &["NODE", "db", "raftlog"]).await;

    // A sender that stalls after the header: refused once no byte came for the bound.
    let stalled = Stalled { first: Some(Bytes::from(body[..prefix.len() + 100].to_vec())) };
    let started = Instant::now();
    let err =
        snapshot_transfer::receive(&raft2, stalled, Duration::from_millis(300)).await.unwrap_err();
    assert!(
        matches!(err, TransferError::Stalled { got, .. } if got == prefix.len() as u64 + 100),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(names(&dir2), ["NODE", "db", "raftlog"]);
    assert_eq!((sm2.dump().unwrap(), raft2.metrics().borrow().last_applied), before);

    // Node 2 joins: the entries it lacks are purged, so node 1 streams the snapshot over HTTP,
    // in one transfer, and node 2 ends with its bytes as its current snapshot.
    raft1.add_learner(2, BasicNode { addr: addr2 }, true).await.unwrap();
    raft2.wait(wait).applied_index_at_least(Some(last.index), "node 2 caught up").await.unwrap();
    assert_eq!(sm2.dump().unwrap(), sm1.dump().unwrap());
    assert_eq!(sm2.dump().unwrap().len(), 64);
    assert_eq!(store::current_snapshot_stream(&dir2).unwrap(), sent);
    assert_eq!(names(&dir2), ["NODE", "db", "raftlog", "snapshot", "snapshot.tables.0"]);
    assert_eq!(net.transfers.load(Ordering::Relaxed), 1);

    raft2.shutdown().await.unwrap();
    raft1.shutdown().await.unwrap();
}
