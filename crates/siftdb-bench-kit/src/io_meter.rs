//! Write amplification as the storage sees it, the same way for every engine: the bytes the
//! process sent to storage (`write_bytes` of `/proc/self/io`, all threads, WAL, tables, blob
//! files and manifest alike, counted when pages are dirtied) over the user bytes a benchmark
//! wrote (key + value per operation). An engine's own counters define "written" each their own
//! way (RocksDB's compaction statistics leave the WAL out, siftdb's leave blob bytes to another
//! counter); the kernel's count does not depend on them.
//!
//! Bytes of a file deleted before writeback count as written too (`cancelled_write_bytes` is
//! not subtracted): the engine did issue them.

/// The process's I/O counters of `/proc/self/io` this module reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessIo {
    /// Bytes sent to storage (`write_bytes`).
    pub write_bytes: u64,
    /// Bytes fetched from storage (`read_bytes`).
    pub read_bytes: u64,
}

impl ProcessIo {
    /// The counters now, or `None` where `/proc/self/io` is unavailable (not Linux, or a kernel
    /// without task I/O accounting).
    pub fn now() -> Option<ProcessIo> {
        parse(&std::fs::read_to_string("/proc/self/io").ok()?)
    }
}

/// Parses the text of `/proc/<pid>/io`.
pub fn parse(text: &str) -> Option<ProcessIo> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some(ProcessIo { write_bytes: field("write_bytes")?, read_bytes: field("read_bytes")? })
}

/// Measures one benchmark: start it before the benchmark, read it after.
#[derive(Debug, Clone, Copy)]
pub struct WriteMeter {
    start: Option<ProcessIo>,
}

impl WriteMeter {
    /// Starts measuring.
    pub fn start() -> WriteMeter {
        WriteMeter { start: ProcessIo::now() }
    }

    /// The bytes sent to storage since [`WriteMeter::start`], or `None` without the counters.
    pub fn written(&self) -> Option<u64> {
        Some(ProcessIo::now()?.write_bytes.saturating_sub(self.start?.write_bytes))
    }

    /// The note line of a benchmark that writes no user data (waiting for compactions): the
    /// bytes written to storage, to add to the fill's before it.
    pub fn written_line(&self, name: &str) -> String {
        match self.written() {
            None => format!("write amp    : {name} bytes written unknown (no /proc/self/io)"),
            Some(w) => format!("write amp    : {name} {:.1} MB written to storage", w as f64 / 1e6),
        }
    }

    /// The note line printed under a benchmark's result line (`write amp    : name R (...)`,
    /// not starting with the name, which marks result lines): the ratio of the bytes written
    /// to storage to the user bytes, and both. `user_bytes` = operations x (key + value bytes).
    pub fn line(&self, name: &str, user_bytes: u64) -> String {
        match self.written() {
            None => format!("write amp    : {name} unknown (no /proc/self/io)"),
            Some(w) => format!(
                "write amp    : {name} {:.2} ({:.1} MB written to storage for {:.1} MB of user \
                 data, process I/O)",
                if user_bytes == 0 { 0.0 } else { w as f64 / user_bytes as f64 },
                w as f64 / 1e6,
                user_bytes as f64 / 1e6,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_s_format_and_refuses_text_without_the_fields() {
        let text = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\n\
                    write_bytes: 123456\ncancelled_write_bytes: 0\n";
        assert_eq!(parse(text), Some(ProcessIo { write_bytes: 123456, read_bytes: 4096 }));
        assert_eq!(parse("rchar: 1\n"), None);
        assert_eq!(parse("write_bytes: x\nread_bytes: 1\n"), None);
    }

    #[test]
    fn a_synced_file_counts_its_bytes_where_the_kernel_accounts_io() {
        let Some(_) = ProcessIo::now() else { return }; // no task I/O accounting here
        let dir = tempfile::tempdir().unwrap();
        let meter = WriteMeter::start();
        let data = vec![7u8; 4 << 20];
        std::fs::write(dir.path().join("f"), &data).unwrap();
        std::fs::File::open(dir.path().join("f")).unwrap().sync_all().unwrap();
        // A tmpfs counts nothing; a disk file system counts at least the data.
        let w = meter.written().unwrap();
        assert!(w == 0 || w >= data.len() as u64, "{w}");
        assert!(meter.line("fillrandom", 4 << 20).starts_with("write amp    : fillrandom "));
        assert!(meter.written_line("waitforcompaction").contains("MB written to storage"));
    }
}
