//! Bulk data in and out (design.md#ingestion-and-export): [`SstWriter`] writes a sorted run of
//! one keyspace into a standalone table, [`crate::Db::ingest`] makes such tables part of the
//! tree in one manifest edit at a global sequence number, and [`crate::Db::export`] writes the
//! live data of a key range as such tables.

mod export;
#[allow(clippy::module_inception)]
mod ingest;
mod sst_writer;

pub use export::{ExportOptions, ExportReport};
pub use ingest::{IngestCheck, IngestMode, IngestOptions, IngestReport, IngestedFile};
pub use sst_writer::{SstFileInfo, SstWriter};

use crate::db::keyspace::Layout;
use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::filter_plan::{TreeShape, Writes};
use crate::limits::NUM_LEVELS;
use crate::{Db, Keyspace};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The tree as it is, where a new file's bottommost-level filter is planned.
fn bottom_shape(inner: &DbInner) -> TreeShape {
    let v = inner.super_version().version.clone();
    let l0 = crate::db::plan::l0_runs_beside(&v, 0, 0);
    crate::db::plan::live_shape(inner, &v, l0, Writes::Settled)
}

/// A writer for `keyspace` of the database `inner`.
fn writer_for(inner: &Arc<DbInner>, keyspace: u32, path: &Path) -> Result<SstWriter> {
    inner.life.check_open()?;
    let set = inner.keyspaces.load_full();
    if !set.is_live(keyspace) {
        return Err(Error::invalid(format!("keyspace {keyspace} was dropped")));
    }
    let write_time = crate::db::ttl::ttl_ms(&inner.opts, &set, keyspace)
        .map(|_| crate::db::ttl::now_ms(&inner.opts));
    SstWriter::with_config(path, bottom_config(inner, &set, keyspace, write_time))
}

/// A writer's configuration for `keyspace` of the database: its bottom level's table layout
/// and filter plan (bulk loads land at the bottom), values stamped with `write_time` (TTL
/// keyspaces) or kept as they are.
fn bottom_config(
    inner: &DbInner,
    set: &crate::db::keyspace::KeyspaceSet,
    keyspace: u32,
    write_time: Option<u64>,
) -> sst_writer::WriterConfig {
    sst_writer::WriterConfig {
        storage: inner.storage.clone(),
        layout: Layout::of(&inner.opts, set, keyspace, NUM_LEVELS - 1),
        shape: bottom_shape(inner),
        keyspace,
        opts: inner.opts.clone(),
        write_time,
    }
}

fn paths<P: AsRef<Path>>(files: &[P]) -> Vec<PathBuf> {
    files.iter().map(|p| p.as_ref().to_path_buf()).collect()
}

impl Db {
    /// A writer of a table of the default keyspace at `path` (which must not exist), with the
    /// options this database writes its bottommost level with, for [`Db::ingest`].
    pub fn sst_writer(&self, path: impl AsRef<Path>) -> Result<SstWriter> {
        writer_for(self.inner_arc(), crate::ikey::DEFAULT_KEYSPACE, path.as_ref())
    }

    /// Ingests tables written by [`SstWriter`] into the default keyspace: all of them or none,
    /// in one manifest edit, each at the deepest level where it overlaps nothing, read at one
    /// new sequence number newer than every write before (snapshots taken before do not see
    /// them). Every file is checked first (checksums, key order, sequence 0, no overlap between
    /// the files); a bad one is an error and nothing changes (design.md#ingestion-and-export).
    pub fn ingest<P: AsRef<Path>>(&self, files: &[P], opts: IngestOptions) -> Result<IngestReport> {
        ingest::ingest(self.inner_arc(), crate::ikey::DEFAULT_KEYSPACE, &paths(files), &opts)
    }

    /// Writes the live entries of `range` of the default keyspace, as of the call, into new
    /// tables in `dir` (created if missing; refused if it holds any file), cut at
    /// `target_file_size`, ready for [`Db::ingest`] here or in another database. Streams
    /// through one iterator: merges resolved, tombstones dropped.
    pub fn export<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        dir: impl AsRef<Path>,
        opts: &ExportOptions,
    ) -> Result<ExportReport> {
        export::export(self.inner_arc(), crate::ikey::DEFAULT_KEYSPACE, range, dir.as_ref(), opts)
    }
}

impl Keyspace {
    /// [`Db::sst_writer`] for this keyspace.
    pub fn sst_writer(&self, path: impl AsRef<Path>) -> Result<SstWriter> {
        self.check_live()?;
        writer_for(self.inner_arc(), self.id(), path.as_ref())
    }

    /// [`Db::ingest`] into this keyspace. A file written for a keyspace of another id (the
    /// same name in another database) is adopted as it is, its keys read with this keyspace's
    /// id; one written for the default keyspace is rewritten into this one's
    /// (design.md#ingestion-and-export).
    pub fn ingest<P: AsRef<Path>>(&self, files: &[P], opts: IngestOptions) -> Result<IngestReport> {
        self.check_live()?;
        ingest::ingest(self.inner_arc(), self.id(), &paths(files), &opts)
    }

    /// [`Db::export`] of this keyspace.
    pub fn export<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &self,
        range: R,
        dir: impl AsRef<Path>,
        opts: &ExportOptions,
    ) -> Result<ExportReport> {
        self.check_live()?;
        export::export(self.inner_arc(), self.id(), range, dir.as_ref(), opts)
    }
}
