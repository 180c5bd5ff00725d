//! The `siftdb` command line. Without a subcommand it runs the point-lookup demo (the main job
//! of `cargo run --release`).

mod crashtest;
mod demo;
mod progress;
mod sst_dump;
mod stats;

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
    /// The level table of a database on disk (read only).
    Stats(stats::StatsArgs),
}

#[derive(Subcommand)]
enum SstCommand {
    /// Properties, filter kind and size, blocks, and optionally the entries of one SST.
    Dump(sst_dump::SstDumpArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => demo::run(&cli.demo),
        Some(Command::Demo(args)) => demo::run(&args),
        Some(Command::Crashtest(args)) => crashtest::run(&args),
        Some(Command::CrashtestChild(args)) => crashtest::child(&args),
        Some(Command::Sst { command: SstCommand::Dump(args) }) => sst_dump::run(&args),
        Some(Command::Stats(args)) => stats::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("siftdb: {e}");
            ExitCode::FAILURE
        }
    }
}
