//! Table schemas: named, typed columns, stored next to the table so a reopen can check them.
//!
//! Stored layout: docs/format.md#query-storage, schema value.

use crate::crc::{push_crc, split_crc};
use crate::table::{TableOptions, DEFAULT_PAGE_ROWS};
use siftdb::coding::Cursor;
use siftdb::{Error, Result};

/// The type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// Unsigned 64-bit integers.
    U64,
    /// Signed 64-bit integers.
    I64,
    /// IEEE-754 doubles, ordered and compared by `f64::total_cmp` (so `-0.0 < 0.0` and a NaN
    /// equals only a NaN of the same bits).
    F64,
    /// Byte strings, ordered lexicographically.
    Bytes,
}

impl ColumnType {
    /// The type tag stored in the schema (1..=4).
    pub fn tag(self) -> u8 {
        match self {
            ColumnType::U64 => 1,
            ColumnType::I64 => 2,
            ColumnType::F64 => 3,
            ColumnType::Bytes => 4,
        }
    }

    /// The type of a stored tag, if known.
    pub fn from_tag(tag: u8) -> Option<ColumnType> {
        Some(match tag {
            1 => ColumnType::U64,
            2 => ColumnType::I64,
            3 => ColumnType::F64,
            4 => ColumnType::Bytes,
            _ => return None,
        })
    }

    /// The type's name ("u64", "i64", "f64", "bytes").
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::U64 => "u64",
            ColumnType::I64 => "i64",
            ColumnType::F64 => "f64",
            ColumnType::Bytes => "bytes",
        }
    }
}

/// One column of a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Column name: 1..=255 bytes, unique in the schema.
    pub name: String,
    /// Value type.
    pub ty: ColumnType,
    /// Whether rows may hold a null. Nulls never satisfy a predicate nor join.
    pub nullable: bool,
}

impl Field {
    /// A non-nullable column.
    pub fn new(name: &str, ty: ColumnType) -> Field {
        Field { name: name.to_string(), ty, nullable: false }
    }

    /// A nullable column.
    pub fn nullable(name: &str, ty: ColumnType) -> Field {
        Field { name: name.to_string(), ty, nullable: true }
    }
}

/// An ordered list of columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// The columns, in storage order (column `i` is stored under column number `i`).
    pub fields: Vec<Field>,
}

const SCHEMA_MAGIC: &[u8; 4] = b"SQS1";
/// Version 2 added `page_rows`; version 1 (no pages) still decodes, with the default page size
/// for the chunks appended from then on.
const SCHEMA_VERSION: u8 = 2;

impl Schema {
    /// A schema of `fields`; names must be unique and 1..=255 bytes, at most 65,535 columns.
    pub fn new(fields: Vec<Field>) -> Result<Schema> {
        if fields.is_empty() || fields.len() > u16::MAX as usize {
            return Err(Error::invalid(format!("{} columns is not in 1..=65535", fields.len())));
        }
        for (i, f) in fields.iter().enumerate() {
            if f.name.is_empty() || f.name.len() > 255 {
                return Err(Error::invalid(format!(
                    "column name {:?} is not 1..=255 bytes",
                    f.name
                )));
            }
            if fields[..i].iter().any(|g| g.name == f.name) {
                return Err(Error::invalid(format!("duplicate column name {:?}", f.name)));
            }
        }
        Ok(Schema { fields })
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Always false (a schema has at least one column).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The index of column `name`, or an invalid-argument error.
    pub fn index_of(&self, name: &str) -> Result<usize> {
        self.fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| Error::invalid(format!("no column named {name:?}")))
    }

    /// The stored encoding (with the table's chunk and page sizes).
    pub(crate) fn encode(&self, opts: &TableOptions) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.fields.len() * 16);
        out.extend_from_slice(SCHEMA_MAGIC);
        out.push(SCHEMA_VERSION);
        out.extend_from_slice(&opts.chunk_rows.to_le_bytes());
        out.extend_from_slice(&opts.page_rows.to_le_bytes());
        out.extend_from_slice(&(self.fields.len() as u16).to_le_bytes());
        for f in &self.fields {
            out.push(f.ty.tag());
            out.push(f.nullable as u8);
            out.push(f.name.len() as u8);
            out.extend_from_slice(f.name.as_bytes());
        }
        push_crc(&mut out);
        out
    }

    /// Decodes a stored schema and its chunk and page sizes.
    pub(crate) fn decode(value: &[u8]) -> Result<(Schema, TableOptions)> {
        let body = split_crc(value, "table schema")?;
        let mut r = Cursor::named(body, "table schema");
        if r.bytes(4, "magic")? != SCHEMA_MAGIC {
            return Err(r.error("magic", "not SQS1"));
        }
        let version = r.u8("version")?;
        if version == 0 || version > SCHEMA_VERSION {
            return Err(r.error("version", &format!("unknown version {version}")));
        }
        let chunk_rows = r.u32("chunk_rows")?;
        if chunk_rows == 0 {
            return Err(r.error("chunk_rows", "zero"));
        }
        let page_rows = if version >= 2 { r.u32("page_rows")? } else { DEFAULT_PAGE_ROWS };
        if page_rows == 0 {
            return Err(r.error("page_rows", "zero"));
        }
        let n = r.u16("column count")? as usize;
        let mut fields = Vec::with_capacity(n.min(r.remaining() / 3));
        for _ in 0..n {
            let tag = r.u8("type tag")?;
            let ty = ColumnType::from_tag(tag).ok_or_else(|| r.error("type tag", "unknown"))?;
            let nullable = match r.u8("nullable")? {
                0 => false,
                1 => true,
                _ => return Err(r.error("nullable", "not 0 or 1")),
            };
            let len = r.u8("name length")? as usize;
            let name = std::str::from_utf8(r.bytes(len, "name")?)
                .map_err(|_| r.error("name", "not UTF-8"))?;
            fields.push(Field { name: name.to_string(), ty, nullable });
        }
        r.finish()?;
        let schema = Schema::new(fields).map_err(|e| r.error("columns", &e.to_string()))?;
        Ok((schema, TableOptions { chunk_rows, page_rows }))
    }
}
