//! The transaction benchmarks (siftdb-bench-kit's `txn` module: `txrmw[N]`, `txblind[N]`,
//! `batchblind[N]`) through RocksDB's `OptimisticTransactionDB`, the database of the run
//! reopened as one for the benchmark (the on-disk format is a plain DB's).
//!
//! Reads are `get_for_update`: RocksDB's optimistic transactions validate at commit only the
//! keys read that way (a plain `Transaction::get` is not tracked), so every read is checked,
//! as fjall's and siftdb's serializable transactions check theirs. No snapshot is set
//! (`OptimisticTransactionOptions` default): a tracked key conflicts if it was written after
//! the transaction first read it, which keeps read-modify-write serializable. Commit returns
//! `Busy` (a tracked key changed) or `TryAgain` (the memtable history is too short to tell);
//! both are conflicts and retried. `batchblind` writes a `WriteBatchWithTransaction<true>`
//! through `OptimisticTransactionDB::write_opt`, with the same write options (`--sync`).

use crate::engine;
use crate::flags::Flags;
use crate::R;
use rocksdb::{
    ErrorKind, OptimisticTransactionDB, OptimisticTransactionOptions, Options, Transaction,
    WriteBatchWithTransaction, WriteOptions,
};
use siftdb_bench_kit::key_layout::KeyLayout;
use siftdb_bench_kit::txn::{self, TxEngine, TxError, TxRun, TxStats, TxWorkload};
use std::path::Path;

type BoxErr = Box<dyn std::error::Error + Send + Sync>;

/// RocksDB's optimistic transactions for the kit's workloads. It owns the database: the
/// transaction type borrows it from `&self`, which a borrowed handle's lifetime cannot express
/// in the kit's `Tx<'t>`.
struct Optimistic {
    db: OptimisticTransactionDB,
    wo: WriteOptions,
    to: OptimisticTransactionOptions,
}

fn step_err(e: rocksdb::Error) -> TxError<BoxErr> {
    match e.kind() {
        ErrorKind::Busy | ErrorKind::TryAgain => TxError::Conflict,
        _ => TxError::Engine(e.into()),
    }
}

impl TxEngine for Optimistic {
    type Tx<'t>
        = Transaction<'t, OptimisticTransactionDB>
    where
        Self: 't;
    type Error = BoxErr;

    fn begin(&self) -> Result<Self::Tx<'_>, TxError<BoxErr>> {
        Ok(self.db.transaction_opt(&self.wo, &self.to))
    }

    fn get(
        &self,
        tx: &mut Self::Tx<'_>,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, TxError<BoxErr>> {
        out.clear();
        let v = tx.get_pinned_for_update(key, true).map_err(step_err)?;
        if let Some(v) = &v {
            out.extend_from_slice(v);
        }
        Ok(v.is_some())
    }

    fn put(&self, tx: &mut Self::Tx<'_>, key: &[u8], value: &[u8]) -> Result<(), TxError<BoxErr>> {
        tx.put(key, value).map_err(step_err)
    }

    fn commit(&self, tx: Self::Tx<'_>) -> Result<(), TxError<BoxErr>> {
        tx.commit().map_err(step_err)
    }

    fn write_batch(&self, writes: &[(&[u8], &[u8])]) -> Result<(), BoxErr> {
        let mut b = WriteBatchWithTransaction::<true>::default();
        for (k, v) in writes {
            b.put(k, v);
        }
        Ok(self.db.write_opt(b, &self.wo)?)
    }
}

/// Runs transaction benchmark `w` on the database in `dir` (reopened as an
/// `OptimisticTransactionDB`, closed at return), threads seeded from `seed`.
pub fn run(f: &Flags, dir: &Path, opts: &Options, w: TxWorkload, seed: u64) -> R<TxStats> {
    let mut opts = opts.clone();
    opts.create_if_missing(false);
    let default = rocksdb::ColumnFamilyDescriptor::new(engine::DEFAULT_CF, opts.clone());
    let db: OptimisticTransactionDB =
        OptimisticTransactionDB::open_cf_descriptors(&opts, engine::db_path(dir), [default])?;
    let mut wo = WriteOptions::default();
    wo.set_sync(f.sync);
    let e = Optimistic { db, wo, to: OptimisticTransactionOptions::default() };
    let run = TxRun {
        workload: w,
        layout: KeyLayout { num: f.num, spacing: f.key_spacing },
        key_size: f.key_size,
        value_size: f.value_size,
        threads: f.threads,
        seed,
        ops: f.reads,
        duration_secs: f.duration,
    };
    txn::run(&e, &run)
}
