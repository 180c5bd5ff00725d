//! siftdb's optimistic transactions for the bench kit's transaction workloads (`txrmw[N]`,
//! `txblind[N]`, `batchblind[N]`; `siftdb_bench_kit::txn`), so that `siftdb bench` runs them as
//! tools/fjall-bench and tools/rocksdb-bench do.

use siftdb::{Db, Error, Transaction, TransactionOptions, WriteBatch, WriteOptions};
use siftdb_bench_kit::txn::{TxEngine, TxError};

/// The database, and whether commits sync (`--sync`).
pub struct SiftTx<'a> {
    pub db: &'a Db,
    pub sync: bool,
}

fn classify(e: Error) -> TxError<Error> {
    if e.is_conflict() {
        TxError::Conflict
    } else {
        TxError::Engine(e)
    }
}

impl TxEngine for SiftTx<'_> {
    type Tx<'t>
        = Transaction
    where
        Self: 't;
    type Error = Error;

    fn begin(&self) -> Result<Transaction, TxError<Error>> {
        let opts = TransactionOptions {
            write: WriteOptions { sync: self.sync },
            ..TransactionOptions::default()
        };
        self.db.transaction_opt(opts).map_err(classify)
    }

    fn get(
        &self,
        tx: &mut Transaction,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, TxError<Error>> {
        out.clear();
        match tx.get(key).map_err(classify)? {
            Some(v) => {
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn put(&self, tx: &mut Transaction, key: &[u8], value: &[u8]) -> Result<(), TxError<Error>> {
        tx.put(key, value).map_err(classify)
    }

    fn commit(&self, tx: Transaction) -> Result<(), TxError<Error>> {
        tx.commit().map_err(classify)
    }

    fn write_batch(&self, writes: &[(&[u8], &[u8])]) -> Result<(), Error> {
        let mut b = WriteBatch::new();
        for (k, v) in writes {
            b.put(k, v);
        }
        self.db.write_opt(b, WriteOptions { sync: self.sync })
    }
}
