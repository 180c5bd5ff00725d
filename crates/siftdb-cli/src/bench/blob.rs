//! The blob-file flags of db_bench: `--enable_blob_files`, `--min_blob_size`,
//! `--enable_blob_garbage_collection` and `--blob_garbage_collection_age_cutoff`, mapped onto
//! [`Options::blob_threshold`] and [`Options::blob_gc_age_cutoff`]; and the write-amplification
//! line printed after a fill benchmark.

use super::flags::Flags;
use siftdb::{Options, Stats};

/// Sets `opts.blob_threshold` and `opts.blob_gc_age_cutoff` from the flags. db_bench's
/// `--min_blob_size=0` (its default) separates every value: siftdb's threshold 1 does the same
/// for every non-empty value. Garbage collection is off unless asked for, as in db_bench.
pub fn apply(flags: &Flags, opts: &mut Options) -> Result<(), String> {
    let cutoff = flags.blob_garbage_collection_age_cutoff;
    if !(0.0..=1.0).contains(&cutoff) {
        return Err(format!("--blob_garbage_collection_age_cutoff={cutoff} is outside 0..=1"));
    }
    opts.blob_threshold = flags.enable_blob_files.then_some(flags.min_blob_size.max(1));
    opts.blob_gc_age_cutoff = if flags.enable_blob_garbage_collection { cutoff } else { 0.0 };
    Ok(())
}

/// `engine write : NAME W (...)`: the engine's own count (`Stats::write_amplification`) beside
/// the process-I/O line every tool prints: bytes written to SSTs and blob files by flushes and
/// compactions per user byte since the database was opened (the WAL is not counted), the blob
/// files' state, and the memtable bytes not flushed yet (not counted: the benchmark does not
/// flush them). Not starting with the name, which marks result lines.
pub fn write_amp_line(name: &str, s: &Stats) -> String {
    format!(
        "engine write : {name} {:.3} ({} user bytes; {} flush, {} compaction bytes \
         written; {} blob files, {} blob bytes, {} garbage; {} memtable bytes unflushed)",
        s.write_amplification(),
        s.user_bytes,
        s.flush_bytes_written,
        s.compaction_bytes_written,
        s.blob_files,
        s.blob_bytes,
        s.blob_garbage_bytes,
        s.memtable_bytes
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        flags: Flags,
    }

    fn options(args: &[&str]) -> Result<Options, String> {
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let mut opts = Options::default();
        apply(&cli.flags, &mut opts)?;
        Ok(opts)
    }

    #[test]
    fn blob_flags_map_onto_the_threshold_and_the_gc_cutoff() {
        let o = options(&[]).unwrap();
        assert_eq!((o.blob_threshold, o.blob_gc_age_cutoff), (None, 0.0));
        let o = options(&["--enable_blob_files", "--min_blob_size=4096"]).unwrap();
        assert_eq!((o.blob_threshold, o.blob_gc_age_cutoff), (Some(4096), 0.0));
        let o = options(&["--enable_blob_files=true"]).unwrap();
        assert_eq!(o.blob_threshold, Some(1), "db_bench's min_blob_size 0 separates every value");
        let gc = [
            "--enable_blob_files",
            "--enable_blob_garbage_collection",
            "--blob_garbage_collection_age_cutoff=0.5",
        ];
        assert_eq!(options(&gc).unwrap().blob_gc_age_cutoff, 0.5);
        let bad = options(&["--blob_garbage_collection_age_cutoff=2"]).unwrap_err();
        assert!(bad.contains("outside 0..=1"), "{bad}");
    }
}
