//! The `ingest` benchmark's plan (db_bench has none; RocksDB's own bulk-load guide is
//! `SstFileWriter` then `IngestExternalFile`): key numbers `0..num` in key order (the key
//! layout's numbers, so `--key_spacing` applies), cut into files of `keys_per_file` keys, each
//! written by the engine's external-file writer with values from [`crate::keys::ValueGen`],
//! then all files ingested in one call that moves them into the database. One thread; the
//! result line counts `num` operations over the write and the ingest together, and a note
//! line gives each part.

use std::ops::Range;

/// Keys per file when `--ingest_keys_per_file` is left out: 500,000 keys of 16 + 100 bytes
/// make files of about 58 MB before compression, near RocksDB's 64 MiB `target_file_size_base`
/// default.
pub const DEFAULT_KEYS_PER_FILE: u64 = 500_000;

/// Which key numbers go to which file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngestPlan {
    /// Keys in all.
    pub num: u64,
    /// Keys per file (the last file may hold fewer).
    pub keys_per_file: u64,
}

impl IngestPlan {
    /// A plan, refusing zero keys per file.
    pub fn new(num: u64, keys_per_file: u64) -> Result<IngestPlan, String> {
        if keys_per_file == 0 {
            return Err("--ingest_keys_per_file=0 is out of range: must be at least 1".into());
        }
        Ok(IngestPlan { num, keys_per_file })
    }

    /// The key numbers of each file, in order: disjoint, increasing, covering `0..num`.
    pub fn files(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        (0..self.num.div_ceil(self.keys_per_file)).map(move |i| {
            let start = i * self.keys_per_file;
            start..(start + self.keys_per_file).min(self.num)
        })
    }

    /// The note line under the result line: the write and the ingest, each timed.
    pub fn line(&self, write_secs: f64, ingest_secs: f64, files: usize) -> String {
        format!(
            "ingest parts : {} keys in {files} files: written in {write_secs:.2} s, ingested in \
             {ingest_secs:.3} s",
            self.num
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_cover_every_key_once_in_order() {
        let p = IngestPlan::new(10, 4).unwrap();
        assert_eq!(p.files().collect::<Vec<_>>(), vec![0..4, 4..8, 8..10]);
        assert_eq!(IngestPlan::new(8, 4).unwrap().files().count(), 2);
        assert_eq!(IngestPlan::new(0, 4).unwrap().files().count(), 0);
        assert!(IngestPlan::new(8, 0).unwrap_err().contains("at least 1"));
    }
}
