//! A node far behind the leader in large entries catches up by log. openraft 0.9 gives each
//! AppendEntries `Config::heartbeat_interval` (100 ms) and resends the same range after a
//! timeout; with up to `max_payload_entries` (300) entries per request, a learner 64 entries of
//! 1.5 MiB behind was sent ~96 MiB per request, every request timed out, and it never caught
//! up (the stall of `catchup.sh --state-mib 2048`). The log store now bounds a request's bytes
//! (`APPEND_PAYLOAD_BYTES`, docs/log.md "Replication").

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{wait_until_serving, NodeProc};
use siftdb_openraft::client::Client;
use siftdb_openraft::Request;

/// Entries the learner is behind by, and the size of each one's value: together far more than
/// one 100 ms AppendEntries can carry (and each under axum's 2 MB default body limit of
/// `/kv/write`).
const ENTRIES: usize = 64;
const VALUE_BYTES: usize = 3 << 19;

fn value(n: usize) -> String {
    format!("{n:08}").repeat(VALUE_BYTES / 8)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_far_behind_in_large_entries_catches_up_by_log() {
    let root = tempfile::tempdir().unwrap();
    // No snapshot during the test: the learner can only be sent the log.
    let mut nodes: Vec<NodeProc> =
        (1..=2).map(|id| NodeProc::new(id, root.path(), 1_000_000)).collect();
    nodes[0].start();
    let (a1, a2) = (nodes[0].addr.clone(), nodes[1].addr.clone());
    let admin = Client::new(vec![a1.clone()]);
    wait_until_serving(&admin, &nodes[..1]).await;
    admin.init(&a1, &BTreeMap::from([(1, a1.clone())])).await.expect("the cluster initializes");
    for n in 0..ENTRIES {
        let req = Request::set(format!("k{n:03}"), value(n));
        admin.write(&req).await.unwrap_or_else(|e| panic!("write {n}: {e}"));
    }
    let leader_applied = admin.metrics(&a1).await.unwrap().last_applied.map(|l| l.index);

    nodes[1].start();
    wait_until_serving(&admin, &nodes).await;
    // add-learner returns once the learner caught up, which is what is checked below (with a
    // deadline of its own): its result is not needed.
    let joining = {
        let admin = Client::new(vec![a1.clone()]);
        let a2 = a2.clone();
        tokio::spawn(async move { admin.add_learner(2, &a2).await })
    };
    // Caught up in a few seconds with bounded requests; never without.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let applied = admin.metrics(&a2).await.ok().and_then(|m| m.last_applied.map(|l| l.index));
        if applied.is_some() && applied >= leader_applied {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 2 applied {applied:?} of the leader's {leader_applied:?} after 90 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    joining.abort();
    let want = admin.dump(&a1).await.unwrap();
    assert_eq!(want.len(), ENTRIES);
    assert!(admin.dump(&a2).await.unwrap() == want, "node 2's state differs from the leader's");
}
