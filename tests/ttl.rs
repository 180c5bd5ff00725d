//! TTL (design.md#ttl): expired entries are invisible to every read path before any
//! compaction, dropped by compaction, and the TTL setting persists with the keyspace.

use siftdb::{Db, KeyspaceOptions, ManualClock, Options, U64AddOperator};
use std::sync::Arc;
use std::time::Duration;

const T0: u64 = 1_700_000_000_000;
const TTL: Duration = Duration::from_secs(60);

fn options(clock: &Arc<ManualClock>) -> Options {
    Options {
        ttl: Some(TTL),
        clock: Some(clock.clone()),
        merge_operator: Some(Arc::new(U64AddOperator)),
        compaction: siftdb::CompactionOptions { auto: false, ..Default::default() },
        ..Options::default()
    }
}

/// Every read path's view of `key`: get, get_pinned, contains_key, multi_get, forward and
/// backward scans, prefix and cursor. All must agree.
fn every_read(db: &Db, key: &[u8]) -> Vec<Option<Vec<u8>>> {
    let mut views = vec![
        db.get(key).unwrap(),
        db.get_pinned(key).unwrap().map(|v| v.into_vec()),
        db.contains_key(key).unwrap().then(|| db.get(key).unwrap().unwrap_or_default()),
        db.multi_get([key]).pop().unwrap().unwrap(),
    ];
    let find = |items: Vec<(Vec<u8>, Vec<u8>)>| {
        items.into_iter().find(|(k, _)| k.as_slice() == key).map(|(_, v)| v)
    };
    views.push(find(db.scan().unwrap().map(Result::unwrap).collect()));
    views.push(find(db.scan().unwrap().rev().map(Result::unwrap).collect()));
    views.push(find(db.prefix(key).unwrap().map(Result::unwrap).collect()));
    let mut c = db.cursor().unwrap();
    c.seek(key).unwrap();
    views.push((c.valid() && c.key() == key).then(|| c.value().to_vec()));
    c.seek_for_prev(key).unwrap();
    views.push((c.valid() && c.key() == key).then(|| c.value().to_vec()));
    views
}

fn assert_all(db: &Db, key: &[u8], want: Option<&[u8]>) {
    for (i, got) in every_read(db, key).into_iter().enumerate() {
        assert_eq!(got.as_deref(), want, "read path {i} of key {key:?}");
    }
}

#[test]
fn expired_entries_are_invisible_on_every_read_path_before_any_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    db.put("a", "old").unwrap();
    clock.advance(Duration::from_secs(30));
    db.put("b", "newer").unwrap();
    for flushed in [false, true] {
        if flushed {
            db.flush().unwrap();
        }
        clock.set(T0 + 59_999);
        assert_all(&db, b"a", Some(b"old"));
        assert_all(&db, b"b", Some(b"newer"));
        clock.set(T0 + 60_000);
        assert_all(&db, b"a", None);
        assert_all(&db, b"b", Some(b"newer"));
        clock.set(T0 + 90_000);
        assert_all(&db, b"b", None);
        // An iterator whose range holds nothing live yields nothing, both ways.
        assert_eq!(db.scan().unwrap().count(), 0);
        assert_eq!(db.scan().unwrap().rev().count(), 0);
        clock.set(T0 + 30_000);
    }
    // A write after expiry is live again.
    clock.set(T0 + 100_000);
    db.put("a", "again").unwrap();
    assert_all(&db, b"a", Some(b"again"));
}

#[test]
fn merge_operands_carry_times_and_the_operator_never_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    db.put("n", 10u64.to_le_bytes()).unwrap();
    clock.advance(Duration::from_secs(40));
    db.merge("n", 1u64.to_le_bytes()).unwrap();
    clock.advance(Duration::from_secs(10));
    db.merge("n", 2u64.to_le_bytes()).unwrap();
    assert_all(&db, b"n", Some(&13u64.to_le_bytes()));
    // The base expires first: the operands above it merge onto nothing.
    clock.set(T0 + 60_000);
    assert_all(&db, b"n", Some(&3u64.to_le_bytes()));
    clock.set(T0 + 100_000);
    assert_all(&db, b"n", Some(&2u64.to_le_bytes()));
    db.flush().unwrap();
    assert_all(&db, b"n", Some(&2u64.to_le_bytes()));
    clock.set(T0 + 110_000);
    assert_all(&db, b"n", None);
    db.compact().unwrap();
    assert_all(&db, b"n", None);
    assert_eq!(db.stats().levels.iter().map(|l| l.files).sum::<usize>(), 0);
}

#[test]
fn compaction_drops_expired_entries_and_disk_returns() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let value = vec![7u8; 100];
    for i in 0..20_000u32 {
        db.put(format!("k{i:08}"), &value).unwrap();
    }
    db.flush().unwrap();
    clock.advance(Duration::from_secs(61));
    // The live data: 100 keys written after the others expired.
    for i in 0..100u32 {
        db.put(format!("live{i:05}"), &value).unwrap();
    }
    db.flush().unwrap();
    db.compact().unwrap();
    let disk: u64 = db.stats().levels.iter().map(|l| l.bytes).sum();
    // Live data: 100 entries of about 100 + 9 + 8 + 8 bytes; with per-file overhead (index,
    // filter, properties, footer) a table of them stays far under 10% of the 20,100 entries'
    // ~2.5 MB, and far over what the expired keys would need if any survived.
    assert!(disk < 64 << 10, "{disk} bytes on disk after compaction");
    assert_eq!(db.scan().unwrap().count(), 100);
}

#[test]
fn a_snapshot_keeps_nothing_expired_visible_but_compaction_keeps_what_it_may_see() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    db.put("k", "v1").unwrap();
    let snap = db.snapshot();
    db.put("k", "v2").unwrap();
    clock.advance(Duration::from_secs(61));
    assert_eq!(snap.get("k").unwrap(), None); // expired for every reader
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(db.get("k").unwrap(), None);
    assert_eq!(snap.get("k").unwrap(), None);
}

#[test]
fn ttl_persists_and_cannot_be_turned_on_or_off() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    {
        let db = Db::open(dir.path(), options(&clock)).unwrap();
        let ks = db
            .keyspace("events", KeyspaceOptions { ttl: Some(TTL), ..KeyspaceOptions::default() })
            .unwrap();
        ks.put("e", "1").unwrap();
        db.put("d", "1").unwrap();
        let plain = db.keyspace("plain", KeyspaceOptions::default()).unwrap();
        plain.put("p", "1").unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    // On for a keyspace without: refused, naming it; off for one with: refused.
    let on = KeyspaceOptions { ttl: Some(TTL), ..KeyspaceOptions::default() };
    let e = db.keyspace("plain", on).err().unwrap();
    assert!(e.to_string().contains("TTL"), "{e}");
    let e = db.keyspace("events", KeyspaceOptions::default()).err().unwrap();
    assert!(e.to_string().contains("TTL"), "{e}");
    // The duration may change.
    let longer = KeyspaceOptions { ttl: Some(TTL * 2), ..KeyspaceOptions::default() };
    let ks = db.keyspace("events", longer).unwrap();
    clock.advance(Duration::from_secs(90));
    assert_eq!(ks.get("e").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        db.keyspace("plain", KeyspaceOptions::default()).unwrap().get("p").unwrap(),
        Some(b"1".to_vec())
    );
    assert_eq!(db.get("d").unwrap(), None); // the default keyspace's TTL is 60 s
    db.close().unwrap();
    // The default keyspace: reopening without its TTL is refused.
    let e = Db::open(dir.path(), Options { ttl: None, ..options(&clock) }).err().unwrap();
    assert!(e.to_string().contains("TTL"), "{e}");
}

#[test]
fn out_of_range_ttl_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let e = Db::open(dir.path(), Options { ttl: Some(Duration::ZERO), ..options(&clock) });
    assert!(e.err().unwrap().to_string().contains("ttl"));
}

#[test]
fn the_background_picks_files_holding_expired_entries_when_no_level_is_over_size() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let opts = Options { compaction: siftdb::CompactionOptions::default(), ..options(&clock) };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..5_000u32 {
        db.put(format!("k{i:06}"), [1u8; 64]).unwrap();
    }
    db.flush().unwrap(); // one L0 file: under the L0 trigger, no level over its size
    let files = |db: &Db| db.stats().levels.iter().map(|l| l.files).sum::<usize>();
    assert_eq!(files(&db), 1);
    clock.advance(TTL);
    // The background thread looks at least every 200 ms; a minute is a bound on a stuck
    // picker, not a speed target.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while files(&db) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(files(&db), 0, "the expired file was not compacted away");
}

#[test]
fn a_compaction_filter_in_a_ttl_keyspace_sees_values_without_times_and_a_change_keeps_the_time() {
    struct Upper;
    impl siftdb::CompactionFilter for Upper {
        fn name(&self) -> &str {
            "upper"
        }
        fn filter(&self, _: usize, _: &[u8], v: &[u8], _: siftdb::EntryKind) -> siftdb::Decision {
            assert_eq!(v, b"abc", "the filter sees the value without its write time");
            siftdb::Decision::Change(v.to_ascii_uppercase())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    let ks = db
        .keyspace(
            "events",
            KeyspaceOptions {
                ttl: Some(TTL),
                compaction_filter: Some(Arc::new(Upper)),
                ..KeyspaceOptions::default()
            },
        )
        .unwrap();
    ks.put("k", "abc").unwrap();
    clock.advance(Duration::from_secs(30));
    db.flush().unwrap();
    assert_eq!(ks.get("k").unwrap(), Some(b"ABC".to_vec()));
    // Still the original write time: expired 60 s after the put, not after the flush.
    clock.set(T0 + 60_000);
    assert_eq!(ks.get("k").unwrap(), None);
}

/// Transactions read through the same paths: an expired entry is invisible to a transaction's
/// get, multi_get, scan and cursor, a value it writes carries a write time (it expires like any
/// other), and a buffered merge applies onto the unexpired value only.
#[test]
fn transactions_see_expiry_and_their_writes_expire() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = Db::open(dir.path(), options(&clock)).unwrap();
    db.put("old", "v").unwrap();
    db.put("n", 5u64.to_le_bytes()).unwrap();
    clock.advance(TTL + Duration::from_secs(1));
    let t = db.transaction().unwrap();
    assert_eq!(t.get("old").unwrap(), None);
    assert_eq!(t.multi_get(["old"]).pop().unwrap().unwrap(), None);
    assert!(t.scan().unwrap().next().is_none(), "every entry has expired");
    let mut c = t.cursor().unwrap();
    c.seek_to_first().unwrap();
    assert!(!c.valid());
    drop(c);
    // "n" expired: the merge starts from no base value.
    t.merge("n", 2u64.to_le_bytes()).unwrap();
    assert_eq!(t.get("n").unwrap(), Some(2u64.to_le_bytes().to_vec()));
    t.put("fresh", "w").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get("fresh").unwrap().as_deref(), Some(&b"w"[..]));
    assert_eq!(db.get("n").unwrap(), Some(2u64.to_le_bytes().to_vec()));
    clock.advance(TTL + Duration::from_secs(1));
    assert_eq!(db.get("fresh").unwrap(), None);
    let t = db.transaction().unwrap();
    assert_eq!(t.get("fresh").unwrap(), None);
}
