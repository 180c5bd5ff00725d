//! The YCSB benchmarks (siftdb-bench-kit's `ycsb` module: `ycsbload`, `ycsba`..`ycsbf`) on
//! RocksDB, with db_bench's calls: `Get` into a pinnable slice, `Put` with the run's write
//! options (`--sync`), and for a scan a new iterator, one `Seek` and `Next` up to the length.

use rocksdb::{WriteOptions, DB};
use siftdb_bench_kit::ycsb::YcsbEngine;

type BoxErr = Box<dyn std::error::Error + Send + Sync>;

/// The database of the run and its write options.
pub struct RocksYcsb<'a> {
    pub db: &'a DB,
    pub wo: WriteOptions,
}

impl YcsbEngine for RocksYcsb<'_> {
    type Error = BoxErr;

    fn read(&self, key: &[u8]) -> Result<Option<usize>, BoxErr> {
        Ok(self.db.get_pinned(key)?.map(|v| v.len()))
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Result<(), BoxErr> {
        Ok(self.db.put_opt(key, value, &self.wo)?)
    }

    fn scan(&self, start: &[u8], len: usize) -> Result<usize, BoxErr> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let mut n = 0;
        while n < len && it.valid() {
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
}
