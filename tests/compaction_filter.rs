//! Compaction filters (design.md#compaction-filters): keep, remove, change; never what a live
//! snapshot sees; a removal never resurrects an older version; a panicking filter keeps the
//! entry; a renamed or missing filter is loss-free.

use siftdb::{CompactionFilter, Db, Decision, EntryKind, KeyspaceOptions, Options, U64AddOperator};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Removes keys starting with `rm/`, upper-cases values of keys starting with `up/`, panics on
/// keys starting with `boom/`; counts its calls.
struct Rules {
    name: &'static str,
    calls: AtomicUsize,
}

impl Rules {
    fn new(name: &'static str) -> Arc<Rules> {
        Arc::new(Rules { name, calls: AtomicUsize::new(0) })
    }
}

impl CompactionFilter for Rules {
    fn name(&self) -> &str {
        self.name
    }
    fn filter(&self, _level: usize, key: &[u8], value: &[u8], _kind: EntryKind) -> Decision {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if key.starts_with(b"boom/") {
            panic!("a filter bug");
        }
        if key.starts_with(b"rm/") {
            Decision::Remove
        } else if key.starts_with(b"up/") {
            Decision::Change(value.to_ascii_uppercase())
        } else {
            Decision::Keep
        }
    }
}

fn options(filter: Option<Arc<Rules>>) -> Options {
    Options {
        compaction_filter: filter.map(|f| f as Arc<dyn CompactionFilter>),
        merge_operator: Some(Arc::new(U64AddOperator)),
        compaction: siftdb::CompactionOptions { auto: false, ..Default::default() },
        ..Options::default()
    }
}

#[test]
fn the_filter_keeps_removes_and_changes_at_flush_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let f = Rules::new("app.rules");
    let db = Db::open(dir.path(), options(Some(f.clone()))).unwrap();
    db.put("rm/a", "x").unwrap();
    db.put("up/b", "hello").unwrap();
    db.put("keep/c", "same").unwrap();
    assert_eq!(db.get("rm/a").unwrap(), Some(b"x".to_vec())); // not yet flushed
    db.flush().unwrap();
    assert!(f.calls.load(Ordering::SeqCst) >= 3);
    assert_eq!(db.get("rm/a").unwrap(), None);
    assert_eq!(db.get("up/b").unwrap(), Some(b"HELLO".to_vec()));
    assert_eq!(db.get("keep/c").unwrap(), Some(b"same".to_vec()));
    db.compact().unwrap();
    let all: Vec<_> = db.scan().unwrap().map(Result::unwrap).collect();
    assert_eq!(
        all,
        vec![(b"keep/c".to_vec(), b"same".to_vec()), (b"up/b".to_vec(), b"HELLO".to_vec())]
    );
}

#[test]
fn a_merge_result_is_shown_to_the_filter_as_one() {
    struct SeesMerges(AtomicUsize);
    impl CompactionFilter for SeesMerges {
        fn name(&self) -> &str {
            "sees"
        }
        fn filter(&self, _: usize, _: &[u8], value: &[u8], kind: EntryKind) -> Decision {
            if kind == EntryKind::MergeResult {
                self.0.fetch_add(1, Ordering::SeqCst);
                assert_eq!(value, 5u64.to_le_bytes());
                return Decision::Change(6u64.to_le_bytes().to_vec());
            }
            Decision::Keep
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(SeesMerges(AtomicUsize::new(0)));
    let opts = Options { compaction_filter: Some(f.clone()), ..options(None) };
    let db = Db::open(dir.path(), opts).unwrap();
    db.put("n", 2u64.to_le_bytes()).unwrap();
    db.merge("n", 3u64.to_le_bytes()).unwrap();
    db.flush().unwrap();
    assert_eq!(f.0.load(Ordering::SeqCst), 1);
    assert_eq!(db.get("n").unwrap(), Some(6u64.to_le_bytes().to_vec()));
}

#[test]
fn a_live_snapshot_keeps_reading_what_it_saw() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(Some(Rules::new("app.rules")))).unwrap();
    db.put("rm/a", "x").unwrap();
    db.put("up/b", "hello").unwrap();
    let snap = db.snapshot();
    db.flush().unwrap();
    db.compact().unwrap();
    // The versions the snapshot sees are the newest and a snapshot sees them: untouched.
    assert_eq!(snap.get("rm/a").unwrap(), Some(b"x".to_vec()));
    assert_eq!(snap.get("up/b").unwrap(), Some(b"hello".to_vec()));
    assert_eq!(db.get("rm/a").unwrap(), Some(b"x".to_vec()));
    drop(snap);
    // A flush whose range spans the old table's, so the compaction rewrites it.
    db.put("a", "1").unwrap();
    db.put("z", "1").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(db.get("rm/a").unwrap(), None);
    assert_eq!(db.get("up/b").unwrap(), Some(b"HELLO".to_vec()));
}

#[test]
fn a_removal_does_not_resurrect_an_older_version() {
    let dir = tempfile::tempdir().unwrap();
    {
        // Written without a filter: "rm/a" = old reaches the bottom level.
        let db = Db::open(dir.path(), options(None)).unwrap();
        db.put("rm/a", "old").unwrap();
        db.flush().unwrap();
        db.compact().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options(Some(Rules::new("app.rules")))).unwrap();
    db.put("rm/a", "new").unwrap();
    db.flush().unwrap(); // removed at flush: a tombstone above "old"
    assert_eq!(db.get("rm/a").unwrap(), None);
    db.compact().unwrap();
    assert_eq!(db.get("rm/a").unwrap(), None);
    assert_eq!(db.scan().unwrap().count(), 0);
}

#[test]
fn a_panicking_filter_keeps_the_entry_and_the_engine_works_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(Some(Rules::new("app.rules")))).unwrap();
    db.put("boom/a", "kept").unwrap();
    db.put("rm/b", "x").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(db.get("boom/a").unwrap(), Some(b"kept".to_vec()));
    assert_eq!(db.get("rm/b").unwrap(), None);
    db.put("c", "writable").unwrap();
    assert_eq!(db.get("c").unwrap(), Some(b"writable".to_vec()));
}

#[test]
fn a_renamed_or_missing_filter_is_loss_free_and_the_name_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let ks_opts = |f: Option<Arc<Rules>>| KeyspaceOptions {
        compaction_filter: f.map(|f| f as Arc<dyn CompactionFilter>),
        ..KeyspaceOptions::default()
    };
    {
        let db = Db::open(dir.path(), options(None)).unwrap();
        let ks = db.keyspace("events", ks_opts(Some(Rules::new("app.v1")))).unwrap();
        ks.put("keep/a", "1").unwrap();
        db.close().unwrap();
    }
    {
        // Reopened without a filter: nothing is filtered, nothing lost.
        let db = Db::open(dir.path(), options(None)).unwrap();
        let ks = db.keyspace("events", ks_opts(None)).unwrap();
        ks.put("rm/x", "stays").unwrap();
        db.flush().unwrap();
        db.compact().unwrap();
        assert_eq!(ks.get("rm/x").unwrap(), Some(b"stays".to_vec()));
        assert_eq!(ks.get("keep/a").unwrap(), Some(b"1".to_vec()));
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options(None)).unwrap();
    // A renamed filter runs from then on.
    let ks = db.keyspace("events", ks_opts(Some(Rules::new("app.v2")))).unwrap();
    ks.put("other", "1").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(ks.get("rm/x").unwrap(), None);
    assert_eq!(ks.get("keep/a").unwrap(), Some(b"1".to_vec()));
    db.close().unwrap();
    let storage = siftdb::storage::FsStorage::new();
    let state = siftdb::inspect::manifest::recover(&storage, dir.path()).unwrap().unwrap();
    let rec = state.keyspaces.values().find(|k| k.name == "events").unwrap();
    assert_eq!(rec.filter_name, "app.v2");
}
