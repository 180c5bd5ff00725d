//! [`VersionEdit`] and [`FileMeta`] and their tagged binary encoding (docs/format.md#manifest).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

use crate::error::{Error, Result};
use crate::keyspace_options::{validate_name, KeyspaceOptions, Lifecycle};

/// Levels a file may live on. Decoding rejects larger levels, so replay never allocates from an
/// unchecked level number.
pub const MAX_LEVELS: usize = 16;

/// Field tags. Tags below [`OPTIONAL_TAG`] must be understood by a reader; tags at or above it
/// may be skipped by a reader that does not know them.
mod tag {
    pub const LOG_NUMBER: u16 = 1;
    pub const NEXT_FILE_NUMBER: u16 = 2;
    pub const LAST_SEQUENCE: u16 = 3;
    pub const DELETED_FILE: u16 = 4;
    pub const ADDED_FILE: u16 = 5;
    pub const KEYSPACE: u16 = 6;
    pub const KEYSPACE_DROPPED: u16 = 7;
    pub const DEFAULT_LIFECYCLE: u16 = 8;
    pub const GLOBAL_SEQ: u16 = 9;
    pub const BLOB_FILE_ADDED: u16 = 10;
    pub const BLOB_GARBAGE: u16 = 11;
    pub const STORED_KEYSPACE: u16 = 12;
}

/// First tag of the optional range: an unknown tag at or above it is skipped on decode.
pub const OPTIONAL_TAG: u16 = 0x8000;

/// Metadata of one table file, as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// File number (the table is `sst_name(number)`).
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
    /// Smallest user key in the file (of `keyspace`; range tombstones included).
    pub smallest_key: Vec<u8>,
    /// Largest user key in the file (of `keyspace`; range tombstones included).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number in the file.
    pub smallest_seq: u64,
    /// Largest sequence number in the file.
    pub largest_seq: u64,
    /// Number of entries (puts, deletes and range-deletion block entries) in the file.
    pub entries: u64,
    /// The keyspace of every key in the file (a file holds one keyspace; 0 = default).
    pub keyspace: u32,
    /// An ingested file's global sequence number (tag 9, design.md#ingestion-and-export): its
    /// entries are stored at sequence 0 and every reader sees them (and its range tombstones)
    /// at this sequence instead. `None` for the files the engine writes itself.
    pub global_seq: Option<u64>,
    /// An adopted file's stored keyspace id (tag 12, design.md#ingestion-and-export): its
    /// keys carry this id in the file and every reader sees them as keys of `keyspace`.
    /// Both ids are non-zero and differ. `None` when the keys carry `keyspace` itself.
    pub stored_keyspace: Option<u32>,
}

impl FileMeta {
    /// The smallest key as `(keyspace, user key)`, the order files are compared in.
    pub fn smallest(&self) -> (u32, &[u8]) {
        (self.keyspace, &self.smallest_key)
    }

    /// The largest key as `(keyspace, user key)`.
    pub fn largest(&self) -> (u32, &[u8]) {
        (self.keyspace, &self.largest_key)
    }
}

/// A keyspace as the manifest records it (tag 6): created, or its options changed.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyspaceRecord {
    /// Its id (never 0: the default keyspace is not recorded), never reused.
    pub id: u32,
    /// Its name (1..=255 bytes of UTF-8).
    pub name: String,
    /// The options its files are written with (the compaction filter is not recorded: only
    /// its name, `filter_name`).
    pub options: KeyspaceOptions,
    /// The name of the compaction filter it was last opened with (empty: none).
    pub filter_name: String,
}

/// A change to the set of live files and counters; the manifest is a log of these.
///
/// Replay applies an edit's deletions before its additions, so moving a file between levels is
/// one edit deleting it from one level and adding it to another.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VersionEdit {
    /// Number of the oldest WAL still needed: WALs with smaller numbers are obsolete.
    pub log_number: Option<u64>,
    /// The next unused file number (every file number ever allocated is below it).
    pub next_file_number: Option<u64>,
    /// The largest sequence number made durable in a table.
    pub last_sequence: Option<u64>,
    /// Files added, with their level.
    pub added: Vec<(u32, FileMeta)>,
    /// Files removed: (level, file number).
    pub deleted: Vec<(u32, u64)>,
    /// Keyspaces created or whose options changed (tag 6).
    pub keyspaces: Vec<KeyspaceRecord>,
    /// Keyspaces dropped (tag 7), by id.
    pub dropped_keyspaces: Vec<u32>,
    /// The default keyspace's TTL and compaction filter name (tag 8; design.md#ttl), written
    /// only when either is set. Required: a build without it refuses the manifest rather
    /// than return values with their write times.
    pub default_lifecycle: Option<Lifecycle>,
    /// Blob files added (tag 10), with their value count and bytes (their garbage fields are
    /// ignored: garbage is recorded by tag 11).
    pub blob_files: Vec<crate::sst::blob::BlobMeta>,
    /// Garbage added to blob files (tag 11): `(file number, values, bytes)`. A file whose
    /// values are all garbage is obsolete (replay removes it).
    pub blob_garbage: Vec<(u64, u64, u64)>,
}

fn put_field(out: &mut Vec<u8>, tag: u16, value: &[u8]) {
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
}

/// A cursor over an edit's bytes that names the field on every failure.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let Some(taken) = rest.get(..n) else {
            let msg = format!("version edit: {what} needs {n} bytes, {} left", rest.len());
            return Err(Error::corruption(msg, Some(self.pos as u64)));
        };
        self.pos += n;
        Ok(taken)
    }

    fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().expect("2 bytes")))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }

    fn level(&mut self, what: &str) -> Result<u32> {
        let at = self.pos as u64;
        let level = self.u32(what)?;
        if level as usize >= MAX_LEVELS {
            let msg = format!("version edit: {what} {level} is not below {MAX_LEVELS}");
            return Err(Error::corruption(msg, Some(at)));
        }
        Ok(level)
    }

    fn key(&mut self, what: &str) -> Result<Vec<u8>> {
        let len = self.u32(what)? as usize;
        Ok(self.take(len, what)?.to_vec())
    }

    fn is_empty(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn keyspace_id(&mut self, what: &str) -> Result<u32> {
        let at = self.pos as u64;
        let id = self.u32(what)?;
        if id == 0 {
            let msg = format!("version edit: {what} is 0, the default keyspace");
            return Err(Error::corruption(msg, Some(at)));
        }
        Ok(id)
    }

    fn keyspace_record(&mut self) -> Result<KeyspaceRecord> {
        let id = self.keyspace_id("keyspace id")?;
        let at = self.pos as u64;
        let name = self.key("keyspace name")?;
        let bad = |what: String| Err(Error::corruption(format!("version edit: {what}"), Some(at)));
        let Ok(name) = String::from_utf8(name) else {
            return bad("keyspace name is not UTF-8".into());
        };
        if let Err(e) = validate_name(&name, true) {
            return bad(e.to_string());
        }
        let at = self.pos as u64;
        let (options, filter_name) =
            KeyspaceOptions::decode_recorded(&self.key("keyspace options")?)
                .map_err(|e| Error::corruption(format!("version edit: {e}"), Some(at)))?;
        Ok(KeyspaceRecord { id, name, options, filter_name })
    }
}

impl VersionEdit {
    /// Records that `meta` was added at `level`.
    pub fn add_file(&mut self, level: u32, meta: FileMeta) {
        self.added.push((level, meta));
    }

    /// Records that file `number` was removed from `level`.
    pub fn delete_file(&mut self, level: u32, number: u64) {
        self.deleted.push((level, number));
    }

    /// The tagged encoding of docs/format.md#manifest.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let scalars = [
            (tag::LOG_NUMBER, self.log_number),
            (tag::NEXT_FILE_NUMBER, self.next_file_number),
            (tag::LAST_SEQUENCE, self.last_sequence),
        ];
        for (t, v) in scalars {
            if let Some(v) = v {
                put_field(&mut out, t, &v.to_le_bytes());
            }
        }
        for &(level, number) in &self.deleted {
            let mut v = level.to_le_bytes().to_vec();
            v.extend_from_slice(&number.to_le_bytes());
            put_field(&mut out, tag::DELETED_FILE, &v);
        }
        for (level, f) in &self.added {
            let mut v = level.to_le_bytes().to_vec();
            for x in [f.number, f.size, f.smallest_seq, f.largest_seq, f.entries] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            put_key(&mut v, &f.smallest_key);
            put_key(&mut v, &f.largest_key);
            // Only a non-default keyspace is written: default-keyspace files keep the layout
            // of the format before keyspaces.
            if f.keyspace != 0 {
                v.extend_from_slice(&f.keyspace.to_le_bytes());
            }
            put_field(&mut out, tag::ADDED_FILE, &v);
        }
        // After every tag 5: decoding attaches each to the added file of its number.
        for (_, f) in &self.added {
            if let Some(g) = f.global_seq {
                let mut v = f.number.to_le_bytes().to_vec();
                v.extend_from_slice(&g.to_le_bytes());
                put_field(&mut out, tag::GLOBAL_SEQ, &v);
            }
            if let Some(stored) = f.stored_keyspace {
                let mut v = f.number.to_le_bytes().to_vec();
                v.extend_from_slice(&stored.to_le_bytes());
                put_field(&mut out, tag::STORED_KEYSPACE, &v);
            }
        }
        for k in &self.keyspaces {
            let mut v = k.id.to_le_bytes().to_vec();
            put_key(&mut v, k.name.as_bytes());
            put_key(&mut v, &k.options.encode_recorded(&k.filter_name));
            put_field(&mut out, tag::KEYSPACE, &v);
        }
        for id in &self.dropped_keyspaces {
            put_field(&mut out, tag::KEYSPACE_DROPPED, &id.to_le_bytes());
        }
        if let Some(life) = &self.default_lifecycle {
            let mut v = Vec::new();
            life.encode_into(&mut v);
            put_field(&mut out, tag::DEFAULT_LIFECYCLE, &v);
        }
        for b in &self.blob_files {
            let mut v = Vec::with_capacity(28);
            for x in [b.number, b.count, b.bytes] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            if b.keyspace != 0 {
                v.extend_from_slice(&b.keyspace.to_le_bytes());
            }
            put_field(&mut out, tag::BLOB_FILE_ADDED, &v);
        }
        for &(number, count, bytes) in &self.blob_garbage {
            let mut v = Vec::with_capacity(24);
            for x in [number, count, bytes] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            put_field(&mut out, tag::BLOB_GARBAGE, &v);
        }
        out
    }

    /// Decodes an edit. Errors are [`Error::Corruption`] with the offset inside `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<VersionEdit> {
        let mut edit = VersionEdit::default();
        let mut cur = Cursor { bytes, pos: 0 };
        while !cur.is_empty() {
            let field_at = cur.pos as u64;
            let t = cur.u16("field tag")?;
            let len = cur.u32("field length")? as usize;
            let value_at = cur.pos;
            cur.take(len, "field value")?;
            // The value's own cursor ends where the value ends; offsets stay edit-relative.
            let mut v = Cursor { bytes: bytes.get(..cur.pos).unwrap_or_default(), pos: value_at };
            let dup = |name: &str| {
                let msg = format!("version edit: {name} appears twice");
                Err(Error::corruption(msg, Some(field_at)))
            };
            match t {
                tag::LOG_NUMBER | tag::NEXT_FILE_NUMBER | tag::LAST_SEQUENCE => {
                    let (slot, name) = match t {
                        tag::LOG_NUMBER => (&mut edit.log_number, "log number"),
                        tag::NEXT_FILE_NUMBER => (&mut edit.next_file_number, "next file number"),
                        _ => (&mut edit.last_sequence, "last sequence"),
                    };
                    if slot.is_some() {
                        return dup(name);
                    }
                    *slot = Some(v.u64(name)?);
                }
                tag::DELETED_FILE => {
                    let level = v.level("deleted file level")?;
                    edit.deleted.push((level, v.u64("deleted file number")?));
                }
                tag::ADDED_FILE => {
                    let level = v.level("added file level")?;
                    let number = v.u64("added file number")?;
                    let size = v.u64("added file size")?;
                    let smallest_seq = v.u64("added file smallest sequence")?;
                    let largest_seq = v.u64("added file largest sequence")?;
                    let entries = v.u64("added file entries")?;
                    let smallest_key = v.key("added file smallest key")?;
                    let largest_key = v.key("added file largest key")?;
                    let keyspace = match v.is_empty() {
                        true => 0,
                        false => v.keyspace_id("added file keyspace")?,
                    };
                    let meta = FileMeta {
                        keyspace,
                        number,
                        size,
                        smallest_key,
                        largest_key,
                        smallest_seq,
                        largest_seq,
                        entries,
                        global_seq: None,
                        stored_keyspace: None,
                    };
                    edit.added.push((level, meta));
                }
                tag::GLOBAL_SEQ => {
                    let number = v.u64("global sequence file number")?;
                    let g = v.u64("global sequence")?;
                    let bad = |what: String| {
                        Err(Error::corruption(format!("version edit: {what}"), Some(field_at)))
                    };
                    if g == 0 || g > crate::ikey::MAX_SEQ {
                        return bad(format!("global sequence {g} of file {number} out of range"));
                    }
                    let Some((_, meta)) = edit.added.iter_mut().find(|(_, m)| m.number == number)
                    else {
                        return bad(format!("global sequence for file {number}, not added here"));
                    };
                    if meta.global_seq.is_some() {
                        return dup("global sequence of a file");
                    }
                    meta.global_seq = Some(g);
                }
                tag::STORED_KEYSPACE => {
                    let number = v.u64("stored keyspace file number")?;
                    let stored = v.keyspace_id("stored keyspace")?;
                    let bad = |what: String| {
                        Err(Error::corruption(format!("version edit: {what}"), Some(field_at)))
                    };
                    let Some((_, meta)) = edit.added.iter_mut().find(|(_, m)| m.number == number)
                    else {
                        return bad(format!("stored keyspace for file {number}, not added here"));
                    };
                    if meta.stored_keyspace.is_some() {
                        return dup("stored keyspace of a file");
                    }
                    if meta.keyspace == 0 || meta.keyspace == stored {
                        return bad(format!(
                            "file {number} of keyspace {} cannot store keyspace {stored}",
                            meta.keyspace
                        ));
                    }
                    meta.stored_keyspace = Some(stored);
                }
                tag::KEYSPACE => edit.keyspaces.push(v.keyspace_record()?),
                tag::KEYSPACE_DROPPED => {
                    edit.dropped_keyspaces.push(v.keyspace_id("dropped keyspace id")?)
                }
                tag::DEFAULT_LIFECYCLE => {
                    if edit.default_lifecycle.is_some() {
                        return dup("default keyspace lifecycle");
                    }
                    let value = v.bytes.get(v.pos..).unwrap_or_default();
                    let mut c = crate::coding::Cursor::new(value);
                    let life = Lifecycle::decode_from(&mut c).map_err(|e| {
                        Error::corruption(format!("version edit: {e}"), Some(field_at))
                    })?;
                    v.pos = v.bytes.len() - c.remaining();
                    edit.default_lifecycle = Some(life);
                }
                tag::BLOB_FILE_ADDED => {
                    let number = v.u64("blob file number")?;
                    let count = v.u64("blob file value count")?;
                    let bytes = v.u64("blob file value bytes")?;
                    let keyspace = match v.is_empty() {
                        true => 0,
                        false => v.keyspace_id("blob file keyspace")?,
                    };
                    edit.blob_files.push(crate::sst::blob::BlobMeta {
                        number,
                        keyspace,
                        count,
                        bytes,
                        ..Default::default()
                    });
                }
                tag::BLOB_GARBAGE => {
                    let number = v.u64("blob garbage file number")?;
                    let count = v.u64("blob garbage value count")?;
                    edit.blob_garbage.push((number, count, v.u64("blob garbage bytes")?));
                }
                t if t >= OPTIONAL_TAG => v.pos = v.bytes.len(), // unknown optional: skip
                t => {
                    let msg = format!("version edit: unknown required field tag {t}");
                    return Err(Error::corruption(msg, Some(field_at)));
                }
            }
            if !v.is_empty() {
                let unread = cur.pos - v.pos;
                let msg = format!("version edit: field tag {t} has {unread} unread bytes");
                return Err(Error::corruption(msg, Some(field_at)));
            }
        }
        Ok(edit)
    }
}
