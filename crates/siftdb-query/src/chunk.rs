//! Column chunks, written: the per-chunk statistics (row count, null count, distinct count, min,
//! max and a split-block Bloom filter over the distinct values) and the version-2 value, a page
//! index followed by pages encoded one by one (`page.rs`). Reading is `chunk_reader.rs`.
//!
//! Byte layouts: docs/format.md#query-storage.

use crate::column::{Column, ColumnData, Value};
use crate::crc::push_crc;
use crate::meta::{put_stat, ColumnMeta};
use crate::page;
use crate::schema::{ColumnType, Field};
use siftdb::filter::{BloomShape, Filter, InsertFilter, SplitBlockBloom};
use siftdb::Result;
use std::cmp::Ordering;

/// Target false-positive rate of the chunk filters (before the power-of-two rounding of the
/// Parquet sizing, which can only lower it).
pub const CHUNK_FILTER_FPR: f64 = 0.01;
/// First byte of a version-2 column chunk value. Version-1 values start with their type tag
/// (1..=4), so the two never collide.
pub(crate) const CHUNK_V2: u8 = 0xC2;

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

/// Total order of two stored numeric bit patterns of type `ty` (`f64::total_cmp` for doubles).
#[inline]
pub(crate) fn cmp_bits(ty: ColumnType, a: u64, b: u64) -> Ordering {
    match ty {
        ColumnType::U64 => a.cmp(&b),
        ColumnType::I64 => (a as i64).cmp(&(b as i64)),
        _ => f64::from_bits(a).total_cmp(&f64::from_bits(b)),
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

/// Encodes rows `start..end` of `col` (of field `field`) in pages of `page_rows`: the stored
/// value, its statistics and its chunk filter.
pub(crate) fn encode_column(
    field: &Field,
    col: &Column,
    start: usize,
    end: usize,
    page_rows: usize,
) -> Result<EncodedColumn> {
    let valid = |i: usize| col.validity.as_ref().is_none_or(|v| v[i]);
    let null_count = (start..end).filter(|&i| !valid(i)).count() as u32;
    let (distinct, min, max, hashes): (usize, Option<Value>, Option<Value>, Vec<u64>) =
        match &col.data {
            ColumnData::Bytes(v) => {
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
                let mut d: Vec<u64> =
                    (start..end).filter(|&i| valid(i)).map(|i| numeric_bits(data, i)).collect();
                // Sort in the type's own order so first/last are min/max; equal bits are equal
                // values in every type (f64 compares by total_cmp).
                d.sort_unstable_by(|&a, &b| cmp_bits(field.ty, a, b));
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
    let value = encode_pages(field, col, start, end, page_rows)?;
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

/// The version-2 column chunk value of rows `start..end`: header, page index (per page: stored
/// length, null count, min, max) and its CRC, then the pages.
fn encode_pages(
    field: &Field,
    col: &Column,
    start: usize,
    end: usize,
    page_rows: usize,
) -> Result<Vec<u8>> {
    let valid = |i: usize| col.validity.as_ref().is_none_or(|v| v[i]);
    let npages = (end - start).div_ceil(page_rows);
    let mut header = Vec::with_capacity(16 + npages * 32);
    header.push(CHUNK_V2);
    header.push(field.ty.tag());
    header.push(field.nullable as u8);
    header.extend_from_slice(&((end - start) as u32).to_le_bytes());
    header.extend_from_slice(&(page_rows as u32).to_le_bytes());
    header.extend_from_slice(&(npages as u32).to_le_bytes());
    let mut pages = Vec::new();
    for ps in (start..end).step_by(page_rows) {
        let pe = (ps + page_rows).min(end);
        let bitmap = page::validity(&valid, field.nullable, ps, pe);
        let present = (ps..pe).filter(|&i| valid(i));
        let (encoded, minmax) = match &col.data {
            ColumnData::Bytes(v) => {
                let values: Vec<&[u8]> =
                    (ps..pe).map(|i| if valid(i) { v[i].as_slice() } else { &[] }).collect();
                let min = present.clone().map(|i| v[i].as_slice()).min();
                let max = present.map(|i| v[i].as_slice()).max();
                let minmax =
                    min.zip(max).map(|(a, b)| (Value::Bytes(a.to_vec()), Value::Bytes(b.to_vec())));
                (page::encode_bytes(&values, bitmap)?, minmax)
            }
            data => {
                let bits: Vec<u64> =
                    (ps..pe).map(|i| if valid(i) { numeric_bits(data, i) } else { 0 }).collect();
                let cmp = |a: &u64, b: &u64| cmp_bits(field.ty, *a, *b);
                let min = present.clone().map(|i| numeric_bits(data, i)).min_by(cmp);
                let max = present.map(|i| numeric_bits(data, i)).max_by(cmp);
                let minmax = min
                    .zip(max)
                    .map(|(a, b)| (value_of_bits(field.ty, a), value_of_bits(field.ty, b)));
                (page::encode_numeric(field.ty, &bits, bitmap)?, minmax)
            }
        };
        header.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
        let nulls = (ps..pe).filter(|&i| !valid(i)).count() as u32;
        header.extend_from_slice(&nulls.to_le_bytes());
        header.push(minmax.is_some() as u8);
        if let Some((min, max)) = &minmax {
            put_stat(&mut header, min);
            put_stat(&mut header, max);
        }
        pages.extend_from_slice(&encoded);
    }
    push_crc(&mut header);
    header.extend_from_slice(&pages);
    Ok(header)
}
