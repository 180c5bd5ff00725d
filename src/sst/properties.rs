//! The properties block: named facts about a table, written by the builder and read at open.
//!
//! ```text
//! properties := count:varint32 property*
//! property   := name_len:varint32 name value_len:varint32 value
//! ```
//! Numbers are 8-byte little-endian u64 values (f64 as its IEEE bits); keys are raw bytes.
//! Readers ignore names they do not know (a newer writer may add some) and report a missing
//! required property as corruption. Names are listed in docs/format.md#properties-block.
//! `range_deletions` and `range_del_block` (format version 3) are written only by a table with
//! range tombstones, and `filter_partitions` (format version 4) only by a table with a
//! partitioned filter, and `prefix_filter_block`, `prefix_extractor` and `range_filter_block`
//! (format version 5) only by a table with scan filters, and `compression_dict_block` (format
//! version 8) only by a table with a zstd dictionary, so every other table's block stays byte
//! for byte what older builds wrote.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::error::{Error, Result};
use crate::sst::format::{get_varint32, put_varint32, BlockHandle};
use std::collections::HashMap;

/// What the properties block records about a table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableProperties {
    /// SST format version of the table.
    pub format_version: u32,
    /// Entries (puts and tombstones).
    pub entries: u64,
    /// Tombstones among the entries.
    pub deletions: u64,
    /// Distinct user keys (= hashes handed to the filter builder).
    pub distinct_keys: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Bytes of all data blocks on disk, trailers included.
    pub data_size: u64,
    /// Sum of internal-key lengths before prefix compression.
    pub raw_key_bytes: u64,
    /// Sum of value lengths.
    pub raw_value_bytes: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number of any entry (0 for an empty table).
    pub smallest_seq: u64,
    /// Largest sequence number of any entry.
    pub largest_seq: u64,
    /// Kind tag of the filter block's envelope; 0 = no filter.
    pub filter_kind: u8,
    /// Bytes of the filter block.
    pub filter_bytes: u64,
    /// `filter_bytes * 8 / distinct_keys` (0 without keys or filter).
    pub filter_bits_per_key: f64,
    /// Data-block compression: 0 = none, 1 = zstd, 2 = LZ4.
    pub compression: u8,
    /// The builder's target block size.
    pub block_size: u64,
    /// The builder's data-block restart interval.
    pub restart_interval: u64,
    /// Merge operands among the entries. Written (with `merge_operator`) only by tables that
    /// hold some, which are format version 3; absent means 0.
    pub merges: u64,
    /// Name of the merge operator the table's operands are for (`MergeOperator::name`); empty
    /// when they were flushed by an open without an operator (the name was unknown). `None`
    /// when the table holds no operands.
    pub merge_operator: Option<String>,
    /// Range tombstones (fragment, sequence number pairs) in the range-deletion block; 0
    /// without one. Not counted in `entries`.
    pub range_deletions: u64,
    /// Handle of the range-deletion block (meaningful when `range_deletions > 0`).
    pub range_del_block: BlockHandle,
    /// Filter partitions (format version 4): 0 = the filter block, if any, is one whole filter
    /// envelope; otherwise the footer's filter handle names the top-level partition index of
    /// this many partitions (src/sst/partitioned_filter.rs). Written only when non-zero.
    pub filter_partitions: u64,
    /// Index partitions (format version 4): 0 = the index block is the whole index; otherwise
    /// the footer's index handle names a top-level index over this many index partitions
    /// (src/sst/partitioned_index.rs). Written only when non-zero.
    pub index_partitions: u64,
    /// Handle of the prefix filter block (format version 5, design.md#scan-filters); size 0
    /// without one. Written (with `prefix_extractor`) only by a table that has one.
    pub prefix_filter_block: BlockHandle,
    /// Name of the prefix extractor that built the prefix filter (`PrefixExtractor::name`).
    pub prefix_extractor: Option<String>,
    /// Handle of the range filter block (format version 5, a `grafite` envelope); size 0
    /// without one. Written only by a table that has one.
    pub range_filter_block: BlockHandle,
    /// Oldest and newest write time (ms since the Unix epoch) of the table's values and
    /// operands, in a TTL keyspace (format version 6, design.md#ttl); `None` otherwise.
    /// Written (as `oldest_write_time` and `newest_write_time`) only by a table that has them.
    pub write_times: Option<(u64, u64)>,
    /// Handle of the zstd compression dictionary block (format version 8,
    /// design.md#zstd-dictionaries); size 0 without one. Written only by a table that has one.
    pub compression_dict_block: BlockHandle,
}

impl TableProperties {
    fn numbers(&self) -> [(&'static str, u64); 16] {
        [
            ("format_version", self.format_version as u64),
            ("entries", self.entries),
            ("deletions", self.deletions),
            ("distinct_keys", self.distinct_keys),
            ("data_blocks", self.data_blocks),
            ("data_size", self.data_size),
            ("raw_key_bytes", self.raw_key_bytes),
            ("raw_value_bytes", self.raw_value_bytes),
            ("smallest_seq", self.smallest_seq),
            ("largest_seq", self.largest_seq),
            ("filter_kind", self.filter_kind as u64),
            ("filter_bytes", self.filter_bytes),
            ("filter_bits_per_key", self.filter_bits_per_key.to_bits()),
            ("compression", self.compression as u64),
            ("block_size", self.block_size),
            ("restart_interval", self.restart_interval),
        ]
    }

    /// Serializes the properties block contents.
    pub fn encode(&self) -> Vec<u8> {
        let nums = self.numbers();
        let mut out = Vec::new();
        let merge_props = self.merges > 0;
        let has_range_dels = self.range_deletions > 0;
        let partitioned = self.filter_partitions > 0;
        let index_parts = self.index_partitions > 0;
        let prefix_filter = self.prefix_filter_block.size > 0;
        let range_filter = self.range_filter_block.size > 0;
        let optional = 2 * merge_props as u32
            + 2 * has_range_dels as u32
            + partitioned as u32
            + index_parts as u32
            + 2 * prefix_filter as u32
            + range_filter as u32
            + 2 * self.write_times.is_some() as u32
            + (self.compression_dict_block.size > 0) as u32;
        put_varint32(&mut out, nums.len() as u32 + 2 + optional);
        let mut put = |name: &str, value: &[u8]| {
            put_varint32(&mut out, name.len() as u32);
            out.extend_from_slice(name.as_bytes());
            put_varint32(&mut out, value.len() as u32);
            out.extend_from_slice(value);
        };
        for (name, v) in nums {
            put(name, &v.to_le_bytes());
        }
        put("smallest_key", &self.smallest_key);
        put("largest_key", &self.largest_key);
        // Only tables holding merge operands (format version 3) carry these two, so every
        // other table's properties stay byte for byte what older builds write.
        if merge_props {
            put("merges", &self.merges.to_le_bytes());
            put("merge_operator", self.merge_operator.as_deref().unwrap_or("").as_bytes());
        }
        if has_range_dels {
            put("range_deletions", &self.range_deletions.to_le_bytes());
            let mut h = Vec::with_capacity(20);
            self.range_del_block.encode_to(&mut h);
            put("range_del_block", &h);
        }
        // Only tables with a partitioned filter (format version 4) carry it.
        if partitioned {
            put("filter_partitions", &self.filter_partitions.to_le_bytes());
        }
        if index_parts {
            put("index_partitions", &self.index_partitions.to_le_bytes());
        }
        // Only tables with scan filters (format version 5) carry these.
        if prefix_filter {
            let mut h = Vec::with_capacity(20);
            self.prefix_filter_block.encode_to(&mut h);
            put("prefix_filter_block", &h);
            put("prefix_extractor", self.prefix_extractor.as_deref().unwrap_or("").as_bytes());
        }
        if range_filter {
            let mut h = Vec::with_capacity(20);
            self.range_filter_block.encode_to(&mut h);
            put("range_filter_block", &h);
        }
        // Only tables of TTL keyspaces (format version 6) carry these.
        if let Some((oldest, newest)) = self.write_times {
            put("oldest_write_time", &oldest.to_le_bytes());
            put("newest_write_time", &newest.to_le_bytes());
        }
        // Only tables with a zstd dictionary (format version 8) carry it.
        if self.compression_dict_block.size > 0 {
            let mut h = Vec::with_capacity(20);
            self.compression_dict_block.encode_to(&mut h);
            put("compression_dict_block", &h);
        }
        out
    }

    /// Parses properties block contents. Offsets in errors are relative to the block start.
    pub fn decode(buf: &[u8]) -> Result<TableProperties> {
        let mut pos = 0;
        let count = get_varint32(buf, &mut pos, "property count")? as usize;
        if count > buf.len() / 2 {
            return Err(Error::corruption(format!("property count {count} is too large"), Some(0)));
        }
        let mut map: HashMap<&[u8], &[u8]> = HashMap::with_capacity(count);
        for _ in 0..count {
            let name = take(buf, &mut pos, "property name")?;
            let value = take(buf, &mut pos, "property value")?;
            map.insert(name, value);
        }
        if pos != buf.len() {
            return Err(Error::corruption("properties block has trailing bytes", Some(pos as u64)));
        }
        let num = |name: &str| -> Result<u64> {
            let v = map.get(name.as_bytes()).ok_or_else(|| missing(name))?;
            let b: [u8; 8] = (*v).try_into().map_err(|_| {
                Error::corruption(format!("property {name} is {} bytes, not 8", v.len()), None)
            })?;
            Ok(u64::from_le_bytes(b))
        };
        let small = |name: &str, max: u64| -> Result<u64> {
            let v = num(name)?;
            if v > max {
                return Err(Error::corruption(format!("property {name} = {v} out of range"), None));
            }
            Ok(v)
        };
        let bytes = |name: &str| -> Result<Vec<u8>> {
            map.get(name.as_bytes()).map(|v| v.to_vec()).ok_or_else(|| missing(name))
        };
        // Optional (format version 3): present together or not at all.
        let (range_deletions, range_del_block) = match map.get(&b"range_del_block"[..]) {
            None => (0, BlockHandle::default()),
            Some(h) => {
                let h = BlockHandle::decode(h).map_err(|e| {
                    Error::corruption(format!("property range_del_block: {e}"), None)
                })?;
                (num("range_deletions")?, h)
            }
        };
        let handle = |name: &str| -> Result<BlockHandle> {
            match map.get(name.as_bytes()) {
                None => Ok(BlockHandle::default()),
                Some(h) => BlockHandle::decode(h)
                    .map_err(|e| Error::corruption(format!("property {name}: {e}"), None)),
            }
        };
        let prefix_filter_block = handle("prefix_filter_block")?;
        let prefix_extractor =
            match map.get(&b"prefix_extractor"[..]) {
                Some(v) => Some(String::from_utf8(v.to_vec()).map_err(|_| {
                    Error::corruption("property prefix_extractor is not UTF-8", None)
                })?),
                None if prefix_filter_block.size > 0 => return Err(missing("prefix_extractor")),
                None => None,
            };
        Ok(TableProperties {
            format_version: small("format_version", u32::MAX as u64)? as u32,
            entries: num("entries")?,
            deletions: num("deletions")?,
            distinct_keys: num("distinct_keys")?,
            data_blocks: num("data_blocks")?,
            data_size: num("data_size")?,
            raw_key_bytes: num("raw_key_bytes")?,
            raw_value_bytes: num("raw_value_bytes")?,
            smallest_key: bytes("smallest_key")?,
            largest_key: bytes("largest_key")?,
            smallest_seq: num("smallest_seq")?,
            largest_seq: num("largest_seq")?,
            filter_kind: small("filter_kind", u8::MAX as u64)? as u8,
            filter_bytes: num("filter_bytes")?,
            filter_bits_per_key: f64::from_bits(num("filter_bits_per_key")?),
            compression: small("compression", u8::MAX as u64)? as u8,
            block_size: num("block_size")?,
            restart_interval: num("restart_interval")?,
            merges: if map.contains_key(&b"merges"[..]) { num("merges")? } else { 0 },
            merge_operator: match map.get(&b"merge_operator"[..]) {
                Some(v) => Some(String::from_utf8(v.to_vec()).map_err(|_| {
                    Error::corruption("property merge_operator is not UTF-8", None)
                })?),
                None => None,
            },
            range_deletions,
            range_del_block,
            filter_partitions: match map.contains_key(&b"filter_partitions"[..]) {
                true => num("filter_partitions")?,
                false => 0,
            },
            index_partitions: match map.contains_key(&b"index_partitions"[..]) {
                true => num("index_partitions")?,
                false => 0,
            },
            prefix_filter_block,
            prefix_extractor,
            range_filter_block: handle("range_filter_block")?,
            write_times: match map.contains_key(&b"oldest_write_time"[..]) {
                true => Some((num("oldest_write_time")?, num("newest_write_time")?)),
                false => None,
            },
            compression_dict_block: handle("compression_dict_block")?,
        })
    }
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, what: &str) -> Result<&'a [u8]> {
    let at = *pos;
    let len = get_varint32(buf, pos, what)? as usize;
    let s = pos.checked_add(len).and_then(|end| buf.get(*pos..end)).ok_or_else(|| {
        Error::corruption(format!("{what} of {len} bytes runs past the block"), Some(at as u64))
    })?;
    *pos += len;
    Ok(s)
}

fn missing(name: &str) -> Error {
    Error::corruption(format!("properties block lacks required property {name}"), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_round_trip_and_ignore_unknown_names() {
        let p = TableProperties {
            format_version: 1,
            entries: 10,
            deletions: 2,
            smallest_key: b"a\x01\0\0\0\0\0\0\0".to_vec(),
            largest_key: b"z\x01\0\0\0\0\0\0\0".to_vec(),
            filter_bits_per_key: 9.75,
            filter_kind: 3,
            ..Default::default()
        };
        let mut b = p.encode();
        assert_eq!(TableProperties::decode(&b).unwrap(), p);
        // A newer writer's extra property: bump the count and append it.
        b[0] += 1;
        b.extend_from_slice(b"\x03new\x01\x07");
        assert_eq!(TableProperties::decode(&b).unwrap(), p);
        assert!(TableProperties::decode(&b[..b.len() - 1]).unwrap_err().is_corruption());
        assert!(TableProperties::decode(&[0]).unwrap_err().is_corruption()); // all missing
    }

    #[test]
    fn merge_properties_are_written_only_by_tables_holding_operands() {
        let plain = TableProperties { format_version: 1, ..Default::default() };
        let with = TableProperties {
            format_version: 3,
            merges: 4,
            merge_operator: Some("siftdb.u64add".into()),
            ..Default::default()
        };
        let (a, b) = (plain.encode(), with.encode());
        assert!(!a.windows(6).any(|w| w == b"merges"));
        assert!(b.windows(14).any(|w| w == b"merge_operator"));
        assert_eq!(TableProperties::decode(&a).unwrap(), plain);
        assert_eq!(TableProperties::decode(&b).unwrap(), with);
    }

    #[test]
    fn range_deletion_properties_appear_only_with_range_tombstones() {
        let plain = TableProperties { format_version: 1, entries: 3, ..Default::default() };
        let with = TableProperties {
            format_version: 3,
            range_deletions: 2,
            range_del_block: BlockHandle { offset: 100, size: 40 },
            ..plain.clone()
        };
        assert_eq!(TableProperties::decode(&with.encode()).unwrap(), with);
        assert!(with.encode().len() > plain.encode().len());
        let b = plain.encode();
        assert!(!b.windows(9).any(|w| w == b"range_del"), "old tables are unchanged");
        assert_eq!(TableProperties::decode(&b).unwrap(), plain);
    }

    #[test]
    fn filter_partitions_property_appears_only_in_partitioned_tables() {
        let plain = TableProperties { format_version: 1, entries: 3, ..Default::default() };
        let with = TableProperties {
            format_version: 4,
            filter_partitions: 7,
            index_partitions: 3,
            ..plain.clone()
        };
        assert_eq!(TableProperties::decode(&with.encode()).unwrap(), with);
        assert!(!plain.encode().windows(17).any(|w| w == b"filter_partitions"));
        assert!(with.encode().windows(17).any(|w| w == b"filter_partitions"));
        assert!(!plain.encode().windows(16).any(|w| w == b"index_partitions"));
    }

    #[test]
    fn the_dictionary_handle_appears_only_in_tables_with_a_dictionary() {
        let plain = TableProperties { format_version: 1, entries: 3, ..Default::default() };
        let with = TableProperties {
            format_version: 8,
            compression_dict_block: BlockHandle { offset: 4096, size: 1000 },
            ..plain.clone()
        };
        assert_eq!(TableProperties::decode(&with.encode()).unwrap(), with);
        assert!(!plain.encode().windows(15).any(|w| w == b"compression_dic"));
        assert!(with.encode().windows(22).any(|w| w == b"compression_dict_block"));
    }
}
