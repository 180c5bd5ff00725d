#!/usr/bin/env bash
# Point lookups with short keys compared and copied inline, lookup keys built on the stack and a
# batch's keys packed together (NEW) against the build before (OLD): readrandom on 1 and 2
# threads and multireadrandom (batches of 1,000) on one thread over one 10M-key database with
# the ladder's flags (8 MiB block cache), the two builds alternating. Run from the repository
# root with two `siftdb` binaries built at the two commits:
#   OLD=/path/to/siftdb-before NEW=target/release/siftdb ROUNDS=3 docs/results/2026-11-30-short-keys-in-lookups/run.sh
# The database goes in a directory this script makes (and removes); one line per run on stdout.
set -eu
OLD=${OLD:?the siftdb binary before the change}
NEW=${NEW:-target/release/siftdb}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-4}
F="--num=${NUM:-10000000} --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=lz4 --write_buffer_size=8388608 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/siftdb-short-keys.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$NEW" bench --db="$work/db" $F --benchmarks=fillrandom,compact --seed=1 >/dev/null
for r in $(seq 1 "$ROUNDS"); do
  order="$OLD $NEW"; (( r % 2 == 0 )) && order="$NEW $OLD"
  for b in $order; do
    line="round=$r bin=$([[ $b == "$OLD" ]] && echo old || echo new)"
    for spec in "readrandom 1" "readrandom 2" "multireadrandom 1"; do
      set -- $spec
      v=$("$b" bench --db="$work/db" $F --use_existing_db=1 --benchmarks=$1 --threads=$2 \
            --batch_size=1000 --duration="$SECS" --reads=1000000000 --seed=7 2>&1 |
          grep -E "^$1 " | awk '{print $5}')
      line="$line $1_t$2=$v"
    done
    echo "$line"
  done
done
