//! `Db::ingest`: external tables become part of the tree in one manifest edit
//! (design.md#ingestion-and-export).
//!
//! Order of work: every file is checked (it opens as a table, every block's checksum, keys of one
//! keyspace in strictly increasing order, all at sequence 0, or with [`IngestCheck::Metadata`]
//! the same facts as its properties record them; the files in parallel) and the files
//! are checked against one another (no overlap) before anything changes. The files are then linked
//! or copied into the directory under new file numbers and synced with the directory. A memtable
//! holding a key in a file's range is flushed first (its versions are older than the ingested ones,
//! but reads consult memtables before tables). Then, holding the compaction lock (no compaction
//! runs, so none can race the placement) and the writer lock (no write takes a sequence number
//! meanwhile), one global sequence number above every write is assigned, each file is placed at the
//! deepest level where it overlaps nothing at that level or above, and one manifest edit adds them
//! all with that sequence number. A crash before the edit is durable leaves only orphan tables,
//! which the next open deletes; after it, every file.

use super::sst_writer::SstWriter;
use crate::db::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::filename;
use crate::ikey::{self, ValueKind};
use crate::limits::NUM_LEVELS;
use crate::manifest::{FileMeta, VersionEdit};
use crate::sst::{Table, TableProperties};
use crate::version::{TableFile, Version};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How [`crate::Db::ingest`] brings a file into the database directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IngestMode {
    /// Copy the file; the source is left as it was.
    Copy,
    /// Hard-link the file (a copy when the source is on another file system); the source stays.
    #[default]
    Link,
    /// Link (or copy), then remove the source once the manifest edit is durable.
    Move,
}

/// What [`crate::Db::ingest`] reads of each file before anything changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IngestCheck {
    /// Every block: the file opens as a table (footer, index, properties, filter and
    /// range-deletion blocks, each with its checksum), and then every data block is read, its
    /// checksum checked, and every entry decoded: keys strictly increasing, all of one
    /// keyspace, all at sequence 0, none a blob reference; their count is the properties'.
    #[default]
    Full,
    /// The file opens as a table (footer, index, properties, filter and range-deletion blocks,
    /// each with its checksum) and its properties say what [`IngestCheck::Full`] would find:
    /// the smallest and largest keys of one keyspace, sequence numbers 0. The properties do not
    /// count blob references: a table of a format version that may hold some is read in full
    /// (one that must is refused). The data blocks are otherwise not read; a damaged one is
    /// found when a read reaches it (a corruption error, as for any table). For files whose
    /// every byte was checked by other means, such as a whole-file checksum computed by their
    /// writer and checked on arrival (the openraft integration's snapshot tables), where
    /// reading them back would cost a second pass over the disk.
    /// RocksDB's `IngestExternalFile` reads no data block unless
    /// `verify_checksums_before_ingest` is set.
    Metadata,
}

/// Options of [`crate::Db::ingest`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IngestOptions {
    /// How the files enter the directory (default: [`IngestMode::Link`]).
    pub mode: IngestMode,
    /// What is read of each file first (default: [`IngestCheck::Full`]).
    pub check: IngestCheck,
}

impl IngestOptions {
    /// Options with `mode`.
    pub fn with_mode(mode: IngestMode) -> IngestOptions {
        IngestOptions { mode, ..IngestOptions::default() }
    }

    /// These options with `check`.
    pub fn check(self, check: IngestCheck) -> IngestOptions {
        IngestOptions { check, ..self }
    }
}

/// One ingested file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestedFile {
    /// The file given to `ingest`.
    pub source: PathBuf,
    /// Its table number in the database.
    pub number: u64,
    /// The level it was placed at.
    pub level: usize,
    /// Point entries plus range-deletion fragments.
    pub entries: u64,
    /// Bytes.
    pub size: u64,
    /// Whether its keys were rewritten into the target keyspace: a file written for another
    /// keyspace id when either id is 0 (the default keyspace's keys carry no id bytes).
    pub rewritten: bool,
    /// The keyspace id its keys carry when the file was adopted into a target keyspace of
    /// another id (both non-zero: its bytes kept, the manifest maps the id;
    /// design.md#ingestion-and-export). `None` for a file of the target's own id or rewritten.
    pub adopted_from: Option<u32>,
}

/// What [`crate::Db::ingest`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestReport {
    /// The sequence number every ingested entry reads at.
    pub global_seq: u64,
    /// The files, in key order.
    pub files: Vec<IngestedFile>,
    /// Whether memtables overlapping the files were flushed first.
    pub flushed_memtables: bool,
    /// Sources [`IngestMode::Move`] could not remove (the ingestion itself succeeded).
    pub sources_left: Vec<PathBuf>,
}

/// The SST format version of a table holding blob references and no compression dictionary
/// (`sst::format::format_version_for`): the one version the properties tell holds some.
const BLOB_REFS_VERSION: u32 = 7;

/// Why a table holding a blob reference is refused.
const BLOB_REFERENCE: &str = "it holds a blob reference: external files hold their values \
     inline (SstWriter and Db::export write them so)";

/// The error refusing `path` for `what`.
fn refused(path: &Path, what: String) -> Error {
    Error::invalid(format!("ingest: {}: {what}", path.display()))
}

/// A file that passed the checks.
struct Checked {
    source: PathBuf,
    keyspace: u32,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// Entries as the manifest counts them (point entries and range-deletion fragments).
    entries: u64,
    /// Set once the file is in the directory.
    number: u64,
    /// Set when the file is placed.
    level: usize,
    size: u64,
    rewritten: bool,
    /// Set when the file is adopted: the id its keys carry.
    stored_keyspace: Option<u32>,
}

/// Checks that `path` is a table `ingest` can take (module documentation).
fn check_file(inner: &DbInner, path: &Path, check: IngestCheck) -> Result<Checked> {
    let storage = &*inner.storage;
    if !storage.exists(path)? {
        return Err(Error::invalid(format!("ingest: {} does not exist", path.display())));
    }
    let file = storage.open(path)?;
    let size = file.len();
    let table = Arc::new(Table::open(file, 0, None, path)?);
    let props = table.properties().clone();
    let bad = |what: String| refused(path, what);
    if props.merges > 0 && inner.opts.merge_operator.is_none() {
        return Err(bad("it holds merge operands and Options::merge_operator is None".into()));
    }
    // The properties do not count blob references (of a database's own blob files, so never
    // in a file to ingest): only a table of a format version that cannot hold them is taken on
    // its properties; version 7 holds some, version 8 (a dictionary) may.
    let (mut keyspace, n) = match check {
        IngestCheck::Metadata if props.format_version < BLOB_REFS_VERSION => {
            check_properties(&props, path)?
        }
        IngestCheck::Metadata if props.format_version == BLOB_REFS_VERSION => {
            return Err(bad(BLOB_REFERENCE.into()));
        }
        _ => check_entries(&table, path)?,
    };
    if let Some(ks) = table.range_del_keyspace()? {
        if keyspace.is_some_and(|k| k != ks) {
            return Err(bad(format!("its range deletions are of keyspace {ks}, its entries not")));
        }
        keyspace = Some(ks);
    }
    let frags = table.range_tombstones();
    if frags.fragments().iter().any(|f| f.seqs.iter().any(|&s| s != 0)) {
        return Err(bad("a range deletion is not at sequence 0".into()));
    }
    if n == 0 && frags.is_empty() {
        return Err(bad("it holds no entry".into()));
    }
    let (mut smallest, mut largest) = if n > 0 {
        let (lo, hi) = (&props.smallest_key, &props.largest_key);
        (ikey::user_key(lo).to_vec(), ikey::user_key(hi).to_vec())
    } else {
        (Vec::new(), Vec::new())
    };
    if let (Some(lo), Some(hi)) = (frags.smallest_key(), frags.largest_key()) {
        if n == 0 {
            (smallest, largest) = (lo.to_vec(), hi);
        } else {
            smallest = smallest.min(lo.to_vec());
            largest = largest.max(hi);
        }
    }
    Ok(Checked {
        source: path.to_path_buf(),
        keyspace: keyspace.unwrap_or(ikey::DEFAULT_KEYSPACE),
        smallest,
        largest,
        entries: n + props.range_deletions,
        number: 0,
        level: 0,
        size,
        rewritten: false,
        stored_keyspace: None,
    })
}

/// [`IngestCheck::Full`]'s reading of every entry of `table` (module documentation): the one
/// keyspace its entries are of and how many there are.
fn check_entries(table: &Arc<Table>, path: &Path) -> Result<(Option<u32>, u64)> {
    let bad = |what: String| refused(path, what);
    let mut it = table.iter(false);
    it.seek_to_first()?;
    let mut keyspace: Option<u32> = None;
    // The previous entry's user key (valid once `n > 0`), one buffer reused for every entry.
    let mut last: Vec<u8> = Vec::new();
    let mut n = 0u64;
    while it.valid() {
        let (ks, key, seq, kind) = ikey::decode_in(it.key()).map_err(|e| e.in_file(path, 0))?;
        if kind == ValueKind::BlobIndex {
            // A reference names a blob file of the database that wrote the table.
            return Err(bad(format!("entry {n}: {BLOB_REFERENCE}")));
        }
        if seq != 0 {
            return Err(bad(format!(
                "entry {n} is at sequence {seq}: ingested entries are at 0 (SstWriter writes them)"
            )));
        }
        if keyspace.is_some_and(|k| k != ks) {
            return Err(bad(format!("entry {n} is of keyspace {ks}, earlier ones of another")));
        }
        keyspace = Some(ks);
        if n > 0 && key <= last.as_slice() {
            return Err(bad(format!(
                "entry {n}: key {:?} is not greater than the previous key",
                key.escape_ascii().to_string()
            )));
        }
        last.clear();
        last.extend_from_slice(key);
        n += 1;
        it.next()?;
    }
    let props = table.properties();
    if n != props.entries {
        return Err(bad(format!("it holds {n} entries, its properties say {}", props.entries)));
    }
    Ok((keyspace, n))
}

/// [`IngestCheck::Metadata`]: what the properties say of the entries, checked as
/// [`check_entries`] checks the entries themselves, without reading a data block.
fn check_properties(props: &TableProperties, path: &Path) -> Result<(Option<u32>, u64)> {
    let bad = |what: String| refused(path, what);
    if props.entries == 0 {
        return Ok((None, 0));
    }
    let (lo_ks, _, _, _) = ikey::decode_in(&props.smallest_key).map_err(|e| e.in_file(path, 0))?;
    let (hi_ks, _, _, _) = ikey::decode_in(&props.largest_key).map_err(|e| e.in_file(path, 0))?;
    if lo_ks != hi_ks {
        return Err(bad(format!(
            "its smallest key is of keyspace {lo_ks}, its largest of keyspace {hi_ks}"
        )));
    }
    if props.smallest_seq != 0 || props.largest_seq != 0 {
        return Err(bad(format!(
            "its entries are at sequences {}..={}: ingested entries are at 0 (SstWriter writes them)",
            props.smallest_seq, props.largest_seq
        )));
    }
    Ok((Some(lo_ks), props.entries))
}

/// Whether a memtable of `sv` holds a version or a range deletion of `keyspace` within a
/// file's range.
fn memtables_overlap(sv: &SuperVersion, keyspace: u32, files: &[Checked]) -> bool {
    std::iter::once(&sv.mem).chain(sv.imm.iter()).any(|m| {
        let tombstones = m.range_tombstones(keyspace);
        files.iter().any(|f| {
            m.has_entry_in(keyspace, &f.smallest, &f.largest)
                || tombstones.fragments().iter().any(|t| {
                    t.start.as_slice() <= f.largest.as_slice()
                        && t.end.as_slice() > f.smallest.as_slice()
                })
        })
    })
}

/// The deepest level whose files, and those of every level above it, do not overlap
/// `[lo, hi]` of `keyspace`; 0 when L0 or L1 overlaps.
fn place(v: &Version, keyspace: u32, lo: &[u8], hi: &[u8]) -> usize {
    let overlaps = |level: usize| {
        v.levels()[level].iter().any(|f| {
            f.meta.keyspace == keyspace
                && f.meta.smallest_key.as_slice() <= hi
                && f.meta.largest_key.as_slice() >= lo
        })
    };
    let mut target = 0;
    for level in 0..NUM_LEVELS {
        if overlaps(level) {
            break;
        }
        target = level;
    }
    target
}

/// Rewrites `c`'s entries into `dest` with keyspace `keyspace` (a file exported from a
/// keyspace of the same name in another database, whose id differs).
fn rewrite(inner: &DbInner, c: &Checked, dest: &Path, keyspace: u32) -> Result<()> {
    let file = inner.storage.open(&c.source)?;
    let table = Arc::new(Table::open(file, 0, None, &c.source)?);
    let set = inner.keyspaces.load();
    // Values keep the write times they have.
    let config = super::bottom_config(inner, &set, keyspace, None);
    let mut w = SstWriter::with_config(dest, config)?;
    let mut it = table.iter(false);
    it.seek_to_first()?;
    while it.valid() {
        let (_, key, _, kind) = ikey::decode_in(it.key())?;
        match kind {
            ValueKind::Put => w.put(key, it.value())?,
            ValueKind::Delete => w.delete(key)?,
            ValueKind::Merge => w.merge(key, it.value())?,
            ValueKind::RangeDelete => {
                return Err(Error::corruption("range tombstone among data entries", None)
                    .in_file(&c.source, 0))
            }
            ValueKind::BlobIndex => {
                return Err(Error::corruption("blob reference in a checked external file", None)
                    .in_file(&c.source, 0))
            }
        }
        it.next()?;
    }
    for t in table.range_tombstones().tombstones() {
        w.delete_range(&t.start, &t.end)?;
    }
    w.finish().map(|_| ())
}

/// `Db::ingest` / `Keyspace::ingest` of `files` into `keyspace`.
pub(crate) fn ingest(
    inner: &Arc<DbInner>,
    keyspace: u32,
    files: &[PathBuf],
    opts: &super::IngestOptions,
) -> Result<IngestReport> {
    inner.check_writable()?;
    if files.is_empty() {
        return Err(Error::invalid("ingest: no file given"));
    }
    // The files are independent: each is read and checked on the process's worker pool
    // (rayon's global pool, a thread per core), and the first bad file in the caller's order
    // is the error, as a check one file after another would report it.
    let checked: Vec<Result<Checked>> = {
        use rayon::prelude::*;
        files.par_iter().map(|p| check_file(inner, p, opts.check)).collect()
    };
    let mut checked = checked.into_iter().collect::<Result<Vec<_>>>()?;
    checked.sort_by(|a, b| a.smallest.cmp(&b.smallest).then(a.largest.cmp(&b.largest)));
    for pair in checked.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.largest >= b.smallest {
            return Err(Error::invalid(format!(
                "ingest: {} (keys {:?}..={:?}) and {} (keys {:?}..={:?}) overlap",
                a.source.display(),
                a.smallest.escape_ascii().to_string(),
                a.largest.escape_ascii().to_string(),
                b.source.display(),
                b.smallest.escape_ascii().to_string(),
                b.largest.escape_ascii().to_string()
            )));
        }
    }
    let mut made: Vec<u64> = Vec::new();
    let r = bring_in(inner, keyspace, &mut checked, opts.mode, &mut made);
    let r = r.and_then(|()| install(inner, keyspace, &mut checked));
    let (global_seq, flushed) = match r {
        Ok(x) => x,
        Err(Failure::Before(e)) => {
            for n in made {
                inner.tables.evict(n);
                let _ = inner.storage.remove(&inner.dir.join(filename::sst_name(n)));
            }
            return Err(e);
        }
        // The edit may be in the manifest: the files stay (an orphan is deleted at the next
        // open), and the database is read-only (`set_bg_error`).
        Err(Failure::Appending(e)) => return Err(e),
    };
    let mut sources_left = Vec::new();
    if opts.mode == super::IngestMode::Move {
        for c in &checked {
            if inner.storage.remove(&c.source).is_err() {
                sources_left.push(c.source.clone());
            }
        }
    }
    let files = checked
        .into_iter()
        .map(|c| IngestedFile {
            level: c.level,
            source: c.source,
            number: c.number,
            entries: c.entries,
            size: c.size,
            rewritten: c.rewritten,
            adopted_from: c.stored_keyspace,
        })
        .collect();
    Ok(IngestReport { global_seq, files, flushed_memtables: flushed, sources_left })
}

/// Links or copies every file into the directory under a new number (recorded in `made` before
/// it is created), adopting a file of another non-zero keyspace id and rewriting one whose id
/// differs in width (the default keyspace on either side), and syncs the directory.
fn bring_in(
    inner: &DbInner,
    keyspace: u32,
    checked: &mut [Checked],
    mode: super::IngestMode,
    made: &mut Vec<u64>,
) -> std::result::Result<(), Failure> {
    let storage = &*inner.storage;
    for c in checked.iter_mut() {
        let number = inner.new_file_number();
        made.push(number);
        let dest = inner.dir.join(filename::sst_name(number));
        // A file of another non-zero id is adopted: its bytes kept, the manifest maps the id
        // (ids of equal width keep the keys' order). One with the default keyspace on either
        // side differs in key width: rewritten.
        let adopt = c.keyspace != keyspace
            && c.keyspace != ikey::DEFAULT_KEYSPACE
            && keyspace != ikey::DEFAULT_KEYSPACE;
        if adopt {
            c.stored_keyspace = Some(c.keyspace);
            c.keyspace = keyspace;
        }
        if c.keyspace != keyspace {
            rewrite(inner, c, &dest, keyspace)?;
            c.rewritten = true;
            c.keyspace = keyspace;
            c.size = storage.open(&dest)?.len();
        } else {
            match mode {
                super::IngestMode::Copy => crate::storage::copy_file(storage, &c.source, &dest)?,
                _ => {
                    storage.link_or_copy(&c.source, &dest)?;
                    // A link shares the source's bytes, durable only if whoever wrote it
                    // synced it (an `SstWriter` does; a copy made by other tools may not).
                    storage.sync_file(&dest)?;
                }
            }
        }
        c.number = number;
    }
    // The entries must be durable before the manifest edit names the files.
    storage.sync_dir(&inner.dir)?;
    Ok(())
}

/// Why an ingestion failed: before its manifest append (nothing changed; its files are
/// removed) or in it (the outcome is unknown).
enum Failure {
    Before(Error),
    Appending(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Before(e)
    }
}

/// Flushes overlapping memtables, then places the files and installs them in one manifest
/// edit under the compaction and writer locks (module documentation). Returns the global
/// sequence number and whether a flush was needed.
fn install(
    inner: &Arc<DbInner>,
    keyspace: u32,
    checked: &mut [Checked],
) -> std::result::Result<(u64, bool), Failure> {
    let mut flushed = false;
    loop {
        if memtables_overlap(&inner.super_version(), keyspace, checked) {
            crate::db::flush::flush_and_wait(inner)?;
            flushed = true;
        }
        let _c = inner.compaction_lock.lock();
        let mut w = inner.writer.lock();
        inner.check_writable()?;
        if !inner.keyspaces.load().is_live(keyspace) {
            return Err(Failure::Before(Error::invalid(format!(
                "ingest: keyspace {keyspace} was dropped"
            ))));
        }
        let sv = inner.super_version();
        if memtables_overlap(&sv, keyspace, checked) {
            continue; // a write since the flush: flush again, outside the locks
        }
        let g = w.last_seq + 1;
        let v = sv.version.clone();
        let mut added: Vec<(usize, Arc<TableFile>)> = Vec::with_capacity(checked.len());
        for c in checked.iter_mut() {
            let level = place(&v, keyspace, &c.smallest, &c.largest);
            c.level = level;
            let meta = FileMeta {
                number: c.number,
                size: c.size,
                smallest_key: c.smallest.clone(),
                largest_key: c.largest.clone(),
                smallest_seq: g,
                largest_seq: g,
                entries: c.entries,
                keyspace,
                global_seq: Some(g),
                stored_keyspace: c.stored_keyspace,
            };
            inner.tables.set_global_seq(c.number, Some(g));
            inner.tables.set_adoption(c.number, c.stored_keyspace.map(|s| (s, keyspace)));
            inner.tables.note_level(c.number, level);
            let table = inner.tables.open(c.number)?;
            added.push((level, Arc::new(TableFile::new(meta, &table, inner.tables.clone()))));
        }
        let edit = VersionEdit {
            next_file_number: Some(inner.next_file.load(Ordering::SeqCst)),
            last_sequence: Some(g),
            added: added.iter().map(|(l, f)| (*l as u32, f.meta.clone())).collect(),
            ..VersionEdit::default()
        };
        {
            let mut manifest = inner.manifest.lock();
            if let Err(e) = manifest.append(&edit, &inner.manifest_rollover()) {
                inner.set_bg_error(&e);
                return Err(Failure::Appending(e));
            }
            inner.install_super_version(|cur| SuperVersion {
                mem: cur.mem.clone(),
                imm: cur.imm.clone(),
                version: Arc::new(cur.version.apply(&[], &added)),
            });
        }
        w.last_seq = g;
        // Release: the version holding the files is installed before a reader can take `g`.
        inner.visible_seq.store(g, Ordering::Release);
        drop(w);
        drop(_c);
        let _g = inner.bg_lock.lock();
        inner.bg_cv.notify_all(); // the compaction thread looks at the new shape
        return Ok((g, flushed));
    }
}
