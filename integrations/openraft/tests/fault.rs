//! The bounded fault test: three node processes; eight clients write 5,000 distinct keys (and
//! read and overwrite a few shared registers) while the leader is killed with SIGKILL twice and
//! restarted. Afterwards every acknowledged write is on every node, the three nodes hold the same
//! state, and the recorded history of reads and writes is linearizable.

mod common;
#[path = "common/linearizability.rs"]
mod linearizability;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{leader, wait_until_serving, NodeProc};
use linearizability::{Kind, Op};
use siftdb_openraft::client::{Client, Outcome};
use siftdb_openraft::Request;

const KEYS: usize = 5_000;
const CLIENTS: usize = 8;
const REGISTERS: usize = 40;
/// Small, so snapshots are built and a restarted node is sent one.
const SNAPSHOT_EVERY: u64 = 400;

/// One client's view: the history it records, the writes it saw acknowledged.
struct Recorder {
    start: Instant,
    history: Mutex<Vec<Op>>,
    acked: Mutex<BTreeMap<String, String>>,
    acked_count: AtomicUsize,
}

impl Recorder {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// Sends one logical operation until it is done, recording every attempt that may have taken
/// effect. Returns the read value for reads.
async fn perform(
    client: &Client,
    addrs: &[String],
    leader_hint: &mut Option<String>,
    rec: &Recorder,
    key: &str,
    write: Option<&str>,
) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut attempt = 0usize;
    loop {
        assert!(Instant::now() < deadline, "operation on {key} did not finish in 90 s");
        let addr = match leader_hint.clone() {
            Some(l) if attempt % 3 != 2 => l,
            _ => addrs[attempt % addrs.len()].clone(),
        };
        attempt += 1;
        let invoke = rec.now();
        match write {
            Some(value) => {
                let req = Request::set(key, value);
                let outcome = client.write_once(&addr, &req).await;
                let complete = match outcome {
                    Outcome::Done(_) => Some(rec.now()),
                    Outcome::Unknown(_) => None,
                    Outcome::Refused { leader, .. } => {
                        // Certainly not applied: not part of the history.
                        *leader_hint = leader;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let op = Op { key: key.into(), kind: Kind::Write(value.into()), invoke, complete };
                rec.history.lock().unwrap().push(op);
                if complete.is_some() {
                    *leader_hint = Some(addr);
                    return None;
                }
                *leader_hint = None;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            None => match client.read_once(&addr, key.as_bytes()).await {
                Outcome::Done(v) => {
                    let v = v.map(|b| String::from_utf8(b).expect("values written are UTF-8"));
                    let complete = Some(rec.now());
                    let op = Op { key: key.into(), kind: Kind::Read(v.clone()), invoke, complete };
                    rec.history.lock().unwrap().push(op);
                    *leader_hint = Some(addr);
                    return v;
                }
                Outcome::Refused { leader, .. } => {
                    *leader_hint = leader;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Outcome::Unknown(_) => {
                    *leader_hint = None;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        }
    }
}

async fn run_client(c: usize, addrs: Vec<String>, rec: Arc<Recorder>) {
    let mut client = Client::new(addrs.clone());
    client.attempt_timeout = Duration::from_secs(2);
    let mut hint = None;
    let mut mine: Vec<(String, String)> = Vec::new();
    for (n, i) in (c..KEYS).step_by(CLIENTS).enumerate() {
        let (key, value) = (format!("k{i:05}"), format!("v{i}"));
        perform(&client, &addrs, &mut hint, &rec, &key, Some(&value)).await;
        rec.acked.lock().unwrap().insert(key.clone(), value.clone());
        rec.acked_count.fetch_add(1, Ordering::Relaxed);
        mine.push((key, value));
        let register = format!("r{:02}", (i * 7 + n) % REGISTERS);
        match n % 4 {
            0 => {
                let v = format!("c{c}-{n}");
                perform(&client, &addrs, &mut hint, &rec, &register, Some(&v)).await;
            }
            1 => {
                // Read one of this client's own acknowledged writes back.
                let (k, v) = &mine[(n * 31) % mine.len()];
                let got = perform(&client, &addrs, &mut hint, &rec, k, None).await;
                assert_eq!(got.as_deref(), Some(v.as_str()), "read of acknowledged {k}");
            }
            2 => {
                perform(&client, &addrs, &mut hint, &rec, &register, None).await;
            }
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_killed_twice_loses_no_acknowledged_write_and_history_is_linearizable() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes: Vec<NodeProc> =
        (1..=3).map(|id| NodeProc::new(id, root.path(), SNAPSHOT_EVERY)).collect();
    for n in &mut nodes {
        n.start();
    }
    let addrs: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    let admin = Client::new(addrs.clone());
    wait_until_serving(&admin, &nodes).await;
    let members = nodes.iter().map(|n| (n.id, n.addr.clone())).collect();
    admin.init(&nodes[0].addr, &members).await.expect("the cluster initializes");

    let rec = Arc::new(Recorder {
        start: Instant::now(),
        history: Mutex::new(Vec::new()),
        acked: Mutex::new(BTreeMap::new()),
        acked_count: AtomicUsize::new(0),
    });
    let clients: Vec<_> =
        (0..CLIENTS).map(|c| tokio::spawn(run_client(c, addrs.clone(), rec.clone()))).collect();

    let mut kills = Vec::new();
    for threshold in [KEYS * 3 / 10, KEYS * 6 / 10] {
        while rec.acked_count.load(Ordering::Relaxed) < threshold {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let l = leader(&admin, &nodes).await;
        let node = nodes.iter_mut().find(|n| n.id == l).unwrap();
        node.kill();
        kills.push((l, rec.acked_count.load(Ordering::Relaxed)));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        node.start();
    }
    for c in clients {
        c.await.expect("a client task panicked");
    }
    assert_eq!(kills.len(), 2);
    eprintln!("killed leaders (node, acknowledged writes so far): {kills:?}");

    // Every node converges to the same state holding every acknowledged write.
    let acked = rec.acked.lock().unwrap().clone();
    assert_eq!(acked.len(), KEYS);
    let deadline = Instant::now() + Duration::from_secs(60);
    let dumps = loop {
        let mut dumps = Vec::new();
        for n in &nodes {
            dumps.push(admin.dump(&n.addr).await.unwrap_or_default());
        }
        let complete = dumps.iter().all(|d| {
            let m: BTreeMap<&[u8], &[u8]> =
                d.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
            acked.iter().all(|(k, v)| m.get(k.as_bytes()) == Some(&v.as_bytes()))
        });
        if complete && dumps.windows(2).all(|w| w[0] == w[1]) {
            break dumps;
        }
        assert!(
            Instant::now() < deadline,
            "nodes did not converge to the acknowledged writes in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!(
        "every node holds {} pairs, all {} acknowledged writes among them",
        dumps[0].len(),
        acked.len()
    );

    let history = rec.history.lock().unwrap().clone();
    let unknown = history.iter().filter(|o| o.complete.is_none()).count();
    eprintln!("history: {} operations, {unknown} with unknown outcome", history.len());
    linearizability::check(&history).unwrap();
}
