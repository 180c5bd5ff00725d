//! Query-layer column chunks (both stored versions): decode arbitrary bytes as a chunk of a
//! type, nullability and row count taken from the input's first bytes. Never a panic; a chunk
//! that decodes has exactly its rows, and reading rows through the scans' gather path (packed
//! pages read in place) gives the same values as decoding the whole chunk.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb_query::inspect::decode_column_chunk;
use siftdb_query::{ColumnType, Field};

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let ty = [ColumnType::U64, ColumnType::I64, ColumnType::F64, ColumnType::Bytes]
        [(data[0] & 3) as usize];
    let field = if data[0] & 4 != 0 { Field::nullable("c", ty) } else { Field::new("c", ty) };
    let rows = u16::from_le_bytes([data[1], data[2]]) as u32;
    let sel: Vec<u32> = (0..rows).filter(|i| i % 3 == 1).collect();
    let Ok((all, gathered)) = decode_column_chunk(data[3..].to_vec(), &field, rows, &sel) else {
        return;
    };
    assert_eq!(all.len(), rows as usize);
    assert_eq!(gathered.len(), sel.len());
    for (k, &i) in sel.iter().enumerate() {
        let (a, b) = (gathered.get(k), all.get(i as usize));
        // Equal values, or the same NaN bits (which `==` on f64 does not call equal).
        let same = a == b || a.cmp_same(&b) == Some(std::cmp::Ordering::Equal);
        assert!(same, "row {i}: gathered {a:?}, decoded {b:?}");
    }
});
