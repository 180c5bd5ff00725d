//! openraft's own storage test suite (`openraft::testing::Suite`) against the siftdb store.

// openraft's error types are returned by value, as its traits do.
#![allow(clippy::result_large_err)]

use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use siftdb_openraft::store::{self, LogStore, StateMachine};
use siftdb_openraft::{NodeId, TypeConfig};
use tempfile::TempDir;

/// Each test of the suite gets a fresh node directory; the `TempDir` guard keeps it alive for
/// the test and removes it after.
struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (log, sm) = store::open(dir.path().join("node"), 1)
            .map_err(|e| openraft::StorageIOError::write(openraft::AnyError::error(e)))?;
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite() -> Result<(), StorageError<NodeId>> {
    Suite::test_all(Builder)
}

/// The same suite against the RocksDB peer store, so the comparison is between two stores that
/// both pass it (feature `rocksdb-peer`).
#[cfg(feature = "rocksdb-peer")]
mod rocksdb_peer {
    use siftdb_openraft::peer_rocksdb::{self, RocksLogStore, RocksStateMachine};

    use super::*;

    struct RocksBuilder;

    impl StoreBuilder<TypeConfig, RocksLogStore, RocksStateMachine, TempDir> for RocksBuilder {
        async fn build(
            &self,
        ) -> Result<(TempDir, RocksLogStore, RocksStateMachine), StorageError<NodeId>> {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let (log, sm) = peer_rocksdb::open(&dir.path().join("node"), 1)
                .map_err(|e| openraft::StorageIOError::write(openraft::AnyError::error(e)))?;
            Ok((dir, log, sm))
        }
    }

    #[test]
    fn openraft_storage_suite_rocksdb_peer() -> Result<(), StorageError<NodeId>> {
        Suite::test_all(RocksBuilder)
    }
}
