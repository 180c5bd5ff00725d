//! `fjall-bench`: siftdb's db_bench workloads run against fjall, for the side-by-side comparison
//! in `scripts/compare.sh`. Same flag names, key generation, value generation, seeds and result
//! lines as `siftdb bench` (crates/siftdb-bench-kit), so one command line means the same work.
//!
//! The db_bench flags fjall has an equivalent for are applied: `--bloom_bits` (fjall's Bloom
//! filter at that many bits per key on every level; negative = none), `--compression_type`
//! (`none`, `lz4`; fjall has no zstd or snappy, so those run with LZ4, its fastest codec, and
//! say so; siftdb also runs snappy as LZ4, so `snappy` and `lz4` compare like for like),
//! `--write_buffer_size` (max memtable size), `--target_file_size_base` and
//! `--max_bytes_for_level_multiplier` (its leveled strategy; fjall derives L1's size as
//! `target_file_size * l0_threshold`, 32 MiB for compare.sh's flags, as given to the others), and
//! `--level0_file_num_compaction_trigger`. Other flags are ignored, and said so on stderr.
//! `compact` calls fjall's `major_compact`. `--use_existing_db=1` opens the database an earlier
//! run left at `--db` (scripts/scale.sh) and skips the fill benchmarks; `readwhilewriting` runs
//! `--threads` readers and one writer, as in siftdb bench.
//!
//! Transaction benchmarks (siftdb-bench-kit's `txn` module: `txrmw[N]`, `txblind[N]`,
//! `batchblind[N]`) run through fjall's optimistic transactions (`OptimisticTxDatabase`,
//! serializable snapshot isolation): when one is listed the database is opened as an
//! `OptimisticTxDatabase` and the other benchmarks use its inner database and keyspace, which
//! is what a plain `Database` is. `batchblind` writes a batch of that inner database. Each
//! thread runs `--reads` transactions, or `--duration` seconds when given.
//!
//! The YCSB benchmarks (the kit's `ycsb` module: `ycsbload` fills a new database with
//! `--num` records of `--value_size` bytes; `ycsba`..`ycsbf` run `--reads` operations per
//! thread, or `--duration` seconds) go through fjall's keyspace (`ycsb.rs`).

// The key/value generators, the thread runner, the read loop and the result line are siftdb
// bench's own (siftdb-bench-kit), so both tools do the same work and print the same line
// (scripts/compare.sh relies on it).
use fjall::{
    Database, Keyspace, KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace,
    OptimisticWriteTx, Readable,
};
use siftdb::filter::rng::SplitMix64;
use siftdb_bench_kit::key_layout::KeyLayout;
use siftdb_bench_kit::keys::{make_key, ValueGen};
use siftdb_bench_kit::result_line::ThreadStats as St;
use siftdb_bench_kit::txn::{self, TxEngine, TxError, TxRun, TxWorkload};
use siftdb_bench_kit::workloads::{self, Body, Budget, WriteRate};
use siftdb_bench_kit::ycsb::{self as kit_ycsb, Workload, YcsbRun};

mod ycsb;
use std::collections::HashMap;

struct Flags {
    benchmarks: Vec<String>,
    num: u64,
    reads: u64,
    key_size: usize,
    value_size: usize,
    threads: usize,
    cache_size: u64,
    seed: u64,
    db: Option<std::path::PathBuf>,
    bloom_bits: i64,
    compression: String,
    write_buffer_size: Option<u64>,
    target_file_size: Option<u64>,
    level_multiplier: Option<f32>,
    l0_trigger: Option<u8>,
    /// Open the database at `--db` as it is: fill benchmarks are skipped (db_bench's flag).
    use_existing_db: bool,
    /// Seconds per transaction benchmark, 0 for `--reads` transactions per thread.
    duration: u64,
    /// Time every read (p50/p99/p99.9/max under the result line), as db_bench's `--histogram`.
    histogram: bool,
    /// readwhilewriting: the writer's bytes per second (0 = unlimited).
    write_rate_limit: u64,
}

fn parse() -> Result<Flags, String> {
    let mut m: HashMap<String, String> = HashMap::new();
    for a in std::env::args().skip(1) {
        let a = a.trim_start_matches('-');
        let (k, v) = a.split_once('=').unwrap_or((a, "true"));
        m.insert(k.to_string(), v.to_string());
    }
    let num_of = |m: &HashMap<String, String>, k: &str, d: i64| -> Result<i64, String> {
        m.get(k).map_or(Ok(d), |v| v.parse().map_err(|e| format!("--{k}={v}: {e}")))
    };
    let num = num_of(&m, "num", 1_000_000)? as u64;
    let reads = num_of(&m, "reads", -1)?;
    let flags = Flags {
        benchmarks: m
            .get("benchmarks")
            .map_or("fillrandom,readrandom", |s| s.as_str())
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        num,
        reads: if reads < 0 { num } else { reads as u64 },
        key_size: num_of(&m, "key_size", 16)? as usize,
        value_size: num_of(&m, "value_size", 100)? as usize,
        threads: num_of(&m, "threads", 1)?.max(1) as usize,
        cache_size: num_of(&m, "cache_size", 8 << 20)? as u64,
        seed: num_of(&m, "seed", 0)? as u64,
        db: m.get("db").map(Into::into),
        bloom_bits: num_of(&m, "bloom_bits", -1)?,
        compression: m.get("compression_type").cloned().unwrap_or_else(|| "snappy".into()),
        write_buffer_size: m
            .get("write_buffer_size")
            .map(|_| num_of(&m, "write_buffer_size", 0))
            .transpose()?
            .map(|v| v as u64),
        target_file_size: m
            .get("target_file_size_base")
            .map(|_| num_of(&m, "target_file_size_base", 0))
            .transpose()?
            .map(|v| v as u64),
        level_multiplier: m
            .get("max_bytes_for_level_multiplier")
            .map(|v| {
                v.parse::<f32>().map_err(|e| format!("--max_bytes_for_level_multiplier={v}: {e}"))
            })
            .transpose()?,
        l0_trigger: m
            .get("level0_file_num_compaction_trigger")
            .map(|_| num_of(&m, "level0_file_num_compaction_trigger", 4))
            .transpose()?
            .map(|v| v.clamp(1, 255) as u8),
        duration: num_of(&m, "duration", 0)?.max(0) as u64,
        histogram: match m.get("histogram").map(String::as_str) {
            None | Some("0" | "false") => false,
            Some("1" | "true") => true,
            Some(v) => return Err(format!("--histogram={v}: expected 0, 1, true or false")),
        },
        write_rate_limit: num_of(&m, "benchmark_write_rate_limit", 0)?.max(0) as u64,
        use_existing_db: match m.get("use_existing_db").map(String::as_str) {
            None | Some("0" | "false") => false,
            Some("1" | "true") => true,
            Some(v) => return Err(format!("--use_existing_db={v}: expected 0, 1, true or false")),
        },
    };
    let known = [
        "benchmarks",
        "num",
        "reads",
        "key_size",
        "value_size",
        "threads",
        "cache_size",
        "seed",
        "db",
        "use_existing_db",
        "duration",
        "histogram",
        "benchmark_write_rate_limit",
        "bloom_bits",
        "compression_type",
        "write_buffer_size",
        "target_file_size_base",
        "max_bytes_for_level_multiplier",
        "level0_file_num_compaction_trigger",
        // Set as fjall derives it (target_file_size_base x L0 trigger); said in the module doc.
        "max_bytes_for_level_base",
    ];
    let ignored: Vec<_> = m.keys().filter(|k| !known.contains(&k.as_str())).cloned().collect();
    if !ignored.is_empty() {
        eprintln!("fjall-bench: ignoring flags with no fjall equivalent: {}", ignored.join(", "));
    }
    Ok(flags)
}

type R<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Runs `body` on `--threads` threads, thread i seeded `base + i`, and merges their figures.
fn parallel(
    f: &Flags,
    base: u64,
    body: &Body<'_, Box<dyn std::error::Error + Send + Sync>>,
) -> R<St> {
    workloads::run_threads(f.threads, base, f.value_size, body)
}

/// The file that marks a `--db` directory fjall-bench created. The fjall database lives in its
/// `fjall` subdirectory, so the directory holds nothing fjall-bench did not put there.
const MARKER: &str = "FJALL-BENCH";

/// Checks that `path` may be used fresh: absent, empty, or a directory an earlier run created
/// (its [`MARKER`], a plain file, and the engine's `fjall` subdirectory, nothing else).
/// Anything else is refused, never deleted (siftdb's tools delete only what they created).
/// Returns whether an earlier run's `fjall` subdirectory is there to delete.
fn check_fresh(path: &std::path::Path) -> R<bool> {
    let names = match std::fs::read_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.into()),
        Ok(entries) => {
            entries.map(|e| e.map(|e| e.file_name())).collect::<std::io::Result<Vec<_>>>()?
        }
    };
    let refuse = |why: String| -> R<bool> {
        Err(format!(
            "refusing to use --db {}: {why}; fjall-bench reuses only a directory holding \
             nothing but its {MARKER} file and its fjall subdirectory: give a new or empty \
             directory",
            path.display()
        )
        .into())
    };
    // By type, not name alone: a link named like the marker or the database is not ours.
    let is = |name: &str, dir: bool| {
        std::fs::symlink_metadata(path.join(name)).is_ok_and(|m| {
            if dir {
                m.is_dir()
            } else {
                m.is_file()
            }
        })
    };
    if names.is_empty() {
        return Ok(false);
    }
    if !is(MARKER, false) {
        return refuse(format!(
            "it is not empty and fjall-bench did not create it (no {MARKER} file)"
        ));
    }
    for name in &names {
        let ours = (name == MARKER && is(MARKER, false)) || (name == "fjall" && is("fjall", true));
        if !ours {
            return refuse(format!("it holds {name:?}, which fjall-bench did not create"));
        }
    }
    Ok(names.iter().any(|n| n == "fjall"))
}

/// The open database: its plain handles, and its transactional ones when it was opened as an
/// `OptimisticTxDatabase` (the plain handles are then its inner ones).
struct Handles {
    /// Kept open for the run; benchmarks use the keyspace.
    _db: Database,
    ks: Keyspace,
    tx: Option<(OptimisticTxDatabase, OptimisticTxKeyspace)>,
}

/// Opens the database in `path/fjall`, as an `OptimisticTxDatabase` when `tx`. When `fresh`,
/// `path` must pass [`check_fresh`]; only an earlier run's `fjall` subdirectory is deleted,
/// then `path` is marked as fjall-bench's.
fn open(path: &std::path::Path, f: &Flags, fresh: bool, tx: bool) -> R<Handles> {
    if fresh {
        if check_fresh(path)? {
            std::fs::remove_dir_all(path.join("fjall"))?;
        }
        std::fs::create_dir_all(path)?;
        std::fs::write(path.join(MARKER), "a database directory created by fjall-bench\n")?;
    }
    if tx {
        let db =
            OptimisticTxDatabase::builder(path.join("fjall")).cache_size(f.cache_size).open()?;
        let ks = db.keyspace("default", || keyspace_options(f))?;
        let plain = (db.inner().clone(), ks.inner().clone());
        return Ok(Handles { _db: plain.0, ks: plain.1, tx: Some((db, ks)) });
    }
    let db = Database::builder(path.join("fjall")).cache_size(f.cache_size).open()?;
    let ks = db.keyspace("default", || keyspace_options(f))?;
    Ok(Handles { _db: db, ks, tx: None })
}

/// fjall's optimistic transactions for siftdb-bench-kit's transaction workloads.
struct FjallTx<'a> {
    db: &'a OptimisticTxDatabase,
    ks: &'a OptimisticTxKeyspace,
}

type BoxErr = Box<dyn std::error::Error + Send + Sync>;

fn engine_err(e: fjall::Error) -> TxError<BoxErr> {
    TxError::Engine(e.into())
}

impl TxEngine for FjallTx<'_> {
    type Tx<'t>
        = OptimisticWriteTx
    where
        Self: 't;
    type Error = BoxErr;

    fn begin(&self) -> Result<OptimisticWriteTx, TxError<BoxErr>> {
        self.db.write_tx().map_err(engine_err)
    }

    fn get(
        &self,
        tx: &mut OptimisticWriteTx,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, TxError<BoxErr>> {
        out.clear();
        let v = tx.get(self.ks, key).map_err(engine_err)?;
        if let Some(v) = &v {
            out.extend_from_slice(v);
        }
        Ok(v.is_some())
    }

    fn put(
        &self,
        tx: &mut OptimisticWriteTx,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), TxError<BoxErr>> {
        tx.insert(self.ks, key, value);
        Ok(())
    }

    fn commit(&self, tx: OptimisticWriteTx) -> Result<(), TxError<BoxErr>> {
        match tx.commit().map_err(engine_err)? {
            Ok(()) => Ok(()),
            Err(fjall::Conflict) => Err(TxError::Conflict),
        }
    }

    fn write_batch(&self, writes: &[(&[u8], &[u8])]) -> Result<(), BoxErr> {
        let mut b = self.db.inner().batch();
        for (k, v) in writes {
            b.insert(self.ks.inner(), *k, *v);
        }
        Ok(b.commit()?)
    }
}

/// fjall's keyspace options for the db_bench flags (see the module doc).
fn keyspace_options(f: &Flags) -> KeyspaceCreateOptions {
    use fjall::config::{
        BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    };
    let mut o = KeyspaceCreateOptions::default();
    o = o.filter_policy(FilterPolicy::all(if f.bloom_bits >= 0 {
        FilterPolicyEntry::Bloom(BloomConstructionPolicy::BitsPerKey(f.bloom_bits as f32))
    } else {
        FilterPolicyEntry::None
    }));
    let codec = match f.compression.to_ascii_lowercase().as_str() {
        "none" | "no" => fjall::CompressionType::None,
        "lz4" => fjall::CompressionType::Lz4,
        other => {
            eprintln!("fjall-bench: fjall has no {other} compression; using LZ4");
            fjall::CompressionType::Lz4
        }
    };
    o = o.data_block_compression_policy(CompressionPolicy::all(codec));
    if let Some(b) = f.write_buffer_size {
        o = o.max_memtable_size(b);
    }
    let mut leveled = fjall::compaction::Leveled::default();
    if let Some(t) = f.target_file_size {
        leveled = leveled.with_table_target_size(t);
    }
    if let Some(m) = f.level_multiplier {
        leveled = leveled.with_level_ratio_policy(vec![m]);
    }
    if let Some(l0) = f.l0_trigger {
        leveled = leveled.with_l0_threshold(l0);
    }
    o.compaction_strategy(std::sync::Arc::new(leveled))
}

/// readrandom's loop (siftdb bench's, at spacing 1 and without `--duration`): `f.reads` reads.
fn read_loop(
    ks: &Keyspace,
    f: &Flags,
    key_size: usize,
    rng: &mut SplitMix64,
    st: &mut St,
) -> R<()> {
    let layout = KeyLayout { num: f.num, spacing: 1 };
    let get = |key: &[u8]| -> R<Option<usize>> { Ok(ks.get(key)?.map(|v| v.len())) };
    let budget = Budget::new(f.reads, 0).timed(f.histogram);
    workloads::read_loop(rng, st, layout, budget, key_size, get, |_| ())
}

fn main() -> R<()> {
    let f = parse()?;
    let _tmp;
    let path = match &f.db {
        Some(p) => p.clone(),
        None => {
            _tmp = tempfile_dir()?;
            _tmp.join("db")
        }
    };
    println!(
        "fjall 3.1 | Keys: {} bytes, Values: {} bytes, Entries: {}",
        f.key_size, f.value_size, f.num
    );
    println!("DB path: [{}]", path.display());
    if f.use_existing_db && !path.join(MARKER).is_file() {
        return Err(format!(
            "--use_existing_db: {} holds no database fjall-bench created (no {MARKER} file)",
            path.display()
        )
        .into());
    }
    let tx = f.benchmarks.iter().any(|b| TxWorkload::parse(b).is_some());
    let mut h = open(&path, &f, !f.use_existing_db, tx)?;
    let mut seed = f.seed;
    for name in f.benchmarks.clone() {
        let base = seed;
        // Seeds advance as in siftdb bench: once per thread of each benchmark that runs threads.
        if name != "compact" && name != "stats" {
            seed += f.threads as u64;
        }
        if name == "readwhilewriting" {
            seed += 1; // its writer's seed
        }
        let (num, kz, vz) = (f.num, f.key_size, f.value_size);
        let st = match name.as_str() {
            "fillseq" | "fillrandom" | kit_ycsb::LOAD if f.use_existing_db => {
                println!("{name:<12} : skipped (--use_existing_db is true)");
                continue;
            }
            "fillseq" | "fillrandom" | "overwrite" => {
                if name != "overwrite" {
                    drop(h);
                    h = open(&path, &f, true, tx)?;
                }
                let seq = name == "fillseq";
                let ks = &h.ks;
                parallel(&f, base, &|rng, values, st| {
                    let mut key = Vec::with_capacity(kz);
                    for i in 0..num {
                        make_key(if seq { i } else { rng.below(num) }, kz, &mut key);
                        ks.insert(key.as_slice(), values.next(vz))?;
                        st.bytes += (kz + vz) as u64;
                    }
                    st.done = num;
                    Ok(())
                })?
            }
            kit_ycsb::LOAD => {
                drop(h);
                h = open(&path, &f, true, tx)?;
                kit_ycsb::load(&ycsb::FjallYcsb { ks: &h.ks }, num, vz, f.threads, base)?
            }
            w if kit_ycsb::is_benchmark(w) => {
                let run = YcsbRun {
                    workload: Workload::parse(w).expect("a benchmark other than the load"),
                    records: num,
                    record_size: vz,
                    threads: f.threads,
                    seed: base,
                    ops: f.reads,
                    duration_secs: f.duration,
                };
                println!("{}", kit_ycsb::run(&ycsb::FjallYcsb { ks: &h.ks }, &run)?.lines(&name));
                continue;
            }
            w if TxWorkload::parse(w).is_some() => {
                let (db, ks) =
                    h.tx.as_ref().expect("opened transactional: a tx benchmark is listed");
                let run = TxRun {
                    workload: TxWorkload::parse(w).expect("matched above"),
                    layout: KeyLayout { num, spacing: 1 },
                    key_size: kz,
                    value_size: vz,
                    threads: f.threads,
                    seed: base,
                    ops: f.reads,
                    duration_secs: f.duration,
                };
                let s = txn::run(&FjallTx { db, ks }, &run)?;
                println!("{}", s.lines(&name));
                continue;
            }
            "readrandom" => parallel(&f, base, &|rng, _, st| read_loop(&h.ks, &f, kz, rng, st))?,
            "readmissing" => {
                parallel(&f, base, &|rng, _, st| read_loop(&h.ks, &f, kz + 1, rng, st))?
            }
            "seekrandom" => parallel(&f, base, &|rng, _, st| {
                let mut key = Vec::with_capacity(kz);
                for _ in 0..f.reads {
                    make_key(rng.below(num), kz, &mut key);
                    if let Some(g) = h.ks.range(key.as_slice()..).next() {
                        let (k, v) = g.into_inner()?;
                        if *k == *key {
                            st.found += 1;
                            st.bytes += (k.len() + v.len()) as u64;
                        }
                    }
                }
                st.done = f.reads;
                st.report_found = true;
                Ok(())
            })?,
            "readwhilewriting" => read_while_writing(&h.ks, &f, base)?,
            "readseq" => parallel(&f, base, &|_, _, st| {
                for g in h.ks.iter().take(f.reads as usize) {
                    let (k, v) = g.into_inner()?;
                    st.bytes += (k.len() + v.len()) as u64;
                    st.done += 1;
                }
                Ok(())
            })?,
            "deleterandom" => parallel(&f, base, &|rng, _, st| {
                let mut key = Vec::with_capacity(kz);
                for _ in 0..num {
                    make_key(rng.below(num), kz, &mut key);
                    h.ks.remove(key.as_slice())?;
                }
                st.done = num;
                Ok(())
            })?,
            "compact" => {
                let mut st = St::start();
                h.ks.rotate_memtable_and_wait()?;
                h.ks.major_compact()?;
                st.stop();
                st.done = 1;
                st
            }
            "stats" => {
                println!(
                    "tables {} (L0 {}), disk space {} B",
                    h.ks.table_count(),
                    h.ks.l0_table_count(),
                    h.ks.disk_space()
                );
                continue;
            }
            other => {
                eprintln!("fjall-bench: unsupported benchmark {other}, skipped");
                continue;
            }
        };
        println!("{}", st.line(&name));
        if let Some(line) = st.latency_line(&name) {
            println!("{line}");
        }
    }
    Ok(())
}

/// readwhilewriting: `--threads` readers as readrandom plus one writer inserting random keys
/// until the readers finish; only the readers are reported, as in db_bench and siftdb bench.
/// The writer is seeded `base + threads`, after the readers' seeds.
fn read_while_writing(ks: &Keyspace, f: &Flags, base: u64) -> R<St> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| -> R<()> {
            let seed = base + f.threads as u64;
            let (mut rng, mut values) = (SplitMix64::new(seed), ValueGen::new(seed, f.value_size));
            let mut key = Vec::with_capacity(f.key_size);
            let mut rate = WriteRate::new(f.write_rate_limit);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                make_key(rng.below(f.num), f.key_size, &mut key);
                ks.insert(key.as_slice(), values.next(f.value_size))?;
                rate.pace((f.key_size + f.value_size) as u64);
            }
            Ok(())
        });
        let readers = parallel(f, base, &|rng, _, st| read_loop(ks, f, f.key_size, rng, st));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().expect("writer thread panicked")?;
        readers
    })
}

/// A new directory under the system temp dir, removed at exit. `create_dir` fails if the name
/// exists, so the removal never reaches a directory this process did not create.
fn tempfile_dir() -> R<TempDir> {
    let p = std::env::temp_dir().join(format!("fjall-bench-{}", std::process::id()));
    std::fs::create_dir(&p)?;
    Ok(TempDir(p))
}

struct TempDir(std::path::PathBuf);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new scratch directory of this test process (`create_dir` fails on an existing name),
    /// removed on drop.
    fn scratch(name: &str) -> TempDir {
        let p =
            std::env::temp_dir().join(format!("fjall-bench-test-{}-{name}", std::process::id()));
        std::fs::create_dir(&p).unwrap();
        TempDir(p)
    }

    #[test]
    fn only_the_engine_subdirectory_of_its_own_directory_is_deleted() {
        let s = scratch("own");
        let dir = s.join("db");
        assert!(!check_fresh(&dir).unwrap(), "absent: nothing to delete");
        std::fs::create_dir_all(dir.join("fjall")).unwrap();
        std::fs::write(dir.join(MARKER), b"m").unwrap();
        assert!(check_fresh(&dir).unwrap(), "an earlier run's database may be deleted");
        // A file added later: refused, and nothing deleted.
        std::fs::write(dir.join("notes.txt"), b"the user's").unwrap();
        let e = check_fresh(&dir).unwrap_err().to_string();
        assert!(e.contains("notes.txt"), "{e}");
        std::fs::remove_file(dir.join("notes.txt")).unwrap();
        // A symlink in place of the engine directory is not the tool's.
        std::fs::remove_dir_all(dir.join("fjall")).unwrap();
        std::os::unix::fs::symlink(&*s, dir.join("fjall")).unwrap();
        assert!(check_fresh(&dir).is_err());
        // A directory the tool did not mark.
        let foreign = s.join("foreign");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("precious"), b"x").unwrap();
        let e = check_fresh(&foreign).unwrap_err().to_string();
        assert!(e.contains(MARKER), "{e}");
    }
}
