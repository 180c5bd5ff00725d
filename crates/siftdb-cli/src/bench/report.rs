//! db_bench's `--statistics` output: RocksDB-named tickers and siftdb's per-level counters.
//! (The result line is in `result_line.rs`.)

use siftdb::{MemoryUsage, Stats};
pub use siftdb_bench_kit::result_line::ThreadStats;

/// The `--statistics` block: RocksDB-named tickers in db_bench's `NAME COUNT : N` format, then
/// siftdb's per-level read counters (`lookups` normalises blocks per lookup).
pub fn statistics(stats: &Stats, lookups: u64) -> String {
    let mut s = String::from("STATISTICS:\n");
    for (name, v) in stats.tickers() {
        s += &format!("{name} COUNT : {v}\n");
    }
    // siftdb's own figures in the same format, for scripts/compare.sh: filter bytes held in
    // memory and the SST entries they cover, table cache use, and the key ranges compactions
    // merged on their own threads (`--subcompactions`).
    let filter_bytes: u64 = stats.levels.iter().map(|l| l.filter_bytes).sum();
    let entries: u64 = stats.levels.iter().map(|l| l.entries).sum();
    s += &format!("siftdb.filter.bytes COUNT : {filter_bytes}\n");
    s += &format!("siftdb.sst.entries COUNT : {entries}\n");
    s += &format!("siftdb.table.cache.hit COUNT : {}\n", stats.table_cache_hits);
    s += &format!("siftdb.table.cache.open COUNT : {}\n", stats.table_cache_open_tables);
    s += &format!("siftdb.subcompactions COUNT : {}\n", stats.subcompactions);
    // Where write stalls come from: L0 slowdowns (1 ms each) and stops, counted apart from
    // `rocksdb.stall.micros` (which also holds waits for a full immutable-memtable queue).
    s += &format!("siftdb.l0.slowdown.count COUNT : {}\n", stats.l0_slowdowns);
    s += &format!("siftdb.l0.stop.count COUNT : {}\n", stats.l0_stops);
    s += &format!("siftdb.l0.stall.micros COUNT : {}\n", stats.l0_stall_micros);
    s += "\nper-level reads (siftdb):\n";
    s += &stats.read_amp_table(lookups);
    let scans = stats.scan_read_table(stats.seeks);
    if !scans.is_empty() {
        s += &format!("\nper-level scan reads (siftdb; {} seeks):\n", stats.seeks);
        s += &scans;
    }
    s
}

/// The memory report: siftdb's own figures ([`MemoryUsage`]), then the process's resident
/// memory from `/proc/self/status` (Linux) and what of its anonymous part the report does not
/// explain (allocator slack, scratch buffers, the binary's own heap).
pub fn memory(m: &MemoryUsage) -> String {
    let mut s = format!("{m}\n");
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return s };
    let kib = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()
    };
    let mib = |k: u64| k as f64 / 1024.0;
    s += "process memory (MiB, /proc/self/status):\n";
    for name in ["VmHWM:", "VmRSS:", "RssAnon:", "RssFile:"] {
        if let Some(k) = kib(name) {
            s += &format!("  {:<20} {:>10.1}\n", name.trim_end_matches(':'), mib(k));
        }
    }
    if let Some(anon) = kib("RssAnon:") {
        let unexplained = mib(anon) - m.total() as f64 / (1u64 << 20) as f64;
        s += &format!(
            "  RssAnon - total      {unexplained:>10.1}  (anonymous memory the report above does not explain)\n",
        );
        if let Some((in_use, free)) = allocator() {
            s += &format!(
                "  allocator in use     {in_use:>10.1}  (glibc malloc: bytes allocated and not freed)\n\
                 \x20 allocator free lists {free:>10.1}  (glibc malloc: freed bytes kept for reuse, not returned to the OS)\n\
                 \x20 rest                 {:>10.1}  (RssAnon - total - free lists: what neither explains)\n",
                unexplained - free
            );
        }
    }
    s
}

/// glibc malloc's own figures in MiB (`mallinfo2`, every arena): the bytes it has handed out
/// and not had back, and the freed bytes it keeps in its free lists for reuse instead of
/// returning them to the OS (most of them resident, so part of `RssAnon`: heap fragmentation,
/// e.g. the holes evicted blocks of one size leave among entries of another). `None` off
/// glibc. Under an `LD_PRELOAD`ed allocator (jemalloc) the figures are glibc's idle arenas
/// (near zero).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn allocator() -> Option<(f64, f64)> {
    // SAFETY: `mallinfo2` takes no arguments and only reads the allocator's statistics.
    let mi = unsafe { libc::mallinfo2() };
    let mib = |b: usize| b as f64 / (1u64 << 20) as f64;
    Some((mib(mi.uordblks + mi.hblkhd), mib(mi.fordblks)))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn allocator() -> Option<(f64, f64)> {
    None
}

/// The `stats` benchmark's text: files, bytes and filters per level, with the FPR the level's
/// filters were built for (`LevelStats::built_fpr`: per-level widths and allocations show here).
pub fn level_summary(stats: &Stats) -> String {
    let mut s = String::from(
        "Level  Files       Size  Entries  Filter                 Filter KiB  bits/key  built FPR\n",
    );
    for l in stats.levels.iter().filter(|l| l.files > 0) {
        let kinds =
            if l.filter_kinds.is_empty() { "none".into() } else { l.filter_kinds.join("+") };
        s += &format!(
            "L{:<5} {:>5} {:>10} {:>8}  {:<22} {:>10.1} {:>9.2} {:>10}\n",
            l.level,
            l.files,
            l.bytes,
            l.entries,
            kinds,
            l.filter_bytes as f64 / 1024.0,
            l.filter_bits_per_key(),
            l.built_fpr.map_or("-".to_string(), |p| format!("{:.4}%", p * 100.0))
        );
    }
    s += &format!(
        "table cache: {} open, {} hits, {} misses (file opens)\n",
        stats.table_cache_open_tables, stats.table_cache_hits, stats.table_cache_misses
    );
    s += &format!(
        "flushes {} (filter as is {}, rebuilt {}), memtable bytes {}, block cache {} B, write stall {} us\n",
        stats.flushes,
        stats.flush_filter_as_is,
        stats.flush_filter_rebuilt,
        stats.memtable_bytes,
        stats.block_cache_bytes,
        stats.write_stall_micros
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn result_line_matches_db_bench_format() {
        let mut t = ThreadStats::start();
        t.finish = t.start + Duration::from_micros(6_176_000);
        t.seconds = 6.176;
        t.done = 1_000_000;
        t.found = 632_893;
        t.report_found = true;
        assert_eq!(
            t.line("readrandom"),
            "readrandom   :       6.176 micros/op 161917 ops/sec 6.176 seconds 1000000 \
             operations; (632893 of 1000000 found)"
        );
    }
}
