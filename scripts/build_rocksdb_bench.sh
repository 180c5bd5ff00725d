#!/usr/bin/env bash
# Builds tools/rocksdb-bench (RocksDB 11 from source, release, NDEBUG) for compare.sh, direct.sh
# and scale.sh, installing with apt-get what its build needs when missing:
#   libclang-dev, clang  bindgen (librocksdb-sys generates its bindings at build time)
#   liburing-dev         the rocksdb crate's io-uring feature: RocksDB's MultiRead and
#                        ReadOptions::async_io read through io_uring (ROCKSDB_IOURING_PRESENT),
#                        as a RocksDB user on Linux would build it for multireadrandom
# The first build compiles RocksDB's C++ (about 15 minutes on 2 cores); later ones are quick.
# Run from any directory; exits non-zero if the build fails.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
missing=()
for p in libclang-dev clang liburing-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if (( ${#missing[@]} )); then
  echo "build_rocksdb_bench.sh: installing ${missing[*]} (apt-get)" >&2
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}" >&2
fi
# From its own directory, so its .cargo/config.toml (-C target-cpu=native) applies: other flags
# would rebuild RocksDB's C++ from scratch.
cd "$ROOT/tools/rocksdb-bench"
nice -n 19 cargo build --release --quiet
