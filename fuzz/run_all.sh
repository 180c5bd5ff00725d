#!/bin/sh
# Runs every fuzz target for SECONDS each (default 20) and prints the executions per target.
# Needs cargo-fuzz (`cargo install cargo-fuzz`); the stable toolchain is enough with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz passes nightly-only sanitizer flags).
# Long runs: fuzz/run_all.sh 3600, or one target: RUSTC_BOOTSTRAP=1 cargo fuzz run wal
set -eu
SECONDS_EACH=${1:-20}
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
TARGETS="block table footer_properties filter_view wal manifest engine range_del_block range_filter query_chunk blob"
cargo fuzz build --release >/dev/null
# Seeds: real tables, logs, a manifest and every filter kind (written once), by the `seed`
# binary that `cargo fuzz build` just built (a plain `cargo run` would build the crate again).
host=$(rustc -vV | sed -n 's/^host: //p')
if [ ! -d corpus/table ]; then
    if [ -x "target/$host/release/seed" ]; then
        "target/$host/release/seed" >/dev/null
    else
        cargo run --release --bin seed >/dev/null
    fi
fi
for t in $TARGETS; do
    mkdir -p "corpus/$t"
    out=$(cargo fuzz run --release "$t" "corpus/$t" -- -max_total_time="$SECONDS_EACH" \
        -rss_limit_mb=2048 -print_final_stats=1 2>&1) || { echo "$out" | tail -40; echo "fuzz: $t FAILED"; exit 1; }
    execs=$(echo "$out" | sed -n 's/^stat::number_of_executed_units: *//p' | tail -1)
    echo "fuzz: $t ${execs:-?} executions in ${SECONDS_EACH} s, no crash"
done
