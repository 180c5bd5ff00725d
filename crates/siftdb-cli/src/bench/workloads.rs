//! The benchmarks. Each thread draws key numbers from its own `SplitMix64`, seeded like
//! db_bench's thread states: `--seed` plus a counter of threads started so far in the run, so
//! every benchmark of a run gets fresh streams and a run is reproducible from its flags.
//!
//! Semantics follow db_bench: fills write one key per `put` (db_bench's default batch of 1);
//! `fillseq` writes 0..num in order, `fillrandom` and `overwrite` num keys drawn uniformly from
//! [0, num) with repeats (about 1 - 1/e = 63.2% of the numbers end up present); reads draw from
//! [0, num); `readmissing` reads with `key_size + 1` (see keys.rs). Every number v is written
//! and read as key number v * `--key_spacing` (key_layout.rs). The scan-filter benchmarks
//! (rangeempty, prefixscan) are in scans.rs.

use super::flags::Flags;
use super::report::ThreadStats;
use crate::progress;
use indicatif::ProgressBar;
use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Result, WriteOptions};
use siftdb_bench_kit::key_layout::KeyLayout;
use siftdb_bench_kit::keys::ValueGen;
pub(super) use siftdb_bench_kit::workloads::Budget;
use siftdb_bench_kit::workloads::{self, WriteRate, TICK};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a benchmark's threads share.
pub struct Ctx<'a> {
    /// The flags of the run.
    pub flags: &'a Flags,
    /// The database, shared by every thread.
    pub db: &'a Db,
    /// Seed of the first thread of the next benchmark.
    pub next_seed: u64,
}

/// A thread body: database, its rng, its value source, the shared bar, its stats.
pub(super) type Body<'f> = dyn Fn(&Db, &mut SplitMix64, &mut ValueGen, &ProgressBar, &mut ThreadStats) -> Result<()>
    + Sync
    + 'f;

impl Ctx<'_> {
    fn write_opts(&self) -> WriteOptions {
        WriteOptions { sync: self.flags.sync }
    }

    /// The key layout of the flags (checked by `KeyLayout::new` when the run starts).
    pub(super) fn layout(&self) -> KeyLayout {
        KeyLayout { num: self.flags.num, spacing: self.flags.key_spacing }
    }

    /// Runs `body` on `--threads` threads sharing the database and merges their stats
    /// (threads seeded as `siftdb_bench_kit::workloads::run_threads` says).
    pub(super) fn parallel(
        &mut self,
        phase: &str,
        ops_per_thread: u64,
        body: &Body<'_>,
    ) -> Result<ThreadStats> {
        let n = self.flags.threads.max(1);
        let base = self.next_seed;
        self.next_seed += n as u64;
        let pb = progress::bar(phase, ops_per_thread * n as u64);
        let db = self.db;
        let merged = workloads::run_threads(n, base, self.flags.value_size, &|rng, values, st| {
            body(db, rng, values, &pb, st)
        });
        pb.finish_and_clear();
        merged
    }

    /// fillseq / fillrandom / overwrite: `num` puts per thread.
    pub fn fill(&mut self, name: &str, sequential: bool) -> Result<ThreadStats> {
        let (num, ks, vs) = (self.flags.num, self.flags.key_size, self.flags.value_size);
        let (wo, layout) = (self.write_opts(), self.layout());
        self.parallel(name, num, &|db, rng, values, pb, st| {
            let mut key = Vec::with_capacity(ks);
            for i in 0..num {
                let k = if sequential { i } else { rng.below(num) };
                layout.key(k, ks, &mut key);
                db.write_opt(one_put(&key, values.next(vs)), wo)?;
                st.bytes += (ks + vs) as u64;
                tick(pb, i);
            }
            st.done = num;
            Ok(())
        })
    }

    /// readrandom (`key_size`) and readmissing (`key_size + 1`).
    pub fn read_random(&mut self, name: &str, key_size: usize) -> Result<ThreadStats> {
        let (reads, secs, layout) = (self.flags.reads(), self.flags.duration, self.layout());
        let timed = self.flags.histogram;
        self.parallel(name, reads, &|db, rng, _, pb, st| {
            read_loop(db, rng, pb, st, layout, Budget::new(reads, secs).timed(timed), key_size)
        })
    }

    /// multireadrandom: random present-range keys read `--batch_size` at a time through
    /// `Db::multi_get` (db_bench's benchmark of the same name); ops count keys.
    pub fn multi_read_random(&mut self) -> Result<ThreadStats> {
        let (num, reads, ks) = (self.flags.num, self.flags.reads(), self.flags.key_size);
        let (batch, secs) = (self.flags.batch_size.max(1) as u64, self.flags.duration);
        let layout = self.layout();
        let opts = siftdb::ReadOptions {
            multi_get_threads: self.flags.multi_get_threads,
            ..Default::default()
        };
        self.parallel("multireadrandom", reads, &|db, rng, _, pb, st| {
            let mut budget = Budget::new(reads, secs);
            let mut keys: Vec<Vec<u8>> = (0..batch).map(|_| Vec::with_capacity(ks)).collect();
            let mut i = 0;
            loop {
                let n = budget.grant(i, batch) as usize;
                if n == 0 {
                    break;
                }
                for key in &mut keys[..n] {
                    layout.key(rng.below(num), ks, key);
                }
                for (key, got) in keys.iter().zip(db.multi_get_opt(&keys[..n], &opts)) {
                    if let Some(v) = got? {
                        st.found += 1;
                        st.bytes += (key.len() + v.len()) as u64;
                    }
                    tick(pb, i);
                    i += 1;
                }
            }
            st.done = i;
            st.report_found = true;
            Ok(())
        })
    }

    /// seekrandom: seek to a random key, read the entry there, then `--seek_nexts` more
    /// entries with `next` (db_bench's benchmark). Found = the seek's entry has the sought key;
    /// bytes count that entry when found and every entry read by `next`. Returns the stats and,
    /// with `--seek_nexts` > 0, a line giving the entries read per seek.
    pub fn seek_random(&mut self) -> Result<(ThreadStats, Option<String>)> {
        let (num, reads, ks) = (self.flags.num, self.flags.reads(), self.flags.key_size);
        let (secs, nexts, layout) = (self.flags.duration, self.flags.seek_nexts, self.layout());
        let entries = AtomicU64::new(0);
        let st = self.parallel("seekrandom", reads, &|db, rng, _, pb, st| {
            let mut key = Vec::with_capacity(ks);
            let mut budget = Budget::new(reads, secs);
            let (mut i, mut read) = (0, 0);
            while budget.grant(i, 1) == 1 {
                layout.key(rng.below(num), ks, &mut key);
                let mut it = db.range(key.as_slice()..)?;
                if let Some(kv) = it.next() {
                    let (k, v) = kv?;
                    read += 1;
                    if k == key {
                        st.found += 1;
                        st.bytes += (k.len() + v.len()) as u64;
                    }
                    for kv in it.take(nexts as usize) {
                        let (k, v) = kv?;
                        read += 1;
                        st.bytes += (k.len() + v.len()) as u64;
                    }
                }
                tick(pb, i);
                i += 1;
            }
            st.done = i;
            st.report_found = true;
            entries.fetch_add(read, Ordering::Relaxed);
            Ok(())
        })?;
        let note = (nexts > 0).then(|| seek_entries_line(entries.into_inner(), st.done, nexts));
        Ok((st, note))
    }

    /// readseq: iterate from the first key, up to `reads` entries per thread.
    pub fn read_seq(&mut self) -> Result<ThreadStats> {
        let reads = self.flags.reads();
        self.parallel("readseq", reads, &|db, _, _, pb, st| {
            let mut n = 0;
            for kv in db.scan()? {
                if n >= reads {
                    break;
                }
                let (k, v) = kv?;
                st.bytes += (k.len() + v.len()) as u64;
                tick(pb, n);
                n += 1;
            }
            st.done = n;
            Ok(())
        })
    }

    /// deleterandom: `num` deletes of random keys per thread.
    pub fn delete_random(&mut self) -> Result<ThreadStats> {
        let (num, ks) = (self.flags.num, self.flags.key_size);
        let (wo, layout) = (self.write_opts(), self.layout());
        self.parallel("deleterandom", num, &|db, rng, _, pb, st| {
            let mut key = Vec::with_capacity(ks);
            for i in 0..num {
                layout.key(rng.below(num), ks, &mut key);
                let mut b = siftdb::WriteBatch::new();
                b.delete(&key);
                db.write_opt(b, wo)?;
                tick(pb, i);
            }
            st.done = num;
            Ok(())
        })
    }

    /// readwhilewriting: `--threads` readers as readrandom, plus one writer putting random keys
    /// until the readers finish. Only the readers are reported, as in db_bench.
    pub fn read_while_writing(&mut self) -> Result<ThreadStats> {
        let (num, reads, ks, vs) =
            (self.flags.num, self.flags.reads(), self.flags.key_size, self.flags.value_size);
        let (wo, layout) = (self.write_opts(), self.layout());
        let (timed, rate_limit) = (self.flags.histogram, self.flags.benchmark_write_rate_limit);
        let writer_seed = self.next_seed;
        self.next_seed += 1;
        let stop = AtomicBool::new(false);
        let db = self.db;
        std::thread::scope(|s| {
            let writer = s.spawn(|| -> Result<()> {
                let mut rng = SplitMix64::new(writer_seed);
                let mut values = ValueGen::new(writer_seed, vs);
                let mut key = Vec::with_capacity(ks);
                let mut rate = WriteRate::new(rate_limit);
                while !stop.load(Ordering::Relaxed) {
                    layout.key(rng.below(num), ks, &mut key);
                    db.write_opt(one_put(&key, values.next(vs)), wo)?;
                    rate.pace((ks + vs) as u64);
                }
                Ok(())
            });
            let readers = self.parallel("readwhilewriting", reads, &|db, rng, _, pb, st| {
                read_loop(db, rng, pb, st, layout, Budget::new(reads, 0).timed(timed), ks)
            });
            stop.store(true, Ordering::Relaxed);
            writer.join().expect("writer thread panicked")?;
            readers
        })
    }
}

/// readrandom's loop (also the readers of readwhilewriting).
fn read_loop(
    db: &Db,
    rng: &mut SplitMix64,
    pb: &ProgressBar,
    st: &mut ThreadStats,
    layout: KeyLayout,
    budget: Budget,
    key_size: usize,
) -> Result<()> {
    let get = |key: &[u8]| Ok(db.get(key)?.map(|v| v.len()));
    workloads::read_loop(rng, st, layout, budget, key_size, get, |i| tick(pb, i))
}

fn one_put(key: &[u8], value: &[u8]) -> siftdb::WriteBatch {
    let mut b = siftdb::WriteBatch::new();
    b.put(key, value);
    b
}

#[inline]
pub(super) fn tick(pb: &ProgressBar, i: u64) {
    if i % TICK == TICK - 1 {
        pb.inc(TICK);
    }
}

/// `scan entries : seekrandom X per seek (E entries, S seeks, --seek_nexts=N)`: entries the
/// seeks and their `next` steps read (not starting with the name, which marks result lines).
pub(super) fn seek_entries_line(entries: u64, seeks: u64, nexts: u64) -> String {
    let per = if seeks == 0 { 0.0 } else { entries as f64 / seeks as f64 };
    format!(
        "scan entries : seekrandom {per:.4} per seek ({entries} entries, {seeks} seeks, \
         --seek_nexts={nexts})"
    )
}
