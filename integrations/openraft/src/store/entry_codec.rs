//! The binary encoding of a Raft log entry (the value under its index in `raft_log`), in place
//! of the JSON earlier versions wrote, which the decoder still reads (a JSON entry starts with
//! `{`, never with the format byte). The byte table is in README.md ("Log entry format").
//!
//! All integers little-endian:
//! format byte 1 | term u64 | leader node id u64 | index u64 | payload tag u8 | payload, where
//! payload is nothing (tag 0, blank), a request (tag 1: request tag u8, 0 set / 1 delete, key
//! length u32, key, and for a set value length u32, value) or a membership (tag 2: length u32,
//! openraft's `Membership` as JSON: rare, and its shape is openraft's).

use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};

use crate::{Request, TypeConfig};

/// The first byte of a binary entry.
const FORMAT: u8 = 1;

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
            match req {
                Request::Set { key, value } => {
                    out.push(0);
                    bytes(out, key.as_bytes());
                    bytes(out, value.as_bytes());
                }
                Request::Delete { key } => {
                    out.push(1);
                    bytes(out, key.as_bytes());
                }
            }
        }
        EntryPayload::Membership(m) => {
            out.push(2);
            bytes(out, &serde_json::to_vec(m).expect("Membership serializes"));
        }
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

    fn string(&mut self, what: &str) -> Result<String, String> {
        let n = self.u32(what)? as usize;
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| format!("{what} is not UTF-8"))
    }
}

/// Decodes an entry in either format; the error says what is wrong.
pub(crate) fn decode(bytes: &[u8]) -> Result<Entry<TypeConfig>, String> {
    match bytes.first() {
        Some(b'{') => return serde_json::from_slice(bytes).map_err(|e| format!("JSON entry: {e}")),
        Some(&FORMAT) => {}
        Some(b) => return Err(format!("unknown entry format byte {b}")),
        None => return Err("empty entry".into()),
    }
    let mut r = Reader { bytes, at: 1 };
    let term = r.u64("term")?;
    let node_id = r.u64("leader node id")?;
    let index = r.u64("index")?;
    let payload = match r.u8("payload tag")? {
        0 => EntryPayload::Blank,
        1 => match r.u8("request tag")? {
            0 => {
                let key = r.string("key")?;
                EntryPayload::Normal(Request::Set { key, value: r.string("value")? })
            }
            1 => EntryPayload::Normal(Request::Delete { key: r.string("key")? }),
            t => return Err(format!("unknown request tag {t}")),
        },
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
        set.payload = EntryPayload::Normal(Request::Set { key: "k".into(), value: "v é".into() });
        let mut del = blank_ent::<TypeConfig>(u64::MAX, u64::MAX, u64::MAX);
        del.payload = EntryPayload::Normal(Request::Delete { key: String::new() });
        vec![
            blank_ent::<TypeConfig>(1, 1, 1),
            membership_ent::<TypeConfig>(1, 1, 2, vec![[1, 2, 3].into()]),
            set,
            del,
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
    fn binary_is_smaller_than_json() {
        let e = &entries()[2];
        let mut b = Vec::new();
        encode(e, &mut b);
        // 1 + 3 x 8 + 1 + 1 + (4 + 1) + (4 + 4): the fixed fields and the two strings.
        assert_eq!(b.len(), 1 + 24 + 2 + 5 + 8);
        assert!(b.len() * 2 < serde_json::to_vec(e).unwrap().len());
    }
}
