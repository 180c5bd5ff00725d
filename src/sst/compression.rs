//! The compressed forms of a data block's contents (docs/format.md#block-framing).
//! Both are `raw_len:varint32 payload`:
//! * type 1, zstd: the payload is one zstd frame;
//! * type 2, LZ4: the payload is one LZ4 *block* (no frame header, no checksum: the block
//!   trailer's CRC-32 already covers the bytes), encoded by `lz4_flex` and decoded by liblz4's
//!   `LZ4_decompress_safe` (`lz4-sys`).
//!
//! A zstd block of a table with a compression dictionary (format version 8,
//! docs/format.md#compression-dictionary-block) is one zstd frame compressed with that
//! dictionary: the builder holds it digested for the encoder ([`EncoderDict`]) and the reader
//! digested for the decoder ([`DecoderDict`]), so a block decode references the dictionary's
//! entropy tables instead of rebuilding them. Both go through the same per-thread contexts as
//! plain zstd blocks.
//!
//! Decoding trusts nothing but the CRC-checked bytes: `raw_len` is bounded by
//! [`MAX_BLOCK_LEN`] and by the most the payload can expand to before anything is allocated, so
//! a corrupt length is a corruption error, never a huge allocation; the output must then be
//! exactly `raw_len` bytes.

use crate::error::{Error, Result};
use crate::sst::format::MAX_BLOCK_LEN;
use crate::sst::format::{get_varint32, put_varint32, COMPRESSION_LZ4, COMPRESSION_ZSTD};
use crate::sst::Compression;
use std::cell::RefCell;
use zstd::zstd_safe;

thread_local! {
    /// One zstd compression and one decompression context per thread, created on first use:
    /// a context costs far more to set up than one 4 KiB block costs to (de)compress.
    static ZSTD: RefCell<ZstdContexts> = const { RefCell::new((None, None)) };
    /// The LZ4 compressor's hash table (8 KiB), reused so a block does not pay its allocation.
    static LZ4_TABLE: RefCell<Option<lz4_flex::block::CompressTable>> =
        const { RefCell::new(None) };
}

type ZstdContexts = (Option<zstd::bulk::Compressor<'static>>, Option<zstd_safe::DCtx<'static>>);

/// A zstd dictionary digested for compression at one level (`ZSTD_CDict`): what the table
/// builder compresses data blocks with once it has trained the table's dictionary.
pub(crate) struct EncoderDict(zstd_safe::CDict<'static>);

impl EncoderDict {
    /// Digests `dict` (a trained dictionary, or raw content) for compression at `level`;
    /// `None` when zstd refuses it.
    pub(crate) fn new(dict: &[u8], level: i32) -> Option<EncoderDict> {
        zstd_safe::CDict::try_create(dict, level).map(EncoderDict)
    }
}

/// A zstd dictionary digested for decompression (`ZSTD_DDict`): its entropy tables built once,
/// when the table is opened, and referenced by every block decode.
pub(crate) struct DecoderDict(zstd_safe::DDict<'static>);

impl DecoderDict {
    /// Digests the stored dictionary `dict` (copied); a corrupt trained dictionary (zstd
    /// cannot load its entropy tables) is a corruption error. Offsets are relative to `dict`.
    pub(crate) fn new(dict: &[u8]) -> Result<DecoderDict> {
        zstd_safe::DDict::try_create(dict).map(DecoderDict).ok_or_else(|| {
            Error::corruption("compression dictionary is not a valid zstd dictionary", Some(0))
        })
    }

    /// Bytes the digested dictionary takes in memory (its content copy and entropy tables).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.0.sizeof()
    }
}

/// Largest expansion of zstd-compressed bytes: a zstd block of at most 128 KiB output costs at
/// least 4 input bytes (3-byte header + 1 RLE byte), a ratio below 32768.
const ZSTD_MAX_RATIO: usize = 32_768;

/// Largest expansion of an LZ4 block: the longest output per input byte is a match length
/// continued by `0xFF` bytes, 255 output bytes each; a sequence's token, offset and final
/// length byte (4 bytes) yield at most 19 + 254 bytes, also below 255 per input byte.
const LZ4_MAX_RATIO: usize = 255;

/// Appends the compressed form of `raw` (`raw_len:varint32 payload`) to `out` and returns its
/// type byte; `None` (nothing appended) for [`Compression::None`]. A zstd block is compressed
/// with `dict` when given (at the level the dictionary was digested for).
pub(crate) fn compress(
    raw: &[u8],
    compression: Compression,
    dict: Option<&EncoderDict>,
    out: &mut Vec<u8>,
) -> Result<Option<u8>> {
    match compression {
        Compression::None => Ok(None),
        Compression::Zstd { level } => {
            put_varint32(out, raw.len() as u32);
            out.reserve(zstd_safe::compress_bound(raw.len()));
            ZSTD.with(|z| {
                let mut z = z.borrow_mut();
                let c = match &mut z.0 {
                    Some(c) => c,
                    none => none.insert(zstd::bulk::Compressor::new(level)?),
                };
                // The frame is appended after the bytes `out` already holds, into the capacity
                // reserved above (the compress bound: it cannot run out).
                let at = out.len() as u64;
                let mut tail = std::io::Cursor::new(&mut *out);
                tail.set_position(at);
                match dict {
                    Some(d) => c.context_mut().compress_using_cdict(&mut tail, raw, &d.0),
                    None => {
                        c.set_compression_level(level)?;
                        c.context_mut().compress2(&mut tail, raw)
                    }
                }
                .map(drop)
                .map_err(zstd_error)
            })
            .map_err(|e| Error::io("compressing an SST block with zstd", e))?;
            Ok(Some(COMPRESSION_ZSTD))
        }
        Compression::Lz4 => {
            put_varint32(out, raw.len() as u32);
            let start = out.len();
            out.resize(start + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
            let written = LZ4_TABLE
                .with(|t| {
                    let mut t = t.borrow_mut();
                    let table = t.get_or_insert_with(lz4_flex::block::CompressTable::default);
                    lz4_flex::block::compress_into_with_table(raw, &mut out[start..], table)
                })
                .map_err(|e| {
                    Error::io("compressing an SST block with LZ4", std::io::Error::other(e))
                })?;
            out.truncate(start + written);
            Ok(Some(COMPRESSION_LZ4))
        }
    }
}

/// Decodes the compressed form `contents` of type `ctype` (zstd or LZ4) into the buffer
/// `alloc(raw_len)` returns (a vector of capacity at least `raw_len`, possibly holding stale
/// bytes: both decoders set its length and overwrite every byte kept). Offsets in errors
/// are relative to the start of `contents`. A zstd block of a table with a dictionary is
/// decoded with `dict` (the table's).
pub(crate) fn decompress(
    ctype: u8,
    contents: &[u8],
    dict: Option<&DecoderDict>,
    alloc: impl FnOnce(usize) -> Vec<u8>,
) -> Result<Vec<u8>> {
    let (name, max_ratio) = match ctype {
        COMPRESSION_ZSTD => ("zstd", ZSTD_MAX_RATIO),
        COMPRESSION_LZ4 => ("LZ4", LZ4_MAX_RATIO),
        t => {
            return Err(Error::corruption(
                format!("unknown block compression type {t}"),
                Some(contents.len() as u64),
            ))
        }
    };
    let mut pos = 0;
    let raw_len = get_varint32(contents, &mut pos, "compressed block length")? as usize;
    if raw_len > MAX_BLOCK_LEN {
        return Err(Error::corruption(
            format!("{name} block claims {raw_len} bytes, above the 1 GiB limit"),
            Some(0),
        ));
    }
    let payload = &contents[pos..];
    // The output is allocated at `raw_len` up front, so bound it by what the payload can
    // expand to first.
    if raw_len > payload.len().saturating_mul(max_ratio) {
        return Err(Error::corruption(
            format!("{name} block of {} bytes cannot expand to {raw_len}", payload.len()),
            Some(0),
        ));
    }
    // `alloc` may hand back a recycled buffer still holding an evicted block's bytes.
    let mut raw = alloc(raw_len);
    let decoded = if ctype == COMPRESSION_ZSTD {
        raw.clear();
        raw.reserve_exact(raw_len);
        ZSTD.with(|z| {
            let mut z = z.borrow_mut();
            let d = match &mut z.1 {
                Some(d) => d,
                none => none.insert(zstd_safe::DCtx::try_create().ok_or("out of memory")?),
            };
            match dict {
                Some(dict) => d.decompress_using_ddict(&mut raw, payload, &dict.0),
                None => d.decompress(&mut raw, payload),
            }
            .map(drop)
            .map_err(zstd_safe::get_error_name)
        })
        .map_err(|e| e.to_string())
    } else {
        raw.clear();
        raw.reserve_exact(raw_len);
        lz4_decode(payload, &mut raw)
    };
    decoded.map_err(|e| {
        Error::corruption(format!("{name} block does not decompress: {e}"), Some(pos as u64))
    })?;
    if raw.len() != raw_len {
        return Err(Error::corruption(
            format!("{name} block decompressed to {} bytes, expected {raw_len}", raw.len()),
            Some(0),
        ));
    }
    Ok(raw)
}

/// Decodes the LZ4 block `payload` into the spare capacity of the empty `out` (at least the
/// expected length) with liblz4's `LZ4_decompress_safe`, and sets `out`'s length to the bytes
/// written.
///
/// `LZ4_decompress_safe` is liblz4's decoder for untrusted input: it never writes outside
/// `[dst, dst + capacity)`, never reads outside `[src, src + len)`, and rejects a match offset
/// reaching before `dst` (there is no dictionary), so it never reads the buffer's
/// uninitialized bytes; on a malformed block it returns a negative number and nothing is
/// exposed. On success the first `n` bytes have all been written. It is about twice as fast
/// as `lz4_flex`'s safe decoder on a 4 KiB block (design.md#dependencies).
fn lz4_decode(payload: &[u8], out: &mut Vec<u8>) -> std::result::Result<(), String> {
    debug_assert!(out.is_empty());
    let capacity = i32::try_from(out.capacity()).unwrap_or(i32::MAX);
    let src_len = i32::try_from(payload.len()).map_err(|_| "payload above 2 GiB".to_string())?;
    // SAFETY: `src` is valid for `src_len` bytes and `dst` for `capacity` bytes of writes
    // (the vector's spare capacity, `out` being empty); the decoder stays inside both
    // (see above) and the two do not overlap (`out` is a distinct allocation).
    let n = unsafe {
        lz4_sys::LZ4_decompress_safe(
            payload.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            src_len,
            capacity,
        )
    };
    let n = usize::try_from(n).map_err(|_| "malformed LZ4 block".to_string())?;
    // SAFETY: `n` is at most `capacity` and the decoder wrote every byte of `[0, n)`.
    unsafe { out.set_len(n) };
    Ok(())
}

/// A zstd error code as an I/O error naming it.
fn zstd_error(code: usize) -> std::io::Error {
    std::io::Error::other(zstd_safe::get_error_name(code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::format::{frame_block, unframe_block, unframe_block_from, COMPRESSION_NONE};

    /// A compressible 4 KiB block: runs of repeated bytes.
    fn compressible() -> Vec<u8> {
        (0..4096u32).map(|i| (i / 5 % 7) as u8).collect()
    }

    /// Re-frames compressed `contents` of type `ctype` under a valid CRC.
    fn reframe(contents: &[u8], ctype: u8) -> Vec<u8> {
        let mut out = contents.to_vec();
        out.push(ctype);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn lz4_blocks_round_trip_through_both_unframe_paths() {
        let raw = compressible();
        let (framed, t) = frame_block(&raw, Compression::Lz4).unwrap();
        assert_eq!(t, COMPRESSION_LZ4);
        assert!(framed.len() < raw.len() / 4, "{}", framed.len());
        assert_eq!(unframe_block(framed.clone()).unwrap(), raw);
        assert_eq!(unframe_block_from(&framed, Vec::with_capacity).unwrap(), raw);
        // A recycled buffer holding stale bytes is cleared, not appended to.
        let stale = |n: usize| {
            let mut v = vec![0xAB; 100];
            v.reserve(n);
            v
        };
        assert_eq!(unframe_block_from(&framed, stale).unwrap(), raw);
        // An empty block and noise (stored raw: LZ4 cannot shrink it by 1/8).
        let (framed, _) = frame_block(&[], Compression::Lz4).unwrap();
        assert_eq!(unframe_block(framed).unwrap(), Vec::<u8>::new());
        let mut noise = vec![0u8; 1000];
        crate::rng::SplitMix64::new(3).fill(&mut noise);
        let (framed, t) = frame_block(&noise, Compression::Lz4).unwrap();
        assert_eq!((t, framed.len()), (COMPRESSION_NONE, 1005));
        assert_eq!(unframe_block(framed).unwrap(), noise);
    }

    #[test]
    fn a_claimed_length_beyond_what_the_payload_can_expand_to_is_corruption() {
        for compression in [Compression::Lz4, Compression::Zstd { level: 3 }] {
            let raw = compressible();
            let (framed, t) = frame_block(&raw, compression).unwrap();
            let contents = &framed[..framed.len() - 5];
            let mut pos = 0;
            get_varint32(contents, &mut pos, "t").unwrap();
            let payload = &contents[pos..];
            // 1 GiB + 1, just above the cap, the largest varint32, and a length just too big
            // for the payload's expansion bound: each is rejected before any allocation.
            let too_big = payload.len() * if t == COMPRESSION_LZ4 { 255 } else { 32_768 } + 1;
            for claimed in [(1u32 << 30) + 1, u32::MAX, too_big as u32] {
                let mut bad = Vec::new();
                put_varint32(&mut bad, claimed);
                bad.extend_from_slice(payload);
                let e = unframe_block(reframe(&bad, t)).unwrap_err();
                assert!(e.is_corruption(), "{compression:?} {claimed}: {e}");
            }
            // A length the payload could reach but does not decode to.
            for claimed in [raw.len() - 1, raw.len() + 1, 0] {
                let mut bad = Vec::new();
                put_varint32(&mut bad, claimed as u32);
                bad.extend_from_slice(payload);
                let e = unframe_block(reframe(&bad, t)).unwrap_err();
                assert!(e.is_corruption(), "{compression:?} {claimed}: {e}");
            }
        }
    }

    #[test]
    fn garbled_lz4_payloads_under_a_valid_checksum_never_panic() {
        let raw = compressible();
        let (framed, _) = frame_block(&raw, Compression::Lz4).unwrap();
        let contents = &framed[..framed.len() - 5];
        let mut rng = crate::rng::SplitMix64::new(17);
        let mut errors = 0;
        for round in 0..2000 {
            let mut bad = contents.to_vec();
            if round % 2 == 0 {
                // A few wrong bytes after the length: offsets, tokens and lengths go astray.
                for _ in 0..1 + rng.below(3) {
                    let at = 1 + rng.below(bad.len() as u64 - 1) as usize;
                    bad[at] = rng.next_u64() as u8;
                }
            } else {
                // Noise after a plausible length.
                let n = 1 + rng.below(200) as usize;
                bad.truncate(2);
                bad.resize(2 + n, 0);
                rng.fill(&mut bad[2..]);
            }
            match unframe_block(reframe(&bad, COMPRESSION_LZ4)) {
                Ok(out) => assert_eq!(out.len(), raw.len()),
                Err(e) => {
                    assert!(e.is_corruption(), "{e}");
                    errors += 1;
                }
            }
        }
        assert!(errors > 1000, "only {errors} of 2000 garbled blocks failed to decode");
    }
}
