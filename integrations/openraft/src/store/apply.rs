//! What applying a run of entries does to the KV data, independent of the engine: the data
//! writes in order, each request's response, the last log id and the last membership. Both
//! stores (siftdb here, RocksDB in peer_rocksdb.rs) turn the plan into one write batch.

use std::collections::HashMap;

use openraft::{EntryPayload, LogId, StorageError, StorageIOError, StoredMembership};

use crate::{NodeId, Request, Response, TypeConfig};

/// One write to the data keyspace.
pub(crate) enum DataWrite {
    /// Set the key to the value.
    Put(String, String),
    /// Remove the key.
    Delete(String),
}

/// The effect of applying a run of entries.
pub(crate) struct ApplyPlan {
    /// The data writes, in log order.
    pub writes: Vec<DataWrite>,
    /// One response per entry.
    pub responses: Vec<Response>,
    /// The last entry's log id (`None` for an empty run).
    pub last: Option<LogId<NodeId>>,
    /// The last membership entry of the run, if any.
    pub membership: Option<StoredMembership<NodeId, openraft::BasicNode>>,
}

/// Plans `entries`; `get` reads a key's applied value (before this run).
pub(crate) fn plan<E: std::fmt::Display>(
    entries: impl IntoIterator<Item = openraft::Entry<TypeConfig>>,
    mut get: impl FnMut(&str) -> Result<Option<String>, E>,
) -> Result<ApplyPlan, StorageError<NodeId>> {
    let mut plan =
        ApplyPlan { writes: Vec::new(), responses: Vec::new(), last: None, membership: None };
    // Values written earlier in this run, which `get` cannot see yet.
    let mut pending: HashMap<String, Option<String>> = HashMap::new();
    for entry in entries {
        let log_id = entry.log_id;
        plan.last = Some(log_id);
        let response = match entry.payload {
            EntryPayload::Blank => Response::default(),
            EntryPayload::Membership(m) => {
                plan.membership = Some(StoredMembership::new(Some(log_id), m));
                Response::default()
            }
            EntryPayload::Normal(req) => {
                let key = match &req {
                    Request::Set { key, .. } | Request::Delete { key } => key.clone(),
                };
                let previous = match pending.get(&key) {
                    Some(v) => v.clone(),
                    None => {
                        get(&key).map_err(|e| StorageIOError::apply(log_id, super::to_any(e)))?
                    }
                };
                let write = match req {
                    Request::Set { key, value } => {
                        pending.insert(key.clone(), Some(value.clone()));
                        DataWrite::Put(key, value)
                    }
                    Request::Delete { key } => {
                        pending.insert(key.clone(), None);
                        DataWrite::Delete(key)
                    }
                };
                plan.writes.push(write);
                Response { previous }
            }
        };
        plan.responses.push(response);
    }
    Ok(plan)
}
