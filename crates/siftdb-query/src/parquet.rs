//! Parquet export and import of query tables (cargo feature `parquet`).
//!
//! [`Table::export_parquet`] writes a table as one flat Parquet file that DuckDB, Spark or
//! pyarrow read as is; [`Table::import_parquet`] (in `parquet/import.rs`) creates a table from
//! such a file. Mapping (docs/format.md#query-storage, Parquet export):
//!
//! | siftdb          | Parquet physical type | logical type                               |
//! |-----------------|-----------------------|--------------------------------------------|
//! | `u64`           | `INT64`               | `Integer { bit_width: 64, is_signed: false }` (converted type `UINT_64`) |
//! | `i64`           | `INT64`               | none (signed)                              |
//! | `f64`           | `DOUBLE`              | none                                       |
//! | `bytes`         | `BYTE_ARRAY`          | none (a BLOB to readers: not known to be UTF-8) |
//!
//! A nullable column is `OPTIONAL`, any other `REQUIRED`; names are the schema's. A `u64`
//! value is stored as the `INT64` of the same bits.
//!
//! Layout: one row group per siftdb chunk, data pages of [`Table::page_rows`] rows (the last
//! page of a chunk may be short), whatever the chunk's own page layout. Every column chunk
//! carries statistics (min, max, null count and the chunk's distinct count: the chunk
//! metadata's, except that Parquet leaves NaNs out of a double's min and max), the page index
//! (column index and offset index) and, when the chunk has a non-null value and the filter is
//! within Parquet's 128 MiB bitset limit, a split-block Bloom filter that is siftdb's own chunk
//! filter, byte for byte: siftdb's filter already is Parquet's (XXH64 seed 0 of the plain
//! encoding, little-endian 32-byte blocks), so it is handed to the writer instead of letting
//! the writer hash every value again.
//!
//! Encoding: data pages v1, zstd level 1; a column chunk is dictionary-encoded when its values
//! repeat (distinct count at most a quarter of its non-null rows), else `PLAIN`. Every page
//! header carries the format's page CRC (`parquet/crc.rs`; parquet-rs does not write one). The
//! footer's key-value metadata holds `siftdb.version` and `siftdb.table`.
//!
//! Each column chunk is encoded into memory by a column writer, its Bloom filter is replaced by
//! siftdb's, and it is spliced into the row group (`SerializedRowGroupWriter::append_column`).

mod crc;
mod import;

use crate::column::{Column, ColumnData};
use crate::meta::ColumnMeta;
use crate::schema::{ColumnType, Schema};
use crate::table::Table;
use bytes::Bytes;
use crc::CrcPageWriter;
use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType, ZstdLevel};
use parquet::bloom_filter::{Sbbf, BITSET_MAX_LENGTH};
use parquet::column::writer::{get_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor, Type};
use siftdb::filter::SplitBlockBloom;
use siftdb::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;

/// What [`Table::export_parquet`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportStats {
    /// Rows written (the table's row count).
    pub rows: u64,
    /// Row groups written: one per chunk.
    pub row_groups: usize,
    /// Size of the file in bytes.
    pub bytes: u64,
}

/// Page compression of exported files: zstd level 1 (chosen by measurement, docs/format.md#parquet:
/// 16% smaller than LZ4_RAW or Snappy on the join benchmark's fact table for
/// a fifth more export time; the zstd library is the one siftdb already links).
fn compression() -> Compression {
    Compression::ZSTD(ZstdLevel::default()) // level 1
}

/// A column chunk is dictionary-encoded when each distinct value occurs at least this many
/// times on average (from the chunk's distinct count): then the dictionary plus bit-packed
/// indices are smaller than the plain values; otherwise plain encoding, which costs no hashing.
const DICTIONARY_MIN_REPEATS: u64 = 4;

/// Page byte limits high enough never to cut a page before its row count: a siftdb column
/// chunk holds at most 2^30 bytes, so no page or dictionary of it reaches this.
const NO_BYTE_LIMIT: usize = u32::MAX as usize;

/// A Parquet error as a siftdb error: corruption for bytes that do not decode, invalid argument
/// for what siftdb does not support, I/O with context otherwise.
fn from_parquet(context: &str, e: ParquetError) -> Error {
    match e {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => Error::io(context.to_string(), *io),
            Err(other) => Error::corruption(format!("{context}: {other}"), None),
        },
        ParquetError::NYI(what) => Error::invalid(format!("{context}: not supported: {what}")),
        ParquetError::NeedMoreData(_)
        | ParquetError::NeedMoreDataRange(_)
        | ParquetError::EOF(_) => Error::corruption(format!("{context}: truncated: {e}"), None),
        e => Error::corruption(format!("{context}: {e}"), None),
    }
}

/// The Parquet schema of a siftdb schema (module documentation).
fn parquet_schema(name: &str, schema: &Schema) -> Result<Arc<Type>> {
    let fields = schema
        .fields
        .iter()
        .map(|f| {
            let (physical, logical) = match f.ty {
                ColumnType::U64 => (PhysicalType::INT64, Some(LogicalType::integer(64, false))),
                ColumnType::I64 => (PhysicalType::INT64, None),
                ColumnType::F64 => (PhysicalType::DOUBLE, None),
                ColumnType::Bytes => (PhysicalType::BYTE_ARRAY, None),
            };
            let repetition = if f.nullable { Repetition::OPTIONAL } else { Repetition::REQUIRED };
            Type::primitive_type_builder(&f.name, physical)
                .with_repetition(repetition)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| from_parquet("building the Parquet schema", e))?;
    Type::group_type_builder(name)
        .with_fields(fields)
        .build()
        .map(Arc::new)
        .map_err(|e| from_parquet("building the Parquet schema", e))
}

/// Writer properties: pages of `page_rows` rows, page statistics (so the page index), no
/// statistics truncation (the chunk statistics equal siftdb's), no Bloom filter of the writer's
/// own (siftdb's is spliced in), dictionary encoding as `dictionary`.
fn properties(page_rows: usize, dictionary: bool) -> Arc<WriterProperties> {
    Arc::new(
        WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_compression(compression())
            .set_dictionary_enabled(dictionary)
            .set_dictionary_page_size_limit(NO_BYTE_LIMIT)
            .set_data_page_size_limit(NO_BYTE_LIMIT)
            .set_data_page_row_count_limit(page_rows)
            .set_write_batch_size(page_rows)
            .set_max_row_group_row_count(None)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_statistics_truncate_length(None)
            .set_bloom_filter_enabled(false)
            .build(),
    )
}

/// Definition levels of a nullable column (1 present, 0 null); `None` for a required one.
fn levels(col: &Column, nullable: bool) -> Option<Vec<i16>> {
    match &col.validity {
        _ if !nullable => None,
        Some(v) => Some(v.iter().map(|&p| p as i16).collect()),
        None => Some(vec![1; col.len()]),
    }
}

/// The values of the non-null rows.
fn present<T: Copy>(values: &[T], validity: &Option<Vec<bool>>) -> Vec<T> {
    match validity {
        None => values.to_vec(),
        Some(v) => values.iter().zip(v).filter(|(_, &p)| p).map(|(&x, _)| x).collect(),
    }
}

/// Encodes one column chunk into memory; returns its bytes and the writer's close result with
/// siftdb's chunk filter as its Bloom filter.
fn encode_column_chunk(
    descr: ColumnDescPtr,
    props: Arc<WriterProperties>,
    col: Column,
    nullable: bool,
    meta: &ColumnMeta,
    filter: Option<SplitBlockBloom>,
) -> std::result::Result<(Bytes, ColumnCloseResult), ParquetError> {
    let mut buf = Vec::new();
    let def = levels(&col, nullable);
    let def = def.as_deref();
    let distinct = Some(meta.distinct as u64);
    let writer = get_column_writer(descr, props, Box::new(CrcPageWriter { out: &mut buf }));
    let mut close = match (writer, col.data) {
        (ColumnWriter::Int64ColumnWriter(mut w), ColumnData::U64(v)) => {
            let v: Vec<i64> = present(&v, &col.validity).into_iter().map(|x| x as i64).collect();
            w.write_batch_with_statistics(&v, def, None, None, None, distinct)?;
            w.close()?
        }
        (ColumnWriter::Int64ColumnWriter(mut w), ColumnData::I64(v)) => {
            let v = if col.validity.is_some() { present(&v, &col.validity) } else { v };
            w.write_batch_with_statistics(&v, def, None, None, None, distinct)?;
            w.close()?
        }
        (ColumnWriter::DoubleColumnWriter(mut w), ColumnData::F64(v)) => {
            let v = if col.validity.is_some() { present(&v, &col.validity) } else { v };
            w.write_batch_with_statistics(&v, def, None, None, None, distinct)?;
            w.close()?
        }
        (ColumnWriter::ByteArrayColumnWriter(mut w), ColumnData::Bytes(v)) => {
            let v: Vec<ByteArray> = match &col.validity {
                None => v.into_iter().map(ByteArray::from).collect(),
                Some(p) => {
                    v.into_iter().zip(p).filter(|(_, &p)| p).map(|(x, _)| x.into()).collect()
                }
            };
            w.write_batch_with_statistics(&v, def, None, None, None, distinct)?;
            w.close()?
        }
        _ => return Err(ParquetError::General("column type differs from the schema".into())),
    };
    // Parquet readers refuse bitsets above 128 MiB (a chunk of some 100M distinct values).
    let fits = |f: &SplitBlockBloom| f.num_bits() / 8 <= BITSET_MAX_LENGTH as u64;
    close.bloom_filter = filter.filter(fits).map(|f| Sbbf::new(&f.to_parquet_bitset()));
    Ok((Bytes::from(buf), close))
}

impl Table<'_> {
    /// Writes the table to a new Parquet file at `path` (module documentation for the mapping):
    /// one row group per chunk, pages of [`Table::page_rows`] rows, statistics, page index and
    /// siftdb's chunk filters as the Bloom filters. The file is synced before returning.
    ///
    /// Never overwrites: an existing `path` is [`Error::InvalidArgument`] naming it, and the
    /// existing file is untouched. On any later failure the partial file this call created is
    /// removed.
    pub fn export_parquet(&self, path: impl AsRef<Path>) -> Result<ExportStats> {
        let path = path.as_ref();
        let file = OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
            if e.kind() == ErrorKind::AlreadyExists {
                Error::invalid(format!(
                    "export_parquet: {} already exists (export never overwrites)",
                    path.display()
                ))
            } else {
                Error::io(format!("creating Parquet file {}", path.display()), e)
            }
        })?;
        let r = self.write_parquet(file, path);
        if r.is_err() {
            let _ = std::fs::remove_file(path);
        }
        r
    }

    fn write_parquet(&self, file: File, path: &Path) -> Result<ExportStats> {
        let ctx = format!("writing Parquet file {}", path.display());
        let pq = |e| from_parquet(&ctx, e);
        let root = parquet_schema(self.name(), self.schema())?;
        let descr = SchemaDescriptor::new(root.clone());
        let page_rows = self.page_rows() as usize;
        let (plain, dict) = (properties(page_rows, false), properties(page_rows, true));
        let mut writer = SerializedFileWriter::new(file, root, plain.clone()).map_err(pq)?;
        writer.append_key_value_metadata(KeyValue::new(
            "siftdb.version".into(),
            env!("CARGO_PKG_VERSION").to_string(),
        ));
        writer.append_key_value_metadata(KeyValue::new(
            "siftdb.table".into(),
            self.name().to_string(),
        ));
        for (c, chunk) in self.chunks().iter().enumerate() {
            let columns = self.chunk_columns(c)?;
            let mut rg = writer.next_row_group().map_err(pq)?;
            for (k, col) in columns.into_iter().enumerate() {
                let meta = &chunk.columns[k];
                let non_null = chunk.rows as u64 - meta.null_count as u64;
                let use_dict = (meta.distinct as u64) * DICTIONARY_MIN_REPEATS <= non_null;
                let props = if use_dict { dict.clone() } else { plain.clone() };
                let filter = self.read_filter(c, k)?;
                let nullable = self.schema().fields[k].nullable;
                let (bytes, close) =
                    encode_column_chunk(descr.column(k), props, col, nullable, meta, filter)
                        .map_err(pq)?;
                rg.append_column(&bytes, close).map_err(pq)?;
            }
            rg.close().map_err(pq)?;
        }
        let file = writer.into_inner().map_err(pq)?;
        let sync_err = |e| Error::io(format!("syncing {}", path.display()), e);
        file.sync_all().map_err(sync_err)?;
        // The new directory entry too, so a returned export survives a crash.
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        File::open(parent).and_then(|d| d.sync_all()).map_err(sync_err)?;
        let bytes = file.metadata().map_err(|e| Error::io(ctx.clone(), e))?.len();
        Ok(ExportStats { rows: self.num_rows(), row_groups: self.chunks().len(), bytes })
    }
}
