//! Times whole bumped ribbon builds at 1% over seeded random hashes, and checks them.
//!
//! `cargo run --release -p siftdb-filter --example bumped_build -- KEYS REPS THREADS`
//! (defaults 500,000, 11 and 1). Prints the median and fastest ns per key, the filter's bytes,
//! layers and expected FPR, the FPR measured on 1M non-keys, and a digest of the bytes of every
//! build (the same for every thread count: the builder promises it).

use siftdb_filter::rng::SplitMix64;
use siftdb_filter::{BumpedRibbon, Filter};
use std::time::Instant;

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).map_or(default, |s| s.replace('_', "").parse().expect("a number"))
}

fn main() {
    let (n, reps, threads) = (arg(1, 500_000), arg(2, 11).max(1), arg(3, 1));
    let mut rng = SplitMix64::new(1);
    let mut digest = 0u64;
    let mut ns = Vec::new();
    for rep in 0..reps {
        let keys = rng.hashes(n);
        let t = Instant::now();
        let f = BumpedRibbon::with_false_pos(0.01).threads(threads).build(&keys).expect("builds");
        ns.push(t.elapsed().as_secs_f64() * 1e9 / n as f64);
        let bytes = f.to_bytes();
        digest = bytes.iter().fold(digest, |d, &b| (d ^ b as u64).wrapping_mul(0x100_0000_01b3));
        if rep == 0 {
            assert!(keys.iter().all(|&h| f.contains_hash(h)), "a key is missing");
            let fp = rng.hashes(1_000_000).iter().filter(|&&h| f.contains_hash(h)).count();
            println!(
                "{n} keys: {} bytes, layers {:?}, expected FPR {:.5}, measured {:.5}",
                bytes.len(),
                f.layer_slots(),
                f.fpr(),
                fp as f64 / 1e6
            );
        }
    }
    ns.sort_by(f64::total_cmp);
    println!(
        "{threads} thread(s): median {:.1} ns/key, fastest {:.1}, digest {digest:016x}",
        ns[ns.len() / 2],
        ns[0]
    );
}
