//! The scan-filter benchmarks: `rangeempty` (is any key in a short range?) and `prefixscan`
//! (every key of one prefix), over the key layout of key_layout.rs, which picks the ranges and
//! prefixes (the same ones tools/rocksdb-bench asks about).
//!
//! Besides the result line, each prints a `scan filters :` line from the scan counters'
//! deltas over the run (`Stats::since`, summed over levels): the found share, and per
//! operation the files the prefix and range filters skipped (`filter_useful`), the files they
//! passed (`filter_positive`), the data blocks read, and the observed FPR = false positives /
//! (false positives + skipped). Files without a usable scan filter are read without being
//! counted there (their blocks are). For rangeempty with `--range_filter_bits` B the configured
//! FPR is the run's mean of w / 2^(floor(B) - 2) (capped at 1) over its widths w, the bound
//! `RangeFilterOptions::bits_per_key` documents.

use super::report::ThreadStats;
use super::workloads::{tick, Budget, Ctx};
use siftdb::{ReadStats, Result};
use siftdb_bench_kit::key_layout::{PrefixGen, RangeGen};
use siftdb_bench_kit::keys::make_key;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// What the threads of a scan benchmark add up beyond [`ThreadStats`].
#[derive(Default)]
struct Tally {
    /// Operations aimed at a range or prefix holding a key number of the layout.
    targeted: AtomicU64,
    /// Entries the scans returned (prefixscan).
    entries: AtomicU64,
    /// Sum over operations of min(1, w / 2^(floor(B) - 2)) (rangeempty with a range filter).
    configured_fpr_sum: Mutex<f64>,
}

impl Ctx<'_> {
    /// rangeempty: does the database hold a key in [lo, hi]? `db.range(lo..=hi)` and at most
    /// its first entry. Found = it has one.
    pub fn range_empty(&mut self, gen: &RangeGen) -> Result<(ThreadStats, Option<String>)> {
        let (reads, ks, secs) = (self.flags.reads(), self.flags.key_size, self.flags.duration);
        let bits = self.flags.range_filter_bits;
        let tally = Tally::default();
        let before = self.db.stats();
        let st = self.parallel("rangeempty", reads, &|db, rng, _, pb, st| {
            let (mut lo, mut hi) = (Vec::with_capacity(ks), Vec::with_capacity(ks));
            let mut budget = Budget::new(reads, secs);
            let (mut i, mut targeted, mut fpr_sum) = (0, 0, 0.0);
            while budget.grant(i, 1) == 1 {
                let op = gen.next(rng);
                make_key(op.lo, ks, &mut lo);
                make_key(op.hi, ks, &mut hi);
                if let Some(kv) = db.range(lo.as_slice()..=hi.as_slice())?.next() {
                    let (k, v) = kv?;
                    st.found += 1;
                    st.bytes += (k.len() + v.len()) as u64;
                }
                targeted += u64::from(!op.empty);
                if bits > 0.0 {
                    // Grafite uses the integer part of the bits per key (r = n 2^(floor(B) - 2)).
                    let width = (op.hi - op.lo + 1) as f64;
                    fpr_sum += (width / (bits.floor() - 2.0).exp2()).min(1.0);
                }
                tick(pb, i);
                i += 1;
            }
            st.done = i;
            st.report_found = true;
            tally.targeted.fetch_add(targeted, Relaxed);
            *tally.configured_fpr_sum.lock().expect("no panics under the lock") += fpr_sum;
            Ok(())
        })?;
        let scans = self.db.stats().since(&before).total_scan_reads();
        let configured = (bits > 0.0).then(|| {
            let sum = *tally.configured_fpr_sum.lock().expect("no panics under the lock");
            sum / st.done.max(1) as f64
        });
        let mut line = scan_line("rangeempty", &st, &tally, &scans, None, configured);
        line += &gen.fill().mismatch_warning("rangeempty", st.found, tally.targeted.load(Relaxed));
        Ok((st, Some(line)))
    }

    /// prefixscan: every entry of one `--prefix_size` prefix (`db.prefix(p)`). Found = the
    /// prefix has an entry.
    pub fn prefix_scan(&mut self, gen: &PrefixGen) -> Result<(ThreadStats, Option<String>)> {
        let (reads, secs) = (self.flags.reads(), self.flags.duration);
        let tally = Tally::default();
        let before = self.db.stats();
        let st = self.parallel("prefixscan", reads, &|db, rng, _, pb, st| {
            let mut prefix = Vec::with_capacity(8);
            let mut budget = Budget::new(reads, secs);
            let (mut i, mut targeted, mut entries) = (0, 0, 0);
            while budget.grant(i, 1) == 1 {
                let op = gen.next(rng);
                gen.prefix(op.group, &mut prefix);
                let mut n = 0;
                for kv in db.prefix(&prefix)? {
                    let (k, v) = kv?;
                    n += 1;
                    st.bytes += (k.len() + v.len()) as u64;
                }
                st.found += u64::from(n > 0);
                entries += n;
                targeted += u64::from(!op.absent);
                tick(pb, i);
                i += 1;
            }
            st.done = i;
            st.report_found = true;
            tally.targeted.fetch_add(targeted, Relaxed);
            tally.entries.fetch_add(entries, Relaxed);
            Ok(())
        })?;
        let scans = self.db.stats().since(&before).total_scan_reads();
        let entries = tally.entries.load(Relaxed);
        let mut line = scan_line("prefixscan", &st, &tally, &scans, Some(entries), None);
        line += &gen.fill().mismatch_warning("prefixscan", st.found, tally.targeted.load(Relaxed));
        Ok((st, Some(line)))
    }
}

/// `scan filters : NAME found_share=.. targeted_share=.. [entries/op=..] skipped/op=..
/// passed/op=.. blocks/op=.. fpr_observed=..[ fpr_configured=..]` (not starting with the name,
/// which marks result lines; `-` where nothing was measured).
fn scan_line(
    name: &str,
    st: &ThreadStats,
    tally: &Tally,
    scans: &ReadStats,
    entries: Option<u64>,
    configured_fpr: Option<f64>,
) -> String {
    let ops = st.done.max(1) as f64;
    let per = |n: u64| n as f64 / ops;
    let mut s = format!(
        "scan filters : {name} found_share={:.4} targeted_share={:.4}",
        per(st.found),
        per(tally.targeted.load(Relaxed))
    );
    if let Some(e) = entries {
        s += &format!(" entries/op={:.4}", per(e));
    }
    let fpr = scans.observed_fpr().map_or("-".into(), |f| format!("{f:.6}"));
    s += &format!(
        " skipped/op={:.4} passed/op={:.4} blocks/op={:.4} fpr_observed={fpr}",
        per(scans.filter_useful),
        per(scans.filter_positive),
        per(scans.data_blocks_read),
    );
    if let Some(c) = configured_fpr {
        s += &format!(" fpr_configured={c:.6}");
    }
    s
}
