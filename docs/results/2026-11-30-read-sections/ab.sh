#!/usr/bin/env bash
# A/B of siftdb binaries on one existing database, the binaries alternating within each round:
# ROUNDS rounds of BENCH (default readmissing) on T threads, SECS seconds a run, with the
# ladder's flags (scripts/scale.sh). One line per run: round, binary, ops/s. The database is
# made once beforehand with the same flags, e.g.
#   target/release/siftdb bench --db=DIR --num=100000000 --key_size=16 --value_size=100 \
#     --bloom_bits=10 --compression_type=lz4 --write_buffer_size=8388608 \
#     --target_file_size_base=8388608 --max_bytes_for_level_base=33554432 \
#     --benchmarks=fillrandom,compact --seed=1
# then: DB=DIR T=2 ROUNDS=8 ab.sh OLD_BINARY NEW_BINARY
# A binary may be a wrapper script (e.g. one setting SIFTDB_NO_MEMBARRIER=1). Reads only.
set -eu
: "${DB:?DB=the database directory}"
NUM=${NUM:-100000000}; ROUNDS=${ROUNDS:-6}; T=${T:-2}; SECS=${SECS:-4}; BENCH=${BENCH:-readmissing}
F="--num=$NUM --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=lz4 --write_buffer_size=8388608 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432 --use_existing_db=1 --reads=1000000000 --seed=7"
for r in $(seq 1 "$ROUNDS"); do
  for b in "$@"; do
    o=$("$b" bench --db="$DB" $F --benchmarks="$BENCH" --threads="$T" --duration="$SECS" 2>/dev/null |
      grep "^$BENCH " | awk '{print $5}')
    echo "$r $(basename "$b") $o"
  done
done
