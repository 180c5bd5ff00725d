//! [`Table::import_parquet`]: a flat Parquet file into a new table.
//!
//! Accepted leaves (each a top-level column; `OPTIONAL` becomes nullable, `REQUIRED` not):
//! `INT64` with no logical type or `Integer { bit_width: 64, is_signed: true }` (or the legacy
//! converted type `INT_64`) becomes `i64`; `INT64` with `Integer { 64, unsigned }` (or `UINT_64`)
//! becomes `u64` (same bits); `DOUBLE` becomes `f64`; `BYTE_ARRAY` with no logical type or
//! `String` / `Enum` / `Json` / `Bson` becomes `bytes`. Anything else (a group, a `REPEATED`
//! column, another physical type, an `INT64` timestamp or decimal, a decimal `BYTE_ARRAY`) is
//! [`Error::InvalidArgument`] naming the column, checked for every column before the table is
//! created.

use super::from_parquet;
use crate::column::{Column, ColumnData};
use crate::schema::{ColumnType, Field, Schema};
use crate::table::{Table, TableOptions};
use parquet::basic::{ConvertedType, LogicalType, Repetition, Type as PhysicalType};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType;
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};
use parquet::schema::types::Type;
use siftdb::Db;
use siftdb::{Error, Result};
use std::fs::File;
use std::path::Path;

/// The siftdb field of top-level Parquet column `t`, or why it cannot be imported.
fn field_of(t: &Type) -> Result<Field> {
    let name = t.name();
    let refuse = |why: String| Err(Error::invalid(format!("Parquet column {name:?}: {why}")));
    if t.is_group() {
        return refuse("a nested group; siftdb imports flat files only".into());
    }
    let info = t.get_basic_info();
    let nullable = match info.repetition() {
        Repetition::REQUIRED => false,
        Repetition::OPTIONAL => true,
        Repetition::REPEATED => return refuse("REPEATED; siftdb imports flat files only".into()),
    };
    let logical = info.logical_type_ref();
    let converted = info.converted_type();
    let physical = t.get_physical_type();
    let ty = match physical {
        PhysicalType::INT64 => match (logical, converted) {
            (Some(LogicalType::Integer(i)), _) if i.bit_width == 64 => {
                if i.is_signed {
                    ColumnType::I64
                } else {
                    ColumnType::U64
                }
            }
            (None, ConvertedType::NONE | ConvertedType::INT_64) => ColumnType::I64,
            (None, ConvertedType::UINT_64) => ColumnType::U64,
            (l, c) => {
                return refuse(format!("INT64 with logical type {l:?} / {c} is not supported"))
            }
        },
        PhysicalType::DOUBLE => match logical {
            None => ColumnType::F64,
            Some(l) => return refuse(format!("DOUBLE with logical type {l:?} is not supported")),
        },
        PhysicalType::BYTE_ARRAY => match (logical, converted) {
            (
                None
                | Some(LogicalType::String | LogicalType::Enum | LogicalType::Json)
                | Some(LogicalType::Bson),
                ConvertedType::NONE
                | ConvertedType::UTF8
                | ConvertedType::ENUM
                | ConvertedType::JSON
                | ConvertedType::BSON,
            ) => ColumnType::Bytes,
            (l, c) => {
                return refuse(format!("BYTE_ARRAY with logical type {l:?} / {c} is not supported"))
            }
        },
        other => {
            return refuse(format!(
                "physical type {other} is not supported (only INT64, DOUBLE and BYTE_ARRAY)"
            ))
        }
    };
    Ok(Field { name: name.to_string(), ty, nullable })
}

/// The non-null values of a column chunk and, for a nullable column, its definition levels.
type Records<T> = (Vec<T>, Option<Vec<i16>>);

/// Every record of one column chunk: the non-null values and, for a nullable column, the
/// definition levels.
fn read_all<T: DataType>(
    mut r: ColumnReaderImpl<T>,
    rows: usize,
    nullable: bool,
) -> std::result::Result<Records<T::T>, ParquetError> {
    // The row count comes from the file: reserve no more than a chunk's worth up front.
    let cap = rows.min(1 << 20);
    let mut values = Vec::with_capacity(cap);
    let mut def = nullable.then(|| Vec::with_capacity(cap));
    let mut got = 0;
    while got < rows {
        let (records, _, _) = r.read_records(rows - got, def.as_mut(), None, &mut values)?;
        if records == 0 {
            break;
        }
        got += records;
    }
    if got != rows {
        return Err(ParquetError::General(format!("{got} rows where the footer says {rows}")));
    }
    Ok((values, def))
}

/// Spreads the non-null `values` over the rows whose definition level is 1 (nulls get the
/// type's default, as siftdb stores them).
fn spread<T: Clone + Default>(
    (values, def): Records<T>,
) -> std::result::Result<(Vec<T>, Option<Vec<bool>>), ParquetError> {
    let Some(def) = def else { return Ok((values, None)) };
    let present: Vec<bool> = def.iter().map(|&d| d == 1).collect();
    if present.iter().filter(|&&p| p).count() != values.len() {
        return Err(ParquetError::General("definition levels disagree with the values".into()));
    }
    let mut it = values.into_iter();
    let out = present.iter().map(|&p| if p { it.next().unwrap_or_default() } else { T::default() });
    Ok((out.collect(), Some(present)))
}

/// Column `k` (field `f`) of a row group of `rows` rows.
fn read_column(
    rg: &dyn RowGroupReader,
    k: usize,
    f: &Field,
    rows: usize,
) -> std::result::Result<Column, ParquetError> {
    let (data, validity) = match (rg.get_column_reader(k)?, f.ty) {
        (ColumnReader::Int64ColumnReader(r), ColumnType::U64) => {
            let (v, def) = read_all(r, rows, f.nullable)?;
            let (v, val) = spread((v.into_iter().map(|x| x as u64).collect(), def))?;
            (ColumnData::U64(v), val)
        }
        (ColumnReader::Int64ColumnReader(r), ColumnType::I64) => {
            let (v, val) = spread(read_all(r, rows, f.nullable)?)?;
            (ColumnData::I64(v), val)
        }
        (ColumnReader::DoubleColumnReader(r), ColumnType::F64) => {
            let (v, val) = spread(read_all(r, rows, f.nullable)?)?;
            (ColumnData::F64(v), val)
        }
        (ColumnReader::ByteArrayColumnReader(r), ColumnType::Bytes) => {
            let (v, def) = read_all(r, rows, f.nullable)?;
            let (v, val) = spread((v.iter().map(|b| b.data().to_vec()).collect(), def))?;
            (ColumnData::Bytes(v), val)
        }
        _ => return Err(ParquetError::General("column reader of an unexpected type".into())),
    };
    Ok(Column { data, validity })
}

impl<'db> Table<'db> {
    /// Creates table `name` in `db` from the flat Parquet file at `path` and appends its rows,
    /// each row group in one [`Table::append`] (so chunks follow `opts.chunk_rows`).
    ///
    /// The schema takes the file's column names, in order, with the types of the module
    /// documentation; an unsupported column is [`Error::InvalidArgument`] naming it, before
    /// anything is created. A file that cannot be read (missing, truncated, corrupt) is an
    /// error naming the path and, once the table exists, the row group and column; the table is
    /// then dropped again, so an import either creates the whole table or none of it.
    pub fn import_parquet(
        db: &'db Db,
        name: &str,
        path: impl AsRef<Path>,
        opts: TableOptions,
    ) -> Result<Table<'db>> {
        let path = path.as_ref();
        let ctx = format!("reading Parquet file {}", path.display());
        let file = File::open(path).map_err(|e| Error::io(ctx.clone(), e))?;
        let reader = SerializedFileReader::new(file).map_err(|e| from_parquet(&ctx, e))?;
        let root = reader.metadata().file_metadata().schema_descr().root_schema();
        let fields = root.get_fields().iter().map(|t| field_of(t)).collect::<Result<Vec<_>>>()?;
        let schema =
            Schema::new(fields).map_err(|e| Error::invalid(format!("{}: {e}", path.display())))?;
        let mut table = Table::create(db, name, schema.clone(), opts)?;
        match append_row_groups(&mut table, &reader, &schema, &ctx) {
            Ok(()) => Ok(table),
            Err(e) => {
                let keyspace = table.keyspace().name().to_string();
                drop(table);
                let _ = db.drop_keyspace(&keyspace);
                Err(e)
            }
        }
    }
}

/// Appends every row group of `reader` to `table`, one `append` each.
fn append_row_groups(
    table: &mut Table<'_>,
    reader: &SerializedFileReader<File>,
    schema: &Schema,
    ctx: &str,
) -> Result<()> {
    for g in 0..reader.num_row_groups() {
        let rg = reader
            .get_row_group(g)
            .map_err(|e| from_parquet(&format!("{ctx}: row group {g}"), e))?;
        let rows = usize::try_from(rg.metadata().num_rows()).map_err(|_| {
            Error::corruption(format!("{ctx}: row group {g}: negative row count"), None)
        })?;
        let columns = schema
            .fields
            .iter()
            .enumerate()
            .map(|(k, f)| {
                read_column(rg.as_ref(), k, f, rows).map_err(|e| {
                    from_parquet(&format!("{ctx}: row group {g} column {:?}", f.name), e)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        table.append(&columns)?;
    }
    Ok(())
}
