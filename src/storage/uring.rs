//! Batches of direct reads in flight together, through io_uring (design.md "Concurrent block
//! reads of `multi_get`").
//!
//! [`read_spans`] takes aligned spans (file descriptor, aligned offset, owned aligned buffer),
//! keeps up to [`DEPTH`] of them in flight on this thread's ring, and fills in each span's
//! result. Each thread has its own ring, made at its first batch and closed when the thread
//! exits: no lock and no shared counter on the read path, and no thread of siftdb's own (the
//! kernel may add its io-wq workers for reads that would block; they end with the ring).
//!
//! Memory safety: the kernel writes into a span's buffer until its completion is reaped, so
//! [`read_spans`] never returns while a submitted read is outstanding. If the ring itself fails
//! (an `io_uring_enter` error other than an interruption, never seen in practice), the buffers
//! of the reads still outstanding are leaked on purpose, as is the ring, whose fd is then never
//! used again by this thread: a leak of a few KiB is better than the kernel writing into freed
//! memory.
//!
//! Where io_uring is refused (`io_uring_setup` fails: an old kernel, a seccomp filter,
//! `kernel.io_uring_disabled`), [`read_spans`] returns `false` and the caller reads one span at
//! a time; the refusal is remembered for the process.

use super::direct::AlignedBuf;
use std::cell::RefCell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Reads in flight at once per thread (the ring's size): the queue depth at which the disk
/// this was measured on reaches its random-read limit (design.md).
pub const DEPTH: usize = 32;

/// One aligned read: `buf.len()` bytes at `at` (both multiples of `ALIGN`) of `fd`.
pub(crate) struct Span {
    /// The file; the caller keeps it open until [`read_spans`] returns.
    pub fd: RawFd,
    /// Aligned file offset.
    pub at: u64,
    /// Aligned destination; `None` after a failed ring leaked it.
    pub buf: Option<AlignedBuf>,
    /// Bytes read or the error; `None` if the span was not submitted.
    pub result: Option<std::io::Result<usize>>,
}

/// Set once `io_uring_setup` was refused: no thread tries again.
static REFUSED: AtomicBool = AtomicBool::new(false);

enum Ring {
    Untried,
    /// Setup failed on this thread, or the ring failed and was leaked.
    Unusable,
    #[cfg(target_os = "linux")]
    Ready(Box<io_uring::IoUring>),
}

thread_local! {
    static RING: RefCell<Ring> = const { RefCell::new(Ring::Untried) };
}

/// Whether batches can go through io_uring on this thread (makes the ring on first call).
pub(crate) fn available() -> bool {
    RING.with(|cell| ensure(&mut cell.borrow_mut()))
}

fn ensure(ring: &mut Ring) -> bool {
    match ring {
        Ring::Untried if REFUSED.load(Relaxed) => {
            *ring = Ring::Unusable;
            false
        }
        Ring::Untried => setup(ring),
        Ring::Unusable => false,
        #[cfg(target_os = "linux")]
        Ring::Ready(_) => true,
    }
}

#[cfg(target_os = "linux")]
fn setup(ring: &mut Ring) -> bool {
    match io_uring::IoUring::new(DEPTH as u32) {
        Ok(r) => {
            *ring = Ring::Ready(Box::new(r));
            true
        }
        Err(_) => {
            REFUSED.store(true, Relaxed);
            *ring = Ring::Unusable;
            false
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn setup(ring: &mut Ring) -> bool {
    REFUSED.store(true, Relaxed);
    *ring = Ring::Unusable;
    false
}

/// Reads every span, up to [`DEPTH`] in flight at once, and sets each one's `result`. Returns
/// false (nothing read) when io_uring is unavailable; the caller then reads the spans itself.
/// Spans left with `result == None` (the ring failed before submitting them) are for the
/// caller to read too.
pub(crate) fn read_spans(spans: &mut [Span]) -> bool {
    RING.with(|cell| {
        let mut ring = cell.borrow_mut();
        if !ensure(&mut ring) {
            return false;
        }
        #[cfg(target_os = "linux")]
        if let Ring::Ready(r) = &mut *ring {
            if let Err(e) = run(r, spans) {
                // Outstanding reads were marked and their buffers leaked by `run`; the ring
                // is leaked too (see the module documentation).
                let _ = e;
                if let Ring::Ready(r) = std::mem::replace(&mut *ring, Ring::Unusable) {
                    std::mem::forget(r);
                }
            }
        }
        true
    })
}

/// Keeps up to DEPTH spans in flight until all completed. On a ring failure, marks the
/// outstanding spans failed, leaks their buffers and returns the error.
#[cfg(target_os = "linux")]
fn run(ring: &mut io_uring::IoUring, spans: &mut [Span]) -> std::io::Result<()> {
    use io_uring::{opcode, types};
    let mut next = 0;
    let mut in_flight = 0usize;
    while next < spans.len() || in_flight > 0 {
        {
            let mut sq = ring.submission();
            while next < spans.len() && in_flight < DEPTH {
                let s = &mut spans[next];
                let buf = s.buf.as_mut().expect("spans come with their buffers").bytes_mut();
                let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
                let entry = opcode::Read::new(types::Fd(s.fd), buf.as_mut_ptr(), len)
                    .offset(s.at)
                    .build()
                    .user_data(next as u64);
                // SAFETY: the buffer is a heap allocation owned by `spans[next]`, which
                // outlives this call, and this function does not return while the read is
                // outstanding (or leaks the buffer: see the module documentation). The fd is
                // kept open by the caller for the whole call.
                if unsafe { sq.push(&entry) }.is_err() {
                    break; // queue full: cannot happen with in_flight < DEPTH = its size
                }
                next += 1;
                in_flight += 1;
            }
        }
        // Everything is submitted: wake once, when the last read completes (the caller needs
        // them all; one wakeup per read costs a scheduling delay each on a busy machine).
        // Otherwise wake at the first completion, to refill the queue.
        let wait = if next < spans.len() { 1 } else { in_flight };
        match ring.submit_and_wait(wait) {
            Ok(_) => {}
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)) => {}
            Err(e) => {
                for s in spans[..next].iter_mut().filter(|s| s.result.is_none()) {
                    std::mem::forget(s.buf.take());
                    s.result = Some(Err(std::io::Error::new(e.kind(), format!("io_uring: {e}"))));
                }
                return Err(e);
            }
        }
        for c in ring.completion() {
            let s = &mut spans[c.user_data() as usize];
            let r = c.result();
            s.result = Some(if r < 0 {
                Err(std::io::Error::from_raw_os_error(-r))
            } else {
                Ok(r as usize)
            });
            in_flight -= 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::direct::{self, ALIGN};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_batch_reads_every_span_and_a_bad_span_fails_alone() {
        // Under target/ (a real disk in this repository's setups); /tmp may be tmpfs.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR").to_owned() + "/target").unwrap();
        let path = dir.path().join("data");
        let data: Vec<u8> = (0..100 * ALIGN).map(|i| (i / ALIGN * 7 + i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = direct::open(&path, false).unwrap();
        if !available() {
            eprintln!("io_uring is refused here; read_spans must say so");
            assert!(!read_spans(&mut []));
            return;
        }
        // More spans than DEPTH, one at a misaligned offset (EINVAL under O_DIRECT), one past
        // the end (0 bytes).
        let mut offsets: Vec<u64> =
            (0..3 * DEPTH as u64).map(|i| (i * 37 % 99) * ALIGN as u64).collect();
        offsets[5] = 100;
        offsets[9] = data.len() as u64;
        let mut spans: Vec<Span> = offsets
            .iter()
            .map(|&at| Span {
                fd: file.as_raw_fd(),
                at,
                buf: Some(AlignedBuf::new(2 * ALIGN).unwrap()),
                result: None,
            })
            .collect();
        assert!(read_spans(&mut spans));
        for (i, s) in spans.iter().enumerate() {
            let got = s.result.as_ref().expect("every span completed");
            match i {
                5 => assert_eq!(got.as_ref().unwrap_err().raw_os_error(), Some(libc::EINVAL)),
                9 => assert_eq!(*got.as_ref().unwrap(), 0),
                _ => {
                    let at = s.at as usize;
                    let n = *got.as_ref().unwrap();
                    assert_eq!(n, (2 * ALIGN).min(data.len() - at), "span {i}");
                    assert_eq!(&s.buf.as_ref().unwrap().bytes()[..n], &data[at..at + n]);
                }
            }
        }
    }
}
