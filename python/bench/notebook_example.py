# A notebook-style session: load, compact, look up, read the read-amplification table as a
# pandas DataFrame, then build and probe a filter from numpy. Output: docs/results/2026-11-29-python/.
import sys

import numpy as np, pandas as pd, siftdb
from siftdb import filter as sf

with siftdb.Db(sys.argv[1], memtable_size=1 << 20, compression="lz4") as db:
    keys = [(2 * i).to_bytes(8, "big") for i in range(200_000)]
    with db.write_batch() as b:
        for k in keys:
            b[k] = b"v" * 100
    db.compact()
    for i in range(50_000):
        db.get((i * 2_654_435_761 % 400_000).to_bytes(8, "big"))   # even keys present
    df = pd.DataFrame(db.read_amp_table())
    print(df.to_string(index=False))

hashes = np.random.default_rng(7).integers(0, 2**63, 1_000_000, dtype=np.uint64)
f = sf.Filter.build("bumped_ribbon", hashes, fpr=0.01)
probe = np.random.default_rng(8).integers(0, 2**63, 1_000_000, dtype=np.uint64)
print(f"bumped ribbon: {f.size_bytes} bytes, {f.bits_per_key:.2f} bits/key, "
      f"expected FPR {f.expected_fpr:.5f}, measured {f.contains_hashes(probe).mean():.5f}, "
      f"no false negatives: {bool(f.contains_hashes(hashes).all())}")
