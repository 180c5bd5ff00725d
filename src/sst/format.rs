//! Low-level SST encodings: varints, block handles, the block trailer (compression type + CRC)
//! and the fixed-size footer. The byte layout is specified in docs/format.md#sstable; this file
//! implements it and must agree with it.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::error::{Error, Result};
use crate::sst::compression::{self, DecoderDict, EncoderDict};
use crate::sst::Compression;

/// Bytes after every block's contents: compression type u8, crc32 u32.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Compression type byte: stored as is.
pub const COMPRESSION_NONE: u8 = 0;
/// Compression type byte: zstd frame preceded by the uncompressed length (varint32).
pub const COMPRESSION_ZSTD: u8 = 1;
/// Compression type byte: LZ4 block (no frame) preceded by the uncompressed length (varint32).
pub const COMPRESSION_LZ4: u8 = 2;
/// Largest uncompressed block the reader accepts (and the builder writes): 1 GiB. Bounds the
/// allocation made from a stored length.
pub const MAX_BLOCK_LEN: usize = 1 << 30;
/// Footer size in bytes.
pub const FOOTER_LEN: usize = 64;
/// Last-but-one field of every footer: `"SIFTDBST"` read as a little-endian u64.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"SIFTDBST");
/// The newest SST format version this build reads (docs/format.md#sst-format-versions): 1 =
/// blocks of type none or zstd; 2 = blocks may also be LZ4 (type 2); 3 = keys may carry a
/// keyspace id, entries may be merge operands (internal-key kind 2), and the table may hold a
/// range-deletion block (its handle in the properties block); 4 = the filter may be partitioned
/// (the footer's filter handle names a top-level partition index, src/sst/partitioned_filter.rs),
/// and so may the index (the footer's index handle names a top-level index over index
/// partitions, src/sst/partitioned_index.rs); 5 = the table may carry scan filters (a prefix
/// filter and a range filter, their handles in the properties block; design.md#scan-filters);
/// 6 = the properties record the oldest and newest write time of a TTL keyspace's entries
/// (design.md#ttl); 7 = entries may be blob references (internal-key kind 4 `BlobIndex`,
/// design.md#key-value-separation); 8 = the table may carry a zstd compression dictionary (its
/// handle in the properties block) that its zstd data blocks are compressed with
/// (design.md#zstd-dictionaries).
pub const FORMAT_VERSION: u32 = 8;

/// What a table holds that decides its format version ([`format_version_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFeatures {
    /// Data-block compression.
    pub compression: Compression,
    /// Some key carries a keyspace id (a keyspace other than the default).
    pub keyspaces: bool,
    /// The table holds merge operands (entries of kind Merge).
    pub merges: bool,
    /// The table has a range-deletion block.
    pub range_deletions: bool,
    /// The filter is partitioned (a top-level partition index over filter partitions).
    pub partitioned_filter: bool,
    /// The index is partitioned (a top-level index over index partitions).
    pub partitioned_index: bool,
    /// The table carries a prefix filter or a range filter.
    pub scan_filters: bool,
    /// The properties record write times (a table of a TTL keyspace).
    pub write_times: bool,
    /// Some entry is a blob reference (kind `BlobIndex`).
    pub blob_refs: bool,
    /// The table has a compression dictionary block.
    pub dictionary: bool,
}

/// The format version a table with `features` is written with: the lowest that can hold them.
/// Tables without LZ4 stay version 1, readable by builds that predate LZ4; an LZ4 table is
/// version 2, so such a build reports "format version 2 is newer" instead of failing on an
/// unknown compression type byte; a table of a non-default keyspace, holding merge operands or
/// with a range-deletion block is version 3, so an older build refuses it instead of failing on
/// an unknown key flag or kind, or ignoring the block (and resurrecting deleted keys); a table
/// with a partitioned filter or index is version 4, so an older build refuses it instead of
/// parsing a top-level partition index as a filter envelope or as the index; a table with scan
/// filters is version 5, so an older build refuses it rather than scan it without them (which
/// would be correct but slower than its owner configured; a refusal is the clearer outcome).
pub fn format_version_for(features: TableFeatures) -> u32 {
    // A table with a dictionary is version 8, so an older build reports "format version 8 is
    // newer" instead of failing on zstd frames that need a dictionary it does not load.
    if features.dictionary {
        return 8;
    }
    // A table of blob references is version 7, so an older build reports "format version 7 is
    // newer" instead of an unknown kind 4.
    if features.blob_refs {
        return 7;
    }
    if features.write_times {
        return 6;
    }
    if features.scan_filters {
        return 5;
    }
    if features.partitioned_filter || features.partitioned_index {
        return 4;
    }
    if features.keyspaces || features.merges || features.range_deletions {
        return 3;
    }
    match features.compression {
        Compression::None | Compression::Zstd { .. } => 1,
        Compression::Lz4 => 2,
    }
}

pub use crate::coding::{get_varint32, get_varint64, put_varint32, put_varint64};

/// Where a block lives in the file: offset and size of its contents (the 5-byte trailer follows
/// and is not counted in `size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// File offset of the first content byte.
    pub offset: u64,
    /// Length of the contents as stored (compressed length when compressed).
    pub size: u64,
}

impl BlockHandle {
    /// Appends `offset:varint64 size:varint64`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
    }

    /// Decodes a handle that must occupy all of `buf`.
    pub fn decode(buf: &[u8]) -> Result<BlockHandle> {
        let mut pos = 0;
        let offset = get_varint64(buf, &mut pos, "block handle offset")?;
        let size = get_varint64(buf, &mut pos, "block handle size")?;
        if pos != buf.len() {
            return Err(Error::corruption("block handle has trailing bytes", Some(pos as u64)));
        }
        Ok(BlockHandle { offset, size })
    }

    /// File offset one past the block's trailer.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.size).saturating_add(BLOCK_TRAILER_LEN as u64)
    }
}

#[cfg(test)]
/// Frames raw block contents for the file: compresses them per `compression` (the compressed
/// form is kept only if it saves at least 1/8 of the bytes), then appends the trailer. Returns
/// the on-disk bytes and the compression type used.
pub fn frame_block(raw: &[u8], compression: Compression) -> Result<(Vec<u8>, u8)> {
    let mut out = Vec::with_capacity(raw.len() + BLOCK_TRAILER_LEN);
    let ctype = frame_block_with(raw, compression, None, &mut out)?;
    Ok((out, ctype))
}

/// [`frame_block`] appending to `out` (which may already hold earlier blocks: the table
/// builder frames every block straight into its write buffer), a zstd block compressed with the
/// table's dictionary `dict` when given. Returns the compression type used; the block's framed
/// bytes are `out[old_len..]`.
pub(crate) fn frame_block_with(
    raw: &[u8],
    compression: Compression,
    dict: Option<&EncoderDict>,
    out: &mut Vec<u8>,
) -> Result<u8> {
    let start = out.len();
    if let Some(ctype) = compression::compress(raw, compression, dict, out)? {
        if out.len() - start < raw.len() - raw.len() / 8 {
            push_trailer(out, start, ctype);
            return Ok(ctype);
        }
        out.truncate(start);
    }
    out.extend_from_slice(raw);
    push_trailer(out, start, COMPRESSION_NONE);
    Ok(COMPRESSION_NONE)
}

/// Appends the type byte and the CRC of `out[start..]` (contents and type).
fn push_trailer(out: &mut Vec<u8>, start: usize, ctype: u8) {
    out.push(ctype);
    let crc = crc32fast::hash(out.get(start..).unwrap_or_default());
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Verifies a framed block (`contents ++ type ++ crc`, as read from the file) and returns its
/// uncompressed contents. Offsets in errors are relative to the start of `framed`. An
/// uncompressed block is returned in `framed`'s own allocation (no copy).
pub fn unframe_block(framed: Vec<u8>) -> Result<Vec<u8>> {
    unframe_owned(framed, None)
}

/// [`unframe_block`] decoding a zstd block with the table's dictionary `dict`.
pub(crate) fn unframe_owned(mut framed: Vec<u8>, dict: Option<&DecoderDict>) -> Result<Vec<u8>> {
    let (contents, ctype) = check_trailer(&framed)?;
    if ctype == COMPRESSION_NONE {
        let n = contents.len();
        framed.truncate(n);
        return Ok(framed);
    }
    decode_contents(contents, ctype, dict, Vec::with_capacity)
}

/// [`unframe_block`] for framed bytes in a borrowed buffer (the read path reuses one scratch
/// buffer per thread for the file bytes): the contents are decompressed, or copied when stored
/// raw, into the buffer `alloc(len)` returns. `alloc` must return a vector with capacity at least
/// `len` (the contents' size, bounded before the call); it may hold stale bytes (a recycled
/// buffer, which saves a `malloc`/`free` pair per block): every decoder sets the length and
/// overwrites every byte it keeps.
#[cfg(test)]
pub fn unframe_block_from(framed: &[u8], alloc: impl FnOnce(usize) -> Vec<u8>) -> Result<Vec<u8>> {
    unframe_block_with(framed, None, alloc)
}

/// [`unframe_block_from`] decoding a zstd block with the table's dictionary `dict` (a data
/// block of a table that has one).
pub(crate) fn unframe_block_with(
    framed: &[u8],
    dict: Option<&DecoderDict>,
    alloc: impl FnOnce(usize) -> Vec<u8>,
) -> Result<Vec<u8>> {
    let (contents, ctype) = check_trailer(framed)?;
    decode_contents(contents, ctype, dict, alloc)
}

/// Checks the trailer's CRC; returns the stored contents and their compression type byte.
fn check_trailer(framed: &[u8]) -> Result<(&[u8], u8)> {
    let short = || Error::corruption("block shorter than its trailer", Some(0));
    let (covered, stored) = framed.split_last_chunk::<4>().ok_or_else(short)?;
    let (&ctype, contents) = covered.split_last().ok_or_else(short)?;
    let stored = u32::from_le_bytes(*stored);
    let actual = crc32fast::hash(covered);
    if stored != actual {
        return Err(Error::corruption(
            format!("block checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"),
            Some(contents.len() as u64 + 1),
        ));
    }
    Ok((contents, ctype))
}

/// `contents` decoded per the compression type byte `ctype` (CRC checked).
fn decode_contents(
    contents: &[u8],
    ctype: u8,
    dict: Option<&DecoderDict>,
    alloc: impl FnOnce(usize) -> Vec<u8>,
) -> Result<Vec<u8>> {
    match ctype {
        COMPRESSION_NONE => {
            let mut out = alloc(contents.len());
            out.clear();
            out.extend_from_slice(contents);
            Ok(out)
        }
        t @ (COMPRESSION_ZSTD | COMPRESSION_LZ4) => {
            compression::decompress(t, contents, dict, alloc)
        }
        t => Err(Error::corruption(
            format!("unknown block compression type {t}"),
            Some(contents.len() as u64),
        )),
    }
}

/// The fixed-size record at the end of every SST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The filter block (size 0 and offset 0 when the table has no filter).
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
    /// Format version the table was written with.
    pub version: u32,
}

impl Footer {
    /// The 64 footer bytes: three handles as fixed u64 pairs, version, magic, crc32 of the rest.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut out = Vec::with_capacity(FOOTER_LEN);
        for h in [self.filter, self.properties, self.index] {
            out.extend_from_slice(&h.offset.to_le_bytes());
            out.extend_from_slice(&h.size.to_le_bytes());
        }
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&TABLE_MAGIC.to_le_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out.try_into().expect("footer is 64 bytes")
    }

    /// Decodes and verifies a footer: magic first (is this an SST at all?), then the version (a
    /// newer version may lay its footer out differently, so it is reported before the CRC is
    /// checked), then the CRC. Offsets in errors are relative to the footer's start.
    pub fn decode(b: &[u8; FOOTER_LEN]) -> Result<Footer> {
        let u64_at = |i: usize| {
            let bytes = b.get(i..i + 8).and_then(|s| <[u8; 8]>::try_from(s).ok());
            bytes.map_or(0, u64::from_le_bytes) // `i` is a field offset within the 64 bytes
        };
        if u64_at(52) != TABLE_MAGIC {
            return Err(Error::corruption(
                "not an SST: footer magic is not \"SIFTDBST\"",
                Some(52),
            ));
        }
        let version = u32::from_le_bytes(b[48..52].try_into().expect("4 bytes"));
        if version > FORMAT_VERSION {
            return Err(Error::corruption(
                format!(
                    "SST format version {version} is newer than this build supports \
                     ({FORMAT_VERSION}); open it with a newer siftdb"
                ),
                Some(48),
            ));
        }
        let stored = u32::from_le_bytes(b[60..64].try_into().expect("4 bytes"));
        if stored != crc32fast::hash(&b[..60]) {
            return Err(Error::corruption("footer checksum mismatch", Some(60)));
        }
        if version == 0 {
            return Err(Error::corruption("SST format version 0 is invalid", Some(48)));
        }
        let h = |i: usize| BlockHandle { offset: u64_at(i), size: u64_at(i + 8) };
        Ok(Footer { filter: h(0), properties: h(16), index: h(32), version })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        let mut buf = Vec::new();
        let vals = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        for &v in &vals {
            put_varint64(&mut buf, v);
        }
        let mut pos = 0;
        for &v in &vals {
            assert_eq!(get_varint64(&buf, &mut pos, "t").unwrap(), v);
        }
        assert_eq!(pos, buf.len());
        let mut pos = 0;
        assert!(get_varint64(&[0xff; 11], &mut pos, "t").is_err());
        assert!(get_varint64(&[0xff, 0xff], &mut pos, "t").is_err());
        let mut big = Vec::new();
        put_varint64(&mut big, 1 << 40);
        assert!(get_varint32(&big, &mut 0, "t").is_err());
    }

    #[test]
    fn framing_verifies_crc_and_compresses_only_when_worth_it() {
        let raw: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        let (framed, t) = frame_block(&raw, Compression::Zstd { level: 3 }).unwrap();
        assert_eq!(t, COMPRESSION_ZSTD);
        assert!(framed.len() < raw.len() / 4);
        assert_eq!(unframe_block(framed.clone()).unwrap(), raw);
        let mut bad = framed;
        bad[2] ^= 1;
        assert!(unframe_block(bad).unwrap_err().is_corruption());
        // Random bytes do not compress by 12.5%: stored raw.
        let mut rng = crate::rng::SplitMix64::new(1);
        let mut noise = vec![0u8; 1000];
        rng.fill(&mut noise);
        let (framed, t) = frame_block(&noise, Compression::Zstd { level: 3 }).unwrap();
        assert_eq!((t, framed.len()), (COMPRESSION_NONE, 1005));
        assert_eq!(unframe_block(framed).unwrap(), noise);
    }

    #[test]
    fn footer_round_trips_and_names_newer_versions() {
        let f = Footer {
            filter: BlockHandle { offset: 1, size: 2 },
            properties: BlockHandle { offset: 3, size: 4 },
            index: BlockHandle { offset: 5, size: 6 },
            version: FORMAT_VERSION,
        };
        let b = f.encode();
        assert_eq!(Footer::decode(&b).unwrap(), f);
        let newer = Footer { version: FORMAT_VERSION + 1, ..f }.encode();
        let msg = Footer::decode(&newer).unwrap_err().to_string();
        assert!(msg.contains(&format!("version {} is newer", FORMAT_VERSION + 1)), "{msg}");
        let mut bad = b;
        bad[3] ^= 0x10;
        assert!(Footer::decode(&bad).unwrap_err().is_corruption());
    }
}
