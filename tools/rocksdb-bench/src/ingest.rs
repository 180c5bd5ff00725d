//! The `ingest` benchmark (siftdb-bench-kit's `ingest` plan): `SstFileWriter` files with the
//! database's options, written in key order into the `--db` directory's staging subdirectory,
//! then one `IngestExternalFile` call with `move_files` (hard links, as siftdb's default link
//! mode), RocksDB's recommended bulk-load path.

use crate::engine::STAGING;
use crate::R;
use rocksdb::{IngestExternalFileOptions, Options, SstFileWriter, DB};
use siftdb_bench_kit::ingest::IngestPlan;
use siftdb_bench_kit::key_layout::KeyLayout;
use siftdb_bench_kit::keys::ValueGen;
use siftdb_bench_kit::result_line::ThreadStats as St;
use std::path::Path;
use std::time::Instant;

/// Writes the plan's files and ingests them; the result's time covers both, the note line
/// gives each.
pub fn run(
    f: &crate::flags::Flags,
    dir: &Path,
    db: &DB,
    opts: &Options,
    seed: u64,
) -> R<(St, Option<String>)> {
    let plan = IngestPlan::new(f.num, f.ingest_keys_per_file)?;
    let layout = KeyLayout::new(f.num, f.key_spacing)?;
    let staging = dir.join(STAGING);
    std::fs::create_dir(&staging)
        .map_err(|e| format!("ingest: creating {}: {e}", staging.display()))?;
    let mut st = St::start();
    let write_start = Instant::now();
    let mut values = ValueGen::new(seed, f.value_size);
    let mut key = Vec::with_capacity(f.key_size);
    let mut paths = Vec::new();
    for (i, numbers) in plan.files().enumerate() {
        let path = staging.join(format!("{i:06}.sst"));
        let mut w = SstFileWriter::create(opts);
        w.open(&path)?;
        for v in numbers {
            layout.key(v, f.key_size, &mut key);
            w.put(&key, values.next(f.value_size))?;
            st.bytes += (f.key_size + f.value_size) as u64;
        }
        w.finish()?;
        paths.push(path);
    }
    let write_secs = write_start.elapsed().as_secs_f64();
    let ingest_start = Instant::now();
    let mut io = IngestExternalFileOptions::default();
    io.set_move_files(true);
    db.ingest_external_file_opts(&io, paths.clone())?;
    let ingest_secs = ingest_start.elapsed().as_secs_f64();
    st.stop();
    st.done = f.num;
    // move_files unlinks the sources after a successful ingest; the directory is ours.
    std::fs::remove_dir_all(&staging)?;
    Ok((st, Some(plan.line(write_secs, ingest_secs, paths.len()))))
}
