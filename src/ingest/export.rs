//! `Db::export`: the live data of a key range at one moment, written as [`SstWriter`] files
//! ready for `Db::ingest` (design.md#ingestion-and-export). One iterator streams the range
//! (merges resolved, tombstones dropped), so memory stays at one output file's builder.

use super::sst_writer::{SstFileInfo, SstWriter};
use crate::db::read::ReadAt;
use crate::db::DbInner;
use crate::error::{Error, Result};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options of [`crate::Db::export`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Bytes at which an output file is cut (`None`: `CompactionOptions::target_file_size`).
    pub target_file_size: Option<u64>,
}

impl ExportOptions {
    /// Options cutting output files at `bytes`.
    pub fn with_target_file_size(bytes: u64) -> ExportOptions {
        ExportOptions { target_file_size: Some(bytes) }
    }
}

/// What [`crate::Db::export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportReport {
    /// The files, in key order (named `000001.sst`, `000002.sst`, ... in the directory).
    pub files: Vec<SstFileInfo>,
    /// Keys written.
    pub keys: u64,
    /// Bytes of the files.
    pub bytes: u64,
}

/// `Db::export` / `Keyspace::export` of `range` of `keyspace` into `dir`.
pub(crate) fn export<K: AsRef<[u8]>, R: RangeBounds<K>>(
    inner: &Arc<DbInner>,
    keyspace: u32,
    range: R,
    dir: &Path,
    opts: &ExportOptions,
) -> Result<ExportReport> {
    inner.life.check_open()?;
    let storage = inner.storage.clone();
    let created_dir = !storage.exists(dir)?;
    if created_dir {
        crate::storage::create_dir_all_durably(&*storage, dir)?;
    } else {
        let names = storage.list(dir)?;
        if let Some(name) = names.first() {
            return Err(Error::invalid(format!(
                "export: {} is not empty (it holds {name:?} and {} more): export writes only \
                 into an empty or new directory",
                dir.display(),
                names.len() - 1
            )));
        }
    }
    let mut made: Vec<PathBuf> = Vec::new();
    let r = write_files(inner, keyspace, range, dir, opts, &mut made);
    if r.is_err() {
        for p in &made {
            let _ = storage.remove(p);
        }
        if created_dir {
            let _ = storage.remove_dir(dir);
        }
    }
    r
}

fn write_files<K: AsRef<[u8]>, R: RangeBounds<K>>(
    inner: &Arc<DbInner>,
    keyspace: u32,
    range: R,
    dir: &Path,
    opts: &ExportOptions,
    made: &mut Vec<PathBuf>,
) -> Result<ExportReport> {
    let target = opts.target_file_size.unwrap_or(inner.opts.compaction.target_file_size).max(1);
    let read = crate::ReadOptions { fill_cache: false, ..Default::default() };
    let iter = crate::db::DbIterator::new(inner.clone(), keyspace, &range, ReadAt::Latest, &read)?;
    let set = inner.keyspaces.load_full();
    let ttl = crate::db::ttl::ttl_ms(&inner.opts, &set, keyspace);
    let mut writer = |n: usize| -> Result<SstWriter> {
        let path = dir.join(format!("{n:06}.sst"));
        let write_time = ttl.map(|_| crate::db::ttl::now_ms(&inner.opts));
        let config = super::bottom_config(inner, &set, keyspace, write_time);
        let w = SstWriter::with_config(&path, config)?;
        made.push(path);
        Ok(w)
    };
    let mut report = ExportReport { files: Vec::new(), keys: 0, bytes: 0 };
    let mut out: Option<SstWriter> = None;
    for kv in iter {
        let (k, v) = kv?;
        if out.is_none() {
            out = Some(writer(report.files.len() + 1)?);
        }
        let w = out.as_mut().expect("set above");
        w.put(&k, &v)?;
        report.keys += 1;
        if w.estimated_size() >= target {
            let info = out.take().expect("set above").finish()?;
            report.bytes += info.file_size;
            report.files.push(info);
        }
    }
    if let Some(w) = out.take() {
        let info = w.finish()?;
        report.bytes += info.file_size;
        report.files.push(info);
    }
    Ok(report)
}
