#!/usr/bin/env bash
# Catch-up by snapshot, two builds alternating: each pair runs BEFORE then AFTER through
# integrations/openraft/scripts/catchup.sh and appends its output (and the leader's snapshot build
# time from its stderr) to OUT.
# Usage: alternate.sh BEFORE_BIN AFTER_BIN STATE_MIB PAIRS OUT
set -euo pipefail
before=$(realpath "$1"); after=$(realpath "$2"); mib=$3; pairs=$4; out=$(realpath -m "$5")
cd "$(dirname "$0")/../../../integrations/openraft"
for i in $(seq "$pairs"); do
  for build in before after; do
    bin=$before; [ "$build" = after ] && bin=$after
    echo "=== pair $i build $build state_mib $mib $(date -u +%H:%M:%S)" >> "$out"
    scripts/catchup.sh --state-mib "$mib" --bin "$bin" >> "$out" 2>> "$out.err" \
      || echo "run failed" >> "$out"
    grep -h "snapshot_build_s" "$out.err" | tail -1 >> "$out"
  done
done
