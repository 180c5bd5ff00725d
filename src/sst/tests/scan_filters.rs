//! Scan filters in a table (format version 5): written only when asked, recorded in the
//! properties, read back at open, and answering without false negatives; a table without them
//! keeps its old version byte for byte.

use super::*;
use crate::filter::hash_key;
use crate::options::RangeFilterOptions;
use crate::prefix::{FixedPrefix, PrefixExtractor};
use crate::sst::ScanFilterSpec;

fn build_with(entries: &[Entry], spec: ScanFilterSpec) -> Vec<u8> {
    let file = MemFile::default();
    let mut b = TableBuilder::new(Box::new(file.clone()), TableOptions::default()).unwrap();
    b.set_scan_filters(spec);
    for (k, seq, kind, v) in entries {
        b.add(&ikey::encode(k, *seq, *kind), v).unwrap();
    }
    b.finish(bloom_source()).unwrap();
    file.bytes()
}

fn open(bytes: Vec<u8>) -> Table {
    Table::open(Arc::new(MemFile::from_bytes(bytes)), 7, None, "000007.sst").unwrap()
}

/// Keys `aNN-iiii` for even NN only.
fn entries() -> Vec<Entry> {
    let mut out = Vec::new();
    for p in (0..30).step_by(2) {
        for i in 0..50u64 {
            let k = format!("a{p:02}-{:04}", i * 4).into_bytes();
            out.push((k, 1, ValueKind::Put, b"v".to_vec()));
        }
    }
    out
}

#[test]
fn a_table_without_scan_filters_is_unchanged_and_one_with_them_is_version_5() {
    let e = entries();
    let plain = build_with(&e, ScanFilterSpec::default());
    let (old, _) = build(&e, TableOptions::default(), bloom_source());
    assert_eq!(plain, old, "an empty spec changed the table's bytes");
    assert_eq!(open(plain).properties().format_version, 1);

    let extractor: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefix::new(3));
    let spec = ScanFilterSpec {
        prefix: Some((extractor.clone(), 10.0)),
        range: Some(RangeFilterOptions::default()),
    };
    let t = open(build_with(&e, spec));
    let p = t.properties();
    assert_eq!(p.format_version, 5);
    assert!(p.prefix_filter_block.size > 0 && p.range_filter_block.size > 0);
    assert_eq!(p.prefix_extractor.as_deref(), Some("siftdb.FixedPrefix.3"));
    let f = t.scan_filters();
    // Every present prefix passes; most absent ones are rejected (a 10-bit Bloom: ~1%).
    for n in (0..30).step_by(2) {
        assert_eq!(
            f.may_hold_prefix_hash(&*extractor, hash_key(format!("a{n:02}").as_bytes())),
            Some(true)
        );
    }
    let absent = (1..30).step_by(2).filter(|n| {
        f.may_hold_prefix_hash(&*extractor, hash_key(format!("a{n:02}").as_bytes())) == Some(false)
    });
    assert!(absent.count() >= 13, "the prefix filter rejects too few absent prefixes");
    // Another extractor's question is not answered.
    assert_eq!(f.may_hold_prefix_hash(&FixedPrefix::new(2), hash_key(b"a0")), None);
    // No false negative for a range holding a key; empty gaps mostly rejected.
    let mut rejected = 0;
    for (k, ..) in &e {
        let s = String::from_utf8(k.clone()).unwrap();
        let (pre, num) = s.split_at(4);
        let n: u64 = num.parse().unwrap();
        let at = |m: u64| format!("{pre}{m:04}").into_bytes();
        assert_eq!(f.may_hold_range(&at(n.saturating_sub(1)), &at(n + 1)), Some(true), "{s}");
        rejected += (f.may_hold_range(&at(n + 1), &at(n + 3)) == Some(false)) as u32;
    }
    assert!(rejected as usize > e.len() * 9 / 10, "only {rejected} empty gaps rejected");
}
