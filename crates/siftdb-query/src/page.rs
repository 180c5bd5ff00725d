//! Pages: the unit a column chunk is encoded and decoded in (Parquet's data pages).
//!
//! A page holds a few thousand consecutive rows of one column, encoded on its own, in one of
//! two encodings (docs/format.md#query-chunk-v2):
//!
//! * `packed` (numeric columns): frame of reference plus bit packing. Every value is stored as
//!   `key - reference` in `width` bits, where `key` is the stored bits made order-preserving for
//!   `i64` (sign bit flipped). Any row is read in place with one unaligned 8-byte load, so late
//!   materialisation gathers a few rows of a page without decoding the rest, and a whole page
//!   unpacks at about a nanosecond a value.
//! * `zstd`: the version-1 raw layout (validity bitmap, then values) as one zstd frame. Bytes
//!   columns always use it; a numeric page uses it only when the frame is less than two thirds of
//!   the packed size (long runs, as in a sorted column), since zstd must decompress the whole page
//!   to read one row.
//!
//! Every page ends in the CRC32 of its bytes, checked when the page is first decoded.

use crate::crc::{push_crc, split_crc};
use crate::schema::ColumnType;
use siftdb::coding::Cursor;
use siftdb::{Error, Result};

/// Page encoding tags.
const ENCODING_ZSTD: u8 = 0;
const ENCODING_PACKED: u8 = 1;
/// zstd level of zstd pages: the fastest, since scans decompress far more than loads compress.
const ZSTD_LEVEL: i32 = 1;
/// Upper bound on a zstd page's decompressed size; larger headers are corrupt.
const MAX_RAW_BYTES: u64 = 1 << 30;
/// Packed widths are 0..=56 (read with one 8-byte load at any bit offset) or 64 (plain words).
const MAX_SHIFTED_WIDTH: u32 = 56;
/// Zero bytes after a bit-packed area of width 1..=56, so the 8-byte load of its last value
/// stays inside the page.
const PACK_PAD: usize = 8;

/// The bits a packed page stores for a value: order-preserving for `i64`, so a column of small
/// signed numbers packs narrowly. An involution.
#[inline]
fn for_key(ty: ColumnType, bits: u64) -> u64 {
    if ty == ColumnType::I64 {
        bits ^ (1 << 63)
    } else {
        bits
    }
}

/// The validity bitmap of rows `start..end` of a column (bit set = present), `None` for a
/// non-nullable column.
pub(crate) fn validity(
    valid: &dyn Fn(usize) -> bool,
    nullable: bool,
    start: usize,
    end: usize,
) -> Option<Vec<u8>> {
    nullable.then(|| {
        let mut bitmap = vec![0u8; (end - start).div_ceil(8)];
        for i in 0..end - start {
            if valid(start + i) {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        bitmap
    })
}

fn zstd_page(raw: &[u8]) -> Result<Vec<u8>> {
    let frame = zstd::bulk::compress(raw, ZSTD_LEVEL)
        .map_err(|e| Error::io("compressing a column page", e))?;
    let mut page = Vec::with_capacity(frame.len() + 9);
    page.push(ENCODING_ZSTD);
    page.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    page.extend_from_slice(&frame);
    push_crc(&mut page);
    Ok(page)
}

/// Encodes the numeric rows `bits` (stored bits; a null row's slot holds 0 and is ignored) as a
/// page, choosing the encoding as the module documentation says.
pub(crate) fn encode_numeric(
    ty: ColumnType,
    bits: &[u64],
    bitmap: Option<Vec<u8>>,
) -> Result<Vec<u8>> {
    let valid = |i: usize| bitmap.as_ref().is_none_or(|b| b[i / 8] >> (i % 8) & 1 == 1);
    let keys = (0..bits.len()).filter(|&i| valid(i)).map(|i| for_key(ty, bits[i]));
    let (lo, hi) = keys.fold((u64::MAX, 0), |(lo, hi), k| (lo.min(k), hi.max(k)));
    let (reference, span) = if lo > hi { (0, 0) } else { (lo, hi - lo) };
    let width = match 64 - span.leading_zeros() {
        w if w <= MAX_SHIFTED_WIDTH => w,
        _ => 64,
    };
    let mut packed = Vec::new();
    packed.push(ENCODING_PACKED);
    if let Some(b) = &bitmap {
        packed.extend_from_slice(b);
    }
    packed.extend_from_slice(&reference.to_le_bytes());
    packed.push(width as u8);
    let at = packed.len();
    packed.resize(at + packed_len(bits.len(), width), 0);
    let area = &mut packed[at..];
    for (i, &b) in bits.iter().enumerate() {
        let delta = if valid(i) { for_key(ty, b) - reference } else { 0 };
        write_packed(area, i, width, delta);
    }
    push_crc(&mut packed);

    let mut raw = Vec::with_capacity(bitmap.as_ref().map_or(0, Vec::len) + bits.len() * 8);
    if let Some(b) = &bitmap {
        raw.extend_from_slice(b);
    }
    for &b in bits {
        raw.extend_from_slice(&b.to_le_bytes());
    }
    let zstd = zstd_page(&raw)?;
    Ok(if zstd.len() * 3 < packed.len() * 2 { zstd } else { packed })
}

/// Encodes bytes rows as a zstd page: the validity bitmap, every length, then every value.
pub(crate) fn encode_bytes(values: &[&[u8]], bitmap: Option<Vec<u8>>) -> Result<Vec<u8>> {
    let mut raw = bitmap.unwrap_or_default();
    for v in values {
        raw.extend_from_slice(&(v.len() as u32).to_le_bytes());
    }
    for v in values {
        raw.extend_from_slice(v);
    }
    zstd_page(&raw)
}

/// Bytes of a packed area of `rows` values of `width` bits.
fn packed_len(rows: usize, width: u32) -> usize {
    match width {
        0 => 0,
        64 => rows * 8,
        w => (rows * w as usize).div_ceil(8) + PACK_PAD,
    }
}

fn write_packed(area: &mut [u8], i: usize, width: u32, delta: u64) {
    match width {
        0 => {}
        64 => area[i * 8..i * 8 + 8].copy_from_slice(&delta.to_le_bytes()),
        w => {
            let bit = i * w as usize;
            let at = bit / 8;
            let mut word = u64::from_le_bytes(area[at..at + 8].try_into().expect("8 bytes"));
            word |= delta << (bit % 8);
            area[at..at + 8].copy_from_slice(&word.to_le_bytes());
        }
    }
}

thread_local! {
    /// One zstd decompression context per thread, made on first use: scans decompress one
    /// frame per page, and a fresh context per frame costs an allocation and its reset.
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decompresses a zstd frame that must hold exactly `raw_len` bytes.
pub(crate) fn decompress(frame: &[u8], raw_len: usize, what: &str) -> Result<Vec<u8>> {
    let raw = DECOMPRESSOR
        .with(|d| {
            let mut d = d.borrow_mut();
            let d = match &mut *d {
                Some(d) => d,
                none => none.insert(zstd::bulk::Decompressor::new()?),
            };
            d.decompress(frame, raw_len)
        })
        .map_err(|e| Error::corruption(format!("{what}: zstd: {e}"), None))?;
    if raw.len() != raw_len {
        return Err(Error::corruption(format!("{what}: decompressed length differs"), None));
    }
    Ok(raw)
}

/// A decoded page: what the accessors of `ColumnChunk` read rows from.
pub(crate) enum Page {
    /// Decompressed raw layout (zstd pages and version-1 chunks).
    Plain {
        bitmap: Option<Vec<u8>>,
        raw: Vec<u8>,
        /// Byte offset of the values in `raw`.
        values_at: usize,
        /// Bytes columns: value `i` is `raw[offsets[i]..offsets[i + 1]]`.
        offsets: Vec<usize>,
    },
    /// Bit-packed values read in place from the stored chunk value.
    Packed {
        bitmap: Option<Vec<u8>>,
        ty: ColumnType,
        reference: u64,
        width: u32,
        /// Offset of the packed area in the chunk value.
        at: usize,
    },
}

impl Page {
    /// Checks and decodes the stored page `bytes` (CRC included) of `rows` rows of type `ty`;
    /// `base` is its offset in the chunk value (packed pages are read in place there).
    pub(crate) fn decode(
        bytes: &[u8],
        base: usize,
        ty: ColumnType,
        nullable: bool,
        rows: usize,
    ) -> Result<Page> {
        let body = split_crc(bytes, "column page")?;
        let mut r = Cursor::named(body, "column page");
        let bitmap_len = if nullable { rows.div_ceil(8) } else { 0 };
        match r.u8("encoding")? {
            ENCODING_ZSTD => {
                let raw_len = r.u32("raw length")? as u64;
                Page::check_raw_len(raw_len, ty, nullable, rows)?;
                let raw = decompress(r.rest(), raw_len as usize, "column page")?;
                Page::plain(raw, ty, nullable, rows)
            }
            ENCODING_PACKED if ty != ColumnType::Bytes => {
                let bitmap = nullable
                    .then(|| r.bytes(bitmap_len, "validity"))
                    .transpose()?
                    .map(<[u8]>::to_vec);
                let reference = r.u64("reference")?;
                let width = r.u8("width")? as u32;
                if width > MAX_SHIFTED_WIDTH && width != 64 {
                    return Err(r.error("width", &format!("{width} is not 0..=56 or 64")));
                }
                let at = base + 1 + bitmap_len + 9;
                let need = packed_len(rows, width);
                if r.remaining() != need {
                    return Err(r.error(
                        "packed values",
                        &format!(
                            "{} bytes, {rows} rows of width {width} need {need}",
                            r.remaining()
                        ),
                    ));
                }
                Ok(Page::Packed { bitmap, ty, reference, width, at })
            }
            e => {
                Err(r
                    .error("encoding", &format!("unknown encoding {e} for a {} column", ty.name())))
            }
        }
    }

    /// Checks a stored raw length (validity, values) against `rows` rows of type `ty`, before
    /// anything is decompressed: a damaged length never sizes an allocation.
    pub(crate) fn check_raw_len(
        raw_len: u64,
        ty: ColumnType,
        nullable: bool,
        rows: usize,
    ) -> Result<()> {
        let bitmap_len = if nullable { rows.div_ceil(8) } else { 0 };
        let fixed = match ty {
            ColumnType::Bytes => bitmap_len as u64 + rows as u64 * 4,
            _ => bitmap_len as u64 + rows as u64 * 8,
        };
        let ok = match ty {
            ColumnType::Bytes => raw_len >= fixed && raw_len <= MAX_RAW_BYTES,
            _ => raw_len == fixed,
        };
        if !ok {
            return Err(Error::corruption(
                format!("column page: raw length {raw_len} does not fit {rows} rows"),
                None,
            ));
        }
        Ok(())
    }

    /// Builds a plain page from decompressed raw bytes (validity, values) of `rows` rows whose
    /// length passed [`Page::check_raw_len`].
    pub(crate) fn plain(raw: Vec<u8>, ty: ColumnType, nullable: bool, rows: usize) -> Result<Page> {
        let bitmap_len = if nullable { rows.div_ceil(8) } else { 0 };
        let bitmap = nullable.then(|| raw[..bitmap_len].to_vec());
        let mut offsets = Vec::new();
        let mut values_at = bitmap_len;
        if ty == ColumnType::Bytes {
            offsets.reserve(rows + 1);
            let lens = &raw[bitmap_len..bitmap_len + rows * 4];
            let mut at = bitmap_len + rows * 4;
            offsets.push(at);
            for c in lens.chunks_exact(4) {
                at += u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize;
                if at > raw.len() {
                    return Err(Error::corruption("column page: value lengths overrun", None));
                }
                offsets.push(at);
            }
            if at != raw.len() {
                return Err(Error::corruption("column page: trailing value bytes", None));
            }
            values_at = bitmap_len + rows * 4;
        }
        Ok(Page::Plain { bitmap, raw, values_at, offsets })
    }

    /// Whether local row `i` holds a value.
    #[inline]
    pub(crate) fn is_valid(&self, i: usize) -> bool {
        let bitmap = match self {
            Page::Plain { bitmap, .. } | Page::Packed { bitmap, .. } => bitmap,
        };
        bitmap.as_ref().is_none_or(|b| b[i / 8] >> (i % 8) & 1 == 1)
    }

    /// The stored bits of numeric local row `i` (`value` is the chunk value packed pages read
    /// from). A null row gives 0.
    #[inline]
    pub(crate) fn bits(&self, value: &[u8], i: usize) -> u64 {
        match self {
            Page::Plain { raw, values_at, .. } => {
                let at = values_at + i * 8;
                u64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"))
            }
            Page::Packed { .. } if !self.is_valid(i) => 0,
            Page::Packed { .. } => self.bits_unchecked(value, i),
        }
    }

    /// The bytes of local row `i` of a bytes page.
    #[inline]
    pub(crate) fn bytes_at(&self, i: usize) -> &[u8] {
        match self {
            Page::Plain { raw, offsets, .. } => &raw[offsets[i]..offsets[i + 1]],
            Page::Packed { .. } => unreachable!("bytes columns are never packed"),
        }
    }

    /// Appends the stored bits of local rows `0..rows` to `out` (nulls as 0).
    pub(crate) fn unpack_into(&self, value: &[u8], rows: usize, out: &mut Vec<u64>) {
        match self {
            Page::Plain { raw, values_at, .. } => out.extend(
                raw[*values_at..values_at + rows * 8]
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))),
            ),
            Page::Packed { bitmap, ty, reference, width, at } => {
                // The width is matched once a page, not once a value.
                let (reference, flip, start) = (*reference, for_key(*ty, 0), out.len());
                let area = &value[*at..*at + packed_len(rows, *width)];
                match *width {
                    0 => out.extend(std::iter::repeat_n(reference ^ flip, rows)),
                    64 => out.extend(area.chunks_exact(8).map(|c| {
                        reference.wrapping_add(u64::from_le_bytes(c.try_into().expect("8"))) ^ flip
                    })),
                    w => {
                        let mask = (1u64 << w) - 1;
                        out.extend((0..rows).map(|i| {
                            let bit = i * w as usize;
                            let word = &area[bit / 8..bit / 8 + 8];
                            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                            reference.wrapping_add((word >> (bit % 8)) & mask) ^ flip
                        }))
                    }
                }
                if bitmap.is_some() {
                    for i in 0..rows {
                        if !self.is_valid(i) {
                            out[start + i] = 0;
                        }
                    }
                }
            }
        }
    }

    /// `bits` of a packed page without the validity check (null rows give the reference).
    #[inline]
    fn bits_unchecked(&self, value: &[u8], i: usize) -> u64 {
        let Page::Packed { ty, reference, width, at, .. } = self else {
            unreachable!("packed only")
        };
        let delta = match *width {
            0 => 0,
            64 => {
                u64::from_le_bytes(value[at + i * 8..at + i * 8 + 8].try_into().expect("8 bytes"))
            }
            w => {
                let bit = i * w as usize;
                let word = u64::from_le_bytes(
                    value[at + bit / 8..at + bit / 8 + 8].try_into().expect("8 bytes"),
                );
                (word >> (bit % 8)) & ((1u64 << w) - 1)
            }
        };
        for_key(*ty, reference.wrapping_add(delta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::filter::rng::SplitMix64;

    /// Decodes `page` (stored at offset 0 of its own buffer) and returns every row's bits.
    fn round_trip(ty: ColumnType, bits: &[u64], valid: &[bool]) -> (u8, Vec<u64>) {
        let nullable = valid.contains(&false);
        let bitmap = validity(&|i| valid[i], nullable, 0, bits.len());
        let stored: Vec<u64> =
            bits.iter().zip(valid).map(|(&b, &v)| if v { b } else { 0 }).collect();
        let page = encode_numeric(ty, &stored, bitmap).unwrap();
        let decoded = Page::decode(&page, 0, ty, nullable, bits.len()).unwrap();
        let mut all = Vec::new();
        decoded.unpack_into(&page, bits.len(), &mut all);
        for i in 0..bits.len() {
            assert_eq!(decoded.is_valid(i), valid[i], "row {i}");
            assert_eq!(
                decoded.bits(&page, i),
                all[i],
                "row {i}: in-place read differs from unpack"
            );
        }
        (page[0], all)
    }

    #[test]
    fn numeric_pages_round_trip_at_every_width() {
        let mut rng = SplitMix64::new(7);
        for ty in [ColumnType::U64, ColumnType::I64, ColumnType::F64] {
            for width in [0u32, 1, 7, 8, 13, 31, 55, 56, 57, 63, 64] {
                for rows in [1usize, 2, 9, 100, 4096] {
                    let base = rng.next_u64();
                    let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
                    let bits: Vec<u64> =
                        (0..rows).map(|_| base.wrapping_add(rng.next_u64() & mask)).collect();
                    let valid: Vec<bool> = (0..rows).map(|i| i % 5 != 3).collect();
                    for valid in [vec![true; rows], valid] {
                        let (_, got) = round_trip(ty, &bits, &valid);
                        let want: Vec<u64> =
                            bits.iter().zip(&valid).map(|(&b, &v)| if v { b } else { 0 }).collect();
                        assert_eq!(got, want, "{ty:?} width {width} rows {rows}");
                    }
                }
            }
        }
    }

    #[test]
    fn small_signed_values_pack_narrowly_and_runs_choose_zstd() {
        // Random -500..=500 as i64: the order-preserving key spans 1,000, so 10 bits a value
        // (the extremes included so the span is exact).
        let mut rng = SplitMix64::new(3);
        let mut bits: Vec<u64> = (0..4096).map(|_| (rng.below(1001) as i64 - 500) as u64).collect();
        bits[0] = (-500i64) as u64;
        bits[1] = 500;
        let page = encode_numeric(ColumnType::I64, &bits, None).unwrap();
        assert_eq!(page[0], ENCODING_PACKED);
        assert_eq!(page.len(), 1 + 9 + (4096 * 10usize).div_ceil(8) + PACK_PAD + 4);
        // Runs of 40 equal values (a sorted column) compress far below 7 bits a value.
        let bits: Vec<u64> = (0..4096u64).map(|i| 1000 + i / 40).collect();
        let (encoding, got) = round_trip(ColumnType::U64, &bits, &vec![true; bits.len()]);
        assert_eq!(encoding, ENCODING_ZSTD);
        assert_eq!(got, bits);
    }

    #[test]
    fn damaged_pages_are_corruption() {
        let bits: Vec<u64> = (0..300).map(|i| i * 7).collect();
        let page = encode_numeric(ColumnType::U64, &bits, None).unwrap();
        for at in 0..page.len() {
            let mut bad = page.clone();
            bad[at] ^= 0x20;
            let err = Page::decode(&bad, 0, ColumnType::U64, false, bits.len()).err();
            assert!(err.is_some_and(|e| e.is_corruption()), "flip at {at} went unnoticed");
        }
        // A checksummed page whose raw length does not fit its rows is refused before the
        // length sizes a decompression buffer.
        for raw_len in [u32::MAX, 300 * 8 + 1, 0] {
            let mut forged = vec![ENCODING_ZSTD];
            forged.extend_from_slice(&raw_len.to_le_bytes());
            forged.extend_from_slice(&zstd::bulk::compress(&[0u8; 16], 1).unwrap());
            push_crc(&mut forged);
            let err = Page::decode(&forged, 0, ColumnType::U64, false, bits.len()).err();
            assert!(err.is_some_and(|e| e.is_corruption()), "raw length {raw_len}");
        }
        // A packed encoding tag on a bytes column is refused, not read as numbers.
        let err = Page::decode(&page, 0, ColumnType::Bytes, false, bits.len()).err();
        assert!(err.is_some_and(|e| e.is_corruption()));
    }
}
