#!/usr/bin/env bash
# Catch-up of a new node by snapshot (issue 44): a 3-node cluster on 127.0.0.1 is loaded with
# --state-mib MiB of values, a snapshot is built on the leader and its log purged up to it, then a
# 4th node with an empty directory is added as a learner. Measured:
# - catchup_s: from add-learner until the learner's applied index equals the leader's;
# - transfer_s: from add-learner until the learner's incoming file or tables directory holds
#   every byte (a tables directory's header is written last, after its tables' syncs);
# - snapshot_bytes and install MB/s (snapshot bytes / catchup_s);
# - the learner's peak RSS growth: VmHWM from /proc/PID/status at the end minus VmRSS just before
#   add-learner (the high-water mark is reset then through /proc/PID/clear_refs);
# - the disk's sequential write rate in the same directory afterwards: dd of 1 GiB, bs=1M,
#   oflag=direct.
# Prints `key=value` lines, the last one a summary.
#
# Usage: scripts/catchup.sh [--state-mib N (64)] [--value-size BYTES (65536)] [--bin PATH]
#                           [--perf FILE (perf record -g of the learner during the catch-up)]
#                           [--keep (leave the directory, node logs included, and print its path)]
# Everything lives in a fresh mktemp directory under /var/tmp, removed afterwards unless --keep
# (with --perf, FILE is written outside it).
set -euo pipefail
cd "$(dirname "$0")/.."
STATE_MIB=64
VALUE_SIZE=65536
BIN=""
PERF_OUT=""
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --state-mib) STATE_MIB="$2"; shift 2 ;;
    --value-size) VALUE_SIZE="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    --perf) PERF_OUT="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "catchup.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$BIN" ]; then
  cargo build --release --quiet --locked
  BIN="${CARGO_TARGET_DIR:-target}/release/siftdb-raft"
fi

root=$(mktemp -d /var/tmp/siftdb-raft-catchup.XXXXXX)
pids=()
perf_pid=""
watcher=""
cleanup() {
  [ -n "$perf_pid" ] && kill -INT "$perf_pid" 2>/dev/null || true
  # The transfer watcher loops until the learner's file is complete: a failed run never gets
  # there, and the watcher would hold the caller's `flock` forever.
  [ -n "$watcher" ] && kill "$watcher" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$KEEP" = 1 ]; then
    echo "kept=$root" >&2
  else
    rm -rf "$root"
  fi
}
trap cleanup EXIT

base=$((26000 + (RANDOM % 1000) * 4))
addr() { echo "127.0.0.1:$((base + $1))"; }
start_node() { # id
  "$BIN" node --id "$1" --addr "$(addr "$1")" --dir "$root/node-$1" --snapshot-every 100000000 \
    2>>"$root/node-$1.log" &
  pids+=($!)
}
metric() { # id jq-expression
  "$BIN" metrics --addr "$(addr "$1")" | jq -r "$2"
}
now() { date +%s.%N; }
# The polls during the catch-up start no process (each `metrics | jq` poll took a fifth of the
# 2-core machine the catch-up needs): the applied index is read over bash's /dev/tcp, and
# waits are `read -t` on a descriptor that never has input.
exec {idle_fd}<> <(:)
pause() { read -r -t "$1" -u "$idle_fd" _ || true; }
applied_index() { # host:port; 0 if nothing is applied or the node does not answer
  local body="" line
  if exec {fd}<>"/dev/tcp/${1%:*}/${1##*:}"; then
    printf 'GET /cluster/metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&"$fd"
    while IFS= read -r -u "$fd" line || [ -n "$line" ]; do body+=$line; done
    exec {fd}>&-
  fi
  if [[ $body =~ \"last_applied\":\{\"leader_id\":\{[^}]*\},\"index\":([0-9]+) ]]; then
    echo "${BASH_REMATCH[1]}"
  else
    echo 0
  fi
}
# The bytes of a node's current snapshot as it is sent: the files of its tables directory
# (header and tables), or the single `snapshot` file of earlier versions.
snapshot_size() { # node directory
  local t
  t=$(ls -d "$1"/snapshot.tables.* 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$t" ]; then
    find "$t" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}'
  else
    stat -c %s "$1/snapshot"
  fi
}

addrs=""; members=""
for id in 1 2 3; do
  start_node "$id"
  addrs="${addrs:+$addrs,}$(addr "$id")"; members="${members:+$members,}$id=$(addr "$id")"
done
for _ in $(seq 100); do "$BIN" metrics --addr "$(addr 3)" >/dev/null 2>&1 && break; sleep 0.1; done
for _ in $(seq 100); do "$BIN" init --addr "$(addr 1)" --members "$members" 2>/dev/null && break; sleep 0.1; done

echo "dir=$root" >&2
"$BIN" load --addrs "$addrs" --bytes $((STATE_MIB << 20)) --value-size "$VALUE_SIZE" --clients 8 >&2
# The snapshot and the purge must be the leader's when the learner is added: a leadership
# change during the build leaves a leader whose log still holds every entry, and the learner
# then catches up by log. So the build is repeated on the new leader until none happened.
leader=""
for attempt in 1 2 3 4 5; do
  leader=$(metric 1 .current_leader)
  t=$(now)
  "$BIN" snapshot --addr "$(addr "$leader")" >&2
  echo "leader=$leader snapshot_build_s=$(echo "$(now) - $t" | bc)" >&2
  now_leader=$(metric 1 .current_leader)
  [ "$now_leader" = "$leader" ] && break
  echo "leadership moved from $leader to $now_leader during the build (attempt $attempt)" >&2
  [ "$attempt" = 5 ] && { echo "catchup.sh: no stable leader over 5 snapshot builds" >&2; exit 1; }
done
snapshot_bytes=$(snapshot_size "$root/node-$leader")
leader_applied=$(metric "$leader" .last_applied.index)

start_node 4
learner_pid=${pids[3]}
for _ in $(seq 100); do "$BIN" metrics --addr "$(addr 4)" >/dev/null 2>&1 && break; sleep 0.1; done
rss_before_kib=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$learner_pid/status")
echo 5 > "/proc/$learner_pid/clear_refs"   # resets VmHWM to the current RSS
if [ -n "$PERF_OUT" ]; then
  perf record -g -o "$PERF_OUT" -p "$learner_pid" 2>/dev/null &
  perf_pid=$!
fi

# Watches what the learner receives into (an incoming file, or an incoming tables directory):
# the end of the transfer is when its files hold every byte (or when they became the snapshot).
(
  while :; do
    got=0
    for s in $(stat -c '%A:%s' "$root"/node-4/snapshot* "$root"/node-4/snapshot*/* 2>/dev/null); do
      [[ $s == -* ]] && got=$((got + ${s##*:}))
    done
    if [ "$got" -ge "$snapshot_bytes" ]; then
      now > "$root/transfer_done"; exit 0
    fi
    pause 0.05
  done
) &
watcher=$!

t0=$(now)
"$BIN" add-learner --addrs "$addrs" 4 "$(addr 4)" >&2
leader_at_add=$(metric 1 .current_leader)
[ "$leader_at_add" = "$leader" ] || echo "warning: leader $leader_at_add at add-learner, snapshot taken on $leader" >&2
while [ "$(applied_index "$(addr 4)")" -lt "$leader_applied" ]; do pause 0.02; done
t1=$(now)
# The same through the client and jq, after the clock stopped: the cheap poll read it right.
learner_applied=$(metric 4 '.last_applied.index // 0')
[ "$learner_applied" -ge "$leader_applied" ] || {
  echo "catchup.sh: the poll saw index $leader_applied, the client reads $learner_applied" >&2; exit 1; }
wait "$watcher" || true
watcher=""
hwm_kib=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$learner_pid/status")
if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; perf_pid=""; fi
installed=$(snapshot_size "$root/node-4")
[ "$installed" -eq "$snapshot_bytes" ] || { echo "learner snapshot $installed bytes, leader's $snapshot_bytes" >&2; exit 1; }
catchup_s=$(echo "$t1 - $t0" | bc)
transfer_s=$(echo "$(cat "$root/transfer_done") - $t0" | bc)

dd_line=$(dd if=/dev/zero of="$root/dd.bin" bs=1M count=1024 oflag=direct 2>&1 | tail -1)
rm -f "$root/dd.bin"
dd_mb_s=$(echo "$dd_line" | awk -F', ' '{print $NF}')

mb=$(echo "scale=1; $snapshot_bytes / 1000000" | bc)
rate=$(echo "scale=1; $snapshot_bytes / 1000000 / $catchup_s" | bc)
growth_mib=$(echo "scale=1; ($hwm_kib - $rss_before_kib) / 1024" | bc)
echo "state_mib=$STATE_MIB value_size=$VALUE_SIZE leader_applied=$leader_applied"
echo "snapshot_bytes=$snapshot_bytes catchup_s=$catchup_s transfer_s=$transfer_s install_mb_s=$rate"
echo "learner_rss_before_mib=$((rss_before_kib / 1024)) learner_vmhwm_mib=$((hwm_kib / 1024)) rss_growth_mib=$growth_mib"
echo "disk_dd_direct: $dd_line"
echo "summary: ${mb} MB caught up in ${catchup_s} s (${rate} MB/s, transfer ${transfer_s} s), peak RSS growth ${growth_mib} MiB; disk sequential write ${dd_mb_s}"
