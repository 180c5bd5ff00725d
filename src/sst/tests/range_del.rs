//! Tables with range tombstones: format version 3 only when they have some, the block loaded at
//! open, file bounds covering the tombstones, tombstone-only tables, and a corrupt block.

use super::*;
use crate::range_del::RangeTombstone;
use crate::sst::format::TABLE_MAGIC;

fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
    RangeTombstone { start: start.into(), end: end.into(), seq }
}

fn opts() -> TableOptions {
    TableOptions { block_size: 4096, restart_interval: 16, ..TableOptions::default() }
}

fn build_with(entries: &[Entry], tombstones: &[RangeTombstone]) -> (Vec<u8>, TableSummary) {
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), opts()).unwrap();
    for (k, seq, kind, v) in entries {
        b.add(&ikey::encode(k, *seq, *kind), v).unwrap();
    }
    for x in tombstones {
        b.add_range_tombstone(x.clone()).unwrap();
    }
    let summary = b.finish(bloom_source()).unwrap();
    (file.bytes(), summary)
}

#[test]
fn a_table_without_tombstones_is_byte_identical_and_stays_version_1() {
    let entries = simple_entries(50);
    let (plain, _) = build(&entries, opts(), bloom_source());
    let (same, s) = build_with(&entries, &[]);
    assert_eq!(plain, same);
    assert_eq!(s.properties.format_version, 1);
    assert_eq!(open(plain, None).unwrap().properties().range_deletions, 0);
}

#[test]
fn tombstones_make_version_3_and_are_answered_after_open() {
    let entries = simple_entries(20); // key00000000 ..= key00000038
    let ts = [t("key00000010", "key00000020", 30), t("key00000015", "zzz", 40)];
    let (bytes, s) = build_with(&entries, &ts);
    assert_eq!(s.properties.format_version, 3);
    // Fragments [10, 15) @30, [15, 20) @40 @30, [20, zzz) @40: four entries.
    assert_eq!(s.properties.range_deletions, 4);
    assert_eq!(s.largest_key, b"zzz", "the file range covers the tombstones");
    assert_eq!((s.smallest_seq, s.largest_seq), (1, 40));
    assert_eq!(s.entries, 20 + 4);
    let table = open(bytes.clone(), None).unwrap();
    assert_eq!(table.properties().range_deletions, 4);
    assert_eq!(table.max_covering_tombstone(b"key00000012", 100), 30);
    assert_eq!(table.max_covering_tombstone(b"key00000016", 100), 40);
    assert_eq!(table.max_covering_tombstone(b"key00000016", 35), 30);
    assert_eq!(table.max_covering_tombstone(b"key00000009", 100), 0);
    assert_eq!(table.max_covering_tombstone(b"yyy", 100), 40);
    assert!(table.index_memory_bytes() > table.range_tombstones().memory_bytes());
    let footer_version =
        u32::from_le_bytes(bytes[bytes.len() - 16..bytes.len() - 12].try_into().unwrap());
    assert_eq!(footer_version, 3);
    assert_eq!(
        u64::from_le_bytes(bytes[bytes.len() - 12..bytes.len() - 4].try_into().unwrap()),
        TABLE_MAGIC
    );
}

#[test]
fn a_table_of_tombstones_only_opens_and_claims_their_range() {
    let (bytes, s) = build_with(&[], &[t("b", "d\0", 7)]);
    assert_eq!((s.smallest_key.as_slice(), s.largest_key.as_slice()), (&b"b"[..], &b"d"[..]));
    assert_eq!((s.entries, s.smallest_seq, s.largest_seq), (1, 7, 7));
    let table = open(bytes, None).unwrap();
    assert_eq!(table.max_covering_tombstone(b"d", 9), 7);
    assert_eq!(table.max_covering_tombstone(b"d\0", 9), 0);
    let mut it = Arc::new(table).iter(false);
    it.seek_to_first().unwrap();
    assert!(!it.valid(), "no point entries");
}

#[test]
fn a_damaged_range_deletion_block_is_a_corruption_error() {
    let (bytes, s) = build_with(&simple_entries(5), &[t("a", "b", 9)]);
    let h = s.properties.range_del_block;
    for at in h.offset..h.offset + h.size + 5 {
        let mut bad = bytes.clone();
        bad[at as usize] ^= 0x20;
        let e = open(bad, None).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("000007.sst"), "byte {at}: {e}");
    }
}

#[test]
fn the_builder_refuses_bad_tombstones_and_range_kinds_among_points() {
    let mut b = TableBuilder::new(Box::new(MemFile::default()), opts()).unwrap();
    assert!(b.add_range_tombstone(t("b", "a", 1)).is_err());
    assert!(b.add_range_tombstone(t("a", "a", 1)).is_err());
    assert!(b.add(&ikey::encode(b"a", 1, ValueKind::RangeDelete), b"b").is_err());
}
