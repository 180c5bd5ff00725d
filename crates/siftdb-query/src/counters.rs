//! What a scan or a join did: chunks skipped and why, rows decoded per column, rows checked by
//! the probe filter and what became of them. Filled by every scan and join; cheap (plain adds).

/// Counters of one [`crate::scan`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanCounters {
    /// Chunks in the table.
    pub chunks_total: u64,
    /// Chunks skipped because a predicate excludes their min/max range.
    pub chunks_skipped_minmax: u64,
    /// Chunks skipped because their chunk filter rejects every value of an `eq`/`in_list`.
    pub chunks_skipped_filter: u64,
    /// Chunk filters read and probed.
    pub filters_probed: u64,
    /// Pages of predicate columns skipped because the predicate excludes their min/max.
    pub pages_skipped_minmax: u64,
    /// Pages decoded, all columns together.
    pub pages_decoded: u64,
    /// Rows of the decoded pages, per schema column (predicate columns: every page with a row
    /// still selected that its min/max does not exclude; other projected columns: only pages
    /// holding a row that passed, the late materialisation).
    pub rows_decoded: Vec<u64>,
    /// Rows returned.
    pub rows_out: u64,
}

impl ScanCounters {
    /// Chunks skipped for any reason.
    pub fn chunks_skipped(&self) -> u64 {
        self.chunks_skipped_minmax + self.chunks_skipped_filter
    }
}

/// Counters of one [`crate::hash_join`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JoinCounters {
    /// Rows on the build side (after its predicates).
    pub build_rows: u64,
    /// Chunks of the probe table.
    pub chunks_total: u64,
    /// Probe chunks skipped because their key min/max excludes every build key.
    pub chunks_skipped_minmax: u64,
    /// Probe chunks skipped because their chunk filter rejects every build key (small build).
    pub chunks_skipped_filter: u64,
    /// Probe chunks read while the adaptive switch had the filter paused.
    pub chunks_unfiltered: u64,
    /// Times the adaptive switch paused the filter.
    pub filter_pauses: u64,
    /// Key-column pages skipped because their min/max excludes every build key (`ChunkSkip`,
    /// `Adaptive`).
    pub pages_skipped_minmax: u64,
    /// Pages decoded, all probe columns together.
    pub pages_decoded: u64,
    /// Rows of the decoded pages per probe-table column.
    pub rows_decoded: Vec<u64>,
    /// Probe rows checked against the probe filter.
    pub rows_checked: u64,
    /// Checked rows the filter passed.
    pub rows_passed: u64,
    /// Checked rows the filter passed whose key has no build match (false positives).
    pub false_positives: u64,
    /// Checked rows whose key has a build match (the filter must pass all of them).
    pub rows_checked_members: u64,
    /// Probe rows looked up in the hash table.
    pub rows_probed: u64,
    /// Probe rows that found at least one build row.
    pub rows_matched: u64,
    /// Joined rows produced.
    pub rows_out: u64,
    /// The probe filter used: "none", "in_list", "two_bit_bloom", "blocked_bloom".
    pub filter_kind: &'static str,
    /// The filter's memory in bytes.
    pub filter_bytes: u64,
    /// Time to build the filter (the hash table excluded), nanoseconds.
    pub filter_build_ns: u64,
    /// The filter's theoretical FPR at its load (0 for an exact IN-list).
    pub configured_fpr: f64,
}

impl JoinCounters {
    /// Probe chunks skipped for any reason.
    pub fn chunks_skipped(&self) -> u64 {
        self.chunks_skipped_minmax + self.chunks_skipped_filter
    }

    /// Observed FPR: false positives over checked rows whose key is not on the build side
    /// (`NaN` when no such row was checked).
    pub fn observed_fpr(&self) -> f64 {
        let negatives = self.rows_checked - self.rows_checked_members;
        self.false_positives as f64 / negatives as f64
    }
}
