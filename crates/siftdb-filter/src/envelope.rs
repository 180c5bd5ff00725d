//! The one serialization every filter shares: a self-describing envelope around a kind-specific
//! parameter block and payload. The byte layout is specified in docs/format.md#filter-encoding;
//! this file implements it and must agree with it.
//!
//! ```text
//! filter   := header params pad payload crc32
//! header   := magic:"SFLT" version:u8 kind:u8 params_len:u16 payload_len:u64      (16 bytes)
//! params   := params_len bytes, kind specific
//! pad      := zero bytes up to the next multiple of 8 (so the payload starts 8-aligned)
//! payload  := payload_len bytes, kind specific (little-endian words)
//! crc32    := u32, CRC-32 (IEEE, crc32fast) of every preceding byte
//! ```
//!
//! Readers ([`decode`]) borrow the input: a filter view probes the payload in place, without a
//! copy. Every length is checked against the bytes available before it is used, and the checksum
//! is verified before any field is trusted, so truncated, corrupt or foreign input is a typed
//! error, never a panic.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::error::{FilterError, Result};
use crate::FilterKind;
use std::marker::PhantomData;

/// First four bytes of every serialized filter.
pub const MAGIC: [u8; 4] = *b"SFLT";
/// Version of the envelope. Bumped only if the header or trailer layout changes; a filter's own
/// encoding changes get a new kind tag instead.
pub const FORMAT_VERSION: u8 = 1;
/// Bytes before the parameter block.
pub const HEADER_LEN: usize = 16;
/// Bytes after the payload (the CRC).
pub const TRAILER_LEN: usize = 4;

/// A decoded envelope: the kind and borrowed slices of parameters and payload.
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    /// The filter kind named by the tag.
    pub kind: FilterKind,
    /// The kind-specific parameter block.
    pub params: &'a [u8],
    /// The kind-specific payload, starting at an 8-aligned offset of the encoding.
    pub payload: &'a [u8],
}

/// Serializes a filter: `params` verbatim, then the payload written by `write_payload`.
pub fn encode(
    kind: FilterKind,
    params: &[u8],
    write_payload: impl FnOnce(&mut Vec<u8>),
) -> Vec<u8> {
    assert!(params.len() <= u16::MAX as usize, "filter params exceed u16 length");
    let params_padded = params.len().div_ceil(8) * 8;
    let mut out = Vec::with_capacity(HEADER_LEN + params_padded + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.push(FORMAT_VERSION);
    out.push(kind.tag());
    out.extend_from_slice(&(params.len() as u16).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // payload length, patched below
    out.extend_from_slice(params);
    out.resize(HEADER_LEN + params_padded, 0);
    let payload_start = out.len();
    write_payload(&mut out);
    let payload_len = (out.len() - payload_start) as u64;
    // The header written above holds the length field at bytes 8..16.
    if let Some(field) = out.get_mut(8..HEADER_LEN) {
        field.copy_from_slice(&payload_len.to_le_bytes());
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads the envelope of a serialized filter, verifying magic, version, lengths and checksum.
///
/// Returns [`FilterError::UnknownKind`] for a well-formed filter of a kind this build does not
/// know (the engine treats those as "may contain"), and [`FilterError::Corruption`] for anything else
/// that is wrong. The input must be exactly one filter.
pub fn decode(bytes: &[u8]) -> Result<Envelope<'_>> {
    let split = bytes.split_last_chunk::<TRAILER_LEN>().and_then(|(body, crc)| {
        let (header, rest) = body.split_first_chunk::<HEADER_LEN>()?;
        Some((body, header, rest, crc))
    });
    let Some((body, header, rest, stored)) = split else {
        return Err(corrupt(
            format!("filter truncated: {} bytes, need at least 20", bytes.len()),
            0,
        ));
    };
    if header[0..4] != MAGIC {
        return Err(corrupt("filter magic is not \"SFLT\"", 0));
    }
    let version = header[4];
    if version != FORMAT_VERSION {
        return Err(corrupt(format!("filter envelope version {version} is not supported"), 4));
    }
    let tag = header[5];
    let params_len = u16::from_le_bytes([header[6], header[7]]) as usize;
    let payload_len = u64::from_le_bytes([
        header[8], header[9], header[10], header[11], header[12], header[13], header[14],
        header[15],
    ]);
    let params_padded = params_len.div_ceil(8) * 8;
    // The header's lengths must account for every byte between header and trailer.
    let split = rest
        .split_at_checked(params_padded)
        .and_then(|(padded, payload)| Some((padded.split_at_checked(params_len)?, payload)));
    let ((params, pad), payload) = match split {
        Some((params, payload)) if payload.len() as u64 == payload_len => (params, payload),
        _ => {
            return Err(corrupt(
                format!(
                    "filter length mismatch: header says params {params_len} + payload \
                     {payload_len} bytes, input has {} bytes",
                    bytes.len()
                ),
                6,
            ))
        }
    };
    let stored = u32::from_le_bytes(*stored);
    let actual = crc32fast::hash(body);
    if stored != actual {
        return Err(corrupt(
            format!("filter checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"),
            body.len() as u64,
        ));
    }
    let kind = FilterKind::from_tag(tag).ok_or(FilterError::UnknownKind(tag))?;
    if pad.iter().any(|&b| b != 0) {
        return Err(corrupt("filter params padding is not zero", (HEADER_LEN + params_len) as u64));
    }
    Ok(Envelope { kind, params, payload })
}

/// The kind tag of one serialized filter, after the envelope decoder checked its envelope (magic, version,
/// lengths, checksum). A tag this build does not know is returned, not an error: a writer that
/// records the tag (an SST's properties) records it as it is.
pub fn kind_tag(bytes: &[u8]) -> Result<u8> {
    match decode(bytes) {
        Ok(env) => Ok(env.kind.tag()),
        Err(FilterError::UnknownKind(tag)) => Ok(tag),
        Err(e) => Err(e),
    }
}

/// Decodes an envelope and checks it holds the `expected` kind.
pub fn decode_kind(bytes: &[u8], expected: FilterKind) -> Result<Envelope<'_>> {
    let env = decode(bytes)?;
    if env.kind != expected {
        return Err(FilterError::invalid(format!(
            "expected a {} filter, found {}",
            expected.name(),
            env.kind.name()
        )));
    }
    Ok(env)
}

fn corrupt(what: impl Into<String>, offset: u64) -> FilterError {
    FilterError::corruption(what, Some(offset))
}

/// Builds a parameter block field by field (little-endian).
#[derive(Debug, Default)]
pub struct ParamWriter {
    buf: Vec<u8>,
}

impl ParamWriter {
    /// An empty parameter block.
    pub fn new() -> ParamWriter {
        ParamWriter::default()
    }
    /// Appends a byte.
    pub fn u8(mut self, v: u8) -> Self {
        self.buf.push(v);
        self
    }
    /// Appends a u16.
    pub fn u16(mut self, v: u16) -> Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a u32.
    pub fn u32(mut self, v: u32) -> Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a u64.
    pub fn u64(mut self, v: u64) -> Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends an f64 (IEEE-754 bits, little-endian).
    pub fn f64(self, v: f64) -> Self {
        self.u64(v.to_bits())
    }
    /// The finished block.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads a parameter block field by field; every read names its field so a short or malformed
/// block produces an error that says which field was missing or wrong.
#[derive(Debug)]
pub struct ParamReader<'a> {
    buf: &'a [u8],
    pos: usize,
    kind: FilterKind,
}

impl<'a> ParamReader<'a> {
    /// A reader over the params of `env`.
    pub fn new(env: &Envelope<'a>) -> ParamReader<'a> {
        ParamReader { buf: env.params, pos: 0, kind: env.kind }
    }

    fn take<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        let Some(bytes) = self.buf.get(self.pos..).and_then(<[u8]>::first_chunk::<N>) else {
            return Err(corrupt(
                format!("{} params truncated reading {field}", self.kind.name()),
                (HEADER_LEN + self.pos) as u64,
            ));
        };
        self.pos += N;
        Ok(*bytes)
    }
    /// Reads a byte.
    pub fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(u8::from_le_bytes(self.take(field)?))
    }
    /// Reads a u16.
    pub fn u16(&mut self, field: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(field)?))
    }
    /// Reads a u32.
    pub fn u32(&mut self, field: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(field)?))
    }
    /// Reads a u64.
    pub fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(field)?))
    }
    /// Reads an f64.
    pub fn f64(&mut self, field: &str) -> Result<f64> {
        Ok(f64::from_bits(self.u64(field)?))
    }
    /// Fails unless every parameter byte was consumed (a longer block is a different encoding).
    pub fn finish(self) -> Result<()> {
        if self.pos != self.buf.len() {
            return Err(corrupt(
                format!(
                    "{} params have {} unexpected trailing bytes",
                    self.kind.name(),
                    self.buf.len() - self.pos
                ),
                (HEADER_LEN + self.pos) as u64,
            ));
        }
        Ok(())
    }
    /// A corruption error about a parameter value (e.g. "probes = 0").
    pub fn invalid(&self, what: impl std::fmt::Display) -> FilterError {
        corrupt(format!("{} params: {what}", self.kind.name()), HEADER_LEN as u64)
    }
}

/// A fixed-width unsigned integer stored little-endian in a payload.
pub trait Word: Copy + Default + Eq + std::fmt::Debug + Send + Sync + 'static {
    /// Width in bytes.
    const BYTES: usize;
    /// Reads one word from exactly `Self::BYTES` bytes.
    fn read_le(b: &[u8]) -> Self;
    /// Appends the word's little-endian bytes.
    fn write_le(self, out: &mut Vec<u8>);
}

macro_rules! impl_word {
    ($t:ty) => {
        impl Word for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn read_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("word width"))
            }
            #[inline(always)]
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
impl_word!(u8);
impl_word!(u16);
impl_word!(u32);
impl_word!(u64);

/// Indexed read access to a sequence of words, implemented both by owned slices (`[W]`) and by
/// borrowed little-endian payload bytes ([`LeWords`]), so one probe function serves the owned
/// filter and its zero-copy view.
pub trait Words<W: Word> {
    /// Number of words.
    fn word_count(&self) -> usize;
    /// Word `i`; `i < word_count()`.
    fn word(&self, i: usize) -> W;
}

impl<W: Word> Words<W> for [W] {
    #[inline(always)]
    fn word_count(&self) -> usize {
        self.len()
    }
    // Probe hot path: `i < word_count()` is the caller's contract, and the bounds check stays
    // the only guard (no `get` and branch per probe).
    #[allow(clippy::indexing_slicing)]
    #[inline(always)]
    fn word(&self, i: usize) -> W {
        self[i]
    }
}

/// A borrowed payload read as little-endian words of type `W`, without copying.
#[derive(Debug, Clone, Copy)]
pub struct LeWords<'a, W> {
    bytes: &'a [u8],
    _w: PhantomData<W>,
}

impl<'a, W: Word> LeWords<'a, W> {
    /// Views `bytes` as exactly `count` words; fails if the length is not `count * W::BYTES`.
    pub fn new(bytes: &'a [u8], count: u64, what: &str) -> Result<LeWords<'a, W>> {
        let expected = count.checked_mul(W::BYTES as u64);
        if expected != Some(bytes.len() as u64) {
            return Err(FilterError::corruption(
                format!(
                    "{what}: payload is {} bytes, parameters imply {count} words of {} bytes",
                    bytes.len(),
                    W::BYTES
                ),
                None,
            ));
        }
        Ok(LeWords { bytes, _w: PhantomData })
    }

    /// Pointer to word `i`, for prefetching.
    #[allow(clippy::indexing_slicing)] // probe hot path, as `Words::word`
    #[inline(always)]
    pub fn ptr(&self, i: usize) -> *const u8 {
        self.bytes[i * W::BYTES..].as_ptr()
    }

    /// Copies the words out (used to turn a view into an owned filter).
    pub fn to_vec(self) -> Vec<W> {
        self.bytes.chunks_exact(W::BYTES).map(W::read_le).collect()
    }
}

impl<W: Word> Words<W> for LeWords<'_, W> {
    #[inline(always)]
    fn word_count(&self) -> usize {
        self.bytes.len() / W::BYTES
    }
    #[allow(clippy::indexing_slicing)] // probe hot path, as `Words::word` for `[W]`
    #[inline(always)]
    fn word(&self, i: usize) -> W {
        W::read_le(&self.bytes[i * W::BYTES..(i + 1) * W::BYTES])
    }
}

/// Appends words to a payload, little-endian.
pub fn write_words<W: Word>(words: &[W], out: &mut Vec<u8>) {
    out.reserve(words.len() * W::BYTES);
    for w in words {
        w.write_le(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let params = ParamWriter::new().u64(128).u32(3).finish();
        encode(FilterKind::StandardBloom, &params, |out| write_words(&[1u64, 2u64], out))
    }

    #[test]
    fn envelope_round_trips_and_pads_payload_to_8() {
        let bytes = sample();
        let env = decode(&bytes).unwrap();
        assert_eq!(env.kind, FilterKind::StandardBloom);
        assert_eq!(env.params.len(), 12);
        assert_eq!(env.payload.len(), 16);
        let payload_offset = env.payload.as_ptr() as usize - bytes.as_ptr() as usize;
        assert_eq!(payload_offset % 8, 0);
        let mut r = ParamReader::new(&env);
        assert_eq!(r.u64("bits").unwrap(), 128);
        assert_eq!(r.u32("probes").unwrap(), 3);
        r.finish().unwrap();
        let words = LeWords::<u64>::new(env.payload, 2, "test").unwrap();
        assert_eq!(words.word(1), 2);
    }

    #[test]
    fn every_truncation_is_rejected() {
        let bytes = sample();
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len]).unwrap_err().is_corruption(), "len {len}");
        }
    }

    #[test]
    fn every_single_byte_flip_is_rejected() {
        let bytes = sample();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            let err = decode(&b).unwrap_err();
            assert!(err.is_corruption(), "flip at {i}: {err}");
        }
    }

    #[test]
    fn unknown_kind_with_valid_checksum_is_reported_as_unknown() {
        let mut bytes = sample();
        bytes[5] = 250;
        let n = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..n]);
        bytes[n..].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(decode(&bytes), Err(FilterError::UnknownKind(250))));
    }

    #[test]
    fn param_reader_names_the_missing_field() {
        let bytes = sample();
        let env = decode(&bytes).unwrap();
        let mut r = ParamReader::new(&env);
        r.u64("bits").unwrap();
        r.u32("probes").unwrap();
        let err = r.u32("seed").unwrap_err();
        assert!(err.to_string().contains("seed"), "{err}");
    }

    #[test]
    fn payload_length_must_match_word_count() {
        assert!(LeWords::<u64>::new(&[0u8; 15], 2, "x").is_err());
        assert!(LeWords::<u64>::new(&[0u8; 16], 3, "x").is_err());
        assert!(LeWords::<u64>::new(&[0u8; 16], u64::MAX, "x").is_err());
    }
}
