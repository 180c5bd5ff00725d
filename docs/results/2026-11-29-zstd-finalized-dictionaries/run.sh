#!/usr/bin/env bash
# siftdb with zstd: no dictionary, trained dictionaries, finalized dictionaries; and RocksDB 11
# without one (its faster zstd configuration, ../2026-11-29-zstd-dictionaries/). Run from the
# repository root after `cargo build --release` and scripts/build_rocksdb_bench.sh:
#   NUM=1000000 ROUNDS=3 CONFIGS="none trained finalized rocksdb" docs/results/2026-11-29-zstd-finalized-dictionaries/run.sh
# Databases go in a directory this script makes (and removes); one line per run on stdout.
set -eu
SIFT=target/release/siftdb
ROCKS=tools/rocksdb-bench/target/release/rocksdb-bench
NUM=${NUM:-1000000}
ROUNDS=${ROUNDS:-3}
CONFIGS=${CONFIGS:-none trained finalized rocksdb}
COMMON="--num=$NUM --benchmarks=fillrandom,compact,readrandom --compression_type=zstd --duration=10 --key_size=16 --value_size=100 --bloom_bits=10 --threads=1 --write_buffer_size=8388608 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432 --seed=1"
DICT="--compression_max_dict_bytes=16384 --compression_zstd_max_train_bytes=1638400"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/siftdb-dict-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
for round in $(seq 1 "$ROUNDS"); do
  for cfg in $CONFIGS; do
    db=$work/db-$cfg
    case $cfg in
      none) cmd="$SIFT bench --db=$db $COMMON" ;;
      trained) cmd="$SIFT bench --db=$db $COMMON $DICT" ;;
      finalized) cmd="$SIFT bench --db=$db $COMMON $DICT --compression_use_zstd_dict_trainer=false" ;;
      rocksdb) cmd="$ROCKS --db=$db $COMMON" ;;
      *) echo "unknown configuration $cfg" >&2; exit 2 ;;
    esac
    res=$($cmd 2>&1 | grep -E "^(fillrandom|readrandom) " | awk '{printf "%s %s ", $1, $5}')
    echo "round=$round cfg=$cfg $res bytes=$(du -sb "$db" | cut -f1)"
    rm -rf "$db"
  done
done
