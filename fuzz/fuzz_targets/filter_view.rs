//! Every filter's reader: `FilterView::parse` dispatches on the kind tag to each filter's view;
//! probes (single and batch) must never panic on any accepted bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::filter::prelude::*;
use siftdb::filter::FilterView;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = FilterView::parse(data) else { return };
    let mut h = 0x9E37_79B9_7F4A_7C15u64;
    let mut hashes = Vec::new();
    for _ in 0..64 {
        h = h.wrapping_mul(0x2545_F491_4F6C_DD1D).wrapping_add(1);
        let _ = view.contains_hash(h);
        hashes.push(h);
    }
    let mut out = Vec::new();
    view.contains_batch(&hashes, &mut out);
    assert_eq!(out.len(), hashes.len());
    let _ = view.kind();
});
