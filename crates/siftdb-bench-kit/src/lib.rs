//! The benchmark code that `siftdb bench` and the peers' drivers (tools/rocksdb-bench,
//! tools/fjall-bench) share, so one command line means the same work in every engine: db_bench's
//! key and value generation, the key layout of the scan benchmarks, the thread runner and read
//! budget of the workloads, and the result line; the filter survey (FPR, space and speed of
//! every filter kind) behind `siftdb readamp`'s plot and the filter examples. Also the demo's load loop, shared by
//! `siftdb demo`, `siftdb readamp` and the `point_lookups` example; the YCSB core workloads
//! behind the [`ycsb::YcsbEngine`] trait (`siftdb ycsb`, and `ycsbload`, `ycsba`..`ycsbf` in
//! every driver), with their request distributions and a latency histogram; and the transaction workloads behind
//! the [`txn::TxEngine`] trait that siftdb and each peer implement; the `ingest` benchmark's
//! plan and the write-amplification meter (process I/O) every tool prints under a fill.
//!
//! Only [`load`] uses siftdb's engine; the other modules are engine-agnostic.

#![warn(missing_docs)]

pub mod hist;
pub mod ingest;
pub mod io_meter;
pub mod key_layout;
pub mod keys;
pub mod load;
pub mod result_line;
pub mod survey;
pub mod txn;
pub mod workloads;
pub mod ycsb;
pub mod zipf;
