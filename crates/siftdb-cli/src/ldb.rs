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
//!
//! Commands that only read (`get`, `scan`, `dump`, `keyspaces`) open the database with
//! `Db::open_read_only`: they write nothing, and work beside a process that has it open and on
//! a read-only copy. They merge operands with `siftdb.u64add` when the tables name it (or with
//! `--u64`); `scan` and `dump` check before printing anything that every operand they may meet
//! can be merged, and otherwise refuse naming the operator.

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
            let (db, _) = open_read_only(&a.db)?;
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
            b.delete_range_in(&ks, start..end);
            db.write_opt(b, siftdb::WriteOptions { sync: true })?;
            drop(ks);
            db.close()?;
        }
        LdbCommand::Scan(a) => {
            let (db, mergeable) = open_read_only(&a.db)?;
            mergeable?;
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
            let (db, mergeable) = open_read_only(a)?;
            mergeable?;
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
            let (db, _) = open_read_only(a)?;
            let lifecycles = Lifecycles::of(&a.db)?;
            for name in db.keyspace_names() {
                match lifecycles.describe(&name) {
                    Some(life) => println!("{name}  {life}"),
                    None => println!("{name}"),
                }
            }
        }
    }
    Ok(())
}

/// The keyspace `--keyspace` names (the default one without it). A missing keyspace is an
/// error unless `create` (`put`, `merge`), which creates it with default options; an existing
/// one keeps its recorded options.
pub(crate) fn keyspace(db: &Db, a: &DbArgs, create: bool) -> Result<siftdb::Keyspace> {
    let name = a.keyspace.as_deref().unwrap_or("default");
    match db.existing_keyspace(name) {
        Some(ks) => Ok(ks),
        None if create => db.keyspace(name, siftdb::KeyspaceOptions::default()),
        None => Err(Error::invalid(format!("no keyspace named {name:?}"))),
    }
}

pub(crate) fn open(args: &DbArgs, create: bool) -> Result<Db> {
    let dir: &Path = &args.db;
    if !create {
        is_database(dir)?;
    }
    let merge_operator: Option<Arc<dyn MergeOperator>> = match args.u64 {
        true => Some(Arc::new(U64AddOperator)),
        false => None,
    };
    let ttl = if create && !dir.join("CURRENT").exists() {
        None
    } else {
        Lifecycles::of(dir)?.default_ttl()
    };
    let opts = Options { create_if_missing: create, merge_operator, ttl, ..Options::default() };
    Db::open(dir, opts)
}

/// The TTLs and compaction filter names the manifest records (design.md#ttl), read through
/// `siftdb::inspect`, writing nothing.
struct Lifecycles {
    /// Keyspace name -> (TTL in ms, 0: none; compaction filter name, empty: none).
    by_name: std::collections::BTreeMap<String, (u64, String)>,
}

impl Lifecycles {
    fn of(dir: &Path) -> Result<Lifecycles> {
        let storage = siftdb::storage::FsStorage::new();
        let state = siftdb::inspect::manifest::recover(&storage, dir)?
            .ok_or_else(|| Error::invalid(format!("{} holds no database", dir.display())))?;
        let mut by_name = std::collections::BTreeMap::new();
        let d = &state.default_lifecycle;
        by_name.insert("default".to_string(), (d.ttl_ms, d.filter_name.clone()));
        for k in state.keyspaces.values() {
            let ttl = k.options.ttl.map_or(0, |t| t.as_millis() as u64);
            by_name.insert(k.name.clone(), (ttl, k.filter_name.clone()));
        }
        Ok(Lifecycles { by_name })
    }

    /// The default keyspace's TTL: the database must be opened with one exactly when it has one.
    fn default_ttl(&self) -> Option<std::time::Duration> {
        let ms = self.by_name.get("default").map_or(0, |l| l.0);
        (ms > 0).then(|| std::time::Duration::from_millis(ms))
    }

    /// `ttl=… compaction_filter=…` of keyspace `name`, `None` when it has neither.
    fn describe(&self, name: &str) -> Option<String> {
        let (ttl, filter) = self.by_name.get(name)?;
        let mut parts = Vec::new();
        if *ttl > 0 {
            parts.push(format!("ttl={:?}", std::time::Duration::from_millis(*ttl)));
        }
        if !filter.is_empty() {
            parts.push(format!("compaction_filter={filter}"));
        }
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

fn is_database(dir: &Path) -> Result<()> {
    if dir.join("CURRENT").exists() {
        return Ok(());
    }
    Err(Error::invalid(format!("{} is not a siftdb database (no CURRENT file)", dir.display())))
}

/// The database of a command that only reads, opened without writing a byte, with the
/// merge operator `siftdb.u64add` under `--u64` or when the operands of the keyspace all name it;
/// and whether a scan of the keyspace can merge every operand it may meet (the refusal a scan
/// returns before printing anything: operands of another operator, or operands with no
/// recorded operator and no operator configured).
fn open_read_only(args: &DbArgs) -> Result<(Db, Result<()>)> {
    let dir: &Path = &args.db;
    is_database(dir)?;
    let ops = Operands::of(dir, args.keyspace.as_deref().unwrap_or("default"))?;
    let u64add = args.u64 || (!ops.named.is_empty() && ops.foreign().is_none());
    let merge_operator: Option<Arc<dyn MergeOperator>> = match u64add {
        true => Some(Arc::new(U64AddOperator)),
        false => None,
    };
    let ttl = Lifecycles::of(dir)?.default_ttl();
    let db = Db::open_read_only(dir, Options { merge_operator, ttl, ..Options::default() })?;
    let show = dir.display();
    let mergeable = match ops.foreign() {
        Some(name) => Err(Error::invalid(format!(
            "{show} holds merge operands of operator {name:?}; the siftdb CLI can merge only \
             siftdb.u64add operands (read these keys with the program that configures {name:?})"
        ))),
        None if ops.unnamed && !u64add => Err(Error::invalid(format!(
            "{show} holds merge operands whose operator is not recorded (in the WAL, or in \
             tables flushed without one); pass --u64 if they are siftdb.u64add counters"
        ))),
        None => Ok(()),
    };
    Ok((db, mergeable))
}

/// The merge operands a database holds, as its files record them (read through
/// `siftdb::inspect`, writing nothing).
struct Operands {
    /// Operator names recorded by the live tables holding operands (never empty names).
    named: std::collections::BTreeSet<String>,
    /// Whether some operands have no recorded operator: in the live WALs, or in a table
    /// flushed by an open without one.
    unnamed: bool,
}

impl Operands {
    /// The operands of keyspace `keyspace` in the database `dir`.
    fn of(dir: &Path, keyspace: &str) -> Result<Operands> {
        use siftdb::inspect::{filename, ikey::ValueKind, manifest, sst::Table, wal};
        use siftdb::storage::{FsStorage, Storage};
        let storage = FsStorage::new();
        let state = manifest::recover(&storage, dir)?
            .ok_or_else(|| Error::invalid(format!("{} holds no database", dir.display())))?;
        // A keyspace that does not exist has no operands (the command then fails on it).
        let id = match keyspace {
            "default" => Some(0),
            name => state.keyspaces.values().find(|k| k.name == name).map(|k| k.id),
        };
        let wanted = |ks: u32| id == Some(ks);
        let mut found = Operands { named: Default::default(), unnamed: false };
        for meta in state.levels.iter().flat_map(|l| l.values()).filter(|m| wanted(m.keyspace)) {
            let path = dir.join(filename::sst_name(meta.number));
            let table = Table::open(storage.open(&path)?, meta.number, None, &path)?;
            let p = table.properties();
            match p.merge_operator.as_deref() {
                _ if p.merges == 0 => {}
                Some("") | None => found.unnamed = true,
                Some(name) => {
                    found.named.insert(name.to_string());
                }
            }
        }
        for name in storage.list(dir)? {
            let Some((filename::FileKind::Wal, n)) = filename::parse_file_name(&name) else {
                continue;
            };
            if n < state.log_number {
                continue;
            }
            let path = dir.join(&name);
            for record in wal::read_wal(storage.open(&path)?, &path)?.records {
                let batch = wal::decode_batch(&record)?;
                if batch.records.iter().any(|r| r.kind == ValueKind::Merge && wanted(r.keyspace)) {
                    found.unnamed = true;
                }
            }
        }
        Ok(found)
    }

    /// A recorded operator other than the one the CLI has.
    fn foreign(&self) -> Option<&str> {
        self.named.iter().map(String::as_str).find(|n| *n != U64AddOperator.name())
    }
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
pub(crate) fn decode(s: &str, hex: bool) -> Result<Vec<u8>> {
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
