//! [`WalWriter`]: appends records in the block format of docs/format.md#wal.

use super::{fragment_crc, BLOCK_SIZE, FIRST, FULL, HEADER_SIZE, LAST, MIDDLE};
use crate::error::{Error, Result};
use crate::storage::WritableFile;

/// Appends records to a log file.
///
/// Each `add_record` is a single `append` of all the record's fragments (and any block padding
/// before them), so a crash leaves at most one record torn. After any failed append or sync the
/// writer refuses further work ([`Error::ReadOnly`]): the file may end inside a record, and a
/// record written after that point would turn a droppable torn tail into mid-log corruption;
/// after a failed sync, durability is unknown and must not be retried (storage rule 3).
pub struct WalWriter {
    file: Box<dyn WritableFile>,
    /// Logical end of the log (bytes appended so far), so `offset % BLOCK_SIZE` is the position
    /// inside the current block.
    offset: u64,
    /// Description of the first failure, once one happened.
    failed: Option<String>,
    /// Reused buffer for one record's bytes.
    buf: Vec<u8>,
    /// Set by `close`: no more records (a sync is still allowed).
    closed: bool,
}

impl std::fmt::Debug for WalWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalWriter")
            .field("offset", &self.offset)
            .field("failed", &self.failed)
            .finish()
    }
}

impl WalWriter {
    /// A writer appending to `file` from its current length (normally a freshly created, empty
    /// file).
    pub fn new(file: Box<dyn WritableFile>) -> WalWriter {
        let offset = file.len();
        WalWriter { file, offset, failed: None, buf: Vec::new(), closed: false }
    }

    /// Appends one record (any length, including 0) and returns the log's end offset after it.
    /// The record is durable only after [`WalWriter::sync`].
    pub fn add_record(&mut self, payload: &[u8]) -> Result<u64> {
        self.check_healthy()?;
        if self.closed {
            return Err(Error::invalid("add_record on a closed log".to_string()));
        }
        self.buf.clear();
        let mut pos = self.offset;
        let mut rest = payload;
        let mut first = true;
        loop {
            let room = BLOCK_SIZE - (pos % BLOCK_SIZE as u64) as usize;
            if room < HEADER_SIZE {
                // Too small for a header: zero-fill the block's trailer.
                self.buf.resize(self.buf.len() + room, 0);
                pos += room as u64;
                continue;
            }
            let take = rest.len().min(room - HEADER_SIZE);
            let last = take == rest.len();
            let kind = match (first, last) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, false) => MIDDLE,
                (false, true) => LAST,
            };
            let (fragment, tail) = rest.split_at(take);
            let mut len_and_type = [0u8; 3];
            len_and_type[..2].copy_from_slice(&(take as u16).to_le_bytes());
            len_and_type[2] = kind;
            let crc = fragment_crc(&len_and_type, fragment);
            self.buf.extend_from_slice(&crc.to_le_bytes());
            self.buf.extend_from_slice(&len_and_type);
            self.buf.extend_from_slice(fragment);
            pos += (HEADER_SIZE + take) as u64;
            rest = tail;
            first = false;
            if last {
                break;
            }
        }
        if let Err(e) = self.file.append(&self.buf) {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        self.offset = pos;
        Ok(pos)
    }

    /// Makes every record added so far durable.
    pub fn sync(&mut self) -> Result<()> {
        self.check_healthy()?;
        self.file.sync().inspect_err(|e| self.failed = Some(e.to_string()))
    }

    /// Ends the log: no more records; the file is cut to the log's length (durable after the
    /// next [`WalWriter::sync`]). Called when the log is rotated out.
    pub fn close(&mut self) -> Result<()> {
        self.check_healthy()?;
        self.closed = true;
        self.file.close().inspect_err(|e| self.failed = Some(e.to_string()))
    }

    /// A writer whose every append fails with [`Error::ReadOnly`] carrying `why`, while
    /// `close` and `sync` succeed (they have nothing to make durable): the log of a database
    /// opened read-only, which `Db::close` closes and syncs like any other.
    pub(crate) fn read_only(why: &str) -> WalWriter {
        WalWriter::new(Box::new(RefusingFile(why.to_string())))
    }

    #[cfg(test)]
    /// The log's end offset (its length once every append has reached the file).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn check_healthy(&self) -> Result<()> {
        match &self.failed {
            Some(why) => Err(Error::ReadOnly(format!("log writer failed earlier: {why}"))),
            None => Ok(()),
        }
    }
}

/// An empty file that refuses appends (the log behind [`WalWriter::read_only`]).
struct RefusingFile(String);

impl WritableFile for RefusingFile {
    fn append(&mut self, _data: &[u8]) -> Result<()> {
        Err(Error::ReadOnly(self.0.clone()))
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}
