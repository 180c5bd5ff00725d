//! The transaction workloads shared by `siftdb bench`'s transactional runs and the peers'
//! drivers (tools/fjall-bench, tools/rocksdb-bench): YCSB-F's read-modify-write through
//! optimistic transactions, and blind writes through a transaction against the same writes as
//! one write batch. An engine implements [`TxEngine`] (begin, get, put, commit, write a batch)
//! and [`run`] does the rest: key choice (YCSB's scrambled zipfian, theta 0.99, over db_bench
//! keys `0..num`), the retry loop counting conflicts, and a per-transaction latency histogram.
//!
//! | benchmark | one operation (one committed transaction) |
//! |---|---|
//! | `txrmw`, `txrmwN` | read N keys (1 without N), write the first back modified, commit |
//! | `txblind`, `txblindN` | write N keys (1 without N) without reading, commit |
//! | `batchblind`, `batchblindN` | the same N writes as one write batch, no transaction |
//!
//! A conflict (from commit, or from any step an engine reports one) discards the transaction
//! and retries the same keys in a new one; the operation's latency runs from its first begin
//! to its successful commit. The modification increments the value's first 8 bytes as a
//! little-endian counter, so each write depends on what the transaction read.

use crate::hist::Histogram;
use crate::key_layout::KeyLayout;
use crate::keys::ValueGen;
use crate::result_line::ThreadStats;
use crate::workloads::{run_threads, Budget};
use crate::zipf::ScrambledZipfian;
use siftdb::filter::rng::SplitMix64;
use std::sync::Mutex;
use std::time::Instant;

/// Why a transaction step failed: a conflict (retry), or the engine's error (stop).
#[derive(Debug)]
pub enum TxError<E> {
    /// The transaction must be discarded and retried (optimistic validation failed, or the
    /// engine refused a step because of a concurrent transaction).
    Conflict,
    /// Any other failure; the benchmark stops with it.
    Engine(E),
}

impl<E> From<E> for TxError<E> {
    fn from(e: E) -> TxError<E> {
        TxError::Engine(e)
    }
}

/// One engine's transactions, as the workloads need them. Methods take the engine so the
/// transaction type can stay the engine's own (fjall's needs the keyspace handle the engine
/// holds, RocksDB's borrows the database).
pub trait TxEngine: Sync {
    /// An open transaction; dropping it discards its writes.
    type Tx<'a>
    where
        Self: 'a;
    /// The engine's error.
    type Error: Send;

    /// Starts a transaction at a fresh snapshot.
    fn begin(&self) -> Result<Self::Tx<'_>, TxError<Self::Error>>;
    /// Reads `key` in `tx` (a read that commit validates), copying the value into `out`
    /// (cleared first); whether the key was found.
    fn get(
        &self,
        tx: &mut Self::Tx<'_>,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, TxError<Self::Error>>;
    /// Buffers a write of `key` in `tx`.
    fn put(
        &self,
        tx: &mut Self::Tx<'_>,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), TxError<Self::Error>>;
    /// Validates and commits `tx`; `TxError::Conflict` when validation fails.
    fn commit(&self, tx: Self::Tx<'_>) -> Result<(), TxError<Self::Error>>;
    /// Writes `writes` as one atomic batch, outside any transaction (the blind-write baseline).
    fn write_batch(&self, writes: &[(&[u8], &[u8])]) -> Result<(), Self::Error>;
}

/// A transaction workload and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxWorkload {
    /// Read this many keys, write the first back modified.
    Rmw(usize),
    /// Write this many keys in a transaction, without reading.
    BlindTx(usize),
    /// Write this many keys as one batch.
    BlindBatch(usize),
}

impl TxWorkload {
    /// The workload a benchmark name names (`txrmw`, `txrmw10`, `txblind4`, `batchblind4`...),
    /// or `None` when the name is not one (a count of 0 is not one either).
    pub fn parse(name: &str) -> Option<TxWorkload> {
        let count = |rest: &str| -> Option<usize> {
            match rest {
                "" => Some(1),
                n if n.bytes().all(|b| b.is_ascii_digit()) => n.parse().ok().filter(|&n| n > 0),
                _ => None,
            }
        };
        if let Some(r) = name.strip_prefix("txrmw") {
            return count(r).map(TxWorkload::Rmw);
        }
        if let Some(r) = name.strip_prefix("txblind") {
            return count(r).map(TxWorkload::BlindTx);
        }
        name.strip_prefix("batchblind").and_then(count).map(TxWorkload::BlindBatch)
    }
}

/// What to run: the workload over key numbers `0..layout.num` at `layout`'s spacing, keys of
/// `key_size` bytes (db_bench keys), values of
/// `value_size` bytes for blind writes, on `threads` threads seeded `seed + i`, each stopping
/// after `ops` committed transactions or, when `duration_secs > 0`, after that many seconds.
#[derive(Debug, Clone, Copy)]
pub struct TxRun {
    /// The workload.
    pub workload: TxWorkload,
    /// Key numbers `0..layout.num` (preloaded by the caller) and their spacing.
    pub layout: KeyLayout,
    /// Key bytes.
    pub key_size: usize,
    /// Value bytes of blind writes (a read-modify-write writes back the size it read).
    pub value_size: usize,
    /// Client threads.
    pub threads: usize,
    /// Base seed.
    pub seed: u64,
    /// Transactions per thread (when `duration_secs` is 0).
    pub ops: u64,
    /// Seconds per run, 0 for a count of `ops`.
    pub duration_secs: u64,
}

/// The figures of a transaction run.
#[derive(Clone)]
pub struct TxStats {
    /// Committed transactions (`done`), bytes written, wall and busy time.
    pub st: ThreadStats,
    /// Per committed transaction, nanoseconds from its first begin to its commit.
    pub latency: Histogram,
    /// Attempts that ended in a conflict.
    pub conflicts: u64,
    /// Transactions that needed at least one retry.
    pub retried: u64,
    /// Nanoseconds spent in successful commit calls, and in whole successful attempts (the
    /// commit's share of a transaction's time).
    pub commit_ns: u64,
    /// Nanoseconds of the successful attempts, begin to commit.
    pub attempt_ns: u64,
}

impl TxStats {
    fn empty() -> TxStats {
        TxStats {
            st: ThreadStats::start(),
            latency: Histogram::default(),
            conflicts: 0,
            retried: 0,
            commit_ns: 0,
            attempt_ns: 0,
        }
    }

    fn merge(&mut self, o: &TxStats) {
        self.latency.merge(&o.latency);
        self.conflicts += o.conflicts;
        self.retried += o.retried;
        self.commit_ns += o.commit_ns;
        self.attempt_ns += o.attempt_ns;
    }

    /// db_bench's result line for `name`, then a line of the transaction figures:
    /// `name : conflicts C retried R (x% of transactions) p50 a us p99 b us commit c% of time`.
    pub fn lines(&self, name: &str) -> String {
        let done = self.st.done.max(1) as f64;
        let us = |q: f64| self.latency.quantile(q) as f64 / 1e3;
        format!(
            "{}\n{:<12} : conflicts {} retried {} ({:.2}% of transactions) p50 {:.2} us p99 {:.2} \
             us commit {:.1}% of time",
            self.st.line(name),
            name,
            self.conflicts,
            self.retried,
            100.0 * self.retried as f64 / done,
            us(0.5),
            us(0.99),
            100.0 * self.commit_ns as f64 / self.attempt_ns.max(1) as f64
        )
    }
}

/// Bumps the little-endian u64 in the first 8 bytes of `v` (zero-padded if shorter).
fn modify(v: &mut Vec<u8>) {
    if v.len() < 8 {
        v.resize(8, 0);
    }
    let mut n = [0u8; 8];
    n.copy_from_slice(&v[..8]);
    v[..8].copy_from_slice(&u64::from_le_bytes(n).wrapping_add(1).to_le_bytes());
}

/// One attempt of a transaction over `keys`; `Ok` once committed.
fn attempt<T: TxEngine>(
    engine: &T,
    workload: TxWorkload,
    keys: &[Vec<u8>],
    values: &[&[u8]],
    buf: &mut Vec<u8>,
    commit_ns: &mut u64,
) -> Result<u64, TxError<T::Error>> {
    let mut tx = engine.begin()?;
    let mut bytes = 0;
    match workload {
        TxWorkload::Rmw(_) => {
            let mut first = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                engine.get(&mut tx, k, buf)?;
                if i == 0 {
                    std::mem::swap(&mut first, buf);
                }
            }
            modify(&mut first);
            engine.put(&mut tx, &keys[0], &first)?;
            bytes += (keys[0].len() + first.len()) as u64;
        }
        TxWorkload::BlindTx(_) | TxWorkload::BlindBatch(_) => {
            for (k, v) in keys.iter().zip(values) {
                engine.put(&mut tx, k, v)?;
                bytes += (k.len() + v.len()) as u64;
            }
        }
    }
    let t = Instant::now();
    engine.commit(tx)?;
    *commit_ns += t.elapsed().as_nanos() as u64;
    Ok(bytes)
}

/// Runs `run.workload` against `engine` and returns its figures.
pub fn run<T: TxEngine>(engine: &T, run: &TxRun) -> Result<TxStats, T::Error> {
    let extra = Mutex::new(TxStats::empty());
    let st = run_threads(run.threads, run.seed, run.value_size, &|rng, values, st| {
        let mut mine = TxStats::empty();
        thread(engine, run, rng, values, st, &mut mine)?;
        extra.lock().expect("a benchmark thread panicked").merge(&mine);
        Ok(())
    })?;
    let mut out = extra.into_inner().expect("a benchmark thread panicked");
    out.st = st;
    Ok(out)
}

fn thread<T: TxEngine>(
    engine: &T,
    run: &TxRun,
    rng: &mut SplitMix64,
    values: &mut ValueGen,
    st: &mut ThreadStats,
    out: &mut TxStats,
) -> Result<(), T::Error> {
    let zipf = ScrambledZipfian::new(run.layout.num.max(1));
    let n = match run.workload {
        TxWorkload::Rmw(n) | TxWorkload::BlindTx(n) | TxWorkload::BlindBatch(n) => n,
    };
    let mut keys = vec![Vec::with_capacity(run.key_size); n];
    let mut vals: Vec<Vec<u8>> = vec![Vec::new(); n];
    let mut buf = Vec::new();
    let mut budget = Budget::new(run.ops, run.duration_secs);
    let mut done = 0;
    while budget.grant(done, 1) == 1 {
        // Keys and values chosen before timing: generator cost stays out of the latency.
        for k in keys.iter_mut() {
            run.layout.key(zipf.next(rng), run.key_size, k);
        }
        if !matches!(run.workload, TxWorkload::Rmw(_)) {
            for v in vals.iter_mut() {
                v.clear();
                v.extend_from_slice(values.next(run.value_size));
            }
        }
        let start = Instant::now();
        if let TxWorkload::BlindBatch(_) = run.workload {
            let writes: Vec<(&[u8], &[u8])> =
                keys.iter().zip(&vals).map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
            engine.write_batch(&writes)?;
            st.bytes += writes.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum::<u64>();
        } else {
            let refs: Vec<&[u8]> = vals.iter().map(Vec::as_slice).collect();
            let mut tries = 0;
            loop {
                let a = Instant::now();
                let mut commit_ns = 0;
                match attempt(engine, run.workload, &keys, &refs, &mut buf, &mut commit_ns) {
                    Ok(bytes) => {
                        st.bytes += bytes;
                        out.commit_ns += commit_ns;
                        out.attempt_ns += a.elapsed().as_nanos() as u64;
                        break;
                    }
                    Err(TxError::Conflict) => {
                        out.conflicts += 1;
                        tries += 1;
                    }
                    Err(TxError::Engine(e)) => return Err(e),
                }
            }
            out.retried += u64::from(tries > 0);
        }
        out.latency.record(start.elapsed().as_nanos() as u64);
        done += 1;
    }
    st.done = done;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashMap};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// An in-memory optimistic engine: versioned map, read-set validation at commit, and a
    /// forced conflict on every `conflict_every`-th commit.
    /// The last commit sequence, and per key the sequence and value of its latest version.
    type Versions = (u64, HashMap<Vec<u8>, (u64, Vec<u8>)>);

    struct Mem {
        state: Mutex<Versions>,
        commits: AtomicU64,
        conflict_every: u64,
    }

    struct MemTx {
        snapshot: u64,
        reads: Vec<Vec<u8>>,
        writes: BTreeMap<Vec<u8>, Vec<u8>>,
    }

    impl TxEngine for Mem {
        type Tx<'a> = MemTx;
        type Error = String;

        fn begin(&self) -> Result<MemTx, TxError<String>> {
            let snapshot = self.state.lock().unwrap().0;
            Ok(MemTx { snapshot, reads: Vec::new(), writes: BTreeMap::new() })
        }

        fn get(
            &self,
            tx: &mut MemTx,
            key: &[u8],
            out: &mut Vec<u8>,
        ) -> Result<bool, TxError<String>> {
            out.clear();
            tx.reads.push(key.to_vec());
            let s = self.state.lock().unwrap();
            match s.1.get(key) {
                Some((_, v)) => {
                    out.extend_from_slice(v);
                    Ok(true)
                }
                None => Ok(false),
            }
        }

        fn put(&self, tx: &mut MemTx, key: &[u8], value: &[u8]) -> Result<(), TxError<String>> {
            tx.writes.insert(key.to_vec(), value.to_vec());
            Ok(())
        }

        fn commit(&self, tx: MemTx) -> Result<(), TxError<String>> {
            let n = self.commits.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(self.conflict_every) {
                return Err(TxError::Conflict);
            }
            let mut s = self.state.lock().unwrap();
            if tx.reads.iter().any(|k| s.1.get(k).is_some_and(|(seq, _)| *seq > tx.snapshot)) {
                return Err(TxError::Conflict);
            }
            s.0 += 1;
            let seq = s.0;
            for (k, v) in tx.writes {
                s.1.insert(k, (seq, v));
            }
            Ok(())
        }

        fn write_batch(&self, writes: &[(&[u8], &[u8])]) -> Result<(), String> {
            let mut s = self.state.lock().unwrap();
            s.0 += 1;
            let seq = s.0;
            for (k, v) in writes {
                s.1.insert(k.to_vec(), (seq, v.to_vec()));
            }
            Ok(())
        }
    }

    fn mem(conflict_every: u64) -> Mem {
        Mem { state: Mutex::new((0, HashMap::new())), commits: AtomicU64::new(0), conflict_every }
    }

    fn counters(m: &Mem) -> u64 {
        let s = m.state.lock().unwrap();
        s.1.values().map(|(_, v)| u64::from_le_bytes(v[..8].try_into().unwrap())).sum()
    }

    fn spec(workload: TxWorkload, threads: usize) -> TxRun {
        TxRun {
            workload,
            layout: KeyLayout { num: 50, spacing: 1 },
            key_size: 16,
            value_size: 24,
            threads,
            seed: 3,
            ops: 500,
            duration_secs: 0,
        }
    }

    #[test]
    fn names_parse_to_workloads() {
        assert_eq!(TxWorkload::parse("txrmw"), Some(TxWorkload::Rmw(1)));
        assert_eq!(TxWorkload::parse("txrmw10"), Some(TxWorkload::Rmw(10)));
        assert_eq!(TxWorkload::parse("txblind4"), Some(TxWorkload::BlindTx(4)));
        assert_eq!(TxWorkload::parse("batchblind"), Some(TxWorkload::BlindBatch(1)));
        for bad in ["txrmw0", "txrmwx", "txrmw-1", "readrandom", "batch"] {
            assert_eq!(TxWorkload::parse(bad), None, "{bad}");
        }
    }

    /// Every committed read-modify-write adds exactly 1 to one counter, so with retries on
    /// conflict the counters sum to the committed transactions: none lost, none doubled.
    #[test]
    fn read_modify_write_retries_conflicts_and_loses_no_update() {
        let m = mem(7);
        let s = run(&m, &spec(TxWorkload::Rmw(3), 3)).unwrap();
        assert_eq!(s.st.done, 1500);
        assert_eq!(counters(&m), 1500);
        // Every 7th commit call is a forced conflict; each is retried.
        let calls = m.commits.load(Ordering::Relaxed);
        assert_eq!(calls, 1500 + s.conflicts);
        assert!(s.conflicts >= calls / 7, "{} conflicts of {calls} commits", s.conflicts);
        assert!(s.retried > 0 && s.retried <= s.conflicts);
        assert_eq!(s.latency.count(), 1500);
        assert!(s.commit_ns <= s.attempt_ns);
        let lines = s.lines("txrmw3");
        assert!(lines.contains("1500 operations") && lines.contains("retried"), "{lines}");
    }

    #[test]
    fn blind_transactions_and_batches_write_the_same_bytes() {
        let (a, b) = (mem(u64::MAX), mem(u64::MAX));
        let tx = run(&a, &spec(TxWorkload::BlindTx(4), 2)).unwrap();
        let batch = run(&b, &spec(TxWorkload::BlindBatch(4), 2)).unwrap();
        assert_eq!((tx.st.done, batch.st.done), (1000, 1000));
        assert_eq!(tx.st.bytes, 1000 * 4 * (16 + 24));
        assert_eq!(tx.st.bytes, batch.st.bytes);
        assert_eq!((tx.conflicts, batch.conflicts), (0, 0));
        // Same seeds, same keys and values: the same final contents.
        let contents = |m: &Mem| -> BTreeMap<Vec<u8>, Vec<u8>> {
            m.state.lock().unwrap().1.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect()
        };
        // Thread i draws its keys from seed + i whatever the interleaving: the same key sets.
        let keys = |m: &Mem| contents(m).into_keys().collect::<Vec<_>>();
        assert_eq!(keys(&a), keys(&b));
    }

    #[test]
    fn engine_errors_stop_the_run() {
        struct Broken;
        impl TxEngine for Broken {
            type Tx<'a> = ();
            type Error = &'static str;
            fn begin(&self) -> Result<(), TxError<&'static str>> {
                Ok(())
            }
            fn get(
                &self,
                _: &mut (),
                _: &[u8],
                _: &mut Vec<u8>,
            ) -> Result<bool, TxError<&'static str>> {
                Err(TxError::Engine("disk on fire"))
            }
            fn put(&self, _: &mut (), _: &[u8], _: &[u8]) -> Result<(), TxError<&'static str>> {
                Ok(())
            }
            fn commit(&self, _: ()) -> Result<(), TxError<&'static str>> {
                Ok(())
            }
            fn write_batch(&self, _: &[(&[u8], &[u8])]) -> Result<(), &'static str> {
                Ok(())
            }
        }
        assert_eq!(run(&Broken, &spec(TxWorkload::Rmw(1), 2)).err(), Some("disk on fire"));
        assert!(run(&Broken, &spec(TxWorkload::BlindTx(1), 1)).is_ok());
    }

    #[test]
    fn modify_bumps_the_first_eight_bytes() {
        let mut v = vec![255, 0, 0, 0, 0, 0, 0, 0, 9];
        modify(&mut v);
        assert_eq!(v, vec![0, 1, 0, 0, 0, 0, 0, 0, 9]);
        let mut short = vec![1];
        modify(&mut short);
        assert_eq!(short, vec![2, 0, 0, 0, 0, 0, 0, 0]);
    }
}
