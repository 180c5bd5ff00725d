#!/usr/bin/env bash
# Scale ladder (issue 12, item 4): for each engine and database size, one fill (fillrandom then
# compact, in one process), then on that same database, reopened with --use_existing_db=1, the
# read benchmarks (readrandom, readmissing, seekrandom, then readwhilewriting last, since its
# writer changes the database) at each thread count; then, in a database of its own, YCSB's load
# phase (ycsbload: --num records of 100 bytes under YCSB's hashed keys, each written once) and
# the core workloads (--ycsb, in YCSB's recommended order a,b,c,f,d,e) at each thread count, each
# for --duration seconds (rocksdb-debian's db_bench has no YCSB workloads: skipped there). Every
# run is under /usr/bin/time -v.
# Writes into DIR:
#   scale.csv                         one row per engine x size x threads x benchmark (medians
#                                     over --reps), with the per engine x size figures repeated,
#                                     and readwhilewriting's read p50 / p99 / p99.9 (--histogram)
#   ycsb_latency.csv                  per YCSB workload x operation type: p50 / p99 / p99.9
#   runs.csv                          every run of every repetition (what the medians come from)
#   ops_vs_keys_<bench>_t<threads>.svg  ops/s against keys, one line per engine
#   ratio_vs_keys_<bench>.svg         siftdb's ops/s over each peer's, against keys
#   table.md                          the same as a markdown table, with command, machine, time
#   logs/                             every raw log (bench output and /usr/bin/time -v output)
#
#   scripts/scale.sh [--sizes 1M,10M,50M] [--threads 1,2,8]
#                    [--engines siftdb,fjall,rocksdb,rocksdb-debian] [--compression zstd|lz4|none]
#                    [--reps 1] [--duration 5] [--ycsb a,b,c,f,d,e|none] [--out DIR]
#
# Engines: siftdb = target/release/siftdb bench; fjall = tools/fjall-bench; rocksdb =
# tools/rocksdb-bench (skipped when that crate is absent); rocksdb-debian = db_bench from Debian's
# rocksdb-tools (skipped when not installed). An engine that cannot run is skipped with a note.
# Flags are scripts/compare.sh's: 16-byte keys, 100-byte values, --bloom_bits=10, 8 MiB write
# buffer and target file size, 32 MiB L1. Reads: --duration S where the engine honours it, and
# always a --reads per thread sized from the engine's measured rate so a run lasts about S
# seconds (a short probe of each benchmark gives the first rate). Per engine x size: peak RSS
# (of all its runs), bytes on disk per user byte (du -sB1 and du -sb / num x 116), write
# amplification from the tickers (rocksdb.flush.write.bytes + rocksdb.compact.write.bytes) and
# from the file system (the fill+compact process's "File system outputs" x 512, WAL included),
# stall seconds (rocksdb.stall.micros), and open seconds (wall time of a --benchmarks=stats
# --use_existing_db=1 process). A figure an engine does not print is left blank.
# DIR defaults to a new directory under /tmp; a non-empty DIR must hold only this script's own
# outputs, which a run replaces. The databases live in DIR/db-<engine>, which the script creates
# and removes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SIZES="1M,10M,50M"
THREADS="1,2,8"
ENGINES="siftdb,fjall,rocksdb,rocksdb-debian"
COMPRESSION="zstd"
REPS=1
DURATION=5
YCSB="a,b,c,f,d,e"
OUT="/tmp/siftdb-scale-$(date +%Y%m%d-%H%M%S)"
COMMAND="scripts/scale.sh $*"
die() { echo "scale.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sizes|--threads|--engines|--compression|--reps|--duration|--ycsb|--out)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      v="$2"; k="${1#--}"; shift 2 ;;
    --*=*) k="${1%%=*}"; k="${k#--}"; v="${1#*=}"; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
  case "$k" in
    sizes) SIZES="$v" ;; threads) THREADS="$v" ;; engines) ENGINES="$v" ;;
    compression) COMPRESSION="$v" ;; reps) REPS="$v" ;; duration) DURATION="$v" ;; out) OUT="$v" ;;
    ycsb) YCSB="$v" ;;
    *) die "unknown flag --$k (see --help)" ;;
  esac
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps=$REPS: expected a whole number >= 1"
[[ "$DURATION" =~ ^[1-9][0-9]*$ ]] || die "--duration=$DURATION: expected whole seconds >= 1"
[[ "$COMPRESSION" =~ ^(zstd|lz4|none)$ ]] || die "--compression=$COMPRESSION: expected zstd, lz4 or none"
[[ "$THREADS" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--threads=$THREADS: expected counts like 1,2,8"
[[ "$YCSB" == none || "$YCSB" =~ ^[a-f](,[a-f])*$ ]] || die "--ycsb=$YCSB: expected workloads like a,b,c,f,d,e or none"
YCSB_LIST=(); [[ "$YCSB" != none ]] && IFS=, read -r -a YCSB_LIST <<<"$YCSB"

# Sizes: 20K, 1M, 50M (decimal, as db_bench counts) or plain numbers.
NUMS=()
IFS=, read -r -a size_list <<<"$SIZES"
for s in "${size_list[@]}"; do
  [[ "$s" =~ ^([1-9][0-9]*)([KkMmGg]?)$ ]] || die "--sizes: $s is not a size like 20K, 1M or 50M"
  case "${BASH_REMATCH[2]}" in
    [Kk]) NUMS+=($(( BASH_REMATCH[1] * 1000 ))) ;;
    [Mm]) NUMS+=($(( BASH_REMATCH[1] * 1000000 ))) ;;
    [Gg]) NUMS+=($(( BASH_REMATCH[1] * 1000000000 ))) ;;
    *) NUMS+=("${BASH_REMATCH[1]}") ;;
  esac
done
IFS=, read -r -a T_LIST <<<"$THREADS"

# The script's own output names: the only entries a non-empty --out may hold (they are
# replaced); anything else means the directory is someone else's and the run is refused.
own_entry() {
  case "$1" in
    scale.csv|runs.csv|ycsb_latency.csv|table.md|logs|ops_vs_keys_*.svg|ratio_vs_keys_*.svg|db-*) return 0 ;;
  esac
  return 1
}
if [[ -e "$OUT" ]]; then
  [[ -d "$OUT" ]] || die "--out $OUT exists and is not a directory"
  for p in "$OUT"/* "$OUT"/.[!.]*; do
    [[ -e "$p" ]] || continue
    own_entry "$(basename "$p")" || die "refusing --out $OUT: it holds $(basename "$p"), which this script does not write"
  done
  if [[ -d "$OUT/logs" ]]; then
    for p in "$OUT/logs"/* "$OUT/logs"/.[!.]*; do
      [[ -e "$p" ]] || continue
      [[ "$(basename "$p")" =~ ^[a-z0-9-]+-n[0-9]+-r[0-9]+-[a-z-]+(-t[0-9]+)?\.(log|time)$ ]] ||
        die "refusing --out $OUT: logs/ holds $(basename "$p"), which this script does not write"
    done
  fi
fi
mkdir -p "$OUT/logs"
# Replace an earlier run's outputs (all checked above to be this script's own names).
rm -f -- "$OUT"/scale.csv "$OUT"/runs.csv "$OUT"/ycsb_latency.csv "$OUT"/table.md "$OUT"/ops_vs_keys_*.svg \
  "$OUT"/ratio_vs_keys_*.svg "$OUT"/logs/*.log "$OUT"/logs/*.time
for d in "$OUT"/db-*; do [[ -e "$d" ]] && rm -rf -- "$d"; done

if [[ ! -x /usr/bin/time ]]; then
  echo "scale.sh: /usr/bin/time not found; installing Debian's time package" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq time >&2
fi

# Which engines can run, and the command of each.
SIFTDB="$ROOT/target/release/siftdb"
FJALL="$ROOT/tools/fjall-bench/target/release/fjall-bench"
ROCKSDB="$ROOT/tools/rocksdb-bench/target/release/rocksdb-bench"
RUN_ENGINES=()
IFS=, read -r -a want <<<"$ENGINES"
for e in "${want[@]}"; do
  case "$e" in
    siftdb)
      echo "scale.sh: building siftdb (release)" >&2
      (cd "$ROOT" && cargo build --release --quiet -p siftdb-cli) && RUN_ENGINES+=(siftdb) ||
        echo "scale.sh: note: siftdb did not build; skipped" >&2 ;;
    fjall)
      echo "scale.sh: building tools/fjall-bench (release; minutes the first time)" >&2
      cargo build --release --quiet --manifest-path "$ROOT/tools/fjall-bench/Cargo.toml" &&
        RUN_ENGINES+=(fjall) || echo "scale.sh: note: fjall-bench did not build; skipped" >&2 ;;
    rocksdb)
      if [[ ! -f "$ROOT/tools/rocksdb-bench/Cargo.toml" ]]; then
        echo "scale.sh: note: tools/rocksdb-bench does not exist; engine rocksdb skipped" >&2
      else
        echo "scale.sh: building tools/rocksdb-bench (release)" >&2
        "$ROOT/scripts/build_rocksdb_bench.sh" &&
          RUN_ENGINES+=(rocksdb) || echo "scale.sh: note: rocksdb-bench did not build; skipped" >&2
      fi ;;
    rocksdb-debian)
      if command -v db_bench >/dev/null; then RUN_ENGINES+=(rocksdb-debian)
      else echo "scale.sh: note: db_bench not installed (apt-get install rocksdb-tools); engine rocksdb-debian skipped" >&2
      fi ;;
    *) die "unknown engine $e (siftdb, fjall, rocksdb, rocksdb-debian)" ;;
  esac
done
(( ${#RUN_ENGINES[@]} > 0 )) || die "no engine can run"

# run ENGINE NUM LOGBASE db_bench-flags...: one process under /usr/bin/time -v; its output goes
# to LOGBASE.log and time's report to LOGBASE.time.
run() {
  local e="$1" num="$2" base="$3"; shift 3
  local db="$OUT/db-$e"
  local flags=(--num="$num" --key_size=16 --value_size=100 --bloom_bits=10
               --compression_type="$COMPRESSION" --write_buffer_size=8388608
               --target_file_size_base=8388608 --max_bytes_for_level_base=33554432 "$@" --db="$db")
  local cmd
  case "$e" in
    siftdb) cmd=("$SIFTDB" bench) ;;
    fjall) cmd=("$FJALL") ;;
    rocksdb) cmd=("$ROCKSDB") ;;
    rocksdb-debian) cmd=(db_bench) ;;
  esac
  echo "${cmd[*]} ${flags[*]}" >"$base.log"
  if ! /usr/bin/time -v -o "$base.time" "${cmd[@]}" "${flags[@]}" >>"$base.log" 2>&1; then
    echo "scale.sh: $e failed; see $base.log" >&2
    return 1
  fi
}
# ops/s of benchmark $2's result line in log $1 (empty if none).
ops() { grep -E "^$2 +:" "$1" | head -1 | sed -E 's/.* ([0-9]+) ops\/sec.*/\1/' || true; }

# The list of runs the report reads (engine, keys, rep, threads, kind, log base), kept outside
# --out so an interrupted run leaves nothing there that is not the script's own.
RUNS=$(mktemp /tmp/siftdb-scale-runs.XXXXXX)
trap 'rm -f -- "$RUNS"' EXIT
# record ENGINE NUM REP THREADS BENCH LOGBASE
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RUNS"; }

READ_BENCHES=(readrandom readmissing seekrandom)
started=$(date +%s)
for num in "${NUMS[@]}"; do
  for ((r = 1; r <= REPS; r++)); do
    # Alternate the engine order each repetition so drift hits every engine alike.
    order=("${RUN_ENGINES[@]}")
    if (( r % 2 == 0 )); then
      order=(); for ((i = ${#RUN_ENGINES[@]} - 1; i >= 0; i--)); do order+=("${RUN_ENGINES[$i]}"); done
    fi
    for e in "${order[@]}"; do
      L="$OUT/logs/$e-n$num-r$r"
      db="$OUT/db-$e"
      rm -rf -- "$db"
      echo "scale.sh: $e num=$num rep $r/$REPS: fillrandom,compact" >&2
      run "$e" "$num" "$L-fill" --benchmarks=fillrandom,compact --threads=1 --statistics=1 --seed=1 ||
        { rm -rf -- "$db"; continue; }
      record "$e" "$num" "$r" 1 fill "$L-fill"
      # Allocated bytes (du -sB1), and apparent bytes (du -sb): a preallocated journal (fjall's
      # 64 MiB sparse file) counts in full only in the latter.
      echo "$(du -sB1 "$db" | cut -f1) $(du -sb "$db" | cut -f1)" >"$L-du.log"
      record "$e" "$num" "$r" 1 du "$L-du"
      run "$e" "$num" "$L-open" --benchmarks=stats --use_existing_db=1 --threads=1 &&
        record "$e" "$num" "$r" 1 open "$L-open"
      for b in "${READ_BENCHES[@]}" readwhilewriting; do
        # The first rate estimate: a short single-thread run of the benchmark (not reported;
        # readwhilewriting's is taken after the other reads, as its writer changes the db).
        run "$e" "$num" "$L-probe-$b" --benchmarks="$b" --use_existing_db=1 --threads=1 --seed=5 \
          --reads=$(( num < 20000 ? num : 20000 )) || true
        prev=$(ops "$L-probe-$b.log" "$b")
        for t in "${T_LIST[@]}"; do
          # Reads per thread for ~DURATION seconds at the rate of the previous thread count
          # (the probe's for the first).
          reads=$(( ${prev:-100000} * DURATION / t )); (( reads < 1000 )) && reads=1000
          echo "scale.sh: $e num=$num rep $r: $b threads=$t reads/thread=$reads" >&2
          # readwhilewriting's reads are timed one by one (--histogram): their tail is what a
          # writer's stalls show in.
          hist=(); [[ "$b" == readwhilewriting ]] && hist=(--histogram=1)
          if run "$e" "$num" "$L-$b-t$t" --benchmarks="$b" --use_existing_db=1 --threads="$t" \
               --duration="$DURATION" --reads="$reads" --seed=7 "${hist[@]}"; then
            record "$e" "$num" "$r" "$t" "$b" "$L-$b-t$t"
            v=$(ops "$L-$b-t$t.log" "$b")
            prev="${v:-$prev}"
          fi
        done
      done
      rm -rf -- "$db"
      # YCSB in a database of its own: the load, then each workload on what the previous left.
      if (( ${#YCSB_LIST[@]} > 0 )) && [[ "$e" != rocksdb-debian ]]; then
        echo "scale.sh: $e num=$num rep $r/$REPS: ycsbload" >&2
        if run "$e" "$num" "$L-ycsbload" --benchmarks=ycsbload --threads=1 --seed=1; then
          record "$e" "$num" "$r" 1 ycsbload "$L-ycsbload"
          for t in "${T_LIST[@]}"; do
            for w in "${YCSB_LIST[@]}"; do
              echo "scale.sh: $e num=$num rep $r: ycsb$w threads=$t" >&2
              run "$e" "$num" "$L-ycsb$w-t$t" --benchmarks="ycsb$w" --use_existing_db=1 --threads="$t" \
                --duration="$DURATION" --reads=1000000000 --seed=9 &&
                record "$e" "$num" "$r" "$t" "ycsb$w" "$L-ycsb$w-t$t"
            done
          done
        fi
        rm -rf -- "$db"
      fi
    done
  done
done
elapsed=$(( $(date +%s) - started ))

python3 - "$OUT" "$RUNS" "$elapsed" "$COMMAND" "$COMPRESSION" "$DURATION" "$REPS" <<'PY'
import csv, os, platform, re, statistics, subprocess, sys
out, runs_path, elapsed, command, compression, duration, reps = sys.argv[1:8]
USER_BYTES_PER_KEY = 16 + 100
line_re = re.compile(r'^(\S+)\s+:\s+([\d.]+) micros/op (\d+) ops/sec(?:[; ]+([\d.]+) seconds)?')
tick_re = re.compile(r'^(rocksdb\.[\w.]+) COUNT : (\d+)')
# siftdb-bench-kit's line under a result timed with --histogram (siftdb, rocksdb-bench, fjall).
lat_re = re.compile(r'^latency\s+: (\S+) p50 ([\d.]+) us, p99 ([\d.]+) us, p99\.9 ([\d.]+) us')
# YCSB workloads (the kit's ycsb module) print one latency line per operation type, named
# "<workload>.<OP>" (ycsba.READ, ycsba.UPDATE, ...).

def parse_time(path):
    t = {}
    for l in open(path, errors='replace'):
        k, _, v = l.strip().rpartition(': ')
        if k.startswith('Maximum resident set size'):
            t['rss_mb'] = int(v) / 1024
        elif k.startswith('Elapsed (wall clock)'):
            secs = 0.0
            for part in v.split(':'):
                secs = secs * 60 + float(part)
            t['wall'] = secs
        elif k == 'File system outputs':
            t['fs_out_bytes'] = int(v) * 512
    return t

def parse_log(path):
    res, ticks, lat = {}, {}, {}
    for l in open(path, errors='replace'):
        l = l.strip()
        m = line_re.match(l)
        if m:
            res[m[1]] = (float(m[2]), int(m[3]), float(m[4]) if m[4] else None)
        m = tick_re.match(l)
        if m:
            ticks[m[1]] = int(m[2])
        m = lat_re.match(l)
        if m:
            lat[m[1]] = tuple(float(x) for x in m.groups()[1:])
    return res, ticks, lat

rows, meta = [], {}   # meta[(engine, num, rep)] = per engine x size figures of that repetition
ycsb_lat = []         # per YCSB run and operation type: (engine, num, rep, threads, workload, op, p50, p99, p999)
for e, num, rep, t, kind, base in csv.reader(open(runs_path), delimiter='\t'):
    num, rep, t = int(num), int(rep), int(t)
    m = meta.setdefault((e, num, rep), {'rss': []})
    if kind == 'du':
        alloc, apparent = open(base + '.log').read().split()
        m['disk'] = int(alloc) / (num * USER_BYTES_PER_KEY)
        m['apparent'] = int(apparent) / (num * USER_BYTES_PER_KEY)
        continue
    tm = parse_time(base + '.time')
    res, ticks, lat = parse_log(base + '.log')
    if 'rss_mb' in tm:
        m['rss'].append(tm['rss_mb'])
    if kind == 'open':
        m['open'] = tm.get('wall')
        continue
    if kind == 'fill':
        user = num * USER_BYTES_PER_KEY
        if 'fs_out_bytes' in tm:
            m['fs_wamp'] = tm['fs_out_bytes'] / user
        wb = [ticks[k] for k in ('rocksdb.flush.write.bytes', 'rocksdb.compact.write.bytes') if k in ticks]
        if len(wb) == 2:
            m['wamp'] = sum(wb) / user
        if 'rocksdb.stall.micros' in ticks:
            m['stall'] = ticks['rocksdb.stall.micros'] / 1e6
    for b, (us, opsps, secs) in res.items():
        if kind == 'fill' and b == 'compact':
            # A one-shot benchmark: reported as keys compacted per second.
            s = secs if secs is not None else us / 1e6
            rows.append(dict(engine=e, keys=num, rep=rep, threads=1, benchmark=b,
                             ops_per_sec=num / s if s else None, micros_per_op=us, seconds=s,
                             run_peak_rss_mb=tm.get('rss_mb')))
        elif kind.startswith('ycsb') and b == kind:
            rows.append(dict(engine=e, keys=num, rep=rep, threads=t, benchmark=b,
                             ops_per_sec=opsps, micros_per_op=us, seconds=secs,
                             run_peak_rss_mb=tm.get('rss_mb')))
            for name, v in lat.items():
                w, _, op = name.partition('.')
                if w == b and op:
                    ycsb_lat.append((e, num, rep, t, b, op) + v)
        elif kind == 'fill' or b == kind:
            p50, p99, p999 = lat.get(b, (None, None, None))
            rows.append(dict(engine=e, keys=num, rep=rep, threads=t, benchmark=b,
                             ops_per_sec=opsps, micros_per_op=us, seconds=secs,
                             run_peak_rss_mb=tm.get('rss_mb'), p50_us=p50, p99_us=p99,
                             p999_us=p999))

def fmt(v, nd=3):
    return '' if v is None else (f'{v:.{nd}f}' if isinstance(v, float) else str(v))

cols = ['engine', 'keys', 'rep', 'threads', 'benchmark', 'ops_per_sec', 'micros_per_op', 'seconds',
        'run_peak_rss_mb', 'p50_us', 'p99_us', 'p999_us']
with open(f'{out}/runs.csv', 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(cols)
    for r in rows:
        w.writerow([fmt(r.get(c)) for c in cols])

med = lambda v: statistics.median(v) if v else None
engines = list(dict.fromkeys(r['engine'] for r in rows))
nums = sorted({r['keys'] for r in rows})
BENCH_ORDER = ['fillrandom', 'compact', 'readrandom', 'readmissing', 'seekrandom', 'readwhilewriting',
               'ycsbload', 'ycsba', 'ycsbb', 'ycsbc', 'ycsbf', 'ycsbd', 'ycsbe']
series = {}
for r in rows:
    series.setdefault((r['engine'], r['keys'], r['threads'], r['benchmark']), []).append(r)
size_meta = {}
for e in engines:
    for n in nums:
        ms = [m for (me, mn, _), m in meta.items() if me == e and mn == n]
        pick = lambda k: med([m[k] for m in ms if m.get(k) is not None])
        size_meta[(e, n)] = dict(peak_rss_mb=med([max(m['rss']) for m in ms if m['rss']]),
                                 disk_bytes_per_user_byte=pick('disk'),
                                 apparent_bytes_per_user_byte=pick('apparent'), write_amp=pick('wamp'),
                                 fs_write_amp=pick('fs_wamp'), stall_seconds=pick('stall'),
                                 open_seconds=pick('open'))
SIZE_COLS = ['peak_rss_mb', 'disk_bytes_per_user_byte', 'apparent_bytes_per_user_byte', 'write_amp',
             'fs_write_amp', 'stall_seconds', 'open_seconds']
# Read latency of the runs timed with --histogram (readwhilewriting), median over repetitions.
LAT_COLS = ['p50_us', 'p99_us', 'p999_us']
keyfun = lambda k: (nums.index(k[1]), engines.index(k[0]), BENCH_ORDER.index(k[3])
                    if k[3] in BENCH_ORDER else 99, k[2])
table = {}
with open(f'{out}/scale.csv', 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(['engine', 'keys', 'threads', 'benchmark', 'ops_per_sec', 'micros_per_op', 'seconds',
                'run_peak_rss_mb', 'reps'] + SIZE_COLS + LAT_COLS)
    for k in sorted(series, key=keyfun):
        rs = series[k]
        v = {c: med([r[c] for r in rs if r.get(c) is not None]) for c in
             ['ops_per_sec', 'micros_per_op', 'seconds', 'run_peak_rss_mb'] + LAT_COLS}
        table[k] = v
        sm = size_meta[(k[0], k[1])]
        w.writerow([k[0], k[1], k[2], k[3], fmt(v['ops_per_sec'], 0), fmt(v['micros_per_op']),
                    fmt(v['seconds']), fmt(v['run_peak_rss_mb'], 1), len(rs)] +
                   [fmt(sm[c], 3) for c in SIZE_COLS] + [fmt(v[c], 2) for c in LAT_COLS])

from xml.sax.saxutils import escape
import math

def line_chart(title, xlabel, ylabel, lines, ref=None):
    """An SVG line chart, drawn by hand (no plotting library): x (keys) on a log scale with a
    tick at each size, y linear from 0 with round ticks; `lines` is [(label, [(x, y), ...])];
    `ref` draws a dashed horizontal line (1.0 on ratio charts)."""
    W, H, L, R, T, B = 760, 420, 80, 200, 40, 55
    pw, ph = W - L - R, H - T - B
    xs = sorted({x for _, pts in lines for x, _ in pts}) or [1]
    lo, hi = math.log10(xs[0]), math.log10(xs[-1])
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) * 0.06
    lo, hi = lo - pad, hi + pad
    ymax = max([y for _, pts in lines for _, y in pts] + [ref or 0, 1e-9]) * 1.1
    raw = ymax / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(f * mag for f in (1, 2, 2.5, 5, 10) if f * mag >= raw)
    ymax = step * math.ceil(ymax / step)
    px = lambda x: L + (math.log10(x) - lo) / (hi - lo) * pw
    py = lambda y: T + ph - y / ymax * ph
    def short(v):
        for d, u in ((1e9, 'G'), (1e6, 'M'), (1e3, 'K')):
            if abs(v) >= d:
                return f'{v / d:g}{u}'
        return f'{v:g}'
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L + pw / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    k = 0
    while k * step <= ymax + 1e-9:
        y = py(k * step)
        o.append(f'<line x1="{L}" y1="{y:.1f}" x2="{L + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{short(round(k * step, 10))}</text>')
        k += 1
    for x in xs:
        o.append(f'<line x1="{px(x):.1f}" y1="{T}" x2="{px(x):.1f}" y2="{T + ph}" stroke="#eee"/>')
        o.append(f'<text x="{px(x):.1f}" y="{T + ph + 16}" text-anchor="middle">{short(x)}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 12}" text-anchor="middle">{escape(xlabel)} (log scale)</text>')
    o.append(f'<text transform="translate(18 {T + ph / 2}) rotate(-90)" text-anchor="middle">{escape(ylabel)}</text>')
    if ref is not None:
        o.append(f'<line x1="{L}" y1="{py(ref):.1f}" x2="{L + pw}" y2="{py(ref):.1f}" stroke="#888" '
                 'stroke-dasharray="6 4"/>')
    colors = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf']
    dashes = ['', '8 4', '2 3']
    for i, (label, pts) in enumerate(lines):
        c, d = colors[i % len(colors)], dashes[(i // len(colors)) % len(dashes)]
        path = ' '.join(f'{px(x):.1f},{py(y):.1f}' for x, y in sorted(pts))
        o.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"'
                 + (f' stroke-dasharray="{d}"' if d else '') + '/>')
        for x, y in pts:
            o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{c}"><title>'
                     f'{escape(label)}: {short(x)} keys, {y:,.3g}</title></circle>')
        ly = T + 10 + 20 * i
        o.append(f'<line x1="{L + pw + 15}" y1="{ly}" x2="{L + pw + 40}" y2="{ly}" stroke="{c}" '
                 'stroke-width="2"' + (f' stroke-dasharray="{d}"' if d else '') + '/>')
        o.append(f'<text x="{L + pw + 46}" y="{ly + 4}">{escape(label)}</text>')
    if not lines:
        o.append(f'<text x="{L + pw / 2}" y="{T + ph / 2}" text-anchor="middle">no data</text>')
    o.append('</svg>')
    return '\n'.join(o) + '\n'

def human(n):
    for unit, d in (('G', 10**9), ('M', 10**6), ('K', 10**3)):
        if n >= d and n % d == 0:
            return f'{n // d}{unit}'
    return str(n)

plots = []
bench_threads = sorted({(k[3], k[2]) for k in table}, key=lambda bt: (BENCH_ORDER.index(bt[0])
                       if bt[0] in BENCH_ORDER else 99, bt[1]))
for b, t in bench_threads:
    lines = []
    for e in engines:
        pts = [(n, table[(e, n, t, b)]['ops_per_sec']) for n in nums
               if (e, n, t, b) in table and table[(e, n, t, b)]['ops_per_sec']]
        if pts:
            lines.append((e, pts))
    what = 'keys compacted/s' if b == 'compact' else 'ops/s'
    name = f'ops_vs_keys_{b}_t{t}.svg'
    open(f'{out}/{name}', 'w').write(line_chart(f'{b}, {t} thread{"s" * (t > 1)}: {what} vs keys',
                                                'keys', what, lines))
    plots.append(name)
peers = [e for e in engines if e != 'siftdb']
if 'siftdb' in engines and peers:
    for b in dict.fromkeys(bt[0] for bt in bench_threads):
        lines = []
        for p in peers:
            for t in sorted({k[2] for k in table if k[3] == b}):
                pts = [(n, table[('siftdb', n, t, b)]['ops_per_sec'] / table[(p, n, t, b)]['ops_per_sec'])
                       for n in nums if ('siftdb', n, t, b) in table and (p, n, t, b) in table
                       and table[(p, n, t, b)]['ops_per_sec'] and table[('siftdb', n, t, b)]['ops_per_sec']]
                if pts:
                    lines.append((f'siftdb/{p} t{t}', pts))
        name = f'ratio_vs_keys_{b}.svg'
        open(f'{out}/{name}', 'w').write(line_chart(f'{b}: siftdb ops/s / peer ops/s vs keys', 'keys',
                                                    'ratio (>1: siftdb faster)', lines, ref=1.0))
        plots.append(name)

cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
mem = next((int(l.split()[1]) // (1 << 20) for l in open('/proc/meminfo') if l.startswith('MemTotal')), 0)
md = [f'Command: `{command}`', '',
      f'Machine: {os.cpu_count()} cores ({cpu}), {mem} GiB RAM, {platform.system()} {platform.release()}; '
      f'the ladder took {int(elapsed) // 60} min {int(elapsed) % 60} s.', '',
      f'Flags: 16-byte keys, 100-byte values, --bloom_bits=10, --compression_type={compression}'
      + (' (fjall runs LZ4: it has no zstd)' if compression == 'zstd' else '')
      + ', 8 MiB write buffer and target file size, 32 MiB L1; fill single-threaded; reads '
      f'~{duration} s each; median of {reps} repetition(s). compact is in keys compacted/s.', '',
      '| keys | engine | benchmark | ' + ' | '.join(f't{t} ops/s' for t in sorted({k[2] for k in table})) +
      ' |']
tcols = sorted({k[2] for k in table})
md.append('|' + '---|' * (3 + len(tcols)))
for n in nums:
    for e in engines:
        for b in [b for b in BENCH_ORDER if any(k[0] == e and k[1] == n and k[3] == b for k in table)]:
            cells = [fmt(table[(e, n, t, b)]['ops_per_sec'], 0) if (e, n, t, b) in table and
                     table[(e, n, t, b)]['ops_per_sec'] is not None else '' for t in tcols]
            md.append(f'| {human(n)} | {e} | {b} | ' + ' | '.join(c and f'{float(c):,.0f}' for c in cells) + ' |')
md += ['', '| keys | engine | peak RSS MiB | disk bytes / user byte | apparent bytes / user byte | '
       'write amp (tickers) | write amp (fs writes) | stall s | open s |', '|---|---|---|---|---|---|---|---|---|']
for n in nums:
    for e in engines:
        sm = size_meta[(e, n)]
        md.append(f'| {human(n)} | {e} | ' + ' | '.join(fmt(sm[c], 2) for c in SIZE_COLS) + ' |')
lat_keys = [k for k in sorted(table, key=keyfun) if table[k]['p50_us'] is not None]
if lat_keys:
    md += ['', 'Read latency of the runs timed with --histogram (readwhilewriting: reads while one '
           'writer puts), median over repetitions:', '',
           '| keys | engine | benchmark | threads | p50 us | p99 us | p99.9 us |',
           '|---|---|---|---|---|---|---|']
    for k in lat_keys:
        v = table[k]
        md.append(f'| {human(k[1])} | {k[0]} | {k[3]} | {k[2]} | ' +
                  ' | '.join(fmt(v[c], 2) for c in LAT_COLS) + ' |')
# YCSB latency per operation type, median over repetitions.
ylat = {}
for e, n, rep, t, w, op, p50, p99, p999 in ycsb_lat:
    ylat.setdefault((e, n, t, w, op), []).append((p50, p99, p999))
ykeys = sorted(ylat, key=lambda k: (nums.index(k[1]), engines.index(k[0]), BENCH_ORDER.index(k[3]), k[2], k[4]))
ymed = {k: [fmt(med([v[i] for v in ylat[k]]), 2) for i in range(3)] for k in ykeys}
with open(f'{out}/ycsb_latency.csv', 'w', newline='') as f:
    w = csv.writer(f)
    w.writerow(['engine', 'keys', 'threads', 'workload', 'op', 'p50_us', 'p99_us', 'p999_us', 'reps'])
    for k in ykeys:
        w.writerow(list(k) + ymed[k] + [len(ylat[k])])
if ykeys:
    md += ['', 'YCSB latency per operation type (each workload --duration seconds on the database '
           'ycsbload wrote), median over repetitions:', '',
           '| keys | engine | workload | threads | op | p50 us | p99 us | p99.9 us |',
           '|---|---|---|---|---|---|---|---|']
    for k in ykeys:
        md.append(f'| {human(k[1])} | {k[0]} | {k[3]} | {k[2]} | {k[4]} | ' + ' | '.join(ymed[k]) + ' |')
md += ['', 'Plots: ' + ', '.join(f'[{p}]({p})' for p in plots), '']
open(f'{out}/table.md', 'w').write('\n'.join(md))
print('\n'.join(md))
PY
echo "scale.sh: outputs in $OUT (scale.csv, runs.csv, table.md, *.svg, logs/)" >&2
