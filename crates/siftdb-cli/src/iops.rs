//! `siftdb iops FILE`: the disk's own random-read limit, to state direct-read figures as a
//! fraction of it. Reads of 4 KiB (or each size of `--sizes`) at uniformly random 4 KiB-aligned
//! offsets of an existing file, with `O_DIRECT` (no page cache), at each queue depth of
//! `--depths` (one thread per outstanding read, each doing blocking `pread`s), for `--seconds`
//! each. A direct read of an SST block transfers the 4 KiB pages the block spans: one page, or
//! two when it straddles a page boundary, so `--sizes 4,8` gives the disk's rate for both.
//! `--batches N` adds the limit a batched lookup (`multi_get`) meets: closed batches of N reads
//! through io_uring, each submitted as it is queued, all waited for before the next batch, so
//! the queue fills and drains as a batch's block reads do.
//!
//! Read only: the file is opened `O_RDONLY | O_DIRECT` and never created, written or truncated.
//! Pass a large existing file whose blocks were written (an SST, or `dd if=/dev/urandom of=big
//! bs=1M count=4096`): reads spread over the whole file, and a file smaller than the device's
//! cache measures the cache. A file made only with `fallocate` has unwritten extents, which
//! ext4 and XFS answer with zeros without any device read; `run` warns when QD1 reads are too
//! fast to be device reads.

use clap::Args;
use siftdb::filter::rng::SplitMix64;
use siftdb::storage::direct::{self, AlignedBuf, ALIGN};
use siftdb::{Error, Result};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `siftdb iops`.
#[derive(Args, Debug)]
pub struct IopsArgs {
    /// An existing file to read (never written); at least 4096 bytes.
    pub file: PathBuf,
    /// Seconds of reading per queue depth.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Queue depths to measure, comma-separated (threads with one read in flight each).
    #[arg(long, value_delimiter = ',', default_value = "1,32")]
    pub depths: Vec<usize>,
    /// Seed of the random offsets.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Read sizes in KiB, comma-separated, each a multiple of 4 (one table per size).
    #[arg(long, value_delimiter = ',', default_value = "4")]
    pub sizes: Vec<usize>,
    /// Closed batches to measure, comma-separated batch sizes (none by default): N reads
    /// submitted through io_uring one after another, as `multi_get` submits its block reads,
    /// then all N waited for before the next batch starts. The disk's limit for a batched
    /// lookup whose batch makes N device reads.
    #[arg(long, value_delimiter = ',')]
    pub batches: Vec<usize>,
}

/// A QD1 read faster than this (microseconds) did not reach a device (NVMe reads take 10 us
/// or more); `run` then warns that the file is probably unwritten.
const FAST_READ_US: f64 = 5.0;

/// One queue depth's (or batch size's) result.
struct DepthResult {
    reads: u64,
    elapsed: Duration,
}

impl DepthResult {
    /// Reads per second, and the microseconds `n` reads take (0 when none was made).
    fn rates(&self, n: usize) -> (f64, f64) {
        let secs = self.elapsed.as_secs_f64();
        let per_n = if self.reads == 0 { 0.0 } else { secs * 1e6 * n as f64 / self.reads as f64 };
        (self.reads as f64 / secs, per_n)
    }
}

pub fn run(args: &IopsArgs) -> Result<()> {
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) {
        return Err(Error::invalid(format!(
            "--seconds={} is out of range: more than 0, at most 3600",
            args.seconds
        )));
    }
    if let Some(&d) = args.depths.iter().find(|&&d| d == 0 || d > 1024) {
        return Err(Error::invalid(format!("--depths value {d} is out of range: 1..=1024")));
    }
    if let Some(&n) = args.batches.iter().find(|&&n| n == 0 || n > 1024) {
        return Err(Error::invalid(format!("--batches value {n} is out of range: 1..=1024")));
    }
    if let Some(&k) = args.sizes.iter().find(|&&k| k == 0 || k % 4 != 0 || k > 1024) {
        return Err(Error::invalid(format!(
            "--sizes value {k} is out of range: a multiple of 4 KiB, 4..=1024"
        )));
    }
    let meta = std::fs::metadata(&args.file)
        .map_err(|e| Error::io(format!("inspecting {}", args.file.display()), e))?;
    if !meta.is_file() {
        return Err(Error::invalid(format!(
            "{} is not a regular file (siftdb iops reads an existing file)",
            args.file.display()
        )));
    }
    let blocks = meta.len() / ALIGN as u64;
    if blocks == 0 {
        return Err(Error::invalid(format!(
            "{} has {} bytes; siftdb iops needs at least {ALIGN} (make one with `fallocate -l 4G FILE`)",
            args.file.display(),
            meta.len()
        )));
    }
    let file = direct::open(&args.file, false)?;
    let duration = Duration::from_secs_f64(args.seconds);
    for &kib in &args.sizes {
        let pages = (kib * 1024 / ALIGN) as u64;
        if pages > blocks {
            return Err(Error::invalid(format!(
                "--sizes value {kib} is larger than {} ({} bytes)",
                args.file.display(),
                meta.len()
            )));
        }
        let size = pages as usize * ALIGN;
        println!(
            "siftdb iops: {} ({:.1} MiB, {blocks} blocks of 4 KiB), O_DIRECT random {kib} KiB reads, {} s per depth",
            args.file.display(),
            meta.len() as f64 / (1 << 20) as f64,
            args.seconds
        );
        println!("{:>4} {:>12} {:>10} {:>12}", "QD", "reads/s", "MB/s", "us/read");
        for &depth in &args.depths {
            let r = measure(&file, (blocks - pages + 1, size), depth, duration, args.seed)?;
            // `depth` reads are in flight at any time: each takes `depth` reads' share.
            let (per_sec, latency) = r.rates(depth);
            println!(
                "{depth:>4} {per_sec:>12.0} {:>10.1} {latency:>12.1}",
                per_sec * size as f64 / 1e6
            );
            if depth == 1 && r.reads > 0 && latency < FAST_READ_US {
                println!(
                    "     note: {latency:.1} us per read is faster than a device read: blocks \
                     never written (a file made with `fallocate`) read as zeros without I/O; \
                     write the file first (e.g. `dd if=/dev/urandom of=FILE bs=1M count=4096`)"
                );
            }
        }
        if !args.batches.is_empty() {
            println!("{:>5} {:>12} {:>10} {:>12}", "batch", "reads/s", "MB/s", "us/batch");
        }
        for &batch in &args.batches {
            let r = measure_batches(&file, (blocks - pages + 1, size), batch, duration, args.seed)?;
            let (per_sec, per_batch) = r.rates(batch);
            println!(
                "{batch:>5} {per_sec:>12.0} {:>10.1} {per_batch:>12.1}",
                per_sec * size as f64 / 1e6
            );
        }
    }
    Ok(())
}

/// Closed batches of `batch` reads of `size` bytes at random 4 KiB-aligned offsets (`starts`
/// of them) through one io_uring, until `duration` has passed: each read is submitted as it
/// is queued (as `multi_get`'s flight does), then the whole batch is waited for.
fn measure_batches(
    file: &std::fs::File,
    (starts, size): (u64, usize),
    batch: usize,
    duration: Duration,
    seed: u64,
) -> Result<DepthResult> {
    use io_uring::{opcode, types};
    use std::os::fd::AsRawFd;
    let entries = batch.next_power_of_two() as u32;
    let mut ring = io_uring::IoUring::new(entries).map_err(|e| {
        Error::io("setting up io_uring for --batches (refused here?)".to_string(), e)
    })?;
    let mut bufs: Vec<AlignedBuf> =
        (0..batch).map(|_| AlignedBuf::new(size)).collect::<Result<_>>()?;
    let mut rng = SplitMix64::new(seed);
    let fd = types::Fd(file.as_raw_fd());
    let start = Instant::now();
    let deadline = start + duration;
    let mut reads = 0u64;
    let enter = |ring: &mut io_uring::IoUring, wait: usize| loop {
        match ring.submit_and_wait(wait) {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            r => return r.map_err(|e| Error::io("io_uring_enter".to_string(), e)),
        }
    };
    let mut run = |bufs: &mut [AlignedBuf]| -> Result<()> {
        while Instant::now() < deadline {
            for (i, buf) in bufs.iter_mut().enumerate() {
                let at = rng.below(starts) * ALIGN as u64;
                let bytes = buf.bytes_mut();
                let entry = opcode::Read::new(fd, bytes.as_mut_ptr(), bytes.len() as u32)
                    .offset(at)
                    .build()
                    .user_data(i as u64);
                // SAFETY: the buffer is not reused or freed while its read is outstanding: all
                // `batch` completions are reaped below before the next batch, and on an error
                // the buffers are leaked (`run`'s caller).
                unsafe { ring.submission().push(&entry) }.expect("the ring holds a whole batch");
                enter(&mut ring, 0)?;
            }
            let mut done = 0;
            while done < batch {
                enter(&mut ring, 1)?;
                for c in ring.completion() {
                    let n = c.result();
                    if n < 0 {
                        return Err(Error::io(
                            "a batched read".to_string(),
                            std::io::Error::from_raw_os_error(-n),
                        ));
                    }
                    if n as usize != size {
                        return Err(Error::invalid(format!(
                            "short read of {n} bytes: the file shrank"
                        )));
                    }
                    done += 1;
                }
            }
            reads += batch as u64;
        }
        Ok(())
    };
    if let Err(e) = run(&mut bufs) {
        // Reads may still be outstanding: the kernel writes into their buffers until they
        // complete, so the buffers are leaked rather than freed (a few KiB, once).
        std::mem::forget(bufs);
        return Err(e);
    }
    Ok(DepthResult { reads, elapsed: start.elapsed() })
}

/// `depth` threads reading `size` bytes at random 4 KiB-aligned offsets (`starts` of them)
/// until `duration` has passed.
fn measure(
    file: &std::fs::File,
    (starts, size): (u64, usize),
    depth: usize,
    duration: Duration,
    seed: u64,
) -> Result<DepthResult> {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = start + duration;
    let counts: Vec<Result<u64>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..depth)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || -> Result<u64> {
                    let mut rng = SplitMix64::new(seed ^ (t as u64 + 1).wrapping_mul(0x9E37));
                    let mut buf = AlignedBuf::new(size)?;
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let at = rng.below(starts) * ALIGN as u64;
                        let read = file.read_at(buf.bytes_mut(), at);
                        let n = read.map_err(|e| Error::io(format!("reading at {at}"), e))?;
                        if n != size {
                            return Err(Error::invalid(format!(
                                "short read of {n} bytes at {at}: the file shrank"
                            )));
                        }
                        reads += 1;
                        if Instant::now() >= deadline {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    Ok(reads)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("iops worker panicked")).collect()
    });
    let elapsed = start.elapsed();
    let mut reads = 0;
    for c in counts {
        reads += c?;
    }
    Ok(DepthResult { reads, elapsed })
}
