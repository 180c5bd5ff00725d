//! The benchmarks, with siftdb bench's semantics (crates/siftdb-cli/src/bench/workloads.rs) on RocksDB:
//! each thread draws key numbers from its own `SplitMix64` seeded `--seed` plus the threads
//! started so far in the run; fills write one key per put; `fillseq` writes 0..num in order,
//! `fillrandom` and `overwrite` num keys drawn from [0, num) with repeats; reads draw from
//! [0, num); `readmissing` reads with `key_size + 1` (keys.rs); number v is key number
//! v * `--key_spacing` (key_layout.rs). RocksDB calls are db_bench's: `Get` into a pinnable
//! slice, batched `MultiGet`, a new iterator per `Seek`. The scan-filter benchmarks ask about
//! the ranges and prefixes key_layout.rs draws, as siftdb bench does: `rangeempty` a bounded
//! iterator (`iterate_upper_bound` = the key after the range) and one `Seek`; `prefixscan` a
//! `prefix_same_as_start` iterator over one prefix.

use crate::R;
use rocksdb::{ReadOptions, WriteOptions, DB};
use siftdb::filter::rng::SplitMix64;
use siftdb_bench_kit::key_layout::{KeyLayout, PrefixGen, RangeGen};
use siftdb_bench_kit::keys::{make_key, ValueGen};
use siftdb_bench_kit::result_line::ThreadStats as St;
use siftdb_bench_kit::workloads::{self, Budget, WriteRate};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A thread body: its rng, its value source, its stats.
type Body<'f> = workloads::Body<'f, Box<dyn std::error::Error + Send + Sync>>;

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
    /// The key layout of the flags (checked by `KeyLayout::new` when the run starts).
    fn layout(&self) -> KeyLayout {
        KeyLayout { num: self.f.num, spacing: self.f.key_spacing }
    }

    pub fn write_opts(&self) -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(self.f.sync);
        wo
    }

    /// Runs `body` on `--threads` threads, thread i seeded `next_seed + i`, and merges their
    /// figures (db_bench's `Stats::Merge`).
    fn parallel(&mut self, body: &Body<'_>) -> R<St> {
        let base = self.next_seed;
        self.next_seed += self.f.threads as u64;
        workloads::run_threads(self.f.threads, base, self.f.value_size, body)
    }

    /// fillseq / fillrandom / overwrite: `num` puts per thread.
    pub fn fill(&mut self, sequential: bool) -> R<St> {
        let (num, ks, vs, db) = (self.f.num, self.f.key_size, self.f.value_size, self.db);
        let (wo, layout) = (self.write_opts(), self.layout());
        self.parallel(&|rng, values, st| {
            let mut key = Vec::with_capacity(ks);
            for i in 0..num {
                layout.key(if sequential { i } else { rng.below(num) }, ks, &mut key);
                db.put_opt(&key, values.next(vs), &wo)?;
                st.bytes += (ks + vs) as u64;
            }
            st.done = num;
            Ok(())
        })
    }

    /// readrandom (`key_size`) and readmissing (`key_size + 1`).
    pub fn read_random(&mut self, key_size: usize) -> R<St> {
        let (reads, secs, db, layout) = (self.f.reads, self.f.duration, self.db, self.layout());
        let timed = self.f.histogram;
        self.parallel(&|rng, _, st| {
            read_loop(db, rng, st, layout, Budget::new(reads, secs).timed(timed), key_size)
        })
    }

    /// multireadrandom: `--batch_size` keys per batched MultiGet; ops count keys.
    pub fn multi_read_random(&mut self) -> R<St> {
        let (num, reads, ks, db) = (self.f.num, self.f.reads, self.f.key_size, self.db);
        let (batch, secs, async_io) = (self.f.batch_size as u64, self.f.duration, self.f.async_io);
        let layout = self.layout();
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
                    layout.key(rng.below(num), ks, key);
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

    /// seekrandom: a new iterator seeks to a random key, reads the entry there, then
    /// `--seek_nexts` more with `Next` (db_bench's benchmark). Found = the seek's entry has the
    /// sought key; bytes count it when found and every entry `Next` reaches. With
    /// `--seek_nexts` > 0 also a line of the entries read per seek (siftdb bench's).
    pub fn seek_random(&mut self) -> R<(St, Option<String>)> {
        let (num, reads, ks, db) = (self.f.num, self.f.reads, self.f.key_size, self.db);
        let (secs, nexts, layout) = (self.f.duration, self.f.seek_nexts, self.layout());
        let entries = AtomicU64::new(0);
        let st = self.parallel(&|rng, _, st| {
            let mut key = Vec::with_capacity(ks);
            let mut budget = Budget::new(reads, secs);
            let (mut i, mut read) = (0, 0);
            while budget.grant(i, 1) == 1 {
                i += 1;
                layout.key(rng.below(num), ks, &mut key);
                let mut it = db.raw_iterator();
                it.seek(&key);
                if let (Some(k), Some(v)) = (it.key(), it.value()) {
                    read += 1;
                    if k == key.as_slice() {
                        st.found += 1;
                        st.bytes += (k.len() + v.len()) as u64;
                    }
                    for _ in 0..nexts {
                        it.next();
                        let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
                        read += 1;
                        st.bytes += (k.len() + v.len()) as u64;
                    }
                }
                it.status()?;
            }
            st.done = i;
            st.report_found = true;
            entries.fetch_add(read, Ordering::Relaxed);
            Ok(())
        })?;
        let note = (nexts > 0).then(|| {
            let (e, seeks) = (entries.into_inner(), st.done);
            let per = if seeks == 0 { 0.0 } else { e as f64 / seeks as f64 };
            format!(
                "scan entries : seekrandom {per:.4} per seek ({e} entries, {seeks} seeks, \
                 --seek_nexts={nexts})"
            )
        });
        Ok((st, note))
    }

    /// rangeempty: does the database hold a key in [lo, hi]? A new iterator bounded above by
    /// the key after hi (`iterate_upper_bound`) seeks to lo; found = it is valid. With a prefix
    /// extractor the seek uses the prefix Bloom filters (`prefix_same_as_start`) when lo and hi
    /// share the prefix, else it runs in total order (`total_order_seek`), as RocksDB requires
    /// for a correct answer.
    pub fn range_empty(&mut self, gen: &RangeGen) -> R<(St, String)> {
        let (reads, ks, secs, db) = (self.f.reads, self.f.key_size, self.f.duration, self.db);
        let n = self.f.prefix_size;
        let targeted = AtomicU64::new(0);
        let st = self.parallel(&|rng, _, st| {
            let (mut lo, mut hi) = (Vec::with_capacity(ks), Vec::with_capacity(ks));
            let mut budget = Budget::new(reads, secs);
            let (mut i, mut aimed) = (0, 0);
            while budget.grant(i, 1) == 1 {
                let op = gen.next(rng);
                make_key(op.lo, ks, &mut lo);
                make_key(op.hi, ks, &mut hi);
                let mut end = Vec::with_capacity(ks);
                make_key(op.hi + 1, ks, &mut end);
                let mut ro = ReadOptions::default();
                ro.set_iterate_upper_bound(end);
                if n > 0 && lo[..n] == hi[..n] {
                    ro.set_prefix_same_as_start(true);
                } else {
                    ro.set_total_order_seek(true);
                }
                let mut it = db.raw_iterator_opt(ro);
                it.seek(&lo);
                if let (Some(k), Some(v)) = (it.key(), it.value()) {
                    st.found += 1;
                    st.bytes += (k.len() + v.len()) as u64;
                }
                it.status()?;
                aimed += u64::from(!op.empty);
                i += 1;
            }
            st.done = i;
            st.report_found = true;
            targeted.fetch_add(aimed, Ordering::Relaxed);
            Ok(())
        })?;
        let targeted = targeted.into_inner();
        let mut line = scan_line("rangeempty", &st, targeted, None);
        line += &gen.fill().mismatch_warning("rangeempty", st.found, targeted);
        Ok((st, line))
    }

    /// prefixscan: every entry of one prefix, through a `prefix_same_as_start` iterator seeking
    /// to the prefix. Found = the prefix has an entry.
    pub fn prefix_scan(&mut self, gen: &PrefixGen) -> R<(St, String)> {
        let (reads, secs, db) = (self.f.reads, self.f.duration, self.db);
        let (targeted, entries) = (AtomicU64::new(0), AtomicU64::new(0));
        let st = self.parallel(&|rng, _, st| {
            let mut prefix = Vec::with_capacity(8);
            let mut budget = Budget::new(reads, secs);
            let (mut i, mut aimed, mut read) = (0, 0, 0);
            while budget.grant(i, 1) == 1 {
                let op = gen.next(rng);
                gen.prefix(op.group, &mut prefix);
                let mut ro = ReadOptions::default();
                ro.set_prefix_same_as_start(true);
                let mut it = db.raw_iterator_opt(ro);
                it.seek(&prefix);
                let mut n = 0;
                while let (Some(k), Some(v)) = (it.key(), it.value()) {
                    n += 1;
                    st.bytes += (k.len() + v.len()) as u64;
                    it.next();
                }
                it.status()?;
                st.found += u64::from(n > 0);
                read += n;
                aimed += u64::from(!op.absent);
                i += 1;
            }
            st.done = i;
            st.report_found = true;
            targeted.fetch_add(aimed, Ordering::Relaxed);
            entries.fetch_add(read, Ordering::Relaxed);
            Ok(())
        })?;
        let targeted = targeted.into_inner();
        let mut line = scan_line("prefixscan", &st, targeted, Some(entries.into_inner()));
        line += &gen.fill().mismatch_warning("prefixscan", st.found, targeted);
        Ok((st, line))
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
        let (wo, layout) = (self.write_opts(), self.layout());
        self.parallel(&|rng, _, st| {
            let mut key = Vec::with_capacity(ks);
            for _ in 0..num {
                layout.key(rng.below(num), ks, &mut key);
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
        let (wo, layout) = (self.write_opts(), self.layout());
        let (timed, rate_limit) = (self.f.histogram, self.f.benchmark_write_rate_limit);
        let writer_seed = self.next_seed;
        self.next_seed += 1;
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let writer = s.spawn(|| -> R<()> {
                let mut rng = SplitMix64::new(writer_seed);
                let mut values = ValueGen::new(writer_seed, vs);
                let mut key = Vec::with_capacity(ks);
                let mut rate = WriteRate::new(rate_limit);
                while !stop.load(Ordering::Relaxed) {
                    layout.key(rng.below(num), ks, &mut key);
                    db.put_opt(&key, values.next(vs), &wo)?;
                    rate.pace((ks + vs) as u64);
                }
                Ok(())
            });
            let readers = self.parallel(&|rng, _, st| {
                read_loop(db, rng, st, layout, Budget::new(reads, 0).timed(timed), ks)
            });
            stop.store(true, Ordering::Relaxed);
            writer.join().expect("writer thread panicked")?;
            readers
        })
    }
}

/// readrandom's loop (also the readers of readwhilewriting).
fn read_loop(
    db: &DB,
    rng: &mut SplitMix64,
    st: &mut St,
    layout: KeyLayout,
    budget: Budget,
    key_size: usize,
) -> R<()> {
    let get = |key: &[u8]| -> R<Option<usize>> { Ok(db.get_pinned(key)?.map(|v| v.len())) };
    workloads::read_loop(rng, st, layout, budget, key_size, get, |_| ())
}

/// `scan filters : NAME found_share=.. targeted_share=..[ entries/op=..]`: siftdb bench's line
/// without the filter figures (RocksDB's are in its `--statistics` tickers).
fn scan_line(name: &str, st: &St, targeted: u64, entries: Option<u64>) -> String {
    let per = |n: u64| n as f64 / st.done.max(1) as f64;
    let mut s = format!(
        "scan filters : {name} found_share={:.4} targeted_share={:.4}",
        per(st.found),
        per(targeted)
    );
    if let Some(e) = entries {
        s += &format!(" entries/op={:.4}", per(e));
    }
    s
}
