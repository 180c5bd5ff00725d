//! The write-ahead log: a sequence of opaque records (the engine stores one encoded write batch
//! per record; the manifest stores one version edit per record).
//!
//! Format (specified in docs/format.md#wal; this is a summary): the file is a
//! sequence of 32 KiB blocks; a record is cut into fragments that never cross a block boundary,
//! each fragment carrying a 7-byte header `crc32:u32 length:u16 type:u8` (type FULL, FIRST,
//! MIDDLE or LAST), the CRC covering the length, type and payload bytes. A block tail shorter than
//! a header is zero-filled.
//!
//! Recovery distinguishes a *torn tail* (the crash interrupted the last append; dropped and
//! reported so the caller can truncate) from *corruption* (anything else; an error naming the
//! file and offset). The precise rule is in `design.md` and in [`reader`].

pub mod reader;
pub mod writer;

#[cfg(test)]
mod tests;

pub use reader::{read_wal, WalReader, WalRecovery};
pub use writer::WalWriter;

/// Size of a log block. Fragments never cross a block boundary.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a fragment header: `crc32:u32 length:u16 type:u8`.
pub const HEADER_SIZE: usize = 7;

/// Fragment type: a whole record.
pub(crate) const FULL: u8 = 1;
/// Fragment type: the first fragment of a record that continues in the next block.
pub(crate) const FIRST: u8 = 2;
/// Fragment type: an inner fragment (the record started before and continues after).
pub(crate) const MIDDLE: u8 = 3;
/// Fragment type: the last fragment of a record.
pub(crate) const LAST: u8 = 4;

/// CRC-32 of a fragment: over the `length` and `type` header bytes, then the payload.
pub(crate) fn fragment_crc(len_and_type: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(len_and_type);
    h.update(payload);
    h.finalize()
}
