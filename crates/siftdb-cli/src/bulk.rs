//! Bulk data in and out (design.md#ingestion-and-export): `siftdb sst write` builds an SST for
//! ingestion from a sorted `key<TAB>value` text file, `siftdb ingest` adds SSTs to a database
//! in one atomic step, `siftdb export` writes a key range of a database as SSTs.

use crate::ldb::{self, DbArgs};
use clap::Args;
use siftdb::{
    Error, ExportOptions, IngestCheck, IngestMode, IngestOptions, Options, Result, SstWriter,
};
use std::io::BufRead;
use std::path::PathBuf;

/// `sst write`'s arguments.
#[derive(Args)]
pub struct SstWriteArgs {
    /// Sorted input: one `key<TAB>value` line per entry, keys strictly increasing.
    #[arg(long)]
    pub input: PathBuf,
    /// The SST to write (must not exist).
    #[arg(long)]
    pub output: PathBuf,
    /// Keys and values are hex.
    #[arg(long)]
    pub hex: bool,
}

/// `ingest`'s arguments.
#[derive(Args)]
pub struct IngestArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    /// The SSTs to ingest (written by `siftdb sst write`, `SstWriter` or `siftdb export`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Move the files in (they are removed once the ingestion is durable).
    #[arg(long, conflicts_with = "copy")]
    pub r#move: bool,
    /// Copy the files (the default hard-links them, copying across file systems).
    #[arg(long)]
    pub copy: bool,
    /// Ingest into this keyspace (default: the default keyspace; created if missing).
    #[arg(long, value_name = "NAME")]
    pub keyspace: Option<String>,
    /// Open with the merge operator `siftdb.u64add` (files holding merge operands need it).
    #[arg(long)]
    pub u64: bool,
    /// Create the database if the directory holds none (an empty or absent directory): a bulk
    /// load into a new database.
    #[arg(long)]
    pub create: bool,
    /// What is read of each file before anything changes: `full`, every block and entry;
    /// `metadata`, the footer, index, filter and properties blocks only (for files whose bytes
    /// were checked whole by other means; RocksDB's ingestion reads no data block by default).
    #[arg(long, value_enum, default_value = "full")]
    pub check: CheckArg,
}

/// `ingest --check`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckArg {
    /// `IngestCheck::Full`.
    Full,
    /// `IngestCheck::Metadata`.
    Metadata,
}

/// `export`'s arguments.
#[derive(Args)]
pub struct ExportArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    /// First key (inclusive; default: the first key).
    #[arg(long)]
    pub from: Option<String>,
    /// End key (exclusive; default: past the last key).
    #[arg(long)]
    pub to: Option<String>,
    /// The output directory (created if missing; refused if it holds any file).
    #[arg(long)]
    pub dir: PathBuf,
    /// `--from` and `--to` are hex.
    #[arg(long)]
    pub hex: bool,
    /// Export this keyspace (default: the default keyspace).
    #[arg(long, value_name = "NAME")]
    pub keyspace: Option<String>,
    /// Cut output files at this many bytes (default: the database's target_file_size).
    #[arg(long)]
    pub target_file_size: Option<u64>,
    /// Open with the merge operator `siftdb.u64add` (needed to resolve counters).
    #[arg(long)]
    pub u64: bool,
}

/// `siftdb sst write`.
pub fn sst_write(a: &SstWriteArgs) -> Result<()> {
    let input = std::fs::File::open(&a.input)
        .map_err(|e| Error::io(format!("opening {}", a.input.display()), e))?;
    let mut w = SstWriter::create(&a.output, &Options::default())?;
    for (n, line) in std::io::BufReader::new(input).lines().enumerate() {
        let line = line.map_err(|e| Error::io(format!("reading {}", a.input.display()), e))?;
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once('\t') else {
            return Err(Error::invalid(format!(
                "{} line {}: no TAB between key and value",
                a.input.display(),
                n + 1
            )));
        };
        let (k, v) = (ldb::decode(k, a.hex)?, ldb::decode(v, a.hex)?);
        w.put(k, v).map_err(|e| match e {
            Error::InvalidArgument(m) => {
                Error::invalid(format!("{} line {}: {m}", a.input.display(), n + 1))
            }
            other => other,
        })?;
    }
    let info = w.finish()?;
    println!("wrote {} ({} entries, {} bytes)", info.path.display(), info.entries, info.file_size);
    Ok(())
}

fn db_args(db: &std::path::Path, keyspace: &Option<String>, u64: bool) -> DbArgs {
    DbArgs { db: db.to_path_buf(), hex: false, u64, keyspace: keyspace.clone() }
}

/// `siftdb ingest`.
pub fn ingest(a: &IngestArgs) -> Result<()> {
    let args = db_args(&a.db, &a.keyspace, a.u64);
    let db = ldb::open(&args, a.create)?;
    let ks = ldb::keyspace(&db, &args, true)?;
    let mode = match (a.r#move, a.copy) {
        (true, _) => IngestMode::Move,
        (_, true) => IngestMode::Copy,
        _ => IngestMode::Link,
    };
    let check = match a.check {
        CheckArg::Full => IngestCheck::Full,
        CheckArg::Metadata => IngestCheck::Metadata,
    };
    let report = ks.ingest(&a.files, IngestOptions::with_mode(mode).check(check))?;
    for f in &report.files {
        println!(
            "{} -> table {} at level {} ({} entries, {} bytes{})",
            f.source.display(),
            f.number,
            f.level,
            f.entries,
            f.size,
            if f.rewritten { ", keys rewritten into the keyspace" } else { "" }
        );
    }
    println!("ingested {} files at sequence {}", report.files.len(), report.global_seq);
    for s in &report.sources_left {
        eprintln!("siftdb: could not remove the source {}", s.display());
    }
    drop(ks);
    db.close()
}

/// `siftdb export`.
pub fn export(a: &ExportArgs) -> Result<()> {
    use std::ops::Bound;
    let args = db_args(&a.db, &a.keyspace, a.u64);
    let db = ldb::open(&args, false)?;
    let ks = ldb::keyspace(&db, &args, false)?;
    let lo = a.from.as_ref().map(|k| ldb::decode(k, a.hex)).transpose()?;
    let hi = a.to.as_ref().map(|k| ldb::decode(k, a.hex)).transpose()?;
    let range = (
        lo.map_or(Bound::Unbounded, Bound::Included),
        hi.map_or(Bound::Unbounded, Bound::Excluded),
    );
    let mut opts = ExportOptions::default();
    opts.target_file_size = a.target_file_size;
    let report = ks.export::<Vec<u8>, _>(range, &a.dir, &opts)?;
    for f in &report.files {
        println!("{} ({} entries, {} bytes)", f.path.display(), f.entries, f.file_size);
    }
    println!(
        "exported {} keys in {} files ({} bytes)",
        report.keys,
        report.files.len(),
        report.bytes
    );
    drop(ks);
    db.close()
}
