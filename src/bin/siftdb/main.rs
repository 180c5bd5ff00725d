//! The `siftdb` command line. Without a subcommand it runs the point-lookup demo (the main job
//! of `cargo run --release`).

mod bench;
mod demo;
mod progress;
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
    /// db_bench-compatible benchmarks (same flags, keys and result lines as RocksDB's db_bench).
    Bench(bench::flags::Flags),
    /// YCSB core workloads a..f (zipfian 0.99), throughput and p50/p99/p99.9 latency per op.
    Ycsb(ycsb::YcsbArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => demo::run(&cli.demo),
        Some(Command::Demo(args)) => demo::run(&args),
        Some(Command::Bench(flags)) => bench::run(&flags),
        Some(Command::Ycsb(args)) => ycsb::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("siftdb: {e}");
            ExitCode::FAILURE
        }
    }
}
