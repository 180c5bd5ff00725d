#!/usr/bin/env bash
# Direct reads, measured against the disk's own limit (issue 13): one database per engine, built
# once (fillrandom then compact, buffered I/O), then, alternating engines, readrandom, readmissing
# and multireadrandom with --use_direct_reads=1 and a small block cache, each for --duration
# seconds, --reps times. Before the reads, `siftdb iops` measures the disk: 4 KiB O_DIRECT
# random reads per second at queue depth 1 and 32 on the largest SST of siftdb's database.
# Prints per engine and benchmark the median us/op (per key for multireadrandom), the spread,
# the device reads per second as a fraction of the disk's QD1 rate (QD32 for multireadrandom),
# and device reads per lookup (siftdb: its file-read counters; RocksDB: rocksdb.{non.,}last.level.read.count over the
# lookups). Also written to DIR/table.md; raw logs in DIR/logs.
#
#   scripts/direct.sh [--num 10000000] [--engines siftdb,rocksdb] [--reps 3] [--duration 10]
#                     [--cache_size 8388608] [--batch_size 32] [--compression lz4] [--out DIR]
#                     [--block_align 1]
#
# siftdb's database is written with --block_align=1 (each data block within one 4 KiB page, so
# a block-cache miss reads one page; design.md "Aligned data blocks") unless --block_align 0.
# RocksDB allows block_align only without compression, so its database is written without.
# Engines: siftdb (target/release/siftdb), rocksdb (tools/rocksdb-bench, RocksDB 11 release;
# its multireadrandom runs with --async_io=1). DIR must be new or empty; the databases live in
# DIR/db-<engine>, which the script creates and removes at the end.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NUM=10000000; ENGINES="siftdb,rocksdb"; REPS=3; DURATION=10; CACHE=8388608; BATCH=32
COMPRESSION=lz4; ALIGN=1; OUT="/var/tmp/siftdb-direct-$(date +%Y%m%d-%H%M%S)"
die() { echo "direct.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --num) NUM="$2" ;; --engines) ENGINES="$2" ;; --reps) REPS="$2" ;;
    --duration) DURATION="$2" ;; --cache_size) CACHE="$2" ;; --batch_size) BATCH="$2" ;;
    --compression) COMPRESSION="$2" ;; --out) OUT="$2" ;; --block_align) ALIGN="$2" ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
  shift 2
done
[[ $ALIGN == 0 || $ALIGN == 1 ]] || die "--block_align must be 0 or 1, not $ALIGN"
[[ -e "$OUT" && -n "$(ls -A "$OUT" 2>/dev/null)" ]] && die "--out $OUT is not empty (give a new directory)"
mkdir -p "$OUT/logs"
SIFTDB="$ROOT/target/release/siftdb"
ROCKSDB="$ROOT/tools/rocksdb-bench/target/release/rocksdb-bench"
(cd "$ROOT" && cargo build --release --quiet -p siftdb-cli)
if [[ ",$ENGINES," == *",rocksdb,"* ]]; then
  "$ROOT/scripts/build_rocksdb_bench.sh" || die "tools/rocksdb-bench did not build"
fi
COMMON=(--key_size=16 --value_size=100 --bloom_bits=10 --compression_type="$COMPRESSION"
        --write_buffer_size=8388608 --target_file_size_base=8388608
        --max_bytes_for_level_base=33554432 --statistics=1 --num="$NUM")
bin() { case "$1" in siftdb) echo "$SIFTDB bench" ;; rocksdb) echo "$ROCKSDB" ;; *) die "unknown engine $1" ;; esac; }

IFS=',' read -r -a ENG <<<"$ENGINES"
for e in "${ENG[@]}"; do
  echo "direct.sh: building the $NUM-key database of $e" >&2
  fill=(); [[ $e == siftdb ]] && fill=(--block_align="$ALIGN")
  $(bin "$e") "${COMMON[@]}" --benchmarks=fillrandom,compact --seed=1 "${fill[@]}" \
    --db="$OUT/db-$e" >"$OUT/logs/fill-$e.log" 2>&1
done
echo "direct.sh: measuring the disk (siftdb iops on a 2 GiB file)" >&2
dd if=/dev/urandom of="$OUT/iops.dat" bs=1M count=2048 status=none && sync
"$SIFTDB" iops "$OUT/iops.dat" --seconds 5 >"$OUT/logs/iops.log" 2>&1 || true
rm -- "$OUT/iops.dat"

for ((r = 1; r <= REPS; r++)); do
  order=("${ENG[@]}")
  (( r % 2 == 0 )) && order=($(printf '%s\n' "${ENG[@]}" | tac))
  for b in readrandom readmissing multireadrandom; do
    for e in "${order[@]}"; do
      extra=(); [[ $b == multireadrandom ]] && extra=(--batch_size="$BATCH")
      [[ $b == multireadrandom && $e == rocksdb ]] && extra+=(--async_io=1)
      $(bin "$e") "${COMMON[@]}" --benchmarks="$b" --use_existing_db=1 --use_direct_reads=1 \
        --cache_size="$CACHE" --duration="$DURATION" --reads=100000000 --seed=$((7 + r)) \
        "${extra[@]}" --db="$OUT/db-$e" >"$OUT/logs/$b-$e-$r.log" 2>&1 ||
        { echo "direct.sh: $e $b failed; see $OUT/logs/$b-$e-$r.log" >&2; exit 1; }
    done
  done
done

python3 - "$OUT" "$ENGINES" "$REPS" "$NUM" "$CACHE" "$BATCH" <<'EOF' | tee "$OUT/table.md"
import re, statistics, sys, os
out, engines, reps, num, cache, batch = sys.argv[1], sys.argv[2].split(','), int(sys.argv[3]), *sys.argv[4:]
iops = {}
try:
    for line in open(f'{out}/logs/iops.log'):
        m = re.match(r'\s*(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s*$', line)
        if m: iops[int(m.group(1))] = float(m.group(2))
except OSError: pass
def parse(path, bench):
    txt = open(path).read()
    m = re.search(rf'^{bench}\s*:\s*([\d.]+) micros/op', txt, re.M)
    us = float(m.group(1)) if m else None
    t = dict((k, int(v)) for k, v in re.findall(r'^(rocksdb\.[\w.]+) COUNT : (\d+)', txt, re.M))
    reads = t.get('rocksdb.last.level.read.count', 0) + t.get('rocksdb.non.last.level.read.count', 0)
    keys = t.get('rocksdb.number.keys.read') or t.get('rocksdb.number.multiget.keys.read') or 0
    return us, (reads / keys if keys else None)
print(f'Direct reads, {num} keys, --cache_size={cache}, multireadrandom --batch_size={batch}; '
      f'disk: QD1 {iops.get(1, 0):,.0f} reads/s, QD32 {iops.get(32, 0):,.0f} reads/s; medians of {reps}\n')
print('| engine | benchmark | us/op (median) | spread | ops/s | of disk limit | device reads/lookup |')
print('|---|---|---|---|---|---|---|')
for b in ['readrandom', 'readmissing', 'multireadrandom']:
    for e in engines:
        runs = [parse(f'{out}/logs/{b}-{e}-{r}.log', b) for r in range(1, reps + 1)
                if os.path.exists(f'{out}/logs/{b}-{e}-{r}.log')]
        us = [u for u, _ in runs if u]
        if not us: continue
        med = statistics.median(us); rate = 1e6 / med
        qd = 32 if b == 'multireadrandom' else 1
        dr = [d for _, d in runs if d is not None]
        # The disk's share: device reads per second (ops/s x device reads per lookup; a
        # readrandom key may be absent) over the disk's rate at that queue depth.
        frac = (f'{rate * statistics.median(dr) / iops[qd] * 100:.0f}% of QD{qd}'
                if iops.get(qd) and dr and b != 'readmissing' else '-')
        print(f'| {e} | {b} | {med:.2f} | {min(us):.2f}-{max(us):.2f} | {rate:,.0f} | {frac} | '
              f'{statistics.median(dr):.4f} |' if dr else f'| {e} | {b} | {med:.2f} | {min(us):.2f}-{max(us):.2f} | {rate:,.0f} | {frac} | - |')
EOF
for e in "${ENG[@]}"; do
  [[ -d "$OUT/db-$e" ]] && rm -r -- "$OUT/db-$e"
done
