//! Scans with predicates and a projection, skipping chunks before reading them.
//!
//! Per chunk, in order of cost: (1) every predicate is tested against the chunk's min/max of
//! its column, a chunk no row of which can match is skipped without a read; (2) each `eq` /
//! `in_list` probes the column's chunk filter (a Parquet split-block Bloom filter over the
//! chunk's distinct values) with every value, and a chunk whose filter rejects them all is
//! skipped (a filter has no false negatives, so no matching chunk is ever skipped); (3) the
//! predicate columns are read and, page by page, a page whose min/max (the chunk's page index)
//! excludes the predicate or that holds no selected row is skipped, the others are decoded and
//! evaluated, giving a selection of rows; (4) only if the selection is non-empty are the other
//! projected columns read, and only the pages holding selected rows are decoded and only the
//! selected rows materialised (late materialisation).

use crate::chunk::cmp_bits;
use crate::chunk_reader::{ColumnChunk, PageStats};
use crate::column::{Column, Value};
use crate::counters::ScanCounters;
use crate::meta::ChunkMeta;
use crate::schema::{ColumnType, Schema};
use crate::table::Table;
use siftdb::{Error, Result};
use std::cmp::Ordering;

/// A condition on one column. Nulls satisfy no predicate.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `col == value`.
    Eq {
        /// Column name.
        col: String,
        /// The value.
        value: Value,
    },
    /// `col` is one of `values`.
    InList {
        /// Column name.
        col: String,
        /// The values.
        values: Vec<Value>,
    },
    /// `lo <= col <= hi` (both inclusive).
    Between {
        /// Column name.
        col: String,
        /// Lower bound.
        lo: Value,
        /// Upper bound.
        hi: Value,
    },
}

/// `col == value`.
pub fn eq(col: &str, value: Value) -> Predicate {
    Predicate::Eq { col: col.to_string(), value }
}

/// `col IN (values)`.
pub fn in_list(col: &str, values: Vec<Value>) -> Predicate {
    Predicate::InList { col: col.to_string(), values }
}

/// `lo <= col <= hi`.
pub fn between(col: &str, lo: Value, hi: Value) -> Predicate {
    Predicate::Between { col: col.to_string(), lo, hi }
}

/// The stored bit pattern of a numeric value.
fn bits_of(v: &Value) -> u64 {
    match v {
        Value::U64(x) => *x,
        Value::I64(x) => *x as u64,
        Value::F64(x) => x.to_bits(),
        _ => 0,
    }
}

impl Predicate {
    /// The column the predicate reads.
    pub fn column(&self) -> &str {
        match self {
            Predicate::Eq { col, .. }
            | Predicate::InList { col, .. }
            | Predicate::Between { col, .. } => col,
        }
    }

    fn values(&self) -> Vec<&Value> {
        match self {
            Predicate::Eq { value, .. } => vec![value],
            Predicate::InList { values, .. } => values.iter().collect(),
            Predicate::Between { lo, hi, .. } => vec![lo, hi],
        }
    }

    /// Checks the predicate's values against the column type; returns the column index.
    pub(crate) fn bind(&self, schema: &Schema) -> Result<usize> {
        let col = schema.index_of(self.column())?;
        let ty = schema.fields[col].ty;
        for v in self.values() {
            if v.ty() != Some(ty) {
                return Err(Error::invalid(format!(
                    "predicate value {v:?} does not fit column {:?} of type {}",
                    self.column(),
                    ty.name()
                )));
            }
        }
        Ok(col)
    }

    /// Whether `v` satisfies the predicate (false for null).
    pub fn matches(&self, v: &Value) -> bool {
        let is = |o: Option<Ordering>, want: &[Ordering]| o.is_some_and(|o| want.contains(&o));
        match self {
            Predicate::Eq { value, .. } => is(v.cmp_same(value), &[Ordering::Equal]),
            Predicate::InList { values, .. } => {
                values.iter().any(|x| is(v.cmp_same(x), &[Ordering::Equal]))
            }
            Predicate::Between { lo, hi, .. } => {
                is(v.cmp_same(lo), &[Ordering::Equal, Ordering::Greater])
                    && is(v.cmp_same(hi), &[Ordering::Equal, Ordering::Less])
            }
        }
    }

    /// True when no value in `[min, max]` can satisfy the predicate.
    fn excludes_range(&self, min: &Value, max: &Value) -> bool {
        let inside = |v: &Value| {
            min.cmp_same(v) != Some(Ordering::Greater) && max.cmp_same(v) != Some(Ordering::Less)
        };
        match self {
            Predicate::Eq { value, .. } => !inside(value),
            Predicate::InList { values, .. } => !values.iter().any(inside),
            Predicate::Between { lo, hi, .. } => {
                lo.cmp_same(hi) == Some(Ordering::Greater)
                    || hi.cmp_same(min) == Some(Ordering::Less)
                    || lo.cmp_same(max) == Some(Ordering::Greater)
            }
        }
    }

    /// True when chunk statistics prove no row of column `col` can match.
    pub(crate) fn excludes_chunk(&self, meta: &ChunkMeta, col: usize) -> bool {
        match (&meta.columns[col].min, &meta.columns[col].max) {
            (Some(min), Some(max)) => self.excludes_range(min, max),
            _ => true, // every row null
        }
    }

    /// True when a page's statistics prove no row of it can match (`None`: no statistics, a
    /// version-1 chunk).
    pub(crate) fn excludes_page(&self, stats: Option<&PageStats>) -> bool {
        match stats.map(|s| &s.minmax) {
            None => false,
            Some(None) => true, // every row null
            Some(Some((min, max))) => self.excludes_range(min, max),
        }
    }

    /// The predicate in the stored form of a column of type `ty`, to test rows with.
    pub(crate) fn row_test(&self, ty: ColumnType) -> RowTest<'_> {
        let values = self.values();
        let bits = values.iter().map(|v| bits_of(v)).collect();
        let bytes = values
            .iter()
            .map(|v| match v {
                Value::Bytes(b) => b.as_slice(),
                _ => &[],
            })
            .collect();
        RowTest { ty, between: matches!(self, Predicate::Between { .. }), bits, bytes }
    }
}

/// A predicate compiled for one column: its values as stored bits or byte slices, so testing a
/// row neither allocates nor converts.
pub(crate) struct RowTest<'p> {
    ty: ColumnType,
    /// `lo <= x <= hi` with the two values; otherwise `x` equals one of them.
    between: bool,
    bits: Vec<u64>,
    bytes: Vec<&'p [u8]>,
}

impl RowTest<'_> {
    /// Whether row `i` of `chunk` (its page loaded) satisfies the predicate (false for null).
    #[inline]
    pub(crate) fn matches(&self, chunk: &ColumnChunk, i: usize) -> bool {
        if !chunk.is_valid(i) {
            return false;
        }
        if self.ty == ColumnType::Bytes {
            let x = chunk.bytes_at(i);
            return if self.between {
                x >= self.bytes[0] && x <= self.bytes[1]
            } else {
                self.bytes.contains(&x)
            };
        }
        let x = chunk.bits(i);
        if self.between {
            cmp_bits(self.ty, x, self.bits[0]) != Ordering::Less
                && cmp_bits(self.ty, x, self.bits[1]) != Ordering::Greater
        } else {
            self.bits.iter().any(|&v| cmp_bits(self.ty, x, v) == Ordering::Equal)
        }
    }
}

/// What to read: a conjunction of predicates and the columns to return.
#[derive(Debug, Clone, Default)]
pub struct ScanSpec {
    /// All must hold.
    pub predicates: Vec<Predicate>,
    /// Columns to return, by name, in this order.
    pub projection: Vec<String>,
}

/// Rows a scan returned.
#[derive(Debug, Clone)]
pub struct ScanResult {
    /// One column per projected name.
    pub columns: Vec<Column>,
    /// The table row number of each returned row, ascending.
    pub row_ids: Vec<u64>,
    /// What the scan did.
    pub counters: ScanCounters,
}

/// Scans `table`: rows satisfying every predicate, projected. See the module documentation.
pub fn scan(table: &Table<'_>, spec: &ScanSpec) -> Result<ScanResult> {
    let schema = table.schema();
    let preds: Vec<(usize, &Predicate)> =
        spec.predicates.iter().map(|p| Ok((p.bind(schema)?, p))).collect::<Result<_>>()?;
    let proj: Vec<usize> =
        spec.projection.iter().map(|n| schema.index_of(n)).collect::<Result<_>>()?;
    let mut c = ScanCounters { rows_decoded: vec![0; schema.len()], ..Default::default() };
    let mut columns: Vec<Column> = proj
        .iter()
        .map(|&k| Column::empty(schema.fields[k].ty, schema.fields[k].nullable))
        .collect();
    let tests: Vec<RowTest<'_>> =
        preds.iter().map(|(k, p)| p.row_test(schema.fields[*k].ty)).collect();
    let mut row_ids = Vec::new();
    'chunks: for (ci, meta) in table.chunks().iter().enumerate() {
        c.chunks_total += 1;
        if preds.iter().any(|(k, p)| p.excludes_chunk(meta, *k)) {
            c.chunks_skipped_minmax += 1;
            continue;
        }
        for (k, p) in &preds {
            let hashes: Vec<u64> = match p {
                Predicate::Eq { value, .. } => value.sbbf_hash().into_iter().collect(),
                Predicate::InList { values, .. } => {
                    values.iter().filter_map(Value::sbbf_hash).collect()
                }
                Predicate::Between { .. } => continue,
            };
            c.filters_probed += 1;
            let rejects_all = match table.read_filter(ci, *k)? {
                Some(f) => !hashes.iter().any(|&h| siftdb::filter::Filter::contains_hash(&f, h)),
                None => true,
            };
            if rejects_all {
                c.chunks_skipped_filter += 1;
                continue 'chunks;
            }
        }
        let mut sel: Vec<u32> = (0..meta.rows).collect();
        let mut read: Vec<(usize, ColumnChunk)> = Vec::new();
        for ((k, p), test) in preds.iter().zip(&tests) {
            if sel.is_empty() {
                break;
            }
            let chunk = column(table, ci, *k, &mut read)?;
            let mut kept = Vec::with_capacity(sel.len());
            let mut rest = &sel[..];
            for page in 0..chunk.page_count() {
                let rows = chunk.page_rows(page);
                let (here, after) =
                    rest.split_at(rest.partition_point(|&i| (i as usize) < rows.end));
                rest = after;
                if here.is_empty() {
                    continue;
                }
                if p.excludes_page(chunk.stats(page)) {
                    c.pages_skipped_minmax += 1;
                    continue;
                }
                let n = chunk.load(page)?;
                c.pages_decoded += u64::from(n > 0);
                c.rows_decoded[*k] += n as u64;
                kept.extend(here.iter().filter(|&&i| test.matches(chunk, i as usize)));
            }
            sel = kept;
        }
        if sel.is_empty() {
            continue;
        }
        for (out, &k) in columns.iter_mut().zip(&proj) {
            let chunk = column(table, ci, k, &mut read)?;
            let (pages, rows) = chunk.load_rows(&sel)?;
            c.pages_decoded += pages as u64;
            c.rows_decoded[k] += rows as u64;
            chunk.gather_into(&sel, out)?;
        }
        row_ids.extend(sel.iter().map(|&i| meta.first_row + i as u64));
    }
    c.rows_out = row_ids.len() as u64;
    Ok(ScanResult { columns, row_ids, counters: c })
}

/// Column `k` of chunk `ci`, read once per chunk: from `read` if an earlier step read it.
fn column<'a>(
    table: &Table<'_>,
    ci: usize,
    k: usize,
    read: &'a mut Vec<(usize, ColumnChunk)>,
) -> Result<&'a mut ColumnChunk> {
    let at = match read.iter().position(|(j, _)| *j == k) {
        Some(at) => at,
        None => {
            read.push((k, table.read_column(ci, k)?));
            read.len() - 1
        }
    };
    Ok(&mut read[at].1)
}
