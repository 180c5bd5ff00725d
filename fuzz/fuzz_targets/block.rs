//! Data and index blocks (one format): parse, walk, seek. Never a panic or an endless walk.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::sst::Block;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Ok(block) = Block::new(data.to_vec()) else { return };
    let block = Arc::new(block);
    let mut it = block.iter();
    if it.seek_to_first().is_ok() {
        // Every entry takes at least one byte, so a walk longer than the block is a loop.
        let mut steps = 0;
        while it.valid() && steps <= data.len() {
            let _ = (it.key(), it.value());
            if it.next().is_err() {
                break;
            }
            steps += 1;
        }
        assert!(steps <= data.len(), "block walk does not end");
    }
    let target = &data[..data.len().min(8)];
    let mut it = block.iter();
    if it.seek(target).is_ok() && it.valid() {
        let _ = it.key();
    }
});
