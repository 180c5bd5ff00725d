#!/usr/bin/env bash
# readrandom on 1 and 2 threads over one database per engine, zstd: siftdb with bottommost
# dictionaries (run.sh's `bottom`), RocksDB 11 without a dictionary (its faster setting in run.sh).
# One fillrandom + compact per engine, then ROUNDS rounds, the engines alternating within each
# round (which goes first alternating between rounds), each run SECS seconds on the reopened
# database. Run from the repository root after `cargo build --release` and
# scripts/build_rocksdb_bench.sh:
#   NUM=10000000 ROUNDS=5 docs/results/2026-11-30-zstd-bottommost-dictionaries/reads.sh
# Databases go in a directory this script makes (and removes); one line per run on stdout.
set -eu
SIFT=${SIFTDB_BIN:-target/release/siftdb}
ROCKS=${ROCKSDB_BIN:-tools/rocksdb-bench/target/release/rocksdb-bench}
NUM=${NUM:-10000000}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-6}
COMMON="--num=$NUM --compression_type=zstd --key_size=16 --value_size=100 --bloom_bits=10 --write_buffer_size=8388608 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432"
BOTTOM="--bottommost_compression_max_dict_bytes=16384 --bottommost_compression_zstd_max_train_bytes=1638400 --compression_use_zstd_dict_trainer=false"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/siftdb-zstd-reads.XXXXXX")
trap 'rm -rf "$work"' EXIT
run() {
  case $1 in
    siftdb) $SIFT bench --db="$work/siftdb" $COMMON $BOTTOM "${@:2}" ;;
    rocksdb) $ROCKS --db="$work/rocksdb" $COMMON "${@:2}" ;;
  esac
}
for e in siftdb rocksdb; do
  run $e --benchmarks=fillrandom,compact --threads=1 --seed=1 >/dev/null
done
for round in $(seq 1 "$ROUNDS"); do
  order="siftdb rocksdb"; (( round % 2 == 0 )) && order="rocksdb siftdb"
  for t in 1 2; do
    for e in $order; do
      # --reads far above what SECS seconds can do: --duration ends the run.
      r=$(run $e --use_existing_db=1 --benchmarks=readrandom --threads=$t --duration="$SECS" \
            --reads=1000000000 --seed=7 2>&1 | grep -E '^readrandom ' | awk '{print $5}')
      echo "round=$round threads=$t engine=$e readrandom=$r"
    done
  done
done
