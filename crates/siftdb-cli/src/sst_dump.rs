//! `siftdb sst dump FILE [--keys | --values]`: an SST's properties, filter and blocks, optionally every
//! entry. Reads the file only.

use siftdb::inspect::ikey;
use siftdb::inspect::sst::Table;
use siftdb::storage::{FsStorage, Storage};
use siftdb::Result;
use std::path::PathBuf;
use std::sync::Arc;

/// `println!` that ends the command quietly when stdout is closed (e.g. piped into `head`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($t)*).is_err() {
            return Ok(());
        }
    }};
}

/// Arguments of `sst dump`.
#[derive(clap::Args, Debug, Clone)]
pub struct SstDumpArgs {
    /// The `.sst` file.
    file: PathBuf,
    /// Also print every entry (user key, sequence, kind, value length).
    #[arg(long)]
    keys: bool,
    /// Print every entry with its value (implies --keys).
    #[arg(long)]
    values: bool,
}

/// Arguments of `blob dump`.
#[derive(clap::Args, Debug, Clone)]
pub struct BlobDumpArgs {
    /// The `.blob` file.
    file: PathBuf,
    /// Print every record (user key, value offset and length).
    #[arg(long)]
    keys: bool,
}

/// `siftdb blob dump FILE [--keys]`: decodes and verifies a whole blob file (both CRCs of every
/// record, the footer) and prints its keyspace, value count and bytes, and optionally its
/// records. Read only.
pub fn blob(args: &BlobDumpArgs) -> Result<()> {
    let storage = FsStorage::new();
    let bytes = storage.read_all(&args.file)?;
    let name = args.file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let number = match siftdb::inspect::filename::parse_file_name(name) {
        Some((siftdb::inspect::filename::FileKind::Blob, n)) => n,
        _ => 0,
    };
    let s = siftdb::inspect::blob::scan(number, &bytes).map_err(|e| e.in_file(&args.file, 0))?;
    say!("blob file         {}", args.file.display());
    say!("file size         {}", bytes.len());
    say!("keyspace          {}", s.keyspace);
    say!("values            {} ({} bytes)", s.count, s.bytes);
    if args.keys {
        for r in &s.records {
            let (o, n) = (r.reference.offset, r.reference.size);
            say!("  {} offset {o} ({n} value bytes)", show_key(&r.key));
        }
    }
    Ok(())
}

/// Printable form of a key: UTF-8 text as is, anything else as hex.
pub fn show_key(k: &[u8]) -> String {
    match std::str::from_utf8(k) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("{s:?}"),
        _ => format!("0x{}", k.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

pub fn run(args: &SstDumpArgs) -> Result<()> {
    let storage = FsStorage::new();
    let table = Arc::new(Table::open(storage.open(&args.file)?, 0, None, &args.file)?);
    let p = table.properties();
    say!("file              {}", args.file.display());
    say!("file size         {} bytes", table.file_size());
    say!("format version    {}", p.format_version);
    say!(
        "entries           {} ({} tombstones, {} distinct user keys)",
        p.entries,
        p.deletions,
        p.distinct_keys
    );
    if let Some(op) = &p.merge_operator {
        let op = if op.is_empty() { "(unknown: flushed without an operator)" } else { op };
        say!("merge operands    {} (operator {op})", p.merges);
    }
    if let Some((oldest, newest)) = p.write_times {
        // A TTL keyspace's table (format 6): its values end in an 8-byte write time.
        say!("write times       {oldest}..={newest} ms since the Unix epoch (TTL keyspace)");
    }
    say!("keyspace id       {}", ikey::keyspace(&p.smallest_key));
    say!("sequence range    {}..={}", p.smallest_seq, p.largest_seq);
    let (lo, hi) = (ikey::user_key(&p.smallest_key), ikey::user_key(&p.largest_key));
    say!("user key range    {} ..= {}", show_key(lo), show_key(hi));
    say!("raw key/value     {} / {} bytes", p.raw_key_bytes, p.raw_value_bytes);
    say!(
        "data blocks       {} ({} bytes on disk; target block size {}, restart interval {}, compression {})",
        p.data_blocks,
        p.data_size,
        p.block_size,
        p.restart_interval,
        match p.compression {
            0 => "none".to_string(),
            1 => "zstd".to_string(),
            2 => "lz4".to_string(),
            t => format!("unknown (tag {t})"),
        }
    );
    if p.compression_dict_block.size > 0 {
        // Format 8: the zstd blocks are compressed with this per-file dictionary.
        say!("zstd dictionary   {} bytes", p.compression_dict_block.size);
    }
    match p.index_partitions {
        0 => say!("index block       {} bytes", table.index_memory_bytes()),
        n => say!("index             {} bytes in {n} partitions", table.index_memory_bytes()),
    }
    let kind = match table.filter_kind() {
        Some(k) if table.filter_partitions() > 0 => {
            format!("{} in {} partitions", k.name(), table.filter_partitions())
        }
        Some(k) => k.name().to_string(),
        None if p.filter_kind == 0 => "none".to_string(),
        None => format!("unknown (tag {})", p.filter_kind),
    };
    // The FPR where the filter's own parameters fix it (Ribbon, xor, binary fuse).
    let fpr = match table.filter().and_then(|f| f.parameter_fpr()) {
        Some(fpr) => format!(", FPR {:.4}%", fpr * 100.0),
        None => String::new(),
    };
    say!(
        "filter            {kind}: {} bytes, {:.2} bits per distinct key{fpr}",
        p.filter_bytes,
        p.filter_bits_per_key
    );
    // Scan filters (format version 5), when the table has them.
    let per_key = |bytes: u64| bytes as f64 * 8.0 / p.distinct_keys.max(1) as f64;
    if p.prefix_filter_block.size > 0 {
        say!(
            "prefix filter     {} bytes ({:.2} bits per distinct key), extractor {}",
            p.prefix_filter_block.size,
            per_key(p.prefix_filter_block.size),
            p.prefix_extractor.as_deref().unwrap_or("")
        );
    }
    if p.range_filter_block.size > 0 {
        say!(
            "range filter      grafite: {} bytes, {:.2} bits per distinct key",
            p.range_filter_block.size,
            per_key(p.range_filter_block.size)
        );
    }
    // Range tombstones are few: always listed, as the table stores them (fragmented).
    say!("range tombstones  {}", p.range_deletions);
    for t in table.range_tombstones().tombstones() {
        say!("  [{}, {}) @{} RangeDelete", show_key(&t.start), show_key(&t.end), t.seq);
    }
    if args.keys || args.values {
        say!("entries:");
        let mut it = table.iter(false);
        it.seek_to_first()?;
        while it.valid() {
            let (k, seq, kind) = ikey::decode(it.key())?;
            if kind == ikey::ValueKind::BlobIndex {
                // A reference into a blob file (design.md#key-value-separation).
                let r = siftdb::inspect::blob::BlobRef::decode(it.value())?;
                say!(
                    "  {} @{seq} BlobIndex -> {} offset {} ({} value bytes)",
                    show_key(k),
                    siftdb::inspect::filename::blob_name(r.file),
                    r.offset,
                    r.size
                );
            } else if args.values {
                say!("  {} @{seq} {kind:?} => {}", show_key(k), show_key(it.value()));
            } else {
                say!("  {} @{seq} {kind:?} ({} value bytes)", show_key(k), it.value().len());
            }
            it.next()?;
        }
    }
    Ok(())
}
