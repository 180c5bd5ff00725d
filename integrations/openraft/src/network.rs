//! The Raft RPCs between nodes over HTTP/1.1 (reqwest), answered by [`crate::service`]'s
//! `/raft/*` routes: append and vote as JSON, a whole snapshot as one streamed binary body
//! ([`crate::snapshot_wire`], [`crate::snapshot_transfer`]). Each reply is the JSON of a
//! `Result`, so a remote Raft error comes back as itself and a transport failure (or a body the
//! peer refused, HTTP 400) as openraft's `Unreachable` (nothing sent) or `NetworkError`.

use std::future::Future;
use std::time::Duration;

use openraft::error::{
    Fatal, Infallible, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed,
    StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, OptionalSend, Snapshot, StorageIOError, Vote};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::snapshot_transfer::SnapshotBody;
use crate::{NodeId, TypeConfig};

/// How long a snapshot body may go without a byte handed to the connection before the sender
/// gives up (openraft then sends the snapshot again later). The receiver waits as long for each
/// frame ([`crate::service`]).
pub const SNAPSHOT_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Makes one [`Connection`] per peer; they share the HTTP client's connection pool.
#[derive(Clone, Default)]
pub struct Network {
    http: reqwest::Client,
    scheme: &'static str,
}

impl Network {
    /// RPCs over TLS and with the shared secret as `security` says ([`crate::tls`]).
    pub fn new(security: &crate::tls::Security) -> Network {
        Network { http: security.http_client(), scheme: security.scheme() }
    }
}

/// The RPC sender to one peer.
pub struct Connection {
    http: reqwest::Client,
    scheme: &'static str,
    target: NodeId,
    node: BasicNode,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Connection {
        let scheme = if self.scheme.is_empty() { "http" } else { self.scheme };
        Connection { http: self.http.clone(), scheme, target, node: node.clone() }
    }
}

impl Connection {
    async fn call<Req, Resp, E>(
        &self,
        route: &str,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let url = format!("{}://{}/raft/{route}", self.scheme, self.node.addr);
        self.send(self.http.post(&url).timeout(option.hard_ttl()).json(req)).await
    }

    /// Sends one request and reads its reply: the JSON of a `Result` when the status is a
    /// success, else the refusal's text as a `NetworkError`.
    async fn send<Resp, E>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Resp, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let reply = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(RPCError::Unreachable(Unreachable::new(&e))),
            Err(e) => return Err(RPCError::Network(NetworkError::new(&e))),
        };
        let status = reply.status();
        if !status.is_success() {
            let text = reply.text().await.unwrap_or_default();
            let e =
                std::io::Error::other(format!("node {} answered {status}: {text}", self.target));
            return Err(RPCError::Network(NetworkError::new(&e)));
        }
        let result: Result<Resp, RaftError<NodeId, E>> =
            reply.json().await.map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| {
            RPCError::RemoteError(RemoteError::new_with_node(self.target, self.node.clone(), e))
        })
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call("append", &rpc, &option).await
    }

    /// Sends the whole snapshot as one streamed body and waits for the follower's install. Ends
    /// early when openraft cancels (the connection is dropped, and the follower refuses the
    /// truncated body), when the body stalls for [`SNAPSHOT_STALL_TIMEOUT`], or when no reply
    /// came within `option.hard_ttl()` (`Config::install_snapshot_timeout`) of its last byte.
    async fn full_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        let sig = snapshot.meta.signature();
        let body = SnapshotBody::new(vote, snapshot).await.map_err(|e| {
            let e = StorageIOError::read_snapshot(Some(sig), openraft::AnyError::new(&e));
            StreamingError::StorageError(e.into())
        })?;
        let progress = body.progress();
        let url = format!("{}://{}/raft/snapshot", self.scheme, self.node.addr);
        let request = self
            .http
            .post(&url)
            .header(reqwest::header::CONTENT_TYPE, crate::snapshot_wire::CONTENT_TYPE)
            .body(reqwest::Body::wrap(body));
        let exchange = self.send::<SnapshotResponse<NodeId>, Infallible>(request);
        tokio::select! {
            reply = exchange => reply.map_err(|e| match e {
                RPCError::Unreachable(u) => StreamingError::Unreachable(u),
                RPCError::RemoteError(r) => {
                    let fatal = match r.source {
                        RaftError::Fatal(f) => f,
                        RaftError::APIError(never) => match never {},
                    };
                    let node = self.node.clone();
                    StreamingError::RemoteError(RemoteError::new_with_node(self.target, node, fatal))
                }
                RPCError::Network(n) => StreamingError::Network(n),
                other => StreamingError::Network(NetworkError::new(&other)),
            }),
            closed = cancel => Err(StreamingError::Closed(closed)),
            why = progress.stalled(SNAPSHOT_STALL_TIMEOUT, option.hard_ttl()) => {
                let e = std::io::Error::new(std::io::ErrorKind::TimedOut, why);
                Err(StreamingError::Network(NetworkError::new(&e)))
            }
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call("vote", &rpc, &option).await
    }
}
