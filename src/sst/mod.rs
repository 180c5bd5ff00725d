//! Sorted string tables: the immutable files an LSM level is made of.
//!
//! ```text
//! sst := data_block* filter_block? range_del_block? properties_block index_block footer
//! ```
//! (`filter_block` is one filter envelope, or a partitioned filter: src/sst/partitioned_filter.rs.)
//! * [`TableBuilder`] writes one table from entries in internal-key order ([`crate::ikey`]),
//!   collecting one 64-bit hash per distinct user key so the caller can build the filter at the
//!   end ([`FilterBlockSource`]).
//! * [`Table`] opens one for reads: the footer, properties, index and filter are loaded at open;
//!   [`Table::get`] probes the filter before touching any block; data blocks go through the
//!   shared [`BlockCache`].
//! * [`TableIter`] walks all entries in order (scans, compaction).
//!
//! Every block is framed with a compression type and a CRC-32; every length read from the file
//! is bounds-checked, so a damaged file yields `Error::Corruption` naming the file and offset,
//! never a panic. The byte layout is specified in docs/format.md#sstable.

pub(crate) mod blob;
mod block;
mod block_iter;
pub(crate) mod buffers;
mod builder;
mod cache_fill;
mod compression;
mod counters;
pub mod format;
pub(crate) mod index;
mod meta;
mod owned_filter;
mod partitioned_filter;
mod partitioned_index;
mod properties;
pub mod range_del_block;
mod reader;
mod scan_filters;
mod table_iter;

#[cfg(test)]
mod tests;

pub use block::{Block, BlockIter, BlockSlice};

/// The cache of decompressed SST blocks (data blocks; index and filter blocks are other kinds).
pub type BlockCache = crate::cache::Cache<Block>;

pub use builder::{FilterBlockSource, TableBuilder, TableSummary};
pub(crate) use cache_fill::CacheFill;
pub(crate) use counters::ScanCounters;
pub use meta::MetaPolicy;
pub use partitioned_filter::PartitionedFilterSource;
pub use properties::TableProperties;
pub(crate) use reader::{BlockFetch, FilterVerdict, ValueOut};
pub use reader::{GetResult, ReadCounters, ReadStats, Table};
pub use scan_filters::ScanFilterSpec;
pub use table_iter::TableIter;

/// Per-block compression of data blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Blocks are stored as built. Type byte 0.
    None,
    /// Each data block is zstd-compressed at `level` (1..=22; 3 is zstd's default) and stored
    /// compressed only if that saves at least 12.5% of its bytes. Type byte 1.
    Zstd {
        /// zstd compression level.
        level: i32,
    },
    /// Each data block is LZ4-compressed (block format, `lz4_flex`) and stored compressed only
    /// if that saves at least 12.5% of its bytes. Type byte 2 (tables holding it are format
    /// version 2). Compresses less than zstd at a fraction of its CPU cost.
    Lz4,
}

impl Compression {
    /// Tag recorded in the properties block: 0 = none, 1 = zstd, 2 = LZ4 (the block trailer's
    /// type bytes).
    pub fn tag(self) -> u8 {
        match self {
            Compression::None => format::COMPRESSION_NONE,
            Compression::Zstd { .. } => format::COMPRESSION_ZSTD,
            Compression::Lz4 => format::COMPRESSION_LZ4,
        }
    }
}

/// How tables are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOptions {
    /// Target uncompressed size of a data block; a block is cut once it reaches this size.
    /// Smaller blocks cost a larger index and more reads per scan; larger blocks cost more bytes
    /// read (and decompressed) per point lookup. Defaults to 4096. Must be in 64..=256 MiB.
    pub block_size: usize,
    /// Entries between restart points in data blocks: a seek scans at most this many entries
    /// after its binary search; smaller values store more full keys. Defaults to 16. Index
    /// blocks always use 1 (every separator stored whole).
    pub restart_interval: usize,
    /// Compression of data blocks (the filter, properties and index blocks are never
    /// compressed). Defaults to [`Compression::None`].
    pub compression: Compression,
    /// Keep each data block within one 4 KiB page (docs/format.md#aligned-data-blocks): blocks
    /// are cut where they are predicted to fill the rest of a page, and one that does not fit
    /// is moved to the next page behind zero padding. A direct read of a block then transfers
    /// one page, not two. Blocks then average somewhat under `block_size`, and none is cut
    /// larger than a page of framed bytes unless one entry alone is. Defaults to false.
    pub block_align: bool,
    /// Largest zstd compression dictionary of a table, in bytes (RocksDB's
    /// `compression_opts.max_dict_bytes`; design.md#zstd-dictionaries): 0 (the default) writes
    /// none. Only zstd tables use it: the builder keeps its first data blocks uncompressed
    /// until it has [`TableOptions::zstd_max_train_bytes`] of them, trains the dictionary on
    /// them, and compresses every data block with it (format version 8).
    pub max_dict_bytes: usize,
    /// Bytes of data blocks the dictionary is trained on (RocksDB's `zstd_max_train_bytes`);
    /// the memory the builder buffers. 0: the first `max_dict_bytes` of data blocks are the
    /// dictionary as they are (raw content, no training).
    pub zstd_max_train_bytes: usize,
    /// With `zstd_max_train_bytes > 0`: train with zstd's trainer (`true`), or finalize the
    /// samples' last `max_dict_bytes` as the dictionary (RocksDB's `use_zstd_dict_trainer`).
    pub use_zstd_dict_trainer: bool,
}

impl From<crate::options::Compression> for Compression {
    /// The SST codec of an option's compression.
    fn from(c: crate::options::Compression) -> Compression {
        match c {
            crate::options::Compression::None => Compression::None,
            crate::options::Compression::Zstd(level) => Compression::Zstd { level },
            crate::options::Compression::Lz4 => Compression::Lz4,
        }
    }
}

impl TableOptions {
    /// Table options of files written to `level` (0 for flushes, the output level for
    /// compactions) by a compaction that is `bottommost` or not (the zstd dictionary settings
    /// differ: `Options::bottommost_compression_max_dict_bytes`; flushes pass `false`), derived
    /// from the engine options (a keyspace's own options replace block size and compression:
    /// `db::keyspace::Layout`).
    pub(crate) fn for_output(
        opts: &crate::options::Options,
        level: usize,
        bottommost: bool,
    ) -> TableOptions {
        let (max_dict_bytes, zstd_max_train_bytes) = opts.dictionary_for(bottommost);
        TableOptions {
            block_size: opts.block_size,
            restart_interval: opts.block_restart_interval,
            compression: opts.compression_for_level(level).into(),
            block_align: opts.block_align,
            max_dict_bytes,
            zstd_max_train_bytes,
            use_zstd_dict_trainer: opts.compression_use_zstd_dict_trainer,
        }
    }
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            compression: Compression::None,
            block_align: false,
            max_dict_bytes: 0,
            zstd_max_train_bytes: 0,
            use_zstd_dict_trainer: true,
        }
    }
}
