//! The encodings docs/format.md specifies, for crates that store values in siftdb's formats:
//! little-endian fixed-width integers and LEB128 varints, with bounds-checked decoding.
//!
//! Every decoder takes a cursor over untrusted bytes and names the field it is reading, so a
//! short or malformed input becomes `Error::Corruption { what: "... reading <field>" }` at the
//! offset where it failed. The engine's SST, WAL and manifest decoders and the query layer's
//! stored values (siftdb-query) all read through [`Cursor`].
//!
//! ```
//! use siftdb::coding::{put_varint64, Cursor};
//!
//! let mut buf = vec![7u8];
//! put_varint64(&mut buf, 300);
//! let mut c = Cursor::named(&buf, "example record");
//! assert_eq!((c.u8("kind")?, c.varint64("length")?), (7, 300));
//! c.finish()?;
//! assert!(Cursor::new(&[0x80]).varint64("length").unwrap_err().is_corruption());
//! # Ok::<(), siftdb::Error>(())
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::error::{Error, Result};

/// Appends `v` as an unsigned LEB128 varint (1..=10 bytes).
pub fn put_varint64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` as a varint (1..=5 bytes).
pub fn put_varint32(out: &mut Vec<u8>, v: u32) {
    put_varint64(out, v as u64)
}

/// Appends a varint length followed by the bytes.
pub fn put_length_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Reads a varint of at most 10 bytes at `buf[*pos..]`, advancing `pos` past it. Running out of
/// bytes or a value above 64 bits is a corruption error naming `field`, at offset `*pos`.
pub fn get_varint64(buf: &[u8], pos: &mut usize, field: &str) -> Result<u64> {
    let err = |why: &str| Error::corruption(format!("{why} reading {field}"), Some(*pos as u64));
    let mut v: u64 = 0;
    for i in 0..10 {
        let Some(&b) = buf.get(*pos + i) else { return Err(err("truncated varint")) };
        if i == 9 && b > 1 {
            return Err(err("varint overflows 64 bits"));
        }
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b < 0x80 {
            *pos += i + 1;
            return Ok(v);
        }
    }
    Err(err("varint longer than 10 bytes"))
}

/// [`get_varint64`] for a value that must fit in 32 bits.
pub fn get_varint32(buf: &[u8], pos: &mut usize, field: &str) -> Result<u32> {
    let start = *pos;
    let v = get_varint64(buf, pos, field)?;
    u32::try_from(v).map_err(|_| {
        *pos = start;
        Error::corruption(format!("varint exceeds 32 bits reading {field}"), Some(start as u64))
    })
}

/// A forward cursor over untrusted bytes; every read checks the remaining length first.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The structure being decoded ("column chunk"), named in errors before the field.
    what: Option<&'static str>,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf, pos: 0, what: None }
    }

    /// A cursor at the start of `buf` whose errors name the structure `what` it decodes
    /// (`"... reading column chunk: rows"`), for values read outside a larger framed block.
    pub fn named(buf: &'a [u8], what: &'static str) -> Cursor<'a> {
        Cursor { buf, pos: 0, what: Some(what) }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every byte was consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// A corruption error at the current offset: `why`, reading `field`.
    pub fn error(&self, field: &str, why: &str) -> Error {
        let at = self.pos as u64;
        match self.what {
            None => Error::corruption(format!("{why} reading {field}"), Some(at)),
            Some(what) => Error::corruption(format!("{why} reading {what}: {field}"), Some(at)),
        }
    }

    /// Takes `n` bytes.
    pub fn bytes(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n);
        let Some(s) = end.and_then(|end| self.buf.get(self.pos..end)) else {
            return Err(self.error(field, "truncated input"));
        };
        self.pos += n;
        Ok(s)
    }

    /// Takes one byte.
    pub fn u8(&mut self, field: &str) -> Result<u8> {
        let b = self.bytes(1, field)?.first().copied();
        b.ok_or_else(|| self.error(field, "truncated input"))
    }

    /// Takes a little-endian u16.
    pub fn u16(&mut self, field: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.bytes(2, field)?.try_into().expect("2 bytes")))
    }

    /// Takes a little-endian u32.
    pub fn u32(&mut self, field: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4, field)?.try_into().expect("4 bytes")))
    }

    /// Takes a little-endian u64.
    pub fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8, field)?.try_into().expect("8 bytes")))
    }

    /// Takes a varint of at most 10 bytes.
    pub fn varint64(&mut self, field: &str) -> Result<u64> {
        get_varint64(self.buf, &mut self.pos, field)
    }

    /// Takes a varint that must fit in 32 bits.
    pub fn varint32(&mut self, field: &str) -> Result<u32> {
        get_varint32(self.buf, &mut self.pos, field)
    }

    /// Takes every byte left.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or_default();
        self.pos = self.buf.len();
        s
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<()> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.error("end", &format!("{n} trailing bytes"))),
        }
    }

    /// Takes a varint length and that many bytes; the length is checked against what remains
    /// before anything is sliced or allocated.
    pub fn length_prefixed(&mut self, field: &str) -> Result<&'a [u8]> {
        let n = self.varint64(field)?;
        if n > self.remaining() as u64 {
            return Err(self.error(field, "length runs past the end"));
        }
        self.bytes(n as usize, field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        let values = [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX as u64, u64::MAX];
        let mut buf = Vec::new();
        for &v in &values {
            put_varint64(&mut buf, v);
        }
        let mut c = Cursor::new(&buf);
        for &v in &values {
            assert_eq!(c.varint64("v").unwrap(), v);
        }
        assert!(c.is_empty());
    }

    #[test]
    fn malformed_varints_are_corruption() {
        assert!(Cursor::new(&[0x80]).varint64("x").unwrap_err().is_corruption());
        assert!(Cursor::new(&[0xff; 11]).varint64("x").unwrap_err().is_corruption());
        let mut big = Vec::new();
        put_varint64(&mut big, 1 << 40);
        assert!(Cursor::new(&big).varint32("x").is_err());
    }

    #[test]
    fn length_prefix_beyond_input_is_rejected_before_slicing() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::MAX);
        buf.extend_from_slice(b"abc");
        let err = Cursor::new(&buf).length_prefixed("value").unwrap_err();
        assert!(err.to_string().contains("value"), "{err}");
    }

    #[test]
    fn named_cursor_errors_name_structure_field_and_offset() {
        let buf = [1u8, 0, 2, 0, 0, 0, 9];
        let mut c = Cursor::named(&buf, "column chunk");
        assert_eq!((c.u16("kind").unwrap(), c.u32("rows").unwrap()), (1, 2));
        let err = c.finish().unwrap_err();
        assert!(err.to_string().contains("1 trailing bytes reading column chunk: end"), "{err}");
        let err = c.u16("width").unwrap_err();
        assert!(err.to_string().contains("reading column chunk: width"), "{err}");
        assert_eq!(c.rest(), &[9]);
        assert!(c.is_empty() && c.finish().is_ok());
    }
}
