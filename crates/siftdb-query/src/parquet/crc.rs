//! Page checksums for exported files.
//!
//! The Parquet format gives every page header an optional `crc` (field 4 of `PageHeader`): the
//! CRC-32 (the gzip polynomial, as `crc32fast` computes it) of the page's bytes after the
//! header, as written. parquet-rs 60 never sets it (`CompressedPage::to_thrift_header` leaves a
//! TODO), and a zstd frame carries no checksum of its own, so without it a damaged page of
//! random-looking values decodes to other values unnoticed. [`CrcPageWriter`] writes each page
//! through the crate's own `SerializedPageWriter` and inserts the field into the serialized
//! header; readers that check page CRCs (parquet-rs with its `crc` feature, as siftdb's import
//! is built; parquet-mr; Arrow C++ on request) then refuse a damaged page.

use parquet::column::page::{CompressedPage, PageWriteSpec, PageWriter};
use parquet::errors::{ParquetError, Result};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};

/// A page writer into `out` that adds the page CRC to every page header.
pub(super) struct CrcPageWriter<'a> {
    pub(super) out: &'a mut Vec<u8>,
}

impl PageWriter for CrcPageWriter<'_> {
    fn write_page(&mut self, page: CompressedPage) -> Result<PageWriteSpec> {
        let data_len = page.data().len();
        let mut one = TrackedWrite::new(Vec::with_capacity(data_len + 64));
        let mut spec = SerializedPageWriter::new(&mut one).write_page(page)?;
        let bytes = one.into_inner()?;
        let header_len = bytes.len() - data_len;
        let (header, data) = bytes.split_at(header_len);
        let header = with_crc(header, crc32fast::hash(data)).ok_or_else(|| {
            ParquetError::General("page header not in the layout siftdb adds a CRC to".into())
        })?;
        let added = header.len() - header_len;
        spec.offset = self.out.len() as u64;
        spec.uncompressed_size += added;
        spec.compressed_size += added;
        spec.bytes_written += added as u64;
        self.out.extend_from_slice(&header);
        self.out.extend_from_slice(data);
        Ok(spec)
    }

    fn close(&mut self) -> Result<()> {
        Ok(())
    }
}

/// `header` (a thrift compact `PageHeader` whose fields 1-3, `type`, `uncompressed_page_size`
/// and `compressed_page_size`, come first as short-form i32 fields, as parquet-rs writes it)
/// with field 4, `crc: i32`, inserted after them; `None` for any other layout.
fn with_crc(header: &[u8], crc: u32) -> Option<Vec<u8>> {
    // Compact protocol field header: (id delta << 4) | type; i32 is type 5.
    const I32_DELTA_1: u8 = 0x15;
    let mut pos = 0;
    for _ in 0..3 {
        if *header.get(pos)? != I32_DELTA_1 {
            return None;
        }
        pos += 1;
        while *header.get(pos)? & 0x80 != 0 {
            pos += 1;
        }
        pos += 1;
    }
    // The next field (5, 7 or 8: the page type's own header) is now one id closer.
    let next = *header.get(pos)?;
    let delta = next >> 4;
    if delta < 2 {
        return None;
    }
    let mut out = Vec::with_capacity(header.len() + 6);
    out.extend_from_slice(&header[..pos]);
    out.push(I32_DELTA_1);
    let v = crc as i32;
    let mut zigzag = ((v << 1) ^ (v >> 31)) as u32;
    while zigzag >= 0x80 {
        out.push(zigzag as u8 | 0x80);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
    out.push(((delta - 1) << 4) | (next & 0x0f));
    out.extend_from_slice(&header[pos + 1..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::with_crc;

    #[test]
    fn inserts_field_4_and_shortens_the_next_delta() {
        // type=0 (DATA_PAGE), sizes 100 and 60, then field 5 (struct) and its stop byte.
        let h = [0x15, 0x00, 0x15, 0xc8, 0x01, 0x15, 0x78, 0x2c, 0x00, 0x00];
        let got = with_crc(&h, 0xffff_ffff).unwrap();
        // crc -1 zigzags to 1.
        assert_eq!(got, [0x15, 0x00, 0x15, 0xc8, 0x01, 0x15, 0x78, 0x15, 0x01, 0x1c, 0x00, 0x00]);
        assert_eq!(with_crc(&got, 1), None, "a header that has a crc already");
        assert_eq!(with_crc(&h[..4], 1), None, "truncated");
    }
}
