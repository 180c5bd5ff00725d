//! kill -9 at every storage step of the first `Db::open` of a new directory
//! (docs/testing.md#reliability): the child (this test binary re-executed, `CHILD_ENV` naming the
//! directory) opens the database through a storage that, before each operation that changes
//! the file system, prints `step <n> <op>` and waits for a line on stdin. The parent lets steps
//! `0..k` run and kills the child while it waits before step `k`, for every `k` up to the
//! step count of a whole creation (and once after it), so each prefix of the creation's I/O is
//! what a killed process leaves. Every directory must then open (as a new database or as the
//! one created), take a synced write and read it back after a reopen. The storage is the
//! default one (mapped WAL on 64-bit Linux), so the reservation of the first WAL is on disk.

use siftdb::storage::{DirLock, FsStorage, RandomAccessFile, Storage, WritableFile};
use siftdb::{Db, Options, Result, WriteBatch, WriteOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

const CHILD_ENV: &str = "SIFTDB_FIRST_OPEN_CHILD";
const CHILD_TEST: &str = "first_open_child";
/// Markers of the child's lines (searched anywhere in a line: the test harness may print its
/// own text before them).
const STEP: &str = "@@step ";
const OPENED: &str = "@@opened";

/// Announces a step and waits for the parent's go-ahead (a line on stdin; EOF also goes on).
struct Gate {
    steps: Mutex<u64>,
    interactive: bool,
}

impl Gate {
    fn step(&self, op: &str, path: &Path) {
        let mut n = self.steps.lock().unwrap();
        if self.interactive {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{STEP}{} {op} {}", *n, path.display()).unwrap();
            out.flush().unwrap();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
        }
        *n += 1;
    }
}

struct GatedStorage {
    inner: FsStorage,
    gate: Arc<Gate>,
}

struct GatedFile {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    gate: Arc<Gate>,
}

impl WritableFile for GatedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.gate.step("append", &self.path);
        self.inner.append(data)
    }
    fn sync(&mut self) -> Result<()> {
        self.gate.step("sync", &self.path);
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn close(&mut self) -> Result<()> {
        self.gate.step("close", &self.path);
        self.inner.close()
    }
}

impl GatedStorage {
    fn wrap(&self, path: &Path, f: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        Box::new(GatedFile { inner: f, path: path.to_path_buf(), gate: self.gate.clone() })
    }
}

impl Storage for GatedStorage {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.gate.step("create", path);
        Ok(self.wrap(path, self.inner.create(path)?))
    }
    fn create_immutable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.gate.step("create_immutable", path);
        Ok(self.wrap(path, self.inner.create_immutable(path)?))
    }
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.gate.step("create_log", path);
        Ok(self.wrap(path, self.inner.create_log(path)?))
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn open_immutable(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_immutable(path)
    }
    fn check_io_modes(&self, path: &Path) -> Result<()> {
        self.inner.check_io_modes(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.gate.step("rename", to);
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.gate.step("remove", path);
        self.inner.remove(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.gate.step("truncate", path);
        self.inner.truncate(path, len)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.gate.step("create_dir_all", dir);
        self.inner.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.gate.step("remove_dir", dir);
        self.inner.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.gate.step("sync_dir", dir);
        self.inner.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.gate.step("sync_file", path);
        self.inner.sync_file(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>> {
        self.gate.step("lock", path);
        self.inner.lock(path)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.gate.step("link_or_copy", to);
        self.inner.link_or_copy(from, to)
    }
}

/// The engine's default storage (as `Db::open` builds it from default options) behind a gate.
fn gated_options(interactive: bool) -> (Options, Arc<Gate>) {
    let d = Options::default();
    let inner = FsStorage::with_mmap(d.mmap_reads)
        .with_mmap_wal(d.mmap_wal)
        .with_direct_io(d.direct_reads, d.direct_io_for_flush_and_compaction);
    let gate = Arc::new(Gate { steps: Mutex::new(0), interactive });
    let storage = GatedStorage { inner, gate: gate.clone() };
    (Options { storage: Some(Arc::new(storage)), ..d }, gate)
}

/// The child: open the new database through the gate, say so, and wait to be killed.
#[test]
fn first_open_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        // Not a child: the gate passes every step through (no stdin), and a whole creation
        // takes several steps, the count the parent sweeps.
        let tmp = tempfile::tempdir().unwrap();
        let (opts, gate) = gated_options(false);
        let db = Db::open(tmp.path().join("a/db"), opts).unwrap();
        db.close().unwrap();
        assert!(*gate.steps.lock().unwrap() >= 8);
        return;
    };
    let (opts, _gate) = gated_options(true);
    let _db = Db::open(PathBuf::from(dir), opts).unwrap();
    println!("{OPENED}");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    // The parent kills the child before it answers; a child must never exit by itself.
    std::thread::sleep(std::time::Duration::from_secs(3600));
}

/// Runs a child on `dir`, lets `kill_before` steps run, kills it (SIGKILL) while it waits for the
/// next one (or after it said `opened`), and returns the steps it announced.
fn kill_child_at(dir: &Path, kill_before: u64) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut steps = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains(OPENED) {
            break;
        }
        if let Some(step) = line.find(STEP).map(|i| &line[i + STEP.len()..]) {
            if steps.len() as u64 == kill_before {
                steps.push(step.to_string());
                break;
            }
            steps.push(step.to_string());
            writeln!(stdin, "go").unwrap();
            stdin.flush().unwrap();
        }
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(status.code().is_none(), "the child was killed, not exited: {status}");
    steps
}

#[test]
fn kill_9_at_every_step_of_the_first_open_leaves_a_directory_that_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let mut total = None;
    let mut k = 0u64;
    let mut failures = Vec::new();
    // Bounded by the creation's own step count (and a generous cap should it loop).
    while total.is_none_or(|t| k <= t) && k < 1000 {
        let dir = tmp.path().join(format!("k{k}")).join("db");
        let steps = kill_child_at(&dir, k);
        if (steps.len() as u64) <= k {
            total = Some(steps.len() as u64); // the child opened before step k: the last case
        }
        let what = steps.last().cloned().unwrap_or_else(|| "nothing".into());
        let check = || -> Result<()> {
            let db = Db::open(&dir, Options::default())?;
            let mut b = WriteBatch::new();
            b.put("k", "v");
            db.write_opt(b, WriteOptions { sync: true })?;
            db.close()?;
            let db = Db::open(&dir, Options::default())?;
            assert_eq!(db.get("k")?.as_deref(), Some(&b"v"[..]));
            db.close()
        };
        if let Err(e) = check() {
            failures.push(format!("killed before step {k} ({what}): {e}"));
        }
        k += 1;
    }
    let total = total.expect("the creation finishes within the cap");
    eprintln!("first open: {total} steps, {k} kills, {} failures", failures.len());
    assert!(total >= 8, "a creation of {total} steps");
    assert!(failures.is_empty(), "{failures:#?}");
}
