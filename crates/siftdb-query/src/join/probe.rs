//! The probe side of a hash join, one chunk at a time: its key column through the probe
//! filter and the hash table, and the matched rows' projected columns hashed into the checksum.
//! Two paths, which differ only in what they decode:
//!
//! * [`late`] (`ScanFilter`, `ChunkSkip`, `Adaptive`): the key column page by page (pages whose
//!   min/max excludes every build key skipped under `ChunkSkip` / `Adaptive`), the filter over a
//!   page of keys at a time, then the other columns only for the pages holding matched rows.
//! * [`full`] (`NoFilter`, `ProbeFilter`): every projected column materialised whole, then the
//!   filter and lookup row by row (the plain hash join).
//!
//! Both return the matched `(chunk row, build chain head)` pairs and each pair's row hash,
//! computed column by column.

use super::filter::ProbeFilter;
use super::output::{cell_hash, numeric_cell_hash, KeyHasher};
use super::outside;
use crate::chunk_reader::ColumnChunk;
use crate::column::{ColumnData, Value};
use crate::counters::JoinCounters;
use crate::meta::ChunkMeta;
use crate::schema::{ColumnType, Field};
use crate::table::Table;
use siftdb::filter::hash::mix64;
use siftdb::Result;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The build side's hash table: key -> first build row of its chain.
pub(super) type Heads = HashMap<u64, u32, BuildHasherDefault<KeyHasher>>;

/// Matched `(chunk row, chain head)` pairs and their row hashes.
type Matches = (Vec<(u32, u32)>, Vec<u64>);

/// What probing a chunk needs from the join.
pub(super) struct Side<'a, 'db> {
    pub table: &'a Table<'db>,
    /// The key column.
    pub key: usize,
    /// Projected columns.
    pub projection: &'a [usize],
    pub heads: &'a Heads,
    /// Smallest and largest build key (`None`: no build key).
    pub build_range: Option<(u64, u64)>,
    /// Skip key pages whose min/max excludes every build key.
    pub skip_pages: bool,
}

impl Side<'_, '_> {
    fn field(&self, k: usize) -> &Field {
        &self.table.schema().fields[k]
    }

    /// Column `k` of chunk `ci` with the pages holding `rows` decoded (all pages for `None`).
    fn read(
        &self,
        ci: usize,
        k: usize,
        rows: Option<&[u32]>,
        c: &mut JoinCounters,
    ) -> Result<ColumnChunk> {
        let mut chunk = self.table.read_column(ci, k)?;
        let (pages, n) = match rows {
            Some(rows) => chunk.load_rows(rows)?,
            None => chunk.load_all()?,
        };
        c.pages_decoded += pages as u64;
        c.rows_decoded[k] += n as u64;
        Ok(chunk)
    }

    /// Looks `k` up in the hash table, counting the probe (`filtered`: a filter passed it).
    #[inline]
    fn lookup(&self, k: u64, filtered: bool, c: &mut JoinCounters) -> Option<u32> {
        c.rows_probed += 1;
        let head = self.heads.get(&k).copied();
        match head {
            Some(_) if filtered => c.rows_checked_members += 1,
            None if filtered => c.false_positives += 1,
            _ => {}
        }
        c.rows_matched += u64::from(head.is_some());
        head
    }
}

fn start_hashes(meta: &ChunkMeta, matches: &[(u32, u32)]) -> Vec<u64> {
    matches.iter().map(|&(i, _)| mix64(meta.first_row + i as u64, 7)).collect()
}

/// The late path (module documentation).
pub(super) fn late(
    side: &Side<'_, '_>,
    ci: usize,
    meta: &ChunkMeta,
    pf: Option<&ProbeFilter>,
    c: &mut JoinCounters,
) -> Result<Matches> {
    let mut key_chunk = side.table.read_column(ci, side.key)?;
    let key_nullable = side.field(side.key).nullable;
    let mut matches: Vec<(u32, u32)> = Vec::new();
    let mut keys = Vec::with_capacity(side.table.page_rows() as usize);
    let (mut passing, mut all_rows) = (Vec::new(), Vec::new());
    for page in 0..key_chunk.page_count() {
        if side.skip_pages
            && key_chunk
                .stats(page)
                .is_some_and(|s| outside(s.minmax.as_ref().map(|(a, b)| (a, b)), side.build_range))
        {
            c.pages_skipped_minmax += 1;
            continue;
        }
        let n = key_chunk.load(page)?;
        c.pages_decoded += u64::from(n > 0);
        c.rows_decoded[side.key] += n as u64;
        keys.clear();
        key_chunk.page_bits_into(page, &mut keys);
        let first = key_chunk.page_rows(page).start;
        let null = |j: usize| key_nullable && !key_chunk.is_valid(first + j);
        // The filter runs over the whole page in one loop; the survivors go on to the hash
        // table.
        let candidates: &[u32] = match pf {
            Some(f) => {
                passing.clear();
                f.select(&keys, &mut passing);
                let nulls = (0..keys.len()).filter(|&j| null(j)).count();
                let null_passed = passing.iter().filter(|&&j| null(j as usize)).count();
                c.rows_checked += (keys.len() - nulls) as u64;
                c.rows_passed += (passing.len() - null_passed) as u64;
                &passing
            }
            None => {
                if all_rows.len() != keys.len() {
                    all_rows = (0..keys.len() as u32).collect();
                }
                &all_rows
            }
        };
        for &j in candidates {
            let j = j as usize;
            if null(j) {
                continue;
            }
            if let Some(head) = side.lookup(keys[j], pf.is_some(), c) {
                matches.push(((first + j) as u32, head));
            }
        }
    }
    let mut hashes = start_hashes(meta, &matches);
    if !matches.is_empty() {
        // Late materialisation: the other columns, only the pages of matched rows.
        let rows: Vec<u32> = matches.iter().map(|m| m.0).collect();
        let mut bits = Vec::with_capacity(rows.len());
        for (j, &k) in side.projection.iter().enumerate() {
            let loaded;
            let chunk = if k == side.key {
                &key_chunk
            } else {
                loaded = side.read(ci, k, Some(&rows), c)?;
                &loaded
            };
            add_cell_hashes(chunk, side.field(k), &rows, j, &mut hashes, &mut bits);
        }
    }
    Ok((matches, hashes))
}

/// The full path (module documentation).
pub(super) fn full(
    side: &Side<'_, '_>,
    ci: usize,
    meta: &ChunkMeta,
    pf: Option<&ProbeFilter>,
    c: &mut JoinCounters,
) -> Result<Matches> {
    let key_chunk = side.read(ci, side.key, None, c)?;
    let key_nullable = side.field(side.key).nullable;
    let mut keys = Vec::with_capacity(meta.rows as usize);
    for page in 0..key_chunk.page_count() {
        key_chunk.page_bits_into(page, &mut keys);
    }
    let mut cols = Vec::with_capacity(side.projection.len());
    for &k in side.projection {
        let nullable = side.field(k).nullable;
        if k == side.key {
            cols.push(key_chunk.to_column(nullable));
        } else {
            cols.push(side.read(ci, k, None, c)?.to_column(nullable));
        }
    }
    let mut matches: Vec<(u32, u32)> = Vec::new();
    for (i, &k) in keys.iter().enumerate() {
        if key_nullable && !key_chunk.is_valid(i) {
            continue;
        }
        if let Some(f) = pf {
            c.rows_checked += 1;
            if !f.contains(k) {
                continue;
            }
            c.rows_passed += 1;
        }
        if let Some(head) = side.lookup(k, pf.is_some(), c) {
            matches.push((i as u32, head));
        }
    }
    let mut hashes = start_hashes(meta, &matches);
    for (j, col) in cols.iter().enumerate() {
        for (h, &(i, _)) in hashes.iter_mut().zip(&matches) {
            let i = i as usize;
            let cell = match &col.data {
                _ if col.is_null(i) => None,
                ColumnData::U64(v) => Some(v[i]),
                ColumnData::I64(v) => Some(v[i] as u64),
                ColumnData::F64(v) => Some(v[i].to_bits()),
                ColumnData::Bytes(v) => {
                    *h = h.wrapping_add(cell_hash(&Value::Bytes(v[i].clone()), j));
                    continue;
                }
            };
            *h = h.wrapping_add(numeric_cell_hash(col.data.ty(), cell, j));
        }
    }
    Ok((matches, hashes))
}

/// Adds to `hashes[r]` the checksum hash of column `j` (field `field`, loaded at `rows`) at
/// row `rows[r]`; `bits` is scratch space.
fn add_cell_hashes(
    chunk: &ColumnChunk,
    field: &Field,
    rows: &[u32],
    j: usize,
    hashes: &mut [u64],
    bits: &mut Vec<u64>,
) {
    if field.ty == ColumnType::Bytes {
        for (h, &i) in hashes.iter_mut().zip(rows) {
            *h = h.wrapping_add(cell_hash(&chunk.value(i as usize), j));
        }
        return;
    }
    bits.clear();
    chunk.gather_bits(rows, bits);
    for ((h, &i), &b) in hashes.iter_mut().zip(rows).zip(bits.iter()) {
        let cell = (!field.nullable || chunk.is_valid(i as usize)).then_some(b);
        *h = h.wrapping_add(numeric_cell_hash(field.ty, cell, j));
    }
}
