#!/usr/bin/env bash
# Side-by-side benchmark: RocksDB, `siftdb bench` and fjall (tools/fjall-bench) run the same
# db_bench workload with identical flags, alternating engines, N repetitions; prints the median
# ops/s per workload, the ratios siftdb/<each other engine>, filter bits per key and observed FPR
# (RocksDB: its table properties + bloom tickers; siftdb: its stats).
#
# Engines: rocksdb        = tools/rocksdb-bench, RocksDB built from source in release mode (NDEBUG,
#                           -march=native) through the `rocksdb` crate; the first build compiles
#                           RocksDB's C++ (many minutes) and needs libclang-dev (apt-get).
#          rocksdb-debian = Debian's db_bench 7.8.3 (package rocksdb-tools), an assertion-enabled
#                           build kept for flag compatibility (older ratios were against it).
#          siftdb, fjall  = `siftdb bench`, tools/fjall-bench.
# Default engines: rocksdb,siftdb,fjall (rocksdb dropped, with a warning, if it fails to build).
#
# Usage: scripts/compare.sh [--reps N] [--engines rocksdb,siftdb,fjall,rocksdb-debian] [--out DIR]
#                           [--siftdb-flags "--flush_filter=blocked ..."] [db_bench flags...]
# Without db_bench flags it runs the issue's parameters:
#   --benchmarks=fillrandom,compact,readrandom,readmissing,stats --num=1000000 --key_size=16
#   --value_size=100 --bloom_bits=10 --compression_type=zstd --threads=1
#   --write_buffer_size=8388608 --target_file_size_base=8388608
#   --max_bytes_for_level_base=33554432 --statistics=1 --seed=1
# Every db_bench flag goes to all three engines: --compression_type=lz4 compares like for like
# (db_bench's default snappy: RocksDB runs snappy, siftdb and fjall LZ4; zstd: fjall runs LZ4).
# siftdb's per-level compression is a siftdb flag: --siftdb-flags "--compression_per_level=none,lz4,zstd"
# (db_bench's --min_level_to_compress=N reaches RocksDB and siftdb; fjall-bench ignores it).
# SIFTDB_BIN / ROCKSDB_BIN (environment) run those binaries instead of building this tree's (e.g. a
# worktree's own target dir, or a baseline build kept aside).
# Raw logs go to DIR (default /tmp/siftdb-compare-<time>); the table also goes to DIR/table.md.
# --report-only --out DIR [same flags] prints the table again from DIR's logs without running.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPS=3
ENGINES="rocksdb,siftdb,fjall"
ENGINES_GIVEN=0
OUT="/tmp/siftdb-compare-$(date +%Y%m%d-%H%M%S)"
SIFTDB_FLAGS=""
REPORT_ONLY=0
FLAGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --reps=*) REPS="${1#*=}"; shift ;;
    --engines) ENGINES="$2"; ENGINES_GIVEN=1; shift 2 ;;
    --engines=*) ENGINES="${1#*=}"; ENGINES_GIVEN=1; shift ;;
    --out) OUT="$2"; shift 2 ;;
    --out=*) OUT="${1#*=}"; shift ;;
    --siftdb-flags) SIFTDB_FLAGS="$2"; shift 2 ;;
    --siftdb-flags=*) SIFTDB_FLAGS="${1#*=}"; shift ;;
    --report-only) REPORT_ONLY=1; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) FLAGS+=("$1"); shift ;;
  esac
done
if [[ ${#FLAGS[@]} -eq 0 ]]; then
  FLAGS=(--benchmarks=fillrandom,compact,readrandom,readmissing,stats --num=1000000
         --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=zstd --threads=1
         --write_buffer_size=8388608 --target_file_size_base=8388608
         --max_bytes_for_level_base=33554432 --statistics=1 --seed=1)
fi
# The per-engine scripts need --statistics for the FPR columns.
if ! printf '%s\n' "${FLAGS[@]}" | grep -q '^--statistics'; then FLAGS+=(--statistics=1); fi
# Every path the script deletes ($OUT/db-*) is one it created: a run needs a new or empty $OUT
# (--report-only only reads it).
if (( REPORT_ONLY == 0 )) && [[ -e "$OUT" && -n "$(ls -A "$OUT" 2>/dev/null)" ]]; then
  echo "compare.sh: refusing to use --out $OUT: it is not empty (give a new directory)" >&2
  exit 2
fi
mkdir -p "$OUT"
if (( REPORT_ONLY == 0 )); then

has() { [[ ",$ENGINES," == *",$1,"* ]]; }
for e in ${ENGINES//,/ }; do
  case "$e" in
    rocksdb|rocksdb-debian|siftdb|fjall) ;;
    *) echo "compare.sh: unknown engine $e (rocksdb, rocksdb-debian, siftdb, fjall)" >&2; exit 2 ;;
  esac
done
SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"

if has rocksdb-debian && ! command -v db_bench >/dev/null; then
  echo "compare.sh: db_bench not found; installing the Debian package rocksdb-tools (apt-get)" >&2
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq rocksdb-tools >&2
fi
ROCKSDB="${ROCKSDB_BIN:-$ROOT/tools/rocksdb-bench/target/release/rocksdb-bench}"
if has rocksdb && [[ -z "${ROCKSDB_BIN:-}" ]]; then
  echo "compare.sh: building tools/rocksdb-bench (release; the first build compiles RocksDB's C++)" >&2
  if ! "$ROOT/scripts/build_rocksdb_bench.sh"; then
    if (( ENGINES_GIVEN )); then
      echo "compare.sh: tools/rocksdb-bench failed to build" >&2; exit 1
    fi
    echo "compare.sh: WARNING: tools/rocksdb-bench failed to build; running without rocksdb" >&2
    ENGINES=$(echo ",$ENGINES," | sed 's/,rocksdb,/,/; s/^,//; s/,$//')
  fi
fi
SIFTDB="${SIFTDB_BIN:-$ROOT/target/release/siftdb}"
if has siftdb && [[ -z "${SIFTDB_BIN:-}" ]]; then
  echo "compare.sh: building siftdb (release)" >&2
  (cd "$ROOT" && cargo build --release --quiet -p siftdb-cli)
fi
FJALL="$ROOT/tools/fjall-bench/target/release/fjall-bench"
if has fjall; then
  echo "compare.sh: building tools/fjall-bench (release)" >&2
  cargo build --release --quiet --manifest-path "$ROOT/tools/fjall-bench/Cargo.toml"
fi

run_engine() { # engine rep
  local e="$1" r="$2" dir="$OUT/db-$1" log="$OUT/$1-$2.log" rc=0
  rm -rf "$dir"
  case "$e" in
    rocksdb)
      # Prints its live tables' filter bytes and entries itself (with --statistics).
      "$ROCKSDB" "${FLAGS[@]}" --db="$dir" >"$log" 2>&1 || rc=$? ;;
    rocksdb-debian)
      db_bench "${FLAGS[@]}" --db="$dir" >"$log" 2>&1 || rc=$?
      sst_dump --file="$dir" --show_properties >"$OUT/$e-$r.sst" 2>&1 || true ;;
    siftdb)
      # shellcheck disable=SC2086
      "$SIFTDB" bench "${FLAGS[@]}" $SIFTDB_FLAGS --db="$dir" >"$log" 2>&1 || rc=$? ;;
    fjall)
      "$FJALL" "${FLAGS[@]}" --db="$dir" >"$log" 2>&1 || rc=$? ;;
  esac
  rm -rf "$dir"
  # A failed engine (e.g. a flag it does not take) stops the run with its own message.
  if (( rc != 0 )); then
    echo "compare.sh: $e exited with status $rc; the end of $log:" >&2
    tail -n 5 "$log" >&2
    exit 1
  fi
}

IFS=',' read -r -a ENG <<<"$ENGINES"
for ((r = 1; r <= REPS; r++)); do
  # Alternate the order so drift (thermal, other tenants) hits every engine alike.
  order=("${ENG[@]}")
  if (( r % 2 == 0 )); then
    order=(); for ((i = ${#ENG[@]} - 1; i >= 0; i--)); do order+=("${ENG[$i]}"); done
  fi
  for e in "${order[@]}"; do
    echo "compare.sh: rep $r/$REPS $e" >&2
    run_engine "$e" "$r"
  done
done

fi  # REPORT_ONLY

python3 - "$OUT" "$REPS" "$ENGINES" "${FLAGS[*]}" "$SIFTDB_FLAGS" <<'PY' | tee "$OUT/table.md"
import re, statistics, sys, os, glob
out, reps, engines, flags, sflags = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(','), sys.argv[4], sys.argv[5]
line = re.compile(r'^(\S+)\s+:\s+([\d.]+) micros/op (\d+) ops/sec .*?operations;.*?(?:\((\d+) of (\d+) found\))?\s*$')
tick = re.compile(r'^(\S+) COUNT : (\d+)')
# The tools' note lines (siftdb-bench-kit): write amplification of fills, read latency with
# --histogram.
wa_line = re.compile(r'^write amp\s+: (\S+) ([\d.]+) \(([\d.]+) MB written to storage for ([\d.]+) MB')
wait_line = re.compile(r'^write amp\s+: waitforcompaction ([\d.]+) MB written')
lat_line = re.compile(r'^latency\s+: (\S+) p50 ([\d.]+) us, p99 ([\d.]+) us, p99\.9 ([\d.]+) us')
one_shot = ('compact', 'waitforcompaction')
ops, found, fpr, bits, wamp, lat = {}, {}, {}, {}, {}, {}
for e in engines:
    for r in range(1, reps + 1):
        p = f"{out}/{e}-{r}.log"
        if not os.path.exists(p):
            continue
        t, last_fill = {}, None
        for l in open(p, errors='replace'):
            m = line.match(l.strip())
            if m:
                # A one-shot benchmark (compact) is reported in seconds, not ops/s.
                v = float(m[2]) / 1e6 if m[1] in one_shot else int(m[3])
                ops.setdefault((e, m[1]), []).append(v)
                if m[4]:
                    found[(e, m[1])] = f"{m[4]}/{m[5]}"
            m = tick.match(l.strip())
            if m:
                t[m[1]] = int(m[2])
            m = wa_line.match(l.strip())
            if m:
                wamp.setdefault((e, m[1]), []).append(float(m[2]))
                last_fill = (m[1], float(m[3]), float(m[4]))
            m = wait_line.match(l.strip())
            if m and last_fill and last_fill[2] > 0:
                # A fill's whole write amplification: the fill and the wait for its compactions.
                n, w, u = last_fill
                wamp.setdefault((e, n + '+wait'), []).append((w + float(m[1])) / u)
            m = lat_line.match(l.strip())
            if m:
                lat.setdefault((e, m[1]), []).append(tuple(float(x) for x in m.groups()[1:]))
        pos = t.get('rocksdb.bloom.filter.full.positive', 0)
        tp = t.get('rocksdb.bloom.filter.full.true.positive', 0)
        useful = t.get('rocksdb.bloom.filter.useful', 0)
        if pos - tp + useful > 0:
            fpr.setdefault(e, []).append((pos - tp) / (pos - tp + useful))
        if 'siftdb.filter.bytes' in t and t.get('siftdb.sst.entries'):
            bits.setdefault(e, []).append(8 * t['siftdb.filter.bytes'] / t['siftdb.sst.entries'])
        # Table properties as sst_dump --show_properties prints them: per file in the .sst dump
        # of rocksdb-debian, aggregated over the live tables in rocksdb-bench's log.
        sp = f"{out}/{e}-{r}.sst"
        for src in (sp, p):
            if not os.path.exists(src):
                continue
            fb = ent = 0
            for l in open(src, errors='replace'):
                m = re.match(r'\s*filter block size: (\d+)', l)
                if m: fb += int(m[1])
                m = re.match(r'\s*# entries for filter: (\d+)', l)
                if m: ent += int(m[1])
            if ent:
                bits.setdefault(e, []).append(8 * fb / ent)
names = []
for (e, n) in ops:
    if n not in names:
        names.append(n)
med = lambda v: statistics.median(v) if v else None
print(f"Command flags: {flags}" + (f"  (siftdb also: {sflags})" if sflags else ""))
print(f"Machine: {os.cpu_count()}-core {os.uname().machine}, {os.uname().sysname} {os.uname().release}; "
      f"{reps} repetitions, alternating order; median ops/s\n")
hdr = "| workload | " + " | ".join(engines)
ratios = [x for x in engines if x != "siftdb" and "siftdb" in engines]
hdr += "".join(f" | siftdb/{x}" for x in ratios) + " | found (" + "/".join(engines) + ") |"
print(hdr)
print("|" + "---|" * (2 + len(engines) + len(ratios)))
for n in names:
    vals = {e: med(ops.get((e, n), [])) for e in engines}
    secs = n in one_shot
    fmt = (lambda v: f"{v:.2f} s") if secs else (lambda v: f"{v:,.0f}")
    row = f"| {n} | " + " | ".join("-" if vals[e] is None else fmt(vals[e]) for e in engines)
    for x in ratios:
        a, b = vals["siftdb"], vals[x]
        # Speed ratio: for seconds, the other engine's time over siftdb's.
        row += " | " + ("-" if not a or not b else f"{(b / a if secs else a / b):.2f}x")
    row += " | " + " / ".join(found.get((e, n), "-") for e in engines) + " |"
    print(row)
print()
for e in engines:
    b, f = med(bits.get(e, [])), med(fpr.get(e, []))
    print(f"{e:14} filter bits/key: {'-' if b is None else f'{b:.2f}'}   observed FPR (FP/(FP+useful), "
          f"readrandom+readmissing): {'-' if f is None else f'{100 * f:.3f}%'}")
if wamp:
    print("\nWrite amplification (bytes the process wrote to storage / user bytes; median):\n")
    print("| workload | " + " | ".join(engines) + " |")
    print("|" + "---|" * (1 + len(engines)))
    for n in dict.fromkeys(n for (_, n) in wamp):
        print(f"| {n} | " + " | ".join(
            "-" if not wamp.get((e, n)) else f"{med(wamp[(e, n)]):.2f}" for e in engines) + " |")
if lat:
    print("\nRead latency with --histogram, median over runs of p50 / p99 / p99.9 (us):\n")
    print("| workload | " + " | ".join(engines) + " |")
    print("|" + "---|" * (1 + len(engines)))
    for n in dict.fromkeys(n for (_, n) in lat):
        cell = lambda v: "-" if not v else " / ".join(f"{med([x[i] for x in v]):.2f}" for i in range(3))
        print(f"| {n} | " + " | ".join(cell(lat.get((e, n))) for e in engines) + " |")
print(f"\nraw logs: {out}")
PY
