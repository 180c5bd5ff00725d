//! The YCSB benchmarks (siftdb-bench-kit's `ycsb` module: `ycsbload`, `ycsba`..`ycsbf`) on
//! fjall's keyspace: `get`, `insert`, and for a scan a forward range from the start key.

use fjall::Keyspace;
use siftdb_bench_kit::ycsb::YcsbEngine;

type BoxErr = Box<dyn std::error::Error + Send + Sync>;

/// The keyspace of the run.
pub struct FjallYcsb<'a> {
    pub ks: &'a Keyspace,
}

impl YcsbEngine for FjallYcsb<'_> {
    type Error = BoxErr;

    fn read(&self, key: &[u8]) -> Result<Option<usize>, BoxErr> {
        Ok(self.ks.get(key)?.map(|v| v.len()))
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Result<(), BoxErr> {
        Ok(self.ks.insert(key, value)?)
    }

    fn scan(&self, start: &[u8], len: usize) -> Result<usize, BoxErr> {
        let mut n = 0;
        for g in self.ks.range(start..).take(len) {
            g.into_inner()?;
            n += 1;
        }
        Ok(n)
    }
}
