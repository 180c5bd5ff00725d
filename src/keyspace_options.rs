//! [`KeyspaceOptions`]: what each keyspace chooses for its own files, their validation, the
//! keyspace name rules, and the options' encoding inside the manifest's keyspace edit
//! (design.md#keyspaces and "Manifest").
//!
//! ```text
//! options     := policy compression:u8 zstd_level:i32 LE block_size:u32 LE
//! policy      := flush_kind:u8 flush_bits:f64 LE static_kind:u8 allocation
//! flush_kind  := 0 none | 1 two-bit Bloom | 2 blocked Bloom | 3 standard Bloom
//! static_kind := 0 none | 1 ribbon | 2 binary fuse 8 | 3 binary fuse 16 | 4 xor 8 | 5 xor 16
//!              | 6 blocked Bloom | 7 standard Bloom | 8 4-wise binary fuse 8
//!              | 9 4-wise binary fuse 16 | 10 packed binary fuse | 11 bumped ribbon
//! allocation  := kind:u8 (+ 0x80: optimize_filters_for_hits) then by kind:
//!                0 count:u8 budget{count}        per level, L1 first (the last one repeats)
//!              | 1 bits_per_key:f64 LE            Monkey
//!              | 2 bits_per_key:f64 LE            over all runs, L0 included
//!              | 3 bits_per_key:f64 LE            over all runs, skew-aware
//! budget      := 0 fpr:f64 LE | 1 bits_per_key:f64 LE
//! compression := 0 none | 1 zstd (zstd_level 1..=22) | 2 LZ4
//! lifecycle   := ttl_ms:u64 LE name_len:u8 filter_name{name_len}    (optional, last)
//! ```
//! `lifecycle` (design.md#ttl) is written only when the keyspace has a TTL or a compaction
//! filter: `ttl_ms` 0 means no TTL (values carry no write time), `filter_name` is the filter's
//! name (UTF-8, empty: none). Options without them encode as before.
//! `flush_bits` is 0 for no flush filter; `zstd_level` is 0 unless the compression is zstd. The
//! options must be consumed exactly. Kind 3 and the 0x80 flag are newer than kinds 0-2;
//! options without them encode as before, so an older build still opens them and refuses the
//! new ones as an unknown allocation (docs/format.md#manifest).

use crate::coding::Cursor;
use crate::error::{Error, Result};
use crate::options::{
    Compression, FilterAllocation, FilterConfig, FilterPolicy, LevelBudget, Options,
    StaticFilterKind,
};
use crate::options_validate::{BLOCK_SIZE_RANGE, MAX_LEVEL_BUDGETS, ZSTD_LEVEL_RANGE};

use crate::compaction_filter::{SharedCompactionFilter, MAX_TTL_MS};
use std::time::Duration;

/// Flag bit of the allocation byte: [`FilterPolicy::optimize_filters_for_hits`].
const OPTIMIZE_FOR_HITS: u8 = 0x80;

/// Name of keyspace 0, which holds everything `Db`'s own methods read and write.
pub const DEFAULT_KEYSPACE_NAME: &str = "default";
/// Longest keyspace name, in bytes.
pub const MAX_KEYSPACE_NAME_LEN: usize = 255;
/// Names starting with this are reserved for siftdb's own keyspaces (the query layer's tables).
pub const RESERVED_PREFIX: &str = "__";

/// The options of one keyspace: every file of the keyspace is written with them (flush and
/// compaction outputs alike). They are persisted in the manifest, so a background compaction of
/// a keyspace not opened since the database was reopened still uses them. The default keyspace
/// takes all of this from [`Options`].
#[derive(Clone)]
pub struct KeyspaceOptions {
    /// Filters of the keyspace's files: the flush (L0) filter, the static filter of compaction
    /// outputs and its per-level allocation ([`FilterPolicy`]). A keyspace only ever scanned
    /// can use `FilterConfig::None` and `StaticFilterKind::None`: no filter memory at all.
    pub filter_policy: FilterPolicy,
    /// Data block compression of every file of the keyspace.
    pub compression: Compression,
    /// Target uncompressed data block size of the keyspace's files (64..=256 MiB).
    pub block_size: usize,
    /// Time to live of the keyspace's entries (design.md#ttl): an entry older than this is
    /// invisible to every read and dropped by compaction. Values then carry their write time,
    /// so turning it on or off for an existing keyspace is [`Error::InvalidArgument`]; its
    /// duration may change. Valid: 1 ms and up. Default `None`.
    pub ttl: Option<Duration>,
    /// The keyspace's compaction filter ([`crate::CompactionFilter`]); its name is recorded.
    /// Default `None`.
    pub compaction_filter: Option<SharedCompactionFilter>,
    /// Key-value separation (design.md#key-value-separation): flush and compaction write
    /// values of at least this many bytes to blob files, and the SST keeps a reference.
    /// Valid: 1 and up. Default `None` (off).
    pub blob_threshold: Option<u32>,
}

impl PartialEq for KeyspaceOptions {
    /// Compares every field, the compaction filters by name.
    fn eq(&self, other: &Self) -> bool {
        self.filter_policy == other.filter_policy
            && self.compression == other.compression
            && self.block_size == other.block_size
            && self.ttl == other.ttl
            && self.filter_name() == other.filter_name()
            && self.blob_threshold == other.blob_threshold
    }
}

impl std::fmt::Debug for KeyspaceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyspaceOptions")
            .field("filter_policy", &self.filter_policy)
            .field("compression", &self.compression)
            .field("block_size", &self.block_size)
            .field("ttl", &self.ttl)
            .field("compaction_filter", &self.compaction_filter.as_ref().map(|f| f.name()))
            .field("blob_threshold", &self.blob_threshold)
            .finish()
    }
}

/// The lifetime part of a keyspace's recorded options (module documentation, `lifecycle`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lifecycle {
    /// Time to live in ms; 0: none.
    pub ttl_ms: u64,
    /// The recorded compaction filter's name; empty: none.
    pub filter_name: String,
}

impl Lifecycle {
    /// Whether nothing is recorded (no TTL, no filter).
    pub fn is_empty(&self) -> bool {
        self.ttl_ms == 0 && self.filter_name.is_empty()
    }

    /// Appends the `lifecycle` encoding.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ttl_ms.to_le_bytes());
        let name = &self.filter_name.as_bytes()[..self.filter_name.len().min(255)];
        out.push(name.len() as u8);
        out.extend_from_slice(name);
    }

    /// Decodes the `lifecycle` encoding from `c`.
    pub(crate) fn decode_from(c: &mut Cursor<'_>) -> Result<Lifecycle> {
        let bad = |what: String| Error::corruption(format!("keyspace options: {what}"), None);
        let ttl_ms = u64::from_le_bytes(c.bytes(8, "keyspace ttl")?.try_into().expect("8"));
        if ttl_ms > MAX_TTL_MS {
            return Err(bad(format!("ttl of {ttl_ms} ms is out of range")));
        }
        let n = c.u8("keyspace compaction filter name length")? as usize;
        let name = c.bytes(n, "keyspace compaction filter name")?.to_vec();
        let filter_name = String::from_utf8(name)
            .map_err(|_| bad("compaction filter name is not UTF-8".into()))?;
        Ok(Lifecycle { ttl_ms, filter_name })
    }
}

impl Default for KeyspaceOptions {
    /// The defaults of [`Options`].
    fn default() -> Self {
        KeyspaceOptions::from(&Options::default())
    }
}

impl From<&Options> for KeyspaceOptions {
    /// The filter policy, compression (of level 0) and block size of `opts`.
    fn from(opts: &Options) -> Self {
        KeyspaceOptions {
            filter_policy: opts.filter_policy.clone(),
            compression: opts.compression_for_level(0),
            block_size: opts.block_size,
            ttl: opts.ttl,
            compaction_filter: opts.compaction_filter.clone(),
            blob_threshold: opts.blob_threshold,
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
        if let Some(ttl) = self.ttl {
            crate::compaction_filter::ttl_ms("keyspace ttl", ttl)?;
        }
        if self.blob_threshold == Some(0) {
            return Err(out_of_range("blob_threshold", 0, "None or 1 and up"));
        }
        if let Some(f) = &self.compaction_filter {
            if f.name().is_empty() || f.name().len() > 255 {
                return Err(Error::invalid(format!(
                    "keyspace compaction filter name of {} bytes is out of range (valid: \
                     1..=255 bytes)",
                    f.name().len()
                )));
            }
        }
        if !BLOCK_SIZE_RANGE.contains(&self.block_size) {
            let range = format!("{}..={}", BLOCK_SIZE_RANGE.start(), BLOCK_SIZE_RANGE.end());
            return Err(out_of_range("block_size", self.block_size, &range));
        }
        if let Compression::Zstd(level) = self.compression {
            if !ZSTD_LEVEL_RANGE.contains(&level) {
                return Err(out_of_range("compression Zstd level", level, "1..=22"));
            }
        }
        crate::options_validate::check_filter_policy(&self.filter_policy)
            .map_err(|e| Error::invalid(format!("keyspace {e}")))
    }

    /// The encoding of the module documentation.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_recorded(self.filter_name())
    }

    /// [`KeyspaceOptions::encode`] recording `filter_name` as the compaction filter's name.
    pub(crate) fn encode_recorded(&self, filter_name: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(40);
        let p = &self.filter_policy;
        out.push(match p.flush {
            FilterConfig::None => 0u8,
            FilterConfig::TwoBitBloom { .. } => 1,
            FilterConfig::BlockedBloom { .. } => 2,
            FilterConfig::StandardBloom { .. } => 3,
        });
        out.extend_from_slice(&p.flush.bits_per_key().to_le_bytes());
        out.push(static_tag(p.compaction));
        let hits = if p.optimize_filters_for_hits { OPTIMIZE_FOR_HITS } else { 0 };
        match &p.allocation {
            FilterAllocation::PerLevel(list) => {
                out.push(hits);
                out.push(list.len().min(255) as u8);
                for b in list.iter().take(255) {
                    let (tag, x) = match *b {
                        LevelBudget::Fpr(f) => (0u8, f),
                        LevelBudget::BitsPerKey(bits) => (1, bits),
                    };
                    out.push(tag);
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            FilterAllocation::Monkey { bits_per_key } => {
                out.push(1 | hits);
                out.extend_from_slice(&bits_per_key.to_le_bytes());
            }
            FilterAllocation::AllRuns { bits_per_key } => {
                out.push(2 | hits);
                out.extend_from_slice(&bits_per_key.to_le_bytes());
            }
            FilterAllocation::SkewAware { bits_per_key } => {
                out.push(3 | hits);
                out.extend_from_slice(&bits_per_key.to_le_bytes());
            }
        }
        let (c, level) = match self.compression {
            Compression::None => (0u8, 0i32),
            Compression::Zstd(l) => (1, l),
            Compression::Lz4 => (2, 0),
        };
        out.push(c);
        out.extend_from_slice(&level.to_le_bytes());
        out.extend_from_slice(&(self.block_size as u32).to_le_bytes());
        let life = Lifecycle { filter_name: filter_name.to_string(), ..self.lifecycle() };
        if !life.is_empty() || self.blob_threshold.is_some() {
            life.encode_into(&mut out);
        }
        if let Some(t) = self.blob_threshold {
            out.extend_from_slice(&t.to_le_bytes());
        }
        out
    }

    /// The compaction filter's name, empty without one.
    pub(crate) fn filter_name(&self) -> &str {
        self.compaction_filter.as_ref().map_or("", |f| f.name())
    }

    /// The TTL and filter name as recorded.
    pub(crate) fn lifecycle(&self) -> Lifecycle {
        Lifecycle {
            ttl_ms: self.ttl.map_or(0, |t| t.as_millis().min(MAX_TTL_MS as u128) as u64),
            filter_name: self.filter_name().to_string(),
        }
    }

    /// Decodes and validates options; anything wrong is [`Error::Corruption`] naming the field.
    /// The recorded compaction filter's name is dropped (the options hold no filter);
    /// the crate-internal `decode_recorded` returns it.
    pub fn decode(bytes: &[u8]) -> Result<KeyspaceOptions> {
        Self::decode_recorded(bytes).map(|(o, _)| o)
    }

    /// [`KeyspaceOptions::decode`], with the recorded compaction filter name (empty: none).
    pub(crate) fn decode_recorded(bytes: &[u8]) -> Result<(KeyspaceOptions, String)> {
        let bad = |what: String| Error::corruption(format!("keyspace options: {what}"), None);
        let mut c = Cursor::new(bytes);
        let f64_at = |c: &mut Cursor<'_>, field: &str| -> Result<f64> {
            Ok(f64::from_le_bytes(c.bytes(8, field)?.try_into().expect("8 bytes")))
        };
        let flush_kind = c.u8("keyspace flush filter kind")?;
        let bits = f64_at(&mut c, "keyspace flush filter bits_per_key")?;
        let flush = match flush_kind {
            0 => FilterConfig::None,
            1 => FilterConfig::TwoBitBloom { bits_per_key: bits },
            2 => FilterConfig::BlockedBloom { bits_per_key: bits },
            3 => FilterConfig::StandardBloom { bits_per_key: bits },
            k => return Err(bad(format!("flush filter kind {k} is unknown"))),
        };
        let static_kind = c.u8("keyspace static filter kind")?;
        let compaction = static_kind_of(static_kind)
            .ok_or_else(|| bad(format!("static filter kind {static_kind} is unknown")))?;
        let allocation_byte = c.u8("keyspace filter allocation")?;
        let optimize_filters_for_hits = allocation_byte & OPTIMIZE_FOR_HITS != 0;
        let allocation = match allocation_byte & !OPTIMIZE_FOR_HITS {
            0 => {
                let n = c.u8("keyspace filter budgets")? as usize;
                let mut list = Vec::with_capacity(n.min(MAX_LEVEL_BUDGETS));
                for _ in 0..n {
                    let tag = c.u8("keyspace filter budget kind")?;
                    let x = f64_at(&mut c, "keyspace filter budget")?;
                    list.push(match tag {
                        0 => LevelBudget::Fpr(x),
                        1 => LevelBudget::BitsPerKey(x),
                        t => return Err(bad(format!("filter budget kind {t} is unknown"))),
                    });
                }
                FilterAllocation::PerLevel(list)
            }
            1 => FilterAllocation::Monkey { bits_per_key: f64_at(&mut c, "keyspace Monkey bits")? },
            2 => FilterAllocation::AllRuns {
                bits_per_key: f64_at(&mut c, "keyspace all-runs allocation bits")?,
            },
            3 => FilterAllocation::SkewAware {
                bits_per_key: f64_at(&mut c, "keyspace skew-aware allocation bits")?,
            },
            _ => return Err(bad(format!("filter allocation {allocation_byte} is unknown"))),
        };
        let comp = c.u8("keyspace compression")?;
        let level = i32::from_le_bytes(c.bytes(4, "keyspace zstd level")?.try_into().expect("4"));
        let compression = match comp {
            0 => Compression::None,
            1 => Compression::Zstd(level),
            2 => Compression::Lz4,
            x => return Err(bad(format!("compression {x} is unknown"))),
        };
        let block_size =
            u32::from_le_bytes(c.bytes(4, "keyspace block_size")?.try_into().expect("4")) as usize;
        let life =
            if c.is_empty() { Lifecycle::default() } else { Lifecycle::decode_from(&mut c)? };
        let blob_threshold = if c.is_empty() {
            None
        } else {
            Some(u32::from_le_bytes(c.bytes(4, "keyspace blob_threshold")?.try_into().expect("4")))
        };
        if !c.is_empty() {
            return Err(bad(format!("{} bytes after the options", c.remaining())));
        }
        let opts = KeyspaceOptions {
            filter_policy: FilterPolicy {
                flush,
                compaction,
                allocation,
                optimize_filters_for_hits,
            },
            compression,
            block_size,
            ttl: (life.ttl_ms > 0).then(|| Duration::from_millis(life.ttl_ms)),
            compaction_filter: None,
            blob_threshold,
        };
        opts.validate().map_err(|e| bad(e.to_string()))?;
        Ok((opts, life.filter_name))
    }
}

/// The persisted tag of a static filter kind (module documentation).
fn static_tag(k: StaticFilterKind) -> u8 {
    match k {
        StaticFilterKind::None => 0,
        StaticFilterKind::Ribbon => 1,
        StaticFilterKind::BinaryFuse8 => 2,
        StaticFilterKind::BinaryFuse16 => 3,
        StaticFilterKind::Xor8 => 4,
        StaticFilterKind::Xor16 => 5,
        StaticFilterKind::BlockedBloom => 6,
        StaticFilterKind::StandardBloom => 7,
        StaticFilterKind::BinaryFuse4Wise8 => 8,
        StaticFilterKind::BinaryFuse4Wise16 => 9,
        StaticFilterKind::PackedBinaryFuse => 10,
        StaticFilterKind::BumpedRibbon => 11,
    }
}

fn static_kind_of(tag: u8) -> Option<StaticFilterKind> {
    Some(match tag {
        0 => StaticFilterKind::None,
        1 => StaticFilterKind::Ribbon,
        2 => StaticFilterKind::BinaryFuse8,
        3 => StaticFilterKind::BinaryFuse16,
        4 => StaticFilterKind::Xor8,
        5 => StaticFilterKind::Xor16,
        6 => StaticFilterKind::BlockedBloom,
        7 => StaticFilterKind::StandardBloom,
        8 => StaticFilterKind::BinaryFuse4Wise8,
        9 => StaticFilterKind::BinaryFuse4Wise16,
        10 => StaticFilterKind::PackedBinaryFuse,
        11 => StaticFilterKind::BumpedRibbon,
        _ => return None,
    })
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
        let policy = |flush, compaction, allocation| FilterPolicy {
            flush,
            compaction,
            allocation,
            optimize_filters_for_hits: false,
        };
        let all = [
            KeyspaceOptions::default(),
            KeyspaceOptions {
                filter_policy: policy(
                    FilterConfig::BlockedBloom { bits_per_key: 9.5 },
                    StaticFilterKind::Xor16,
                    FilterAllocation::PerLevel(vec![
                        LevelBudget::Fpr(0.02),
                        LevelBudget::BitsPerKey(5.0),
                    ]),
                ),
                compression: Compression::Zstd(7),
                block_size: 16 << 10,
                ttl: None,
                compaction_filter: None,
                blob_threshold: None,
            },
            KeyspaceOptions {
                filter_policy: policy(
                    FilterConfig::None,
                    StaticFilterKind::None,
                    FilterAllocation::PerLevel(Vec::new()),
                ),
                compression: Compression::Lz4,
                block_size: 64,
                ttl: None,
                compaction_filter: None,
                blob_threshold: None,
            },
            KeyspaceOptions {
                filter_policy: policy(
                    FilterConfig::StandardBloom { bits_per_key: 64.0 },
                    StaticFilterKind::BinaryFuse8,
                    FilterAllocation::Monkey { bits_per_key: 6.0 },
                ),
                compression: Compression::None,
                block_size: 256 << 20,
                ttl: None,
                compaction_filter: None,
                blob_threshold: None,
            },
            KeyspaceOptions {
                filter_policy: policy(
                    FilterConfig::TwoBitBloom { bits_per_key: 10.0 },
                    StaticFilterKind::Ribbon,
                    FilterAllocation::AllRuns { bits_per_key: 9.5 },
                ),
                compression: Compression::Lz4,
                block_size: 4096,
                ttl: None,
                compaction_filter: None,
                blob_threshold: None,
            },
            KeyspaceOptions {
                filter_policy: FilterPolicy {
                    optimize_filters_for_hits: true,
                    ..policy(
                        FilterConfig::TwoBitBloom { bits_per_key: 12.0 },
                        StaticFilterKind::Ribbon,
                        FilterAllocation::SkewAware { bits_per_key: 7.25 },
                    )
                },
                compression: Compression::Lz4,
                block_size: 4096,
                ttl: None,
                compaction_filter: None,
                blob_threshold: None,
            },
            KeyspaceOptions {
                filter_policy: FilterPolicy {
                    optimize_filters_for_hits: true,
                    ..FilterPolicy::default()
                },
                ..KeyspaceOptions::default()
            },
        ];
        for o in all {
            assert_eq!(KeyspaceOptions::decode(&o.encode()).unwrap(), o);
        }
        for tag in 0..12 {
            assert_eq!(static_tag(static_kind_of(tag).unwrap()), tag);
        }
        assert!(static_kind_of(12).is_none());
    }

    #[test]
    fn bad_encodings_are_corruption_naming_the_field() {
        let good = KeyspaceOptions::default().encode();
        for len in 0..good.len() {
            assert!(KeyspaceOptions::decode(&good[..len]).unwrap_err().is_corruption());
        }
        let mut longer = good.clone();
        Lifecycle { ttl_ms: 5, filter_name: "f".into() }.encode_into(&mut longer);
        let (o, name) = KeyspaceOptions::decode_recorded(&longer).unwrap();
        assert_eq!((o.ttl, name.as_str()), (Some(Duration::from_millis(5)), "f"));
        // A blob threshold follows the lifecycle (u32 LE); a partial one is corruption.
        longer.extend_from_slice(&4096u32.to_le_bytes());
        let (o, _) = KeyspaceOptions::decode_recorded(&longer).unwrap();
        assert_eq!(o.blob_threshold, Some(4096));
        let blob = KeyspaceOptions { blob_threshold: Some(7), ..KeyspaceOptions::default() };
        assert_eq!(KeyspaceOptions::decode(&blob.encode()).unwrap(), blob);
        assert!(KeyspaceOptions::decode(&longer[..longer.len() - 1]).is_err());
        let mut zero = longer.clone();
        zero.truncate(longer.len() - 4);
        zero.extend_from_slice(&0u32.to_le_bytes());
        assert!(KeyspaceOptions::decode(&zero).unwrap_err().is_corruption());
        longer.push(0);
        assert!(KeyspaceOptions::decode(&longer).unwrap_err().to_string().contains("after"));
        let mut bad = good.clone();
        bad[0] = 9;
        assert!(KeyspaceOptions::decode(&bad).unwrap_err().to_string().contains("filter kind"));
        let mut bad = good.clone();
        bad[9] = 99;
        assert!(KeyspaceOptions::decode(&bad).unwrap_err().to_string().contains("static filter"));
        let n = good.len();
        let mut bad = good.clone();
        bad[n - 4..].copy_from_slice(&1u32.to_le_bytes());
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
