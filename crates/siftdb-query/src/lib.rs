//! A small column-store query layer on top of [`siftdb::Db`]: typed tables appended in chunks,
//! scans that skip chunks by min/max and by split-block Bloom filters, and a hash join whose
//! probe filter is pushed into the probe scan.
//!
//! It uses the engine only through siftdb's public API: each table is a keyspace of its own
//! ([`siftdb::Db::reserved_keyspace`], named `__query/<table>`), read and written with `get`,
//! `put`, `write` and `prefix`, and its stored values are decoded with [`siftdb::coding`]. Every
//! stored key and value is specified in docs/format.md#query-storage.
//!
//! * [`Schema`], [`Field`], [`ColumnType`]: `u64`, `i64`, `f64`, `bytes`, optionally nullable.
//! * [`Table`]: create / open (schema checked) / append; chunk metadata ([`ChunkMeta`]: row
//!   count, null count, distinct count, min, max; a Parquet split-block filter per column chunk
//!   sized from the distinct count for [`CHUNK_FILTER_FPR`]).
//! * [`scan`] with [`eq`], [`in_list`], [`between`] and a projection.
//! * [`hash_join`] with [`JoinMode`]s `NoFilter` .. `Adaptive`.
//!
//! ```
//! use siftdb_query::*;
//! # let dir = tempfile::tempdir().unwrap();
//! let db = siftdb::Db::open(dir.path(), siftdb::Options::default()).unwrap();
//! let schema = Schema::new(vec![Field::new("id", ColumnType::U64), Field::new("v", ColumnType::F64)]).unwrap();
//! let mut t = Table::create(&db, "t", schema, TableOptions { chunk_rows: 4, page_rows: 2 }).unwrap();
//! t.append(&[
//!     Column::new(ColumnData::U64((0..10).collect())),
//!     Column::new(ColumnData::F64((0..10).map(|i| i as f64 / 2.0).collect())),
//! ]).unwrap();
//! let r = scan(&t, &ScanSpec { predicates: vec![between("id", Value::U64(8), Value::U64(9))],
//!                              projection: vec!["v".into()] }).unwrap();
//! assert_eq!(r.columns[0].data, ColumnData::F64(vec![4.0, 4.5]));
//! assert_eq!(r.counters.chunks_skipped_minmax, 2);
//! ```

#![warn(missing_docs)]

mod chunk;
mod chunk_reader;
mod column;
mod counters;
mod crc;
mod join;
mod meta;
mod page;
#[cfg(feature = "parquet")]
mod parquet;
mod scan;
mod schema;
mod table;

pub use chunk::CHUNK_FILTER_FPR;
pub use column::{Column, ColumnData, Value};
pub use counters::{JoinCounters, ScanCounters};
pub use join::{
    hash_join, key_hash, AdaptiveConfig, BuildSide, FilterChoice, JoinMode, JoinOptions,
    JoinResult, ProbeSide,
};
pub use meta::{ChunkMeta, ColumnMeta};
#[cfg(feature = "parquet")]
pub use parquet::ExportStats;
pub use scan::{between, eq, in_list, scan, Predicate, ScanResult, ScanSpec};
pub use schema::{ColumnType, Field, Schema};
pub use table::{Table, TableOptions, DEFAULT_CHUNK_ROWS, DEFAULT_PAGE_ROWS};

/// Read-only decoding of stored column chunks, for tools and fuzzers (docs/format.md, "Query
/// layer storage"); a query does not need it.
pub mod inspect {
    pub use crate::chunk_reader::decode_column_chunk;
}
