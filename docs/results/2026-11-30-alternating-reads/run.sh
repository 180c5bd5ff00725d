#!/usr/bin/env bash
# Point-read benchmarks at one size, siftdb against RocksDB 11, with the ladder's flags
# (scripts/scale.sh): one fillrandom + compact per engine, then ROUNDS rounds of each of BENCHES
# on 1 and 2 threads, the engines alternating within each round (which goes first alternating
# between rounds), each run SECS seconds on the reopened database. Run from the repository root
# after `cargo build --release` and scripts/build_rocksdb_bench.sh:
#   NUM=50000000 BENCHES="readrandom readmissing" ROUNDS=3 docs/results/2026-11-30-alternating-reads/run.sh
# WARM=0 skips the page-cache warm-up after the fills. Databases go in a directory this script
# makes (and removes); one line per run on stdout.
set -eu
SIFT=${SIFTDB_BIN:-target/release/siftdb}
ROCKS=${ROCKSDB_BIN:-tools/rocksdb-bench/target/release/rocksdb-bench}
ROUNDS=${ROUNDS:-5}
NUM=${NUM:-50000000}
BENCHES=${BENCHES:-readrandom readmissing}
SECS=${SECS:-5}
COMMON="--num=$NUM --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=lz4 --write_buffer_size=8388608 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/siftdb-alternating.XXXXXX")
trap 'rm -rf "$work"' EXIT
run() {
  case $1 in
    siftdb) $SIFT bench --db="$work/siftdb" "${@:2}" ;;
    rocksdb) $ROCKS --db="$work/rocksdb" "${@:2}" ;;
  esac
}
for e in siftdb rocksdb; do
  run $e $COMMON --benchmarks=fillrandom,compact --threads=1 --seed=1 >/dev/null
done
# Both databases read once into the page cache: the first engine's files sat idle through the
# second one's fill, and a kernel that pages out idle page cache (this VM's DAMON reclaim
# drops unmapped file pages idle for 60 s) would leave its first runs reading from the disk.
[[ "${WARM:-1}" == 1 ]] && find "$work" -type f -exec cat {} + >/dev/null
for round in $(seq 1 "$ROUNDS"); do
  order="siftdb rocksdb"; (( round % 2 == 0 )) && order="rocksdb siftdb"
  for b in $BENCHES; do
    for t in 1 2; do
      for e in $order; do
        # --reads far above what SECS seconds can do: --duration ends the run.
        r=$(run $e $COMMON --use_existing_db=1 --benchmarks=$b --threads=$t \
              --duration="$SECS" --reads=1000000000 --seed=7 2>&1 | grep -E "^$b " | awk '{print $5}')
        echo "round=$round $b threads=$t engine=$e ops=$r"
      done
    done
  done
done
