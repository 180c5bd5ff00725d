//! Running one compaction: merge the input tables in internal-key order, keep the versions
//! someone can still see, write outputs cut at the target file size, each with its level's
//! filter built once from the user-key hashes collected while it was written.
//!
//! Which versions survive (for each user key, newest first): the newest one (what the current
//! state sees), and for each live snapshot `s` the newest version with sequence `<= s`. Any
//! other version is invisible to every reader now and later (a new snapshot sees the newest).
//! At the bottom (no deeper level overlaps the compaction), a tombstone that is the oldest
//! surviving version hides nothing and is dropped; so is the tombstone left oldest after that.
//! Merge operands are kept down to their base or collapsed with the operator
//! (`collapse.rs`, which implements all of this rule).
//!
//! Outputs are cut only between user keys, so the files of a level never share a user key and
//! their ranges stay disjoint; they are always cut where the keyspace changes, so a file holds
//! one keyspace, and each is written with its keyspace's block layout and filter. The files are synced, then the directory; nothing is installed
//! here: the caller makes one manifest edit for the whole compaction.

use super::collapse::{collapse, Version};
use super::filter::{build_filter, LevelFilter};
use crate::error::Result;
use crate::filename;
use crate::ikey;
use crate::manifest::FileMeta;
use crate::sst::{FilterBlockSource, TableBuilder, TableIter, TableOptions};
use crate::storage::Storage;
use crate::table_cache::TableCache;
use crate::version::TableFile;
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
    pub new_file_number: &'a dyn Fn() -> u64,
    /// The table cache: opens the inputs as the merge reaches them, and the finished outputs.
    pub tables: &'a Arc<TableCache>,
}

/// How the outputs of one keyspace are written.
#[derive(Debug, Clone, Copy)]
pub struct OutputLayout {
    /// Block layout.
    pub table: TableOptions,
    /// Filter.
    pub filter: LevelFilter,
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
}

/// A run of disjoint tables read in order.
struct RunIter {
    files: Vec<Arc<TableFile>>,
    next: usize,
    iter: Option<TableIter>,
}

impl RunIter {
    /// Moves to the next table while the current one is exhausted.
    fn settle(&mut self) -> Result<()> {
        while !self.iter.as_ref().is_some_and(|i| i.valid()) {
            let Some(f) = self.files.get(self.next) else {
                self.iter = None;
                return Ok(());
            };
            // The previous table's iterator is dropped here, releasing its handle first.
            self.iter = None;
            let mut it = f.table()?.iter(false);
            it.seek_to_first()?;
            self.iter = Some(it);
            self.next += 1;
        }
        Ok(())
    }

    fn key(&self) -> Option<&[u8]> {
        self.iter.as_ref().filter(|i| i.valid()).map(|i| i.key())
    }
}

/// Runs the compaction. On error, outputs already written are removed (best effort; any left
/// are orphans the next open deletes).
pub fn run(env: &JobEnv<'_>, spec: JobSpec) -> Result<JobResult> {
    let mut made: Vec<u64> = Vec::new();
    let r = run_inner(env, spec, &mut made);
    if r.is_err() {
        for n in made {
            env.tables.evict(n);
            let _ = env.storage.remove(&env.dir.join(filename::sst_name(n)));
        }
    }
    r
}

fn run_inner(env: &JobEnv<'_>, mut spec: JobSpec, made: &mut Vec<u64>) -> Result<JobResult> {
    let mut res = JobResult {
        bytes_read: spec.runs.iter().flatten().map(|f| f.meta.size).sum(),
        ..JobResult::default()
    };
    let mut runs: Vec<RunIter> = std::mem::take(&mut spec.runs)
        .into_iter()
        .map(|files| RunIter { files, next: 0, iter: None })
        .collect();
    for r in &mut runs {
        r.settle()?;
    }
    let mut out = Output { builder: None, fallback: Arc::new(AtomicBool::new(false)) };
    let mut metas: Vec<FileMeta> = Vec::new();
    let mut group: Vec<Version> = Vec::new();
    let mut group_key: Vec<u8> = Vec::new();
    let mut group_ks: u32 = 0;
    loop {
        // The smallest current key among the runs (internal-key order; few runs, linear scan).
        let mut best: Option<usize> = None;
        for (i, r) in runs.iter().enumerate() {
            if let Some(k) = r.key() {
                if best.is_none_or(|b| ikey::compare(k, runs[b].key().expect("valid")).is_lt()) {
                    best = Some(i);
                }
            }
        }
        let Some(b) = best else { break };
        let it = runs[b].iter.as_mut().expect("valid");
        let (keyspace, user_key, seq, kind) = ikey::decode_in(it.key())?;
        res.entries_in += 1;
        if (keyspace, user_key) != (group_ks, group_key.as_slice()) && !group.is_empty() {
            let key = (group_ks, group_key.as_slice());
            emit(env, &spec, key, &mut group, &mut out, &mut metas, made, &mut res)?;
        }
        if group.is_empty() {
            group_key.clear();
            group_key.extend_from_slice(user_key);
            group_ks = keyspace;
        }
        group.push(Version { seq, kind, value: it.value().to_vec() });
        it.next()?;
        runs[b].settle()?;
    }
    if !group.is_empty() {
        let key = (group_ks, group_key.as_slice());
        emit(env, &spec, key, &mut group, &mut out, &mut metas, made, &mut res)?;
    }
    out.finish(env, &spec, &mut metas, &mut res)?;
    // The outputs' entries are durable before the manifest edit names them.
    if crate::testing::enabled("compaction.sync_dir") {
        env.storage.sync_dir(env.dir)?;
    }
    for meta in metas {
        let table = env.tables.open(meta.number)?;
        res.bytes_written += meta.size;
        res.outputs.push(Arc::new(TableFile::new(meta, &table, env.tables.clone())));
    }
    Ok(res)
}

/// The output file being written.
struct Output {
    /// The builder, its file number and its keyspace.
    builder: Option<(TableBuilder, u64, u32)>,
    fallback: Arc<AtomicBool>,
}

impl Output {
    fn finish(
        &mut self,
        _env: &JobEnv<'_>,
        spec: &JobSpec,
        metas: &mut Vec<FileMeta>,
        res: &mut JobResult,
    ) -> Result<()> {
        let Some((builder, number, keyspace)) = self.builder.take() else { return Ok(()) };
        let lf = spec.layout(keyspace).filter;
        let fallback = self.fallback.clone();
        fallback.store(false, Ordering::Relaxed);
        let source = if lf.kind == crate::options::StaticFilterKind::None {
            FilterBlockSource::None
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
        });
        Ok(())
    }
}

/// Writes the surviving versions of one user key (module documentation) and clears `group`.
#[allow(clippy::too_many_arguments)]
fn emit(
    env: &JobEnv<'_>,
    spec: &JobSpec,
    (keyspace, user_key): (u32, &[u8]),
    group: &mut Vec<Version>,
    out: &mut Output,
    metas: &mut Vec<FileMeta>,
    made: &mut Vec<u64>,
    res: &mut JobResult,
) -> Result<()> {
    let keep = collapse(
        user_key,
        std::mem::take(group),
        &spec.snapshots,
        spec.bottommost,
        spec.merge_operator.as_deref(),
    );
    if keep.is_empty() {
        return Ok(());
    }
    let full = |b: &TableBuilder| b.estimated_size() >= spec.target_file_size;
    if out.builder.as_ref().is_some_and(|(b, _, ks)| full(b) || *ks != keyspace) {
        out.finish(env, spec, metas, res)?;
    }
    if out.builder.is_none() {
        let number = (env.new_file_number)();
        made.push(number);
        let file = env.storage.create_immutable(&env.dir.join(filename::sst_name(number)))?;
        let table = spec.layout(keyspace).table;
        let mut builder = TableBuilder::new(file, table)?;
        builder.set_merge_operator(&spec.merge_operator_name);
        out.builder = Some((builder, number, keyspace));
    }
    let (b, _, _) = out.builder.as_mut().expect("just made");
    let mut k = Vec::with_capacity(user_key.len() + ikey::KEYSPACE_LEN + ikey::TRAILER_LEN);
    for v in keep {
        k.clear();
        ikey::encode_in_into(&mut k, keyspace, user_key, v.seq, v.kind);
        b.add(&k, &v.value)?;
        res.entries_out += 1;
    }
    Ok(())
}
