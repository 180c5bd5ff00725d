//! The trailing CRC32 of the query layer's stored values (docs/format.md, "Query layer
//! storage"); their fields are read with the engine's [`siftdb::coding::Cursor`].

use siftdb::{Error, Result};

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
