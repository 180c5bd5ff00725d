//! Typed tables stored in a [`Db`] through its keyspace API (`get`, `write`, `prefix`).
//!
//! Storage (docs/format.md#query-storage): table `t` lives in a keyspace of its own,
//! `__query/t` (names starting with `__` are reserved for siftdb, so no user keyspace and no
//! user key of the default keyspace can collide with a table's keys). In it: the schema at
//! `s`, chunk `c`'s metadata at `m/{c:u32 BE}`, column `k` of chunk `c` at `c/{c:u32 BE}{k:u16
//! BE}` and its chunk filter at `f/{c:u32 BE}{k:u16 BE}`. A chunk's column values, filters and
//! metadata go into the store in one `WriteBatch`, metadata included, so a crash leaves either
//! the whole chunk or none of it. The keyspace has no SST filter (every read is of a key the
//! chunk metadata says exists) and no block compression (column chunks hold their own
//! compressed or bit-packed pages).

use crate::chunk::encode_column;
use crate::chunk_reader::ColumnChunk;
use crate::column::Column;
use crate::meta::ChunkMeta;
use crate::schema::Schema;
use siftdb::filter::SplitBlockBloom;
use siftdb::options::{Compression, FilterConfig, FilterPolicy, StaticFilterKind};
use siftdb::{Db, Keyspace, KeyspaceOptions, WriteBatch};
use siftdb::{Error, Result};

/// Default rows per chunk.
pub const DEFAULT_CHUNK_ROWS: u32 = 65_536;
/// Default rows per page.
pub const DEFAULT_PAGE_ROWS: u32 = 4_096;

/// Options of [`Table::create`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOptions {
    /// Rows per chunk. Default 65,536: large enough that per-chunk costs (one `get` per column,
    /// one chunk filter) vanish, small enough that min/max skipping has something to skip.
    pub chunk_rows: u32,
    /// Rows per page inside a column chunk (Parquet's data pages). Default 4,096. Each page is
    /// encoded on its own with its own min/max, so scans skip pages by min/max and late
    /// materialisation decodes only the pages holding surviving rows.
    pub page_rows: u32,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions { chunk_rows: DEFAULT_CHUNK_ROWS, page_rows: DEFAULT_PAGE_ROWS }
    }
}

/// A table: its schema and the metadata of every chunk (kept in memory; data stays in the Db).
pub struct Table<'db> {
    db: &'db Db,
    /// The table's own keyspace, `__query/<name>`.
    ks: Keyspace,
    name: String,
    schema: Schema,
    opts: TableOptions,
    chunks: Vec<ChunkMeta>,
}

impl std::fmt::Debug for Table<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .field("opts", &self.opts)
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

/// The keyspace of table `name`.
fn keyspace_name(name: &str) -> String {
    format!("__query/{name}")
}

/// Options of a table's keyspace (module documentation).
fn keyspace_options() -> KeyspaceOptions {
    KeyspaceOptions {
        filter_policy: FilterPolicy {
            flush: FilterConfig::None,
            compaction: StaticFilterKind::None,
            ..FilterPolicy::default()
        },
        compression: Compression::None,
        ..KeyspaceOptions::default()
    }
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 64
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(Error::invalid(format!("table name {name:?} is not 1..=64 of [A-Za-z0-9_]")));
    }
    Ok(())
}

impl<'db> Table<'db> {
    /// Creates table `name` (1..=64 of `[A-Za-z0-9_]`) with `schema`; fails if it exists.
    pub fn create(
        db: &'db Db,
        name: &str,
        schema: Schema,
        opts: TableOptions,
    ) -> Result<Table<'db>> {
        check_name(name)?;
        if opts.chunk_rows == 0 || opts.page_rows == 0 {
            return Err(Error::invalid(format!(
                "chunk_rows {} and page_rows {} must be positive",
                opts.chunk_rows, opts.page_rows
            )));
        }
        let ks = db.reserved_keyspace(&keyspace_name(name), keyspace_options())?;
        let key = Table::schema_key();
        if ks.get(&key)?.is_some() {
            return Err(Error::invalid(format!("table {name:?} already exists")));
        }
        ks.put(&key, schema.encode(&opts))?;
        Ok(Table { db, ks, name: name.to_string(), schema, opts, chunks: Vec::new() })
    }

    /// Opens table `name`, checking that its stored schema equals `expected` (names, types and
    /// nullability): a mismatch is [`Error::InvalidArgument`] naming the first difference.
    pub fn open(db: &'db Db, name: &str, expected: &Schema) -> Result<Table<'db>> {
        let t = Table::open_any(db, name)?;
        if t.schema.len() != expected.len() {
            return Err(Error::invalid(format!(
                "table {name:?} has {} columns, caller expects {}",
                t.schema.len(),
                expected.len()
            )));
        }
        for (s, e) in t.schema.fields.iter().zip(&expected.fields) {
            if s != e {
                return Err(Error::invalid(format!(
                    "table {name:?}: stored column {:?} {}{} but caller expects {:?} {}{}",
                    s.name,
                    s.ty.name(),
                    if s.nullable { " nullable" } else { "" },
                    e.name,
                    e.ty.name(),
                    if e.nullable { " nullable" } else { "" },
                )));
            }
        }
        Ok(t)
    }

    /// Opens table `name` with whatever schema it was created with.
    pub fn open_any(db: &'db Db, name: &str) -> Result<Table<'db>> {
        check_name(name)?;
        let missing = || Error::invalid(format!("no table named {name:?}"));
        let ks = db.existing_keyspace(&keyspace_name(name)).ok_or_else(missing)?;
        let value = ks.get(Table::schema_key())?.ok_or_else(missing)?;
        let (schema, opts) = Schema::decode(&value)?;
        let mut chunks = Vec::new();
        let mut next_row = 0u64;
        for kv in ks.prefix(b"m/")? {
            let (k, v) = kv?;
            let meta = ChunkMeta::decode(&v, &schema.fields)?;
            let expect_key = Table::meta_key_of(chunks.len() as u32);
            if k != expect_key || meta.index as usize != chunks.len() || meta.first_row != next_row
            {
                return Err(Error::corruption(
                    format!("table {name:?}: chunk {} metadata out of sequence", chunks.len()),
                    None,
                ));
            }
            next_row += meta.rows as u64;
            chunks.push(meta);
        }
        Ok(Table { db, ks, name: name.to_string(), schema, opts, chunks })
    }

    fn schema_key() -> Vec<u8> {
        b"s".to_vec()
    }

    fn meta_key_of(chunk: u32) -> Vec<u8> {
        let mut k = b"m/".to_vec();
        k.extend_from_slice(&chunk.to_be_bytes());
        k
    }

    /// The key of column `col` of chunk `chunk` (`kind` b'c' for values, b'f' for the filter).
    fn column_key(&self, kind: u8, chunk: u32, col: usize) -> Vec<u8> {
        let mut k = Vec::with_capacity(8);
        k.push(kind);
        k.push(b'/');
        k.extend_from_slice(&chunk.to_be_bytes());
        k.extend_from_slice(&(col as u16).to_be_bytes());
        k
    }

    /// The keyspace holding the table (for inspection and tests).
    pub fn keyspace(&self) -> &Keyspace {
        &self.ks
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Rows per chunk.
    pub fn chunk_rows(&self) -> u32 {
        self.opts.chunk_rows
    }

    /// Rows per page of the chunks this table appends (chunks written before a table's page
    /// size existed hold one page each).
    pub fn page_rows(&self) -> u32 {
        self.opts.page_rows
    }

    /// Metadata of every chunk, in order.
    pub fn chunks(&self) -> &[ChunkMeta] {
        &self.chunks
    }

    /// Total rows.
    pub fn num_rows(&self) -> u64 {
        self.chunks.last().map_or(0, |c| c.first_row + c.rows as u64)
    }

    /// Appends rows given as one column per schema column (equal lengths, matching types and
    /// nullability), cut into chunks of `chunk_rows`; the last chunk may be short. Each chunk is
    /// one atomic `WriteBatch`.
    pub fn append(&mut self, columns: &[Column]) -> Result<()> {
        if columns.len() != self.schema.len() {
            return Err(Error::invalid(format!(
                "{} columns given, schema has {}",
                columns.len(),
                self.schema.len()
            )));
        }
        let rows = columns[0].len();
        for (c, f) in columns.iter().zip(&self.schema.fields) {
            if c.len() != rows || c.data.ty() != f.ty {
                return Err(Error::invalid(format!("column {:?}: wrong type or length", f.name)));
            }
            if c.validity.is_some()
                && !f.nullable
                && c.validity.as_ref().is_some_and(|v| v.contains(&false))
            {
                return Err(Error::invalid(format!("column {:?} is not nullable", f.name)));
            }
        }
        let mut start = 0;
        while start < rows {
            let end = (start + self.opts.chunk_rows as usize).min(rows);
            let index =
                u32::try_from(self.chunks.len()).map_err(|_| Error::invalid("too many chunks"))?;
            let mut batch = WriteBatch::new();
            let mut metas = Vec::with_capacity(columns.len());
            for (k, (c, f)) in columns.iter().zip(&self.schema.fields).enumerate() {
                let enc = encode_column(f, c, start, end, self.opts.page_rows as usize)?;
                batch.put_in(&self.ks, self.column_key(b'c', index, k), &enc.value);
                if let Some(filter) = &enc.filter {
                    batch.put_in(&self.ks, self.column_key(b'f', index, k), filter);
                }
                metas.push(enc.meta);
            }
            let meta = ChunkMeta {
                index,
                first_row: self.num_rows(),
                rows: (end - start) as u32,
                columns: metas,
            };
            batch.put_in(&self.ks, Table::meta_key_of(index), meta.encode());
            self.db.write(batch)?;
            self.chunks.push(meta);
            start = end;
        }
        Ok(())
    }

    /// Reads column `col` of chunk `chunk` and checks its page index; pages decode on demand.
    pub(crate) fn read_column(&self, chunk: usize, col: usize) -> Result<ColumnChunk> {
        let meta = &self.chunks[chunk];
        let value = self.ks.get(self.column_key(b'c', meta.index, col))?.ok_or_else(|| {
            Error::corruption(
                format!("table {:?}: chunk {chunk} column {col} is missing", self.name),
                None,
            )
        })?;
        ColumnChunk::parse(value, &self.schema.fields[col], meta.rows)
    }

    /// Reads the chunk filter of column `col` of chunk `chunk` (`None` if the chunk has no
    /// non-null value there).
    pub(crate) fn read_filter(&self, chunk: usize, col: usize) -> Result<Option<SplitBlockBloom>> {
        let meta = &self.chunks[chunk];
        if !meta.columns[col].has_filter {
            return Ok(None);
        }
        let value = self.ks.get(self.column_key(b'f', meta.index, col))?.ok_or_else(|| {
            Error::corruption(
                format!("table {:?}: chunk {chunk} filter {col} is missing", self.name),
                None,
            )
        })?;
        Ok(Some(SplitBlockBloom::from_bytes(&value)?))
    }

    /// Every row of chunk `chunk`, one column per schema column (for export).
    #[cfg(feature = "parquet")]
    pub(crate) fn chunk_columns(&self, chunk: usize) -> Result<Vec<Column>> {
        (0..self.schema.len())
            .map(|k| {
                let mut c = self.read_column(chunk, k)?;
                c.load_all()?;
                Ok(c.to_column(self.schema.fields[k].nullable))
            })
            .collect()
    }

    /// The raw stored bytes of column `col` of chunk `chunk` (for inspection and tests).
    pub fn column_chunk_bytes(&self, chunk: usize, col: usize) -> Result<Option<Vec<u8>>> {
        let meta = self.chunks.get(chunk).ok_or_else(|| Error::invalid("no such chunk"))?;
        self.ks.get(self.column_key(b'c', meta.index, col))
    }

    /// The key of column `col` of chunk `chunk` in [`Table::keyspace`] (for inspection and
    /// tests).
    pub fn column_chunk_key(&self, chunk: usize, col: usize) -> Result<Vec<u8>> {
        let meta = self.chunks.get(chunk).ok_or_else(|| Error::invalid("no such chunk"))?;
        Ok(self.column_key(b'c', meta.index, col))
    }
}
