use super::*;
use crate::filter::hash_key;
use crate::rng::SplitMix64;
use crate::sst::format::BlockHandle;
use crate::sst::format::{Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::sst::{Compression, ReadCounters};

/// A table of about 4 KiB with several data blocks and a Bloom filter.
fn small_table() -> (Vec<Entry>, Vec<u8>) {
    let entries = simple_entries(80);
    let opts = TableOptions { block_size: 512, ..Default::default() };
    let (bytes, _) = build(&entries, opts, bloom_source());
    assert!((3000..6000).contains(&bytes.len()), "{}", bytes.len());
    (entries, bytes)
}

/// [`small_table`] with LZ4 data blocks (every data block stored compressed).
fn small_lz4_table() -> (Vec<Entry>, Vec<u8>) {
    let entries = simple_entries(80);
    let opts =
        TableOptions { block_size: 512, compression: Compression::Lz4, ..Default::default() };
    let (bytes, _) = build(&entries, opts, bloom_source());
    let h = data_block_0(&bytes);
    assert_eq!(bytes[h.offset as usize + h.size as usize], crate::sst::format::COMPRESSION_LZ4);
    (entries, bytes)
}

fn footer(bytes: &[u8]) -> Footer {
    Footer::decode(bytes[bytes.len() - FOOTER_LEN..].try_into().unwrap()).unwrap()
}

/// Opens and reads everything; returns the first error met, if any.
fn read_all(bytes: Vec<u8>, entries: &[Entry]) -> Result<()> {
    let table = Arc::new(open(bytes, None)?);
    let c = ReadCounters::new();
    let mut first_err = None;
    for (k, _, _, _) in entries {
        if let Err(e) = table.get(k, hash_key(k), u64::MAX, &c, &mut Vec::new()) {
            first_err.get_or_insert(e);
        }
    }
    let mut it = table.iter(false);
    let mut r = it.seek_to_first();
    let mut steps = 0;
    while r.is_ok() && it.valid() {
        steps += 1;
        assert!(steps <= entries.len() * 4, "iteration does not terminate");
        r = it.next();
    }
    r?;
    first_err.map_or(Ok(()), Err)
}

#[test]
fn every_single_byte_flip_is_detected_without_panic() {
    let (entries, bytes) = small_table();
    read_all(bytes.clone(), &entries).unwrap();
    // Every byte of the file is covered by a block CRC or the footer's magic/version/CRC, so
    // each flip must surface as an error at open or at the first read of the damaged block.
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x20;
        let e = read_all(bad, &entries).expect_err(&format!("flip at {i} went unnoticed"));
        assert!(e.is_corruption(), "byte {i}: {e}");
    }
}

#[test]
fn every_single_byte_flip_of_an_lz4_table_is_detected_without_panic() {
    let (entries, bytes) = small_lz4_table();
    read_all(bytes.clone(), &entries).unwrap();
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x20;
        let e = read_all(bad, &entries).expect_err(&format!("flip at {i} went unnoticed"));
        assert!(e.is_corruption(), "byte {i}: {e}");
    }
}

#[test]
fn lz4_data_blocks_with_bad_payloads_under_valid_checksums_are_corruption_errors() {
    let (entries, bytes) = small_lz4_table();
    let h = data_block_0(&bytes);
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    let mut rng = SplitMix64::new(12);
    for round in 0..500 {
        let mut bad = bytes.clone();
        let body = &mut bad[start..end];
        match round % 3 {
            // The length varint claims 1 GiB: refused before any allocation.
            0 => body[..5].copy_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x04]),
            1 => rng.fill(&mut body[1..]),
            _ => {
                let at = 2 + rng.below(body.len() as u64 - 2) as usize;
                body[at] = rng.next_u64() as u8;
            }
        }
        let crc = crc32fast::hash(&bad[start..=end]);
        bad[end + 1..end + BLOCK_TRAILER_LEN].copy_from_slice(&crc.to_le_bytes());
        let table = open(bad, None).unwrap(); // data blocks are read lazily
        let k = &entries[0].0;
        match table.get(k, hash_key(k), u64::MAX, &ReadCounters::new(), &mut Vec::new()) {
            Err(e) => {
                assert!(e.is_corruption(), "round {round}: {e}");
                assert!(e.to_string().contains("000007.sst"), "{e}");
            }
            // A wrong literal byte can still decode to a well-formed block; never a panic.
            Ok(_) => assert_ne!(round % 3, 0, "a 1 GiB length was accepted"),
        }
    }
}

#[test]
fn malformed_blocks_with_valid_checksums_never_panic() {
    // Writer bugs or CRC collisions: random contents under a correct CRC reach the parsers.
    let (entries, bytes) = small_table();
    let f = footer(&bytes);
    let mut rng = SplitMix64::new(11);
    let first = BlockHandle { offset: 0, size: 0 };
    for (round, h) in [first, f.index].into_iter().cycle().take(1000).enumerate() {
        let h = if h.size == 0 { data_block_0(&bytes) } else { h };
        let mut bad = bytes.clone();
        let body = &mut bad[h.offset as usize..(h.offset + h.size) as usize];
        if (round / 2) % 2 == 0 {
            rng.fill(body); // noise
        } else {
            for _ in 0..3 {
                let at = rng.below(body.len() as u64) as usize;
                body[at] = rng.next_u64() as u8; // a few wrong bytes in a plausible block
            }
        }
        let end = (h.offset + h.size) as usize;
        bad[end] = 0; // compression type: none
        let crc = crc32fast::hash(&bad[h.offset as usize..=end]);
        bad[end + 1..end + BLOCK_TRAILER_LEN].copy_from_slice(&crc.to_le_bytes());
        let _ = read_all(bad, &entries); // any outcome but a panic or a hang
    }
}

/// The handle of the first data block, from the index.
fn data_block_0(bytes: &[u8]) -> BlockHandle {
    let table = open(bytes.to_vec(), None).unwrap();
    let mut it = table.index_block().unwrap().iter();
    it.seek_to_first().unwrap();
    BlockHandle::decode(it.value()).unwrap()
}

#[test]
fn corrupted_data_block_names_file_and_offset() {
    let (entries, bytes) = small_table();
    let h = data_block_0(&bytes);
    let mut bad = bytes.clone();
    bad[h.offset as usize + 7] ^= 0xff;
    let table = open(bad, None).unwrap(); // the data block is read lazily
    let k = &entries[0].0;
    let e = table.get(k, hash_key(k), u64::MAX, &ReadCounters::new(), &mut Vec::new()).unwrap_err();
    match &e {
        Error::Corruption { file: Some(f), offset: Some(o), what } => {
            assert_eq!(f.to_str(), Some("000007.sst"));
            assert!(*o >= h.offset && *o <= h.end(), "{o}");
            assert!(what.contains("checksum"), "{what}");
        }
        other => panic!("expected corruption, got {other}"),
    }
    // Keys of undamaged blocks still read.
    let k = &entries[79].0;
    assert!(table.get(k, hash_key(k), u64::MAX, &ReadCounters::new(), &mut Vec::new()).is_ok());
}

#[test]
fn corrupted_index_filter_properties_or_footer_fail_open() {
    let (_, bytes) = small_table();
    let f = footer(&bytes);
    let footer_at = bytes.len() - FOOTER_LEN;
    for at in [f.index.offset + 1, f.filter.offset + 30, f.properties.offset + 2] {
        let mut bad = bytes.clone();
        bad[at as usize] ^= 0x01;
        let e = open(bad, None).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("000007.sst"), "{e}");
    }
    for at in [footer_at, footer_at + 50, footer_at + 55, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x01;
        assert!(open(bad, None).unwrap_err().is_corruption(), "footer byte {at}");
    }
}

#[test]
fn newer_format_version_is_named_in_the_error() {
    let (_, bytes) = small_table();
    let mut bad = bytes.clone();
    let newer = crate::sst::format::FORMAT_VERSION + 1;
    let f = Footer { version: newer, ..footer(&bytes) };
    let n = bad.len();
    bad[n - FOOTER_LEN..].copy_from_slice(&f.encode());
    let msg = open(bad, None).unwrap_err().to_string();
    assert!(msg.contains(&format!("format version {newer} is newer")), "{msg}");
}

#[test]
fn truncated_file_is_rejected() {
    let (_, bytes) = small_table();
    for len in 0..bytes.len() {
        let e = open(bytes[..len].to_vec(), None).expect_err("truncated table opened");
        assert!(e.is_corruption(), "len {len}: {e}");
    }
}
