//! The engine-agnostic part of the db_bench workloads: the thread runner that seeds each thread
//! like db_bench's thread states and merges their figures, the budget that stops a read loop
//! after `--reads` operations or `--duration` seconds, and readrandom's loop. Each driver keeps
//! its engine calls and its own seed counter.

use crate::hist::Histogram;
use crate::key_layout::KeyLayout;
use crate::keys::ValueGen;
use crate::result_line::ThreadStats;
use siftdb::filter::rng::SplitMix64;
use std::time::{Duration, Instant};

/// Operations between clock reads of a `--duration` run (and between progress-bar updates).
pub const TICK: u64 = 1024;

/// A thread body: its rng, its value source, its stats.
pub type Body<'f, E> =
    dyn Fn(&mut SplitMix64, &mut ValueGen, &mut ThreadStats) -> Result<(), E> + Sync + 'f;

/// Runs `body` on `threads` threads (at least one), thread i with `SplitMix64::new(base_seed +
/// i)` and `ValueGen::new(base_seed + i, value_size)`, and merges their figures (db_bench's
/// `Stats::Merge`). The first error of a thread, in thread order, is returned.
pub fn run_threads<E: Send>(
    threads: usize,
    base_seed: u64,
    value_size: usize,
    body: &Body<'_, E>,
) -> Result<ThreadStats, E> {
    let results: Vec<Result<ThreadStats, E>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1) as u64)
            .map(|i| {
                s.spawn(move || {
                    let mut rng = SplitMix64::new(base_seed + i);
                    let mut values = ValueGen::new(base_seed + i, value_size);
                    let mut st = ThreadStats::start();
                    body(&mut rng, &mut values, &mut st)?;
                    st.stop();
                    Ok(st)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("benchmark thread panicked")).collect()
    });
    let mut merged: Option<ThreadStats> = None;
    for r in results {
        let r = r?;
        match &mut merged {
            None => merged = Some(r),
            Some(m) => m.merge(&r),
        }
    }
    Ok(merged.expect("at least one thread"))
}

/// When a read loop stops: after `reads` operations, or with `--duration` after that many
/// seconds (the clock is read once per [`TICK`] operations).
pub struct Budget {
    reads: u64,
    deadline: Option<Instant>,
    next_check: u64,
    timed: bool,
}

impl Budget {
    /// One per thread, made when the thread starts; `duration_secs` 0 means no deadline.
    pub fn new(reads: u64, duration_secs: u64) -> Budget {
        let deadline =
            (duration_secs > 0).then(|| Instant::now() + Duration::from_secs(duration_secs));
        Budget { reads, deadline, next_check: 0, timed: false }
    }

    /// With `timed`, [`read_loop`] times every operation into the thread's latency histogram
    /// (`--histogram`).
    pub fn timed(mut self, timed: bool) -> Budget {
        self.timed = timed;
        self
    }

    /// Operations the next step may do, at most `want` (0 = stop) after `done` operations.
    pub fn grant(&mut self, done: u64, want: u64) -> u64 {
        match self.deadline {
            None => want.min(self.reads.saturating_sub(done)),
            Some(d) => {
                if done >= self.next_check {
                    if Instant::now() >= d {
                        return 0;
                    }
                    self.next_check = done + TICK;
                }
                want
            }
        }
    }
}

/// readrandom's loop (also the readers of readwhilewriting): reads the keys of uniform numbers
/// below `layout.num` at `key_size` until `budget` stops it. `get` returns the length of the
/// value found, if any; `after` sees the count of operations before each one's end (for a
/// progress bar).
pub fn read_loop<E>(
    rng: &mut SplitMix64,
    st: &mut ThreadStats,
    layout: KeyLayout,
    mut budget: Budget,
    key_size: usize,
    mut get: impl FnMut(&[u8]) -> Result<Option<usize>, E>,
    mut after: impl FnMut(u64),
) -> Result<(), E> {
    let mut key = Vec::with_capacity(key_size);
    let mut i = 0;
    let mut latency = budget.timed.then(Box::<Histogram>::default);
    while budget.grant(i, 1) == 1 {
        layout.key(rng.below(layout.num), key_size, &mut key);
        let began = latency.is_some().then(Instant::now);
        let found = get(&key)?;
        if let (Some(h), Some(t)) = (&mut latency, began) {
            h.record(t.elapsed().as_nanos() as u64);
        }
        if let Some(len) = found {
            st.found += 1;
            st.bytes += (key.len() + len) as u64;
        }
        after(i);
        i += 1;
    }
    st.done = i;
    st.report_found = true;
    st.latency = latency;
    Ok(())
}

/// Paces a writer to `bytes_per_sec` (db_bench's `--benchmark_write_rate_limit`; 0 = no limit):
/// after each write of `bytes`, sleeps until the bytes written so far are no more than the
/// rate allows since the first write.
pub struct WriteRate {
    bytes_per_sec: u64,
    start: Instant,
    sent: u64,
}

impl WriteRate {
    /// A pacer starting now.
    pub fn new(bytes_per_sec: u64) -> WriteRate {
        WriteRate { bytes_per_sec, start: Instant::now(), sent: 0 }
    }

    /// Accounts one write of `bytes`, sleeping as needed.
    pub fn pace(&mut self, bytes: u64) {
        if self.bytes_per_sec == 0 {
            return;
        }
        self.sent += bytes;
        let due = Duration::from_secs_f64(self.sent as f64 / self.bytes_per_sec as f64);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn budget_without_duration_grants_exactly_the_reads() {
        let mut b = Budget::new(10, 0);
        assert_eq!((b.grant(0, 4), b.grant(8, 4), b.grant(10, 4)), (4, 2, 0));
    }

    #[test]
    fn threads_are_seeded_in_order_and_their_figures_merge() {
        let seen = std::sync::Mutex::new(BTreeSet::new());
        let st = run_threads::<()>(3, 40, 8, &|rng, _, st| {
            seen.lock().unwrap().insert(rng.next_u64());
            st.done = 5;
            Ok(())
        })
        .unwrap();
        let want: BTreeSet<u64> = (40..43).map(|s| SplitMix64::new(s).next_u64()).collect();
        assert_eq!((seen.into_inner().unwrap(), st.done), (want, 15));
        assert_eq!(run_threads(2, 0, 8, &|_, _, _| Err("no")).unwrap_err(), "no");
    }

    #[test]
    fn a_timed_read_loop_records_one_latency_per_operation() {
        let layout = KeyLayout { num: 100, spacing: 1 };
        let mut st = ThreadStats::start();
        let r: Result<(), ()> = read_loop(
            &mut SplitMix64::new(1),
            &mut st,
            layout,
            Budget::new(30, 0).timed(true),
            16,
            |_| Ok(Some(1)),
            |_| {},
        );
        r.unwrap();
        assert_eq!(st.latency.as_ref().map(|h| h.count()), Some(30));
        assert!(st.latency_line("readrandom").unwrap().contains("p99.9"));
        let mut untimed = ThreadStats::start();
        let r: Result<(), ()> = read_loop(
            &mut SplitMix64::new(1),
            &mut untimed,
            layout,
            Budget::new(5, 0),
            16,
            |_| Ok(None),
            |_| {},
        );
        r.unwrap();
        assert!(untimed.latency.is_none() && untimed.latency_line("x").is_none());
        // Merging keeps every thread's operations.
        untimed.merge(&st);
        st.merge(&st.clone());
        assert_eq!(untimed.latency.unwrap().count(), 30);
        assert_eq!(st.latency.unwrap().count(), 60);
    }

    #[test]
    fn a_paced_writer_takes_at_least_the_time_its_rate_allows() {
        // 10 writes of 100 bytes at 10,000 bytes/s: the last is due at 0.1 s.
        let start = Instant::now();
        let mut rate = WriteRate::new(10_000);
        for _ in 0..10 {
            rate.pace(100);
        }
        assert!(start.elapsed() >= Duration::from_millis(100));
        // Without a limit nothing is accounted, so nothing is ever due.
        let mut unlimited = WriteRate::new(0);
        unlimited.pace(u64::MAX);
        assert_eq!(unlimited.sent, 0);
    }

    #[test]
    fn the_read_loop_counts_what_get_found() {
        let layout = KeyLayout { num: 100, spacing: 1 };
        let mut st = ThreadStats::start();
        let mut rng = SplitMix64::new(1);
        let (mut asked, mut ticks) = (0, 0);
        let r: Result<(), ()> = read_loop(
            &mut rng,
            &mut st,
            layout,
            Budget::new(50, 0),
            16,
            |k| {
                asked += 1;
                Ok((k[7] % 2 == 0).then_some(3))
            },
            |_| ticks += 1,
        );
        r.unwrap();
        assert_eq!((st.done, asked, ticks), (50, 50, 50));
        assert!(st.found > 0 && st.found < 50 && st.report_found);
        assert_eq!(st.bytes, st.found * 19);
    }
}
