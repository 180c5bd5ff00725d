"""siftdb vs rocksdict (RocksDB through PyO3) from Python, and the numpy filter API vs Rust.

Not a test: prints medians of 3 runs, the engines alternating within each run. rocksdict runs
in raw mode with a 10 bits/key Bloom filter and LZ4, siftdb with its defaults and LZ4. Workload: 1M
keys of 16 bytes with 100-byte values: puts (in key order, one call each), point reads in a
Python loop (`db[key]`, random order), three passes of multi_get over 1,000-key batches
(siftdb also with `threads=2`; rocksdict has no such option, so its row repeats its one-thread
call), ten full scans. Filter:
a bumped ribbon filter (FPR 1%) built from a 10M-element numpy uint64 array and 10M probes with
`contains_hashes`, against python/interop's `bench-filter` doing the same in Rust (the two
alternating within each run).

    python python/bench/vs_rocksdict.py [--keys 1000000] [--filter-keys 10000000] [--interop PATH]
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np
import rocksdict

import siftdb
from siftdb import filter as sf


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


class Siftdb:
    name = "siftdb"

    def __init__(self, path):
        # LZ4 on both sides: like-for-like compression (rocksdict's default is Snappy).
        self.db = siftdb.Db(path, compression="lz4")

    def put(self, k, v):
        self.db[k] = v

    def get(self, k):
        return self.db[k]

    def multi_get(self, ks):
        return self.db.multi_get(ks)

    def multi_get_2(self, ks):
        return self.db.multi_get(ks, threads=2)

    def scan(self):
        n = 0
        for _ in self.db.items():
            n += 1
        return n

    def close(self):
        self.db.close()


class RocksDict:
    name = "rocksdict"

    def __init__(self, path):
        # At its best for bytes keys: raw mode (no per-key type tag, RocksDB's bytewise
        # comparator) and a 10 bits/key Bloom filter, as RocksDB's tuning guide recommends.
        opts = rocksdict.Options(raw_mode=True)
        opts.set_compression_type(rocksdict.DBCompressionType.lz4())
        table = rocksdict.BlockBasedOptions()
        table.set_bloom_filter(10, False)
        opts.set_block_based_table_factory(table)
        self.db = rocksdict.Rdict(path, opts)

    def put(self, k, v):
        self.db[k] = v

    def get(self, k):
        return self.db[k]

    def multi_get(self, ks):
        return self.db[ks]  # rocksdict's multi-get is indexing with a list

    multi_get_2 = multi_get  # no parallel option: the same call

    def scan(self):
        n = 0
        for _ in self.db.items():
            n += 1
        return n

    def close(self):
        self.db.close()


SCANS = 10
MG_PASSES = 3


def run_engine(cls, keys, value, shuffled, batches, root):
    path = os.path.join(root, cls.name)
    db = cls(path)
    r = {}
    r["puts"] = timed(lambda: [db.put(k, value) for k in keys])
    r["point reads"] = timed(lambda: [db.get(k) for k in shuffled])
    # Three passes over the batches: one lasts under two seconds, too short to time alone.
    r["multi_get x3"] = timed(lambda: [db.multi_get(b) for _ in range(MG_PASSES) for b in batches])
    r["multi_get 2t x3"] = timed(
        lambda: [db.multi_get_2(b) for _ in range(MG_PASSES) for b in batches]
    )
    # Ten passes: one pass of 1M entries lasts a fraction of a second, too short to measure.
    n = [0]
    r["full scan x10"] = timed(lambda: n.__setitem__(0, sum(db.scan() for _ in range(SCANS))))
    assert n[0] == SCANS * len(keys), (cls.name, n[0])
    db.close()
    shutil.rmtree(path)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--filter-keys", type=int, default=10_000_000)
    ap.add_argument("--interop", default=None)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()

    keys = [b"%016d" % i for i in range(a.keys)]
    value = bytes(random.Random(1).getrandbits(8) for _ in range(100))
    shuffled = keys[:]
    random.Random(2).shuffle(shuffled)
    batches = [shuffled[i : i + 1000] for i in range(0, len(shuffled), 1000)]
    results = {"siftdb": [], "rocksdict": []}
    root = tempfile.mkdtemp(prefix="siftdb-bench-")
    try:
        for run in range(a.runs):
            order = [Siftdb, RocksDict] if run % 2 == 0 else [RocksDict, Siftdb]
            for cls in order:
                results[cls.name].append(run_engine(cls, keys, value, shuffled, batches, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"engine comparison: {a.keys} keys of 16 B, 100-byte values, median of {a.runs} runs (s)")
    print(f"{'operation':<16} {'siftdb':>9} {'rocksdict':>10} {'speedup':>8}")
    for op in results["siftdb"][0]:
        s = statistics.median(r[op] for r in results["siftdb"])
        r = statistics.median(r[op] for r in results["rocksdict"])
        print(f"{op:<16} {s:>9.3f} {r:>10.3f} {r / s:>7.2f}x")

    n = a.filter_keys
    fk = sf.hash_u64(np.arange(n, dtype=np.uint64))
    probes = sf.hash_u64(np.arange(n // 2, n // 2 + n, dtype=np.uint64))
    # Python and Rust alternate within each run (the Rust binary builds and probes once per
    # call), so a change of the machine's load between runs hits both sides alike.
    build, probe, rs_build, rs_probe = [], [], [], []
    for _ in range(a.runs):
        t = time.perf_counter()
        f = sf.Filter.build("bumped_ribbon", fk, fpr=0.01)
        build.append(time.perf_counter() - t)
        t = time.perf_counter()
        hits = f.contains_hashes(probes)
        probe.append(time.perf_counter() - t)
        assert hits.sum() >= n // 2
        del f, hits
        if a.interop:
            cmd = [a.interop, "bench-filter", str(n), "1"]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
            rs_build.append(float(out[1]))
            rs_probe.append(float(out[3]))
    py_b, py_p = statistics.median(build), statistics.median(probe)
    print(f"\nfilter: bumped ribbon, {n} keys, {n} probes (half present), median of {a.runs} (s)")
    print(f"{'step':<8} {'python':>8} {'rust':>8} {'ratio':>6}")
    if a.interop:
        rs_b, rs_p = statistics.median(rs_build), statistics.median(rs_probe)
        print(f"{'build':<8} {py_b:>8.3f} {rs_b:>8.3f} {py_b / rs_b:>5.2f}x")
        print(f"{'probe':<8} {py_p:>8.3f} {rs_p:>8.3f} {py_p / rs_p:>5.2f}x")
    else:
        print(f"{'build':<8} {py_b:>8.3f}\n{'probe':<8} {py_p:>8.3f}  (no --interop: Rust side not run)")


if __name__ == "__main__":
    main()
