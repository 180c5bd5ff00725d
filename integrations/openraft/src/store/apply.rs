//! What applying a run of entries does to the KV data, independent of the engine: the data
//! writes in order, each request's response, the last log id and the last membership. Both
//! stores (siftdb here, RocksDB in peer_rocksdb.rs) turn the plan into one write batch.

use std::collections::HashMap;

use openraft::{EntryPayload, LogId, StorageError, StorageIOError, StoredMembership};

use crate::{NodeId, Request, Response, TypeConfig};

/// One write to the data keyspace.
pub(crate) enum DataWrite {
    /// Set the key to the value.
    Put(Vec<u8>, Vec<u8>),
    /// Remove the key.
    Delete(Vec<u8>),
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
    mut get: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, E>,
) -> Result<ApplyPlan, StorageError<NodeId>> {
    let mut plan =
        ApplyPlan { writes: Vec::new(), responses: Vec::new(), last: None, membership: None };
    // Values written earlier in this run, which `get` cannot see yet.
    let mut pending: HashMap<Vec<u8>, Option<Vec<u8>>> = HashMap::new();
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
                plan_request(req, log_id, &mut plan.writes, &mut pending, &mut get)?
            }
        };
        plan.responses.push(response);
    }
    Ok(plan)
}

/// Plans one request (a batch: each of its requests in order) and returns its response.
fn plan_request<E: std::fmt::Display>(
    req: Request,
    log_id: LogId<NodeId>,
    writes: &mut Vec<DataWrite>,
    pending: &mut HashMap<Vec<u8>, Option<Vec<u8>>>,
    get: &mut impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, E>,
) -> Result<Response, StorageError<NodeId>> {
    let (key, value) = match req {
        Request::Set { key, value } => (key, Some(value)),
        Request::Delete { key } => (key, None),
        Request::Batch(reqs) => {
            let mut batch = Vec::with_capacity(reqs.len());
            for r in reqs {
                batch.push(plan_request(r, log_id, writes, pending, get)?);
            }
            return Ok(Response { previous: None, batch });
        }
    };
    let previous = match pending.get(&key) {
        Some(v) => v.clone(),
        None => get(&key).map_err(|e| StorageIOError::apply(log_id, super::to_any(e)))?,
    };
    pending.insert(key.clone(), value.clone());
    writes.push(match value {
        Some(v) => DataWrite::Put(key, v),
        None => DataWrite::Delete(key),
    });
    Ok(Response { previous, batch: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::testing::blank_ent;

    fn entry(index: u64, req: Request) -> openraft::Entry<TypeConfig> {
        let mut e = blank_ent::<TypeConfig>(1, 1, index);
        e.payload = EntryPayload::Normal(req);
        e
    }

    fn set(k: &str, v: &str) -> Request {
        Request::set(k, v)
    }

    #[test]
    fn a_batch_applies_in_order_with_one_response_per_request() {
        let batch =
            Request::Batch(vec![set("a", "1"), set("a", "2"), Request::delete("a"), set("b", "3")]);
        let entries = vec![entry(1, set("b", "0")), entry(2, batch), entry(3, set("a", "4"))];
        let plan = plan(entries, |k| Ok::<_, String>((k == b"a").then(|| b"0".to_vec()))).unwrap();
        let previous = |r: &Response| r.previous.clone();
        assert_eq!(plan.responses.len(), 3);
        assert_eq!(plan.responses[0].previous, None);
        let inner: Vec<_> = plan.responses[1].batch.iter().map(previous).collect();
        let v = |s: &str| Some(s.as_bytes().to_vec());
        assert_eq!(inner, [v("0"), v("1"), v("2"), v("0")]);
        assert_eq!(plan.responses[2].previous, None, "a was deleted by the batch");
        let writes: Vec<String> = plan
            .writes
            .iter()
            .map(|w| match w {
                DataWrite::Put(k, v) => format!("{}={}", k.escape_ascii(), v.escape_ascii()),
                DataWrite::Delete(k) => format!("-{}", k.escape_ascii()),
            })
            .collect();
        assert_eq!(writes, ["b=0", "a=1", "a=2", "-a", "b=3", "a=4"]);
        assert_eq!(plan.last.unwrap().index, 3);
    }
}
