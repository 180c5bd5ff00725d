#!/usr/bin/env bash
# The long bank test of serializable transactions (tests/transactions_bank.rs), run by hand:
# TRANSFERS committed transfers (default 2,000,000) over four rounds with reopens, audits all
# along. Prints the transfers committed, the conflicts retried and the audits made.
set -euo pipefail
cd "$(dirname "$0")/.."
SIFTDB_BANK_TRANSFERS="${1:-2000000}" \
  cargo test --release --test transactions_bank -- --nocapture
