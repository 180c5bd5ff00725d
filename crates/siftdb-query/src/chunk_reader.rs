//! Column chunks, read: the page index is parsed when the value is read, and each page is
//! checked and decoded only when a row of it is first needed, so a scan decodes only the pages
//! that hold rows it uses and skips pages whose min/max exclude its predicate.
//!
//! Both stored versions read (docs/format.md#query-storage): a version-1 value (one zstd
//! frame for the whole chunk, written before pages existed) is one page without statistics,
//! decoded when it is read.

use crate::chunk::{value_of_bits, CHUNK_V2};
use crate::column::{Column, ColumnData, Value};
use crate::crc::split_crc;
use crate::meta::get_stat;
use crate::page::{decompress, Page};
use crate::schema::{ColumnType, Field};
use siftdb::coding::Cursor;
use siftdb::{Error, Result};
use std::ops::Range;

/// What the page index says of one page.
pub(crate) struct PageStats {
    /// Smallest and largest non-null value (`None` when every row is null).
    pub minmax: Option<(Value, Value)>,
}

/// Where one page is and what it holds.
struct PageEntry {
    /// Byte range of the stored page in the chunk value.
    bytes: Range<usize>,
    /// `None` for a version-1 chunk (no page statistics).
    stats: Option<PageStats>,
}

/// A stored column chunk whose page index has been checked; pages decode on demand. Row
/// accessors take chunk row numbers and require the row's page to be loaded (`load*`).
pub(crate) struct ColumnChunk {
    ty: ColumnType,
    nullable: bool,
    rows: usize,
    page_rows: usize,
    value: Vec<u8>,
    pages: Vec<PageEntry>,
    decoded: Vec<Option<Page>>,
}

impl ColumnChunk {
    /// Checks the header and page index of a stored column chunk of field `field` expected to
    /// hold `rows` rows (a version-1 value is checked and decoded whole).
    pub(crate) fn parse(value: Vec<u8>, field: &Field, rows: u32) -> Result<ColumnChunk> {
        if value.first() != Some(&CHUNK_V2) {
            return ColumnChunk::parse_v1(value, field, rows);
        }
        let mut r = Cursor::named(&value, "column chunk");
        r.u8("version")?;
        check_type(&mut r, field, rows)?;
        let page_rows = r.u32("page rows")? as usize;
        let npages = r.u32("page count")? as usize;
        if page_rows == 0 || npages != (rows as usize).div_ceil(page_rows) {
            return Err(r.error(
                "page count",
                &format!("{npages} pages of {page_rows} rows for {rows} rows"),
            ));
        }
        let mut entries = Vec::with_capacity(npages.min(r.remaining() / 9));
        for p in 0..npages {
            let page_len = (rows as usize - p * page_rows).min(page_rows) as u32;
            let len = r.u32("page length")? as usize;
            let null_count = r.u32("page null count")?;
            let flags = r.u8("page flags")?;
            if null_count > page_len || flags > 1 || (flags == 1) != (null_count < page_len) {
                return Err(r.error("page statistics", "out of range"));
            }
            let minmax = if flags == 1 {
                Some((
                    get_stat(&mut r, field.ty, "page min")?,
                    get_stat(&mut r, field.ty, "page max")?,
                ))
            } else {
                None
            };
            entries.push((len, PageStats { minmax }));
        }
        // The page index ends in its CRC.
        let header_end = value.len() - r.remaining() + 4;
        if header_end > value.len() {
            return Err(Error::corruption(
                "column chunk: page index: shorter than its checksum",
                None,
            ));
        }
        split_crc(&value[..header_end], "column chunk page index")?;
        let mut at = header_end;
        let mut pages = Vec::with_capacity(entries.len());
        for (len, stats) in entries {
            if len > value.len() - at {
                return Err(Error::corruption(
                    "column chunk: a page runs past the value",
                    Some(at as u64),
                ));
            }
            pages.push(PageEntry { bytes: at..at + len, stats: Some(stats) });
            at += len;
        }
        if at != value.len() {
            return Err(Error::corruption(
                "column chunk: bytes after the last page",
                Some(at as u64),
            ));
        }
        let decoded = pages.iter().map(|_| None).collect();
        Ok(ColumnChunk {
            ty: field.ty,
            nullable: field.nullable,
            rows: rows as usize,
            page_rows,
            value,
            pages,
            decoded,
        })
    }

    /// A version-1 value: `type nullable rows raw_len zstd_frame crc`, one page.
    fn parse_v1(value: Vec<u8>, field: &Field, rows: u32) -> Result<ColumnChunk> {
        let body = split_crc(&value, "column chunk")?;
        let mut r = Cursor::named(body, "column chunk");
        check_type(&mut r, field, rows)?;
        let raw_len = r.u32("raw length")? as u64;
        Page::check_raw_len(raw_len, field.ty, field.nullable, rows as usize)?;
        let raw = decompress(r.rest(), raw_len as usize, "column chunk")?;
        let page = Page::plain(raw, field.ty, field.nullable, rows as usize)?;
        let entry = PageEntry { bytes: 0..value.len(), stats: None };
        Ok(ColumnChunk {
            ty: field.ty,
            nullable: field.nullable,
            rows: rows as usize,
            page_rows: rows as usize,
            value,
            pages: vec![entry],
            decoded: vec![Some(page)],
        })
    }

    /// Number of pages.
    pub(crate) fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// The chunk rows of page `p`.
    pub(crate) fn page_rows(&self, p: usize) -> Range<usize> {
        p * self.page_rows..((p + 1) * self.page_rows).min(self.rows)
    }

    /// The page index's statistics of page `p` (`None` for a version-1 chunk).
    pub(crate) fn stats(&self, p: usize) -> Option<&PageStats> {
        self.pages[p].stats.as_ref()
    }

    /// Checks and decodes page `p` unless it already is; returns the rows newly decoded.
    pub(crate) fn load(&mut self, p: usize) -> Result<usize> {
        if self.decoded[p].is_some() {
            return Ok(0);
        }
        let rows = self.page_rows(p);
        let bytes = self.pages[p].bytes.clone();
        let page = Page::decode(
            &self.value[bytes.clone()],
            bytes.start,
            self.ty,
            self.nullable,
            rows.len(),
        )?;
        self.decoded[p] = Some(page);
        Ok(rows.len())
    }

    /// Loads every page holding a row of `sel` (ascending); returns (pages, rows) newly decoded.
    pub(crate) fn load_rows(&mut self, sel: &[u32]) -> Result<(usize, usize)> {
        let (mut pages, mut rows) = (0, 0);
        let mut rest = sel;
        while let Some(&first) = rest.first() {
            let p = self.page_index(first as usize);
            let end = self.page_rows(p).end;
            rest = &rest[rest.partition_point(|&i| (i as usize) < end)..];
            let n = self.load(p)?;
            pages += usize::from(n > 0);
            rows += n;
        }
        Ok((pages, rows))
    }

    /// The page holding row `i`: a shift when pages hold a power of two rows (the default), a
    /// division otherwise.
    #[inline]
    fn page_index(&self, i: usize) -> usize {
        if self.page_rows.is_power_of_two() {
            i >> self.page_rows.trailing_zeros()
        } else {
            i / self.page_rows
        }
    }

    /// Loads every page; returns (pages, rows) newly decoded.
    pub(crate) fn load_all(&mut self) -> Result<(usize, usize)> {
        let (mut pages, mut rows) = (0, 0);
        for p in 0..self.pages.len() {
            let n = self.load(p)?;
            pages += usize::from(n > 0);
            rows += n;
        }
        Ok((pages, rows))
    }

    #[inline]
    fn page_of(&self, i: usize) -> (&Page, usize) {
        let p = self.page_index(i);
        (self.decoded[p].as_ref().expect("page loaded before it is read"), i - p * self.page_rows)
    }

    /// Whether row `i` holds a value.
    #[inline]
    pub(crate) fn is_valid(&self, i: usize) -> bool {
        let (page, j) = self.page_of(i);
        page.is_valid(j)
    }

    /// The stored bits of numeric row `i` (two's complement / IEEE bits; 0 for a null).
    #[inline]
    pub(crate) fn bits(&self, i: usize) -> u64 {
        let (page, j) = self.page_of(i);
        page.bits(&self.value, j)
    }

    /// The bytes of row `i` of a bytes chunk.
    #[inline]
    pub(crate) fn bytes_at(&self, i: usize) -> &[u8] {
        let (page, j) = self.page_of(i);
        page.bytes_at(j)
    }

    /// The stored bits of every row of page `p` (loaded), appended to `out`.
    pub(crate) fn page_bits_into(&self, p: usize, out: &mut Vec<u64>) {
        let page = self.decoded[p].as_ref().expect("page loaded before it is read");
        page.unpack_into(&self.value, self.page_rows(p).len(), out);
    }

    /// Appends the stored bits of numeric rows `rows` (ascending, their pages loaded; 0 for a
    /// null) to `out`. A page all of whose rows are wanted is unpacked straight into `out`, a
    /// page holding many of them is unpacked whole and indexed, the others read in place row by
    /// row.
    pub(crate) fn gather_bits(&self, rows: &[u32], out: &mut Vec<u64>) {
        let mut rest = rows;
        let mut page_bits = Vec::new();
        while let Some(&first) = rest.first() {
            let p = self.page_index(first as usize);
            let range = self.page_rows(p);
            let (here, after) = rest.split_at(rest.partition_point(|&i| (i as usize) < range.end));
            rest = after;
            let page = self.decoded[p].as_ref().expect("page loaded before it is read");
            if here.len() == range.len() {
                page.unpack_into(&self.value, range.len(), out); // every row: no index pass
            } else if here.len() * 4 >= range.len() {
                page_bits.clear();
                page.unpack_into(&self.value, range.len(), &mut page_bits);
                out.extend(here.iter().map(|&i| page_bits[i as usize - range.start]));
            } else {
                out.extend(here.iter().map(|&i| page.bits(&self.value, i as usize - range.start)));
            }
        }
    }

    /// Row `i` (`Value::Null` for a null).
    pub(crate) fn value(&self, i: usize) -> Value {
        if !self.is_valid(i) {
            return Value::Null;
        }
        match self.ty {
            ColumnType::Bytes => Value::Bytes(self.bytes_at(i).to_vec()),
            ty => value_of_bits(ty, self.bits(i)),
        }
    }

    /// Appends rows `sel` (ascending, their pages loaded) to `out`, a column of this chunk's
    /// type: numeric rows through [`ColumnChunk::gather_bits`], without a `Value` per cell.
    pub(crate) fn gather_into(&self, sel: &[u32], out: &mut Column) -> Result<()> {
        if self.ty == ColumnType::Bytes {
            for &i in sel {
                out.push(&self.value(i as usize))?;
            }
            return Ok(());
        }
        let mut bits = Vec::with_capacity(sel.len());
        self.gather_bits(sel, &mut bits);
        match &mut out.data {
            ColumnData::U64(v) => v.extend(bits),
            ColumnData::I64(v) => v.extend(bits.into_iter().map(|b| b as i64)),
            ColumnData::F64(v) => v.extend(bits.into_iter().map(f64::from_bits)),
            ColumnData::Bytes(_) => {
                return Err(Error::invalid("gathering a numeric column into a bytes column"))
            }
        }
        if let Some(valid) = &mut out.validity {
            valid.extend(sel.iter().map(|&i| self.is_valid(i as usize)));
        }
        Ok(())
    }

    /// The whole chunk (every page loaded) as a column.
    pub(crate) fn to_column(&self, nullable: bool) -> Column {
        let bits = || {
            let mut out = Vec::with_capacity(self.rows);
            for p in 0..self.pages.len() {
                self.page_bits_into(p, &mut out);
            }
            out
        };
        let data = match self.ty {
            ColumnType::U64 => ColumnData::U64(bits()),
            ColumnType::I64 => ColumnData::I64(bits().into_iter().map(|b| b as i64).collect()),
            ColumnType::F64 => ColumnData::F64(bits().into_iter().map(f64::from_bits).collect()),
            ColumnType::Bytes => {
                ColumnData::Bytes((0..self.rows).map(|i| self.bytes_at(i).to_vec()).collect())
            }
        };
        let validity = nullable.then(|| (0..self.rows).map(|i| self.is_valid(i)).collect());
        Column { data, validity }
    }
}

/// Decodes a stored column chunk value of `field` holding `rows` rows (either version), every
/// page checked: for tools and fuzzers (`siftdb_query::inspect`). Also returns rows `sel`
/// (ascending, each `< rows`) read through the gather path scans use, which must agree.
pub fn decode_column_chunk(
    value: Vec<u8>,
    field: &Field,
    rows: u32,
    sel: &[u32],
) -> Result<(Column, Column)> {
    let mut chunk = ColumnChunk::parse(value, field, rows)?;
    chunk.load_all()?;
    let mut gathered = Column::empty(field.ty, field.nullable);
    chunk.gather_into(sel, &mut gathered)?;
    Ok((chunk.to_column(field.nullable), gathered))
}

/// Reads and checks the `type nullable rows` fields both versions start with.
fn check_type(r: &mut Cursor<'_>, field: &Field, rows: u32) -> Result<()> {
    let tag = r.u8("type tag")?;
    if tag != field.ty.tag() {
        return Err(r.error("type tag", &format!("{tag} but the schema says {}", field.ty.name())));
    }
    if r.u8("nullable")? != field.nullable as u8 {
        return Err(r.error("nullable", "differs from the schema"));
    }
    let stored_rows = r.u32("row count")?;
    if stored_rows != rows {
        return Err(r.error("row count", &format!("{stored_rows}, metadata says {rows}")));
    }
    Ok(())
}
