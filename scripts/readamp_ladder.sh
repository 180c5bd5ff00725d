#!/usr/bin/env bash
# The read-amplification ladder (issue 16): `siftdb readamp` at several database sizes and
# present-key distributions, every policy at every budget, on disk (`--on-disk`: real files in
# a temporary directory; the block counts are those of the in-memory builds, the wall time is
# the disk's). One report directory per rung, OUT/<keys>-<dist>/, each with readamp's five
# outputs and the rung's stdout (readamp.log, which ends with the equal-memory table and the
# time the rung took); OUT/summary.md lists every rung's comparison of the default policy with
# the best other one.
#
#   scripts/readamp_ladder.sh [--keys 1000000,10000000,50000000] [--dists uniform,zipfian]
#                             [--bits 4,5,8,8.5,10,16] [--out DIR] [--in-memory | --direct-reads]
#                             [--jobs N] [--policies LIST]
#
# --policies LIST: readamp's `--policies` (report names, comma separated; default every
# policy): `--keys 50000000 --policies two_bit+bumped_ribbon_all_runs` runs the default alone,
# the affordable 50M rung (on disk, two builds at a time loaded 60% of their keys in 29 min on
# the 2-core machine: about 50 min a build pair; the full rung is 9 policies per budget and the
# no-filter baseline).
# --jobs N: readamp's `--jobs` (N builds at once; the counts are the same, the microseconds per
# lookup are not: keep 1, the default, with --direct-reads).
# --direct-reads: readamp's `--direct-reads` (O_DIRECT through an 8 MiB block cache), so each
# rung also reports device reads and microseconds per lookup; TMPDIR must be on a file system
# that allows O_DIRECT (not tmpfs).
# Sizes: 1M keys give 3 levels below L0 with readamp's defaults (1 MiB L1, x10, 1 MiB files,
# 10,000 keys per flush), 10M 4 and 50M 5. Time on the 2-core machine: about 4 min for 1M with
# 8 budgets in memory, 53 min for 10M with 4 budgets (docs/results/2026-11-28-readamp-10m); 50M
# takes hours, which
# is why this is a script run by hand (tests/readamp_cli.rs runs a bounded readamp). DIR must
# be new or empty (default /var/tmp/siftdb-readamp-ladder-<time>).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KEYS="1000000,10000000,50000000"; DISTS="uniform,zipfian"; BITS="4,5,8,8.5,10,16"
OUT="/var/tmp/siftdb-readamp-ladder-$(date +%Y%m%d-%H%M%S)"; DISK="--on-disk"; JOBS=1; POLICIES=""
die() { echo "readamp_ladder.sh: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --in-memory) DISK=""; shift; continue ;;
    --direct-reads) DISK="--direct-reads"; shift; continue ;;
  esac
  [[ $# -ge 2 ]] || die "$1 needs a value"
  case "$1" in
    --keys) KEYS="$2" ;; --dists) DISTS="$2" ;; --bits) BITS="$2" ;; --out) OUT="$2" ;;
    --jobs) JOBS="$2" ;;
    --policies) POLICIES="$2" ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
  shift 2
done
for k in ${KEYS//,/ }; do [[ $k =~ ^[0-9]+$ && $k -ge 2 ]] || die "--keys: $k is not a key count"; done
[[ $JOBS =~ ^[0-9]+$ && $JOBS -ge 1 ]] || die "--jobs: $JOBS is not a positive count"
for d in ${DISTS//,/ }; do
  [[ $d == uniform || $d == zipfian || $d == latest ]] || die "--dists: $d is not uniform, zipfian or latest"
done
[[ -e "$OUT" && -n "$(ls -A "$OUT" 2>/dev/null)" ]] && die "--out $OUT is not empty (give a new directory)"
mkdir -p "$OUT"

(cd "$ROOT" && cargo build --release --quiet -p siftdb-cli)
BIN="$ROOT/target/release/siftdb"
{
  echo "# readamp ladder ($(date -u +%Y-%m-%dT%H:%MZ), budgets $BITS${DISK:+, $DISK})"
  echo
} > "$OUT/summary.md"
for keys in ${KEYS//,/ }; do
  for dist in ${DISTS//,/ }; do
    rung="$OUT/$keys-$dist"
    echo "readamp_ladder.sh: $keys keys, $dist present keys -> $rung" >&2
    start=$(date +%s)
    # shellcheck disable=SC2086 # DISK is one flag or nothing
    "$BIN" readamp --keys "$keys" --present-dist "$dist" --bits "$BITS" $DISK --jobs "$JOBS" \
      ${POLICIES:+--policies "$POLICIES"} --out "$rung" \
      > "$rung.log"
    mv "$rung.log" "$rung/readamp.log"
    {
      echo "## $keys keys, $dist present keys ($(( $(date +%s) - start )) s)"
      echo
      echo '```'
      sed -n '/^at equal measured memory/,/^$/p' "$rung/readamp.log"
      sed -n '/reads and microseconds per lookup/,/^$/p' "$rung/readamp.log"
      echo '```'
      echo
    } >> "$OUT/summary.md"
  done
done
echo "readamp_ladder.sh: done; $OUT/summary.md" >&2
