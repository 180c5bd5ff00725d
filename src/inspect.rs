//! Read-only access to a database's files, for tools and fuzzers: the `siftdb` CLI's `sst dump`,
//! `wal dump`, `manifest dump` and `stats` are built on this module and nothing else inside the
//! engine. The byte layouts these types decode are specified in docs/format.md; an embedder does
//! not need any of it to use [`crate::Db`].
//!
//! ```
//! use siftdb::inspect::{filename, manifest, sst::Table};
//! use siftdb::storage::{FsStorage, Storage};
//! use siftdb::{Db, Options};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("db");
//! let db = Db::open(&path, Options::default())?;
//! db.put("k", "v")?;
//! db.flush()?;
//! db.close()?;
//!
//! // The manifest names the live tables; each opens on its own.
//! let storage = FsStorage::new();
//! let state = manifest::recover(&storage, &path)?.expect("a database");
//! for (level, files) in state.levels.iter().enumerate() {
//!     for meta in files.values() {
//!         let file = path.join(filename::sst_name(meta.number));
//!         let table = Table::open(storage.open(&file)?, meta.number, None, &file)?;
//!         assert_eq!((level, table.properties().entries), (0, 1));
//!     }
//! }
//! # Ok::<(), siftdb::Error>(())
//! ```

/// SSTables: the reader, its properties, blocks and the fixed-size footer (docs/format.md#sstable).
pub mod sst {
    pub use crate::range_del::{Fragment, Fragments, RangeTombstone};
    pub use crate::sst::{Block, BlockIter, ReadCounters, Table, TableIter, TableProperties};
    /// The range-deletion block (format version 3): a table's range tombstones, fragmented.
    pub mod range_del_block {
        pub use crate::sst::range_del_block::{decode, encode};
    }
    /// The framing, block handles and footer of an SST, and the newest format version this build
    /// reads.
    pub mod format {
        pub use crate::sst::format::{
            unframe_block, BlockHandle, Footer, FOOTER_LEN, FORMAT_VERSION,
        };
    }
}

/// Write-ahead logs: torn-tail-aware recovery of their records (docs/format.md#wal),
/// and the write batches those records hold (docs/format.md#write-batch).
pub mod wal {
    pub use crate::batch::{decode_batch, BatchRecord, DecodedBatch};
    pub use crate::wal::{read_wal, WalReader, WalRecovery};
}

/// Blob files (docs/format.md#blob-file): the decoder of a whole file, and a reference's.
pub mod blob {
    pub use crate::sst::blob::{scan, BlobFileSummary, BlobMeta, BlobRecord, BlobRef};
}

/// The manifest: the version edits that record the live files (docs/format.md#manifest).
pub mod manifest {
    pub use crate::keyspace_options::Lifecycle;
    pub use crate::manifest::{recover, FileMeta, KeyspaceRecord, RecoveredState, VersionEdit};
}

/// Internal keys: user key, sequence number and kind (docs/format.md#internal-keys).
pub mod ikey {
    pub use crate::ikey::{decode, decode_in, keyspace, user_key, ValueKind};
}

/// The names of a database's files (`000012.sst`, `MANIFEST-000005`, `CURRENT`, ...).
pub mod filename {
    pub use crate::filename::{blob_name, parse_file_name, sst_name, wal_name, FileKind, CURRENT};
}
