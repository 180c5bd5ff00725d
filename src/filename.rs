//! Names of the files in a database directory, and the parser back from a name.
//!
//! Numbered files share one counter (`next_file_number` in the manifest), so a number names at
//! most one file of any kind. Numbers are zero-padded to six digits and grow past that as needed;
//! the parser accepts exactly the names the formatters produce, so a stray file such as
//! `1.log` or `0000001.log` is never mistaken for a database file.

/// The file that names the live manifest (`MANIFEST-000005\n`).
pub const CURRENT: &str = "CURRENT";
/// The temporary file written and synced before it is renamed over [`CURRENT`].
pub const CURRENT_TMP: &str = "CURRENT.tmp";
/// The lock file that keeps a second process out of the directory.
pub const LOCK: &str = "LOCK";

/// The kinds of files siftdb keeps in a database directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A write-ahead log, `{n:06}.log`.
    Wal,
    /// A sorted string table, `{n:06}.sst`.
    Sst,
    /// A manifest, `MANIFEST-{n:06}`.
    Manifest,
    /// A blob file of separated values, `{n:06}.blob` (src/sst/blob.rs).
    Blob,
    /// [`CURRENT`] (number 0).
    Current,
    /// `CURRENT.tmp`, a leftover of an interrupted manifest switch (number 0).
    CurrentTmp,
    /// `LOCK` (number 0).
    Lock,
}

/// The name of write-ahead log `n`.
pub fn wal_name(n: u64) -> String {
    format!("{n:06}.log")
}

/// The name of table file `n`.
pub fn sst_name(n: u64) -> String {
    format!("{n:06}.sst")
}

/// The name of blob file `n`.
pub fn blob_name(n: u64) -> String {
    format!("{n:06}.blob")
}

/// The name of manifest `n`.
pub fn manifest_name(n: u64) -> String {
    format!("MANIFEST-{n:06}")
}

/// Parses a file name back to its kind and number (0 for the unnumbered kinds). `None` for a
/// name siftdb did not produce.
pub fn parse_file_name(name: &str) -> Option<(FileKind, u64)> {
    match name {
        CURRENT => return Some((FileKind::Current, 0)),
        CURRENT_TMP => return Some((FileKind::CurrentTmp, 0)),
        LOCK => return Some((FileKind::Lock, 0)),
        _ => {}
    }
    let (kind, digits) = if let Some(d) = name.strip_prefix("MANIFEST-") {
        (FileKind::Manifest, d)
    } else if let Some(d) = name.strip_suffix(".log") {
        (FileKind::Wal, d)
    } else if let Some(d) = name.strip_suffix(".sst") {
        (FileKind::Sst, d)
    } else if let Some(d) = name.strip_suffix(".blob") {
        (FileKind::Blob, d)
    } else {
        return None;
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    // Only the canonical spelling: exactly what `{n:06}` prints.
    (format!("{n:06}") == digits).then_some((kind, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_the_parser() {
        for n in [0, 1, 7, 999_999, 1_000_000, u64::MAX] {
            assert_eq!(parse_file_name(&wal_name(n)), Some((FileKind::Wal, n)));
            assert_eq!(parse_file_name(&blob_name(n)), Some((FileKind::Blob, n)));
            assert_eq!(parse_file_name(&sst_name(n)), Some((FileKind::Sst, n)));
            assert_eq!(parse_file_name(&manifest_name(n)), Some((FileKind::Manifest, n)));
        }
        assert_eq!(wal_name(7), "000007.log");
        assert_eq!(sst_name(12), "000012.sst");
        assert_eq!(manifest_name(3), "MANIFEST-000003");
        assert_eq!(parse_file_name("CURRENT"), Some((FileKind::Current, 0)));
        assert_eq!(parse_file_name("CURRENT.tmp"), Some((FileKind::CurrentTmp, 0)));
        assert_eq!(parse_file_name("LOCK"), Some((FileKind::Lock, 0)));
    }

    #[test]
    fn foreign_names_are_rejected() {
        for name in [
            "1.log",
            "0000001.log",
            "00000a.sst",
            "+00001.log",
            ".log",
            "MANIFEST-",
            "MANIFEST-12",
            "000001.txt",
            "99999999999999999999999.sst",
            "current",
        ] {
            assert_eq!(parse_file_name(name), None, "{name}");
        }
    }
}
