//! Batches of direct reads in flight together, through io_uring (design.md#multi-get).
//!
//! A [`Flight`] takes aligned spans (file descriptor, aligned offset, owned aligned buffer)
//! and submits each at once, keeping up to [`DEPTH`] in flight on this thread's ring; its
//! `wait` fills in each span's result. Each thread has its own ring, made at its first batch
//! and closed when the thread exits: no lock and no shared counter on the read path, and no
//! thread of siftdb's own (the kernel may add its io-wq workers for reads that would block;
//! they end with the ring).
//!
//! Memory safety: the kernel writes into a span's buffer until its completion is reaped, so a
//! flight never gives a buffer back or frees it while its read is outstanding. If the ring
//! itself fails (an `io_uring_enter` error other than an interruption, never seen in
//! practice), the buffers of the reads still outstanding are leaked on purpose, as is the
//! ring, whose fd is then never used again by this thread: a leak of a few KiB is better than
//! the kernel writing into freed memory.
//!
//! Where io_uring is refused (`io_uring_setup` fails: an old kernel, a seccomp filter,
//! `kernel.io_uring_disabled`), [`Flight::new`] gives `None` and the caller reads one block
//! at a time; the refusal is remembered for the process.

use super::direct::AlignedBuf;
use std::cell::RefCell;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Reads in flight at once per thread (the ring's size): the queue depth at which the disk
/// this was measured on reaches its random-read limit (design.md).
pub const DEPTH: usize = 32;

/// One aligned read: `len` bytes at `at` (both multiples of `ALIGN`) of `fd` into `buf`.
pub(crate) struct Span {
    /// The file; the caller keeps it open until the flight is waited for or dropped.
    pub fd: RawFd,
    /// Aligned file offset.
    pub at: u64,
    /// Bytes to read: at most `buf.len()`, which may be larger (a reused buffer). The device
    /// transfers this many, so it is the span the caller needs, not the buffer's size.
    pub len: usize,
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

/// Whether io_uring has not been refused in this process: a batch may plan device reads and
/// let [`Flight::new`] make this thread's ring when the first one is needed, so a thread that
/// only reads buffered or mapped files never makes one (setting a ring up costs far more than
/// a batch of lookups from the page cache).
pub(crate) fn not_refused() -> bool {
    !REFUSED.load(Relaxed)
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

thread_local! {
    /// A [`Flight`] is open on this thread: a second one (a merge operator reading the
    /// database from inside a batch) gets none and reads one block at a time.
    static ACTIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Reads in flight on this thread's ring: each read is submitted as it is added, so the device
/// works while the caller finds the next blocks, and [`Flight::wait`] collects them all.
/// Dropping a flight waits for its outstanding reads (the kernel writes into their buffers
/// until then). One flight per thread at a time; not `Send` (the ring is the thread's).
pub(crate) struct Flight {
    spans: Vec<Span>,
    /// Spans before `next` were handed to the ring (or failed with it).
    next: usize,
    in_flight: usize,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Flight {
    /// A new flight, or `None` when io_uring is unavailable or a flight is already open on
    /// this thread.
    pub(crate) fn new() -> Option<Flight> {
        if ACTIVE.with(|a| a.get()) || !available() {
            return None;
        }
        ACTIVE.with(|a| a.set(true));
        let _not_send = std::marker::PhantomData;
        Some(Flight { spans: Vec::new(), next: 0, in_flight: 0, _not_send })
    }

    /// Adds and submits a read of `len <= buf.len()` bytes at `at` (both aligned) of `fd`,
    /// which the caller keeps open until the flight is waited for or dropped. Returns its
    /// number.
    pub(crate) fn add(&mut self, fd: RawFd, at: u64, buf: AlignedBuf, len: usize) -> usize {
        assert!(len <= buf.len(), "a span reads into its own buffer");
        self.spans.push(Span { fd, at, len, buf: Some(buf), result: None });
        self.pump(0);
        self.spans.len() - 1
    }

    /// Bytes span `n` asks the device for.
    #[cfg(test)]
    pub(crate) fn requested(&self, n: usize) -> usize {
        self.spans[n].len
    }

    /// Waits for every read; each span's `result` is set, except for spans the ring never
    /// took (it failed): those are for the caller to read the ordinary way.
    pub(crate) fn wait(mut self) -> Vec<Span> {
        self.drain();
        std::mem::take(&mut self.spans)
    }

    fn drain(&mut self) {
        while self.next < self.spans.len() || self.in_flight > 0 {
            // Everything submitted: wake once, when the last read completes (one wakeup per
            // read costs a scheduling delay each on a busy machine); else at the first one.
            let wait = if self.next < self.spans.len() { 1 } else { self.in_flight };
            if !self.pump(wait) {
                break;
            }
        }
    }

    /// Submits what fits in the ring, waits for `wait` completions and reaps. False once the
    /// ring is unusable (nothing outstanding then: see `fail`).
    fn pump(&mut self, wait: usize) -> bool {
        RING.with(|cell| {
            let mut ring = cell.borrow_mut();
            #[cfg(target_os = "linux")]
            if let Ring::Ready(r) = &mut *ring {
                if let Err(e) = self.pump_ring(r, wait) {
                    self.fail(&e);
                    if let Ring::Ready(r) = std::mem::replace(&mut *ring, Ring::Unusable) {
                        std::mem::forget(r); // see the module documentation
                    }
                    return false;
                }
                return true;
            }
            // The ring is gone: the unsubmitted spans stay unread, for the caller.
            self.next = self.spans.len();
            false
        })
    }

    #[cfg(target_os = "linux")]
    fn pump_ring(&mut self, ring: &mut io_uring::IoUring, wait: usize) -> std::io::Result<()> {
        use io_uring::{opcode, types};
        {
            let mut sq = ring.submission();
            while self.next < self.spans.len() && self.in_flight < DEPTH {
                let s = &mut self.spans[self.next];
                let buf = s.buf.as_mut().expect("spans come with their buffers").bytes_mut();
                let len = u32::try_from(s.len).unwrap_or(u32::MAX);
                let entry = opcode::Read::new(types::Fd(s.fd), buf.as_mut_ptr(), len)
                    .offset(s.at)
                    .build()
                    .user_data(self.next as u64);
                // SAFETY: the buffer is a heap allocation owned by the span, which the flight
                // owns (moving the span or the vector does not move it), and the flight does
                // not give it back or free it while the read is outstanding: `wait` and `drop`
                // reap every completion first, and a failed ring leaks the outstanding
                // buffers (`fail`); a forgotten flight leaks them with itself. The fd is kept
                // open by the caller until then.
                if unsafe { sq.push(&entry) }.is_err() {
                    break; // queue full: cannot happen with in_flight < DEPTH = its size
                }
                self.next += 1;
                self.in_flight += 1;
            }
        }
        loop {
            match ring.submit_and_wait(wait) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EBUSY)) => break,
                Err(e) => return Err(e),
            }
        }
        for c in ring.completion() {
            let Some(s) = self.spans.get_mut(c.user_data() as usize) else { continue };
            let r = c.result();
            s.result = Some(if r < 0 {
                Err(std::io::Error::from_raw_os_error(-r))
            } else {
                Ok(r as usize)
            });
            self.in_flight -= 1;
        }
        Ok(())
    }

    /// The ring failed: the outstanding reads fail and their buffers are leaked (the kernel
    /// may still write into them); unsubmitted spans stay unread.
    fn fail(&mut self, e: &std::io::Error) {
        for s in self.spans[..self.next].iter_mut().filter(|s| s.result.is_none()) {
            std::mem::forget(s.buf.take());
            s.result = Some(Err(std::io::Error::new(e.kind(), format!("io_uring: {e}"))));
        }
        self.in_flight = 0;
        self.next = self.spans.len();
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if self.in_flight > 0 {
            // Unsubmitted reads need not be made; outstanding ones must complete.
            self.spans.truncate(self.next);
            self.drain();
        }
        ACTIVE.with(|a| a.set(false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::direct::{self, ALIGN};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_flight_reads_every_span_and_a_bad_span_fails_alone() {
        // Under target/ (a real disk in this repository's setups); /tmp may be tmpfs.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR").to_owned() + "/target").unwrap();
        let path = dir.path().join("data");
        let data: Vec<u8> = (0..100 * ALIGN).map(|i| (i / ALIGN * 7 + i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = direct::open(&path, false).unwrap();
        if !available() {
            eprintln!("io_uring is refused here; Flight::new must say so");
            assert!(Flight::new().is_none());
            return;
        }
        // More spans than DEPTH, one at a misaligned offset (EINVAL under O_DIRECT), one past
        // the end (0 bytes). Each buffer is twice the span: only the span is read.
        let mut offsets: Vec<u64> =
            (0..3 * DEPTH as u64).map(|i| (i * 37 % 99) * ALIGN as u64).collect();
        offsets[5] = 100;
        offsets[9] = data.len() as u64;
        let mut flight = Flight::new().unwrap();
        assert!(Flight::new().is_none(), "one flight per thread at a time");
        for &at in &offsets {
            flight.add(file.as_raw_fd(), at, AlignedBuf::new(4 * ALIGN).unwrap(), 2 * ALIGN);
        }
        let spans = flight.wait();
        assert!(Flight::new().is_some(), "a waited flight is closed");
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

    #[test]
    fn a_flight_dropped_with_reads_outstanding_waits_for_them_and_closes() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR").to_owned() + "/target").unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, vec![7u8; 64 * ALIGN]).unwrap();
        let file = direct::open(&path, false).unwrap();
        let Some(mut flight) = Flight::new() else {
            assert!(!available(), "only a refused io_uring gives no flight");
            return;
        };
        // More than the ring holds: some submitted, some not yet, when the flight is dropped.
        for i in 0..(2 * DEPTH as u64) {
            let at = (i % 64) * ALIGN as u64;
            flight.add(file.as_raw_fd(), at, AlignedBuf::new(ALIGN).unwrap(), ALIGN);
        }
        drop(flight);
        let mut again = Flight::new().expect("the dropped flight closed");
        again.add(file.as_raw_fd(), 0, AlignedBuf::new(ALIGN).unwrap(), ALIGN);
        let spans = again.wait();
        assert_eq!(spans[0].result.as_ref().unwrap().as_ref().unwrap(), &ALIGN);
        assert!(spans[0].buf.as_ref().unwrap().bytes().iter().all(|&b| b == 7));
    }
}
