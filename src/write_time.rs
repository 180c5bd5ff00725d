//! The write time a value of a TTL keyspace carries (design.md#ttl): its encoding (the last
//! [`WRITE_TIME_LEN`] bytes, little-endian milliseconds since the Unix epoch), the expiry test,
//! and the read-side rule every read path applies. Below the engine (the merge operands'
//! collection and the cursors use it), so it knows no database: `db::ttl` builds a [`ReadTtl`]
//! for a keyspace.

use crate::error::{Error, Result};

/// Bytes of the write time a value of a TTL keyspace carries at its end.
pub(crate) const WRITE_TIME_LEN: usize = 8;

/// Splits a TTL keyspace's stored value into the user's value and its write time.
pub(crate) fn split_time(stored: &[u8]) -> Result<(&[u8], u64)> {
    let Some(at) = stored.len().checked_sub(WRITE_TIME_LEN) else {
        return Err(Error::corruption(
            format!(
                "a value of a TTL keyspace has {} bytes, fewer than its {WRITE_TIME_LEN}-byte \
                 write time",
                stored.len()
            ),
            None,
        ));
    };
    let (value, time) = stored.split_at(at);
    let mut b = [0u8; WRITE_TIME_LEN];
    b.copy_from_slice(time);
    Ok((value, u64::from_le_bytes(b)))
}

/// Whether an entry written at `written` is past `ttl` at `now` (all ms).
pub(crate) fn expired_at(written: u64, ttl: u64, now: u64) -> bool {
    now.saturating_sub(written) >= ttl
}

/// A TTL keyspace's read state: its TTL and the time of the read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadTtl {
    pub ttl_ms: u64,
    pub now_ms: u64,
}

impl ReadTtl {
    /// Whether a stored value (with its time) is expired; an unreadable time is an error.
    pub fn expired(&self, stored: &[u8]) -> Result<bool> {
        let (_, t) = split_time(stored)?;
        Ok(expired_at(t, self.ttl_ms, self.now_ms))
    }

    /// Applies the expiry rule (module documentation) to a key's collected operands (newest
    /// first) and base: returns how many operands are live (those before the first expired
    /// one; the base goes with an expired operand), and drops an expired base.
    pub fn live_operands(&self, operands: &[Vec<u8>], base: &mut Option<Vec<u8>>) -> Result<usize> {
        for (i, o) in operands.iter().enumerate() {
            if self.expired(o)? {
                *base = None;
                return Ok(i);
            }
        }
        if let Some(b) = base {
            if self.expired(b)? {
                *base = None;
            }
        }
        Ok(operands.len())
    }
}

/// The value without its write time (in place).
pub(crate) fn strip(mut stored: Vec<u8>) -> Result<Vec<u8>> {
    let n = split_time(&stored)?.0.len();
    stored.truncate(n);
    Ok(stored)
}
