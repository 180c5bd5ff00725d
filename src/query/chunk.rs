//! Column chunks: encoding, bounds-checked decoding, and the per-chunk statistics (row count,
//! null count, distinct count, min, max and a split-block Bloom filter over the distinct values).
//!
//! Byte layouts: design.md, "Query layer storage". A column chunk value is checksummed
//! (CRC32) before its zstd frame is touched, and its decompressed length is fixed by the header
//! and checked against the type, so a damaged value is a typed [`Error::Corruption`].

use crate::error::{Error, Result};
use crate::filter::{BloomShape, Filter, InsertFilter, SplitBlockBloom};
use crate::query::codec::{push_crc, split_crc, Reader};
use crate::query::column::{Column, ColumnData, Value};
use crate::query::meta::ColumnMeta;
use crate::query::schema::{ColumnType, Field};

/// Target false-positive rate of the chunk filters (before the power-of-two rounding of the
/// Parquet sizing, which can only lower it).
pub const CHUNK_FILTER_FPR: f64 = 0.01;
/// zstd level of column chunks: the fastest, since scans decompress far more than loads compress.
const ZSTD_LEVEL: i32 = 1;
/// Upper bound on a column chunk's decompressed size; larger headers are corrupt.
const MAX_RAW_BYTES: u64 = 1 << 30;

/// One encoded column chunk, ready to store.
pub(crate) struct EncodedColumn {
    pub value: Vec<u8>,
    pub meta: ColumnMeta,
    pub filter: Option<Vec<u8>>,
}

fn numeric_bits(data: &ColumnData, i: usize) -> u64 {
    match data {
        ColumnData::U64(v) => v[i],
        ColumnData::I64(v) => v[i] as u64,
        ColumnData::F64(v) => v[i].to_bits(),
        ColumnData::Bytes(_) => unreachable!("numeric_bits on bytes"),
    }
}

pub(crate) fn value_of_bits(ty: ColumnType, bits: u64) -> Value {
    match ty {
        ColumnType::U64 => Value::U64(bits),
        ColumnType::I64 => Value::I64(bits as i64),
        ColumnType::F64 => Value::F64(f64::from_bits(bits)),
        ColumnType::Bytes => unreachable!("value_of_bits on bytes"),
    }
}

/// Encodes rows `start..end` of `col` (of field `field`): the stored value, its statistics and
/// its chunk filter.
pub(crate) fn encode_column(
    field: &Field,
    col: &Column,
    start: usize,
    end: usize,
) -> Result<EncodedColumn> {
    let rows = end - start;
    let valid = |i: usize| col.validity.as_ref().is_none_or(|v| v[i]);
    let mut raw = Vec::new();
    if field.nullable {
        let mut bitmap = vec![0u8; rows.div_ceil(8)];
        for i in 0..rows {
            if valid(start + i) {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        raw.extend_from_slice(&bitmap);
    }
    let null_count = (start..end).filter(|&i| !valid(i)).count() as u32;
    let (distinct, min, max, hashes): (usize, Option<Value>, Option<Value>, Vec<u64>) = match &col
        .data
    {
        ColumnData::Bytes(v) => {
            raw.reserve(rows * 4);
            for s in &v[start..end] {
                raw.extend_from_slice(&(s.len() as u32).to_le_bytes());
            }
            for s in &v[start..end] {
                raw.extend_from_slice(s);
            }
            let mut d: Vec<&[u8]> =
                (start..end).filter(|&i| valid(i)).map(|i| v[i].as_slice()).collect();
            d.sort_unstable();
            d.dedup();
            let hashes = d.iter().map(|s| SplitBlockBloom::hash_bytes(s)).collect();
            let min = d.first().map(|s| Value::Bytes(s.to_vec()));
            let max = d.last().map(|s| Value::Bytes(s.to_vec()));
            (d.len(), min, max, hashes)
        }
        data => {
            raw.reserve(rows * 8);
            for i in start..end {
                raw.extend_from_slice(&numeric_bits(data, i).to_le_bytes());
            }
            let mut d: Vec<u64> =
                (start..end).filter(|&i| valid(i)).map(|i| numeric_bits(data, i)).collect();
            // Sort in the type's own order so first/last are min/max; equal bits are equal
            // values in every type (f64 compares by total_cmp).
            match field.ty {
                ColumnType::U64 => d.sort_unstable(),
                ColumnType::I64 => d.sort_unstable_by_key(|&b| b as i64),
                _ => d.sort_unstable_by(|a, b| f64::from_bits(*a).total_cmp(&f64::from_bits(*b))),
            }
            d.dedup();
            let hashes = d
                .iter()
                .map(|&b| match field.ty {
                    ColumnType::U64 => SplitBlockBloom::hash_u64(b),
                    ColumnType::I64 => SplitBlockBloom::hash_i64(b as i64),
                    _ => SplitBlockBloom::hash_f64(f64::from_bits(b)),
                })
                .collect();
            let min = d.first().map(|&b| value_of_bits(field.ty, b));
            let max = d.last().map(|&b| value_of_bits(field.ty, b));
            (d.len(), min, max, hashes)
        }
    };
    let filter = if hashes.is_empty() {
        None
    } else {
        let mut f =
            SplitBlockBloom::with_false_pos(CHUNK_FILTER_FPR).expected_items(distinct as u64)?;
        for h in &hashes {
            f.insert_hash(*h);
        }
        Some(f.to_bytes())
    };
    let compressed = zstd::bulk::compress(&raw, ZSTD_LEVEL)
        .map_err(|e| Error::io("compressing a column chunk", e))?;
    let mut value = Vec::with_capacity(compressed.len() + 14);
    value.push(field.ty.tag());
    value.push(field.nullable as u8);
    value.extend_from_slice(&(rows as u32).to_le_bytes());
    value.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    value.extend_from_slice(&compressed);
    push_crc(&mut value);
    let meta = ColumnMeta {
        null_count,
        distinct: distinct as u32,
        min,
        max,
        has_filter: filter.is_some(),
        stored_bytes: value.len() as u32,
    };
    Ok(EncodedColumn { value, meta, filter })
}

thread_local! {
    /// One zstd decompression context per thread, made on first use: scans decompress one
    /// frame per column chunk, and a fresh context per frame costs an allocation and its reset.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// A decompressed column chunk whose lengths have been checked: every accessor below stays in
/// bounds for `i < rows`.
pub(crate) struct RawChunk {
    ty: ColumnType,
    rows: usize,
    /// Validity bitmap (bit set = value present), when the column is nullable.
    bitmap: Option<Vec<u8>>,
    raw: Vec<u8>,
    /// Byte offset of the values in `raw`.
    values_at: usize,
    /// Bytes columns: start of value `i` in `raw` is `offsets[i]`, end `offsets[i + 1]`.
    offsets: Vec<usize>,
}

impl RawChunk {
    /// Checks and decompresses a stored column chunk of field `field` expected to hold `rows`.
    pub(crate) fn decode(value: &[u8], field: &Field, rows: u32) -> Result<RawChunk> {
        let body = split_crc(value, "column chunk")?;
        let mut r = Reader::new(body, "column chunk");
        let tag = r.u8("type tag")?;
        if tag != field.ty.tag() {
            return Err(
                r.err("type tag", &format!("{tag} but the schema says {}", field.ty.name()))
            );
        }
        let nullable = r.u8("nullable")?;
        if nullable != field.nullable as u8 {
            return Err(r.err("nullable", "differs from the schema"));
        }
        let stored_rows = r.u32("row count")?;
        if stored_rows != rows {
            return Err(r.err("row count", &format!("{stored_rows}, metadata says {rows}")));
        }
        let rows = rows as usize;
        let raw_len = r.u32("raw length")? as u64;
        let bitmap_len = if field.nullable { rows.div_ceil(8) } else { 0 };
        let fixed = match field.ty {
            ColumnType::Bytes => bitmap_len as u64 + rows as u64 * 4,
            _ => bitmap_len as u64 + rows as u64 * 8,
        };
        let ok = match field.ty {
            ColumnType::Bytes => raw_len >= fixed && raw_len <= MAX_RAW_BYTES,
            _ => raw_len == fixed,
        };
        if !ok {
            return Err(r.err("raw length", &format!("{raw_len} does not fit {rows} rows")));
        }
        let frame = r.rest();
        let raw = DECOMPRESSOR
            .with(|d| {
                let mut d = d.borrow_mut();
                let d = match &mut *d {
                    Some(d) => d,
                    none => none.insert(zstd::bulk::Decompressor::new()?),
                };
                d.decompress(frame, raw_len as usize)
            })
            .map_err(|e| Error::corruption(format!("column chunk: zstd: {e}"), Some(14)))?;
        if raw.len() as u64 != raw_len {
            return Err(Error::corruption("column chunk: decompressed length differs", Some(14)));
        }
        let bitmap = field.nullable.then(|| raw[..bitmap_len].to_vec());
        let mut offsets = Vec::new();
        let mut values_at = bitmap_len;
        if field.ty == ColumnType::Bytes {
            offsets.reserve(rows + 1);
            let lens = &raw[bitmap_len..bitmap_len + rows * 4];
            let mut at = bitmap_len + rows * 4;
            offsets.push(at);
            for c in lens.chunks_exact(4) {
                at += u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize;
                if at > raw.len() {
                    return Err(Error::corruption("column chunk: value lengths overrun", None));
                }
                offsets.push(at);
            }
            if at != raw.len() {
                return Err(Error::corruption("column chunk: trailing value bytes", None));
            }
            values_at = bitmap_len + rows * 4;
        }
        Ok(RawChunk { ty: field.ty, rows, bitmap, raw, values_at, offsets })
    }

    /// Whether row `i` holds a value.
    #[inline]
    pub(crate) fn is_valid(&self, i: usize) -> bool {
        self.bitmap.as_ref().is_none_or(|b| b[i / 8] >> (i % 8) & 1 == 1)
    }

    /// The 8 stored bytes of numeric row `i` as a `u64` (two's complement / IEEE bits).
    #[inline]
    pub(crate) fn bits(&self, i: usize) -> u64 {
        let at = self.values_at + i * 8;
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.raw[at..at + 8]);
        u64::from_le_bytes(a)
    }

    /// The bytes of row `i` of a bytes chunk.
    #[inline]
    pub(crate) fn bytes_at(&self, i: usize) -> &[u8] {
        &self.raw[self.offsets[i]..self.offsets[i + 1]]
    }

    /// All rows of a numeric chunk as `u64` bits.
    pub(crate) fn all_bits(&self) -> Vec<u64> {
        self.raw[self.values_at..self.values_at + self.rows * 8]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect()
    }

    /// Row `i` (`Value::Null` for a null).
    pub(crate) fn value(&self, i: usize) -> Value {
        if !self.is_valid(i) {
            return Value::Null;
        }
        match self.ty {
            ColumnType::Bytes => {
                Value::Bytes(self.raw[self.offsets[i]..self.offsets[i + 1]].to_vec())
            }
            ty => value_of_bits(ty, self.bits(i)),
        }
    }

    /// Appends rows `sel` to `out` (a column of this chunk's type).
    pub(crate) fn gather_into(&self, sel: &[u32], out: &mut Column) -> Result<()> {
        for &i in sel {
            out.push(&self.value(i as usize))?;
        }
        Ok(())
    }

    /// The whole chunk as a column.
    pub(crate) fn to_column(&self, nullable: bool) -> Column {
        let data = match self.ty {
            ColumnType::U64 => ColumnData::U64(self.all_bits()),
            ColumnType::I64 => {
                ColumnData::I64(self.all_bits().into_iter().map(|b| b as i64).collect())
            }
            ColumnType::F64 => {
                ColumnData::F64(self.all_bits().into_iter().map(f64::from_bits).collect())
            }
            ColumnType::Bytes => ColumnData::Bytes(
                (0..self.rows)
                    .map(|i| self.raw[self.offsets[i]..self.offsets[i + 1]].to_vec())
                    .collect(),
            ),
        };
        let validity = nullable.then(|| (0..self.rows).map(|i| self.is_valid(i)).collect());
        Column { data, validity }
    }
}
