use super::*;
use crate::error::Error;
use crate::rng::SplitMix64;
use crate::storage::{MemStorage, RandomAccessFile, Storage};
use std::path::Path;
use std::sync::Arc;

const PATH: &str = "/db/000007.log";

/// Writes `records` with a `WalWriter`; returns the log bytes and each record's end offset.
fn write_log(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let s = MemStorage::new();
    s.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::new(s.create(Path::new(PATH)).unwrap());
    let ends = records.iter().map(|r| w.add_record(r).unwrap()).collect();
    w.sync().unwrap();
    (s.read_all(Path::new(PATH)).unwrap(), ends)
}

fn file_of(bytes: &[u8]) -> Arc<dyn RandomAccessFile> {
    let s = MemStorage::new();
    s.create_dir_all(Path::new("/db")).unwrap();
    let mut f = s.create(Path::new(PATH)).unwrap();
    f.append(bytes).unwrap();
    s.open(Path::new(PATH)).unwrap()
}

fn read(bytes: &[u8]) -> crate::Result<WalRecovery> {
    read_wal(file_of(bytes), Path::new(PATH))
}

fn random_records(rng: &mut SplitMix64, n: usize, max: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            // Mostly small records, some spanning several blocks.
            let len = match rng.below(4) {
                0 => rng.below(16),
                1 | 2 => rng.below(2_000),
                _ => rng.below(max + 1),
            };
            let mut r = vec![0u8; len as usize];
            rng.fill(&mut r);
            r
        })
        .collect()
}

/// Offset of the header of the fragment that starts a record written at log offset `prev_end`
/// (skipping a block trailer too small for a header).
fn first_fragment_offset(prev_end: u64) -> u64 {
    let room = BLOCK_SIZE as u64 - prev_end % BLOCK_SIZE as u64;
    if room < HEADER_SIZE as u64 {
        prev_end + room
    } else {
        prev_end
    }
}

#[test]
fn records_of_random_sizes_round_trip() {
    let mut rng = SplitMix64::new(1);
    let mut records = random_records(&mut rng, 300, 100 * 1024);
    records.push(vec![0; 100 * 1024]);
    records.push(Vec::new());
    // Sizes that leave exactly 7, 6 and 0 bytes of room at a block's end.
    for fill in [BLOCK_SIZE - 7 - HEADER_SIZE, 1, BLOCK_SIZE - 6 - 2 * HEADER_SIZE, 5] {
        records.push(vec![0xAB; fill]);
    }
    let (bytes, ends) = write_log(&records);
    assert_eq!(*ends.last().unwrap(), bytes.len() as u64);
    let rec = read(&bytes).unwrap();
    assert_eq!(rec.records.len(), records.len());
    assert!(rec.records == records);
    assert_eq!(
        (rec.valid_len, rec.file_len, rec.torn_tail),
        (bytes.len() as u64, rec.file_len, false)
    );
}

/// The log of docs/format.md#wal-worked-example, fragment by fragment.
#[test]
fn worked_example_of_format_md_matches_the_writer() {
    let (bytes, ends) = write_log(&[vec![0x11; 10], vec![0x22; 40_000]]);
    assert_eq!(ends, [17, 40_031]);
    assert_eq!(&bytes[4..7], [10, 0, FULL]);
    assert_eq!(&bytes[17 + 4..17 + 7], [0xE8, 0x7F, FIRST]); // 32744 = 0x7FE8
    assert_eq!(&bytes[32_768 + 4..32_768 + 7], [0x58, 0x1C, LAST]); // 7256 = 0x1C58
    let crc = u32::from_le_bytes(bytes[0..4].try_into().unwrap());
    assert_eq!(crc, crc32fast::hash(&[&[10u8, 0, FULL][..], &[0x11; 10]].concat()));
}

#[test]
fn empty_log_has_no_records_and_no_tail() {
    let rec = read(&[]).unwrap();
    assert!(rec.records.is_empty() && rec.valid_len == 0 && !rec.torn_tail);
}

/// Cuts the log at every offset inside its last record: the last record is dropped as a torn
/// tail, every earlier record survives, and `valid_len` is the end of the previous record.
fn check_every_cut(records: &[Vec<u8>], step: usize) {
    let (bytes, ends) = write_log(records);
    let prev_end = ends[ends.len() - 2];
    for cut in (prev_end as usize..bytes.len()).step_by(step) {
        let rec = read(&bytes[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert!(rec.records[..] == records[..records.len() - 1], "cut at {cut}");
        assert_eq!(rec.valid_len, prev_end, "cut at {cut}");
        assert_eq!(rec.torn_tail, cut as u64 > prev_end, "cut at {cut}");
    }
}

#[test]
fn torn_last_record_is_dropped_at_every_cut_point() {
    // The last record starts 150 bytes before a block boundary: FIRST + LAST fragments.
    let filler = BLOCK_SIZE - 150 - HEADER_SIZE;
    check_every_cut(&[vec![1; 10], vec![2; filler - 10 - HEADER_SIZE], vec![3; 400]], 1);
    // A record crossing two boundaries (FIRST, MIDDLE, LAST), cut at a sample of points.
    check_every_cut(&[vec![1; 100], vec![4; 70_000]], 97);
    // Cut inside the zero trailer of a block.
    check_every_cut(&[vec![1; BLOCK_SIZE - 3 - HEADER_SIZE], vec![5; 10]], 1);
}

#[test]
fn flipped_byte_in_a_non_final_record_is_corruption_naming_file_and_offset() {
    let mut rng = SplitMix64::new(2);
    let records = random_records(&mut rng, 40, 1_000);
    let (bytes, ends) = write_log(&records);
    for k in [0usize, 1, 17, 38] {
        let frag = first_fragment_offset(if k == 0 { 0 } else { ends[k - 1] });
        // A payload byte (if any), then the length byte, then the type byte.
        for delta in [HEADER_SIZE as u64, 4, 6] {
            if frag + delta >= ends[k] {
                continue;
            }
            let mut bad = bytes.clone();
            bad[(frag + delta) as usize] ^= 0x10;
            match read(&bad) {
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!(file.as_deref(), Some(Path::new(PATH)));
                    assert_eq!(offset, Some(frag), "record {k} delta {delta}");
                }
                other => panic!("record {k}: expected corruption, got {other:?}"),
            }
        }
    }
}

#[test]
fn flipped_byte_in_the_final_record_is_dropped_as_a_torn_tail() {
    let records: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 300]).collect();
    let (bytes, ends) = write_log(&records);
    for at in [ends[3] as usize, ends[3] as usize + 10, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0xFF;
        let rec = read(&bad).unwrap();
        assert!(rec.records[..] == records[..4] && rec.valid_len == ends[3] && rec.torn_tail);
    }
}

#[test]
fn zero_filled_tail_is_dropped_as_torn() {
    let records: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i + 1; 5_000]).collect();
    let (mut bytes, ends) = write_log(&records);
    bytes.resize(bytes.len() + 100_000, 0);
    let rec = read(&bytes).unwrap();
    assert!(rec.records == records && rec.valid_len == ends[2] && rec.torn_tail);
    // A half-written record followed by zeros (the file was extended past the write).
    let (mut bytes, _) = write_log(&records);
    bytes.truncate(ends[1] as usize + 1_000);
    bytes.resize(bytes.len() + 40_000, 0);
    let rec = read(&bytes).unwrap();
    assert!(rec.records[..] == records[..2] && rec.valid_len == ends[1] && rec.torn_tail);
}

#[test]
fn damaged_record_followed_by_data_is_corruption_not_a_tail() {
    let records: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i + 1; 100]).collect();
    let (mut bytes, ends) = write_log(&records);
    // Checksum failure in record 1 with record 2 after it.
    bytes[ends[0] as usize + HEADER_SIZE + 3] ^= 1;
    let e = read(&bytes).unwrap_err();
    assert!(e.to_string().contains("followed by more data"), "{e}");
    // A length pushed past the block end, even in the final record, cannot come from a torn
    // append.
    let (mut bytes, ends) = write_log(&records);
    bytes[ends[1] as usize + 5] = 0xFF;
    assert!(read(&bytes).unwrap_err().is_corruption());
}

#[test]
fn random_damage_never_panics_and_never_returns_wrong_records() {
    let mut rng = SplitMix64::new(3);
    let records = random_records(&mut rng, 60, 40_000);
    let (bytes, _) = write_log(&records);
    for _ in 0..1_500 {
        let mut bad = bytes.clone();
        for _ in 0..=rng.below(3) {
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] ^= 1 << rng.below(8);
        }
        if rng.below(2) == 0 {
            bad.truncate(rng.below(bad.len() as u64 + 1) as usize);
        }
        match read(&bad) {
            // A damaged fragment passes CRC-32 with probability about 2^-32 (and never for a
            // single flipped bit); with the fixed seed, what survives must be a prefix.
            Ok(rec) => assert!(rec.records[..] == records[..rec.records.len()]),
            Err(e) => assert!(e.is_corruption(), "{e}"),
        }
    }
}

/// End to end over the crash model: the process dies at every storage operation of a workload
/// (each record is synced after it is added), then power fails. Recovery must return a prefix of
/// the records that includes every record whose sync returned `Ok`.
#[test]
fn synced_records_survive_a_crash_at_every_operation() {
    let mut rng = SplitMix64::new(4);
    let records = random_records(&mut rng, 12, 50_000);
    let run = |s: &MemStorage| -> usize {
        let mut acked = 0;
        let Ok(f) = s.create(Path::new(PATH)) else { return 0 };
        if s.sync_dir(Path::new("/db")).is_err() {
            return 0;
        }
        let mut w = WalWriter::new(f);
        for r in &records {
            if w.add_record(r).is_err() || w.sync().is_err() {
                break;
            }
            acked += 1;
        }
        acked
    };
    let fresh = || {
        let s = MemStorage::new();
        s.create_dir_all(Path::new("/db")).unwrap();
        s
    };
    let probe = fresh();
    let before = probe.op_count();
    assert_eq!(run(&probe), records.len());
    let total = probe.op_count() - before;
    for n in 0..total {
        for seed in 0..3 {
            let s = fresh();
            s.fail_after(n, true);
            let acked = run(&s);
            if seed == 0 {
                s.crash_drop_unsynced();
            } else {
                s.crash_keep_random_prefix(seed * 1000 + n);
            }
            if !s.exists(Path::new(PATH)).unwrap() {
                assert_eq!(acked, 0, "op {n}: the log vanished after acknowledged records");
                continue;
            }
            let rec = read_wal(s.open(Path::new(PATH)).unwrap(), Path::new(PATH))
                .unwrap_or_else(|e| panic!("op {n} seed {seed}: {e}"));
            let got = rec.records.len();
            assert!(got >= acked && rec.records[..] == records[..got], "op {n} seed {seed}");
        }
    }
}

#[test]
fn writer_refuses_work_after_a_failed_append() {
    let s = MemStorage::new();
    s.create_dir_all(Path::new("/db")).unwrap();
    let mut w = WalWriter::new(s.create(Path::new(PATH)).unwrap());
    assert_eq!(w.add_record(b"abc").unwrap(), 10);
    s.fail_after(0, false);
    assert!(matches!(w.add_record(b"def"), Err(Error::Io { .. })));
    assert!(matches!(w.add_record(b"ghi"), Err(Error::ReadOnly(_))));
    assert!(matches!(w.sync(), Err(Error::ReadOnly(_))));
    assert_eq!(w.offset(), 10);
}
