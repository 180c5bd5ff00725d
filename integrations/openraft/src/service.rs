//! The replicated KV service: one node's HTTP server. Routes (JSON unless said; every reply is
//! the JSON of a `Result`, so errors travel typed):
//!
//! | route | body | reply |
//! |---|---|---|
//! | `POST /raft/append`, `/raft/vote` | openraft's RPC request | its reply |
//! | `POST /raft/snapshot` | a whole snapshot, streamed binary ([`crate::snapshot_wire`]) | after the install, openraft's `SnapshotResponse`; HTTP 400 with the [`crate::snapshot_wire::TransferError`] text for a body that fails a check, is cut short or stalls |
//! | `POST /kv/write` | [`Request`] | [`api::WriteResult`]; concurrent writes are proposed together as one [`Request::Batch`] entry; a batch holding a batch or a key longer than `siftdb::MAX_KEY_SIZE` is refused (HTTP 400), a body past [`KV_WRITE_BODY_LIMIT`] too (HTTP 413) |
//! | `POST /kv/read` | key | [`api::ReadResult`]: linearizable, through `ensure_linearizable` |
//! | `POST /kv/local` | key | this node's applied value, not linearizable |
//! | `GET /kv/dump` | | this node's applied state, every pair in key order |
//!
//! The `/kv/*` routes take and give binary bodies ([`crate::kv_wire`], any bytes as keys and
//! values) when the request's `Content-Type` (for `/kv/dump`: `Accept`) is
//! [`kv_wire::CONTENT_TYPE`], else JSON, where a key or value is a string when UTF-8 and
//! `{"base64": ...}` otherwise ([`api::JsonBytes`]). A body that does not decode is answered
//! HTTP 400 with what is wrong.
//! | `POST /cluster/init` | map of node id to `BasicNode` | [`api::InitResult`] |
//! | `POST /cluster/add-learner` | `[id, "host:port"]` | [`api::WriteResult`] of the change |
//! | `POST /cluster/change-membership` | set of voter ids | [`api::MembershipResult`] |
//! | `POST /cluster/snapshot` | | [`api::SnapshotResult`]: builds a snapshot of this node's applied state and purges its log up to it |
//! | `GET /cluster/metrics` | | openraft's `RaftMetrics` |

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::error::RaftError;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, VoteRequest, VoteResponse};
use openraft::{BasicNode, Config, SnapshotPolicy};

use crate::kv_wire;
use crate::network::{Network, SNAPSHOT_STALL_TIMEOUT};
use crate::snapshot_transfer::Received;
use crate::store;
use crate::{KvRead, NodeId, Raft, Request, TypeConfig};

/// The reply types of the client routes, shared with [`crate::client`].
pub mod api {
    use openraft::error::{CheckIsLeaderError, ClientWriteError, InitializeError, RaftError};
    use openraft::BasicNode;

    use crate::{NodeId, Response};

    /// `/kv/write`.
    pub type WriteResult = Result<Response, RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>>;
    /// `/kv/read`.
    pub type ReadResult =
        Result<Option<Vec<u8>>, RaftError<NodeId, CheckIsLeaderError<NodeId, BasicNode>>>;

    /// A key or value in a JSON body: a string when its bytes are UTF-8, else
    /// `{"base64": ...}` ([`crate::bytes_json`]).
    #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    #[serde(transparent)]
    pub struct JsonBytes(#[serde(with = "crate::bytes_json")] pub Vec<u8>);
    /// `/kv/local` and `/kv/dump`: a storage failure as text.
    pub type LocalResult<T> = Result<T, String>;
    /// `/cluster/init`.
    pub type InitResult = Result<(), RaftError<NodeId, InitializeError<NodeId, BasicNode>>>;
    /// `/cluster/add-learner` and `/cluster/change-membership`: the log id of the change.
    pub type MembershipResult =
        Result<openraft::LogId<NodeId>, RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>>;
    /// `/cluster/snapshot`: the log id the snapshot covers (none for an empty state), or why not.
    pub type SnapshotResult = Result<Option<openraft::LogId<NodeId>>, String>;
}

/// The largest `/kv/write` body accepted (axum's default): one client write, keys and values
/// included; a larger one is answered HTTP 413 before anything is proposed.
pub const KV_WRITE_BODY_LIMIT: usize = 2 << 20;

/// The largest `/raft/append` body accepted (from a peer: it holds up to
/// `Config::max_payload_entries` entries).
const APPEND_BODY_LIMIT: usize = 1 << 30;

/// How long the leader waits, after the last byte of a snapshot body, for the follower's reply:
/// it comes after the install (unpack, ingest, switch), and a timeout makes the leader send the
/// snapshot again from its first byte. openraft's default (200 ms) is far below the install of a
/// large state. (The transfer itself has no bound but a stall: [`SNAPSHOT_STALL_TIMEOUT`].)
pub const SNAPSHOT_INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How to run one node.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The node's id.
    pub id: NodeId,
    /// `host:port` it listens on (also its address in the membership).
    pub addr: String,
    /// Its directory (created if missing; refused if it holds another node's data).
    pub dir: PathBuf,
    /// A snapshot is built every this many applied entries.
    pub snapshot_every: u64,
    /// Which engine stores the log and the state machine.
    pub store: StoreKind,
    /// TLS and the shared secret, for the listener and the RPCs to peers ([`crate::tls`]).
    pub security: crate::tls::Security,
}

/// The engine under a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// siftdb ([`crate::store`]).
    Siftdb,
    /// RocksDB, the comparison peer (`crate::peer_rocksdb`, feature `rocksdb-peer`).
    Rocksdb,
}

struct App {
    raft: Raft,
    sm: Arc<dyn KvRead>,
    writes: tokio::sync::mpsc::UnboundedSender<PendingWrite>,
    /// Held while a snapshot body is received and installed: one incoming file at a time.
    receiving: tokio::sync::Mutex<()>,
}

/// A client write waiting for the batcher, and where its result goes.
type PendingWrite = (Request, tokio::sync::oneshot::Sender<api::WriteResult>);

/// Most client writes one log entry carries.
const MAX_BATCH: usize = 256;
/// A batch stops taking writes once their keys and values pass this many bytes, so one entry
/// stays small enough to be replicated within one AppendEntries timeout (openraft 0.9 gives
/// each `Config::heartbeat_interval`; the log store bounds a request to
/// `store::log_store::APPEND_PAYLOAD_BYTES` but sends a larger entry whole).
const MAX_BATCH_BYTES: usize = 1 << 20;

/// The key and value bytes of a write (a batch: of its writes).
fn request_bytes(req: &Request) -> usize {
    match req {
        Request::Set { key, value } => key.len() + value.len(),
        Request::Delete { key } => key.len(),
        Request::Batch(reqs) => reqs.iter().map(request_bytes).sum(),
    }
}

/// Entries the batcher has proposed and not yet seen applied, at most: while they are
/// outstanding, further writes wait and then go together as one entry.
const MAX_BATCHES_IN_FLIGHT: usize = 2;

/// Proposes the client writes queued on `rx`: everything queued when a proposal slot is free
/// goes as one entry (a [`Request::Batch`] when there are several), so concurrent writes share
/// one append and one fsync. openraft 0.9's core appends one entry per `client_write` and waits
/// for its flush before it takes the next message, so without this every write costs the
/// leader one fsync. Concurrent writes may be ordered either way, so one entry holding them in
/// queue order is a linearization of them; each gets its own response.
async fn batch_writes(raft: Raft, mut rx: tokio::sync::mpsc::UnboundedReceiver<PendingWrite>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_BATCHES_IN_FLIGHT));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let Some(first) = rx.recv().await else { return };
        let mut bytes = request_bytes(&first.0);
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH && bytes < MAX_BATCH_BYTES {
            match rx.try_recv() {
                Ok(w) => {
                    bytes += request_bytes(&w.0);
                    batch.push(w);
                }
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            if batch.len() == 1 {
                let (req, tx) = batch.remove(0);
                let _ = tx.send(raft.client_write(req).await.map(|r| r.data));
            } else {
                let (reqs, txs): (Vec<Request>, Vec<_>) = batch.into_iter().unzip();
                match raft.client_write(Request::Batch(reqs)).await {
                    Ok(r) => {
                        // apply gives one response per request of a batch.
                        debug_assert_eq!(r.data.batch.len(), txs.len());
                        for (tx, resp) in txs.into_iter().zip(r.data.batch) {
                            let _ = tx.send(Ok(resp));
                        }
                    }
                    Err(e) => {
                        for tx in txs {
                            let _ = tx.send(Err(e.clone()));
                        }
                    }
                }
            }
            drop(slot);
        });
    }
}

type AppState = State<Arc<App>>;

/// Opens the node's storage, starts Raft and serves until SIGTERM or Ctrl-C. The storage is
/// opened (and a foreign directory refused) before anything listens.
pub async fn run_node(cfg: NodeConfig) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config {
        cluster_name: "siftdb-kv".into(),
        heartbeat_interval: 100,
        election_timeout_min: 300,
        election_timeout_max: 600,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(cfg.snapshot_every),
        max_in_snapshot_log_to_keep: cfg.snapshot_every / 2,
        install_snapshot_timeout: SNAPSHOT_INSTALL_TIMEOUT.as_millis() as u64,
        ..Default::default()
    }
    .validate()?;
    let config = Arc::new(config);
    let (raft, sm): (Raft, Arc<dyn KvRead>) = match cfg.store {
        StoreKind::Siftdb => {
            let (log, sm) = store::open(&cfg.dir, cfg.id)?;
            (
                Raft::new(cfg.id, config, Network::new(&cfg.security), log, sm.clone()).await?,
                Arc::new(sm),
            )
        }
        #[cfg(feature = "rocksdb-peer")]
        StoreKind::Rocksdb => {
            let (log, sm) = crate::peer_rocksdb::open(&cfg.dir, cfg.id)?;
            (
                Raft::new(cfg.id, config, Network::new(&cfg.security), log, sm.clone()).await?,
                Arc::new(sm),
            )
        }
        #[cfg(not(feature = "rocksdb-peer"))]
        StoreKind::Rocksdb => {
            return Err(
                "this build has no RocksDB store: rebuild with --features rocksdb-peer".into()
            )
        }
    };
    let listener = tokio::net::TcpListener::bind(&cfg.addr).await?;
    let mut app = router(raft.clone(), sm);
    if let Some(secret) = cfg.security.secret.clone() {
        // Outermost: a request without the secret reaches no route, so never Raft.
        app = app.layer(axum::middleware::from_fn(move |req, next| {
            check_secret(secret.clone(), req, next)
        }));
    }
    eprintln!(
        "siftdb-raft node {} serving {} on {} from {}",
        cfg.id,
        cfg.security.scheme(),
        cfg.addr,
        cfg.dir.display()
    );
    match cfg.security.server.clone() {
        Some(tls) => {
            axum::serve(crate::tls::TlsListener::new(listener, tls)?, app)
                .with_graceful_shutdown(shutdown_signal())
                .await?
        }
        None => axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await?,
    }
    raft.shutdown().await?;
    Ok(())
}

/// The HTTP routes of a node (the table above) over `raft` and its state machine `sm`.
pub fn router(raft: Raft, sm: Arc<dyn KvRead>) -> Router {
    let (writes, queued) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(batch_writes(raft.clone(), queued));
    let app = Arc::new(App { raft, sm, writes, receiving: tokio::sync::Mutex::new(()) });
    Router::new()
        // An AppendEntries of up to openraft's 300 entries of large values can pass axum's
        // 2 MB default: a follower refusing it could never catch up.
        .route("/raft/append", post(raft_append).layer(DefaultBodyLimit::max(APPEND_BODY_LIMIT)))
        .route("/raft/vote", post(raft_vote))
        // Streamed to a file, never held: its length is the snapshot's (snapshot_transfer.rs).
        .route("/raft/snapshot", post(raft_snapshot).layer(DefaultBodyLimit::disable()))
        .route("/kv/write", post(kv_write).layer(DefaultBodyLimit::max(KV_WRITE_BODY_LIMIT)))
        .route("/kv/read", post(kv_read))
        .route("/kv/local", post(kv_local))
        .route("/kv/dump", get(kv_dump))
        .route("/cluster/init", post(cluster_init))
        .route("/cluster/add-learner", post(cluster_add_learner))
        .route("/cluster/change-membership", post(cluster_change_membership))
        .route("/cluster/snapshot", post(cluster_snapshot))
        .route("/cluster/metrics", get(cluster_metrics))
        .with_state(app)
}

/// Answers HTTP 401 unless the request carries the shared secret.
async fn check_secret(
    secret: Arc<str>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> HttpResponse {
    let given = req.headers().get(crate::tls::SECRET_HEADER).map(|v| v.as_bytes());
    match given {
        Some(g) if crate::tls::secret_matches(g, secret.as_bytes()) => next.run(req).await,
        Some(_) => (StatusCode::UNAUTHORIZED, "wrong shared secret").into_response(),
        None => {
            let why = format!("missing shared secret (header {})", crate::tls::SECRET_HEADER);
            (StatusCode::UNAUTHORIZED, why).into_response()
        }
    }
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler can be installed");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

async fn raft_append(
    State(app): AppState,
    Json(rpc): Json<AppendEntriesRequest<TypeConfig>>,
) -> Json<Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>> {
    Json(app.raft.append_entries(rpc).await)
}

async fn raft_vote(
    State(app): AppState,
    Json(rpc): Json<VoteRequest<NodeId>>,
) -> Json<Result<VoteResponse<NodeId>, RaftError<NodeId>>> {
    Json(app.raft.vote(rpc).await)
}

async fn raft_snapshot(State(app): AppState, body: axum::body::Body) -> HttpResponse {
    let _one = app.receiving.lock().await;
    let received = crate::snapshot_transfer::receive(&app.raft, body, SNAPSHOT_STALL_TIMEOUT).await;
    let reply: Result<_, RaftError<NodeId>> = match received {
        Ok(Received::Installed(r)) => r.map_err(RaftError::Fatal),
        Ok(Received::StaleVote(r)) => Ok(r),
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    Json(reply).into_response()
}

/// Whether the request's body is binary ([`kv_wire`]) rather than JSON.
fn sent_binary(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).is_some_and(|v| v.as_bytes() == kv_wire::CONTENT_TYPE.as_bytes())
}

fn binary_reply(body: Vec<u8>) -> HttpResponse {
    ([(CONTENT_TYPE, kv_wire::CONTENT_TYPE)], body).into_response()
}

fn bad_request(why: String) -> HttpResponse {
    (StatusCode::BAD_REQUEST, why).into_response()
}

/// The key of a `/kv/read` or `/kv/local` body, binary or JSON; `Err` is the HTTP 400 reply.
fn request_key(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, HttpResponse> {
    if sent_binary(headers) {
        kv_wire::decode_key(body)
            .map(<[u8]>::to_vec)
            .map_err(|e| bad_request(format!("refused key: {e}")))
    } else {
        serde_json::from_slice::<api::JsonBytes>(body)
            .map(|k| k.0)
            .map_err(|e| bad_request(format!("refused key: {e}")))
    }
}

/// The length of the longest key `req` writes (none for an empty batch).
fn longest_key(req: &Request) -> Option<usize> {
    match req {
        Request::Set { key, .. } | Request::Delete { key } => Some(key.len()),
        Request::Batch(reqs) => reqs.iter().filter_map(longest_key).max(),
    }
}

async fn kv_write(State(app): AppState, headers: HeaderMap, body: Bytes) -> HttpResponse {
    let binary = sent_binary(&headers);
    let req = if binary {
        kv_wire::decode_write(&body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice::<Request>(&body).map_err(|e| e.to_string())
    };
    drop(body);
    let req = match req {
        Ok(r) => r,
        Err(e) => return bad_request(format!("refused write: {e}")),
    };
    // A key siftdb refuses would fail `apply` on every node after it was committed.
    if let Some(n) = longest_key(&req).filter(|&n| n > siftdb::MAX_KEY_SIZE) {
        let why = format!("refused write: a key of {n} bytes exceeds {}", siftdb::MAX_KEY_SIZE);
        return bad_request(why);
    }
    let result: api::WriteResult = if let Request::Batch(reqs) = &req {
        // The log's entry format holds one level of batch (entry_codec.rs).
        if reqs.iter().any(|r| matches!(r, Request::Batch(_))) {
            return bad_request("refused write: a batch may not contain a batch".into());
        }
        app.raft.client_write(req).await.map(|r| r.data)
    } else {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if app.writes.send((req, tx)).is_err() {
            return (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down").into_response();
        }
        match rx.await {
            Ok(result) => result,
            Err(_) => {
                return (StatusCode::SERVICE_UNAVAILABLE, "the node is shutting down")
                    .into_response()
            }
        }
    };
    if binary {
        binary_reply(kv_wire::encode_reply(&result, kv_wire::encode_response))
    } else {
        Json(result).into_response()
    }
}

async fn kv_read(State(app): AppState, headers: HeaderMap, body: Bytes) -> HttpResponse {
    let key = match request_key(&headers, &body) {
        Ok(k) => k,
        Err(refused) => return refused,
    };
    // ensure_linearizable waits until this node has applied everything committed when the read
    // arrived (and that it is still the leader), so the local read after it is linearizable.
    let result: api::ReadResult = match app.raft.ensure_linearizable().await {
        Err(e) => Err(e),
        Ok(_) => app.sm.get(&key).map_err(|e| {
            let io = openraft::StorageIOError::read_state_machine(openraft::AnyError::error(e));
            RaftError::Fatal(openraft::error::Fatal::StorageError(io.into()))
        }),
    };
    value_reply(sent_binary(&headers), result)
}

/// A value reply, binary or JSON.
fn value_reply<E: serde::Serialize>(
    binary: bool,
    result: Result<Option<Vec<u8>>, E>,
) -> HttpResponse {
    if binary {
        binary_reply(kv_wire::encode_reply(&result, kv_wire::encode_value))
    } else {
        Json(result.map(|v| v.map(api::JsonBytes))).into_response()
    }
}

async fn kv_local(State(app): AppState, headers: HeaderMap, body: Bytes) -> HttpResponse {
    let key = match request_key(&headers, &body) {
        Ok(k) => k,
        Err(refused) => return refused,
    };
    let result: api::LocalResult<Option<Vec<u8>>> = app.sm.get(&key);
    value_reply(sent_binary(&headers), result)
}

/// Every pair; binary when the request accepts [`kv_wire::CONTENT_TYPE`].
async fn kv_dump(State(app): AppState, headers: HeaderMap) -> HttpResponse {
    let result: api::LocalResult<crate::Pairs> = app.sm.dump();
    let binary =
        headers.get(ACCEPT).is_some_and(|v| v.as_bytes() == kv_wire::CONTENT_TYPE.as_bytes());
    if binary {
        binary_reply(kv_wire::encode_reply(&result, |p, out| kv_wire::encode_pairs(p, out)))
    } else {
        let json = result.map(|pairs| {
            pairs
                .into_iter()
                .map(|(k, v)| (api::JsonBytes(k), api::JsonBytes(v)))
                .collect::<Vec<_>>()
        });
        Json(json).into_response()
    }
}

async fn cluster_init(
    State(app): AppState,
    Json(members): Json<BTreeMap<NodeId, BasicNode>>,
) -> Json<api::InitResult> {
    Json(app.raft.initialize(members).await)
}

async fn cluster_add_learner(
    State(app): AppState,
    Json((id, addr)): Json<(NodeId, String)>,
) -> Json<api::MembershipResult> {
    Json(app.raft.add_learner(id, BasicNode { addr }, true).await.map(|r| r.log_id))
}

async fn cluster_change_membership(
    State(app): AppState,
    Json(voters): Json<BTreeSet<NodeId>>,
) -> Json<api::MembershipResult> {
    Json(app.raft.change_membership(voters, false).await.map(|r| r.log_id))
}

async fn cluster_snapshot(State(app): AppState) -> Json<api::SnapshotResult> {
    Json(snapshot_and_purge(&app.raft).await)
}

/// Builds a snapshot covering at least what is applied now, then purges the log up to it.
async fn snapshot_and_purge(raft: &Raft) -> api::SnapshotResult {
    let wait = Some(Duration::from_secs(3600));
    let Some(applied) = raft.metrics().borrow().last_applied else { return Ok(None) };
    raft.trigger().snapshot().await.map_err(|e| e.to_string())?;
    let m = raft
        .wait(wait)
        .metrics(|m| m.snapshot.is_some_and(|s| s.index >= applied.index), "snapshot built")
        .await
        .map_err(|e| e.to_string())?;
    let Some(snapshot) = m.snapshot else { return Ok(None) };
    raft.trigger().purge_log(snapshot.index).await.map_err(|e| e.to_string())?;
    raft.wait(wait)
        .metrics(|m| m.purged.is_some_and(|p| p.index >= snapshot.index), "log purged")
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(snapshot))
}

async fn cluster_metrics(State(app): AppState) -> Json<openraft::RaftMetrics<NodeId, BasicNode>> {
    Json(app.raft.metrics().borrow().clone())
}
