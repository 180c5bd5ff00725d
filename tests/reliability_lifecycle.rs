//! The database life cycle (design.md#life-cycle): closing while handles live, handles used
//! after close, foreign keyspace handles in batches, and panics in user code on the write path.
//!
//! Waits here are hang guards only: each test bounds its work by counts, and a guard's generous
//! wall-clock limit turns a deadlock into a failure instead of a stuck test run.

use siftdb::storage::{DirLock, MemStorage, RandomAccessFile, Storage, WritableFile};
use siftdb::{Db, Error, KeyspaceOptions, Options, PrefixExtractor, WriteBatch};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a hang guard waits before it calls the wait a deadlock.
const HANG: Duration = Duration::from_secs(60);

/// A MemStorage whose table creations (flush and compaction outputs) wait while the gate is
/// shut: the flush thread then stalls, as on a slow disk, for as long as a test wants.
#[derive(Clone)]
struct GatedStorage {
    mem: MemStorage,
    gate: Arc<(Mutex<bool>, Condvar)>,
    /// Set once a table creation waited at the shut gate.
    blocked: Arc<AtomicBool>,
}

impl GatedStorage {
    fn new() -> GatedStorage {
        GatedStorage {
            mem: MemStorage::new(),
            gate: Arc::new((Mutex::new(false), Condvar::new())),
            blocked: Arc::new(AtomicBool::new(false)),
        }
    }

    fn open_gate(&self) {
        *self.gate.0.lock().unwrap() = true;
        self.gate.1.notify_all();
    }

    fn wait_if_table(&self, path: &Path) {
        if path.extension().is_some_and(|e| e == "sst") {
            let mut open = self.gate.0.lock().unwrap();
            while !*open {
                self.blocked.store(true, Ordering::SeqCst);
                open = self.gate.1.wait(open).unwrap();
            }
        }
    }
}

impl Storage for GatedStorage {
    fn create(&self, path: &Path) -> siftdb::Result<Box<dyn WritableFile>> {
        self.wait_if_table(path);
        self.mem.create(path)
    }
    fn create_immutable(&self, path: &Path) -> siftdb::Result<Box<dyn WritableFile>> {
        self.wait_if_table(path);
        self.mem.create_immutable(path)
    }
    fn create_log(&self, path: &Path) -> siftdb::Result<Box<dyn WritableFile>> {
        self.mem.create_log(path)
    }
    fn open(&self, path: &Path) -> siftdb::Result<Arc<dyn RandomAccessFile>> {
        self.mem.open(path)
    }
    fn open_immutable(&self, path: &Path) -> siftdb::Result<Arc<dyn RandomAccessFile>> {
        self.mem.open_immutable(path)
    }
    fn check_io_modes(&self, path: &Path) -> siftdb::Result<()> {
        self.mem.check_io_modes(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> siftdb::Result<()> {
        self.mem.rename(from, to)
    }
    fn remove(&self, path: &Path) -> siftdb::Result<()> {
        self.mem.remove(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> siftdb::Result<()> {
        self.mem.truncate(path, len)
    }
    fn list(&self, dir: &Path) -> siftdb::Result<Vec<String>> {
        self.mem.list(dir)
    }
    fn exists(&self, path: &Path) -> siftdb::Result<bool> {
        self.mem.exists(path)
    }
    fn create_dir_all(&self, dir: &Path) -> siftdb::Result<()> {
        self.mem.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> siftdb::Result<()> {
        self.mem.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> siftdb::Result<()> {
        self.mem.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> siftdb::Result<()> {
        self.mem.sync_file(path)
    }
    fn lock(&self, path: &Path) -> siftdb::Result<Box<dyn DirLock>> {
        self.mem.lock(path)
    }
    fn read_all(&self, path: &Path) -> siftdb::Result<Vec<u8>> {
        self.mem.read_all(path)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> siftdb::Result<()> {
        self.mem.link_or_copy(from, to)
    }
}

fn small_memtables(storage: Arc<dyn Storage>) -> Options {
    Options {
        storage: Some(storage),
        memtable_size: 64 << 10,
        max_immutable_memtables: 1,
        ..Options::default()
    }
}

fn key(i: u64) -> String {
    format!("k{i:08}")
}

/// Runs `f` on a thread and waits for its answer at most [`HANG`].
fn guarded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(HANG).unwrap_or_else(|_| panic!("{what}: no answer (deadlock)"))
}

#[test]
fn dropping_the_db_while_a_keyspace_writer_is_stalled_for_a_flush_returns() {
    let storage = GatedStorage::new();
    let dir = Path::new("/db");
    let db = Db::open(dir, small_memtables(Arc::new(storage.clone()))).unwrap();
    let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
    let acked = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = mpsc::channel();
    {
        let acked = acked.clone();
        std::thread::spawn(move || {
            let value = vec![7u8; 2000];
            // Bounded: 64 KiB memtables and one immutable one hold far fewer than 10,000
            // values of 2 KB, so with the flush gated the writer stalls long before the end.
            for i in 0..10_000 {
                if let Err(e) = ks.put(key(i), &value) {
                    let _ = done_tx.send(Err(e));
                    return;
                }
                acked.store(i + 1, Ordering::SeqCst);
            }
            let _ = done_tx.send(Ok(()));
        });
    }
    // The flush thread is stuck at the gate: the writer fills the new memtable and stalls.
    while !storage.blocked.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    let (dropped_tx, dropped_rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(db);
        let _ = dropped_tx.send(());
    });
    let writer = done_rx.recv_timeout(HANG).expect("the stalled writer never returned (deadlock)");
    assert!(matches!(writer, Err(Error::Closed)), "the stalled writer gets Closed: {writer:?}");
    storage.open_gate();
    dropped_rx.recv_timeout(HANG).expect("drop never returned (deadlock)");

    // Every acknowledged write survives.
    let db = Db::open(dir, small_memtables(Arc::new(storage.clone()))).unwrap();
    let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
    let n = acked.load(Ordering::SeqCst);
    assert!(n > 0);
    for i in 0..n {
        assert!(ks.get(key(i)).unwrap().is_some(), "acknowledged {} lost", key(i));
    }
}

/// Writes through a keyspace handle after the `Db` is gone, with room in the memtable and with
/// a full one: each is refused with `Closed`, nothing is acknowledged, nothing hangs, and the
/// directory reopens with exactly the writes made before the close.
#[test]
fn keyspace_writes_after_close_are_refused_and_nothing_is_acknowledged() {
    for full in [false, true] {
        let storage = MemStorage::new();
        let opts = Options {
            storage: Some(Arc::new(storage.clone())),
            memtable_size: 64 << 10,
            ..Options::default()
        };
        let db = Db::open("/db", opts.clone()).unwrap();
        let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
        let mut before = 0u64;
        while !full && before < 10 || full && db.stats().memtable_bytes < 64 << 10 {
            ks.put(key(before), vec![1u8; 1000]).unwrap();
            before += 1;
        }
        db.close().unwrap();
        let results = guarded("writes after close", move || {
            (0..200).map(|i| ks.put(format!("after{i:04}"), vec![7u8; 1000])).collect::<Vec<_>>()
        });
        assert!(results.iter().all(|r| matches!(r, Err(Error::Closed))), "full={full}");

        let db = Db::open("/db", opts).unwrap();
        let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
        let keys: Vec<Vec<u8>> = ks.scan().unwrap().map(|kv| kv.unwrap().0).collect();
        assert_eq!(keys.len() as u64, before, "full={full}: exactly the writes before close");
        assert!(db.put("writable", "yes").is_ok(), "the close poisoned nothing");
    }
}

#[test]
fn every_handle_gets_closed_after_close_and_the_lock_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
    let default = db.existing_keyspace("default").unwrap();
    for i in 0..100u64 {
        ks.put(key(i), "v").unwrap();
        db.put(key(i), "v").unwrap();
    }
    let snap = db.snapshot();
    let mut iter = db.scan().unwrap();
    assert!(iter.next().unwrap().is_ok());
    let mut cursor = ks.cursor().unwrap();
    cursor.seek_to_first().unwrap();
    assert!(cursor.valid());
    db.close().unwrap();

    // The lock went with the close: the directory reopens while the handles live.
    let reopened = Db::open(dir.path(), Options::default()).unwrap();

    let closed = |r: siftdb::Result<()>, what: &str| {
        assert!(matches!(r, Err(Error::Closed)), "{what}: {r:?}");
    };
    closed(ks.get("k").map(drop), "keyspace get");
    closed(ks.contains_key("k").map(drop), "keyspace contains_key");
    closed(ks.put("k", "v"), "keyspace put");
    closed(ks.delete("k"), "keyspace delete");
    closed(ks.delete_range("a".."a"), "keyspace empty delete_range");
    closed(ks.scan().map(drop), "keyspace scan");
    closed(ks.prefix("k").map(drop), "keyspace prefix");
    closed(ks.cursor().map(drop), "keyspace cursor");
    assert!(ks.multi_get(["a", "b"]).into_iter().all(|r| matches!(r, Err(Error::Closed))));
    closed(default.put("k", "v"), "default keyspace put");
    closed(snap.get("k").map(drop), "snapshot get");
    closed(snap.contains_key("k").map(drop), "snapshot contains_key");
    closed(snap.scan().map(drop), "snapshot scan");
    closed(snap.keyspace(&ks).map(drop), "snapshot of a keyspace");
    assert!(snap.multi_get(["a"]).into_iter().all(|r| matches!(r, Err(Error::Closed))));
    closed(snap.cursor().map(drop), "snapshot cursor");
    match iter.next() {
        Some(Err(Error::Closed)) => {}
        other => panic!("iterator after close: {other:?}"),
    }
    assert!(iter.next().is_none(), "an iterator ends after its error");
    closed(cursor.next(), "cursor next");
    assert!(!cursor.valid());
    closed(cursor.seek_to_last(), "cursor seek_to_last");

    // A batch through a handle of the closed database is refused by the reopened one.
    let mut batch = WriteBatch::new();
    batch.put_in(&ks, "k", "v");
    let r = reopened.write(batch);
    assert!(matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("another database")));
    assert_eq!(reopened.get(key(0)).unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_batch_naming_another_databases_keyspace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = Db::open(dir.path().join("a"), Options::default()).unwrap();
    let b = Db::open(dir.path().join("b"), Options::default()).unwrap();
    let users_a = a.keyspace("users", KeyspaceOptions::default()).unwrap();
    let default_a = a.existing_keyspace("default").unwrap();
    let orders_b = b.keyspace("orders", KeyspaceOptions::default()).unwrap();
    assert_eq!(orders_b.name(), "orders");
    type Add = fn(&mut WriteBatch, &siftdb::Keyspace);
    let adds: [(&str, Add); 5] = [
        ("put_in", |w, k| {
            w.put_in(k, "k", "v");
        }),
        ("delete_in", |w, k| {
            w.delete_in(k, "k");
        }),
        ("merge_in", |w, k| {
            w.merge_in(k, "k", "v");
        }),
        ("delete_range_in", |w, k| {
            w.delete_range_in(k, "a".."z");
        }),
        ("delete_range_in (empty)", |w, k| {
            w.delete_range_in(k, "a".."a");
        }),
    ];
    for (what, add) in adds {
        for handle in [&users_a, &default_a] {
            let mut batch = WriteBatch::new();
            batch.put("mine", "1");
            add(&mut batch, handle);
            let r = b.write(batch);
            assert!(
                matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("another database")),
                "{what} through {}: {r:?}",
                handle.name()
            );
        }
    }
    assert_eq!(b.get("mine").unwrap(), None, "the refused batches wrote nothing");
    assert_eq!(orders_b.get("k").unwrap(), None);
    // The same handles are fine with their own database.
    let mut batch = WriteBatch::new();
    batch.put_in(&users_a, "k", "v").put_in(&default_a, "d", "v");
    a.write(batch).unwrap();
    assert_eq!(users_a.get("k").unwrap(), Some(b"v".to_vec()));
}

/// A prefix extractor that panics on some keys: always on `"boom"`; on `"late"` only the
/// second time it sees it (when `late_armed`), as a non-deterministic extractor might.
#[derive(Debug, Default)]
struct Picky {
    late_seen: AtomicU64,
    late_armed: AtomicBool,
}

impl PrefixExtractor for Picky {
    fn name(&self) -> &str {
        "test.picky"
    }
    fn prefix<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        if key == b"boom" {
            panic!("extractor bug on boom");
        }
        if key == b"late"
            && self.late_armed.load(Ordering::SeqCst)
            && self.late_seen.fetch_add(1, Ordering::SeqCst) == 1
        {
            panic!("extractor bug on the second look at late");
        }
        key.get(..1)
    }
}

fn quiet_panics<T>(f: impl FnOnce() -> T) -> T {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = f();
    std::panic::set_hook(hook);
    r
}

#[test]
fn a_panicking_prefix_extractor_fails_its_write_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let picky = Arc::new(Picky::default());
    let opts = Options { prefix_extractor: Some(picky.clone()), ..Options::default() };
    let db = Arc::new(Db::open(dir.path(), opts.clone()).unwrap());
    db.put("a", "1").unwrap();
    let mut batch = WriteBatch::new();
    batch.put("b", "2").put("boom", "x");
    let r = quiet_panics(|| db.write(batch));
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("test.picky") && m.contains("boom")),
        "{r:?}"
    );
    // Writers are not wedged, and the database stays writable.
    let d = db.clone();
    guarded("writes after a panicking extractor", move || {
        (0..100).for_each(|i| d.put(key(i), "v").unwrap())
    });
    assert_eq!(db.get("b").unwrap(), None, "nothing of the failed batch was written");
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get("b").unwrap(), None, "nor logged");
    assert_eq!(db.get(key(99)).unwrap(), Some(b"v".to_vec()));
}

#[test]
fn a_panic_inside_the_commit_turns_the_database_read_only_and_wedges_no_writer() {
    let dir = tempfile::tempdir().unwrap();
    let picky = Arc::new(Picky::default());
    let opts = Options { prefix_extractor: Some(picky.clone()), ..Options::default() };
    let db = Arc::new(Db::open(dir.path(), opts.clone()).unwrap());
    db.put("a", "1").unwrap();
    picky.late_armed.store(true, Ordering::SeqCst);
    let mut batch = WriteBatch::new();
    batch.put("before", "2").put("late", "x");
    let r = quiet_panics(|| db.write(batch));
    assert!(matches!(&r, Err(Error::ReadOnly(m)) if m.contains("panicked")), "{r:?}");
    // Every later writer gets an answer, none hangs.
    let d = db.clone();
    let later = guarded("writes after a panicked commit", move || {
        (0..20).map(|i| d.put(key(i), "v")).collect::<Vec<_>>()
    });
    assert!(later.iter().all(|r| matches!(r, Err(Error::ReadOnly(_)))), "{later:?}");
    assert_eq!(db.get("a").unwrap(), Some(b"1".to_vec()), "reads go on");
    drop(db);
    // The batch's WAL record comes back whole at the next open (the extractor no longer
    // panics on a third look).
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get("before").unwrap(), Some(b"2".to_vec()));
    assert_eq!(db.get("late").unwrap(), Some(b"x".to_vec()));
    db.put("again", "writable").unwrap();
}

#[test]
fn a_panic_in_user_code_during_recovery_is_an_error_and_releases_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put("boom", "logged under another extractor").unwrap();
    }
    let opts = Options { prefix_extractor: Some(Arc::new(Picky::default())), ..Options::default() };
    let r = quiet_panics(|| Db::open(dir.path(), opts));
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("panicked")),
        "{:?}",
        r.err()
    );
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get("boom").unwrap(), Some(b"logged under another extractor".to_vec()));
}
