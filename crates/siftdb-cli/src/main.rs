//! The `siftdb` command line. Without a subcommand it runs the point-lookup demo (the main job
//! of `cargo run --release`).

mod bench;
mod bulk;
mod crashtest;
mod demo;
mod dirs;
mod iops;
mod ldb;
mod log_dump;
mod progress;
mod readamp;
mod sst_dump;
mod stats;
mod ycsb;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "siftdb",
    version,
    about = "siftdb: an LSM key-value store with first-class filters"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    demo: demo::DemoArgs,
}

#[derive(Subcommand)]
enum Command {
    /// The point-lookup demo with its read-amplification table (the default).
    Demo(demo::DemoArgs),
    /// Kill -9 crash loop: a child writes synced batches and is killed at random moments; each
    /// recovery must keep every acknowledged write and be a prefix of the history.
    Crashtest(crashtest::CrashtestArgs),
    /// The crash loop's child process (internal).
    #[command(hide = true)]
    CrashtestChild(crashtest::ChildArgs),
    /// SST file tools.
    Sst {
        #[command(subcommand)]
        command: SstCommand,
    },
    /// Blob file tools (key-value separation).
    Blob {
        #[command(subcommand)]
        command: BlobCommand,
    },
    /// Write-ahead log tools.
    Wal {
        #[command(subcommand)]
        command: LogCommand,
    },
    /// Manifest tools.
    Manifest {
        #[command(subcommand)]
        command: LogCommand,
    },
    /// The level table of a database on disk (read only).
    Stats(stats::StatsArgs),
    /// db_bench-compatible benchmarks (same flags, keys and result lines as RocksDB's db_bench).
    Bench(Box<bench::flags::Flags>),
    /// YCSB core workloads a..f (zipfian 0.99), throughput and p50/p99/p99.9 latency per op.
    Ycsb(ycsb::YcsbArgs),
    /// Read-amplification report: blocks read per lookup and observed FPR per level for each
    /// filter policy at equal filter memory; writes a CSV and SVG plots into `--out` (default: a
    /// new directory it prints; `--out docs/results/DATE-readamp-430k` regenerates the
    /// committed report).
    Readamp(readamp::ReadampArgs),
    /// The disk's random-read limit: 4 KiB O_DIRECT reads of an existing FILE (never written)
    /// at queue depth 1 and 32, reads/s and MB/s per depth.
    Iops(iops::IopsArgs),
    /// Add SSTs (from `sst write`, `export` or an `SstWriter`) to a database in one atomic
    /// step, at the deepest level where each overlaps nothing.
    Ingest(bulk::IngestArgs),
    /// Write the live entries of a key range as SSTs ready for `ingest`, into a new directory.
    Export(bulk::ExportArgs),
    #[command(flatten)]
    Ldb(ldb::LdbCommand),
}

#[derive(Subcommand)]
enum LogCommand {
    /// Every record of the file (read only).
    Dump(log_dump::LogDumpArgs),
}

#[derive(Subcommand)]
enum BlobCommand {
    /// Verifies a whole blob file and prints its keyspace, values and optionally its records.
    Dump(sst_dump::BlobDumpArgs),
}

#[derive(Subcommand)]
enum SstCommand {
    /// Properties, filter kind and size, blocks, and optionally the entries of one SST.
    Dump(sst_dump::SstDumpArgs),
    /// Write an SST for `ingest` from sorted `key<TAB>value` lines (text, or hex with --hex).
    Write(bulk::SstWriteArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => demo::run(&cli.demo),
        Some(Command::Demo(args)) => demo::run(&args),
        Some(Command::Crashtest(args)) => crashtest::run(&args),
        Some(Command::CrashtestChild(args)) => crashtest::child(&args),
        Some(Command::Sst { command: SstCommand::Dump(args) }) => sst_dump::run(&args),
        Some(Command::Sst { command: SstCommand::Write(args) }) => bulk::sst_write(&args),
        Some(Command::Ingest(args)) => bulk::ingest(&args),
        Some(Command::Export(args)) => bulk::export(&args),
        Some(Command::Blob { command: BlobCommand::Dump(args) }) => sst_dump::blob(&args),
        Some(Command::Wal { command: LogCommand::Dump(args) }) => log_dump::wal(&args),
        Some(Command::Manifest { command: LogCommand::Dump(args) }) => log_dump::manifest(&args),
        Some(Command::Stats(args)) => stats::run(&args),
        Some(Command::Bench(flags)) => bench::run(&flags),
        Some(Command::Ycsb(args)) => ycsb::run(&args),
        Some(Command::Readamp(args)) => readamp::run(&args),
        Some(Command::Iops(args)) => iops::run(&args),
        Some(Command::Ldb(cmd)) => ldb::run(&cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("siftdb: {e}");
            ExitCode::FAILURE
        }
    }
}
