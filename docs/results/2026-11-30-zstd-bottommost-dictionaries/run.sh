#!/usr/bin/env bash
# zstd dictionaries on bottommost compaction outputs only, against dictionaries everywhere and
# none, for siftdb and RocksDB 11. Run from the repository root after `cargo build --release` and
# scripts/build_rocksdb_bench.sh:
#   NUM=10000000 ROUNDS=3 docs/results/2026-11-30-zstd-bottommost-dictionaries/run.sh
# Databases go in a directory this script makes (and removes); one line per run on stdout.
set -eu
SIFT=${SIFTDB_BIN:-target/release/siftdb}
ROCKS=${ROCKSDB_BIN:-tools/rocksdb-bench/target/release/rocksdb-bench}
NUM=${NUM:-10000000}
ROUNDS=${ROUNDS:-3}
CONFIGS=${CONFIGS:-none bottom everywhere rocksdb rocksdb-bottom}
COMMON="--num=$NUM --benchmarks=fillrandom,compact,readrandom --compression_type=zstd --duration=10 --key_size=16 --value_size=100 --bloom_bits=10 --threads=1 --write_buffer_size=8388608 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432 --seed=1"
DICT="--compression_max_dict_bytes=16384 --compression_zstd_max_train_bytes=1638400"
BOTTOM="--bottommost_compression_max_dict_bytes=16384 --bottommost_compression_zstd_max_train_bytes=1638400"
FINALIZE="--compression_use_zstd_dict_trainer=false"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/siftdb-bottom-dict.XXXXXX")
trap 'rm -rf "$work"' EXIT
for round in $(seq 1 "$ROUNDS"); do
  for cfg in $CONFIGS; do
    db=$work/db-$cfg
    case $cfg in
      none) cmd="$SIFT bench --db=$db $COMMON" ;;
      bottom) cmd="$SIFT bench --db=$db $COMMON $BOTTOM $FINALIZE" ;;
      everywhere) cmd="$SIFT bench --db=$db $COMMON $DICT $FINALIZE" ;;
      rocksdb) cmd="$ROCKS --db=$db $COMMON" ;;
      rocksdb-bottom) cmd="$ROCKS --db=$db $COMMON $BOTTOM" ;;
      *) echo "unknown configuration $cfg" >&2; exit 2 ;;
    esac
    res=$($cmd 2>&1 | grep -E "^(fillrandom|compact|readrandom) " | awk '{printf "%s %s %s ", $1, $3, $5}')
    echo "round=$round cfg=$cfg $res bytes=$(du -sb "$db" | cut -f1)"
    rm -rf "$db"
  done
done
