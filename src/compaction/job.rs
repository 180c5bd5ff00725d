//! Running one compaction: merge the input tables in internal-key order, keep the versions
//! someone can still see, write outputs cut at the target file size, each with its level's
//! filter built once from the user-key hashes collected while it was written.
//!
//! Which versions survive (for each user key, newest first): the newest one (what the current
//! state sees), and for each live snapshot `s` the newest version with sequence `<= s`. Any
//! other version is invisible to every reader now and later (a new snapshot sees the newest).
//! At the bottom (no deeper level overlaps the compaction), a tombstone that is the oldest
//! surviving version hides nothing and is dropped; so is the tombstone left oldest after that.
//! There too the oldest kept Put that every reader sees is written at sequence 0
//! (`zero_sequence_of_oldest`). Merge operands are kept down to their base or collapsed with the operator
//! (`collapse.rs`, which implements all of this rule).
//!
//! Range tombstones (design.md#range-tombstones): the inputs' tombstones
//! are fragmented together; a version covered by a tombstone with a higher sequence number is
//! dropped when no live snapshot lies between them (every reader that would see the version
//! also sees the tombstone). A tombstone sequence number survives when it is the newest one of
//! its fragment for the current state or for some snapshot, and at the bottom only when some
//! snapshot is older than it (otherwise every version it covers was dropped).
//!
//! Outputs are cut only between user keys, so the files of a level never share a user key and
//! their ranges stay disjoint; they are always cut where the keyspace changes, so a file holds
//! one keyspace, and each is written with its keyspace's block layout and filter (the job runs
//! keyspace by keyspace). An output cut after user key `k` takes the surviving tombstones
//! clipped to `[previous cut, k ++ [0])` and the next one those from `k ++ [0]` on: `k ++ [0]`
//! is the smallest key above `k`, so the first file's range ends at `k` and the next starts
//! above it. The files are synced, then the directory; nothing is installed
//! here: the caller makes one manifest edit for the whole compaction.
//!
//! Subcompactions (`subcompaction.rs`): a keyspace's input may be split into disjoint user-key
//! ranges `[lo, hi)` merged on their own threads. A range's merge is this module's merge
//! restricted to the range: every version of a user key lies in one range, the tombstones are
//! those of the whole keyspace (so every drop decision is the one a single job makes), and the
//! range's outputs take the surviving tombstones clipped to `[lo, hi)`. Its cuts are keys
//! `b ++ [0]`, like the cuts between outputs, so neighbouring ranges' files stay disjoint.
//! `subcompaction::plan` cuts the ranges; [`run_ranges`] merges them.
//!
//! Subcompaction failure: a failing or panicking range (a panic is caught on the range's own thread, the
//! caller's included, and becomes its error) sets a shared flag the others poll per entry, so
//! they stop early; the first error is returned. Every range records each output's number in
//! the job's shared `made` list before creating the file, so `job::run` deletes every file any
//! range created. Nothing is installed.

use super::collapse::{collapse, Version};
use super::filter::build_filter;
use super::subcompaction::{self, KeyRange};
use crate::compaction_filter::{Decision, EntryKind, Retention};
use crate::error::{Error, Result};
use crate::filename;
use crate::filter_plan::LevelFilter;
use crate::ikey::{self, ValueKind};
use crate::manifest::FileMeta;
use crate::range_del::{Fragments, RangeTombstone};
use crate::sst::{
    FilterBlockSource, PartitionedFilterSource, TableBuilder, TableIter, TableOptions,
};
use crate::storage::Storage;
use crate::table_cache::TableCache;
use crate::version::TableFile;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where a job writes and how.
pub struct JobEnv<'a> {
    /// The file system.
    pub storage: &'a dyn Storage,
    /// Database directory.
    pub dir: &'a Path,
    /// Hands out new file numbers.
    pub new_file_number: &'a (dyn Fn() -> u64 + Sync),
    /// The table cache: opens the inputs as the merge reaches them, and the finished outputs.
    pub tables: &'a Arc<TableCache>,
    /// Whether the database is closing: every range stops at its next entry and the job
    /// fails with [`closing`], its outputs removed.
    pub closing: &'a (dyn Fn() -> bool + Sync),
    /// Begins closing the database (handed to the test hook `testing::OutputStart` only).
    pub begin_close: &'a (dyn Fn() + Sync),
}

/// The error of a job stopped because the database is closing (not a failure of the job: the
/// database keeps its state, and only the closing caller sees it).
pub fn closing() -> Error {
    Error::Closed
}

/// How the outputs of one keyspace are written.
#[derive(Debug, Clone, Copy)]
pub struct OutputLayout {
    /// Block layout.
    pub table: TableOptions,
    /// Filter.
    pub filter: LevelFilter,
    /// `Some(bytes)`: partition the filter (`Options::partition_filters`), cutting a partition
    /// once its estimated size reaches `bytes` (`Options::metadata_block_size`).
    pub partition_bytes: Option<usize>,
    /// `Some(bytes)`: partition the index (`Options::partition_index`) into blocks of about
    /// `bytes` (`Options::metadata_block_size`).
    pub index_partition_bytes: Option<usize>,
    /// Values of at least this many bytes are written to blob files
    /// (design.md#key-value-separation): the keyspace's `blob_threshold`.
    pub blob_threshold: Option<u32>,
}

/// What to merge.
pub struct JobSpec {
    /// Sorted runs to merge, newest first: each L0 file alone, then each level's files in key
    /// order (a level is one run, whose files are opened one at a time as the merge reaches
    /// them, so a compaction holds one open input per run).
    pub runs: Vec<Vec<Arc<TableFile>>>,
    /// Live snapshot sequence numbers.
    pub snapshots: BTreeSet<u64>,
    /// Drop tombstones that hide nothing (no deeper level overlaps).
    pub bottommost: bool,
    /// Cut outputs at the first user-key boundary past this size.
    pub target_file_size: u64,
    /// The operator that collapses merge operands (`None`: operands are copied as they are),
    /// and the name the outputs record for their operands; see
    /// [`super::collapse::compaction_operator`].
    pub merge_operator: Option<crate::merge::SharedMergeOperator>,
    /// Recorded in outputs holding merge operands (`merge_operator` property).
    pub merge_operator_name: String,
    /// Layout of the outputs of each keyspace the inputs hold.
    pub layouts: BTreeMap<u32, OutputLayout>,
    /// Layout of the outputs of any other keyspace.
    pub default_layout: OutputLayout,
    /// At most this many subcompactions (threads) per keyspace; 1 merges on the caller's
    /// thread alone (`Options::max_subcompactions`).
    pub max_subcompactions: usize,
    /// The scan filters every output carries (`Options::prefix_extractor`,
    /// `Options::range_filter`).
    pub scan_filters: crate::sst::ScanFilterSpec,
    /// The TTL and compaction filter of each keyspace that has one (design.md#ttl).
    pub retention: BTreeMap<u32, Retention>,
    /// `merge_operator` wrapped to strip write times: the operator of TTL keyspaces.
    pub ttl_merge_operator: Option<crate::merge::SharedMergeOperator>,
    /// The level the outputs are written to (the compaction filter is told).
    pub output_level: usize,
    /// The smallest keys of the files of the level below the output level (the
    /// grandparents), in `(keyspace, user key)` order: an output at least half its target size
    /// is cut before a key that starts a grandparent file, so the outputs' boundaries line up
    /// with the next level's files and a later compaction of one output overlaps fewer of
    /// them (RocksDB's `level_compaction_dynamic_file_size`).
    pub grandparent_starts: Vec<(u32, Vec<u8>)>,
    /// Blob files whose live values the job relocates (garbage collection: the oldest
    /// `Options::blob_gc_age_cutoff` share of the live blob files).
    pub blob_gc_files: BTreeSet<u64>,
}

impl JobSpec {
    fn layout(&self, keyspace: u32) -> OutputLayout {
        self.layouts.get(&keyspace).copied().unwrap_or(self.default_layout)
    }
}

/// What a job produced.
#[derive(Default)]
pub struct JobResult {
    /// Output files, in key order (opened once to verify them; the table cache keeps them).
    pub outputs: Vec<Arc<TableFile>>,
    /// Bytes of input files.
    pub bytes_read: u64,
    /// Bytes of output files.
    pub bytes_written: u64,
    /// Outputs whose static filter failed and got the blocked Bloom fallback.
    pub filter_fallbacks: u64,
    /// Entries read and entries written.
    pub entries_in: u64,
    /// Entries written.
    pub entries_out: u64,
    /// Key ranges merged on their own threads (0 when no keyspace's input was split).
    pub subcompactions: u64,
    /// Blob files written (synced), with the bytes of each file.
    pub blob_files: Vec<(crate::sst::blob::BlobMeta, u64)>,
    /// References the job read and did not write: garbage of their blob files, by file
    /// number, as (values, bytes).
    pub blob_garbage: BTreeMap<u64, (u64, u64)>,
    /// Values the job relocated out of the files of `JobSpec::blob_gc_files`.
    pub blob_relocated: u64,
}

impl JobResult {
    /// Adds a range's blob outputs and garbage to the job's.
    fn absorb_blobs(&mut self, part: &mut JobResult) {
        self.blob_files.append(&mut part.blob_files);
        for (n, (c, b)) in std::mem::take(&mut part.blob_garbage) {
            let g = self.blob_garbage.entry(n).or_default();
            g.0 += c;
            g.1 += b;
        }
        self.blob_relocated += part.blob_relocated;
    }
}

/// A run of disjoint tables read in order, restricted to a key range: the first table opened
/// is sought to `seek` (the range's start), and the run ends at the first key `>= end`.
struct RunIter {
    files: Vec<Arc<TableFile>>,
    next: usize,
    iter: Option<TableIter>,
    seek: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
    /// [`key_head`] of the current key, kept by `settle` (`None`: the run is exhausted).
    head: Option<u64>,
}

impl RunIter {
    /// Moves to the next table while the current one is exhausted, then ends the run if its
    /// key lies at or past the range's end; `head` follows.
    fn settle(&mut self) -> Result<()> {
        let r = self.settle_iter();
        self.head = self.key().map(key_head);
        r
    }

    fn settle_iter(&mut self) -> Result<()> {
        while !self.iter.as_ref().is_some_and(|i| i.valid()) {
            // The finished table's iterator is dropped first, releasing its handle, and its
            // mapped pages with it: a compaction reads each input once, and a full compaction
            // that kept them would count the whole database in the process's RSS (3.9 GiB at
            // 50M keys before this; readers that still use the table, and a subcompaction
            // reading its other end, map the pages they need again from the page cache: minor
            // faults only).
            if let Some(done) = self.iter.take() {
                done.table().release_mapped_pages();
            }
            let Some(f) = self.files.get(self.next) else { return Ok(()) };
            let mut it = f.table()?.iter(false);
            match self.seek.take() {
                Some(target) => it.seek(&target)?,
                None => it.seek_to_first()?,
            }
            self.iter = Some(it);
            self.next += 1;
        }
        if let (Some(end), Some(it)) = (&self.end, &self.iter) {
            if ikey::split(it.key()).1 >= end.as_slice() {
                self.iter = None;
                self.next = self.files.len();
            }
        }
        Ok(())
    }

    fn key(&self) -> Option<&[u8]> {
        self.iter.as_ref().filter(|i| i.valid()).map(|i| i.key())
    }

    /// Whether this run's current key sorts before `other`'s (both valid): the heads decide
    /// unless they are equal, then the internal keys (ikey::compare).
    fn before(&self, other: &RunIter) -> bool {
        match self.head.cmp(&other.head) {
            std::cmp::Ordering::Equal => {
                let (a, b) = (self.key().expect("valid"), other.key().expect("valid"));
                ikey::compare(a, b).is_lt()
            }
            o => o.is_lt(),
        }
    }
}

/// The first 8 bytes of an internal key's user key as a big-endian number, zero-padded. Keys
/// of one keyspace with unequal heads are in the order of their heads: the first differing
/// byte is within both user keys, or a shorter key ends (padding 0) where the other goes on,
/// and is then a prefix of it, which sorts first. Equal heads say nothing. The merge compares
/// heads first: one integer comparison instead of a call to `memcmp` for nearly every pair of
/// distinct keys.
fn key_head(key: &[u8]) -> u64 {
    let user = ikey::user_key(key);
    let mut b = [0u8; 8];
    let n = user.len().min(8);
    b[..n].copy_from_slice(&user[..n]);
    u64::from_be_bytes(b)
}

/// Runs the compaction. On error or panic (returned as an error), every output file the job
/// created is removed (best effort; any left are orphans the next open deletes): each file's
/// number enters `made` before the file is created, whichever thread creates it, so a failure
/// anywhere, a panicking subcompaction thread's included, leaves no file of the job behind.
pub fn run(env: &JobEnv<'_>, spec: JobSpec) -> Result<JobResult> {
    let made: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_inner(env, spec, &made)))
        .unwrap_or_else(|payload| Err(panicked("compaction", payload)));
    if r.is_err() {
        for n in made.into_inner() {
            env.tables.evict(n);
            let _ = env.storage.remove(&env.dir.join(filename::sst_name(n)));
            let _ = env.storage.remove(&env.dir.join(filename::blob_name(n)));
        }
    }
    r
}

/// The error for a panic of a compaction thread, naming the thread and the panic's message.
pub(crate) fn panicked(thread: &str, payload: Box<dyn std::any::Any + Send>) -> Error {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic payload".into());
    Error::invalid(format!("a {thread} thread panicked ({msg})"))
}

fn run_inner(env: &JobEnv<'_>, mut spec: JobSpec, made: &Mutex<Vec<u64>>) -> Result<JobResult> {
    let mut res = JobResult {
        bytes_read: spec.runs.iter().flatten().map(|f| f.meta.size).sum(),
        ..JobResult::default()
    };
    // Keyspace by keyspace: each file holds one keyspace and a run's files are in key order,
    // so a run splits into one sorted run per keyspace. Range tombstones and output cuts are
    // then per keyspace, exactly as in a database with a single keyspace.
    let runs = std::mem::take(&mut spec.runs);
    let keyspaces: BTreeSet<u32> = runs.iter().flatten().map(|f| f.meta.keyspace).collect();
    let mut metas: Vec<FileMeta> = Vec::new();
    for keyspace in keyspaces {
        let runs: Vec<Vec<Arc<TableFile>>> = runs
            .iter()
            .map(|run| run.iter().filter(|f| f.meta.keyspace == keyspace).cloned().collect())
            .filter(|run: &Vec<Arc<TableFile>>| !run.is_empty())
            .collect();
        let all = collect_tombstones(&runs)?;
        let tombstones = Tombstones { surviving: surviving_tombstones(&all, &spec), all };
        let ranges = subcompaction::plan(&runs, spec.max_subcompactions, spec.target_file_size);
        let input = KeyspaceInput { keyspace, runs: &runs, tombstones: &tombstones };
        if ranges.len() > 1 {
            res.subcompactions += ranges.len() as u64;
        }
        for mut part in run_ranges(env, &spec, &input, &ranges, made)? {
            res.absorb_blobs(&mut part.res);
            metas.extend(part.metas);
            res.filter_fallbacks += part.res.filter_fallbacks;
            res.entries_in += part.res.entries_in;
            res.entries_out += part.res.entries_out;
        }
    }
    // The outputs' entries are durable before the manifest edit names them.
    if crate::testing::enabled("compaction.sync_dir") {
        env.storage.sync_dir(env.dir)?;
    }
    res.bytes_written += res.blob_files.iter().map(|(_, size)| size).sum::<u64>();
    for meta in metas {
        let table = env.tables.open(meta.number)?;
        res.bytes_written += meta.size;
        res.outputs.push(Arc::new(TableFile::new(meta, &table, env.tables.clone())));
    }
    Ok(res)
}

/// The range tombstones of one keyspace's inputs.
pub(crate) struct Tombstones {
    /// Every input tombstone (which versions they cover decides which versions survive).
    all: Fragments,
    /// The tombstone sequence numbers some reader still needs, handed out to the outputs
    /// clipped at their cuts.
    surviving: Fragments,
}

/// One keyspace's share of a compaction.
pub(crate) struct KeyspaceInput<'a> {
    /// The keyspace.
    pub keyspace: u32,
    /// Its sorted runs, newest first.
    pub runs: &'a [Vec<Arc<TableFile>>],
    /// Its tombstones (shared by every range).
    pub tombstones: &'a Tombstones,
}

/// What the merge of one key range made.
#[derive(Default)]
pub(crate) struct RangeOutput {
    /// The finished outputs, in key order.
    pub metas: Vec<FileMeta>,
    /// Entry and fallback counts.
    pub res: JobResult,
}

/// Merges the runs of one keyspace, restricted to `range` (the `index`th of the keyspace's
/// ranges), into outputs of that keyspace, whose numbers it adds to `made` before creating
/// them. Stops early (returning `Ok` with what it made) once `cancel` is set (another range
/// failed), and with [`closing`] once the database is closing (`env.closing`).
pub(crate) fn run_range(
    env: &JobEnv<'_>,
    spec: &JobSpec,
    input: &KeyspaceInput<'_>,
    (index, range): (usize, &KeyRange),
    cancel: &AtomicBool,
    made: &Mutex<Vec<u64>>,
    part: &mut RangeOutput,
) -> Result<()> {
    let keyspace = input.keyspace;
    let seek = range.lo.as_ref().map(|lo| ikey::lookup_key_in(keyspace, lo, u64::MAX));
    let mut runs: Vec<RunIter> = input
        .runs
        .iter()
        .map(|run| RunIter {
            files: run
                .iter()
                .filter(|f| range.overlaps(&f.meta.smallest_key, &f.meta.largest_key))
                .cloned()
                .collect(),
            next: 0,
            iter: None,
            seek: seek.clone(),
            end: range.hi.clone(),
            head: None,
        })
        .collect();
    for r in &mut runs {
        r.settle()?;
    }
    let (metas, res) = (&mut part.metas, &mut part.res);
    let mut out = Output {
        builder: None,
        range: index,
        keyspace,
        fallback: Arc::new(AtomicBool::new(false)),
        tombstones: &input.tombstones.surviving,
        all_tombstones: &input.tombstones.all,
        lower: range.lo.clone(),
        upper: range.hi.clone(),
        last_key: Vec::new(),
        next_grandparent: 0,
        key_buf: Vec::new(),
        spare: Vec::new(),
        blob: None,
    };
    let mut group: Vec<Version> = Vec::new();
    let mut group_key: Vec<u8> = Vec::new();
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Ok(());
        }
        if (env.closing)() {
            return Err(closing());
        }
        // The smallest current key among the runs (internal-key order; few runs, linear scan
        // over their heads).
        let mut best: Option<usize> = None;
        for (i, r) in runs.iter().enumerate() {
            if r.head.is_some() && best.is_none_or(|b| r.before(&runs[b])) {
                best = Some(i);
            }
        }
        let Some(b) = best else { break };
        let it = runs[b].iter.as_mut().expect("valid");
        let (ks, user_key, seq, kind) = ikey::decode_in(it.key())?;
        if ks != keyspace {
            return Err(crate::Error::corruption(
                format!("a table of keyspace {keyspace} holds a key of keyspace {ks}"),
                None,
            ));
        }
        res.entries_in += 1;
        if user_key != group_key.as_slice() && !group.is_empty() {
            emit(env, spec, &group_key, &mut group, &mut out, metas, made, res)?;
        }
        if group.is_empty() {
            group_key.clear();
            group_key.extend_from_slice(user_key);
        }
        let mut value = out.spare.pop().unwrap_or_default();
        value.clear();
        value.extend_from_slice(it.value());
        group.push(Version { seq, kind, value });
        it.next()?;
        runs[b].settle()?;
    }
    if !group.is_empty() {
        emit(env, spec, &group_key, &mut group, &mut out, metas, made, res)?;
    }
    if out.builder.is_none()
        && !out.tombstones.clipped(out.lower.as_deref(), out.upper.as_deref(), u64::MAX).is_empty()
    {
        out.start(env, spec, made)?; // tombstones with no version left beside them
    }
    out.finish(env, spec, metas, res, true)?;
    // The blob file is synced here, before the directory sync and the manifest edit.
    if let Some(w) = out.blob.take() {
        res.blob_files.push(w.finish()?);
    }
    Ok(())
}

/// Merges each range of one keyspace (the first on this thread, the others on scoped threads)
/// and returns their outputs in range order. Every file made, on success or failure, is in
/// `made` (numbers enter it before their files are created).
fn run_ranges(
    env: &JobEnv<'_>,
    spec: &JobSpec,
    input: &KeyspaceInput<'_>,
    ranges: &[KeyRange],
    made: &Mutex<Vec<u64>>,
) -> Result<Vec<RangeOutput>> {
    let cancel = AtomicBool::new(false);
    let run_one = |index: usize, range: &KeyRange| {
        let mut part = RangeOutput::default();
        let run = || run_range(env, spec, input, (index, range), &cancel, made, &mut part);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|payload| Err(panicked("subcompaction", payload)));
        if r.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        (r, part)
    };
    let results: Vec<(Result<()>, RangeOutput)> = match ranges {
        [] => Vec::new(),
        [only] => vec![run_one(0, only)],
        [first, rest @ ..] => std::thread::scope(|s| {
            let handles: Vec<_> = rest
                .iter()
                .enumerate()
                .map(|(i, range)| {
                    std::thread::Builder::new()
                        .name("siftdb-subcompact".into())
                        .spawn_scoped(s, move || run_one(i + 1, range))
                })
                .collect();
            let mut results = vec![run_one(0, first)];
            for h in handles {
                results.push(match h {
                    // `run_one` catches the range's panic; one escaping it is a panic in the
                    // error path itself.
                    Ok(h) => h.join().unwrap_or_else(|payload| {
                        cancel.store(true, Ordering::Relaxed);
                        (Err(panicked("subcompaction", payload)), Default::default())
                    }),
                    Err(e) => {
                        cancel.store(true, Ordering::Relaxed);
                        (Err(Error::io("spawning a subcompaction thread", e)), Default::default())
                    }
                });
            }
            results
        }),
    };
    let mut first_err = None;
    let mut parts: Vec<RangeOutput> = Vec::with_capacity(results.len());
    for (r, part) in results {
        if let Err(e) = r {
            first_err.get_or_insert(e);
        }
        // The level's invariant, checked where ranges meet: a violation is a bug here, and
        // failing the job keeps it out of the version (reads would miss keys).
        let last = parts.iter().rev().find_map(|p| p.metas.last());
        if let (Some(prev), Some(next)) = (last, part.metas.first()) {
            if prev.largest_key >= next.smallest_key {
                first_err.get_or_insert(Error::corruption(
                    format!(
                        "subcompaction outputs {} and {} overlap (keyspace {})",
                        prev.number, next.number, input.keyspace
                    ),
                    None,
                ));
            }
        }
        parts.push(part);
    }
    // A range that saw the flag stopped with `Ok` and partial output: only a real error sets
    // the flag, so `first_err` is then `Some`.
    match first_err {
        Some(e) => Err(e),
        None => Ok(parts),
    }
}

/// The range tombstones of every input file, fragmented together.
fn collect_tombstones(runs: &[Vec<Arc<TableFile>>]) -> Result<Fragments> {
    let mut list: Vec<RangeTombstone> = Vec::new();
    for f in runs.iter().flatten() {
        if f.info.range_deletions > 0 {
            list.extend(f.table()?.range_tombstones().tombstones());
        }
    }
    Ok(Fragments::new(&list))
}

/// The tombstone sequence numbers some reader still needs (module documentation).
fn surviving_tombstones(all: &Fragments, spec: &JobSpec) -> Fragments {
    let mut keep: Vec<RangeTombstone> = Vec::new();
    for f in all.fragments() {
        let mut newer = u64::MAX;
        for (i, &seq) in f.seqs.iter().enumerate() {
            // The newest of its fragment for the current state, or for a snapshot in [seq, newer).
            let needed = i == 0 || spec.snapshots.range(seq..newer).next().is_some();
            newer = seq;
            // At the bottom nothing older than the tombstone survives unless a snapshot below
            // it keeps it (then that snapshot's reader must not see the tombstone either, but
            // the readers above it must).
            if needed && !(spec.bottommost && spec.snapshots.range(..seq).next().is_none()) {
                keep.push(RangeTombstone { start: f.start.clone(), end: f.end.clone(), seq });
            }
        }
    }
    Fragments::new(&keep)
}

/// The output file being written.
struct Output<'t> {
    /// The builder, its file number and its keyspace.
    builder: Option<(TableBuilder, u64, u32)>,
    /// Index of the key range among its keyspace's subcompactions.
    range: usize,
    /// The keyspace of every output.
    keyspace: u32,
    fallback: Arc<AtomicBool>,
    /// The surviving range tombstones, handed out to the outputs clipped at their cuts.
    tombstones: &'t Fragments,
    /// Every input tombstone (which versions they cover decides which versions survive).
    all_tombstones: &'t Fragments,
    /// Where the current output's share of the tombstones starts (`None`: the beginning).
    lower: Option<Vec<u8>>,
    /// Where the last output's share ends: the end of the key range (`None`: unbounded).
    upper: Option<Vec<u8>>,
    /// Last user key added to the current output.
    last_key: Vec<u8>,
    /// The first of `JobSpec::grandparent_starts` above the last key added (any output).
    next_grandparent: usize,
    /// Scratch buffer for the internal keys written.
    key_buf: Vec<u8>,
    /// Value buffers of written versions, reused for the next versions read (at most
    /// [`SPARE_BUFFERS`]): the merge then allocates per entry only when versions are dropped.
    spare: Vec<Vec<u8>>,
    /// The blob file values at or above the threshold go to (made at the first one).
    blob: Option<crate::sst::blob::BlobWriter>,
}

/// Most value buffers an output keeps for reuse.
const SPARE_BUFFERS: usize = 64;

impl Output<'_> {
    /// Whether `user_key` (greater than every key seen so far) starts a grandparent file or
    /// lies past such a start that the keys before it are below: cutting the current output
    /// before it keeps the output within fewer grandparent files. Moves the cursor past those
    /// starts.
    fn passes_grandparent_start(&mut self, starts: &[(u32, Vec<u8>)], user_key: &[u8]) -> bool {
        let key = (self.keyspace, user_key);
        let before = self.next_grandparent;
        while starts.get(self.next_grandparent).is_some_and(|(ks, k)| (*ks, k.as_slice()) <= key) {
            self.next_grandparent += 1;
        }
        self.next_grandparent > before
    }

    /// Creates the next output file.
    fn start(&mut self, env: &JobEnv<'_>, spec: &JobSpec, made: &Mutex<Vec<u64>>) -> Result<()> {
        let number = (env.new_file_number)();
        made.lock().push(number);
        let file = env.storage.create_immutable(&env.dir.join(filename::sst_name(number)))?;
        crate::testing::compaction_output_started(&crate::testing::OutputStart {
            range: self.range,
            number,
            closing: env.closing,
            begin_close: env.begin_close,
        });
        let mut builder = TableBuilder::new(file, spec.layout(self.keyspace).table)?;
        builder.set_keyspace(self.keyspace);
        builder.set_merge_operator(&spec.merge_operator_name);
        let ttl = spec.retention.get(&self.keyspace).is_some_and(|r| r.ttl_ms.is_some());
        builder.set_write_times(ttl);
        builder.set_scan_filters(spec.scan_filters.clone());
        if let Some(bytes) = spec.layout(self.keyspace).index_partition_bytes {
            builder.partition_index(bytes);
        }
        self.builder = Some((builder, number, self.keyspace));
        Ok(())
    }

    /// Finishes the current output; `last` when no output of the range follows (it takes the
    /// tombstones up to the range's end), otherwise they end at the cut after its last user key.
    fn finish(
        &mut self,
        _env: &JobEnv<'_>,
        spec: &JobSpec,
        metas: &mut Vec<FileMeta>,
        res: &mut JobResult,
        last: bool,
    ) -> Result<()> {
        let Some((mut builder, number, keyspace)) = self.builder.take() else { return Ok(()) };
        let upper = if last {
            self.upper.clone()
        } else {
            let mut cut = self.last_key.clone();
            cut.push(0);
            Some(cut)
        };
        for t in self.tombstones.clipped(self.lower.as_deref(), upper.as_deref(), u64::MAX) {
            builder.add_range_tombstone(t)?;
        }
        self.lower = upper;
        let lf = spec.layout(keyspace).filter;
        let fallback = self.fallback.clone();
        fallback.store(false, Ordering::Relaxed);
        let partition = spec.layout(keyspace).partition_bytes;
        let source = if lf.kind == crate::options::StaticFilterKind::None {
            FilterBlockSource::None
        } else if let Some(partition_bytes) = partition {
            FilterBlockSource::Partitioned(PartitionedFilterSource {
                build: Box::new(move |hashes: &[u64]| {
                    let (bytes, fell_back) = build_filter(lf, hashes)?.expect("kind is not None");
                    fallback.fetch_or(fell_back, Ordering::Relaxed);
                    Ok(bytes)
                }),
                bits_per_key: lf.bits_per_key(),
                partition_bytes,
            })
        } else {
            FilterBlockSource::build(move |hashes: &[u64]| {
                let (bytes, fell_back) = build_filter(lf, hashes)?.expect("kind is not None");
                fallback.store(fell_back, Ordering::Relaxed);
                Ok(bytes)
            })
        };
        // The builder syncs the finished file ("sst.sync"); "compaction.sst_sync" is the
        // compaction's own switch for that sync (src/testing.rs).
        let s =
            crate::testing::within("compaction.sst_sync", "sst.sync", || builder.finish(source))?;
        res.filter_fallbacks += self.fallback.load(Ordering::Relaxed) as u64;
        metas.push(FileMeta {
            number,
            size: s.file_size,
            smallest_key: s.smallest_key,
            largest_key: s.largest_key,
            smallest_seq: s.smallest_seq,
            largest_seq: s.largest_seq,
            entries: s.entries,
            keyspace,
            global_seq: None,
            stored_keyspace: None,
        });
        Ok(())
    }
}

/// At the bottom (nothing older exists anywhere), writes the oldest kept version at sequence 0
/// when every reader sees it: a Put or blob reference with no live snapshot below its sequence
/// (RocksDB's bottommost sequence zeroing). Readers then find the same version: any newer
/// version or covering range tombstone kept beside it has a higher sequence than 0 as it had
/// than the original, and a tombstone older than it survives at the bottom only for a snapshot
/// below it, which rules the zeroing out. Why: seven of the trailer's eight bytes become zeros,
/// which compress, so the last level (most of the data) is smaller on disk and in the cache
/// and every later rewrite of it writes less.
fn zero_sequence_of_oldest(keep: &mut [Version], snapshots: &BTreeSet<u64>) {
    if let Some(v) = keep.last_mut() {
        let visible_to_all = snapshots.range(..v.seq).next().is_none();
        if matches!(v.kind, ValueKind::Put | ValueKind::BlobIndex) && visible_to_all {
            v.seq = 0;
        }
    }
}

/// Writes the surviving versions of one user key (module documentation) and clears `group`.
#[allow(clippy::too_many_arguments)]
fn emit(
    env: &JobEnv<'_>,
    spec: &JobSpec,
    user_key: &[u8],
    group: &mut Vec<Version>,
    out: &mut Output<'_>,
    metas: &mut Vec<FileMeta>,
    made: &Mutex<Vec<u64>>,
    res: &mut JobResult,
) -> Result<()> {
    // Versions every reader that can see them finds under a newer range tombstone go first
    // (for a version, the oldest such reader is the first snapshot at or above it, else the
    // current state: a tombstone covering it for that reader covers it for all newer ones).
    // What remains is collapsed as without tombstones; a remaining version some newer reader
    // finds covered stays, and that reader's tombstone, kept in the outputs, hides it.
    let covering: &[u64] = out.all_tombstones.covering_seqs(user_key);
    let covered_at = |seq: u64, reader: u64| covering.iter().any(|&t| t > seq && t <= reader);
    let retention = spec.retention.get(&out.keyspace);
    // Blob references (design.md#key-value-separation): each one read is garbage of its file
    // unless it is written again as it is. A reference is carried over without reading its
    // value, except where the value itself is needed: a lifecycle rule (TTL, compaction filter)
    // or a merge reads it, and garbage collection relocates it.
    let mut refs_in: Vec<crate::sst::blob::BlobRef> = Vec::new();
    let has_merge = group.iter().any(|v| v.kind == ValueKind::Merge);
    for v in group.iter_mut().filter(|v| v.kind == ValueKind::BlobIndex) {
        let r = crate::sst::blob::BlobRef::decode(&v.value)?;
        refs_in.push(r);
        if retention.is_some() || has_merge || spec.blob_gc_files.contains(&r.file) {
            v.value = env.tables.blobs().get(&r)?;
            v.kind = ValueKind::Put;
            res.blob_relocated += spec.blob_gc_files.contains(&r.file) as u64;
        }
    }
    // The lifecycle rule (design.md#compaction-filters): only the newest version, and only
    // when no live snapshot can see it. An expired one becomes a tombstone at its sequence.
    let unseen = |seq: u64| spec.snapshots.last().is_none_or(|&s| seq > s);
    let head_kind = group[0].kind;
    // Among the versions only the current state reads, the first expired one reads as a
    // tombstone (src/db/ttl.rs), so it becomes one: operands above it then never merge onto
    // what it hides.
    if let Some(r) = retention.filter(|r| r.ttl_ms.is_some()) {
        for v in group.iter_mut().take_while(|v| unseen(v.seq)) {
            if matches!(v.kind, ValueKind::Put | ValueKind::Merge) && r.expired(&v.value) {
                v.kind = ValueKind::Delete;
                v.value.clear();
                break;
            }
        }
    }
    let single = group.len() == 1 && covering.is_empty();
    let lone = matches!(group[0].kind, ValueKind::Put | ValueKind::Delete | ValueKind::BlobIndex);
    let mut keep = if single && lone {
        // The common case, without collapse's allocations: a lone Put is the newest version
        // and stays; a lone Delete stays unless nothing older exists (bottommost), exactly
        // what `collapse` keeps of a single version.
        if group[0].kind == ValueKind::Delete && spec.bottommost {
            group.clear();
        }
        std::mem::take(group)
    } else {
        let mut versions = std::mem::take(group);
        if !covering.is_empty() {
            versions.retain(|v| {
                let oldest_reader =
                    spec.snapshots.range(v.seq..).next().copied().unwrap_or(u64::MAX);
                !covered_at(v.seq, oldest_reader)
            });
        }
        let op = match retention.and_then(|r| r.ttl_ms) {
            Some(_) => spec.ttl_merge_operator.as_deref(),
            None => spec.merge_operator.as_deref(),
        };
        collapse(user_key, versions, &spec.snapshots, spec.bottommost, op)
    };
    if let (Some(r), Some(v)) = (retention, keep.first_mut()) {
        if v.kind == ValueKind::Put && unseen(v.seq) {
            let kind = match head_kind {
                ValueKind::Merge => EntryKind::MergeResult,
                _ => EntryKind::Value,
            };
            match r.decide(spec.output_level, user_key, &v.value, kind) {
                Decision::Keep => {}
                Decision::Change(value) => v.value = value,
                Decision::Remove => {
                    // A tombstone, not nothing: an older version below must stay hidden.
                    v.kind = ValueKind::Delete;
                    v.value.clear();
                    if spec.bottommost {
                        while keep.last().is_some_and(|v| v.kind == ValueKind::Delete) {
                            keep.pop();
                        }
                    }
                }
            }
        }
    }
    // References written again as they are stay live; the rest are garbage.
    for v in keep.iter().filter(|v| v.kind == ValueKind::BlobIndex) {
        let r = crate::sst::blob::BlobRef::decode(&v.value)?;
        if let Some(i) = refs_in.iter().position(|x| *x == r) {
            refs_in.swap_remove(i);
        }
    }
    for r in refs_in {
        let g = res.blob_garbage.entry(r.file).or_default();
        g.0 += 1;
        g.1 += r.size;
    }
    if keep.is_empty() {
        *group = keep; // its allocation is reused for the next key
        return Ok(());
    }
    if spec.bottommost {
        zero_sequence_of_oldest(&mut keep, &spec.snapshots);
    }
    let crossed = out.passes_grandparent_start(&spec.grandparent_starts, user_key);
    if out.builder.as_ref().is_some_and(|(b, _, _)| {
        let size = b.estimated_size();
        size >= spec.target_file_size || (crossed && size >= spec.target_file_size / 2)
    }) {
        out.finish(env, spec, metas, res, false)?;
    }
    if out.builder.is_none() {
        out.start(env, spec, made)?;
    }
    out.last_key.clear();
    out.last_key.extend_from_slice(user_key);
    let keyspace = out.keyspace;
    let (b, _, _) = out.builder.as_mut().expect("just made");
    let k = &mut out.key_buf;
    let threshold = spec.layout(keyspace).blob_threshold;
    for mut v in keep.drain(..) {
        if v.kind == ValueKind::Put && threshold.is_some_and(|t| v.value.len() >= t as usize) {
            let w = match &mut out.blob {
                Some(w) => w,
                none => {
                    let number = (env.new_file_number)();
                    made.lock().push(number);
                    let w = crate::sst::blob::BlobWriter::create(
                        env.storage,
                        env.dir,
                        number,
                        keyspace,
                    )?;
                    none.insert(w)
                }
            };
            let r = w.add(user_key, &v.value)?;
            v.value.clear();
            r.encode_into(&mut v.value);
            v.kind = ValueKind::BlobIndex;
        }
        k.clear();
        ikey::encode_in_into(k, keyspace, user_key, v.seq, v.kind);
        b.add(k, &v.value)?;
        res.entries_out += 1;
        if out.spare.len() < SPARE_BUFFERS {
            out.spare.push(v.value);
        }
    }
    *group = keep; // empty; its allocation is reused for the next key
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::key_head;
    use crate::compaction::collapse::Version;
    use crate::ikey::{self, ValueKind};
    use std::collections::BTreeSet;

    #[test]
    fn only_the_oldest_put_that_every_reader_sees_goes_to_sequence_zero() {
        let v = |seq, kind| Version { seq, kind, value: Vec::new() };
        let zeroed = |keep: &[Version], snaps: &[u64]| {
            let mut keep = keep.to_vec();
            super::zero_sequence_of_oldest(
                &mut keep,
                &snaps.iter().copied().collect::<BTreeSet<_>>(),
            );
            keep.iter().map(|v| v.seq).collect::<Vec<_>>()
        };
        assert_eq!(zeroed(&[v(9, ValueKind::Put)], &[]), [0]);
        assert_eq!(zeroed(&[v(9, ValueKind::BlobIndex)], &[9]), [0], "a snapshot at it sees it");
        assert_eq!(zeroed(&[v(9, ValueKind::Put)], &[8]), [9], "a snapshot below must not");
        assert_eq!(zeroed(&[v(9, ValueKind::Put), v(5, ValueKind::Put)], &[7]), [9, 0]);
        assert_eq!(zeroed(&[v(9, ValueKind::Merge)], &[]), [9], "an operand without its base");
        assert_eq!(zeroed(&[v(9, ValueKind::Delete)], &[]), [9]);
    }

    #[test]
    fn the_grandparent_cursor_reports_each_start_passed_once_within_the_keyspace() {
        let none = crate::range_del::Fragments::default();
        let mut out = super::Output {
            builder: None,
            range: 0,
            keyspace: 1,
            fallback: Default::default(),
            tombstones: &none,
            all_tombstones: &none,
            lower: None,
            upper: None,
            last_key: Vec::new(),
            next_grandparent: 0,
            key_buf: Vec::new(),
            spare: Vec::new(),
            blob: None,
        };
        // Keyspace 0's files come before keyspace 1's in file order: all passed at the first
        // key of keyspace 1, as is "c" when the first key is "d".
        let starts: Vec<(u32, Vec<u8>)> = [(0, "x"), (1, "c"), (1, "f"), (1, "m"), (2, "a")]
            .iter()
            .map(|&(ks, k)| (ks, k.as_bytes().to_vec()))
            .collect();
        let mut pass = |k: &str| out.passes_grandparent_start(&starts, k.as_bytes());
        assert!(pass("d"));
        assert!(!pass("e"));
        assert!(pass("f"), "a key equal to a start passes it");
        assert!(!pass("g"));
        assert!(pass("z"), "past m");
        assert!(!pass("zz"), "keyspace 2's start is past every key of keyspace 1");
    }

    #[test]
    fn unequal_heads_order_keys_as_the_full_comparison_does() {
        // Short keys over a small alphabet with 0 in it, so prefixes, zero bytes and padding
        // all meet; every pair with unequal heads must agree with ikey::compare.
        let mut rng = crate::rng::SplitMix64::new(5);
        let keys: Vec<Vec<u8>> = (0..400)
            .map(|i| {
                let len = rng.below(12) as usize;
                let user: Vec<u8> =
                    (0..len).map(|_| [0u8, 1, 0x7f, 0xff][rng.below(4) as usize]).collect();
                ikey::encode(&user, i, ValueKind::Put)
            })
            .collect();
        let mut decided = 0;
        for a in &keys {
            for b in &keys {
                let (ha, hb) = (key_head(a), key_head(b));
                if ha != hb {
                    decided += 1;
                    assert_eq!(ha.cmp(&hb), ikey::compare(a, b), "{a:?} {b:?}");
                }
            }
        }
        assert!(decided > 100_000, "the heads decided only {decided} pairs");
    }
}
