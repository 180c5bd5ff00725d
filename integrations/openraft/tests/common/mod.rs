//! Node processes for the tests: the `siftdb-raft` binary started on free local ports in
//! directories under a `TempDir` the test made.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use siftdb_openraft::client::Client;
use siftdb_openraft::NodeId;

pub const BIN: &str = env!("CARGO_BIN_EXE_siftdb-raft");

/// Builds a snapshot of everything `raft` applied and purges its log up to it, so that a node
/// joining later is sent the snapshot; returns the snapshot's last log id. The metrics may
/// publish the last write's apply after that write has answered, so it first waits until they
/// show every appended entry applied: otherwise the snapshot could be taken past the id it then
/// waits for.
pub async fn snapshot_and_purge(
    raft: &siftdb_openraft::Raft,
    wait: Option<Duration>,
) -> openraft::LogId<NodeId> {
    let last_index = raft.metrics().borrow().last_log_index;
    raft.wait(wait).applied_index(last_index, "every entry applied").await.unwrap();
    let last = raft.metrics().borrow().last_applied.unwrap();
    raft.trigger().snapshot().await.unwrap();
    raft.wait(wait).snapshot(last, "snapshot built").await.unwrap();
    raft.trigger().purge_log(last.index).await.unwrap();
    raft.wait(wait).purged(Some(last), "log purged").await.unwrap();
    last
}

/// A local port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One node process.
pub struct NodeProc {
    pub id: NodeId,
    pub addr: String,
    pub dir: PathBuf,
    pub snapshot_every: u64,
    /// Environment variables the process is started with.
    pub env: Vec<(String, String)>,
    /// More arguments of its `node` command line.
    pub args: Vec<String>,
    child: Option<Child>,
}

impl NodeProc {
    pub fn new(id: NodeId, root: &Path, snapshot_every: u64) -> NodeProc {
        NodeProc {
            id,
            addr: format!("127.0.0.1:{}", free_port()),
            dir: root.join(format!("node-{id}")),
            snapshot_every,
            env: Vec::new(),
            args: Vec::new(),
            child: None,
        }
    }

    pub fn start(&mut self) {
        assert!(self.child.is_none(), "node {} is already running", self.id);
        let child = Command::new(BIN)
            .args(["node", "--id", &self.id.to_string(), "--addr", &self.addr])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--snapshot-every", &self.snapshot_every.to_string()])
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the siftdb-raft binary starts");
        self.child = Some(child);
    }

    /// SIGKILL (what `Child::kill` sends on Unix), then reap.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// Waits up to `timeout` for the process to exit by itself; its status if it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let c = self.child.as_mut()?;
            if let Some(status) = c.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits until every node answers its metrics route.
pub async fn wait_until_serving(client: &Client, nodes: &[NodeProc]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for n in nodes.iter().filter(|n| n.running()) {
        while client.metrics(&n.addr).await.is_err() {
            assert!(Instant::now() < deadline, "node {} did not start serving", n.id);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The leader as seen by any running node, once one is known.
pub async fn leader(client: &Client, nodes: &[NodeProc]) -> NodeId {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for n in nodes.iter().filter(|n| n.running()) {
            if let Ok(m) = client.metrics(&n.addr).await {
                if let Some(l) = m.current_leader {
                    if nodes.iter().any(|x| x.id == l && x.running()) {
                        return l;
                    }
                }
            }
        }
        assert!(Instant::now() < deadline, "no leader elected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
