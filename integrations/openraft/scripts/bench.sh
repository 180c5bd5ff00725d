#!/usr/bin/env bash
# Throughput of the replicated KV service: a 3-node cluster on 127.0.0.1 per store, the stores
# alternating (which one goes first rotates each round), in one run. Per round and store: writes
# with 1 and 16 concurrent clients, then linearizable reads (read_index) with 16 clients.
# Prints one CSV row per measurement, then the median, min and max per store and workload.
# Each row also has the bytes the leader process wrote to storage (write_bytes of /proc/PID/io,
# read before and after the workload) per successful operation: per acknowledged write for the
# write workloads.
#
# Usage: scripts/bench.sh [--reps N] [--seconds S] [--stores siftdb,rocksdb] [--out FILE]
#                         [--bin PATH]
# --bin runs that siftdb-raft binary instead of building this checkout's (to measure another
# commit with this script).
# The rocksdb store needs the binary built with `cargo build --release --features rocksdb-peer`
# (RocksDB's C++ compiles for about 30 minutes on 2 cores; bindgen needs libclang-dev).
# Each cluster lives in a fresh mktemp directory under /var/tmp, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=3
SECONDS_PER_RUN=10
STORES="siftdb,rocksdb"
OUT=""
BIN=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --stores) STORES="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
features=""
case ",$STORES," in *,rocksdb,*) features="--features rocksdb-peer" ;; esac
if [ -z "$BIN" ]; then
  # shellcheck disable=SC2086
  cargo build --release --quiet $features
  BIN="${CARGO_TARGET_DIR:-target}/release/siftdb-raft"
fi
IFS=, read -r -a stores <<< "$STORES"
csv=$(mktemp)
echo "round,store,op,clients,ops_per_sec,leader_write_bytes_per_op" > "$csv"

pids=()
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_nodes EXIT

leader_write_bytes() { # pid
  sed -n 's/^write_bytes: //p' "/proc/$1/io"
}

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
  # The leader (nodes are started in id order, so node i is pids[i - 1]).
  local leader
  leader=$("$BIN" metrics --addr "127.0.0.1:$((base + 1))" | sed -n 's/.*"current_leader": *\([0-9]*\).*/\1/p')
  local leader_pid=${pids[$((leader - 1))]}
  for spec in "write 1" "write 16" "read 16"; do
    set -- $spec
    local before after line ops
    before=$(leader_write_bytes "$leader_pid")
    line=$("$BIN" bench --addrs "$addrs" --op "$1" --clients "$2" --seconds "$SECONDS_PER_RUN")
    after=$(leader_write_bytes "$leader_pid")
    ops=$(echo "$line" | sed 's/.* ops=\([0-9]*\) .*/\1/')
    echo "$store round $round (leader node $leader): $line write_bytes=$((after - before))" >&2
    echo "$round,$store,$1,$2,$(echo "$line" | sed 's/.*ops_per_sec=//'),$(( (after - before) / (ops > 0 ? ops : 1) ))" >> "$csv"
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
echo "store,op,clients,median,min,max,bytes_per_op_median,bytes_per_op_min,bytes_per_op_max"
tail -n +2 "$csv" | awk -F, '
  { k = $2 "," $3 "," $4; v[k] = v[k] " " $5; w[k] = w[k] " " $6 }
  function med(s, out,   a, n, i, j, t) {
    n = split(substr(s, 2), a, " ");
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return a[int((n + 1) / 2)] "," a[1] "," a[n] }
  END { for (k in v) printf "%s,%s,%s\n", k, med(v[k]), med(w[k]) }' | sort
[ -n "$OUT" ] && cp "$csv" "$OUT"
rm -f "$csv"
