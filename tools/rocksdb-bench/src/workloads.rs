//! The benchmarks, with siftdb bench's semantics (src/bin/siftdb/bench/workloads.rs) on RocksDB:
//! each thread draws key numbers from its own `SplitMix64` seeded `--seed` plus the threads
//! started so far in the run; fills write one key per put; `fillseq` writes 0..num in order,
//! `fillrandom` and `overwrite` num keys drawn from [0, num) with repeats; reads draw from
//! [0, num); `readmissing` reads with `key_size + 1` (keys.rs). RocksDB calls are db_bench's:
//! `Get` into a pinnable slice, batched `MultiGet`, a new iterator per `Seek`.

use crate::keys::{make_key, ValueGen};
use crate::result_line::ThreadStats as St;
use crate::R;
use rocksdb::{ReadOptions, WriteOptions, DB};
use siftdb::rng::SplitMix64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A thread body: its rng, its value source, its stats.
type Body<'f> = dyn Fn(&mut SplitMix64, &mut ValueGen, &mut St) -> R<()> + Sync + 'f;

/// What a benchmark's threads share.
pub struct Ctx<'a> {
    /// The flags of the run.
    pub f: &'a crate::flags::Flags,
    /// The database, shared by every thread.
    pub db: &'a DB,
    /// Seed of the first thread of the next benchmark.
    pub next_seed: u64,
}

impl Ctx<'_> {
    fn write_opts(&self) -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(self.f.sync);
        wo
    }

    /// Runs `body` on `--threads` threads, thread i seeded `next_seed + i`, and merges their
    /// figures (db_bench's `Stats::Merge`).
    fn parallel(&mut self, body: &Body<'_>) -> R<St> {
        let n = self.f.threads as u64;
        let base = self.next_seed;
        self.next_seed += n;
        let value_size = self.f.value_size;
        let results: Vec<R<St>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..n)
                .map(|i| {
                    s.spawn(move || {
                        let mut rng = SplitMix64::new(base + i);
                        let mut values = ValueGen::new(base + i, value_size);
                        let mut st = St::start();
                        body(&mut rng, &mut values, &mut st)?;
                        st.stop();
                        Ok(st)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("benchmark thread panicked")).collect()
        });
        let mut merged: Option<St> = None;
        for r in results {
            let r = r?;
            match &mut merged {
                None => merged = Some(r),
                Some(m) => m.merge(&r),
            }
        }
        Ok(merged.expect("flags::parse requires at least one thread"))
    }

    /// fillseq / fillrandom / overwrite: `num` puts per thread.
    pub fn fill(&mut self, sequential: bool) -> R<St> {
        let (num, ks, vs, db) = (self.f.num, self.f.key_size, self.f.value_size, self.db);
        let wo = self.write_opts();
        self.parallel(&|rng, values, st| {
            let mut key = Vec::with_capacity(ks);
            for i in 0..num {
                make_key(if sequential { i } else { rng.below(num) }, ks, &mut key);
                db.put_opt(&key, values.next(vs), &wo)?;
                st.bytes += (ks + vs) as u64;
            }
            st.done = num;
            Ok(())
        })
    }

    /// readrandom (`key_size`) and readmissing (`key_size + 1`).
    pub fn read_random(&mut self, key_size: usize) -> R<St> {
        let (num, reads, secs, db) = (self.f.num, self.f.reads, self.f.duration, self.db);
        self.parallel(&|rng, _, st| read_loop(db, rng, st, num, Budget::new(reads, secs), key_size))
    }

    /// multireadrandom: `--batch_size` keys per batched MultiGet; ops count keys.
    pub fn multi_read_random(&mut self) -> R<St> {
        let (num, reads, ks, db) = (self.f.num, self.f.reads, self.f.key_size, self.db);
        let (batch, secs, async_io) = (self.f.batch_size as u64, self.f.duration, self.f.async_io);
        self.parallel(&|rng, _, st| {
            let mut ro = ReadOptions::default();
            ro.set_async_io(async_io);
            let cf =
                db.cf_handle(crate::engine::DEFAULT_CF).ok_or("no handle of the default CF")?;
            let mut budget = Budget::new(reads, secs);
            let mut keys: Vec<Vec<u8>> = (0..batch).map(|_| Vec::with_capacity(ks)).collect();
            let mut i = 0;
            loop {
                let n = budget.grant(i, batch) as usize;
                if n == 0 {
                    break;
                }
                for key in &mut keys[..n] {
                    make_key(rng.below(num), ks, key);
                }
                let got = db.batched_multi_get_cf_opt(cf, &keys[..n], false, &ro);
                for (key, got) in keys.iter().zip(got) {
                    if let Some(v) = got? {
                        st.found += 1;
                        st.bytes += (key.len() + v.len()) as u64;
                    }
                    i += 1;
                }
            }
            st.done = i;
            st.report_found = true;
            Ok(())
        })
    }

    /// seekrandom: a new iterator seeks to a random key and reads the entry there (db_bench's
    /// `seek_nexts` 0). Found = the entry's key equals the sought key.
    pub fn seek_random(&mut self) -> R<St> {
        let (num, reads, ks, db) = (self.f.num, self.f.reads, self.f.key_size, self.db);
        self.parallel(&|rng, _, st| {
            let mut key = Vec::with_capacity(ks);
            for _ in 0..reads {
                make_key(rng.below(num), ks, &mut key);
                let mut it = db.raw_iterator();
                it.seek(&key);
                if let (Some(k), Some(v)) = (it.key(), it.value()) {
                    if k == key.as_slice() {
                        st.found += 1;
                        st.bytes += (k.len() + v.len()) as u64;
                    }
                }
                it.status()?;
            }
            st.done = reads;
            st.report_found = true;
            Ok(())
        })
    }

    /// readseq: iterate from the first key, up to `reads` entries per thread.
    pub fn read_seq(&mut self) -> R<St> {
        let (reads, db) = (self.f.reads, self.db);
        self.parallel(&|_, _, st| {
            let mut it = db.raw_iterator();
            it.seek_to_first();
            while st.done < reads {
                let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
                st.bytes += (k.len() + v.len()) as u64;
                st.done += 1;
                it.next();
            }
            it.status()?;
            Ok(())
        })
    }

    /// deleterandom: `num` deletes of random keys per thread.
    pub fn delete_random(&mut self) -> R<St> {
        let (num, ks, db) = (self.f.num, self.f.key_size, self.db);
        let wo = self.write_opts();
        self.parallel(&|rng, _, st| {
            let mut key = Vec::with_capacity(ks);
            for _ in 0..num {
                make_key(rng.below(num), ks, &mut key);
                db.delete_opt(&key, &wo)?;
            }
            st.done = num;
            Ok(())
        })
    }

    /// readwhilewriting: `--threads` readers as readrandom, plus one writer putting random keys
    /// until the readers finish. Only the readers are reported, as in db_bench.
    pub fn read_while_writing(&mut self) -> R<St> {
        let (num, reads, ks, vs, db) =
            (self.f.num, self.f.reads, self.f.key_size, self.f.value_size, self.db);
        let wo = self.write_opts();
        let writer_seed = self.next_seed;
        self.next_seed += 1;
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let writer = s.spawn(|| -> R<()> {
                let mut rng = SplitMix64::new(writer_seed);
                let mut values = ValueGen::new(writer_seed, vs);
                let mut key = Vec::with_capacity(ks);
                while !stop.load(Ordering::Relaxed) {
                    make_key(rng.below(num), ks, &mut key);
                    db.put_opt(&key, values.next(vs), &wo)?;
                }
                Ok(())
            });
            let readers =
                self.parallel(&|rng, _, st| read_loop(db, rng, st, num, Budget::new(reads, 0), ks));
            stop.store(true, Ordering::Relaxed);
            writer.join().expect("writer thread panicked")?;
            readers
        })
    }
}

/// Operations between clock reads of a `--duration` run.
const TICK: u64 = 1024;

/// When a read loop stops: after `reads` operations, or with `--duration` after that many
/// seconds (siftdb bench's rule, so both tools stop alike).
struct Budget {
    reads: u64,
    deadline: Option<Instant>,
    next_check: u64,
}

impl Budget {
    fn new(reads: u64, duration_secs: u64) -> Budget {
        let deadline =
            (duration_secs > 0).then(|| Instant::now() + Duration::from_secs(duration_secs));
        Budget { reads, deadline, next_check: 0 }
    }

    /// Operations the next step may do, at most `want` (0 = stop) after `done` operations.
    fn grant(&mut self, done: u64, want: u64) -> u64 {
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

/// readrandom's loop (also the readers of readwhilewriting).
fn read_loop(
    db: &DB,
    rng: &mut SplitMix64,
    st: &mut St,
    num: u64,
    mut budget: Budget,
    key_size: usize,
) -> R<()> {
    let mut key = Vec::with_capacity(key_size);
    let mut i = 0;
    while budget.grant(i, 1) == 1 {
        make_key(rng.below(num), key_size, &mut key);
        if let Some(v) = db.get_pinned(&key)? {
            st.found += 1;
            st.bytes += (key.len() + v.len()) as u64;
        }
        i += 1;
    }
    st.done = i;
    st.report_found = true;
    Ok(())
}
