//! [`WalReader`] and [`read_wal`]: log recovery.
//!
//! The reader walks fragments in order and reassembles records. At the first bad fragment (at
//! offset `p`) it decides, by the rule of docs/format.md#wal, "Torn tail or
//! corruption"), whether the damage is a torn tail or corruption:
//! * *damaged* fragments (header cut off by end of file, payload cut off by end of file, checksum
//!   mismatch, non-zero block trailer) are a torn tail iff every byte after the damaged region up
//!   to the end of the file is zero (vacuously true when the region reaches the end);
//! * *impossible* fragments (a checksum-valid fragment of unknown type or out of sequence, a
//!   length that runs past its block) are always corruption: an interrupted append leaves a prefix
//!   of correct bytes or zeros, never these.
//!
//! A record whose fragments were all intact but whose LAST fragment never came is torn too.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use super::{fragment_crc, BLOCK_SIZE, FIRST, FULL, HEADER_SIZE, LAST, MIDDLE};
use crate::error::{Error, Result};
use crate::storage::RandomAccessFile;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What recovery found in a log.
#[derive(Debug, Default)]
pub struct WalRecovery {
    /// The complete records, in order.
    pub records: Vec<Vec<u8>>,
    /// Length of the valid prefix: the end offset of the last complete record.
    pub valid_len: u64,
    /// The file's length.
    pub file_len: u64,
    /// True when bytes after `valid_len` (a torn record, zero fill) were dropped; the caller may
    /// truncate the file to `valid_len`.
    pub torn_tail: bool,
}

/// Reads a whole log. Any damage other than a torn tail is [`Error::Corruption`] naming `path`
/// and the offset of the bad fragment.
pub fn read_wal(file: Arc<dyn RandomAccessFile>, path: &Path) -> Result<WalRecovery> {
    let mut reader = WalReader::new(file, path);
    let mut records = Vec::new();
    while let Some(record) = reader.next_record()? {
        records.push(record);
    }
    Ok(WalRecovery {
        records,
        valid_len: reader.valid_len(),
        file_len: reader.file_len,
        torn_tail: reader.torn_tail(),
    })
}

/// A fragment that failed its checks.
struct Bad {
    offset: u64,
    what: String,
    /// `Some(end)`: the fragment is damaged in a way an interrupted append can cause, and its
    /// damage ends at `end`; `None`: an interrupted append cannot produce it.
    damaged_until: Option<u64>,
}

/// An intact fragment: its type, where it starts and ends, and where its payload sits in the
/// block buffer.
struct Fragment {
    offset: u64,
    kind: u8,
    payload: std::ops::Range<usize>,
    end: u64,
}

/// Streams the records of a log, block by block.
pub struct WalReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    file_len: u64,
    /// The bytes of the block that starts at `block_start` (shorter for the last block).
    block: Vec<u8>,
    block_start: Option<u64>,
    /// Offset of the next fragment header.
    pos: u64,
    valid_len: u64,
    done: bool,
}

impl WalReader {
    /// A reader over the whole of `file`; `path` names it in errors.
    pub fn new(file: Arc<dyn RandomAccessFile>, path: &Path) -> WalReader {
        let file_len = file.len();
        WalReader {
            file,
            path: path.to_path_buf(),
            file_len,
            block: Vec::with_capacity(BLOCK_SIZE),
            block_start: None,
            pos: 0,
            valid_len: 0,
            done: false,
        }
    }

    /// The next complete record; `None` at the end of the valid prefix.
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        let mut record: Option<Vec<u8>> = None;
        while !self.done {
            let frag = match self.next_fragment()? {
                Ok(Some(frag)) => frag,
                Ok(None) => break, // clean end of file; an unfinished record is torn
                Err(bad) => {
                    self.settle(bad)?;
                    break;
                }
            };
            // `next_fragment` cut the payload range from this block.
            let payload = self.block.get(frag.payload.clone()).unwrap_or_default();
            match (frag.kind, record.as_mut()) {
                (FULL, None) => {
                    self.valid_len = frag.end;
                    return Ok(Some(payload.to_vec()));
                }
                (FIRST, None) => record = Some(payload.to_vec()),
                (MIDDLE, Some(r)) => r.extend_from_slice(payload),
                (LAST, Some(r)) => {
                    r.extend_from_slice(payload);
                    self.valid_len = frag.end;
                    return Ok(record);
                }
                (kind, open) => {
                    let state = if open.is_some() { "inside" } else { "outside" };
                    return Err(self.corrupt(
                        format!("log fragment of type {kind} {state} a record"),
                        frag.offset,
                    ));
                }
            }
        }
        self.done = true;
        Ok(None)
    }

    /// End offset of the last complete record returned so far.
    pub fn valid_len(&self) -> u64 {
        self.valid_len
    }

    /// After `next_record` returned `None`: whether bytes after [`WalReader::valid_len`] were
    /// dropped as a torn tail.
    pub fn torn_tail(&self) -> bool {
        self.done && self.valid_len < self.file_len
    }

    fn corrupt(&self, what: String, offset: u64) -> Error {
        Error::corruption(what, Some(offset)).in_file(&self.path, 0)
    }

    /// Decides whether a bad fragment is a torn tail (Ok: stop reading) or corruption.
    fn settle(&mut self, bad: Bad) -> Result<()> {
        match bad.damaged_until {
            Some(end) if self.zeros_from(end)? => Ok(()),
            Some(_) => Err(self.corrupt(format!("{} followed by more data", bad.what), bad.offset)),
            None => Err(self.corrupt(bad.what, bad.offset)),
        }
    }

    /// Whether every byte from `from` to the end of the file is zero.
    fn zeros_from(&self, from: u64) -> Result<bool> {
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut at = from;
        while at < self.file_len {
            let n = (self.file_len - at).min(BLOCK_SIZE as u64) as usize;
            let Some(chunk) = buf.get_mut(..n) else { break };
            self.file.read_exact_at(at, chunk)?;
            if chunk.iter().any(|&b| b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }

    /// Makes `self.block` hold the block containing `self.pos`.
    fn load_block(&mut self) -> Result<u64> {
        let start = self.pos / BLOCK_SIZE as u64 * BLOCK_SIZE as u64;
        if self.block_start != Some(start) {
            let n = (self.file_len - start).min(BLOCK_SIZE as u64) as usize;
            self.block.resize(n, 0);
            self.block_start = None;
            self.file.read_exact_at(start, &mut self.block)?;
            self.block_start = Some(start);
        }
        Ok(start)
    }

    /// The next intact fragment (`Ok(None)` at a clean end of file), or the bad one.
    fn next_fragment(&mut self) -> Result<std::result::Result<Option<Fragment>, Bad>> {
        loop {
            let p = self.pos;
            if p >= self.file_len {
                return Ok(Ok(None));
            }
            let start = self.load_block()?;
            let block_end = start + BLOCK_SIZE as u64;
            let at = (p - start) as usize;
            if block_end - p < HEADER_SIZE as u64 {
                let trailer_end = block_end.min(self.file_len);
                let trailer = self.block.get(at..).unwrap_or_default();
                if trailer.iter().any(|&b| b != 0) {
                    let what = "non-zero block trailer".to_string();
                    return Ok(Err(Bad { offset: p, what, damaged_until: Some(trailer_end) }));
                }
                self.pos = block_end;
                continue;
            }
            let bytes = self.block.get(at..).unwrap_or_default();
            let Some(header) = bytes.first_chunk::<HEADER_SIZE>() else {
                let what = "log fragment header cut off by end of file".to_string();
                return Ok(Err(Bad { offset: p, what, damaged_until: Some(self.file_len) }));
            };
            let [c0, c1, c2, c3, l0, l1, kind] = *header;
            let stored_crc = u32::from_le_bytes([c0, c1, c2, c3]);
            let len = u16::from_le_bytes([l0, l1]) as usize;
            let end = p + (HEADER_SIZE + len) as u64;
            if end > block_end {
                let what = format!("log fragment length {len} runs past its block");
                return Ok(Err(Bad { offset: p, what, damaged_until: None }));
            }
            if end > self.file_len {
                let what = format!("log fragment of {len} bytes cut off by end of file");
                return Ok(Err(Bad { offset: p, what, damaged_until: Some(self.file_len) }));
            }
            let payload = at + HEADER_SIZE..at + HEADER_SIZE + len;
            let payload_bytes = self.block.get(payload.clone()).unwrap_or_default();
            if fragment_crc(&[l0, l1, kind], payload_bytes) != stored_crc {
                let what = "log fragment checksum mismatch".to_string();
                return Ok(Err(Bad { offset: p, what, damaged_until: Some(end) }));
            }
            if !(FULL..=LAST).contains(&kind) {
                let what = format!("unknown log fragment type {kind}");
                return Ok(Err(Bad { offset: p, what, damaged_until: None }));
            }
            self.pos = end;
            return Ok(Ok(Some(Fragment { offset: p, kind, payload, end })));
        }
    }
}
