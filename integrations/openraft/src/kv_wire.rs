//! The binary bodies of the client routes `/kv/write`, `/kv/read`, `/kv/local` and `/kv/dump`
//! (content type [`CONTENT_TYPE`]): keys and values travel as their bytes, with a length in
//! front, so any bytes go and nothing is escaped. The same routes still take and give JSON
//! (keys and values as [`crate::bytes_json`]) when the request is not of this content type.
//!
//! All integers little-endian. A request body starts with the format byte [`FORMAT`]:
//!
//! | route | request body after the format byte |
//! |---|---|
//! | `/kv/write` | one request as in a log entry (README.md, "Log entry format"): tag `0` set (key length u32, key, value length u32, value), `1` delete (key length u32, key) or `2` batch (count u32, then that many sets or deletes) |
//! | `/kv/read`, `/kv/local` | the key: every byte after the format byte |
//! | `/kv/dump` | (a GET: the request sends `Accept: application/x-siftdb-kv`) |
//!
//! A reply body (HTTP 200) starts with a status byte: `1` then the error as the JSON routes
//! give it (openraft's `RaftError`, or a storage failure's text), or `0` then:
//!
//! | route | after status `0` |
//! |---|---|
//! | `/kv/write` | a response: previous value (`0` absent, or `1`, length u32, bytes), count u32 of a batch's responses, then each of them (the same, with count 0) |
//! | `/kv/read`, `/kv/local` | the value (`0` absent, or `1`, length u32, bytes) |
//! | `/kv/dump` | count u64 of pairs, then each: key length u32, key, value length u32, value |
//!
//! A body that fails to decode (empty, an unknown format byte or tag, truncated, bytes left
//! over, a batch inside a batch) is answered HTTP 400 with the [`KvWireError`] text, before
//! anything is proposed.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Pairs, Request, Response};

/// The content type of a binary request or reply.
pub const CONTENT_TYPE: &str = "application/x-siftdb-kv";

/// The first byte of every binary request body.
pub const FORMAT: u8 = 1;

/// Why a binary body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvWireError {
    /// The body is empty.
    Empty,
    /// The body starts with another byte than [`FORMAT`].
    UnknownFormat(u8),
    /// The reply starts with another status byte than 0 or 1.
    UnknownStatus(u8),
    /// A field is cut short, a tag is unknown or bytes are left over; says which and where.
    Malformed(String),
}

impl fmt::Display for KvWireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvWireError::Empty => write!(f, "empty body: expected the format byte {FORMAT}"),
            KvWireError::UnknownFormat(b) => {
                write!(f, "unknown format byte {b} (this node reads format {FORMAT})")
            }
            KvWireError::UnknownStatus(b) => write!(f, "unknown reply status byte {b}"),
            KvWireError::Malformed(what) => write!(f, "malformed body: {what}"),
        }
    }
}

impl std::error::Error for KvWireError {}

fn format_byte(body: &[u8]) -> Result<&[u8], KvWireError> {
    match body.split_first() {
        None => Err(KvWireError::Empty),
        Some((&FORMAT, rest)) => Ok(rest),
        Some((&b, _)) => Err(KvWireError::UnknownFormat(b)),
    }
}

/// The body of a binary `/kv/write` of `req`.
pub fn encode_write(req: &Request) -> Vec<u8> {
    let mut out = vec![FORMAT];
    crate::store::entry_codec::encode_request(req, &mut out);
    out
}

/// The request of a binary `/kv/write` body.
pub fn decode_write(body: &[u8]) -> Result<Request, KvWireError> {
    crate::store::entry_codec::decode_request_exact(format_byte(body)?)
        .map_err(KvWireError::Malformed)
}

/// The body of a binary `/kv/read` or `/kv/local` of `key`.
pub fn encode_key(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + key.len());
    out.push(FORMAT);
    out.extend_from_slice(key);
    out
}

/// The key of a binary `/kv/read` or `/kv/local` body.
pub fn decode_key(body: &[u8]) -> Result<&[u8], KvWireError> {
    format_byte(body)
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Appends a value that may be absent.
pub fn encode_value(v: &Option<Vec<u8>>, out: &mut Vec<u8>) {
    match v {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            put_bytes(out, b);
        }
    }
}

/// Appends a write's response (a batch's responses hold no batch).
pub fn encode_response(r: &Response, out: &mut Vec<u8>) {
    encode_value(&r.previous, out);
    out.extend_from_slice(&(r.batch.len() as u32).to_le_bytes());
    for inner in &r.batch {
        encode_value(&inner.previous, out);
        out.extend_from_slice(&0u32.to_le_bytes());
    }
}

/// Appends every pair of a dump.
pub fn encode_pairs(pairs: &[(Vec<u8>, Vec<u8>)], out: &mut Vec<u8>) {
    out.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
    for (k, v) in pairs {
        put_bytes(out, k);
        put_bytes(out, v);
    }
}

/// A reply body: status 0 and what `ok` appends, or status 1 and the error's JSON.
pub fn encode_reply<T, E: Serialize>(
    result: &Result<T, E>,
    ok: impl FnOnce(&T, &mut Vec<u8>),
) -> Vec<u8> {
    let mut out = Vec::new();
    match result {
        Ok(t) => {
            out.push(0);
            ok(t, &mut out);
        }
        Err(e) => {
            out.push(1);
            serde_json::to_writer(&mut out, e).expect("an error serializes");
        }
    }
    out
}

/// Bounds-checked reads of a reply body.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], KvWireError> {
        let s = self.at.checked_add(n).and_then(|end| self.bytes.get(self.at..end)).ok_or_else(
            || KvWireError::Malformed(format!("{what} at byte {} runs past the end", self.at)),
        )?;
        self.at += n;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32, KvWireError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4, what)?);
        Ok(u32::from_le_bytes(a))
    }

    fn u64(&mut self, what: &str) -> Result<u64, KvWireError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(a))
    }

    fn bytes(&mut self, what: &str) -> Result<Vec<u8>, KvWireError> {
        let n = self.u32(what)? as usize;
        Ok(self.take(n, what)?.to_vec())
    }

    /// A value that may be absent.
    pub fn value(&mut self) -> Result<Option<Vec<u8>>, KvWireError> {
        match self.take(1, "value tag")?.first() {
            Some(0) => Ok(None),
            Some(1) => Ok(Some(self.bytes("value")?)),
            t => Err(KvWireError::Malformed(format!("unknown value tag {t:?}"))),
        }
    }

    /// A write's response.
    pub fn response(&mut self) -> Result<Response, KvWireError> {
        let previous = self.value()?;
        let n = self.u32("batch count")? as usize;
        // Each response takes at least 5 bytes: a count past that is refused before anything
        // is allocated for it.
        if n > (self.bytes.len() - self.at) / 5 {
            return Err(KvWireError::Malformed(format!("batch count {n} exceeds the body")));
        }
        let mut batch = Vec::with_capacity(n);
        for _ in 0..n {
            let previous = self.value()?;
            if self.u32("batch count")? != 0 {
                return Err(KvWireError::Malformed("a batch response inside a batch".into()));
            }
            batch.push(Response { previous, batch: Vec::new() });
        }
        Ok(Response { previous, batch })
    }

    /// A dump's pairs.
    pub fn pairs(&mut self) -> Result<Pairs, KvWireError> {
        let n = self.u64("pair count")?;
        // Each pair takes at least 8 bytes.
        if n > ((self.bytes.len() - self.at) / 8) as u64 {
            return Err(KvWireError::Malformed(format!("pair count {n} exceeds the body")));
        }
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let k = self.bytes("key")?;
            out.push((k, self.bytes("value")?));
        }
        Ok(out)
    }
}

/// Decodes a reply body: the error of status 1, or what `ok` reads after status 0 (which must
/// be the whole rest of the body).
pub fn decode_reply<T, E: DeserializeOwned>(
    body: &[u8],
    ok: impl FnOnce(&mut Reader<'_>) -> Result<T, KvWireError>,
) -> Result<Result<T, E>, KvWireError> {
    match body.split_first() {
        None => Err(KvWireError::Empty),
        Some((0, rest)) => {
            let mut r = Reader { bytes: rest, at: 0 };
            let t = ok(&mut r)?;
            if r.at != rest.len() {
                let left = rest.len() - r.at;
                return Err(KvWireError::Malformed(format!("{left} bytes after the reply")));
            }
            Ok(Ok(t))
        }
        Some((1, rest)) => serde_json::from_slice(rest)
            .map(Err)
            .map_err(|e| KvWireError::Malformed(format!("the error's JSON: {e}"))),
        Some((&b, _)) => Err(KvWireError::UnknownStatus(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_byte() -> Vec<u8> {
        (0..=255u8).collect()
    }

    #[test]
    fn requests_round_trip_and_every_truncation_is_refused() {
        let reqs = [
            Request::set(every_byte(), vec![0xc3, 0x28, 0xff]),
            Request::set(Vec::new(), Vec::new()),
            Request::delete(vec![0u8]),
            Request::Batch(vec![Request::set(vec![0x80], vec![0xfe]), Request::delete("x")]),
        ];
        for req in reqs {
            let body = encode_write(&req);
            assert_eq!(decode_write(&body).unwrap(), req);
            for n in 0..body.len() {
                assert!(decode_write(&body[..n]).is_err(), "truncation to {n} of {req}");
            }
            let mut longer = body.clone();
            longer.push(0);
            assert!(decode_write(&longer).unwrap_err().to_string().contains("after the request"));
        }
        assert_eq!(decode_write(&[]), Err(KvWireError::Empty));
        assert_eq!(decode_write(&[7, 0]), Err(KvWireError::UnknownFormat(7)));
        let e = decode_write(&[FORMAT, 9]).unwrap_err().to_string();
        assert!(e.contains("unknown request tag 9"), "{e}");
        // A batch inside a batch.
        let e = decode_write(&[FORMAT, 2, 1, 0, 0, 0, 2, 0, 0, 0, 0]).unwrap_err().to_string();
        assert!(e.contains("inside a batch"), "{e}");
        assert_eq!(decode_key(&encode_key(&every_byte())).unwrap(), every_byte());
    }

    #[test]
    fn replies_round_trip_and_refuse_truncations() {
        let r = Response {
            previous: Some(every_byte()),
            batch: vec![
                Response { previous: None, batch: Vec::new() },
                Response { previous: Some(Vec::new()), batch: Vec::new() },
            ],
        };
        let ok: Result<Response, String> = Ok(r.clone());
        let body = encode_reply(&ok, encode_response);
        let back: Result<Response, String> = decode_reply(&body, |r| r.response()).unwrap();
        assert_eq!(back, ok);
        for n in 0..body.len() {
            let d = decode_reply::<_, String>(&body[..n], |r| r.response());
            assert!(d.is_err(), "truncation to {n}");
        }
        let pairs = vec![(every_byte(), vec![0xff]), (vec![0xff, 0xff], Vec::new())];
        let body = encode_reply(&Ok::<_, String>(pairs.clone()), |p, out| encode_pairs(p, out));
        let back = decode_reply::<_, String>(&body, |r| r.pairs()).unwrap();
        assert_eq!(back, Ok(pairs));
        let err: Result<Option<Vec<u8>>, String> = Err("disk on fire".into());
        let body = encode_reply(&err, encode_value);
        assert_eq!(decode_reply::<_, String>(&body, |r| r.value()).unwrap(), err);
        let huge = [0u8, 0, 0xff, 0xff, 0xff, 0xff];
        let e = decode_reply::<_, String>(&huge, |r| r.response()).unwrap_err();
        assert!(e.to_string().contains("exceeds the body"), "{e}");
        assert_eq!(
            decode_reply::<_, String>(&[5], |r| r.value()).unwrap_err(),
            KvWireError::UnknownStatus(5)
        );
    }

    #[test]
    fn json_form_is_a_string_for_utf8_and_base64_otherwise() {
        let text = Request::set("k", "v é");
        let j = serde_json::to_string(&text).unwrap();
        assert_eq!(j, r#"{"Set":{"key":"k","value":"v é"}}"#, "earlier versions' form");
        let bin = Request::set(every_byte(), vec![0xff]);
        let j = serde_json::to_string(&bin).unwrap();
        assert!(j.contains(r#""value":{"base64":"/w=="}"#), "{j}");
        assert_eq!(serde_json::from_str::<Request>(&j).unwrap(), bin);
        let arr: Request = serde_json::from_str(r#"{"Delete":{"key":[0,255]}}"#).unwrap();
        assert_eq!(arr, Request::delete(vec![0, 255]));
        let bad = serde_json::from_str::<Request>(r#"{"Delete":{"key":{"base64":"!!"}}}"#);
        assert!(bad.unwrap_err().to_string().contains("base64"));
        let other = serde_json::from_str::<Request>(r#"{"Delete":{"key":{"hex":"00"}}}"#);
        assert!(other.unwrap_err().to_string().contains("unexpected field"));
        let none = Response::default();
        let j = serde_json::to_string(&none).unwrap();
        assert_eq!(serde_json::from_str::<Response>(&j).unwrap(), none);
    }
}
