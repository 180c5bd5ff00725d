//! The `ingest` benchmark (a bulk load, as db_bench's `fillseq` with `SstFileWriter` and
//! `IngestExternalFile` would be): `--num` keys in key order written by one `SstWriter` into
//! files cut at `--target_file_size_base`, then all ingested in one `Db::ingest` (moved into
//! the database). Three result lines: `ingestwrite` (the files), `ingestload` (the ingestion,
//! keys per second) and `ingest` (both).

use super::report::ThreadStats;
use super::workloads::Ctx;
use siftdb::{Error, IngestMode, IngestOptions, Result};
use siftdb_bench_kit::keys::ValueGen;
use std::path::Path;

/// Runs the benchmark against `ctx.db` (fresh), writing its files in a new temporary directory
/// beside `db_dir` (the same file system, so the ingestion moves them by link), removed after.
pub fn run(ctx: &mut Ctx<'_>, db_dir: &Path, target_file_size: u64) -> Result<[ThreadStats; 3]> {
    let f = ctx.flags;
    let parent = db_dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix("siftdb-bench-ingest")
        .tempdir_in(parent)
        .map_err(|e| Error::io(format!("creating a directory in {}", parent.display()), e))?;
    let mut values = ValueGen::new(ctx.next_seed, f.value_size);
    ctx.next_seed += 1;
    let layout = ctx.layout();
    let mut write = ThreadStats::start();
    let mut files = Vec::new();
    let mut w: Option<siftdb::SstWriter> = None;
    let mut key = Vec::with_capacity(f.key_size);
    for i in 0..f.num {
        if w.is_none() {
            let path = tmp.path().join(format!("{:06}.sst", files.len()));
            w = Some(ctx.db.sst_writer(&path)?);
            files.push(path);
        }
        let writer = w.as_mut().expect("set above");
        layout.key(i, f.key_size, &mut key);
        writer.put(&key, values.next(f.value_size))?;
        write.bytes += (f.key_size + f.value_size) as u64;
        write.done += 1;
        if writer.estimated_size() >= target_file_size {
            w.take().expect("set above").finish()?;
        }
    }
    if let Some(writer) = w.take() {
        writer.finish()?;
    }
    write.stop();
    let mut load = ThreadStats::start();
    if !files.is_empty() {
        ctx.db.ingest(&files, IngestOptions::with_mode(IngestMode::Move))?;
    }
    load.stop();
    load.done = f.num;
    load.bytes = write.bytes;
    let mut total = write.clone();
    total.finish = load.finish;
    total.seconds = write.seconds + load.seconds;
    Ok([write, load, total])
}
