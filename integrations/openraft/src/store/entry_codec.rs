//! The binary encoding of a Raft log entry (the value under its index in `raft_log`), in place
//! of the JSON earlier versions wrote, which the decoder still reads (a JSON entry starts with
//! `{`, never with the format byte). The byte table is in README.md ("Log entry format").
//!
//! All integers little-endian:
//! format byte 2 | term u64 | leader node id u64 | index u64 | payload tag u8 | payload, where
//! payload is nothing (tag 0, blank), a request (tag 1: request tag u8, 0 set / 1 delete, key
//! length u32, key, and for a set value length u32, value; 2 batch, count u32, then that many
//! set or delete requests, each with its request tag) or a membership (tag 2: length u32,
//! openraft's `Membership` as JSON: rare, and its shape is openraft's). Format 1 (earlier
//! versions) is the same without the batch tag.

use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};

use crate::{Request, TypeConfig};

/// The first byte of a binary entry.
const FORMAT: u8 = 2;
/// The format byte of earlier versions: no batch requests.
const FORMAT_1: u8 = 1;

/// Appends the encoding of `entry` to `out`.
pub(crate) fn encode(entry: &Entry<TypeConfig>, out: &mut Vec<u8>) {
    out.push(FORMAT);
    out.extend_from_slice(&entry.log_id.leader_id.term.to_le_bytes());
    out.extend_from_slice(&entry.log_id.leader_id.node_id.to_le_bytes());
    out.extend_from_slice(&entry.log_id.index.to_le_bytes());
    let bytes = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    match &entry.payload {
        EntryPayload::Blank => out.push(0),
        EntryPayload::Normal(req) => {
            out.push(1);
            encode_request(req, out);
        }
        EntryPayload::Membership(m) => {
            out.push(2);
            bytes(out, &serde_json::to_vec(m).expect("Membership serializes"));
        }
    }
}

/// Appends the encoding of `req` (its request tag first) to `out`; the client routes' binary
/// write body uses the same encoding (`crate::kv_wire`).
pub(crate) fn encode_request(req: &Request, out: &mut Vec<u8>) {
    let bytes = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    match req {
        Request::Set { key, value } => {
            out.push(0);
            bytes(out, key);
            bytes(out, value);
        }
        Request::Delete { key } => {
            out.push(1);
            bytes(out, key);
        }
        Request::Batch(reqs) => {
            out.push(2);
            out.extend_from_slice(&(reqs.len() as u32).to_le_bytes());
            for r in reqs {
                encode_request(r, out);
            }
        }
    }
}

/// Decodes a request; `batch_allowed` when it may be a batch (format 2, not inside a batch, so
/// the nesting of a corrupt entry cannot grow the stack).
fn decode_request(r: &mut Reader<'_>, batch_allowed: bool) -> Result<Request, String> {
    match r.u8("request tag")? {
        0 => {
            let key = r.bytes("key")?;
            Ok(Request::Set { key, value: r.bytes("value")? })
        }
        1 => Ok(Request::Delete { key: r.bytes("key")? }),
        2 if batch_allowed => {
            let n = r.u32("batch count")?;
            // Each request takes at least 5 bytes: a count past that is corrupt, and is refused
            // before anything is allocated for it.
            if n as usize > (r.bytes.len() - r.at) / 5 {
                return Err(format!("batch count {n} at byte {} exceeds the entry", r.at - 4));
            }
            let mut reqs = Vec::with_capacity(n as usize);
            for _ in 0..n {
                reqs.push(decode_request(r, false)?);
            }
            Ok(Request::Batch(reqs))
        }
        2 => Err("a batch request inside a batch or in a format 1 entry".into()),
        t => Err(format!("unknown request tag {t}")),
    }
}

/// Bounds-checked reads.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let s = self
            .at
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or_else(|| format!("{what} at byte {} runs past the end", self.at))?;
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, String> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4, what)?);
        Ok(u32::from_le_bytes(a))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(a))
    }

    fn bytes(&mut self, what: &str) -> Result<Vec<u8>, String> {
        let n = self.u32(what)? as usize;
        Ok(self.take(n, what)?.to_vec())
    }
}

/// Decodes one request as [`encode_request`] writes it, the whole of `bytes` (a batch may hold
/// sets and deletes, not batches); the error names what is wrong and at which byte.
pub(crate) fn decode_request_exact(bytes: &[u8]) -> Result<Request, String> {
    let mut r = Reader { bytes, at: 0 };
    let req = decode_request(&mut r, true)?;
    if r.at != bytes.len() {
        return Err(format!("{} bytes after the request", bytes.len() - r.at));
    }
    Ok(req)
}

/// Decodes an entry in either format; the error says what is wrong.
pub(crate) fn decode(bytes: &[u8]) -> Result<Entry<TypeConfig>, String> {
    match bytes.first() {
        Some(b'{') => return serde_json::from_slice(bytes).map_err(|e| format!("JSON entry: {e}")),
        Some(&FORMAT) | Some(&FORMAT_1) => {}
        Some(b) => return Err(format!("unknown entry format byte {b}")),
        None => return Err("empty entry".into()),
    }
    let mut r = Reader { bytes, at: 1 };
    let term = r.u64("term")?;
    let node_id = r.u64("leader node id")?;
    let index = r.u64("index")?;
    let payload = match r.u8("payload tag")? {
        0 => EntryPayload::Blank,
        1 => EntryPayload::Normal(decode_request(&mut r, bytes.first() == Some(&FORMAT))?),
        2 => {
            let n = r.u32("membership length")? as usize;
            let m = serde_json::from_slice(r.take(n, "membership")?)
                .map_err(|e| format!("membership: {e}"))?;
            EntryPayload::Membership(m)
        }
        t => return Err(format!("unknown payload tag {t}")),
    };
    if r.at != bytes.len() {
        return Err(format!("{} bytes after the payload", bytes.len() - r.at));
    }
    Ok(Entry { log_id: LogId::new(CommittedLeaderId::new(term, node_id), index), payload })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::testing::{blank_ent, membership_ent};

    fn entries() -> Vec<Entry<TypeConfig>> {
        let mut set = blank_ent::<TypeConfig>(3, 2, 10);
        set.payload = EntryPayload::Normal(Request::set("k", "v é"));
        let mut del = blank_ent::<TypeConfig>(u64::MAX, u64::MAX, u64::MAX);
        del.payload = EntryPayload::Normal(Request::delete(Vec::new()));
        let mut batch = blank_ent::<TypeConfig>(4, 1, 11);
        batch.payload = EntryPayload::Normal(Request::Batch(vec![
            Request::set("a", "1"),
            Request::delete("b"),
            // Every byte value, and bytes that are not UTF-8.
            Request::set((0..=255u8).collect::<Vec<u8>>(), vec![0xff, 0xfe, 0x00, 0xc3]),
        ]));
        let mut empty_batch = blank_ent::<TypeConfig>(4, 1, 12);
        empty_batch.payload = EntryPayload::Normal(Request::Batch(Vec::new()));
        vec![
            blank_ent::<TypeConfig>(1, 1, 1),
            membership_ent::<TypeConfig>(1, 1, 2, vec![[1, 2, 3].into()]),
            set,
            del,
            batch,
            empty_batch,
        ]
    }

    #[test]
    fn round_trip_both_formats_and_refusals() {
        for e in entries() {
            let mut b = Vec::new();
            encode(&e, &mut b);
            assert_eq!(decode(&b).unwrap(), e);
            assert_eq!(decode(&serde_json::to_vec(&e).unwrap()).unwrap(), e);
            // Every truncation is refused (lengths are checked, nothing is optional).
            for n in 0..b.len() {
                assert!(decode(&b[..n]).is_err(), "truncation to {n} of {e}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert!(decode(&longer).unwrap_err().contains("after the payload"));
        }
        assert!(decode(&[9]).unwrap_err().contains("format byte 9"));
    }

    #[test]
    fn format_1_entries_still_decode_and_hold_no_batch() {
        // A format 1 set entry, as earlier versions wrote it.
        let mut old = vec![FORMAT_1];
        for n in [3u64, 2, 10] {
            old.extend_from_slice(&n.to_le_bytes());
        }
        old.extend_from_slice(&[1, 0, 1, 0, 0, 0, b'k', 1, 0, 0, 0, b'v']);
        let e = decode(&old).unwrap();
        assert_eq!(e.payload, EntryPayload::Normal(Request::set("k", "v")));
        // The same with a batch request tag is refused in format 1.
        let mut b = old[..25].to_vec();
        b.extend_from_slice(&[1, 2, 0, 0, 0, 0]);
        assert!(decode(&b).unwrap_err().contains("format 1"), "{:?}", decode(&b));
        b[0] = FORMAT;
        assert_eq!(decode(&b).unwrap().payload, EntryPayload::Normal(Request::Batch(Vec::new())));
    }

    #[test]
    fn nested_batches_and_oversized_counts_are_refused() {
        let mut b = vec![FORMAT];
        for n in [1u64, 1, 5] {
            b.extend_from_slice(&n.to_le_bytes());
        }
        let head = b.clone();
        b.extend_from_slice(&[1, 2, 1, 0, 0, 0, 2, 0, 0, 0, 0]);
        assert!(decode(&b).unwrap_err().contains("inside a batch"));
        let mut big = head;
        big.extend_from_slice(&[1, 2, 0xff, 0xff, 0xff, 0xff]);
        assert!(decode(&big).unwrap_err().contains("exceeds the entry"));
    }

    #[test]
    fn binary_is_smaller_than_json() {
        let e = &entries()[2];
        let mut b = Vec::new();
        encode(e, &mut b);
        // 1 + 3 x 8 + 1 + 1 + (4 + 1) + (4 + 4): the fixed fields and the two strings.
        assert_eq!(b.len(), 1 + 24 + 2 + 5 + 8);
        assert!(b.len() * 2 < serde_json::to_vec(e).unwrap().len());
    }
}
