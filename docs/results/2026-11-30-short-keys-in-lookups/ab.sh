#!/usr/bin/env bash
# Two builds of the Python extension module alternating (which goes first alternating between
# rounds): each round runs mg.py's multi_get (MG_PASSES, default 3) and point reads (PT_PASSES,
# default 2; 0 skips them) with each.
# The builds are `cargo build --release --features pyo3/extension-module` in python/ at the two
# commits (target/release/lib_siftdb.so); the script copies each in turn over the installed
# module of the active Python's siftdb package (`pip install ./python` first) and leaves the
# second one installed.
#   ROUNDS=4 docs/results/2026-11-30-short-keys-in-lookups/ab.sh before.so after.so
set -eu
PY=${PYTHON:-python}
SO=$("$PY" -c 'import siftdb._siftdb as m; print(m.__file__)')
here=$(dirname "$0")
for r in $(seq 1 "${ROUNDS:-4}"); do
  order="$1 $2"; (( r % 2 == 0 )) && order="$2 $1"
  for v in $order; do
    cp "$v" "$SO"
    mg=$("$PY" "$here/mg.py" mg "${MG_PASSES:-3}" | awk '/^mg/ {printf "%s ", $3}')
    pt=""
    if [[ ${PT_PASSES:-2} != 0 ]]; then
      pt=$("$PY" "$here/mg.py" pt "${PT_PASSES:-2}" | awk '/^pt/ {printf "%s ", $3}')
    fi
    echo "round=$r $v mg $mg | pt $pt"
  done
done
cp "$2" "$SO"
