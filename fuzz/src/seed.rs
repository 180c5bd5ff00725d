//! Writes a seed corpus (real SSTs, WALs, a manifest, blocks of every filter kind, range-deletion
//! blocks) into `corpus/<target>/`, so the fuzzers start from valid inputs and mutate past the
//! checksums.
//! Run by `run_all.sh` before fuzzing: `cargo run --release --bin seed`.

use siftdb::filter::prelude::*;
use siftdb::filter::rng::SplitMix64;
use siftdb::filter::{
    BinaryFuse16, BinaryFuse4Wise16, BinaryFuse4Wise8, BinaryFuse8, BlockedBloom, BumpedRibbon,
    CountingBloom, PackedBinaryFuse, Ribbon, ScalableBloom, SplitBlockBloom, StandardBloom,
    TwoBitBloom, Xor16, Xor8,
};
use siftdb::storage::{MemStorage, Storage};
use siftdb::{Compression, Db, Options};
use std::path::Path;
use std::sync::Arc;

fn put(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn main() {
    for (i, compression) in
        [Compression::None, Compression::Zstd(3), Compression::Lz4].into_iter().enumerate()
    {
        let s = MemStorage::new();
        let dir = Path::new("/seed");
        let opts = Options {
            storage: Some(Arc::new(s.clone())),
            memtable_size: 2048,
            block_size: 256,
            compression,
            // The last database keeps its values in blob files: blob seeds, and tables of
            // references (SST format 7).
            blob_threshold: (i == 2).then_some(16),
            ..Options::default()
        };
        let db = Db::open(dir, opts).unwrap();
        for k in 0..150 {
            db.put(format!("key{k:04}"), format!("value{k}").repeat(3)).unwrap();
            if k % 7 == 0 {
                db.delete(format!("key{:04}", k / 2)).unwrap();
            }
        }
        db.flush().unwrap();
        db.put("tail", "in the log").unwrap();
        drop(db);
        for name in s.list(dir).unwrap() {
            let bytes = s.read_all(&dir.join(&name)).unwrap();
            let target = match name.as_str() {
                n if n.ends_with(".sst") => "table",
                n if n.ends_with(".log") => "wal",
                n if n.starts_with("MANIFEST-") => "manifest",
                n if n.ends_with(".blob") => "blob",
                _ => continue,
            };
            put(target, &format!("{i}-{name}"), &bytes);
            if target == "table" {
                put("footer_properties", &format!("{i}-{name}"), &bytes[bytes.len() - 64..]);
                // The first data block (its framing stripped): a block seed.
                if bytes.len() > 300 && i == 0 {
                    put("block", &format!("{name}"), &bytes[..200]);
                }
            }
        }
    }
    let hashes = SplitMix64::new(1).hashes(200);
    let filters: Vec<(&str, Vec<u8>)> = vec![
        ("standard", {
            let mut f = StandardBloom::with_false_pos(0.01).expected_items(200).unwrap();
            f.insert_batch(&hashes);
            f.to_bytes()
        }),
        ("blocked", {
            let mut f = BlockedBloom::with_false_pos(0.01).expected_items(200).unwrap();
            f.insert_batch(&hashes);
            f.to_bytes()
        }),
        ("split_block", {
            let mut f = SplitBlockBloom::with_false_pos(0.01).expected_items(200).unwrap();
            f.insert_batch(&hashes);
            f.to_bytes()
        }),
        ("two_bit", {
            let mut f = TwoBitBloom::with_false_pos(0.05).expected_items(200).unwrap();
            f.insert_batch(&hashes);
            f.to_bytes()
        }),
        ("counting", {
            let mut f = CountingBloom::with_false_pos(0.01).expected_items(200).unwrap();
            f.insert_batch(&hashes);
            f.to_bytes()
        }),
        ("scalable", {
            let mut f = ScalableBloom::new(50, 0.01).unwrap();
            f.insert_batch(&hashes);
            f.to_bytes()
        }),
        ("xor8", Xor8::build(&hashes).unwrap().to_bytes()),
        ("xor16", Xor16::build(&hashes).unwrap().to_bytes()),
        ("fuse8", BinaryFuse8::build(&hashes).unwrap().to_bytes()),
        ("fuse16", BinaryFuse16::build(&hashes).unwrap().to_bytes()),
        ("fuse4_8", BinaryFuse4Wise8::build(&hashes).unwrap().to_bytes()),
        ("fuse4_16", BinaryFuse4Wise16::build(&hashes).unwrap().to_bytes()),
        ("packed_fuse11", PackedBinaryFuse::build(&hashes, 11).unwrap().to_bytes()),
        ("packed_fuse3_5", PackedBinaryFuse::build_with(&hashes, 5, 3, 1).unwrap().to_bytes()),
        ("ribbon", Ribbon::build(&hashes).unwrap().to_bytes()),
        // Enough keys for a bumped layer before the last (standard) one.
        (
            "bumped_ribbon",
            BumpedRibbon::build(&SplitMix64::new(5).hashes(6000)).unwrap().to_bytes(),
        ),
    ];
    for (name, bytes) in filters {
        put("filter_view", name, &bytes);
    }
    // Grafite range filters: the parse half of the target takes an even first byte, then the
    // envelope, so the fuzzer starts past the CRC.
    for (name, bits) in [("grafite8", 8.0), ("grafite14", 14.0)] {
        let keys: Vec<Vec<u8>> = (0..300u64).map(|i| (i * 7).to_be_bytes().to_vec()).collect();
        let f = siftdb::filter::GrafiteBuilder::new(bits, 16)
            .build_sorted_keys(keys.iter().map(|k| k.as_slice()))
            .unwrap();
        let mut seed = vec![0u8];
        seed.extend_from_slice(&f.to_bytes());
        put("range_filter", name, &seed);
    }
    // Range-deletion blocks: overlapping tombstones, fragmented as a table stores them.
    let t = |a: &str, b: &str, seq| siftdb::inspect::sst::RangeTombstone {
        start: a.into(),
        end: b.into(),
        seq,
    };
    for (name, ts) in [
        ("one", vec![t("a", "m", 3)]),
        ("overlapping", vec![t("a", "k", 3), t("c", "z", 8), t("c", "d", 5), t("q", "q\0", 9)]),
    ] {
        let (raw, _) = siftdb::inspect::sst::range_del_block::encode(
            &siftdb::inspect::sst::Fragments::new(&ts),
            0,
        );
        put("range_del_block", name, &raw);
    }
    println!("seed corpus written to corpus/");
}
