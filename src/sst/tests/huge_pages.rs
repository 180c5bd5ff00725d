//! `MetaPolicy::huge_page_filters`: a filter the table holds is copied onto the huge-page arena
//! (src/huge_arena.rs) and answers exactly as on the heap; a filter in the block cache is not.

use super::*;
use crate::filter::hash_key;
use crate::sst::{GetResult, MetaPolicy, ReadCounters};

fn open(bytes: &[u8], cache: Option<Arc<BlockCache>>, policy: MetaPolicy) -> Table {
    let file = Arc::new(MemFile::from_bytes(bytes.to_vec()));
    Table::open_with(file, 9, cache, "000009.sst", policy).unwrap()
}

fn found(t: &Table, key: &[u8]) -> bool {
    let got = t.get(key, hash_key(key), u64::MAX, &ReadCounters::new(), &mut Vec::new());
    matches!(got.unwrap(), GetResult::Found(_))
}

#[test]
fn a_held_filter_moves_to_huge_pages_and_answers_the_same() {
    let entries = simple_entries(3000);
    let (bytes, _) = build(&entries, TableOptions::default(), bloom_source());
    let huge = MetaPolicy { huge_page_filters: true, ..MetaPolicy::default() };
    let on = open(&bytes, None, huge);
    let off = open(&bytes, None, MetaPolicy::default());
    assert_eq!(on.filter_on_huge_pages(), Some(cfg!(target_os = "linux")));
    assert_eq!(off.filter_on_huge_pages(), Some(false));
    // The same filter bytes: every probe answers alike, and no stored key is missed.
    let (a, b) = (on.filter().unwrap(), off.filter().unwrap());
    for i in 0..20_000u64 {
        let h = hash_key(format!("probe{i}").as_bytes());
        assert_eq!(a.contains_hash(h), b.contains_hash(h));
    }
    for (k, ..) in entries.iter().step_by(7) {
        assert!(found(&on, k));
    }
    // The piece is the block rounded up to a cache line: what the table reports holding.
    let diff = on.held_memory_bytes().0 as i64 - off.held_memory_bytes().0 as i64;
    assert!(diff.abs() < 64, "held bytes on huge pages differ by {diff}");

    // A filter kept in the block cache stays on the heap (it is evicted and read again).
    let cache = Arc::new(BlockCache::new(8 << 20));
    let cached = MetaPolicy { cache_index_and_filter_blocks: true, ..huge };
    assert_eq!(open(&bytes, Some(cache), cached).filter_on_huge_pages(), None);
}
