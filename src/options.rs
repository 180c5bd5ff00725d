//! Engine options. Every field states its default and its trade-off.

use crate::storage::Storage;
use std::sync::Arc;

/// Per-block compression of SST data blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Blocks stored as is: fastest reads, largest files.
    None,
    /// zstd at the given level (1..=22). A block is stored compressed only if that saves at
    /// least 12.5%. Smaller files and fewer bytes read, at the cost of decompression per block
    /// read that misses the block cache.
    Zstd(i32),
}

/// A filter to attach to an SST, with its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FilterConfig {
    /// No filter: every lookup of a key inside the file's key range reads an index and a data
    /// block.
    None,
    /// Floe's two-bit Bloom filter (two bits in one u32 word) at this many bits per key. Its FPR
    /// is higher than a classic Bloom filter's at equal memory (about 4.0% at 10 bits/key, 1.9%
    /// at 16), but the memtable fills it lock-free, so a flush can write it without a second pass.
    TwoBitBloom {
        /// Bits per key.
        bits_per_key: f64,
    },
    /// RocksDB-style cache-line-blocked Bloom filter (about 0.95% FPR at 10 bits/key).
    BlockedBloom {
        /// Bits per key.
        bits_per_key: f64,
    },
    /// Classic Bloom filter (about 0.82% at 10 bits/key, k probes in different cache lines).
    StandardBloom {
        /// Bits per key.
        bits_per_key: f64,
    },
}

impl FilterConfig {
    /// Bits per key of this configuration (0 for `None`).
    pub fn bits_per_key(&self) -> f64 {
        match *self {
            FilterConfig::None => 0.0,
            FilterConfig::TwoBitBloom { bits_per_key }
            | FilterConfig::BlockedBloom { bits_per_key }
            | FilterConfig::StandardBloom { bits_per_key } => bits_per_key,
        }
    }
}

/// Which filter each SST gets.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPolicy {
    /// Filter of the L0 files written by a flush. Defaults to `TwoBitBloom { bits_per_key: 16 }`
    /// (about 1.9% FPR): the memtable's own lock-free filter is written as is when its fill
    /// keeps the estimated FPR within the configured one (design.md, "Flush filter rule"), so a
    /// flush costs no extra hashing pass. L0 files are few and short-lived; their filters are
    /// replaced by static filters at compaction.
    pub flush: FilterConfig,
}

impl Default for FilterPolicy {
    fn default() -> Self {
        FilterPolicy { flush: FilterConfig::TwoBitBloom { bits_per_key: 16.0 } }
    }
}

/// Options of [`crate::Db::open`].
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Bytes of user data (keys + values + per-entry overhead) a memtable holds before it is
    /// frozen and flushed. Default 64 MiB (RocksDB's `write_buffer_size`). Larger: fewer, larger
    /// L0 files and fewer compactions; more memory and a longer WAL replay after a crash.
    pub memtable_size: usize,
    /// Frozen memtables allowed to wait for the flush thread before writers block. Default 2.
    /// More absorbs write bursts at the cost of memory.
    pub max_immutable_memtables: usize,
    /// Target uncompressed size of an SST data block. Default 4096. Smaller blocks read fewer
    /// bytes per point lookup but grow the index.
    pub block_size: usize,
    /// Keys between restart points inside a block. Default 16. Smaller speeds up seeks inside a
    /// block, larger compresses key prefixes better.
    pub block_restart_interval: usize,
    /// Data block compression. Default `Compression::None` (point lookups skip decompression).
    pub compression: Compression,
    /// Bytes of the shared block cache (data and index blocks). Default 32 MiB; 0 disables it.
    pub block_cache_bytes: usize,
    /// Filters per level. See [`FilterPolicy`].
    pub filter_policy: FilterPolicy,
    /// The file system. Default `None` = the real one; tests pass an in-memory,
    /// fault-injecting storage.
    pub storage: Option<Arc<dyn Storage>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            memtable_size: 64 << 20,
            max_immutable_memtables: 2,
            block_size: 4096,
            block_restart_interval: 16,
            compression: Compression::None,
            block_cache_bytes: 32 << 20,
            filter_policy: FilterPolicy::default(),
            storage: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("memtable_size", &self.memtable_size)
            .field("max_immutable_memtables", &self.max_immutable_memtables)
            .field("block_size", &self.block_size)
            .field("block_restart_interval", &self.block_restart_interval)
            .field("compression", &self.compression)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("filter_policy", &self.filter_policy)
            .field("storage", &self.storage.as_ref().map(|_| "custom"))
            .finish()
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `true`: the call returns only after the WAL record is fsynced, so an acknowledged write
    /// survives power loss. `false` (the default, as in RocksDB): the record is handed to the OS,
    /// which writes it back when it chooses; it survives a crash of the process but not of the
    /// machine. A synced write also makes every earlier buffered write durable.
    pub sync: bool,
}
