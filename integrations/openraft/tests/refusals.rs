//! Bad input is refused with a clear error and changes nothing: another node's directory, a
//! directory that is not a node's, a corrupt snapshot file, a corrupt snapshot sent to install.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::testing::{blank_ent, log_id, membership_ent};
use openraft::{Entry, EntryPayload, RaftSnapshotBuilder};
use siftdb_openraft::store::{self, SnapshotData, StateMachine, StoreError};
use siftdb_openraft::{Request, TypeConfig};
use tokio::io::AsyncWriteExt;

/// Every file under `dir` with its bytes: what "changes nothing" is checked against.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn set(term: u64, index: u64, key: &str, value: &str) -> Entry<TypeConfig> {
    let mut e = blank_ent::<TypeConfig>(term, 1, index);
    e.payload = EntryPayload::Normal(Request::set(key, value));
    e
}

/// `bytes` received as openraft's transport receives them: into the data
/// `begin_receiving_snapshot` made, then `shutdown`.
async fn received(sm: &mut StateMachine, bytes: &[u8]) -> Box<SnapshotData> {
    let mut data = sm.begin_receiving_snapshot().await.unwrap();
    data.write_all(bytes).await.unwrap();
    data.shutdown().await.unwrap();
    data
}

/// A node directory with applied state and a snapshot file, its storage closed.
async fn node_with_state(dir: &Path) {
    let (_log, mut sm) = store::open(dir, 1).unwrap();
    let entries = vec![
        membership_ent::<TypeConfig>(1, 1, 1, vec![[1].into()]),
        set(1, 2, "a", "1"),
        set(1, 3, "b", "2"),
    ];
    sm.apply(entries).await.unwrap();
    sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
}

#[tokio::test]
async fn another_nodes_directory_is_refused_unchanged() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("node-1");
    node_with_state(&dir).await;
    let before = contents(&dir);
    let err = store::open(&dir, 2).err().expect("node 2 must not open node 1's directory");
    assert!(matches!(err, StoreError::OtherNode { wanted: 2, .. }), "{err}");
    assert!(err.to_string().contains("node 1"), "{err}");
    assert_eq!(contents(&dir), before);

    // The binary says so and exits non-zero.
    let out = Command::new(common::BIN)
        .args(["node", "--id", "2", "--addr", "127.0.0.1:0", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds the data of node 1, not of node 2"), "{stderr}");
    assert_eq!(contents(&dir), before);
}

#[tokio::test]
async fn a_directory_that_is_not_a_nodes_is_refused_unchanged() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("someone-elses");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("precious.txt"), b"not ours").unwrap();
    let before = contents(&dir);
    let err = store::open(&dir, 1).err().expect("a foreign directory must be refused");
    assert!(matches!(err, StoreError::NotANodeDir { .. }), "{err}");
    assert_eq!(contents(&dir), before);
}

#[tokio::test]
async fn a_corrupt_snapshot_file_is_refused_unchanged() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("node-1");
    node_with_state(&dir).await;
    // The snapshot is the pointer file and the tables directory it names: a flipped byte in
    // either (the pointer, the header, a table) is refused.
    let tables = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("snapshot.tables."))
        .expect("a tables directory");
    for file in [dir.join("snapshot"), tables.join("header"), tables.join("000001.sst")] {
        let good = fs::read(&file).unwrap();
        let mut bytes = good.clone();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        fs::write(&file, &bytes).unwrap();
        let before = contents(&dir);
        let err = store::open(&dir, 1).err().expect("a corrupt snapshot must be refused");
        assert!(matches!(err, StoreError::CorruptSnapshot { .. }), "{}: {err}", file.display());
        assert!(err.to_string().contains("CRC mismatch"), "{}: {err}", file.display());
        assert_eq!(contents(&dir), before);
        fs::write(&file, &good).unwrap();
    }
    store::open(&dir, 1).expect("the repaired snapshot opens");
}

#[tokio::test]
async fn a_corrupt_snapshot_sent_to_install_is_refused_and_the_state_is_unchanged() {
    let root = tempfile::tempdir().unwrap();
    // The sender: a node with state, and its snapshot.
    let src = root.path().join("node-1");
    let (_l, mut sm1) = store::open(&src, 1).unwrap();
    sm1.apply(vec![
        membership_ent::<TypeConfig>(1, 1, 1, vec![[1].into()]),
        set(1, 2, "x", "from-1"),
    ])
    .await
    .unwrap();
    let snapshot = sm1.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let good = snapshot.snapshot.read_stream().unwrap();

    // The receiver: a node with state of its own.
    let dst = root.path().join("node-2");
    let (mut log2, mut sm2) = store::open(&dst, 2).unwrap();
    sm2.apply(vec![blank_ent::<TypeConfig>(1, 2, 1), set(1, 2, "y", "mine")]).await.unwrap();
    let applied_before = sm2.applied_state().await.unwrap();
    let log_before = log2.get_log_state().await.unwrap();

    let mut flipped = good.clone();
    let at = flipped.len() - 10;
    flipped[at] ^= 1;
    let mut wrong_meta = snapshot.meta.clone();
    wrong_meta.last_log_id = Some(log_id(1, 1, 99));
    for (what, bytes, meta) in [
        ("a flipped byte", flipped, snapshot.meta.clone()),
        ("a truncation", good[..good.len() - 1].to_vec(), snapshot.meta.clone()),
        ("a meta that differs from the announced one", good.clone(), wrong_meta),
    ] {
        let data = received(&mut sm2, &bytes).await;
        let err = sm2.install_snapshot(&meta, data).await;
        let err = err.err().unwrap_or_else(|| panic!("{what} was installed"));
        assert!(err.to_string().contains("snapshot"), "{what}: {err}");
        assert_eq!(sm2.applied_state().await.unwrap(), applied_before, "{what}");
        assert_eq!(sm2.get(b"y").unwrap().as_deref(), Some(&b"mine"[..]), "{what}");
        assert_eq!(sm2.get(b"x").unwrap(), None, "{what}");
        assert!(sm2.get_current_snapshot().await.unwrap().is_none(), "{what}");
        // Nothing of the refused snapshot stays on disk.
        let left: Vec<String> = fs::read_dir(&dst)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("snapshot"))
            .collect();
        assert!(left.is_empty(), "{what}: {left:?}");
    }
    assert_eq!(log2.get_log_state().await.unwrap(), log_before);

    // The intact snapshot installs, replacing the state.
    let data = received(&mut sm2, &good).await;
    sm2.install_snapshot(&snapshot.meta, data).await.unwrap();
    assert_eq!(sm2.get(b"x").unwrap().as_deref(), Some(&b"from-1"[..]));
    assert_eq!(sm2.get(b"y").unwrap(), None);
    assert_eq!(sm2.applied_state().await.unwrap().0, snapshot.meta.last_log_id);
    drop((log2, sm2));
    // And survives a reopen, with the replaced generation gone.
    let (_l, sm2) = store::open(&dst, 2).unwrap();
    assert_eq!(sm2.dump().unwrap(), vec![(b"x".to_vec(), b"from-1".to_vec())]);
}
