//! Aligned data blocks (`TableOptions::block_align`, docs/format.md#aligned-data-blocks): every
//! data block that fits in a page lies within one, the table reads back whole, and blocks pack
//! pages with little padding.

use super::*;
use crate::rng::SplitMix64;
use crate::sst::block::Block;
use crate::sst::block_iter::BlockIter;
use crate::sst::format::{BlockHandle, BLOCK_TRAILER_LEN};
use crate::sst::Compression;

const PAGE: u64 = 4096;

/// db_bench-like entries: 16-byte keys, 100-byte values that compress to about half (50
/// random bytes, repeated), one Put each.
fn bench_entries(n: u32) -> Vec<Entry> {
    let mut rng = SplitMix64::new(11);
    (0..n)
        .map(|i| {
            let half: Vec<u8> = (0..50).map(|_| rng.below(256) as u8).collect();
            let k = format!("{:016}", 7 * u64::from(i)).into_bytes();
            (k, u64::from(i) + 1, ValueKind::Put, [half.clone(), half].concat())
        })
        .collect()
}

/// The data blocks' handles, in order, as (offset, framed length).
fn data_blocks(t: &Table) -> Vec<(u64, u64)> {
    let index: Arc<Block> = t.index_block().unwrap();
    let mut it = BlockIter::new(index);
    it.seek_to_first().unwrap();
    let mut out = Vec::new();
    while it.valid() {
        let h = BlockHandle::decode(it.value()).unwrap();
        out.push((h.offset, h.size + BLOCK_TRAILER_LEN as u64));
        it.next().unwrap();
    }
    out
}

/// Pages a block's direct read transfers.
fn pages((at, framed): (u64, u64)) -> u64 {
    (at + framed - 1) / PAGE - at / PAGE + 1
}

#[test]
fn aligned_blocks_stay_within_pages_read_back_and_pad_little() {
    let entries = bench_entries(20_000);
    let codecs = [Compression::None, Compression::Lz4, Compression::Zstd { level: 3 }];
    for compression in codecs {
        let plain = TableOptions { compression, ..TableOptions::default() };
        let (bytes, _) = build(&entries, plain, bloom_source());
        let before = data_blocks(&open(bytes, None).unwrap());
        // The data exercise the option: without it, a quarter of the blocks or more span two
        // pages (uncompressed 4 KiB blocks all do: with their trailer they exceed a page).
        assert!(
            before.iter().filter(|&&b| pages(b) > 1).count() * 4 > before.len(),
            "{compression:?}"
        );

        let aligned = TableOptions { block_align: true, ..plain };
        let (bytes, summary) = build(&entries, aligned, bloom_source());
        let t = open(bytes.clone(), None).unwrap();
        let blocks = data_blocks(&t);
        // Each block is one page: none is larger here (an entry is 150 bytes).
        assert!(blocks.iter().all(|&b| pages(b) == 1), "{compression:?}");
        // Padding: the gaps between consecutive blocks.
        let padding: u64 = blocks.windows(2).map(|w| w[1].0 - (w[0].0 + w[0].1)).sum();
        let data = summary.properties.data_size;
        assert!(padding * 20 < data, "{compression:?}: {padding} bytes of padding in {data}");
        // Blocks pack pages: a page holds ceil(4096 / b) blocks against 4096 / b unaligned,
        // b being a full block's framed size (about 2.3 KiB with LZ4 here, so 2 against 1.75:
        // +14%); at most 25% more blocks.
        assert!(
            blocks.len() * 4 <= before.len() * 5,
            "{compression:?}: {} against {}",
            blocks.len(),
            before.len()
        );
        assert!(read_back(bytes, &entries).unwrap(), "{compression:?}: the table reads back");
    }
}

/// Reads every entry back by `get` and by iteration; the first error met, or whether every
/// answer equals `entries`.
fn read_back(bytes: Vec<u8>, entries: &[Entry]) -> crate::error::Result<bool> {
    let t = Arc::new(open(bytes, None)?);
    let c = crate::sst::ReadCounters::new();
    let mut same = true;
    for (k, _, _, v) in entries {
        let got = t.get(k, crate::filter::hash_key(k), u64::MAX, &c, &mut Vec::new())?;
        same &= got == crate::sst::GetResult::Found(v.clone());
    }
    let mut it = t.iter(false);
    it.seek_to_first()?;
    for (k, seq, kind, v) in entries {
        same &= it.valid() && it.key() == ikey::encode(k, *seq, *kind) && it.value() == &v[..];
        it.next()?;
    }
    Ok(same && !it.valid())
}

#[test]
fn every_byte_flip_of_an_aligned_table_is_detected_or_lands_in_padding_and_changes_nothing() {
    let entries = bench_entries(100);
    let opts = TableOptions {
        block_align: true,
        compression: Compression::Lz4,
        ..TableOptions::default()
    };
    let (bytes, _) = build(&entries, opts, bloom_source());
    let blocks = data_blocks(&open(bytes.clone(), None).unwrap());
    let padding: Vec<std::ops::Range<u64>> =
        blocks.windows(2).map(|w| w[0].0 + w[0].1..w[1].0).filter(|r| !r.is_empty()).collect();
    assert!(!padding.is_empty(), "the table has padding between its blocks");
    assert!(read_back(bytes.clone(), &entries).unwrap());
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x20;
        let in_padding = padding.iter().any(|r| r.contains(&(i as u64)));
        match read_back(bad, &entries) {
            // Padding belongs to no block: nothing reads it, every answer stays right.
            Ok(same) => assert!(in_padding && same, "flip at {i} went unnoticed"),
            Err(e) => assert!(!in_padding && e.is_corruption(), "byte {i}: {e}"),
        }
    }
}
