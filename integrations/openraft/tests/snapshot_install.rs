//! A node killed in the middle of installing a snapshot restarts with its old state or the new
//! one, never a mix. Node 2 (a learner) misses writes while it is down, long enough for the
//! leader to purge the log it needs, and is restarted with `SIFTDB_OPENRAFT_CRASH_AT` naming a
//! step of the install, where the process aborts (a kill at exactly that step). Its directory is
//! then opened as a restart opens it and checked; at last it restarts normally and catches up.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{wait_until_serving, NodeProc};
use openraft::storage::RaftStateMachine;
use siftdb_openraft::client::Client;
use siftdb_openraft::{store, Request};

const SNAPSHOT_EVERY: u64 = 100;

fn key(n: usize) -> String {
    format!("k{n:05}")
}

async fn write(client: &Client, range: std::ops::Range<usize>) {
    for n in range {
        let req = Request::set(key(n), format!("v{n}"));
        client.write(&req).await.unwrap_or_else(|e| panic!("write {n}: {e}"));
    }
}

/// What a restart of the node in `dir` finds: its applied log index and its pairs.
async fn restarted_state(dir: &Path) -> (Option<u64>, Vec<(Vec<u8>, Vec<u8>)>) {
    let (_log, mut sm) = store::open(dir, 2).unwrap();
    let applied = sm.applied_state().await.unwrap().0.map(|id| id.index);
    (applied, sm.dump().unwrap())
}

/// The writes were made one at a time in key order, so every state the node may hold is the
/// first `m` of them: anything else mixes two states.
fn assert_a_prefix_of_the_writes(dump: &[(Vec<u8>, Vec<u8>)], what: &str) {
    for (i, (k, v)) in dump.iter().enumerate() {
        assert_eq!((&k[..], &v[..]), (key(i).as_bytes(), format!("v{i}").as_bytes()), "{what}");
    }
}

async fn dump_until(client: &Client, addr: &str, want: &[(Vec<u8>, Vec<u8>)]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client.dump(addr).await.ok().as_deref() == Some(want) {
            return;
        }
        assert!(Instant::now() < deadline, "node at {addr} did not catch up in 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_install_restarts_with_its_old_state_or_the_new_one() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes: Vec<NodeProc> =
        (1..=2).map(|id| NodeProc::new(id, root.path(), SNAPSHOT_EVERY)).collect();
    for n in &mut nodes {
        n.start();
    }
    let (a1, a2) = (nodes[0].addr.clone(), nodes[1].addr.clone());
    let admin = Client::new(vec![a1.clone()]);
    wait_until_serving(&admin, &nodes).await;
    admin.init(&a1, &BTreeMap::from([(1, a1.clone())])).await.expect("the cluster initializes");
    admin.add_learner(2, &a2).await.expect("node 2 joins");
    let mut written = 300;
    write(&admin, 0..written).await;
    dump_until(&admin, &a2, &admin.dump(&a1).await.unwrap()).await;
    nodes[1].kill();

    for (point, new_state) in [
        ("install-after-ingest", false),
        ("install-before-switch", true),
        ("install-after-switch", true),
    ] {
        // Writes node 2 misses: several snapshots later, the log it needs is purged.
        write(&admin, written..written + 4 * SNAPSHOT_EVERY as usize).await;
        written += 4 * SNAPSHOT_EVERY as usize;
        let before = restarted_state(&nodes[1].dir).await;
        // The leader purges lazily (`purge_batch_size`): write on until it has purged past
        // node 2's last entry, so node 2 can only be sent the snapshot.
        for _ in 0..20 {
            let purged = admin.metrics(&a1).await.unwrap().purged.map(|p| p.index);
            if purged > before.0.map(|i| i + 1) {
                break;
            }
            write(&admin, written..written + SNAPSHOT_EVERY as usize).await;
            written += SNAPSHOT_EVERY as usize;
        }
        let purged = admin.metrics(&a1).await.unwrap().purged.map(|p| p.index);
        assert!(purged > before.0.map(|i| i + 1), "{point}: the leader purged to {purged:?}");
        nodes[1].env = vec![("SIFTDB_OPENRAFT_CRASH_AT".into(), point.into())];
        nodes[1].start();
        let status = nodes[1].wait_exit(Duration::from_secs(60));
        let status = status.unwrap_or_else(|| panic!("node 2 did not reach {point} in 60 s"));
        assert!(!status.success(), "{point}: {status}");
        let after = restarted_state(&nodes[1].dir).await;
        assert_a_prefix_of_the_writes(&after.1, point);
        if new_state {
            // The snapshot's state: past everything node 2 had, at the snapshot's index.
            assert!(after.0 > before.0 && after.1.len() > before.1.len(), "{point}");
        } else {
            assert_eq!(after, before, "{point}");
        }
        eprintln!(
            "{point}: {} pairs at index {:?} before, {} at {:?} after the restart",
            before.1.len(),
            before.0,
            after.1.len(),
            after.0
        );
    }

    // A normal restart catches up.
    nodes[1].env.clear();
    nodes[1].start();
    dump_until(&admin, &a2, &admin.dump(&a1).await.unwrap()).await;
}
