//! The fixed-size footer, block handles, block framing (CRC, zstd) and the properties block.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::sst::format::{unframe_block, BlockHandle, Footer, FOOTER_LEN};
use siftdb::inspect::sst::TableProperties;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = <&[u8; FOOTER_LEN]>::try_from(data.get(..FOOTER_LEN).unwrap_or(&[])) {
        let _ = Footer::decode(b);
    }
    let _ = BlockHandle::decode(data);
    let _ = TableProperties::decode(data);
    let _ = unframe_block(data.to_vec());
    // Framing with a valid CRC, so the zstd and type paths are reached too.
    if !data.is_empty() {
        let mut framed = data.to_vec();
        framed.push(data[0] & 1);
        let crc = crc32(&framed);
        framed.extend_from_slice(&crc.to_le_bytes());
        let _ = unframe_block(framed);
    }
});

/// CRC-32 (IEEE), as the block trailer uses; bitwise, to keep the fuzz crate dependency-free.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}
