//! The `ingest` benchmark (siftdb-bench-kit's `ingest` plan, the same work as rocksdb-bench's
//! `SstFileWriter` + `IngestExternalFile`): `--num` keys in key order, `--ingest_keys_per_file`
//! per `SstWriter` file, then all files ingested in one `Db::ingest` that moves them in. One
//! result line (`ingest`, write and ingestion together) and the plan's `ingest parts` note.

use super::report::ThreadStats;
use super::workloads::Ctx;
use siftdb::{Error, IngestMode, IngestOptions, Result};
use siftdb_bench_kit::ingest::IngestPlan;
use siftdb_bench_kit::keys::ValueGen;
use std::path::Path;
use std::time::Instant;

/// Runs the benchmark against `ctx.db` (fresh), writing its files in a new temporary directory
/// beside `db_dir` (the same file system, so the ingestion moves them by link), removed after.
pub fn run(ctx: &mut Ctx<'_>, db_dir: &Path) -> Result<(ThreadStats, Option<String>)> {
    let f = ctx.flags;
    let plan = IngestPlan::new(f.num, f.ingest_keys_per_file).map_err(Error::InvalidArgument)?;
    let parent = db_dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix("siftdb-bench-ingest")
        .tempdir_in(parent)
        .map_err(|e| Error::io(format!("creating a directory in {}", parent.display()), e))?;
    let mut values = ValueGen::new(ctx.next_seed, f.value_size);
    ctx.next_seed += 1;
    let layout = ctx.layout();
    let mut st = ThreadStats::start();
    let write_start = Instant::now();
    let mut files = Vec::new();
    let mut key = Vec::with_capacity(f.key_size);
    for numbers in plan.files() {
        let path = tmp.path().join(format!("{:06}.sst", files.len()));
        let mut w = ctx.db.sst_writer(&path)?;
        for v in numbers {
            layout.key(v, f.key_size, &mut key);
            w.put(&key, values.next(f.value_size))?;
            st.bytes += (f.key_size + f.value_size) as u64;
        }
        w.finish()?;
        files.push(path);
    }
    let write_secs = write_start.elapsed().as_secs_f64();
    let ingest_start = Instant::now();
    if !files.is_empty() {
        ctx.db.ingest(&files, IngestOptions::with_mode(IngestMode::Move))?;
    }
    let ingest_secs = ingest_start.elapsed().as_secs_f64();
    st.stop();
    st.done = f.num;
    Ok((st, Some(plan.line(write_secs, ingest_secs, files.len()))))
}
