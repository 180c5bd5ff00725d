//! A point-lookup workload: load keys, flush, then look keys up with a uniform or zipfian choice
//! and a chosen fraction of hits, and print ops/s and the read-amplification counters.
//!
//! ```text
//! cargo run --release -p siftdb-bench-kit --example point_lookups -- [--keys N] [--lookups N]
//!     [--dist uniform|zipfian] [--theta 0.99] [--hit-ratio 0.5] [--value-size 100]
//!     [--memtable-mib 8] [--seed S] [--db PATH]
//! ```
//!
//! Present keys are the even numbers `0, 2, .., 2(N-1)` as 16-digit keys; a miss looks up the
//! odd number right after a chosen present key, so it falls inside the SSTs' key ranges and only
//! a filter can answer it without reading a data block.
//!
//! The zipfian choice is the generator of Gray et al., "Quickly generating billion-record
//! synthetic databases" (SIGMOD 1994), as YCSB's `ZipfianGenerator` uses it: rank `r` (0 = the
//! most popular) is drawn with probability proportional to `1 / (r + 1)^theta`. As YCSB's
//! `ScrambledZipfianGenerator` does, ranks are hashed onto the key space so that the popular keys
//! are spread over the files instead of all being the smallest keys.

use siftdb::filter::hash::mix64;
use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Error, Options, Result};
use siftdb_bench_kit::load::{self, decimal_key as key};
use std::path::PathBuf;
use std::time::Instant;

/// The command line, parsed by hand (no feature requirement on the example).
#[derive(Debug)]
struct Args {
    keys: u64,
    lookups: u64,
    zipfian: bool,
    theta: f64,
    hit_ratio: f64,
    value_size: usize,
    memtable_mib: usize,
    seed: u64,
    db: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        keys: 100_000,
        lookups: 300_000,
        zipfian: false,
        theta: 0.99,
        hit_ratio: 0.5,
        value_size: 100,
        memtable_mib: 8,
        seed: 1,
        db: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| Error::invalid(format!("{flag} needs a value")));
        let bad = |v: &str| Error::invalid(format!("bad value {v:?} for {flag}"));
        match flag.as_str() {
            "--keys" => a.keys = value()?.parse().map_err(|_| bad("keys"))?,
            "--lookups" => a.lookups = value()?.parse().map_err(|_| bad("lookups"))?,
            "--dist" => {
                a.zipfian = match value()?.as_str() {
                    "uniform" => false,
                    "zipfian" => true,
                    v => return Err(bad(v)),
                }
            }
            "--theta" => a.theta = value()?.parse().map_err(|_| bad("theta"))?,
            "--hit-ratio" => a.hit_ratio = value()?.parse().map_err(|_| bad("hit-ratio"))?,
            "--value-size" => a.value_size = value()?.parse().map_err(|_| bad("value-size"))?,
            "--memtable-mib" => a.memtable_mib = value()?.parse().map_err(|_| bad("memtable"))?,
            "--seed" => a.seed = value()?.parse().map_err(|_| bad("seed"))?,
            "--db" => a.db = Some(PathBuf::from(value()?)),
            "-h" | "--help" => {
                println!("see the header of examples/point_lookups.rs for the flags");
                std::process::exit(0);
            }
            other => return Err(Error::invalid(format!("unknown flag {other}"))),
        }
    }
    if a.keys == 0 || !(0.0..=1.0).contains(&a.hit_ratio) || a.memtable_mib == 0 {
        return Err(Error::invalid("need --keys > 0, --hit-ratio in [0, 1], --memtable-mib > 0"));
    }
    if a.zipfian && !(a.theta > 0.0 && a.theta < 1.0) {
        return Err(Error::invalid(
            "--theta must be in (0, 1) (the generator divides by 1 - theta)",
        ));
    }
    Ok(a)
}

/// Gray et al.'s zipfian generator over ranks `0..n`: O(n) setup (the zeta sum), O(1) per draw.
struct Zipfian {
    n: f64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    fn new(n: u64, theta: f64) -> Zipfian {
        // zeta(n, theta) = sum_{i=1..n} 1 / i^theta, the normalising constant.
        let zetan: f64 = (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum();
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let nf = n as f64;
        Zipfian {
            n: nf,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
        }
    }

    /// A rank; 0 is the most popular.
    fn next(&self, rng: &mut SplitMix64) -> u64 {
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n as u64 - 1)
    }
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let _tmp;
    let dir = match &args.db {
        Some(p) => p.clone(),
        None => {
            let t = tempfile::tempdir().map_err(|e| Error::io("creating a temp dir", e))?;
            let p = t.path().to_path_buf();
            _tmp = t;
            p
        }
    };
    println!("{args:?}");
    let opts = Options { memtable_size: args.memtable_mib << 20, ..Options::default() };
    let db = Db::open(&dir, opts)?;
    let mut rng = SplitMix64::new(args.seed);

    // Load: keys in random order (a Fisher-Yates shuffle), 100 per batch, then flush.
    let order = load::shuffled(args.keys, &mut rng);
    let mut value = vec![0u8; args.value_size];
    let t = Instant::now();
    load::load_even_keys(&db, &mut rng, &order, &mut value, |_| ())?;
    db.flush()?;
    drop(order);
    let secs = t.elapsed().as_secs_f64();
    println!("load + flush: {:.0} keys/s ({secs:.2} s)", args.keys as f64 / secs);

    // Lookups.
    let zipf = args.zipfian.then(|| Zipfian::new(args.keys, args.theta));
    let before = db.stats();
    let (mut hits_asked, mut found) = (0u64, 0u64);
    let t = Instant::now();
    for _ in 0..args.lookups {
        let i = match &zipf {
            // Scramble the rank onto the key space (collisions merely merge two ranks' mass).
            Some(z) => mix64(z.next(&mut rng), args.seed) % args.keys,
            None => rng.below(args.keys),
        };
        let hit = rng.next_f64() < args.hit_ratio;
        hits_asked += u64::from(hit);
        let k = key(2 * i + u64::from(!hit));
        found += u64::from(db.get(k)?.is_some());
    }
    let secs = t.elapsed().as_secs_f64();
    if found != hits_asked {
        return Err(Error::corruption(
            format!("{hits_asked} present keys looked up but {found} found"),
            None,
        ));
    }
    let d = db.stats().since(&before);
    println!(
        "lookups: {:.0} ops/s ({} lookups in {secs:.2} s, {found} found = {:.1}%)",
        args.lookups as f64 / secs,
        args.lookups,
        100.0 * found as f64 / args.lookups.max(1) as f64
    );
    println!("\nread amplification per level (blocks/op = index + data blocks per lookup):");
    print!("{}", d.read_amp_table(args.lookups));
    let t = d.total_reads();
    println!(
        "data blocks per lookup {:.4}; per missing lookup the filters let through {:.4}",
        t.data_blocks_read as f64 / args.lookups.max(1) as f64,
        t.false_positives() as f64 / (args.lookups - hits_asked).max(1) as f64
    );
    println!("\ntickers (this phase; block cache figures are since open):");
    for (name, value) in d.tickers() {
        println!("    {name:<42} {value}");
    }
    println!(
        "flushes {} (filter written as is {}, rebuilt {})",
        d.flushes, d.flush_filter_as_is, d.flush_filter_rebuilt
    );
    Ok(())
}
