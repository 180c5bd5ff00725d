//! The Raft RPCs between nodes over HTTP/1.1 (reqwest), answered by [`crate::service`]'s
//! `/raft/*` routes: append and vote as JSON, a snapshot chunk as a binary body
//! ([`crate::snapshot_wire`]). Each reply is the JSON of a `Result`, so a remote Raft error comes
//! back as itself and a transport failure (or a chunk the peer refused, HTTP 400) as openraft's
//! `Unreachable` (nothing sent) or `NetworkError`.

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{NodeId, TypeConfig};

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

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        // The chunk's bytes as they are, with a small JSON header (snapshot_wire.rs).
        let url = format!("{}://{}/raft/snapshot", self.scheme, self.node.addr);
        let body = crate::snapshot_wire::encode(&rpc);
        drop(rpc);
        let request = self
            .http
            .post(&url)
            .timeout(option.hard_ttl())
            .header(reqwest::header::CONTENT_TYPE, crate::snapshot_wire::CONTENT_TYPE)
            .body(body);
        self.send(request).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call("vote", &rpc, &option).await
    }
}
