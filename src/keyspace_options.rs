//! [`KeyspaceOptions`]: what each keyspace chooses for its own files, their validation, the
//! keyspace name rules, and the options' encoding inside the manifest's keyspace edit
//! (design.md, "Keyspaces" and "Manifest").
//!
//! ```text
//! options := filter_kind:u8 bits_per_key:f64 LE compression:u8 zstd_level:i32 LE block_size:u32 LE
//! filter_kind := 0 none | 1 two-bit Bloom | 2 blocked Bloom | 3 standard Bloom
//! compression := 0 none | 1 zstd (zstd_level 1..=22) | 2 LZ4     (18 bytes in all)
//! ```
//! `bits_per_key` is 0 for no filter; `zstd_level` is 0 unless the compression is zstd.

use crate::error::{Error, Result};
use crate::options::{Compression, FilterConfig, Options};
use crate::options_validate::{BITS_PER_KEY_MAX, BLOCK_SIZE_RANGE, ZSTD_LEVEL_RANGE};

/// Name of keyspace 0, which holds everything `Db`'s own methods read and write.
pub const DEFAULT_KEYSPACE_NAME: &str = "default";
/// Longest keyspace name, in bytes.
pub const MAX_KEYSPACE_NAME_LEN: usize = 255;
/// Names starting with this are reserved for siftdb's own keyspaces (the query layer's tables).
pub const RESERVED_PREFIX: &str = "__";
/// Bytes of the encoded options.
pub const ENCODED_LEN: usize = 18;

/// The options of one keyspace: every file of the keyspace is written with them (flush and
/// compaction outputs alike). They are persisted in the manifest, so a background compaction of
/// a keyspace not opened since the database was reopened still uses them.
///
/// `filter` is the filter of the keyspace's flushed (L0) files. Compaction outputs get the
/// database's static filter family and per-level allocation ([`crate::options::FilterPolicy`]),
/// or no filter at all when `filter` is [`FilterConfig::None`] (a keyspace only ever scanned
/// then carries no filter memory). The default keyspace takes all of this from [`Options`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyspaceOptions {
    /// Filter of the keyspace's flushed files (see the type's documentation).
    pub filter: FilterConfig,
    /// Data block compression of every file of the keyspace.
    pub compression: Compression,
    /// Target uncompressed data block size of the keyspace's files (64..=256 MiB).
    pub block_size: usize,
}

impl Default for KeyspaceOptions {
    /// The defaults of [`Options`].
    fn default() -> Self {
        KeyspaceOptions::from(&Options::default())
    }
}

impl From<&Options> for KeyspaceOptions {
    /// The flush filter, compression (of level 0) and block size of `opts`.
    fn from(opts: &Options) -> Self {
        KeyspaceOptions {
            filter: opts.filter_policy.flush,
            compression: opts.compression_for_level(0),
            block_size: opts.block_size,
        }
    }
}

fn out_of_range(field: &str, value: impl std::fmt::Display, range: &str) -> Error {
    Error::invalid(format!("keyspace {field} = {value} is out of range (valid: {range})"))
}

impl KeyspaceOptions {
    /// Checks every field as [`Options::validate`] checks its counterpart; the error names the
    /// field, the value and the valid range.
    pub fn validate(&self) -> Result<()> {
        if !BLOCK_SIZE_RANGE.contains(&self.block_size) {
            let range = format!("{}..={}", BLOCK_SIZE_RANGE.start(), BLOCK_SIZE_RANGE.end());
            return Err(out_of_range("block_size", self.block_size, &range));
        }
        if let Compression::Zstd(level) = self.compression {
            if !ZSTD_LEVEL_RANGE.contains(&level) {
                return Err(out_of_range("compression Zstd level", level, "1..=22"));
            }
        }
        let bits = self.filter.bits_per_key();
        if self.filter != FilterConfig::None
            && !(bits.is_finite() && bits > 0.0 && bits <= BITS_PER_KEY_MAX)
        {
            return Err(out_of_range("filter.bits_per_key", bits, "(0, 64]; use None for 0"));
        }
        Ok(())
    }

    /// The encoding of the module documentation.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENCODED_LEN);
        let kind = match self.filter {
            FilterConfig::None => 0u8,
            FilterConfig::TwoBitBloom { .. } => 1,
            FilterConfig::BlockedBloom { .. } => 2,
            FilterConfig::StandardBloom { .. } => 3,
        };
        out.push(kind);
        out.extend_from_slice(&self.filter.bits_per_key().to_le_bytes());
        let (c, level) = match self.compression {
            Compression::None => (0u8, 0i32),
            Compression::Zstd(l) => (1, l),
            Compression::Lz4 => (2, 0),
        };
        out.push(c);
        out.extend_from_slice(&level.to_le_bytes());
        out.extend_from_slice(&(self.block_size as u32).to_le_bytes());
        out
    }

    /// Decodes and validates options; anything wrong is [`Error::Corruption`] naming the field.
    pub fn decode(bytes: &[u8]) -> Result<KeyspaceOptions> {
        let bad = |what: String| Error::corruption(format!("keyspace options: {what}"), None);
        if bytes.len() != ENCODED_LEN {
            return Err(bad(format!("{} bytes, expected {ENCODED_LEN}", bytes.len())));
        }
        let bits = f64::from_le_bytes(bytes[1..9].try_into().expect("8 bytes"));
        let filter = match bytes[0] {
            0 => FilterConfig::None,
            1 => FilterConfig::TwoBitBloom { bits_per_key: bits },
            2 => FilterConfig::BlockedBloom { bits_per_key: bits },
            3 => FilterConfig::StandardBloom { bits_per_key: bits },
            k => return Err(bad(format!("filter kind {k} is unknown"))),
        };
        let level = i32::from_le_bytes(bytes[10..14].try_into().expect("4 bytes"));
        let compression = match bytes[9] {
            0 => Compression::None,
            1 => Compression::Zstd(level),
            2 => Compression::Lz4,
            c => return Err(bad(format!("compression {c} is unknown"))),
        };
        let block_size = u32::from_le_bytes(bytes[14..18].try_into().expect("4 bytes")) as usize;
        let opts = KeyspaceOptions { filter, compression, block_size };
        opts.validate().map_err(|e| bad(e.to_string()))?;
        Ok(opts)
    }
}

/// Checks a keyspace name: 1..=255 bytes (it is a `&str`, so UTF-8). `reserved_ok` admits the
/// `__` prefix (siftdb's own keyspaces). The error names the field and the rule.
pub fn validate_name(name: &str, reserved_ok: bool) -> Result<()> {
    if name.is_empty() || name.len() > MAX_KEYSPACE_NAME_LEN {
        return Err(Error::invalid(format!(
            "keyspace name of {} bytes is out of range (valid: 1..={MAX_KEYSPACE_NAME_LEN} bytes)",
            name.len()
        )));
    }
    if !reserved_ok && name.starts_with(RESERVED_PREFIX) {
        return Err(Error::invalid(format!(
            "keyspace name {name:?} starts with {RESERVED_PREFIX:?}, which siftdb reserves"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_through_their_encoding() {
        let all = [
            KeyspaceOptions::default(),
            KeyspaceOptions {
                filter: FilterConfig::BlockedBloom { bits_per_key: 9.5 },
                compression: Compression::Zstd(7),
                block_size: 16 << 10,
            },
            KeyspaceOptions {
                filter: FilterConfig::None,
                compression: Compression::Lz4,
                block_size: 64,
            },
            KeyspaceOptions {
                filter: FilterConfig::StandardBloom { bits_per_key: 64.0 },
                compression: Compression::None,
                block_size: 256 << 20,
            },
        ];
        for o in all {
            let bytes = o.encode();
            assert_eq!(bytes.len(), ENCODED_LEN);
            assert_eq!(KeyspaceOptions::decode(&bytes).unwrap(), o);
        }
    }

    #[test]
    fn bad_encodings_are_corruption_naming_the_field() {
        let good = KeyspaceOptions::default().encode();
        for len in 0..good.len() {
            assert!(KeyspaceOptions::decode(&good[..len]).unwrap_err().is_corruption());
        }
        let mut bad = good.clone();
        bad[0] = 9;
        assert!(KeyspaceOptions::decode(&bad).unwrap_err().to_string().contains("filter kind"));
        let mut bad = good.clone();
        bad[14..18].copy_from_slice(&1u32.to_le_bytes());
        assert!(KeyspaceOptions::decode(&bad).unwrap_err().to_string().contains("block_size"));
        let mut bad = good;
        bad[1..9].copy_from_slice(&f64::NAN.to_le_bytes());
        assert!(KeyspaceOptions::decode(&bad).unwrap_err().to_string().contains("bits_per_key"));
    }

    #[test]
    fn names_are_checked_for_length_and_the_reserved_prefix() {
        assert!(validate_name("events", false).is_ok());
        assert!(validate_name(&"x".repeat(255), false).is_ok());
        assert!(validate_name("", false).unwrap_err().to_string().contains("keyspace name"));
        assert!(validate_name(&"x".repeat(256), false).is_err());
        assert!(validate_name("__query/t", false).unwrap_err().to_string().contains("reserves"));
        assert!(validate_name("__query/t", true).is_ok());
    }
}
