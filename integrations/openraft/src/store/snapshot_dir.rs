//! A snapshot kept as a directory of its tables (`snapshot.tables.<k>/`: `header`, then
//! `000001.sst`, ...) and the pointer file `snapshot` naming it. The directory holds the
//! streamed format's bytes (`SFRSNAP2`, snapshot_stream.rs) cut at table boundaries, so a node
//! writes each table once: the database ingests the same files by hard link, and a sender
//! reads the header and the tables in order to send the stream. The byte tables are in
//! docs/snapshots.md, the one description of them; keep the two in step.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::snapshot_file::Meta;
use super::snapshot_stream::{self, Bad, Header, STREAM_MAGIC};

/// The first 8 bytes of the pointer file.
pub const POINTER_MAGIC: &[u8; 8] = b"SFRSNAPD";
/// The header file of a tables directory: the stream's bytes before its first table.
pub(crate) const HEADER_FILE: &str = "header";
/// Tables directories are `snapshot.tables.<k>`, `k` counting up per node.
pub(crate) const TABLES_PREFIX: &str = "snapshot.tables.";
/// The longest directory name a pointer may hold.
const MAX_NAME_BYTES: u32 = 255;

/// The path of table `i` (from 0) of the tables directory `dir`.
pub(crate) fn table_path(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("{:06}.sst", i + 1))
}

/// `k` of a tables directory's name, `None` for other names.
pub(crate) fn tables_number(name: &str) -> Option<u64> {
    name.strip_prefix(TABLES_PREFIX)?.parse().ok()
}

/// Writes `dir/header` for the `count` tables `000001.sst`, ... already in `dir` (each read once
/// for its length and CRC), then syncs every file and `dir`. Returns the header.
pub(crate) fn seal(dir: &Path, meta: &Meta, count: usize) -> io::Result<Header> {
    let mut buf = vec![0u8; 1 << 20];
    let mut files = Vec::with_capacity(count);
    for i in 0..count {
        let mut f = fs::File::open(table_path(dir, i))?;
        let (mut len, mut crc) = (0u64, crc32fast::Hasher::new());
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            crc.update(&buf[..n]);
            len += n as u64;
        }
        f.sync_all()?;
        files.push((len, crc.finalize()));
    }
    let raw = snapshot_stream::encode_header(meta, &files);
    let mut h = fs::OpenOptions::new().write(true).create_new(true).open(dir.join(HEADER_FILE))?;
    h.write_all(&raw)?;
    h.sync_all()?;
    super::sync_dir(dir)?;
    Ok(Header { meta: meta.clone(), files, raw })
}

/// Reads and checks `dir/header` (its CRC and bounds; nothing may follow it).
pub(crate) fn read_header(dir: &Path) -> Result<Header, Bad> {
    let path = dir.join(HEADER_FILE);
    let mut r = io::BufReader::new(fs::File::open(&path)?);
    let mut magic = [0u8; 8];
    match r.read_exact(&mut magic) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            return Err(Bad::Corrupt(format!("{} is shorter than its magic", path.display())))
        }
        Err(e) => return Err(Bad::Io(e)),
    }
    if &magic != STREAM_MAGIC {
        return Err(Bad::Corrupt(format!(
            "{} does not start with {STREAM_MAGIC:?}",
            path.display()
        )));
    }
    let header = snapshot_stream::read_header_after_magic(&mut r)?;
    if r.read(&mut [0u8; 1])? != 0 {
        return Err(Bad::Corrupt(format!("bytes follow the header in {}", path.display())));
    }
    Ok(header)
}

/// Checks every table of `dir` against `header`: its length and CRC, and that no other table
/// follows.
pub(crate) fn check_tables(dir: &Path, header: &Header) -> Result<(), Bad> {
    let mut r = TablesReader::open(dir, header)?;
    r.skip_header();
    snapshot_stream::unpack(&mut r, header, None, &mut |_| Ok(()))?;
    if table_path(dir, header.files.len()).exists() {
        return Err(Bad::Corrupt(format!(
            "{} holds more tables than its header's {}",
            dir.display(),
            header.files.len()
        )));
    }
    Ok(())
}

/// Replaces the pointer file `path` durably (a temporary file, fsync, rename, fsync of the
/// directory) with one naming the tables directory `name` beside it.
pub(crate) fn write_pointer(path: &Path, name: &str) -> io::Result<()> {
    let mut bytes = POINTER_MAGIC.to_vec();
    bytes.extend_from_slice(&(name.len() as u32).to_le_bytes());
    bytes.extend_from_slice(name.as_bytes());
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    let tmp = path.with_extension("tmp");
    let mut f = fs::File::create(&tmp)?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    fs::rename(&tmp, path)?;
    super::sync_dir(path.parent().expect("the pointer is inside the node directory"))
}

/// The tables directory a pointer file's bytes name (checked: magic, length, CRC, a name of
/// the form `snapshot.tables.<k>`).
pub(crate) fn decode_pointer(bytes: &[u8]) -> Result<String, String> {
    if bytes.len() < 16 || &bytes[..8] != POINTER_MAGIC {
        return Err(format!("{} bytes is no snapshot pointer", bytes.len()));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(format!(
            "pointer CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    let len = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
    if len > MAX_NAME_BYTES || body.len() != 12 + len as usize {
        return Err(format!("pointer name length {len} does not match its {} bytes", body.len()));
    }
    let name = std::str::from_utf8(&body[12..])
        .map_err(|_| "the pointer's name is not UTF-8".to_string())?;
    if tables_number(name).is_none() {
        return Err(format!("the pointer names {name:?}, not a {TABLES_PREFIX}<k> directory"));
    }
    Ok(name.to_string())
}

/// The tables directory the node's `snapshot` file names, if it is a pointer (`None` for the
/// single-file formats and when there is no `snapshot`).
pub(crate) fn pointed_dir(snapshot: &Path) -> Result<Option<String>, Bad> {
    let mut f = match fs::File::open(snapshot) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Bad::Io(e)),
    };
    let mut magic = [0u8; 8];
    if f.read_exact(&mut magic).is_err() || &magic != POINTER_MAGIC {
        return Ok(None);
    }
    let mut bytes = magic.to_vec();
    f.take(u64::from(MAX_NAME_BYTES) + 8).read_to_end(&mut bytes)?;
    decode_pointer(&bytes).map(Some).map_err(Bad::Corrupt)
}

/// Reads a tables directory as the one stream it holds: the header's bytes, then each table in
/// order, through file handles opened at [`TablesReader::open`] (so a directory removed
/// afterwards, by a newer snapshot, still reads whole).
pub(crate) struct TablesReader {
    header: Vec<u8>,
    at: usize,
    files: Vec<fs::File>,
    next: usize,
}

impl TablesReader {
    /// Opens the header's tables in `dir`.
    pub(crate) fn open(dir: &Path, header: &Header) -> io::Result<TablesReader> {
        let files = (0..header.files.len())
            .map(|i| fs::File::open(table_path(dir, i)))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(TablesReader { header: header.raw.clone(), at: 0, files, next: 0 })
    }

    /// Starts the stream at its first table.
    fn skip_header(&mut self) {
        self.at = self.header.len();
    }
}

impl Read for TablesReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at < self.header.len() {
            let n = buf.len().min(self.header.len() - self.at);
            buf[..n].copy_from_slice(&self.header[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        while let Some(f) = self.files.get_mut(self.next) {
            let n = f.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            self.next += 1;
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::snapshot_file::tests::meta;

    #[test]
    fn a_sealed_directory_reads_as_the_stream_and_every_table_flip_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("snapshot.tables.1");
        fs::create_dir(&dir).unwrap();
        fs::write(table_path(&dir, 0), b"first table").unwrap();
        fs::write(table_path(&dir, 1), vec![9u8; 5000]).unwrap();
        let header = seal(&dir, &meta(), 2).unwrap();
        let read = read_header(&dir).unwrap();
        assert_eq!((&read.meta, &read.files, &read.raw), (&meta(), &header.files, &header.raw));
        check_tables(&dir, &read).unwrap();
        let mut stream = Vec::new();
        TablesReader::open(&dir, &read).unwrap().read_to_end(&mut stream).unwrap();
        assert_eq!(stream.len() as u64, read.stream_len());
        let mut want = header.raw.clone();
        want.extend_from_slice(b"first table");
        want.extend_from_slice(&[9u8; 5000]);
        assert_eq!(stream, want);
        // A flipped byte of a table, a shorter or longer table, or an extra table is refused.
        let t0 = table_path(&dir, 0);
        for i in 0..11 {
            let mut bad = b"first table".to_vec();
            bad[i] ^= 0x10;
            fs::write(&t0, &bad).unwrap();
            assert!(check_tables(&dir, &read).is_err(), "flip of byte {i} accepted");
        }
        fs::write(&t0, b"first tabl").unwrap();
        assert!(check_tables(&dir, &read).is_err());
        fs::write(&t0, b"first table!").unwrap();
        assert!(check_tables(&dir, &read).is_err());
        fs::write(&t0, b"first table").unwrap();
        check_tables(&dir, &read).unwrap();
        fs::write(table_path(&dir, 2), b"x").unwrap();
        assert!(check_tables(&dir, &read).unwrap_err().to_string().contains("more tables"));
    }

    #[test]
    fn pointers_round_trip_and_refuse_any_flip_or_foreign_name() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("snapshot");
        write_pointer(&p, "snapshot.tables.12").unwrap();
        assert_eq!(pointed_dir(&p).unwrap().as_deref(), Some("snapshot.tables.12"));
        let bytes = fs::read(&p).unwrap();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(decode_pointer(&bad).is_err(), "flip of byte {i} accepted");
        }
        for n in 0..bytes.len() {
            assert!(decode_pointer(&bytes[..n]).is_err(), "truncation to {n} accepted");
        }
        write_pointer(&p, "../elsewhere").unwrap();
        assert!(pointed_dir(&p).unwrap_err().to_string().contains("not a snapshot.tables."));
        fs::write(&p, b"SFRSNAP2 a container").unwrap();
        assert_eq!(pointed_dir(&p).unwrap(), None);
        assert_eq!(pointed_dir(&root.path().join("none")).unwrap(), None);
    }
}
