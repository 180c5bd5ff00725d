//! The demo's load: present keys are the even numbers, written in a random order in atomic
//! batches of [`LOAD_BATCH`], each with fresh random value bytes. `siftdb demo`, `siftdb readamp`
//! and the `point_lookups` example load their databases with it, so their figures describe the
//! same trees.

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Result, WriteBatch};

/// Keys per write batch of the load.
pub const LOAD_BATCH: usize = 100;

/// The 16-byte key of number `i`: 16 decimal digits, so keys sort numerically. Present keys are
/// the even numbers; an odd number is a missing key inside the key range, between two present
/// neighbours, so only a filter can rule it out without reading a block.
pub fn decimal_key(i: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    let s = format!("{i:016}");
    k.copy_from_slice(&s.as_bytes()[s.len() - 16..]);
    k
}

/// The numbers `0..n` in the order of a Fisher-Yates shuffle drawn from `rng`.
pub fn shuffled(n: u64, rng: &mut SplitMix64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..n).collect();
    rng.shuffle(&mut order);
    order
}

/// Writes key [`decimal_key`]`(2 * i)` for each `i` of `order`, in that order, [`LOAD_BATCH`]
/// keys per batch; each value is `value.len()` bytes from `rng`. `progress` is told the size of
/// each batch once it is written.
pub fn load_even_keys(
    db: &Db,
    rng: &mut SplitMix64,
    order: &[u64],
    value: &mut [u8],
    mut progress: impl FnMut(u64),
) -> Result<()> {
    for chunk in order.chunks(LOAD_BATCH) {
        let mut batch = WriteBatch::new();
        for &i in chunk {
            rng.fill(value);
            batch.put(decimal_key(2 * i), &*value);
        }
        db.write(batch)?;
        progress(chunk.len() as u64);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_numerically_and_the_load_writes_every_even_key() {
        assert_eq!(&decimal_key(42), b"0000000000000042");
        assert!(decimal_key(9) < decimal_key(10));
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), siftdb::Options::default()).unwrap();
        let mut rng = SplitMix64::new(7);
        let order = shuffled(250, &mut rng);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..250).collect::<Vec<_>>());
        let mut batches = Vec::new();
        load_even_keys(&db, &mut rng, &order, &mut [0u8; 8], |n| batches.push(n)).unwrap();
        assert_eq!(batches, vec![100, 100, 50]);
        for i in 0..250 {
            assert_eq!(db.get(decimal_key(2 * i)).unwrap().map(|v| v.len()), Some(8));
            assert_eq!(db.get(decimal_key(2 * i + 1)).unwrap(), None);
        }
    }
}
