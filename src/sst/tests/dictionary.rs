//! Tables whose zstd data blocks are compressed with a per-table dictionary (format version 8,
//! design.md#zstd-dictionaries).

use super::*;
use crate::filter::hash_key;
use crate::sst::format::{BlockHandle, COMPRESSION_ZSTD};
use crate::sst::{Compression, GetResult, ReadCounters};

fn zstd(max_dict_bytes: usize, zstd_max_train_bytes: usize) -> TableOptions {
    TableOptions {
        compression: Compression::Zstd { level: 3 },
        max_dict_bytes,
        zstd_max_train_bytes,
        ..TableOptions::default()
    }
}

/// [`simple_entries`]' keys with values of 8 to 23 words drawn (seeded) from a vocabulary of
/// 64: text whose blocks share words but not word order, where a dictionary of the vocabulary
/// saves what each 4 KiB block would otherwise spend on first occurrences and entropy tables.
fn worded_entries(n: u32) -> Vec<Entry> {
    let vocabulary: Vec<String> = (0..64u64)
        .map(|w| format!("w{}{}", w * 7919 % 1000, "aeiou".repeat(1 + w as usize % 3)))
        .collect();
    let mut rng = crate::rng::SplitMix64::new(46);
    let mut entries = simple_entries(n);
    for e in &mut entries {
        let words = 8 + rng.below(16);
        let v: Vec<&str> =
            (0..words).map(|_| vocabulary[rng.below(64) as usize].as_str()).collect();
        e.3 = v.join(" ").into_bytes();
    }
    entries
}

/// Every entry found by a point lookup (a block cache when `cache`), absent keys not found,
/// and a full scan returning exactly `entries`.
fn reads_back(bytes: Vec<u8>, entries: &[Entry], cache: bool) {
    let cache = cache.then(|| Arc::new(BlockCache::new(1 << 20)));
    let table = Arc::new(open(bytes, cache).unwrap());
    let c = ReadCounters::new();
    for (k, _, _, v) in entries {
        let got = table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()).unwrap();
        assert_eq!(got, GetResult::Found(v.clone()), "{:?}", String::from_utf8_lossy(k));
    }
    for i in (0..entries.len() as u32).step_by(97) {
        let k = format!("key{:08}", 2 * i + 1).into_bytes(); // odd: absent
        let got = table.get(&k, hash_key(&k), u64::MAX, &c, &mut Vec::new()).unwrap();
        assert_eq!(got, GetResult::NotFound);
    }
    let mut it = table.iter(false);
    it.seek_to_first().unwrap();
    let mut n = 0;
    while it.valid() {
        let (k, seq, kind, v) = &entries[n];
        assert_eq!(it.key(), ikey::encode(k, *seq, *kind));
        assert_eq!(it.value(), v.as_slice());
        n += 1;
        it.next().unwrap();
    }
    assert_eq!(n, entries.len());
}

/// The handle of the table's dictionary block (size 0 without one).
fn dict_handle(bytes: &[u8]) -> BlockHandle {
    open(bytes.to_vec(), None).unwrap().properties().compression_dict_block
}

#[test]
fn a_trained_dictionary_shrinks_blocks_and_every_entry_reads_back() {
    let entries = worded_entries(20_000); // several hundred data blocks of 4 KiB
    let (plain, plain_summary) = build(&entries, zstd(0, 0), bloom_source());
    assert_eq!(plain_summary.properties.format_version, 1);
    assert_eq!(dict_handle(&plain).size, 0);
    // Trained on 64 KiB (16 blocks): the held-back blocks and all later ones use it.
    let (bytes, summary) = build(&entries, zstd(4096, 64 << 10), bloom_source());
    let p = &summary.properties;
    assert_eq!((p.format_version, p.compression), (8, COMPRESSION_ZSTD));
    assert_eq!(p.data_blocks, plain_summary.properties.data_blocks);
    let h = dict_handle(&bytes);
    assert!(h.size > 256 && h.size <= 4096, "dictionary of {} bytes", h.size);
    // Small blocks compress better with a dictionary: the data blocks shrink by more than
    // the dictionary's own size.
    let (with, without) = (p.data_size, plain_summary.properties.data_size);
    assert!(with + h.size < without, "with {with} + {} vs without {without}", h.size);
    reads_back(bytes.clone(), &entries, false);
    reads_back(bytes.clone(), &entries, true);
    // The digested dictionary is counted with the reader.
    let with_dict = open(bytes, None).unwrap().reader_memory_bytes();
    let without_dict = open(plain, None).unwrap().reader_memory_bytes();
    assert!(with_dict >= without_dict + h.size as usize, "{with_dict} vs {without_dict}");
}

#[test]
fn a_finalized_dictionary_carries_entropy_tables_shrinks_blocks_and_reads_back() {
    let entries = worded_entries(20_000);
    let (plain, _) = build(&entries, zstd(0, 0), bloom_source());
    let opts = TableOptions { use_zstd_dict_trainer: false, ..zstd(4096, 64 << 10) };
    let (bytes, summary) = build(&entries, opts, bloom_source());
    let p = &summary.properties;
    assert_eq!(p.format_version, 8);
    let h = dict_handle(&bytes);
    assert!(h.size > 256 && h.size <= 4096, "dictionary of {} bytes", h.size);
    // A formatted zstd dictionary (magic 0xEC30A437, little-endian), not raw content: it
    // holds entropy tables.
    let dict = &bytes[h.offset as usize..h.offset as usize + h.size as usize];
    assert!(dict.windows(4).any(|w| w == [0x37, 0xA4, 0x30, 0xEC]), "no zstd dictionary magic");
    let plain_data = open(plain, None).unwrap().properties().data_size;
    assert!(p.data_size + h.size < plain_data, "{} + {} vs {plain_data}", p.data_size, h.size);
    reads_back(bytes.clone(), &entries, false);
    reads_back(bytes, &entries, true);
}

#[test]
fn raw_samples_serve_as_the_dictionary_without_training() {
    let entries = simple_entries(5_000);
    let (bytes, summary) = build(&entries, zstd(8192, 0), bloom_source());
    assert_eq!(summary.properties.format_version, 8);
    // The first 8 KiB of data blocks, as they are.
    assert_eq!(dict_handle(&bytes).size, 8192);
    reads_back(bytes, &entries, true);
}

#[test]
fn a_table_smaller_than_the_training_target_trains_on_what_it_has() {
    // About 100 KiB of blocks against a 1 MiB target: trained at `finish`.
    let entries = simple_entries(3_000);
    let (bytes, summary) = build(&entries, zstd(2048, 1 << 20), bloom_source());
    assert_eq!(summary.properties.format_version, 8);
    assert!(dict_handle(&bytes).size > 0);
    reads_back(bytes, &entries, false);
}

#[test]
fn a_table_too_small_to_train_is_written_without_a_dictionary() {
    // One or two blocks are too few samples for zstd's trainer, and a raw dictionary needs 64
    // bytes: the table is a plain zstd table of the oldest format that holds it.
    for (n, train, trainer) in
        [(30, 64 << 10, true), (2, 0, true), (1, 64 << 10, true), (1, 64 << 10, false)]
    {
        let entries = simple_entries(n);
        let opts = TableOptions { use_zstd_dict_trainer: trainer, ..zstd(4096, train) };
        let (bytes, summary) = build(&entries, opts, bloom_source());
        assert_eq!(summary.properties.format_version, 1, "{n} entries");
        assert_eq!(dict_handle(&bytes).size, 0);
        reads_back(bytes, &entries, false);
    }
    // An empty table too.
    let (bytes, summary) = build(&[], zstd(4096, 64 << 10), FilterBlockSource::None);
    assert_eq!((summary.properties.format_version, dict_handle(&bytes).size), (1, 0));
}

#[test]
fn other_codecs_ignore_the_dictionary_options() {
    let entries = simple_entries(3_000);
    for compression in [Compression::None, Compression::Lz4] {
        let opts = TableOptions { compression, ..zstd(4096, 64 << 10) };
        let (bytes, summary) = build(&entries, opts, bloom_source());
        assert!(summary.properties.format_version < 8, "{compression:?}");
        assert_eq!(dict_handle(&bytes).size, 0);
        reads_back(bytes, &entries, false);
    }
}

#[test]
fn aligned_blocks_held_back_for_training_still_lie_within_pages() {
    let entries = simple_entries(20_000);
    let opts = TableOptions { block_align: true, ..zstd(4096, 64 << 10) };
    let (bytes, summary) = build(&entries, opts, bloom_source());
    assert_eq!(summary.properties.format_version, 8);
    let table = open(bytes.clone(), None).unwrap();
    let mut it = table.index_block().unwrap().iter();
    it.seek_to_first().unwrap();
    let page = crate::storage::direct::ALIGN as u64;
    while it.valid() {
        let h = BlockHandle::decode(it.value()).unwrap();
        let framed = h.size + crate::sst::format::BLOCK_TRAILER_LEN as u64;
        assert!(framed > page || h.offset / page == (h.offset + framed - 1) / page, "{h:?}");
        it.next().unwrap();
    }
    reads_back(bytes, &entries, false);
}

#[test]
fn out_of_range_dictionary_options_are_refused_by_the_builder() {
    for (dict, train) in [(2 << 20, 0), (4096, 100), (4096, 512 << 20)] {
        let e = TableBuilder::new(Box::new(MemFile::default()), zstd(dict, train)).err().unwrap();
        assert!(matches!(e, Error::InvalidArgument(_)), "{dict} {train}: {e}");
    }
}

/// Rewrites the dictionary block's contents with `f` and its CRC to match.
fn with_dictionary(bytes: &[u8], f: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let h = dict_handle(bytes);
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    let mut bad = bytes.to_vec();
    f(&mut bad[start..end]);
    let crc = crc32fast::hash(&bad[start..=end]); // contents and type byte
    bad[end + 1..end + 5].copy_from_slice(&crc.to_le_bytes());
    bad
}

#[test]
fn a_damaged_dictionary_is_a_corruption_error() {
    let entries = simple_entries(5_000);
    let (bytes, _) = build(&entries, zstd(4096, 64 << 10), bloom_source());
    let h = dict_handle(&bytes);
    // A flipped bit under the CRC: the open fails.
    let mut bad = bytes.clone();
    bad[h.offset as usize + 20] ^= 1;
    let e = open(bad, None).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("checksum"), "{e}");
    // Entropy tables zstd cannot load (all 0xFF after the magic and id), CRC fixed: the
    // dictionary is refused at open.
    let bad = with_dictionary(&bytes, |d| d[8..].fill(0xff));
    let e = open(bad, None).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("not a valid zstd dictionary"), "{e}");
    // Another dictionary id, CRC fixed: every block names the id it was compressed with, so
    // each read is a corruption error naming the block.
    let bad = with_dictionary(&bytes, |d| d[4] ^= 0x5a);
    let table = open(bad, None).unwrap();
    let (k, _, _, _) = &entries[0];
    let e = table.get(k, hash_key(k), u64::MAX, &ReadCounters::new(), &mut Vec::new());
    let e = e.unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("does not decompress"), "{e}");
}
