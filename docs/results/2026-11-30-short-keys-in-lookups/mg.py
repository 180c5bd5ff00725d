"""The multi_get and point-read phases of python/bench/vs_rocksdict.py's workload, timed alone.

Loads 1M keys (b"%016d", 100-byte values, LZ4) into a database in a temporary directory it makes
(and removes), then times PASSES passes of MODE: "mg" = multi_get of 1,000-key batches in a
shuffled order, "pt" = db[key] over every key in that order. One line per pass (seconds).

    python mg.py mg 3
"""
import os, random, sys, time, tempfile, shutil
import siftdb
n = 1_000_000
keys = [b"%016d" % i for i in range(n)]
value = bytes(random.Random(1).getrandbits(8) for _ in range(100))
shuffled = keys[:]
random.Random(2).shuffle(shuffled)
batches = [shuffled[i:i+1000] for i in range(0, n, 1000)]
root = tempfile.mkdtemp(prefix="mgprof-")
db = siftdb.Db(os.path.join(root, "db"), compression="lz4")
for k in keys:
    db[k] = value
mode = sys.argv[1] if len(sys.argv) > 1 else "mg"
passes = int(sys.argv[2]) if len(sys.argv) > 2 else 3
print("ready", os.getpid(), flush=True)
time.sleep(float(os.environ.get("WAIT", "0")))
for p in range(passes):
    t = time.perf_counter()
    if mode == "mg":
        for b in batches:
            db.multi_get(b)
    else:
        for k in shuffled:
            db[k]
    print(mode, p, round(time.perf_counter() - t, 3), flush=True)
print(db.stats() if hasattr(db, "stats") else "")
db.close()
shutil.rmtree(root)
