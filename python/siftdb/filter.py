"""siftdb.filter: approximate-membership filters (the Rust crate ``siftdb-filter``) with numpy.

Build a filter from a numpy ``uint64`` array of 64-bit key **hashes** (``hash_keys`` turns byte
keys into them, ``hash_u64`` integer keys) or from any iterable of byte keys; probe a whole
array at once with ``contains_hashes`` (a numpy bool array; the GIL is released and there is no
per-key Python overhead); serialize with ``to_bytes``/``save`` into the engine's stable format
(kind tag, parameters, payload, CRC-32: docs/format.md), which Rust's ``FilterView::parse``
reads, and back with ``Filter.from_bytes``/``Filter.load``. Every filter reports
``size_bytes``, ``bits_per_key`` and ``expected_fpr``. No filter has false negatives.

    import numpy as np
    from siftdb import filter as sf

    keys = sf.hash_u64(np.arange(1_000_000, dtype=np.uint64))
    f = sf.Filter.build("bumped_ribbon", keys, fpr=0.01)
    assert f.contains_hashes(keys).all()
    f.save("keys.filter")

Choosing a filter (bits per key at the stated FPR, from each algorithm's sizing formula):

==================  ==========  =======  ==============  ========================================
kind                inserts     deletes  bits/key at 1%  notes
==================  ==========  =======  ==============  ========================================
standard_bloom      yes         no       9.6             k probes anywhere; the textbook baseline
blocked_bloom       yes         no       ~10             all probes in one cache line: one miss
split_block_bloom   yes         no       ~10.5           Parquet's format (byte keys: XXH64)
two_bit_bloom       yes         no       ~25             the engine's memtable filter (k = 2)
counting_bloom      yes         yes      ~38             removal of inserted keys
scalable_bloom      unbounded   no       grows           key count unknown in advance
cuckoo              until full  yes      12.6            fingerprints in two buckets (FPR 0.2%)
ribbon              no          no       ~7.0            near log2(1/FPR); 2 blocks per query
bumped_ribbon       no          no       ~6.7            fewer slots (BuRR); the engine's SST filter
xor8 / xor16        no          no       9.84 / 19.7     FPR fixed at 2^-8 / 2^-16
binary_fuse8 / 16   no          no       ~9.0 / ~18.1    xor in ~1.125 n slots; faster build
binary_fuse4_8/16   no          no       ~8.6 / ~17.2    4-wise: ~1.075 n slots; a fourth lookup
packed_binary_fuse  no          no       ~7.5 at 2^-7    any width 1..32 bits (fingerprint_bits)
==================  ==========  =======  ==============  ========================================

The Python API builds every filter from its whole key set (``Filter.build``); "inserts" says
what the Rust API allows after that. Rules of thumb: a key set known once and never changed (an
SST, a shipped dictionary) wants a static filter (bumped_ribbon or ribbon: the fewest bits for
the FPR; binary_fuse for the fastest build at a fixed 2^-8 / 2^-16); keys that keep arriving
want a Bloom filter sized for the expected count (blocked_bloom: one cache miss per probe);
keys that also leave want cuckoo. Grafite, the range filter, is Rust-only for now.
"""

from ._siftdb import FILTER_KINDS, Filter, hash_keys, hash_u64

KINDS = tuple(FILTER_KINDS)
"""The kind names ``Filter.build`` accepts."""

__all__ = ["Filter", "KINDS", "hash_keys", "hash_u64"]
