//! Bounds-checked little-endian reading and writing for the query layer's stored values.
//!
//! Every read names the field it decodes, so a short or damaged value becomes an
//! [`Error::Corruption`] that says what was being read and at which offset.

use crate::error::{Error, Result};

/// A cursor over stored bytes; every read checks the remaining length first.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The structure being decoded ("column chunk", "chunk metadata"), for error messages.
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { buf, pos: 0, what }
    }

    pub(crate) fn err(&self, field: &str, why: &str) -> Error {
        Error::corruption(format!("{}: {field}: {why}", self.what), Some(self.pos as u64))
    }

    pub(crate) fn bytes(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(self.err(field, &format!("needs {n} bytes, {} left", self.remaining())));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        let s = self.bytes(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub(crate) fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(self.array::<1>(field)?[0])
    }
    pub(crate) fn u16(&mut self, field: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn u32(&mut self, field: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    /// Fails unless every byte was consumed.
    pub(crate) fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.err("end", &format!("{} trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

/// Splits `value` into its body and trailing CRC32 and checks the checksum.
pub(crate) fn split_crc<'a>(value: &'a [u8], what: &'static str) -> Result<&'a [u8]> {
    if value.len() < 4 {
        return Err(Error::corruption(format!("{what}: shorter than its checksum"), Some(0)));
    }
    let (body, crc) = value.split_at(value.len() - 4);
    let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32fast::hash(body) != stored {
        return Err(Error::corruption(
            format!("{what}: checksum mismatch"),
            Some(body.len() as u64),
        ));
    }
    Ok(body)
}

/// Appends the CRC32 of everything in `out` so far.
pub(crate) fn push_crc(out: &mut Vec<u8>) {
    let crc = crc32fast::hash(out);
    out.extend_from_slice(&crc.to_le_bytes());
}
