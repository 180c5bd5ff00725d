//! The adaptive off-switch: stop checking a probe filter that rejects too little.
//!
//! A filter check costs a hash and a memory access per row; when nearly every row passes, that
//! is pure overhead. Production engines pause such filters (DuckDB at a pass ratio of 0.5,
//! ClickHouse 0.7, Impala/Kudu 0.9). Here: rows checked and passed are counted over a sample of
//! at least `warmup_rows`; if the pass rate exceeds `max_pass_rate` the filter is paused for
//! `backoff` rows, then re-sampled; each consecutive pause doubles the back-off, and a sample
//! that rejects enough resets it. Decisions are per chunk (a chunk is checked whole or not).

/// Parameters of the adaptive switch.
#[derive(Debug, Clone, Copy)]
pub struct AdaptiveConfig {
    /// Rows checked before the first decision (and per re-sample). Default 8,192.
    pub warmup_rows: u64,
    /// Pause when more than this fraction of checked rows passes. Default 0.9 (Impala/Kudu).
    pub max_pass_rate: f64,
    /// Rows to skip checking after the first pause; doubles on each consecutive pause.
    /// Default 262,144 (four default chunks).
    pub initial_backoff_rows: u64,
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        AdaptiveConfig { warmup_rows: 8192, max_pass_rate: 0.9, initial_backoff_rows: 1 << 18 }
    }
}

/// The switch's state over one probe scan.
pub(crate) struct Switch {
    cfg: AdaptiveConfig,
    sample_checked: u64,
    sample_passed: u64,
    resume_at: u64,
    backoff: u64,
    pub(crate) pauses: u64,
}

impl Switch {
    pub(crate) fn new(cfg: AdaptiveConfig) -> Switch {
        Switch {
            cfg,
            sample_checked: 0,
            sample_passed: 0,
            resume_at: 0,
            backoff: cfg.initial_backoff_rows,
            pauses: 0,
        }
    }

    /// Whether to check the filter on the chunk starting after `rows_seen` probe rows.
    pub(crate) fn active(&self, rows_seen: u64) -> bool {
        rows_seen >= self.resume_at
    }

    /// Records a checked chunk; `rows_seen` counts the probe rows up to its end.
    pub(crate) fn observe(&mut self, rows_seen: u64, checked: u64, passed: u64) {
        self.sample_checked += checked;
        self.sample_passed += passed;
        if self.sample_checked < self.cfg.warmup_rows {
            return;
        }
        let rate = self.sample_passed as f64 / self.sample_checked as f64;
        if rate > self.cfg.max_pass_rate {
            self.resume_at = rows_seen + self.backoff;
            self.backoff = self.backoff.saturating_mul(2);
            self.pauses += 1;
        } else {
            self.backoff = self.cfg.initial_backoff_rows;
        }
        self.sample_checked = 0;
        self.sample_passed = 0;
    }
}
