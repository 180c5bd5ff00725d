//! Range-deletion blocks (SST format version 3): decode, then query the fragments. Never a
//! panic; a block that decodes answers like the plain list of its tombstones.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::sst::range_del_block;
use siftdb::inspect::sst::Fragments;

fuzz_target!(|data: &[u8]| {
    let Ok((frags, _)) = range_del_block::decode(data.to_vec()) else { return };
    let list: Vec<_> = frags.tombstones().collect();
    // Fragmenting again changes nothing, and re-encoding round-trips.
    assert_eq!(Fragments::new(&list), frags);
    let (raw, m) = range_del_block::encode(&frags, 0);
    let (again, m2) = range_del_block::decode(raw).expect("encoded block decodes");
    assert_eq!((again, m2), (frags.clone(), m));
    for probe in [&data[..data.len().min(4)], &data[data.len() / 2..], b"".as_slice()] {
        let want = list.iter().filter(|t| t.contains(probe)).map(|t| t.seq).max().unwrap_or(0);
        assert_eq!(frags.max_covering_seq(probe, u64::MAX), want);
    }
});
