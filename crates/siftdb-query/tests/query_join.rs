//! Query layer joins: every mode and filter kind returns exactly the rows of a naive join, on
//! sorted and scattered probe layouts at several selectivities; the adaptive switch pauses a
//! filter that passes everything without changing the result.

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Options};
use siftdb_query::*;
use std::collections::HashMap;

const DIM: u64 = 400;
const FACT: usize = 6000;

struct Fixture {
    fk: Vec<Option<u64>>,
    dim_keys: Vec<u64>,
    dim_grp: Vec<u64>,
}

fn fixture(seed: u64) -> Fixture {
    fixture_over(seed, DIM + 50)
}

/// Fact keys uniform over `0..key_range`.
fn fixture_over(seed: u64, key_range: u64) -> Fixture {
    let mut rng = SplitMix64::new(seed);
    // Dimension keys 0..DIM with a few duplicates; fact keys over 0..DIM+50 (some never match)
    // with 2% nulls.
    let mut dim_keys: Vec<u64> = (0..DIM).collect();
    dim_keys.extend((0..20).map(|_| rng.below(DIM)));
    let dim_grp = dim_keys.iter().map(|k| k / 4).collect();
    let fk = (0..FACT).map(|_| (rng.below(50) != 0).then(|| rng.below(key_range))).collect();
    Fixture { fk, dim_keys, dim_grp }
}

fn load_fact<'a>(db: &'a Db, name: &str, f: &Fixture, sorted: bool) -> Table<'a> {
    let mut order: Vec<usize> = (0..FACT).collect();
    if sorted {
        order.sort_by_key(|&i| f.fk[i].unwrap_or(u64::MAX));
    }
    let schema = Schema::new(vec![
        Field::nullable("fk", ColumnType::U64),
        Field::new("p0", ColumnType::U64),
        Field::new("p1", ColumnType::F64),
    ])
    .unwrap();
    let mut t =
        Table::create(db, name, schema, TableOptions { chunk_rows: 256, page_rows: 64 }).unwrap();
    t.append(&[
        Column::with_validity(
            ColumnData::U64(order.iter().map(|&i| f.fk[i].unwrap_or(0)).collect()),
            order.iter().map(|&i| f.fk[i].is_some()).collect(),
        )
        .unwrap(),
        Column::new(ColumnData::U64(order.iter().map(|&i| i as u64 * 7).collect())),
        Column::new(ColumnData::F64(order.iter().map(|&i| i as f64 / 3.0).collect())),
    ])
    .unwrap();
    t
}

fn load_dim<'a>(db: &'a Db, f: &Fixture) -> Table<'a> {
    let schema = Schema::new(vec![
        Field::new("key", ColumnType::U64),
        Field::new("grp", ColumnType::U64),
        Field::new("attr", ColumnType::I64),
    ])
    .unwrap();
    let mut t =
        Table::create(db, "dim", schema, TableOptions { chunk_rows: 128, page_rows: 32 }).unwrap();
    t.append(&[
        Column::new(ColumnData::U64(f.dim_keys.clone())),
        Column::new(ColumnData::U64(f.dim_grp.clone())),
        Column::new(ColumnData::I64((0..f.dim_keys.len() as i64).map(|i| i - 9).collect())),
    ])
    .unwrap();
    t
}

/// The naive join: (probe row, build row) pairs with equal non-null keys and grp <= max_grp.
fn naive(fact: &Table<'_>, dim: &Fixture, max_grp: u64) -> Vec<(u64, u64)> {
    let all = scan(fact, &ScanSpec { predicates: vec![], projection: vec!["fk".into()] }).unwrap();
    let mut by_key: HashMap<u64, Vec<u64>> = HashMap::new();
    for (b, (&k, &g)) in dim.dim_keys.iter().zip(&dim.dim_grp).enumerate() {
        if g <= max_grp {
            by_key.entry(k).or_default().push(b as u64);
        }
    }
    let mut out = Vec::new();
    for (i, &row) in all.row_ids.iter().enumerate() {
        if let Value::U64(k) = all.columns[0].get(i) {
            for &b in by_key.get(&k).into_iter().flatten() {
                out.push((row, b));
            }
        }
    }
    out.sort_unstable();
    out
}

fn run<'t, 'db>(
    dim: &'t Table<'db>,
    fact: &'t Table<'db>,
    max_grp: u64,
    opts: JoinOptions,
) -> JoinResult {
    let build = BuildSide {
        table: dim,
        key: "key".into(),
        predicates: vec![between("grp", Value::U64(0), Value::U64(max_grp))],
        projection: vec!["attr".into()],
    };
    let probe = ProbeSide {
        table: fact,
        key: "fk".into(),
        projection: vec!["p0".into(), "p1".into(), "fk".into()],
    };
    let mut r = hash_join(&build, &probe, &JoinOptions { collect_pairs: true, ..opts }).unwrap();
    r.pairs.sort_unstable();
    r
}

#[test]
fn every_mode_and_filter_equals_the_naive_join() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let f = fixture(11);
    let dim = load_dim(&db, &f);
    for (name, sorted) in [("sorted", true), ("scattered", false)] {
        let fact = load_fact(&db, name, &f, sorted);
        // grp = key / 4: max_grp 0 selects 4 keys, 9 -> 40, 49 -> 200, 99 -> all 400.
        for max_grp in [0, 9, 49, 99] {
            let want = naive(&fact, &f, max_grp);
            let mut checksum = None;
            for filter in [
                FilterChoice::Auto,
                FilterChoice::InList,
                FilterChoice::TwoBit,
                FilterChoice::Blocked,
            ] {
                for mode in JoinMode::ALL {
                    // A small in_list_max makes the larger build sides use the Bloom filters
                    // under Auto, and keeps chunk-filter skipping for the small ones.
                    let opts = JoinOptions { mode, filter, in_list_max: 64, ..Default::default() };
                    let r = run(&dim, &fact, max_grp, opts);
                    let ctx = format!("{name} max_grp {max_grp} {filter:?} {}", mode.name());
                    assert_eq!(r.pairs, want, "{ctx}");
                    assert_eq!(r.rows, want.len() as u64, "{ctx}");
                    assert_eq!(*checksum.get_or_insert(r.checksum), r.checksum, "{ctx}");
                    let c = &r.counters;
                    assert_eq!(c.rows_out, r.rows);
                    assert!(
                        c.rows_passed >= c.rows_checked_members,
                        "{ctx}: a member was rejected"
                    );
                    if mode == JoinMode::NoFilter {
                        assert_eq!((c.rows_checked, c.chunks_skipped()), (0, 0), "{ctx}");
                        assert_eq!(
                            c.rows_probed,
                            (0..FACT).filter(|&i| f.fk[i].is_some()).count() as u64
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn sorted_layout_skips_chunks_and_small_builds_use_chunk_filters() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let f = fixture(12);
    let dim = load_dim(&db, &f);
    let sorted = load_fact(&db, "sorted", &f, true);
    let scattered = load_fact(&db, "scattered", &f, false);
    let opts = JoinOptions { mode: JoinMode::ChunkSkip, ..Default::default() };
    // 4 contiguous keys (0..=3) of 450 in a sorted layout of 24 chunks: at most 2 chunks hold them.
    let r = run(&dim, &sorted, 0, opts);
    assert_eq!(r.counters.chunks_total, 24);
    assert!(r.counters.chunks_skipped_minmax >= 22, "{:?}", r.counters);
    assert_eq!(r.counters.filter_kind, "in_list");
    assert_eq!(r.counters.false_positives, 0);
    // Scattered: min/max spans everything; every chunk holds some of keys 0..=3 with
    // probability ~0.9, so skipping (by chunk filter) may happen but results stay exact.
    let r2 = run(&dim, &scattered, 0, opts);
    assert_eq!(r2.counters.chunks_skipped_minmax, 0);
    assert_eq!(r2.rows, r.rows);
    // Build keys absent from the probe side: keys >= 450 do not exist; a build side of one key
    // inside the probe range but never drawn is skipped by the chunk filters alone.
    let present: std::collections::HashSet<u64> = f.fk.iter().flatten().copied().collect();
    if let Some(missing) = (0..DIM).find(|k| !present.contains(k)) {
        let build = BuildSide {
            table: &dim,
            key: "key".into(),
            predicates: vec![eq("key", Value::U64(missing))],
            projection: vec![],
        };
        let probe = ProbeSide { table: &scattered, key: "fk".into(), projection: vec![] };
        let r = hash_join(&build, &probe, &opts).unwrap();
        assert_eq!(r.rows, 0);
        // Each chunk filter (~1%) passes the key with small probability: most chunks skipped.
        assert!(r.counters.chunks_skipped_filter >= 20, "{:?}", r.counters);
    }
}

#[test]
fn adaptive_switch_pauses_a_filter_that_passes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    // Every fact key is a dimension key, so with the whole dimension selected the filter passes
    // every checked row (pass rate 1 > 0.9).
    let f = fixture_over(13, DIM);
    let dim = load_dim(&db, &f);
    let fact = load_fact(&db, "scattered", &f, false);
    let adaptive =
        AdaptiveConfig { warmup_rows: 200, max_pass_rate: 0.9, initial_backoff_rows: 512 };
    let opts =
        JoinOptions { mode: JoinMode::Adaptive, adaptive, in_list_max: 0, ..Default::default() };
    let base = run(&dim, &fact, 99, JoinOptions { mode: JoinMode::NoFilter, ..opts });
    let r = run(&dim, &fact, 99, opts);
    assert_eq!(r.pairs, base.pairs);
    assert_eq!(r.checksum, base.checksum);
    let c = &r.counters;
    assert_eq!(c.rows_passed, c.rows_checked);
    // 24 chunks of 256 rows. Chunk 0 is the warm-up sample -> pause 512 rows (chunks 1-2);
    // chunk 3 re-samples -> pause 1024 (4-7); chunk 8 -> 2048 (9-16); chunk 17 -> 4096 (18-23).
    assert_eq!(c.filter_pauses, 4, "{c:?}");
    assert_eq!(c.chunks_unfiltered, 20, "{c:?}");
    assert_eq!(c.rows_checked, 4 * 256 - nulls_in_checked(&fact, &[0, 3, 8, 17]));
    // A selective filter (keys 0..=3 of 400) is never paused, and stays exact.
    let sel = run(&dim, &fact, 0, opts);
    assert_eq!(sel.counters.filter_pauses, 0);
    assert_eq!(sel.counters.chunks_unfiltered, 0);
    assert_eq!(sel.pairs, naive(&fact, &f, 0));
}

/// Null keys in the given chunks (nulls are not checked against the filter).
fn nulls_in_checked(fact: &Table<'_>, chunks: &[usize]) -> u64 {
    chunks.iter().map(|&c| fact.chunks()[c].columns[0].null_count as u64).sum()
}
