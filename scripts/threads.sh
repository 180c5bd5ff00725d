#!/usr/bin/env bash
# Thread scaling of siftdb's read path, measured the way issue 12 states its target: on one
# existing database, `--threads=1`, `--threads=2` (one process, two readers sharing a Db), and
# two independent single-thread processes at once, each on its own copy of the database (what
# the machine allows without any sharing). Rounds alternate the three modes; each run lasts
# --duration seconds (db_bench's flag) so warm-up does not decide. Prints ops/s per run, then the
# medians and the ratios: 2 threads / 1 thread and 2 threads / two processes.
#
#   scripts/threads.sh --db DIR [--siftdb BIN] [--reps 3] [--duration 5]
#                      [--benchmarks readrandom,readmissing] [--threads8] [db_bench flags...]
#
# DIR must be a database written by `siftdb bench` with the same flags (e.g. fillrandom then
# compact; the default flags below are scripts/compare.sh's). The copies live in a temporary
# directory this script creates and removes; DIR itself is only read.
set -euo pipefail
cd "$(dirname "$0")/.."

DB=""
SIFTDB=target/release/siftdb
REPS=3
DURATION=5
BENCHMARKS=readrandom,readmissing
WITH8=0
FLAGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --db) DB="$2"; shift 2 ;;
    --siftdb) SIFTDB="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    --benchmarks) BENCHMARKS="$2"; shift 2 ;;
    --threads8) WITH8=1; shift ;;
    *) FLAGS+=("$1"); shift ;;
  esac
done
[[ -n "$DB" && -f "$DB/CURRENT" ]] || { echo "threads.sh: --db must name an existing siftdb database" >&2; exit 2; }
if [[ ${#FLAGS[@]} -eq 0 ]]; then
  FLAGS=(--num=1000000 --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=zstd
         --write_buffer_size=8388608 --target_file_size_base=8388608
         --max_bytes_for_level_base=33554432)
fi
[[ -x "$SIFTDB" ]] || cargo build --release --quiet -p siftdb-cli

work=$(mktemp -d /tmp/siftdb-threads.XXXXXX)
trap 'rm -rf -- "$work"' EXIT
for c in a b; do
  mkdir "$work/$c"
  # Copy the database's own files only (LOCK is recreated by open).
  find "$DB" -maxdepth 1 -type f \( -name '*.sst' -o -name '*.log' -o -name 'MANIFEST-*' -o -name CURRENT \) \
    -exec cp {} "$work/$c/" \;
done

# ops/s of one benchmark line in a bench log.
ops() { grep -E "^$2 +:" "$1" | head -1 | sed -E 's/.* ([0-9]+) ops\/sec.*/\1/'; }

run() { # run BENCH THREADS DIR LOG; --seed=7 so reads do not replay the fill's key stream
  "$SIFTDB" bench --use_existing_db=1 --benchmarks="$1" --threads="$2" --duration="$DURATION" \
    --seed=7 "${FLAGS[@]}" --db="$3" >"$4" 2>&1
}

results="$work/results.csv"
echo "bench,mode,rep,ops" >"$results"
IFS=, read -r -a benches <<<"$BENCHMARKS"
for rep in $(seq 1 "$REPS"); do
  for b in "${benches[@]}"; do
    modes=(t1 t2 p2)
    (( WITH8 )) && modes+=(t8)
    # Rotate the order every rep so no mode always runs first.
    for ((k = 0; k < ${#modes[@]}; k++)); do
      m=${modes[$(( (k + rep) % ${#modes[@]} ))]}
      case "$m" in
        t1) run "$b" 1 "$work/a" "$work/log"; v=$(ops "$work/log" "$b") ;;
        t2) run "$b" 2 "$work/a" "$work/log"; v=$(ops "$work/log" "$b") ;;
        t8) run "$b" 8 "$work/a" "$work/log"; v=$(ops "$work/log" "$b") ;;
        p2)
          run "$b" 1 "$work/a" "$work/log1" & p1=$!
          run "$b" 1 "$work/b" "$work/log2" & p2=$!
          wait "$p1" "$p2"
          v=$(( $(ops "$work/log1" "$b") + $(ops "$work/log2" "$b") )) ;;
      esac
      echo "$b,$m,$rep,$v" >>"$results"
      echo "rep $rep $b $m: $v ops/s"
    done
  done
done

python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    by.setdefault((r["bench"], r["mode"]), []).append(int(r["ops"]))
print()
print("| benchmark | 1 thread | 2 threads | 2 processes | 8 threads | 2t/1t | 2t/2p | 8t/2t |")
print("|---|---|---|---|---|---|---|---|")
for b in dict.fromkeys(r["bench"] for r in rows):
    med = {m: statistics.median(by[(b, m)]) for m in ("t1", "t2", "p2", "t8") if (b, m) in by}
    spread = {m: f"{min(by[(b, m)]):,}-{max(by[(b, m)]):,}" for m in med}
    cell = lambda m: f"{med[m]:,.0f} ({spread[m]})" if m in med else "-"
    ratio = lambda a, c: f"{med[a] / med[c]:.2f}" if a in med and c in med else "-"
    print(f"| {b} | {cell('t1')} | {cell('t2')} | {cell('p2')} | {cell('t8')} | "
          f"{ratio('t2', 't1')} | {ratio('t2', 'p2')} | {ratio('t8', 't2')} |")
PY
