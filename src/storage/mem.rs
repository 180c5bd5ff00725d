//! [`MemStorage`]: an in-memory file system that simulates power loss and injects I/O faults
//! (in the spirit of LevelDB's `fault_injection_test` and redb's fuzzer backend).
//!
//! Model. Files are nodes (inodes) shared by reference; names map to nodes in two namespaces:
//! * the *live* namespace, which every operation reads and changes, and
//! * the *durable* namespace, the entries that would survive a crash. `sync_dir(d)` copies the
//!   live entries of directory `d` into it (and drops durable entries of `d` that are no longer
//!   live). So creations, renames and removals since the last `sync_dir` are volatile.
//!
//! Each node holds its current bytes and `synced_len`: the prefix that survived the last
//! successful `sync` (invariant: the durable content is always a prefix of the current content,
//! because files are append-only and `truncate` syncs). A failed `sync` leaves `synced_len` where
//! it was and *poisons* the node: like Linux after a writeback error, a later `sync` of that file
//! returns `Ok` but makes nothing durable. This punishes an engine that retries a failed sync
//! (rule 3 of the durability model) with lost acknowledged writes on the next crash.
//!
//! A crash ([`MemStorage::crash`] and the three named shorthands) rewrites the state to what a
//! fresh process would find after power loss, releases every lock, disarms fault injection and
//! bumps a generation number: handles opened before the crash fail with an I/O error from then
//! on, so a leftover engine cannot scribble on the post-crash state.
//!
//! Directories: by default a directory is durable as soon as `create_dir_all` makes it. A storage
//! made with [`MemStorage::with_volatile_directories`] holds a new directory's entry in its
//! parent like a file's: durable only after `sync_dir` of the parent (`""` or `"."` for a
//! relative one-component path); a crash that reverts it loses the directory and everything
//! under it. File-system roots (`/`, `""`, `"."`) always exist.
//!
//! Preallocated logs: a storage made with [`MemStorage::with_preallocated_logs`] models the
//! mapped WAL (src/storage/mmap_log.rs), which reserves its file in zero-filled windows and cuts
//! it to its length only when closed: a log created by `create_log` and not yet closed (or
//! dropped by a live process) is left by a killed process or a crash zero-filled up to the next
//! window boundary (at least one window).
//!
//! Simplifications: removing a directory is durable at once; a failed operation has no effect; `create` of an existing name makes a new node (the old one
//! stays reachable through the durable namespace until the next `sync_dir`).
//!
//! Fault injection counts every fallible call on the storage and on its handles (one "operation"
//! each: `append`, `sync`, `read_exact_at`, `create`, `open`, `rename`, `remove`, `truncate`,
//! `list`, `exists`, `create_dir_all`, `remove_dir`, `sync_dir`, `lock`); `len()` is not counted.

use super::{DirLock, RandomAccessFile, Storage, WritableFile};
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod handles;
#[cfg(test)]
mod tests;

use handles::{MemDirLock, MemRandomAccessFile, MemWritableFile};

/// What happens to the bytes of each file at a simulated crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFate {
    /// Every file reverts to its synced content.
    DropUnsynced,
    /// Every file keeps its synced content plus a random prefix (possibly empty, possibly all)
    /// of its unsynced appends, drawn from a `SplitMix64` seeded with the value.
    KeepRandomPrefix(u64),
    /// Every file keeps all its bytes, synced or not.
    KeepAll,
}

/// What happens to directory entries at a simulated crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirFate {
    /// Entries changed since their directory's last `sync_dir` revert: files created since then
    /// disappear, renames revert, removed files come back.
    RevertUnsynced,
    /// Each entry changed since its directory's last `sync_dir` independently keeps its new
    /// state or reverts (coin flips from a `SplitMix64` seeded with the value). This models a
    /// file system that persists metadata operations in any order: a rename may survive while
    /// the creation of the file it names does not, or a removal while an earlier rename does not.
    RandomSubset(u64),
    /// Every live entry survives.
    KeepAll,
}

/// One file's bytes. Only touched while the storage state lock is held.
#[derive(Debug, Default)]
struct Node {
    data: Vec<u8>,
    /// Length of the durable prefix of `data`.
    synced_len: usize,
    /// A sync of this file failed: later syncs make nothing durable until a crash.
    poisoned: bool,
    /// Window of a preallocated log still open for appending (0: none); see the module doc.
    prealloc: usize,
}

impl Node {
    /// A killed process or a crash leaves an open preallocated log zero-filled to the end of
    /// its current window; from then on it is a plain file.
    fn fill_reservation(&mut self) {
        if self.prealloc > 0 {
            let w = self.prealloc;
            let len = self.data.len().max(1).div_ceil(w) * w;
            self.data.resize(len, 0);
            self.prealloc = 0;
        }
    }
}

type NodeRef = Arc<Mutex<Node>>;

#[derive(Debug, Default)]
struct State {
    /// Bumped at every crash; handles of an older generation are dead.
    generation: u64,
    live: BTreeMap<PathBuf, NodeRef>,
    durable: BTreeMap<PathBuf, NodeRef>,
    dirs: BTreeSet<PathBuf>,
    /// The directories a crash keeps (all of `dirs` unless `volatile_dirs`).
    durable_dirs: BTreeSet<PathBuf>,
    /// New directories need a `sync_dir` of their parent to survive a crash.
    volatile_dirs: bool,
    /// Window of the logs `create_log` makes (0: logs are plain files).
    log_window: usize,
    locks: BTreeSet<PathBuf>,
    /// Operations counted so far (see the module doc).
    ops: u64,
    /// Index (in `ops` numbering) of the first operation that fails.
    fail_at: Option<u64>,
    /// Whether every operation after `fail_at` fails too.
    fail_persistent: bool,
}

/// The namespace after a crash that persisted a random subset of the unsynced entry changes
/// ([`DirFate::RandomSubset`]); paths are visited in order, so a seed is reproducible.
fn random_subset(st: &State, seed: u64) -> BTreeMap<PathBuf, NodeRef> {
    let mut rng = SplitMix64::new(seed);
    let paths: BTreeSet<&PathBuf> = st.live.keys().chain(st.durable.keys()).collect();
    let mut out = BTreeMap::new();
    for p in paths {
        let (live, durable) = (st.live.get(p), st.durable.get(p));
        let same = match (live, durable) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        let pick = if same || rng.below(2) == 0 { live } else { durable };
        if let Some(node) = pick {
            out.insert(p.clone(), node.clone());
        }
    }
    out
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

/// A directory that always exists and is held by no other: `/`, `""` (relative paths' base)
/// and `"."`.
fn is_root(path: &Path) -> bool {
    path == Path::new(".") || path.parent().is_none()
}

/// `"."` names the same directory as `""` (the base of relative paths).
fn norm(dir: &Path) -> &Path {
    if dir == Path::new(".") {
        Path::new("")
    } else {
        dir
    }
}

fn not_found(op: &str, path: &Path) -> Error {
    Error::io(format!("{op} {}", path.display()), std::io::Error::from(ErrorKind::NotFound))
}

impl State {
    /// Counts one operation and applies fault injection and the stale-handle check.
    fn begin(&mut self, handle_gen: Option<u64>, op: &str, path: &Path) -> Result<()> {
        if handle_gen.is_some_and(|g| g != self.generation) {
            let e = std::io::Error::other("handle opened before a simulated crash");
            return Err(Error::io(format!("{op} {}", path.display()), e));
        }
        let index = self.ops;
        self.ops += 1;
        let fail = match self.fail_at {
            Some(at) => index == at || (self.fail_persistent && index > at),
            None => false,
        };
        if fail {
            let e = std::io::Error::other(format!("injected fault at operation {index}"));
            return Err(Error::io(format!("{op} {}", path.display()), e));
        }
        Ok(())
    }

    fn dir_exists(&self, dir: &Path) -> bool {
        is_root(dir) || self.dirs.contains(dir)
    }

    /// After a crash rewrote `dirs`: drops directories whose parent is gone, then files whose
    /// directory is gone (nothing reaches them any more).
    fn prune_unreachable(&mut self) {
        // Sorted order visits a parent before its children.
        let dirs: Vec<PathBuf> = self.dirs.iter().cloned().collect();
        for d in dirs {
            if !self.dir_exists(parent(&d)) {
                self.dirs.remove(&d);
            }
        }
        let dirs = &self.dirs;
        self.live.retain(|p, _| is_root(parent(p)) || dirs.contains(parent(p)));
    }

    fn require_parent(&self, op: &str, path: &Path) -> Result<()> {
        if self.dir_exists(parent(path)) && !self.dirs.contains(path) {
            Ok(())
        } else {
            Err(not_found(op, path))
        }
    }
}

/// An in-memory, crash-simulating, fault-injecting [`Storage`]. Cloning gives another handle on
/// the same file system, so a test keeps one while the engine owns another.
#[derive(Debug, Clone, Default)]
pub struct MemStorage {
    state: Arc<Mutex<State>>,
}

impl MemStorage {
    /// An empty file system.
    pub fn new() -> MemStorage {
        MemStorage::default()
    }

    /// A file system whose new directories survive a crash only once their parent directory was
    /// synced (module doc, "Directories").
    pub fn with_volatile_directories(self) -> MemStorage {
        self.state.lock().volatile_dirs = true;
        self
    }

    /// A file system whose logs (`create_log`) behave as mapped logs reserving `window`-byte
    /// zero-filled windows (module doc, "Preallocated logs").
    pub fn with_preallocated_logs(self, window: usize) -> MemStorage {
        self.state.lock().log_window = window;
        self
    }

    /// Power loss: every file reverts to its synced content and every directory change since the
    /// directory's last `sync_dir` is undone.
    pub fn crash_drop_unsynced(&self) {
        self.crash(DataFate::DropUnsynced, DirFate::RevertUnsynced);
    }

    /// Power loss that persisted part of the unsynced data: each file keeps its synced content
    /// plus a random prefix of its unsynced appends (seeded). Directory entries all survive;
    /// use [`MemStorage::crash`] to combine this with reverted entries.
    pub fn crash_keep_random_prefix(&self, seed: u64) {
        self.crash(DataFate::KeepRandomPrefix(seed), DirFate::KeepAll);
    }

    /// Power loss that only loses directory changes not made durable by `sync_dir`; file bytes
    /// all survive (synced or not).
    pub fn crash_lose_unsynced_dir_entries(&self) {
        self.crash(DataFate::KeepAll, DirFate::RevertUnsynced);
    }

    /// Simulates a crash with the given fates, then: everything left is durable, all locks are
    /// released, fault injection is disarmed and every handle opened before is dead.
    pub fn crash(&self, data: DataFate, dirs: DirFate) {
        let mut st = self.state.lock();
        match dirs {
            DirFate::RevertUnsynced => {
                st.live = st.durable.clone();
                st.dirs = st.durable_dirs.clone();
            }
            DirFate::RandomSubset(seed) => {
                st.live = random_subset(&st, seed);
                // Coin flips of their own, so the file entries' flips do not depend on them.
                let mut rng = SplitMix64::new(seed ^ 0xD1D5);
                let durable = &st.durable_dirs;
                let kept = st.dirs.iter().filter(|d| durable.contains(*d) || rng.below(2) == 0);
                st.dirs = kept.cloned().collect();
            }
            DirFate::KeepAll => {}
        }
        st.prune_unreachable();
        st.durable = st.live.clone();
        st.durable_dirs = st.dirs.clone();
        let mut rng = match data {
            DataFate::KeepRandomPrefix(seed) => Some(SplitMix64::new(seed)),
            _ => None,
        };
        // A node may be reachable under two names (a cross-directory rename synced on one side
        // only); apply its fate once. Iteration is in path order, so a seed is reproducible.
        let mut seen = HashSet::new();
        for node in st.live.values() {
            if !seen.insert(Arc::as_ptr(node)) {
                continue;
            }
            let mut n = node.lock();
            let keep = match (data, rng.as_mut()) {
                (DataFate::DropUnsynced, _) => n.synced_len,
                (DataFate::KeepRandomPrefix(_), Some(rng)) => {
                    let unsynced = (n.data.len() - n.synced_len) as u64;
                    n.synced_len + rng.below(unsynced + 1) as usize
                }
                _ => n.data.len(),
            };
            n.data.truncate(keep);
            // The reserved size is metadata that may reach the disk before any data does.
            n.fill_reservation();
            n.synced_len = n.data.len();
            n.poisoned = false;
        }
        st.generation += 1;
        st.locks.clear();
        st.fail_at = None;
    }

    /// A killed process (no power loss): every byte and entry stays exactly as it was, durable
    /// or not (the OS still holds the unsynced part and may lose it at a later power loss),
    /// locks are released, fault injection is disarmed and every handle opened before is dead.
    pub fn kill_process(&self) {
        let mut st = self.state.lock();
        for node in st.live.values() {
            node.lock().fill_reservation();
        }
        st.generation += 1;
        st.locks.clear();
        st.fail_at = None;
    }

    /// Makes the operation `n` operations from now fail (the next `n` succeed; `n = 0` fails the
    /// very next one) with an I/O error; if `persistent`, every later operation fails too.
    /// Replaces any earlier arming.
    pub fn fail_after(&self, n: u64, persistent: bool) {
        let mut st = self.state.lock();
        st.fail_at = Some(st.ops + n);
        st.fail_persistent = persistent;
    }

    /// Disarms fault injection.
    pub fn clear_faults(&self) {
        self.state.lock().fail_at = None;
    }

    /// Operations counted since this file system was made (failed ones included).
    pub fn op_count(&self) -> u64 {
        self.state.lock().ops
    }

    /// The synced length and current length of a live file, for tests that check durability.
    pub fn file_lengths(&self, path: &Path) -> Option<(u64, u64)> {
        let st = self.state.lock();
        st.live.get(path).map(|n| {
            let n = n.lock();
            (n.synced_len as u64, n.data.len() as u64)
        })
    }
}

impl Storage for MemStorage {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.state.lock();
        st.begin(None, "creating", path)?;
        st.require_parent("creating", path)?;
        let node = NodeRef::default();
        st.live.insert(path.to_path_buf(), node.clone());
        Ok(Box::new(MemWritableFile {
            state: self.state.clone(),
            node,
            path: path.to_path_buf(),
            generation: st.generation,
            len: 0,
        }))
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = self.create(path)?;
        let st = self.state.lock();
        if let Some(node) = st.live.get(path) {
            node.lock().prealloc = st.log_window;
        }
        Ok(file)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let mut st = self.state.lock();
        st.begin(None, "opening", path)?;
        let node = st.live.get(path).ok_or_else(|| not_found("opening", path))?.clone();
        let len = node.lock().data.len() as u64;
        Ok(Arc::new(MemRandomAccessFile {
            state: self.state.clone(),
            node,
            path: path.to_path_buf(),
            generation: st.generation,
            len,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        let op = format!("renaming {} to", from.display());
        st.begin(None, &op, to)?;
        st.require_parent(&op, to)?;
        let node = st.live.remove(from).ok_or_else(|| not_found(&op, to))?;
        st.live.insert(to.to_path_buf(), node);
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(None, "removing", path)?;
        st.live.remove(path).map(|_| ()).ok_or_else(|| not_found("removing", path))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(None, "truncating", path)?;
        let node = st.live.get(path).ok_or_else(|| not_found("truncating", path))?;
        let len = usize::try_from(len).map_err(|_| Error::invalid("truncate length"))?;
        let mut n = node.lock();
        n.data.resize(len, 0);
        // set_len + sync: the whole file is durable, unless a failed sync poisoned it.
        n.synced_len = if n.poisoned { n.synced_len.min(len) } else { len };
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut st = self.state.lock();
        st.begin(None, "listing", dir)?;
        if !st.dir_exists(dir) {
            return Err(not_found("listing", dir));
        }
        let files = st.live.keys().map(PathBuf::as_path);
        let mut names: Vec<String> = files
            .chain(st.dirs.iter().map(PathBuf::as_path))
            .filter(|p| parent(p) == dir)
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        let mut st = self.state.lock();
        st.begin(None, "checking existence of", path)?;
        Ok(st.live.contains_key(path) || st.dir_exists(path))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(None, "creating directory", dir)?;
        let ancestors: Vec<&Path> = dir.ancestors().filter(|a| !is_root(a)).collect();
        if ancestors.iter().any(|a| st.live.contains_key(*a)) {
            let e = std::io::Error::from(ErrorKind::AlreadyExists);
            return Err(Error::io(format!("creating directory {}", dir.display()), e));
        }
        let made: Vec<PathBuf> = ancestors
            .into_iter()
            .filter(|a| !st.dirs.contains(*a))
            .map(Path::to_path_buf)
            .collect();
        if !st.volatile_dirs {
            st.durable_dirs.extend(made.iter().cloned());
        }
        st.dirs.extend(made);
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(None, "removing directory", dir)?;
        if !st.dirs.contains(dir) {
            return Err(not_found("removing directory", dir));
        }
        let busy = st.live.keys().chain(st.dirs.iter()).any(|p| parent(p) == dir);
        if busy {
            let e = std::io::Error::from(ErrorKind::DirectoryNotEmpty);
            return Err(Error::io(format!("removing directory {}", dir.display()), e));
        }
        // Directories are durable when made and gone when removed (module doc, simplifications):
        // entries a crash would have brought back go with the directory.
        st.dirs.remove(dir);
        st.durable_dirs.remove(dir);
        st.durable.retain(|p, _| parent(p) != dir);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(None, "syncing directory", dir)?;
        if !st.dir_exists(dir) {
            return Err(not_found("syncing directory", dir));
        }
        let dir = norm(dir);
        let st = &mut *st;
        st.durable.retain(|p, _| parent(p) != dir);
        for (p, node) in st.live.iter().filter(|(p, _)| parent(p) == dir) {
            st.durable.insert(p.clone(), node.clone());
        }
        let live_dirs = &st.dirs;
        st.durable_dirs.retain(|d| parent(d) != dir || live_dirs.contains(d));
        st.durable_dirs.extend(st.dirs.iter().filter(|d| parent(d) == dir).cloned());
        Ok(())
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(None, "syncing", path)?;
        let node = st.live.get(path).ok_or_else(|| not_found("syncing", path))?;
        let mut n = node.lock();
        // As `WritableFile::sync`: nothing becomes durable once a sync of this file failed.
        if !n.poisoned {
            n.synced_len = n.data.len();
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>> {
        let mut st = self.state.lock();
        st.begin(None, "locking", path)?;
        if st.locks.contains(path) {
            return Err(Error::Locked(path.to_path_buf()));
        }
        if !st.live.contains_key(path) {
            st.require_parent("creating lock file", path)?;
            st.live.insert(path.to_path_buf(), NodeRef::default());
        }
        st.locks.insert(path.to_path_buf());
        Ok(Box::new(MemDirLock {
            state: self.state.clone(),
            path: path.to_path_buf(),
            generation: st.generation,
        }))
    }
}
