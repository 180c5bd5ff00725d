//! A client of the KV service: one-attempt calls that say whether a write certainly did not
//! happen, certainly happened, or may have (what a linearizability checker needs), and retrying
//! calls that follow the leader (what the CLI uses). Keys and values are bytes and travel in
//! the binary bodies of [`crate::kv_wire`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use openraft::error::{CheckIsLeaderError, ClientWriteError, RaftError};
use openraft::BasicNode;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::kv_wire;
use crate::service::api;
use crate::{NodeId, Request, Response};

/// A transport error with its causes (reqwest's own text stops at "error sending request"),
/// so that a refused TLS handshake says why (e.g. `invalid peer certificate: UnknownIssuer`).
pub fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The result of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// It happened, with this result.
    Done(T),
    /// It certainly did not happen (nothing was sent, or the node refused before proposing:
    /// not the leader). `leader` is the leader's address when the node named one.
    Refused {
        /// Why.
        why: String,
        /// The leader's address, when known.
        leader: Option<String>,
    },
    /// It may or may not have happened (a timeout or a broken connection after sending).
    Unknown(String),
}

/// A client of a cluster given by its nodes' addresses.
pub struct Client {
    http: reqwest::Client,
    scheme: &'static str,
    addrs: Vec<String>,
    /// The address that last answered as leader.
    leader: Mutex<Option<String>>,
    /// Give-up time of one attempt.
    pub attempt_timeout: Duration,
    /// Give-up time of a retrying call.
    pub call_timeout: Duration,
}

impl Client {
    /// A client of the nodes at `addrs` (`host:port`).
    pub fn new(addrs: Vec<String>) -> Client {
        Client::with_security(addrs, &crate::tls::Security::default())
    }

    /// A client of the nodes at `addrs` over TLS and with the shared secret as `security`
    /// says ([`crate::tls::SecurityOptions::client`]).
    pub fn with_security(addrs: Vec<String>, security: &crate::tls::Security) -> Client {
        Client {
            http: security.http_client(),
            scheme: security.scheme(),
            addrs,
            leader: Mutex::new(None),
            attempt_timeout: Duration::from_secs(3),
            call_timeout: Duration::from_secs(30),
        }
    }

    async fn post<B: Serialize, R: DeserializeOwned>(
        &self,
        addr: &str,
        route: &str,
        body: &B,
    ) -> Outcome<R> {
        let sent = self
            .http
            .post(format!("{}://{addr}{route}", self.scheme))
            .timeout(self.attempt_timeout)
            .json(body)
            .send()
            .await;
        match sent {
            Ok(reply) => match reply.json::<R>().await {
                Ok(r) => Outcome::Done(r),
                Err(e) => Outcome::Unknown(format!("{addr}{route}: reading the reply: {e}")),
            },
            Err(e) if e.is_connect() => Outcome::Refused {
                why: format!("{addr}: cannot connect: {}", describe(&e)),
                leader: None,
            },
            Err(e) => Outcome::Unknown(format!("{addr}{route}: {}", describe(&e))),
        }
    }

    /// Sends a binary body ([`kv_wire`]) and decodes the binary reply with `ok`. A 4xx status
    /// means the node refused the request before doing anything with it.
    async fn post_binary<T, E: DeserializeOwned>(
        &self,
        addr: &str,
        route: &str,
        body: Vec<u8>,
        ok: impl FnOnce(&mut kv_wire::Reader<'_>) -> Result<T, kv_wire::KvWireError>,
    ) -> Outcome<Result<T, E>> {
        let sent = self
            .http
            .post(format!("{}://{addr}{route}", self.scheme))
            .timeout(self.attempt_timeout)
            .header(reqwest::header::CONTENT_TYPE, kv_wire::CONTENT_TYPE)
            .body(body)
            .send()
            .await;
        let reply = match sent {
            Ok(reply) => reply,
            Err(e) if e.is_connect() => {
                return Outcome::Refused {
                    why: format!("{addr}: cannot connect: {}", describe(&e)),
                    leader: None,
                }
            }
            Err(e) => return Outcome::Unknown(format!("{addr}{route}: {}", describe(&e))),
        };
        let status = reply.status();
        if status.is_client_error() {
            let text = reply.text().await.unwrap_or_default();
            return Outcome::Refused {
                why: format!("{addr}{route}: {status}: {text}"),
                leader: None,
            };
        }
        let bytes = match reply.bytes().await {
            Ok(b) if status.is_success() => b,
            Ok(b) => {
                let text = String::from_utf8_lossy(&b);
                return Outcome::Unknown(format!("{addr}{route}: {status}: {text}"));
            }
            Err(e) => return Outcome::Unknown(format!("{addr}{route}: reading the reply: {e}")),
        };
        match kv_wire::decode_reply(&bytes, ok) {
            Ok(r) => Outcome::Done(r),
            Err(e) => Outcome::Unknown(format!("{addr}{route}: reading the reply: {e}")),
        }
    }

    async fn get_json<R: DeserializeOwned>(&self, addr: &str, route: &str) -> Result<R, String> {
        let reply = self
            .http
            .get(format!("{}://{addr}{route}", self.scheme))
            .timeout(self.attempt_timeout)
            .send()
            .await
            .map_err(|e| format!("{addr}{route}: {}", describe(&e)))?;
        reply.json().await.map_err(|e| format!("{addr}{route}: {e}"))
    }

    /// One write attempt at the node `addr`.
    pub async fn write_once(&self, addr: &str, req: &Request) -> Outcome<Response> {
        let body = kv_wire::encode_write(req);
        let sent: Outcome<api::WriteResult> =
            self.post_binary(addr, "/kv/write", body, |r| r.response()).await;
        match sent {
            Outcome::Done(Ok(r)) => Outcome::Done(r),
            Outcome::Done(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
                Outcome::Refused {
                    why: format!("{addr} is not the leader"),
                    leader: f.leader_node.map(|n| n.addr),
                }
            }
            // A change-membership error cannot come from a plain write; a fatal error means the
            // node stopped, and whether the entry was committed is unknown.
            Outcome::Done(Err(e)) => Outcome::Unknown(format!("{addr}: {e}")),
            Outcome::Refused { why, leader } => Outcome::Refused { why, leader },
            Outcome::Unknown(w) => Outcome::Unknown(w),
        }
    }

    /// One linearizable read attempt at the node `addr`. A read changes nothing, so every
    /// failure is `Refused`.
    pub async fn read_once(&self, addr: &str, key: &[u8]) -> Outcome<Option<Vec<u8>>> {
        let body = kv_wire::encode_key(key);
        let sent: Outcome<api::ReadResult> =
            self.post_binary(addr, "/kv/read", body, |r| r.value()).await;
        match sent {
            Outcome::Done(Ok(v)) => Outcome::Done(v),
            Outcome::Done(Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)))) => {
                Outcome::Refused {
                    why: format!("{addr} is not the leader"),
                    leader: f.leader_node.map(|n| n.addr),
                }
            }
            Outcome::Done(Err(e)) => Outcome::Refused { why: format!("{addr}: {e}"), leader: None },
            Outcome::Refused { why, leader } => Outcome::Refused { why, leader },
            Outcome::Unknown(w) => Outcome::Refused { why: w, leader: None },
        }
    }

    /// Where to send the next attempt: the last known leader, else the nodes in turn.
    fn target(&self, attempt: usize) -> String {
        match self.leader.lock().clone() {
            Some(l) if attempt % 4 != 3 => l,
            _ => self.addrs[attempt % self.addrs.len()].clone(),
        }
    }

    /// Waits a little before the next attempt unless a leader was just named.
    async fn pause_unless_leader_known(&self) {
        if self.leader.lock().is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn after(&self, outcome_leader: Option<String>) {
        *self.leader.lock() = outcome_leader;
    }

    /// Writes `req`, following the leader and retrying until `call_timeout`. An error is the
    /// last attempt's; after an `Unknown` attempt the write may still have happened.
    pub async fn write(&self, req: &Request) -> Result<Response, String> {
        self.follow_leader(|addr| async move { self.write_once(&addr, req).await }).await
    }

    /// Reads `key` linearizably, following the leader and retrying until `call_timeout`.
    pub async fn read(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.follow_leader(|addr| async move { self.read_once(&addr, key).await }).await
    }

    /// Runs `attempt` at the last known leader (else the nodes in turn) until it is done or
    /// `call_timeout` has passed; a refusal that names the leader sends the next attempt there.
    async fn follow_leader<T, F, Fut>(&self, attempt: F) -> Result<T, String>
    where
        F: Fn(String) -> Fut,
        Fut: std::future::Future<Output = Outcome<T>>,
    {
        let start = Instant::now();
        let mut attempts = 0;
        loop {
            let addr = self.target(attempts);
            let why = match attempt(addr.clone()).await {
                Outcome::Done(r) => {
                    self.after(Some(addr));
                    return Ok(r);
                }
                Outcome::Refused { why, leader } => {
                    self.after(leader);
                    why
                }
                Outcome::Unknown(why) => {
                    self.after(None);
                    why
                }
            };
            attempts += 1;
            if start.elapsed() > self.call_timeout {
                return Err(format!("gave up after {attempts} attempts: {why}"));
            }
            self.pause_unless_leader_known().await;
        }
    }

    /// The value of `key` in the applied state of the node `addr` (not linearizable).
    pub async fn local_get(&self, addr: &str, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let body = kv_wire::encode_key(key);
        let sent: Outcome<api::LocalResult<Option<Vec<u8>>>> =
            self.post_binary(addr, "/kv/local", body, |r| r.value()).await;
        match sent {
            Outcome::Done(r) => r,
            Outcome::Refused { why, .. } | Outcome::Unknown(why) => Err(why),
        }
    }

    /// Every pair of the applied state of the node `addr`.
    pub async fn dump(&self, addr: &str) -> Result<crate::Pairs, String> {
        let reply = self
            .http
            .get(format!("{}://{addr}/kv/dump", self.scheme))
            .timeout(self.attempt_timeout)
            .header(reqwest::header::ACCEPT, kv_wire::CONTENT_TYPE)
            .send()
            .await
            .map_err(|e| format!("{addr}/kv/dump: {}", describe(&e)))?;
        let status = reply.status();
        let bytes = reply.bytes().await.map_err(|e| format!("{addr}/kv/dump: {e}"))?;
        if !status.is_success() {
            return Err(format!("{addr}/kv/dump: {status}: {}", String::from_utf8_lossy(&bytes)));
        }
        let r: api::LocalResult<_> = kv_wire::decode_reply(&bytes, |r| r.pairs())
            .map_err(|e| format!("{addr}/kv/dump: {e}"))?;
        r
    }

    /// The Raft metrics of the node `addr`.
    pub async fn metrics(
        &self,
        addr: &str,
    ) -> Result<openraft::RaftMetrics<NodeId, BasicNode>, String> {
        self.get_json(addr, "/cluster/metrics").await
    }

    /// Initializes the cluster at the node `addr` with `members` (id to address) as voters.
    pub async fn init(&self, addr: &str, members: &BTreeMap<NodeId, String>) -> Result<(), String> {
        let nodes: BTreeMap<NodeId, BasicNode> =
            members.iter().map(|(id, a)| (*id, BasicNode { addr: a.clone() })).collect();
        match self.post::<_, api::InitResult>(addr, "/cluster/init", &nodes).await {
            Outcome::Done(r) => r.map_err(|e| e.to_string()),
            Outcome::Refused { why, .. } | Outcome::Unknown(why) => Err(why),
        }
    }

    /// Adds node `id` at `node_addr` as a learner, at the leader; returns once it caught up.
    pub async fn add_learner(
        &self,
        id: NodeId,
        node_addr: &str,
    ) -> Result<openraft::LogId<NodeId>, String> {
        let body = (id, node_addr.to_string());
        self.membership_call("/cluster/add-learner", &body).await
    }

    /// Builds a snapshot at the node `addr` and purges its log up to it; returns the log id the
    /// snapshot covers. Waits as long as the build takes.
    pub async fn snapshot(&self, addr: &str) -> Result<Option<openraft::LogId<NodeId>>, String> {
        let reply = self
            .http
            .post(format!("{}://{addr}/cluster/snapshot", self.scheme))
            .timeout(Duration::from_secs(3600))
            .send()
            .await
            .map_err(|e| format!("{addr}/cluster/snapshot: {}", describe(&e)))?;
        let r: api::SnapshotResult =
            reply.json().await.map_err(|e| format!("{addr}/cluster/snapshot: {e}"))?;
        r
    }

    /// Makes `voters` the cluster's voters, at the leader.
    pub async fn change_membership(
        &self,
        voters: &BTreeSet<NodeId>,
    ) -> Result<openraft::LogId<NodeId>, String> {
        self.membership_call("/cluster/change-membership", voters).await
    }

    async fn membership_call<B: Serialize>(
        &self,
        route: &str,
        body: &B,
    ) -> Result<openraft::LogId<NodeId>, String> {
        let start = Instant::now();
        let mut attempt = 0;
        loop {
            let addr = self.target(attempt);
            let why = match self.post::<_, api::MembershipResult>(&addr, route, body).await {
                Outcome::Done(Ok(log_id)) => return Ok(log_id),
                Outcome::Done(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
                    self.after(f.leader_node.map(|n| n.addr));
                    format!("{addr} is not the leader")
                }
                Outcome::Done(Err(e)) => return Err(e.to_string()),
                Outcome::Refused { why, .. } | Outcome::Unknown(why) => why,
            };
            attempt += 1;
            if start.elapsed() > self.call_timeout {
                return Err(format!("gave up after {attempt} attempts: {why}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
