#!/usr/bin/env bash
# The block cache's admission rule: siftdb with second-miss admission (its default) and with
# admit-all (RocksDB's LRU behaviour), and RocksDB 11, on readrandom over a 10M-key database
# (1 and 2 threads) and YCSB C / B over 1M records, with an 8 MiB block cache. Run from the
# repository root after `cargo build --release` and scripts/build_rocksdb_bench.sh:
#   ROUNDS=3 docs/results/2026-11-30-cache-admission/run.sh
# Databases go in a directory this script makes (and removes); one line per run on stdout.
set -eu
SIFT=${SIFTDB_BIN:-target/release/siftdb}
ROCKS=${ROCKSDB_BIN:-tools/rocksdb-bench/target/release/rocksdb-bench}
ROUNDS=${ROUNDS:-3}
NUM=${NUM:-10000000}
YCSB_NUM=${YCSB_NUM:-1000000}
SECS=${SECS:-6}
COMMON="--key_size=16 --value_size=100 --bloom_bits=10 --compression_type=lz4 --write_buffer_size=8388608 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432 --cache_size=8388608"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/siftdb-cache-admission.XXXXXX")
trap 'rm -rf "$work"' EXIT
$SIFT bench --db="$work/s" --num="$NUM" $COMMON --benchmarks=fillrandom,compact --seed=1 >/dev/null
$ROCKS --db="$work/r" --num="$NUM" $COMMON --benchmarks=fillrandom,compact --seed=1 >/dev/null
$SIFT bench --db="$work/sy" --num="$YCSB_NUM" $COMMON --benchmarks=ycsbload --seed=1 >/dev/null
$ROCKS --db="$work/ry" --num="$YCSB_NUM" $COMMON --benchmarks=ycsbload --seed=1 >/dev/null
ops() { grep -E "^$1 " | awk '{print $5}'; }
for round in $(seq 1 "$ROUNDS"); do
  for cfg in second_miss all rocksdb; do
    case $cfg in
      rocksdb) run() { $ROCKS --db="$1" "${@:2}"; }; db=$work/r; ydb=$work/ry; extra="" ;;
      *) run() { $SIFT bench --db="$1" "${@:2}"; }; db=$work/s; ydb=$work/sy; extra="--cache_admission=$cfg" ;;
    esac
    line="round=$round cfg=$cfg"
    for t in 1 2; do
      r=$(run "$db" --num="$NUM" $COMMON $extra --use_existing_db=1 --benchmarks=readrandom \
            --threads=$t --duration="$SECS" --seed=7 2>&1 | ops readrandom)
      line="$line readrandom_t$t=$r"
    done
    for w in ycsbc ycsbb; do
      r=$(run "$ydb" --num="$YCSB_NUM" $COMMON $extra --use_existing_db=1 --benchmarks=$w \
            --threads=1 --duration="$SECS" --reads=1000000000 --seed=9 2>&1 | ops $w)
      line="$line ${w}_t1=$r"
    done
    echo "$line"
  done
done
