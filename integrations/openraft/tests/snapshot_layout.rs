//! The node's snapshot on disk: a pointer file naming a tables directory, one directory kept,
//! leftovers removed at open, and the single-file snapshots of earlier versions still opened,
//! served and installed (the single `snapshot` file is replaced by a tables directory then).

use std::fs;
use std::path::Path;

use openraft::storage::RaftStateMachine;
use openraft::testing::{blank_ent, membership_ent};
use openraft::{EntryPayload, RaftSnapshotBuilder};
use siftdb_openraft::store::{self, STREAM_MAGIC};
use siftdb_openraft::{Request, TypeConfig};

fn set(index: u64, key: &str, value: &str) -> openraft::Entry<TypeConfig> {
    let mut e = blank_ent::<TypeConfig>(1, 1, index);
    e.payload = EntryPayload::Normal(Request::set(key, value));
    e
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// 300 keys of 2 KiB applied on node `id` in `dir`.
async fn node_with_state(dir: &Path, id: u64) -> store::StateMachine {
    let (_log, mut sm) = store::open(dir, id).unwrap();
    let mut entries = vec![membership_ent::<TypeConfig>(1, 1, 1, vec![[1].into()])];
    entries.extend((0..300).map(|i| set(2 + i, &format!("k{i:04}"), &"v".repeat(2048))));
    sm.apply(entries).await.unwrap();
    sm
}

#[tokio::test]
async fn builds_keep_one_tables_directory_and_the_open_removes_leftovers() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("n1");
    let mut sm = node_with_state(&dir, 1).await;
    let first = sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    assert_eq!(names(&dir), ["NODE", "db", "raftlog", "snapshot", "snapshot.tables.0"]);
    sm.apply(vec![set(302, "later", "x")]).await.unwrap();
    let second = sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    assert_ne!(first.meta, second.meta);
    // The newer snapshot replaced the older one's directory.
    assert_eq!(names(&dir), ["NODE", "db", "raftlog", "snapshot", "snapshot.tables.1"]);
    let current = sm.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.meta, second.meta);
    let stream = current.snapshot.read_stream().unwrap();
    assert_eq!(&stream[..8], STREAM_MAGIC);
    assert_eq!(stream, store::current_snapshot_stream(&dir).unwrap());
    drop((sm, first, second, current));

    // What an interrupted build or install leaves is removed at the next open; the named
    // directory and its snapshot stay.
    fs::create_dir(dir.join("snapshot.tables.7")).unwrap();
    fs::write(dir.join("snapshot.tables.7/000001.sst"), b"half").unwrap();
    fs::create_dir(dir.join("snapshot.install")).unwrap();
    fs::create_dir(dir.join("snapshot.incoming.3.tables")).unwrap();
    fs::write(dir.join("snapshot.tmp"), b"x").unwrap();
    let (_log, mut sm) = store::open(&dir, 1).unwrap();
    assert_eq!(names(&dir), ["NODE", "db", "raftlog", "snapshot", "snapshot.tables.1"]);
    assert_eq!(store::current_snapshot_stream(&dir).unwrap(), stream);
    // Numbering goes on past every directory seen, so no name is reused.
    sm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    assert_eq!(names(&dir), ["NODE", "db", "raftlog", "snapshot", "snapshot.tables.8"]);
}

#[tokio::test]
async fn a_single_file_snapshot_of_an_earlier_version_opens_serves_and_rolls_forward() {
    let root = tempfile::tempdir().unwrap();
    let n1 = root.path().join("n1");
    let mut sm1 = node_with_state(&n1, 1).await;
    let built = sm1.get_snapshot_builder().await.build_snapshot().await.unwrap();
    // What the previous version kept: the same stream as one `snapshot` file.
    let container = built.snapshot.read_stream().unwrap();
    let state = sm1.dump().unwrap();
    drop((sm1, built));
    fs::remove_dir_all(n1.join("snapshot.tables.0")).unwrap();
    fs::write(n1.join("snapshot"), &container).unwrap();

    // It opens and is served as it is.
    let (_log, mut sm1) = store::open(&n1, 1).unwrap();
    let current = sm1.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(current.snapshot.read_stream().unwrap(), container);
    assert_eq!(sm1.dump().unwrap(), state);
    drop((sm1, current));

    // A node whose `snapshot` file is newer than its applied state (an install of the earlier
    // version interrupted between its rename and its switch) installs it at open, and keeps it
    // as a tables directory holding the same stream.
    let n2 = root.path().join("n2");
    drop(store::open(&n2, 2).unwrap());
    fs::write(n2.join("snapshot"), &container).unwrap();
    let (_log, mut sm2) = store::open(&n2, 2).unwrap();
    assert_eq!(sm2.dump().unwrap(), state);
    assert_eq!(sm2.applied_state().await.unwrap().0.map(|l| l.index), Some(301));
    assert_eq!(names(&n2), ["NODE", "db", "raftlog", "snapshot", "snapshot.tables.0"]);
    assert_eq!(store::current_snapshot_stream(&n2).unwrap(), container);
    let (tables, rewritten) = sm2.installed_tables();
    assert!(tables > 0 && rewritten == 0, "{tables} tables installed, {rewritten} rewritten");
}
