//! Chunk metadata: the chunk's place in the table and per-column statistics (null count,
//! distinct count, min, max, whether a chunk filter exists). Layout: docs/format.md#query-storage,
//! chunk metadata value.

use crate::chunk::value_of_bits;
use crate::column::Value;
use crate::crc::{push_crc, split_crc};
use crate::schema::{ColumnType, Field};
use siftdb::coding::Cursor;
use siftdb::Result;

/// Statistics of one column inside one chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMeta {
    /// Null rows.
    pub null_count: u32,
    /// Distinct non-null values (the filter is sized from it).
    pub distinct: u32,
    /// Smallest non-null value (`None` when every row is null).
    pub min: Option<Value>,
    /// Largest non-null value.
    pub max: Option<Value>,
    /// Whether a chunk filter is stored (there is one whenever a non-null value exists).
    pub has_filter: bool,
    /// Stored size of the column chunk value.
    pub stored_bytes: u32,
}

/// Metadata of one chunk: its place in the table and the statistics of each column.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkMeta {
    /// Chunk number (0, 1, ...).
    pub index: u32,
    /// Row number of the chunk's first row in the table.
    pub first_row: u64,
    /// Rows in the chunk.
    pub rows: u32,
    /// One entry per schema column.
    pub columns: Vec<ColumnMeta>,
}

pub(crate) fn put_stat(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_bits().to_le_bytes()),
        Value::Bytes(b) => {
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        }
        Value::Null => unreachable!("stats are never null"),
    }
}

pub(crate) fn get_stat(r: &mut Cursor<'_>, ty: ColumnType, field: &str) -> Result<Value> {
    Ok(match ty {
        ColumnType::Bytes => {
            let n = r.u32(field)? as usize;
            Value::Bytes(r.bytes(n, field)?.to_vec())
        }
        ty => value_of_bits(ty, r.u64(field)?),
    })
}

const META_VERSION: u8 = 1;

impl ChunkMeta {
    /// The stored encoding.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.columns.len() * 32);
        out.push(META_VERSION);
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(&self.first_row.to_le_bytes());
        out.extend_from_slice(&self.rows.to_le_bytes());
        out.extend_from_slice(&(self.columns.len() as u16).to_le_bytes());
        for c in &self.columns {
            out.extend_from_slice(&c.null_count.to_le_bytes());
            out.extend_from_slice(&c.distinct.to_le_bytes());
            out.extend_from_slice(&c.stored_bytes.to_le_bytes());
            let flags = (c.min.is_some() as u8) | ((c.has_filter as u8) << 1);
            out.push(flags);
            if let (Some(min), Some(max)) = (&c.min, &c.max) {
                put_stat(&mut out, min);
                put_stat(&mut out, max);
            }
        }
        push_crc(&mut out);
        out
    }

    /// Decodes stored chunk metadata and checks it against the schema's column types.
    pub(crate) fn decode(value: &[u8], fields: &[Field]) -> Result<ChunkMeta> {
        let body = split_crc(value, "chunk metadata")?;
        let mut r = Cursor::named(body, "chunk metadata");
        let version = r.u8("version")?;
        if version != META_VERSION {
            return Err(r.error("version", &format!("unknown version {version}")));
        }
        let index = r.u32("chunk index")?;
        let first_row = r.u64("first row")?;
        let rows = r.u32("row count")?;
        let n = r.u16("column count")? as usize;
        if n != fields.len() {
            return Err(r.error("column count", &format!("{n}, schema has {}", fields.len())));
        }
        let mut columns = Vec::with_capacity(n);
        for f in fields {
            let null_count = r.u32("null count")?;
            let distinct = r.u32("distinct count")?;
            let stored_bytes = r.u32("stored bytes")?;
            let flags = r.u8("flags")?;
            if flags > 3 || null_count > rows || distinct > rows - null_count {
                return Err(r.error("column statistics", "out of range"));
            }
            let has_minmax = flags & 1 == 1;
            if has_minmax != (null_count < rows) || (flags & 2 == 2) != has_minmax {
                return Err(r.error("flags", "disagree with the null count"));
            }
            let (min, max) = if has_minmax {
                (Some(get_stat(&mut r, f.ty, "min")?), Some(get_stat(&mut r, f.ty, "max")?))
            } else {
                (None, None)
            };
            columns.push(ColumnMeta {
                null_count,
                distinct,
                min,
                max,
                has_filter: flags & 2 == 2,
                stored_bytes,
            });
        }
        r.finish()?;
        Ok(ChunkMeta { index, first_row, rows, columns })
    }
}
