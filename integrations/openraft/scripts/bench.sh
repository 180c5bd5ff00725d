#!/usr/bin/env bash
# Throughput of the replicated KV service: a 3-node cluster on 127.0.0.1 per store, the stores
# alternating (which one goes first rotates each round), in one run. Per round and store: writes
# with 1 and 16 concurrent clients, then linearizable reads (read_index) with 16 clients.
# Prints one CSV row per measurement, then the median, min and max per store and workload.
#
# Usage: scripts/bench.sh [--reps N] [--seconds S] [--stores siftdb,rocksdb] [--out FILE]
# The rocksdb store needs the binary built with `cargo build --release --features rocksdb-peer`
# (RocksDB's C++ compiles for about 30 minutes on 2 cores; bindgen needs libclang-dev).
# Each cluster lives in a fresh mktemp directory under /var/tmp, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=3
SECONDS_PER_RUN=10
STORES="siftdb,rocksdb"
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --stores) STORES="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
features=""
case ",$STORES," in *,rocksdb,*) features="--features rocksdb-peer" ;; esac
# shellcheck disable=SC2086
cargo build --release --quiet $features
BIN=target/release/siftdb-raft
IFS=, read -r -a stores <<< "$STORES"
csv=$(mktemp)
echo "round,store,op,clients,ops_per_sec" > "$csv"

pids=()
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_nodes EXIT

run_store() { # round store
  local round=$1 store=$2 root addrs members base
  root=$(mktemp -d /var/tmp/siftdb-raft-bench.XXXXXX)
  base=$((24000 + (RANDOM % 2000) * 3))
  addrs=""; members=""
  for id in 1 2 3; do
    local addr="127.0.0.1:$((base + id))"
    "$BIN" node --id "$id" --addr "$addr" --dir "$root/node-$id" --store "$store" 2>>"$root.log" &
    pids+=($!)
    addrs="${addrs:+$addrs,}$addr"; members="${members:+$members,}$id=$addr"
  done
  for _ in $(seq 100); do "$BIN" metrics --addr "127.0.0.1:$((base + 3))" >/dev/null 2>&1 && break; sleep 0.1; done
  for _ in $(seq 100); do "$BIN" init --addr "127.0.0.1:$((base + 1))" --members "$members" 2>/dev/null && break; sleep 0.1; done
  "$BIN" put --addrs "$addrs" warmup 1 >/dev/null
  for spec in "write 1" "write 16" "read 16"; do
    set -- $spec
    line=$("$BIN" bench --addrs "$addrs" --op "$1" --clients "$2" --seconds "$SECONDS_PER_RUN")
    echo "$store round $round: $line" >&2
    echo "$round,$store,$1,$2,$(echo "$line" | sed 's/.*ops_per_sec=//')" >> "$csv"
  done
  stop_nodes
  rm -rf "$root" "$root.log"
}

for round in $(seq "$REPS"); do
  n=${#stores[@]}
  for i in $(seq 0 $((n - 1))); do
    run_store "$round" "${stores[$(( (i + round - 1) % n ))]}"
  done
done

cat "$csv"
echo
echo "store,op,clients,median,min,max"
tail -n +2 "$csv" | sort -t, -k2,2 -k3,3 -k4,4n -k5,5n | awk -F, '
  { k = $2 "," $3 "," $4; v[k] = v[k] " " $5; c[k]++ }
  END { for (k in v) { n = split(substr(v[k], 2), a, " ");
        printf "%s,%s,%s,%s\n", k, a[int((n + 1) / 2)], a[1], a[n] } }' | sort
[ -n "$OUT" ] && cp "$csv" "$OUT"
rm -f "$csv"
