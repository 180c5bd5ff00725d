//! [`SstWriter`]: writes a sorted run of one keyspace's puts, deletes, merges and range
//! deletions into a standalone table for [`crate::Db::ingest`] (RocksDB's `SstFileWriter`).
//!
//! The table is the engine's own (src/sst/builder.rs), written with the options the keyspace's
//! bottommost level gets (block size, compression, the filter of the bottommost level's plan):
//! a bulk load lands at the bottom of the tree. Every entry is stored at sequence number 0 and
//! read at the global sequence number the ingestion assigns (design.md#ingestion-and-export).

use crate::compaction::filter::build_filter;
use crate::db::keyspace::Layout;
use crate::error::{Error, Result};
use crate::filter_plan::{TreeShape, Writes};
use crate::ikey::{self, ValueKind};
use crate::limits::NUM_LEVELS;
use crate::options::{Options, StaticFilterKind};
use crate::range_del::RangeTombstone;
use crate::sst::{FilterBlockSource, PartitionedFilterSource, ScanFilterSpec, TableBuilder};
use crate::storage::Storage;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a finished [`SstWriter`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstFileInfo {
    /// The file.
    pub path: PathBuf,
    /// Smallest user key (range deletions' starts included).
    pub smallest_key: Vec<u8>,
    /// Largest user key (covering the range deletions' extents, as the manifest records it).
    pub largest_key: Vec<u8>,
    /// Point entries (puts, deletes, merges).
    pub entries: u64,
    /// Range deletions as written (before fragmentation).
    pub range_deletions: u64,
    /// File size in bytes.
    pub file_size: u64,
}

/// Everything an [`SstWriter`] is configured with.
pub(crate) struct WriterConfig {
    pub storage: Arc<dyn Storage>,
    pub layout: Layout,
    /// The tree the bottommost level's filter is planned in (the file's own keys are added
    /// to that level at `finish`, as a compaction weighs its output level).
    pub shape: TreeShape,
    pub keyspace: u32,
    pub opts: Options,
    /// The write time stamped on values of a TTL keyspace (design.md#ttl).
    pub write_time: Option<u64>,
}

/// Writes one table for ingestion: keys strictly increasing across `put`, `delete` and
/// `merge`, range deletions in any order. See the module documentation.
///
/// ```
/// use siftdb::{Db, IngestOptions, Options};
///
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path().join("db"), Options::default())?;
/// let mut w = db.sst_writer(dir.path().join("load.sst"))?;
/// w.put("a", "1")?;
/// w.put("b", "2")?;
/// w.finish()?;
/// db.ingest(&[dir.path().join("load.sst")], IngestOptions::default())?;
/// assert_eq!(db.get("b")?, Some(b"2".to_vec()));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct SstWriter {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    /// `None` once finished (or after a failed finish, which removed the file).
    builder: Option<TableBuilder>,
    keyspace: u32,
    policy: crate::options::FilterPolicy,
    shape: TreeShape,
    partition_bytes: Option<usize>,
    opts: Options,
    write_time: Option<u64>,
    last_key: Option<Vec<u8>>,
    entries: u64,
    range_deletions: u64,
    key_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl std::fmt::Debug for SstWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstWriter")
            .field("path", &self.path)
            .field("keyspace", &self.keyspace)
            .field("entries", &self.entries)
            .finish()
    }
}

/// An empty tree under `opts`: where a writer without a database plans its filter.
fn standalone_shape(opts: &Options) -> TreeShape {
    let counts = crate::filter_plan::shape::LevelCounts {
        entries: vec![0; NUM_LEVELS],
        bytes: vec![0; NUM_LEVELS],
    };
    crate::filter_plan::tree_shape(&opts.compaction, &counts, (0, 0), vec![], Writes::Settled)
}

impl SstWriter {
    /// A writer of a table of the default keyspace at `path` (which must not exist), with
    /// `opts` as a database opened with them would write its bottommost level (the filter is
    /// planned for an empty tree). `opts` are checked as [`crate::Db::open`] checks them.
    pub fn create(path: impl AsRef<Path>, opts: &Options) -> Result<SstWriter> {
        opts.validate()?;
        let storage: Arc<dyn Storage> = opts
            .storage
            .clone()
            .unwrap_or_else(|| Arc::new(crate::storage::FsStorage::with_mmap(false)));
        let layout = Layout {
            table: crate::sst::TableOptions::for_output(opts, NUM_LEVELS - 1, true),
            policy: opts.filter_policy.clone(),
            // An external file holds its values inline; the ingesting database keeps them so.
            blob_threshold: None,
        };
        let shape = standalone_shape(opts);
        let write_time = opts.ttl.map(|_| crate::db::ttl::now_ms(opts));
        let config = WriterConfig {
            storage,
            layout,
            shape,
            keyspace: ikey::DEFAULT_KEYSPACE,
            opts: opts.clone(),
            write_time,
        };
        SstWriter::with_config(path.as_ref(), config)
    }

    /// A writer configured by a database (`Db::sst_writer`, `Keyspace::sst_writer`).
    pub(crate) fn with_config(path: &Path, c: WriterConfig) -> Result<SstWriter> {
        if c.storage.exists(path)? {
            return Err(Error::invalid(format!(
                "{} exists: an SstWriter only creates new files",
                path.display()
            )));
        }
        let file = c.storage.create(path)?;
        let mut builder = match TableBuilder::new(file, c.layout.table) {
            Ok(b) => b,
            Err(e) => {
                let _ = c.storage.remove(path);
                return Err(e);
            }
        };
        builder.set_keyspace(c.keyspace);
        builder.set_scan_filters(ScanFilterSpec::of(&c.opts));
        builder.set_merge_operator(c.opts.merge_operator.as_ref().map_or("", |op| op.name()));
        builder.set_write_times(c.write_time.is_some());
        if c.opts.partition_index {
            builder.partition_index(c.opts.metadata_block_size);
        }
        Ok(SstWriter {
            storage: c.storage,
            path: path.to_path_buf(),
            builder: Some(builder),
            keyspace: c.keyspace,
            policy: c.layout.policy.clone(),
            shape: c.shape,
            partition_bytes: c.opts.partition_filters.then_some(c.opts.metadata_block_size),
            write_time: c.write_time,
            opts: c.opts,
            last_key: None,
            entries: 0,
            range_deletions: 0,
            key_buf: Vec::new(),
            value_buf: Vec::new(),
        })
    }

    /// Adds `key -> value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Put, value.as_ref())
    }

    /// Adds a tombstone of `key` (it deletes older versions in the database ingesting it).
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Delete, &[])
    }

    /// Adds a merge operand for `key` (needs `Options::merge_operator`, as `Db::merge` does).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        if self.opts.merge_operator.is_none() {
            return Err(Error::invalid(
                "a merge needs a merge operator, and Options::merge_operator is None",
            ));
        }
        self.add(key.as_ref(), ValueKind::Merge, operand.as_ref())
    }

    /// Adds a range deletion of `[start, end)` (any order relative to other calls). It deletes
    /// the database's older versions in the range, not this file's own entries: those are as
    /// new as the deletion.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (start, end) = (start.as_ref(), end.as_ref());
        if start >= end {
            return Err(Error::invalid(format!(
                "delete_range start {:?} is not below end {:?}",
                start.escape_ascii().to_string(),
                end.escape_ascii().to_string()
            )));
        }
        check_key(start)?;
        check_key(end)?;
        let b = self.builder_mut()?;
        b.add_range_tombstone(RangeTombstone { start: start.to_vec(), end: end.to_vec(), seq: 0 })?;
        self.range_deletions += 1;
        Ok(())
    }

    /// Point entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Bytes the file would have if finished now, without its filter, index and properties
    /// (what an exporter cuts files at).
    pub fn estimated_size(&self) -> u64 {
        self.builder.as_ref().map_or(0, |b| b.estimated_size())
    }

    fn builder_mut(&mut self) -> Result<&mut TableBuilder> {
        self.builder.as_mut().ok_or_else(|| Error::invalid("SstWriter used after a failed write"))
    }

    fn add(&mut self, key: &[u8], kind: ValueKind, value: &[u8]) -> Result<()> {
        check_key(key)?;
        if value.len() > crate::MAX_VALUE_SIZE {
            return Err(Error::invalid(format!(
                "value of {} bytes exceeds MAX_VALUE_SIZE ({})",
                value.len(),
                crate::MAX_VALUE_SIZE
            )));
        }
        if let Some(last) = &self.last_key {
            if key <= last.as_slice() {
                return Err(Error::invalid(format!(
                    "SstWriter entry {}: key {:?} is not greater than the previous key {:?} \
                     (keys must be strictly increasing)",
                    self.entries,
                    key.escape_ascii().to_string(),
                    last.escape_ascii().to_string()
                )));
            }
        }
        self.vet_prefix(key)?;
        let mut k = std::mem::take(&mut self.key_buf);
        k.clear();
        ikey::encode_in_into(&mut k, self.keyspace, key, 0, kind);
        let stamped = match (self.write_time, kind) {
            (Some(t), ValueKind::Put | ValueKind::Merge) => {
                self.value_buf.clear();
                self.value_buf.extend_from_slice(value);
                self.value_buf.extend_from_slice(&t.to_le_bytes());
                true
            }
            _ => false,
        };
        let value_buf = std::mem::take(&mut self.value_buf);
        let v = if stamped { value_buf.as_slice() } else { value };
        let r = self.builder_mut().and_then(|b| b.add(&k, v));
        self.value_buf = value_buf;
        self.key_buf = k;
        r?;
        match &mut self.last_key {
            Some(l) => {
                l.clear();
                l.extend_from_slice(key);
            }
            None => self.last_key = Some(key.to_vec()),
        }
        self.entries += 1;
        Ok(())
    }

    /// Runs the prefix extractor (user code) on `key` under `catch_unwind`, as the write path
    /// does (src/db/write.rs `vet_user_code`): the builder will call it for the prefix filter.
    fn vet_prefix(&self, key: &[u8]) -> Result<()> {
        let Some(extractor) = self.opts.prefix_extractor.as_deref() else { return Ok(()) };
        let call = std::panic::AssertUnwindSafe(|| extractor.prefix(key).map(<[u8]>::len));
        std::panic::catch_unwind(call).map(|_| ()).map_err(|payload| {
            Error::invalid(format!(
                "the prefix extractor {:?} panicked on key {:?} ({})",
                extractor.name(),
                key.escape_ascii().to_string(),
                crate::db::panic_message(payload.as_ref())
            ))
        })
    }

    /// Writes the filter, index, properties and footer and syncs the file and its directory.
    /// A writer with no entry and no range deletion is [`Error::InvalidArgument`] (its file is
    /// removed).
    pub fn finish(mut self) -> Result<SstFileInfo> {
        if self.entries == 0 && self.range_deletions == 0 {
            return Err(Error::invalid(format!(
                "SstWriter for {} finished with no entry: an empty table cannot be ingested",
                self.path.display()
            )));
        }
        let builder = self.builder.take().expect("present until finish");
        // Planned with the file's keys in the bottommost level (compaction weighs its output
        // level at least at the keys it writes there: src/db/compact.rs `run_pick`).
        let level = NUM_LEVELS - 1;
        let mut shape = self.shape.clone();
        if let Some(keys) = shape.levels.get_mut(level) {
            *keys = keys.max(self.entries as f64);
        }
        let lf = crate::filter_plan::level_filter(&self.policy, level, &shape);
        let source = if lf.kind == StaticFilterKind::None {
            FilterBlockSource::None
        } else if let Some(partition_bytes) = self.partition_bytes {
            FilterBlockSource::Partitioned(PartitionedFilterSource {
                build: Box::new(move |h: &[u64]| Ok(build_filter(lf, h)?.map_or(vec![], |x| x.0))),
                bits_per_key: lf.bits_per_key(),
                partition_bytes,
            })
        } else {
            FilterBlockSource::build(move |h: &[u64]| {
                Ok(build_filter(lf, h)?.map_or(vec![], |x| x.0))
            })
        };
        let s = match builder.finish(source) {
            Ok(s) => s,
            Err(e) => {
                let _ = self.storage.remove(&self.path);
                return Err(e);
            }
        };
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Err(e) = self.storage.sync_dir(parent) {
                let _ = self.storage.remove(&self.path);
                return Err(e);
            }
        }
        Ok(SstFileInfo {
            path: self.path.clone(),
            smallest_key: s.smallest_key,
            largest_key: s.largest_key,
            entries: self.entries,
            range_deletions: self.range_deletions,
            file_size: s.file_size,
        })
    }
}

/// Removes the partial file of a writer dropped before `finish` (siftdb created it).
impl Drop for SstWriter {
    fn drop(&mut self) {
        if let Some(b) = self.builder.take() {
            drop(b);
            let _ = self.storage.remove(&self.path);
        }
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > crate::MAX_KEY_SIZE {
        return Err(Error::invalid(format!(
            "key of {} bytes exceeds MAX_KEY_SIZE ({})",
            key.len(),
            crate::MAX_KEY_SIZE
        )));
    }
    Ok(())
}
