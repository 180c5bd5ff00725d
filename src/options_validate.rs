//! [`Options::validate`]: the range check of every option, run by [`crate::Db::open`] before it
//! touches the disk.
//!
//! Each check names the field (as a path from `Options`), the value and the valid range, so a
//! caller never has to guess which knob was wrong. The ranges are the ones the engine is known
//! to work in, not style preferences; each bound says why it exists. Values outside them used to
//! fail far from their cause: `memtable_size: 0` rotated the memtable forever (more than 10,000
//! empty WALs before the first write returned), `block_size: 0` failed a flush and turned the
//! database read-only, `target_file_size: 0` cut one file per entry until the process ran out of
//! file descriptors, and `LevelBudget::Fpr(2.0)` silently built no filter.

use crate::error::{Error, Result};
use crate::options::{
    CompactionOptions, Compression, FilterAllocation, FilterConfig, LevelBudget, Options,
};
use std::fmt::Display;
use std::ops::RangeInclusive;

/// Smallest `memtable_size`: below about one entry per memtable every write rotates the WAL.
pub const MIN_MEMTABLE_SIZE: usize = 1 << 10;
/// Largest `memtable_size` (64 GiB, RocksDB's limit on 64-bit targets). The memtable's filter is
/// allocated up front for `memtable_size / 128` keys, so the bound also caps that allocation.
pub const MAX_MEMTABLE_SIZE: usize = 64 << 30;
/// `block_size` range: the table builder's own limits (src/sst/builder.rs).
pub const BLOCK_SIZE_RANGE: RangeInclusive<usize> = 64..=(256 << 20);
/// `metadata_block_size` range: below 512 bytes a partition holds a few hundred keys and the
/// top level grows as large as the filter; above 1 MiB partitions stop saving reads.
pub const METADATA_BLOCK_SIZE_RANGE: RangeInclusive<usize> = 512..=(1 << 20);
/// `block_restart_interval` range: at least one entry per restart run; above 65,535 a seek scans
/// a whole block linearly anyway.
pub const RESTART_INTERVAL_RANGE: RangeInclusive<usize> = 1..=65_535;
/// `max_immutable_memtables` range: at least one memtable must be able to wait for flush.
pub const MAX_IMMUTABLE_RANGE: RangeInclusive<usize> = 1..=1_000;
/// zstd levels siftdb accepts (the documented range of [`Compression::Zstd`]).
pub const ZSTD_LEVEL_RANGE: RangeInclusive<i32> = 1..=22;
/// Largest `compression_max_dict_bytes`: RocksDB's dictionaries are 16-64 KiB in practice; a
/// larger one costs every reader of the file its digested copy (about 2x its size) while the
/// table is open.
pub const MAX_DICT_BYTES: usize = 1 << 20;
/// Largest `compression_zstd_max_train_bytes`: the table builder buffers this much per file
/// being written (several at once with subcompactions).
pub const MAX_TRAIN_BYTES: usize = 256 << 20;
/// Filter bits per key, for every filter setting given in bits: at least one bit per million
/// keys (below, every siftdb filter admits all but about one key in a million, and 0 bits is
/// no filter, which has its own spelling) and at most 64 (past about 46 bits per key every
/// siftdb filter is already below the 2^-32 FPR floor).
pub const BITS_PER_KEY_MAX: f64 = 64.0;
/// The low end of the bits-per-key range ([`BITS_PER_KEY_MAX`]).
pub const BITS_PER_KEY_MIN: f64 = 1e-6;
/// Smallest target FPR: the compaction filters cannot go below 2^-32.
pub const MIN_FPR: f64 = 1.0 / 4_294_967_296.0;
/// Smallest `target_file_size` and `max_bytes_for_level_base`: with less, compaction cuts about
/// one file per entry.
pub const MIN_FILE_SIZE: u64 = 1 << 10;
/// `max_bytes_for_level_multiplier` range (exclusive low end): a level must hold more than the
/// one above it, and above 1000 every database fits in two levels.
pub const MULTIPLIER_MAX: f64 = 1000.0;
/// The largest `CompactionOptions::l0_min_base_ratio`: past a few base levels' worth, L0 would
/// sit at half the slowdown trigger anyway.
pub const L0_BASE_RATIO_MAX: f64 = 100.0;

/// `max_subcompactions` range: at least the compaction thread itself, at most
/// [`crate::limits::MAX_SUBCOMPACTIONS`] threads per compaction.
pub const MAX_SUBCOMPACTIONS_RANGE: RangeInclusive<usize> = 1..=crate::limits::MAX_SUBCOMPACTIONS;

/// Smallest `max_manifest_file_size`: a few edits. Any size works (the manifest also rolls
/// over only at twice its snapshot), but below this a manifest would roll over after every
/// edit or two, four syncs each.
pub const MIN_MANIFEST_FILE_SIZE: u64 = 1 << 10;

/// The error for `field = value` outside `range`.
fn out_of_range(field: &str, value: impl Display, range: &str) -> Error {
    Error::invalid(format!("{field} = {value} is out of range (valid: {range})"))
}

/// `e`, a dictionary option's error, naming the bottommost options it came from.
fn bottommost_named(e: Error) -> Error {
    match e {
        Error::InvalidArgument(msg) => Error::invalid(format!(
            "bottommost_{msg} (the bottommost dictionary: bottommost_compression_max_dict_bytes \
             and bottommost_compression_zstd_max_train_bytes, each defaulting to the option \
             without the prefix)"
        )),
        other => other,
    }
}

/// The dictionary options: `max_dict_bytes` within 0..=[`MAX_DICT_BYTES`], and a nonzero
/// `train_bytes` at least the dictionary (zstd trains a dictionary from samples larger than it)
/// and at most [`MAX_TRAIN_BYTES`].
pub(crate) fn check_dictionary(max_dict_bytes: usize, train_bytes: usize) -> Result<()> {
    check_usize("compression_max_dict_bytes", max_dict_bytes, 0..=MAX_DICT_BYTES)?;
    if train_bytes != 0 {
        let low = max_dict_bytes.max(1);
        if !(low..=MAX_TRAIN_BYTES).contains(&train_bytes) {
            return Err(out_of_range(
                "compression_zstd_max_train_bytes",
                train_bytes,
                &format!(
                    "0 (no training) or compression_max_dict_bytes..={MAX_TRAIN_BYTES} \
                     ({low}..={MAX_TRAIN_BYTES})"
                ),
            ));
        }
    }
    Ok(())
}

fn check_usize(field: &str, value: usize, range: RangeInclusive<usize>) -> Result<()> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(out_of_range(field, value, &format!("{}..={}", range.start(), range.end())))
    }
}

/// Bits per key: finite, in `[1e-6, 64]`.
fn check_bits(field: &str, bits: f64) -> Result<()> {
    if (BITS_PER_KEY_MIN..=BITS_PER_KEY_MAX).contains(&bits) {
        Ok(())
    } else {
        Err(out_of_range(field, bits, "bits per key in [1e-6, 64]; use no filter for 0"))
    }
}

/// A target false-positive rate: finite, in `[2^-32, 1)` (1 or more would be no filter).
fn check_fpr(field: &str, fpr: f64) -> Result<()> {
    if fpr.is_finite() && (MIN_FPR..1.0).contains(&fpr) {
        Ok(())
    } else {
        Err(out_of_range(field, fpr, "a false-positive rate in [2^-32, 1)"))
    }
}

fn check_flush_filter(f: &FilterConfig) -> Result<()> {
    match *f {
        FilterConfig::None => Ok(()),
        FilterConfig::TwoBitBloom { bits_per_key }
        | FilterConfig::BlockedBloom { bits_per_key }
        | FilterConfig::StandardBloom { bits_per_key } => {
            check_bits("filter_policy.flush.bits_per_key", bits_per_key)
        }
    }
}

/// Most budgets a `FilterAllocation::PerLevel` list holds: one per compacted level, L1 to L6
/// (the last entry already repeats for the deeper levels, so more could only be a mistake).
pub const MAX_LEVEL_BUDGETS: usize = crate::limits::NUM_LEVELS - 1;

/// The one check of an allocation, for the database's options and a keyspace's alike.
fn check_allocation(a: &FilterAllocation) -> Result<()> {
    match a {
        FilterAllocation::PerLevel(list) => {
            if list.len() > MAX_LEVEL_BUDGETS {
                let range = format!("0..={MAX_LEVEL_BUDGETS} budgets, one per level L1..L6");
                return Err(out_of_range("filter_policy.allocation length", list.len(), &range));
            }
            for (i, budget) in list.iter().enumerate() {
                match *budget {
                    LevelBudget::Fpr(p) => {
                        check_fpr(&format!("filter_policy.allocation[{i}] (L{}) Fpr", i + 1), p)?
                    }
                    LevelBudget::BitsPerKey(b) => check_bits(
                        &format!("filter_policy.allocation[{i}] (L{}) BitsPerKey", i + 1),
                        b,
                    )?,
                }
            }
            Ok(())
        }
        FilterAllocation::Monkey { bits_per_key } => {
            check_bits("filter_policy.allocation Monkey.bits_per_key", *bits_per_key)
        }
        FilterAllocation::AllRuns { bits_per_key } => {
            check_bits("filter_policy.allocation AllRuns.bits_per_key", *bits_per_key)
        }
        FilterAllocation::SkewAware { bits_per_key } => {
            check_bits("filter_policy.allocation SkewAware.bits_per_key", *bits_per_key)
        }
    }
}

fn check_compaction(c: &CompactionOptions) -> Result<()> {
    let (t0, slow, stop) =
        (c.l0_compaction_trigger, c.l0_slowdown_writes_trigger, c.l0_stop_writes_trigger);
    if t0 == 0 {
        return Err(out_of_range(
            "compaction.l0_compaction_trigger",
            t0,
            &format!("1..=l0_slowdown_writes_trigger ({slow})"),
        ));
    }
    if slow < t0 {
        return Err(out_of_range(
            "compaction.l0_slowdown_writes_trigger",
            slow,
            &format!("l0_compaction_trigger ({t0})..=l0_stop_writes_trigger ({stop})"),
        ));
    }
    if stop < slow {
        return Err(out_of_range(
            "compaction.l0_stop_writes_trigger",
            stop,
            &format!("at least l0_slowdown_writes_trigger ({slow})"),
        ));
    }
    let r = c.l0_min_base_ratio;
    if !(r.is_finite() && (0.0..=L0_BASE_RATIO_MAX).contains(&r)) {
        return Err(out_of_range(
            "compaction.l0_min_base_ratio",
            r,
            &format!("[0, {L0_BASE_RATIO_MAX}]"),
        ));
    }
    if c.max_bytes_for_level_base < MIN_FILE_SIZE {
        return Err(out_of_range(
            "compaction.max_bytes_for_level_base",
            c.max_bytes_for_level_base,
            &format!("at least {MIN_FILE_SIZE} bytes"),
        ));
    }
    let m = c.max_bytes_for_level_multiplier;
    if !(m.is_finite() && m > 1.0 && m <= MULTIPLIER_MAX) {
        return Err(out_of_range("compaction.max_bytes_for_level_multiplier", m, "(1, 1000]"));
    }
    if c.target_file_size < MIN_FILE_SIZE {
        return Err(out_of_range(
            "compaction.target_file_size",
            c.target_file_size,
            &format!("at least {MIN_FILE_SIZE} bytes"),
        ));
    }
    Ok(())
}

impl Options {
    /// Checks every field against its valid range. [`crate::Db::open`] calls it before it
    /// touches the disk; an out-of-range field is [`Error::InvalidArgument`] naming the field,
    /// the value and the valid range. Fields without a range (`create_if_missing`,
    /// `error_if_exists`, `block_cache_bytes`, where 0 disables the cache, `mmap_reads`,
    /// `storage`) are not checked.
    pub fn validate(&self) -> Result<()> {
        if self.blob_threshold == Some(0) {
            return Err(Error::invalid(
                "Options::blob_threshold = Some(0) is out of range (valid: None or 1 and up)",
            ));
        }
        if !(0.0..=1.0).contains(&self.blob_gc_age_cutoff) {
            return Err(Error::invalid(format!(
                "Options::blob_gc_age_cutoff = {} is out of range (valid: 0.0..=1.0)",
                self.blob_gc_age_cutoff
            )));
        }
        if let Some(ttl) = self.ttl {
            crate::compaction_filter::ttl_ms("ttl", ttl)?;
        }
        if let Some(f) = &self.compaction_filter {
            if f.name().is_empty() || f.name().len() > 255 {
                return Err(Error::invalid(format!(
                    "compaction filter name of {} bytes is out of range (valid: 1..=255 bytes)",
                    f.name().len()
                )));
            }
        }
        check_usize("memtable_size", self.memtable_size, MIN_MEMTABLE_SIZE..=MAX_MEMTABLE_SIZE)?;
        check_usize("max_immutable_memtables", self.max_immutable_memtables, MAX_IMMUTABLE_RANGE)?;
        check_usize("block_size", self.block_size, BLOCK_SIZE_RANGE)?;
        check_usize("block_restart_interval", self.block_restart_interval, RESTART_INTERVAL_RANGE)?;
        if let Compression::Zstd(level) = self.compression {
            if !ZSTD_LEVEL_RANGE.contains(&level) {
                return Err(out_of_range("compression Zstd level", level, "1..=22"));
            }
        }
        for (i, c) in self.compression_per_level.iter().enumerate() {
            if let Compression::Zstd(level) = *c {
                if !ZSTD_LEVEL_RANGE.contains(&level) {
                    let field = format!("compression_per_level[{i}] Zstd level");
                    return Err(out_of_range(&field, level, "1..=22"));
                }
            }
        }
        check_dictionary(self.compression_max_dict_bytes, self.compression_zstd_max_train_bytes)?;
        let (dict, train) = self.dictionary_for(true);
        check_dictionary(dict, train).map_err(bottommost_named)?;
        if self.max_open_files != -1 && self.max_open_files < crate::options::MIN_MAX_OPEN_FILES {
            return Err(out_of_range(
                "max_open_files",
                self.max_open_files,
                &format!("-1 (unlimited) or {}..={}", crate::options::MIN_MAX_OPEN_FILES, i32::MAX),
            ));
        }
        check_meta_blocks(self)?;
        check_usize("metadata_block_size", self.metadata_block_size, METADATA_BLOCK_SIZE_RANGE)?;
        check_usize("max_subcompactions", self.max_subcompactions, MAX_SUBCOMPACTIONS_RANGE)?;
        if self.max_manifest_file_size < MIN_MANIFEST_FILE_SIZE {
            let range = format!("{MIN_MANIFEST_FILE_SIZE}..={}", u64::MAX);
            return Err(out_of_range(
                "max_manifest_file_size",
                self.max_manifest_file_size,
                &range,
            ));
        }
        check_filter_policy(&self.filter_policy)?;
        check_scan_filters(self)?;
        check_compaction(&self.compaction)
    }
}

/// `range_filter.bits_per_key` range: below 4 bits a Grafite filter answers "maybe" to ranges
/// of 4 keys or more; above 40 it stores more than the keys' own images would take.
pub const RANGE_FILTER_BITS_RANGE: RangeInclusive<f64> = 4.0..=40.0;

/// The prefix and range filter settings.
fn check_scan_filters(o: &Options) -> Result<()> {
    let b = o.prefix_filter_bits_per_key;
    if !(b.is_finite() && (1.0..=BITS_PER_KEY_MAX).contains(&b)) {
        return Err(out_of_range("prefix_filter_bits_per_key", b, "1.0..=64.0"));
    }
    if let Some(r) = o.range_filter {
        if !(r.bits_per_key.is_finite() && RANGE_FILTER_BITS_RANGE.contains(&r.bits_per_key)) {
            return Err(out_of_range("range_filter.bits_per_key", r.bits_per_key, "4.0..=40.0"));
        }
        if r.max_range == 0 {
            return Err(out_of_range("range_filter.max_range", 0, "at least 1"));
        }
    }
    Ok(())
}

/// Index and filter blocks can be cached or pinned only in an enabled block cache.
fn check_meta_blocks(o: &Options) -> Result<()> {
    if o.cache_index_and_filter_blocks && o.block_cache_bytes == 0 {
        return Err(Error::invalid(
            "Options::cache_index_and_filter_blocks = true needs a block cache: \
             block_cache_bytes = 0 disables it (valid: block_cache_bytes >= 1, or \
             cache_index_and_filter_blocks = false)",
        ));
    }
    if o.pin_l0_filter_and_index_blocks_in_cache && !o.cache_index_and_filter_blocks {
        return Err(Error::invalid(
            "Options::pin_l0_filter_and_index_blocks_in_cache = true has no effect with \
             cache_index_and_filter_blocks = false (valid: set both, or leave the pin false)",
        ));
    }
    Ok(())
}

/// Checks a filter policy's flush filter and allocation (also for a keyspace's own policy);
/// the error names the field, the value and the valid range.
pub(crate) fn check_filter_policy(p: &crate::options::FilterPolicy) -> Result<()> {
    check_flush_filter(&p.flush)?;
    check_allocation(&p.allocation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        Options::default().validate().unwrap();
    }

    #[test]
    fn caching_index_and_filter_blocks_needs_a_cache_and_pinning_needs_caching() {
        let no_cache = Options {
            cache_index_and_filter_blocks: true,
            block_cache_bytes: 0,
            ..Options::default()
        };
        let msg = no_cache.validate().unwrap_err().to_string();
        assert!(
            msg.contains("cache_index_and_filter_blocks") && msg.contains("block_cache_bytes = 0")
        );
        let pin_alone =
            Options { pin_l0_filter_and_index_blocks_in_cache: true, ..Options::default() };
        let msg = pin_alone.validate().unwrap_err().to_string();
        assert!(msg.contains("pin_l0_filter_and_index_blocks_in_cache"), "{msg}");
        let both = Options {
            cache_index_and_filter_blocks: true,
            pin_l0_filter_and_index_blocks_in_cache: true,
            ..Options::default()
        };
        both.validate().unwrap();
    }

    #[test]
    fn scan_filter_settings_out_of_range_are_refused_by_name() {
        use crate::options::RangeFilterOptions;
        for bad in [0.0, 0.5, 65.0, f64::NAN] {
            let opts = Options { prefix_filter_bits_per_key: bad, ..Options::default() };
            let msg = opts.validate().unwrap_err().to_string();
            assert!(msg.contains("prefix_filter_bits_per_key"), "{msg}");
        }
        for bad in [3.9, 40.5, f64::INFINITY] {
            let r = RangeFilterOptions { bits_per_key: bad, ..Default::default() };
            let opts = Options { range_filter: Some(r), ..Options::default() };
            let msg = opts.validate().unwrap_err().to_string();
            assert!(
                msg.contains("range_filter.bits_per_key") && msg.contains("4.0..=40.0"),
                "{msg}"
            );
        }
        let r = RangeFilterOptions { max_range: 0, ..Default::default() };
        let msg = Options { range_filter: Some(r), ..Options::default() }.validate().unwrap_err();
        assert!(msg.to_string().contains("range_filter.max_range = 0"), "{msg}");
        for good in [4.0, 14.0, 40.0] {
            let r = RangeFilterOptions { bits_per_key: good, max_range: 1 };
            Options { range_filter: Some(r), ..Options::default() }.validate().unwrap();
        }
    }

    #[test]
    fn the_error_names_field_value_and_range() {
        for bad in [0, 511, (1 << 20) + 1] {
            let opts = Options { metadata_block_size: bad, ..Options::default() };
            let msg = opts.validate().unwrap_err().to_string();
            assert!(
                msg.contains(&format!("metadata_block_size = {bad}"))
                    && msg.contains("512..=1048576"),
                "{msg}"
            );
        }
        for good in [512, 4096, 1 << 20] {
            let opts = Options {
                partition_filters: true,
                metadata_block_size: good,
                ..Options::default()
            };
            opts.validate().unwrap();
        }
        let opts = Options { block_size: 0, ..Options::default() };
        let msg = opts.validate().unwrap_err().to_string();
        assert!(msg.contains("block_size = 0") && msg.contains("64..=268435456"), "{msg}");
    }

    #[test]
    fn max_manifest_file_size_below_1_kib_is_refused_by_name() {
        for bad in [0, 1023] {
            let opts = Options { max_manifest_file_size: bad, ..Options::default() };
            let msg = opts.validate().unwrap_err().to_string();
            assert!(msg.contains(&format!("max_manifest_file_size = {bad}")), "{msg}");
            assert!(msg.contains("1024..="), "{msg}");
        }
        for good in [1024, u64::MAX] {
            Options { max_manifest_file_size: good, ..Options::default() }.validate().unwrap();
        }
    }

    #[test]
    fn max_subcompactions_outside_1_to_64_is_refused_by_name() {
        for bad in [0, 65] {
            let opts = Options { max_subcompactions: bad, ..Options::default() };
            let msg = opts.validate().unwrap_err().to_string();
            assert!(msg.contains(&format!("max_subcompactions = {bad}")), "{msg}");
            assert!(msg.contains("1..=64"), "{msg}");
        }
        for good in [1, 64] {
            Options { max_subcompactions: good, ..Options::default() }.validate().unwrap();
        }
    }
}
