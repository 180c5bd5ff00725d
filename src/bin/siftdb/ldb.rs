//! `siftdb get|put|merge|delete|delete-range|scan|dump|checkpoint|compact|keyspaces DB ...`:
//! RocksDB `ldb`-style commands on a database directory. `--keyspace NAME` makes get/put/merge/
//! delete/delete-range/scan/dump work in that keyspace (the default keyspace otherwise); only
//! `put` and `merge` create a missing keyspace, every other command fails on it. Every command
//! opens an existing database (`put --create` may create
//! one); a missing, locked or corrupt database is one error line and a non-zero exit (main.rs).
//! Keys and values are given as text, or as hex with `--hex`; they are printed with
//! non-printable bytes escaped (`\xNN`), or as hex with `--hex`. `--u64` opens the database
//! with the built-in merge operator `siftdb.u64add` (counters): `merge` then takes a decimal
//! operand, and 8-byte values print as decimal numbers.

use clap::{Args, Subcommand};
use siftdb::{Db, Error, MergeOperator, Options, Result, U64AddOperator};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The database-level commands.
#[derive(Subcommand)]
pub enum LdbCommand {
    /// Print the value of KEY (exit status 1 and "not found" when absent).
    Get(KeyArgs),
    /// Set KEY to VALUE (synced before the command returns).
    Put(PutArgs),
    /// Merge OPERAND into KEY (synced); needs `--u64` (adds a decimal u64 to the counter).
    Merge(MergeArgs),
    /// Delete KEY (synced).
    Delete(KeyArgs),
    /// Delete every key in [START, END) with one range tombstone (synced). START after END is
    /// an error; START equal to END deletes nothing.
    DeleteRange(DeleteRangeArgs),
    /// Print entries in key order (or reversed): all, from/to bounds, or a prefix.
    Scan(ScanArgs),
    /// Print every entry of the database (a scan without bounds).
    Dump(DbArgs),
    /// Write a consistent copy of the database into a new directory.
    Checkpoint(CheckpointArgs),
    /// Compact the whole database into one sorted run.
    Compact(DbArgs),
    /// List the keyspaces ("default" first, then in creation order).
    Keyspaces(DbArgs),
}

/// A database directory and the encoding of keys and values.
#[derive(Args)]
pub struct DbArgs {
    /// The database directory.
    pub db: PathBuf,
    /// Keys and values are given and printed as hex.
    #[arg(long)]
    pub hex: bool,
    /// Open with the built-in merge operator `siftdb.u64add` (8-byte little-endian counters,
    /// printed as decimal numbers): needed to read or merge counters.
    #[arg(long)]
    pub u64: bool,
    /// Work in this keyspace (default: the default keyspace).
    #[arg(long, value_name = "NAME")]
    pub keyspace: Option<String>,
}

/// `merge`'s arguments.
#[derive(Args)]
pub struct MergeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The key.
    pub key: String,
    /// The operand: a decimal u64 with `--u64`.
    pub operand: String,
}

/// A database and one key.
#[derive(Args)]
pub struct KeyArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The key.
    pub key: String,
}

/// `put`'s arguments.
#[derive(Args)]
pub struct PutArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// Create the database if the directory holds none (an empty or absent directory).
    #[arg(long)]
    pub create: bool,
}

/// `delete-range`'s arguments.
#[derive(Args)]
pub struct DeleteRangeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// First key deleted (inclusive).
    pub start: String,
    /// First key kept (exclusive).
    pub end: String,
}

/// `scan`'s arguments.
#[derive(Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// First key (inclusive).
    #[arg(long)]
    pub from: Option<String>,
    /// End key (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// Only keys starting with this prefix (not combined with --from/--to).
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub prefix: Option<String>,
    /// Print at most this many entries.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
    /// Print in descending key order.
    #[arg(long)]
    pub reverse: bool,
}

/// `checkpoint`'s arguments.
#[derive(Args)]
pub struct CheckpointArgs {
    /// The database directory.
    pub db: PathBuf,
    /// The new directory to write the checkpoint into (must not exist).
    pub target: PathBuf,
}

pub fn run(cmd: &LdbCommand) -> Result<()> {
    match cmd {
        LdbCommand::Get(a) => {
            let db = open(&a.db, false)?;
            let ks = keyspace(&db, &a.db, false)?;
            match ks.get(decode(&a.key, a.db.hex)?)? {
                Some(v) => println!("{}", show_value(&v, &a.db)),
                None => return Err(Error::invalid(format!("key {} not found", a.key))),
            }
        }
        LdbCommand::Put(a) => {
            let db = open(&a.db, a.create)?;
            let ks = keyspace(&db, &a.db, true)?;
            let mut b = siftdb::WriteBatch::new();
            b.put_in(&ks, decode(&a.key, a.db.hex)?, decode(&a.value, a.db.hex)?);
            db.write_opt(b, siftdb::WriteOptions { sync: true })?;
            drop(ks);
            db.close()?;
        }
        LdbCommand::Merge(a) => {
            if !a.db.u64 {
                return Err(Error::invalid(
                    "merge needs --u64 (siftdb.u64add is the one merge operator the CLI knows)",
                ));
            }
            let n: u64 = a.operand.parse().map_err(|_| {
                Error::invalid(format!("merge operand {:?} is not a decimal u64", a.operand))
            })?;
            let db = open(&a.db, false)?;
            let ks = keyspace(&db, &a.db, true)?;
            let mut b = siftdb::WriteBatch::new();
            b.merge_in(&ks, decode(&a.key, a.db.hex)?, n.to_le_bytes());
            db.write_opt(b, siftdb::WriteOptions { sync: true })?;
            drop(ks);
            db.close()?;
        }
        LdbCommand::Delete(a) => {
            let db = open(&a.db, false)?;
            let ks = keyspace(&db, &a.db, false)?;
            let mut b = siftdb::WriteBatch::new();
            b.delete_in(&ks, decode(&a.key, a.db.hex)?);
            db.write_opt(b, siftdb::WriteOptions { sync: true })?;
            drop(ks);
            db.close()?;
        }
        LdbCommand::DeleteRange(a) => {
            let db = open(&a.db, false)?;
            let ks = keyspace(&db, &a.db, false)?;
            let (start, end) = (decode(&a.start, a.db.hex)?, decode(&a.end, a.db.hex)?);
            let mut b = siftdb::WriteBatch::new();
            b.delete_range_in(&ks, start, end);
            db.write_opt(b, siftdb::WriteOptions { sync: true })?;
            drop(ks);
            db.close()?;
        }
        LdbCommand::Scan(a) => {
            let db = open(&a.db, false)?;
            let ks = keyspace(&db, &a.db, false)?;
            let hex = a.db.hex;
            let iter = match (&a.prefix, &a.from, &a.to) {
                (Some(p), _, _) => ks.prefix(decode(p, hex)?)?,
                (None, from, to) => {
                    use std::ops::Bound;
                    let lo = from.as_ref().map(|k| decode(k, hex)).transpose()?;
                    let hi = to.as_ref().map(|k| decode(k, hex)).transpose()?;
                    let lo = lo.map_or(Bound::Unbounded, Bound::Included);
                    let hi = hi.map_or(Bound::Unbounded, Bound::Excluded);
                    ks.range::<Vec<u8>, _>((lo, hi))?
                }
            };
            if a.reverse {
                print_entries(iter.rev(), a.limit, a.keys_only, &a.db)?;
            } else {
                print_entries(iter, a.limit, a.keys_only, &a.db)?;
            }
        }
        LdbCommand::Dump(a) => {
            let db = open(a, false)?;
            print_entries(keyspace(&db, a, false)?.scan()?, None, false, a)?;
        }
        LdbCommand::Checkpoint(a) => {
            let db =
                open(&DbArgs { db: a.db.clone(), hex: false, u64: false, keyspace: None }, false)?;
            db.checkpoint(&a.target)?;
            println!("checkpoint written to {}", a.target.display());
        }
        LdbCommand::Compact(a) => {
            let db = open(a, false)?;
            db.compact()?;
            db.close()?;
        }
        LdbCommand::Keyspaces(a) => {
            let db = open(a, false)?;
            for name in db.keyspace_names() {
                println!("{name}");
            }
        }
    }
    Ok(())
}

/// The keyspace `--keyspace` names (the default one without it). A missing keyspace is an
/// error unless `create` (`put`, `merge`), which creates it with default options; an existing
/// one keeps its recorded options.
fn keyspace(db: &Db, a: &DbArgs, create: bool) -> Result<siftdb::Keyspace> {
    let name = a.keyspace.as_deref().unwrap_or("default");
    match db.existing_keyspace(name) {
        Some(ks) => Ok(ks),
        None if create => db.keyspace(name, siftdb::KeyspaceOptions::default()),
        None => Err(Error::invalid(format!("no keyspace named {name:?}"))),
    }
}

fn open(args: &DbArgs, create: bool) -> Result<Db> {
    let dir: &Path = &args.db;
    if !create && !dir.join("CURRENT").exists() {
        return Err(Error::invalid(format!(
            "{} is not a siftdb database (no CURRENT file)",
            dir.display()
        )));
    }
    let merge_operator: Option<Arc<dyn MergeOperator>> = match args.u64 {
        true => Some(Arc::new(U64AddOperator)),
        false => None,
    };
    Db::open(dir, Options { create_if_missing: create, merge_operator, ..Options::default() })
}

/// A value for printing: an 8-byte counter as a decimal number with `--u64`, else `encode`.
fn show_value(v: &[u8], args: &DbArgs) -> String {
    match <[u8; 8]>::try_from(v) {
        Ok(b) if args.u64 => u64::from_le_bytes(b).to_string(),
        _ => encode(v, args.hex),
    }
}

fn print_entries(
    iter: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
    limit: Option<usize>,
    keys_only: bool,
    args: &DbArgs,
) -> Result<()> {
    let hex = args.hex;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let io = |e| Error::io("writing to stdout", e);
    let mut n = 0usize;
    for kv in iter.take(limit.unwrap_or(usize::MAX)) {
        let (k, v) = kv?;
        if keys_only {
            writeln!(out, "{}", encode(&k, hex)).map_err(io)?;
        } else {
            writeln!(out, "{} => {}", encode(&k, hex), show_value(&v, args)).map_err(io)?;
        }
        n += 1;
    }
    out.flush().map_err(io)?;
    eprintln!("{n} entries");
    Ok(())
}

/// The bytes of a command-line key or value: as is, or parsed from hex.
fn decode(s: &str, hex: bool) -> Result<Vec<u8>> {
    if !hex {
        return Ok(s.as_bytes().to_vec());
    }
    let s = s.strip_prefix("0x").unwrap_or(s);
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::invalid(format!("{s:?} is not an even number of hex digits")));
    }
    Ok((0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or(0)).collect())
}

/// Bytes for printing: hex, or text with non-printable bytes and backslashes escaped.
fn encode(b: &[u8], hex: bool) -> String {
    if hex {
        return b.iter().map(|x| format!("{x:02x}")).collect();
    }
    let mut s = String::with_capacity(b.len());
    for &x in b {
        match x {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(x as char),
            _ => s.push_str(&format!("\\x{x:02x}")),
        }
    }
    s
}
