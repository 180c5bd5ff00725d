//! Inner equi-join on one `u64` key column, with a probe filter pushed into the probe scan.
//!
//! The build side is scanned (with its predicates), giving a hash table key -> build rows and a
//! probe filter over its distinct keys ([`FilterChoice`]). The probe side then runs in one of
//! five [`JoinMode`]s, each adding one technique to the previous:
//!
//! 1. `NoFilter`: a plain hash join; every probe chunk is read and all projected columns are
//!    materialised, then each row is looked up in the hash table.
//! 2. `ProbeFilter`: as 1, but each row checks the filter before the hash lookup (reported
//!    gains 1.1-2x: only the lookup is saved).
//! 3. `ScanFilter`: the filter is pushed into the scan: the key column is decoded first, rows
//!    the filter rejects are dropped, the survivors are looked up, and the other columns are
//!    decoded only for rows that matched, and not at all for chunks with no match (late
//!    materialisation; reported 3-9x).
//! 4. `ChunkSkip`: as 3, plus chunks are skipped unread when the key column's min/max cannot
//!    hold any build key or, for a small build side (at most `in_list_max` keys), when the
//!    chunk's split-block filter rejects every build key (pays on sorted data only).
//! 5. `Adaptive`: as 4, plus the off-switch of [`AdaptiveConfig`]: the filter is paused while
//!    it passes more than ~90% of rows.
//!
//! All modes return the same rows; null keys never join.

mod adaptive;
mod filter;
mod output;
mod probe;

pub use adaptive::AdaptiveConfig;
pub use filter::{key_hash, FilterChoice};

use crate::column::Value;
use crate::counters::JoinCounters;
use crate::scan::{scan, Predicate, ScanSpec};
use crate::schema::ColumnType;
use crate::table::Table;
use adaptive::Switch;
use filter::ProbeFilter;
use output::{cell_hash, Output};
use siftdb::filter::hash::mix64;
use siftdb::filter::{Filter, SplitBlockBloom};
use siftdb::{Error, Result};
use std::collections::HashMap;
use std::time::Instant;

/// How the probe side uses the filter. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinMode {
    /// Plain hash join.
    NoFilter,
    /// Filter checked before the hash lookup, after full materialisation.
    ProbeFilter,
    /// Filter pushed into the scan with late materialisation.
    ScanFilter,
    /// `ScanFilter` plus chunk skipping by min/max and chunk filters.
    ChunkSkip,
    /// `ChunkSkip` plus the adaptive off-switch.
    Adaptive,
}

impl JoinMode {
    /// Every mode, in order.
    pub const ALL: [JoinMode; 5] = [
        JoinMode::NoFilter,
        JoinMode::ProbeFilter,
        JoinMode::ScanFilter,
        JoinMode::ChunkSkip,
        JoinMode::Adaptive,
    ];

    /// The mode's name as printed by the benchmark (`no_filter`, ...).
    pub fn name(self) -> &'static str {
        match self {
            JoinMode::NoFilter => "no_filter",
            JoinMode::ProbeFilter => "probe_filter",
            JoinMode::ScanFilter => "scan_filter",
            JoinMode::ChunkSkip => "chunk_skip",
            JoinMode::Adaptive => "adaptive",
        }
    }
}

/// Options of [`hash_join`].
#[derive(Debug, Clone, Copy)]
pub struct JoinOptions {
    /// Probe-side strategy. Default `Adaptive`.
    pub mode: JoinMode,
    /// Probe filter kind. Default `Auto`.
    pub filter: FilterChoice,
    /// A build side with at most this many distinct keys is "small": IN-list filter (under
    /// `Auto`) and chunk-filter skipping. Default 1,024.
    pub in_list_max: usize,
    /// Bits per build key of the two-bit filter. Default 24 (about 1%, blocked formula).
    pub two_bit_bits_per_key: f64,
    /// Target FPR of the blocked filter. Default 0.01.
    pub blocked_fpr: f64,
    /// Threads that fill the two-bit filter. Default 2.
    pub build_threads: usize,
    /// The adaptive switch. Default [`AdaptiveConfig::default`].
    pub adaptive: AdaptiveConfig,
    /// Return the `(probe row, build row)` pairs too. Default false (count and checksum only).
    pub collect_pairs: bool,
}

impl Default for JoinOptions {
    fn default() -> Self {
        JoinOptions {
            mode: JoinMode::Adaptive,
            filter: FilterChoice::Auto,
            in_list_max: 1024,
            two_bit_bits_per_key: 24.0,
            blocked_fpr: 0.01,
            build_threads: 2,
            adaptive: AdaptiveConfig::default(),
            collect_pairs: false,
        }
    }
}

/// The build side: a table, its key column, predicates selecting build rows, and the columns
/// whose values enter the checksum.
#[derive(Debug, Clone)]
pub struct BuildSide<'t, 'db> {
    /// The table.
    pub table: &'t Table<'db>,
    /// Join key column (type `u64`).
    pub key: String,
    /// Conjunction selecting build rows.
    pub predicates: Vec<Predicate>,
    /// Columns carried into the result.
    pub projection: Vec<String>,
}

/// The probe side: a table, its key column and projected columns.
#[derive(Debug, Clone)]
pub struct ProbeSide<'t, 'db> {
    /// The table.
    pub table: &'t Table<'db>,
    /// Join key column (type `u64`).
    pub key: String,
    /// Columns carried into the result.
    pub projection: Vec<String>,
}

/// A join's output.
#[derive(Debug, Clone)]
pub struct JoinResult {
    /// Joined rows.
    pub rows: u64,
    /// Order-independent checksum over the joined rows (row numbers and projected values of
    /// both sides): equal results give equal checksums whatever the mode.
    pub checksum: u64,
    /// `(probe row number, build row number)` pairs when `collect_pairs` was set, unordered.
    pub pairs: Vec<(u64, u64)>,
    /// What the join did.
    pub counters: JoinCounters,
}

/// Whether no build key can lie in `[min, max]` of a probe chunk or page (`None`: every probe
/// key null, or no build key).
fn outside(minmax: Option<(&Value, &Value)>, build: Option<(u64, u64)>) -> bool {
    match (minmax, build) {
        (Some((Value::U64(lo), Value::U64(hi))), Some((bl, bh))) => *hi < bl || *lo > bh,
        _ => true,
    }
}

/// Runs the inner equi-join `build.key = probe.key`. See the module documentation.
pub fn hash_join(
    build: &BuildSide<'_, '_>,
    probe: &ProbeSide<'_, '_>,
    opts: &JoinOptions,
) -> Result<JoinResult> {
    let bschema = build.table.schema();
    let pschema = probe.table.schema();
    let bkey = bschema.index_of(&build.key)?;
    let pkey = pschema.index_of(&probe.key)?;
    if bschema.fields[bkey].ty != ColumnType::U64 || pschema.fields[pkey].ty != ColumnType::U64 {
        return Err(Error::invalid("join keys must be u64 columns"));
    }
    let pproj: Vec<usize> =
        probe.projection.iter().map(|n| pschema.index_of(n)).collect::<Result<_>>()?;

    // Build: scan, hash table (key -> first build row, chained through `next`), row hashes.
    let mut projection = vec![build.key.clone()];
    projection.extend(build.projection.iter().cloned());
    let b = scan(build.table, &ScanSpec { predicates: build.predicates.clone(), projection })?;
    let n = b.row_ids.len();
    let mut heads: probe::Heads = HashMap::default();
    let mut next = vec![u32::MAX; n];
    let mut bhash = vec![0u64; n];
    for i in 0..n {
        let mut h = mix64(b.row_ids[i], 5);
        for (j, c) in b.columns[1..].iter().enumerate() {
            h = h.wrapping_add(cell_hash(&c.get(i), j));
        }
        bhash[i] = h;
        if let Value::U64(k) = b.columns[0].get(i) {
            if let Some(old) = heads.insert(k, i as u32) {
                next[i] = old;
            }
        }
    }
    let keys: Vec<u64> = heads.keys().copied().collect();
    let build_range = keys.iter().min().copied().zip(keys.iter().max().copied());
    let t = Instant::now();
    let pf = match opts.mode {
        JoinMode::NoFilter => None,
        _ => Some(ProbeFilter::build(
            &keys,
            opts.filter,
            opts.in_list_max,
            opts.two_bit_bits_per_key,
            opts.blocked_fpr,
            opts.build_threads,
        )?),
    };
    let small = keys.len() <= opts.in_list_max;
    let sbbf_hashes: Vec<u64> = if small {
        keys.iter().map(|&k| SplitBlockBloom::hash_u64(k)).collect()
    } else {
        Vec::new()
    };
    let mut c = JoinCounters {
        build_rows: n as u64,
        rows_decoded: vec![0; pschema.len()],
        filter_kind: pf.as_ref().map_or("none", ProbeFilter::kind),
        filter_bytes: pf.as_ref().map_or(0, ProbeFilter::bytes),
        filter_build_ns: t.elapsed().as_nanos() as u64,
        configured_fpr: pf.as_ref().map_or(0.0, ProbeFilter::configured_fpr),
        ..Default::default()
    };

    let skip_chunks = matches!(opts.mode, JoinMode::ChunkSkip | JoinMode::Adaptive);
    let late = matches!(opts.mode, JoinMode::ScanFilter | JoinMode::ChunkSkip | JoinMode::Adaptive);
    let side = probe::Side {
        table: probe.table,
        key: pkey,
        projection: &pproj,
        heads: &heads,
        build_range,
        skip_pages: skip_chunks,
    };
    let mut switch = Switch::new(opts.adaptive);
    let mut out = Output { rows: 0, checksum: 0, pairs: Vec::new(), collect: opts.collect_pairs };
    let mut rows_seen = 0u64;
    for (ci, meta) in probe.table.chunks().iter().enumerate() {
        c.chunks_total += 1;
        let chunk_end = rows_seen + meta.rows as u64;
        if skip_chunks {
            let km = &meta.columns[pkey];
            if outside(km.min.as_ref().zip(km.max.as_ref()), build_range) {
                c.chunks_skipped_minmax += 1;
                rows_seen = chunk_end;
                continue;
            }
            if small {
                let rejects = match probe.table.read_filter(ci, pkey)? {
                    Some(f) => !sbbf_hashes.iter().any(|&h| f.contains_hash(h)),
                    None => true,
                };
                if rejects {
                    c.chunks_skipped_filter += 1;
                    rows_seen = chunk_end;
                    continue;
                }
            }
        }
        let use_filter = match opts.mode {
            JoinMode::NoFilter => false,
            JoinMode::Adaptive => switch.active(rows_seen),
            _ => true,
        };
        if opts.mode == JoinMode::Adaptive && !use_filter {
            c.chunks_unfiltered += 1;
        }
        let pf_ref = if use_filter { pf.as_ref() } else { None };
        let (checked0, passed0) = (c.rows_checked, c.rows_passed);
        let (matches, hashes) = if late {
            probe::late(&side, ci, meta, pf_ref, &mut c)?
        } else {
            probe::full(&side, ci, meta, pf_ref, &mut c)?
        };
        for (&(i, head), &h) in matches.iter().zip(&hashes) {
            out.emit(meta.first_row + i as u64, h, head, &next, &bhash);
        }
        rows_seen = chunk_end;
        if opts.mode == JoinMode::Adaptive && use_filter {
            switch.observe(rows_seen, c.rows_checked - checked0, c.rows_passed - passed0);
        }
    }
    c.filter_pauses = switch.pauses;
    c.rows_out = out.rows;
    // Chain indices are positions in the build scan; report table row numbers.
    for p in &mut out.pairs {
        p.1 = b.row_ids[p.1 as usize];
    }
    Ok(JoinResult { rows: out.rows, checksum: out.checksum, pairs: out.pairs, counters: c })
}
