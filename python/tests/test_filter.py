"""siftdb.filter: every kind built from numpy hashes and from byte keys, no false negatives,
FPR within a binomial bound, the stable format both ways between Python and Rust."""

import math
import subprocess

import numpy as np
import pytest

import siftdb
from siftdb import filter as sf

N = 20_000  # keys per filter
M = 200_000  # absent keys probed per filter


def fp_bound(m, p):
    """Upper bound on the false positives among m absent keys at FPR p: the binomial mean
    m*p plus 5 standard deviations sqrt(m*p*(1-p)) (one-sided tail below 3e-7 under the
    normal approximation), plus 3 for the small-count end where that approximation is poor."""
    return m * p + 5 * math.sqrt(m * p * (1 - p)) + 3


@pytest.mark.parametrize("kind", sf.KINDS)
def test_no_false_negatives_and_fpr_within_bound(kind):
    rng = np.random.default_rng(45)
    keys = rng.integers(0, 2**64, size=N, dtype=np.uint64)
    f = sf.Filter.build(kind, keys)
    assert f.kind == kind
    hits = f.contains_hashes(keys)
    assert hits.dtype == np.bool_ and hits.shape == (N,)
    assert hits.all(), f"{kind}: false negatives"
    absent = rng.integers(0, 2**64, size=M, dtype=np.uint64)
    absent = absent[~np.isin(absent, keys)]
    fp = int(f.contains_hashes(absent).sum())
    assert fp <= fp_bound(len(absent), f.expected_fpr), (kind, fp, f.expected_fpr)
    assert f.size_bytes > 0 and f.bits_per_key > 0
    # The single-key probes agree with the array probe.
    assert all(f.contains_hash(int(h)) for h in keys[:100])
    # Serialization keeps every answer.
    g = sf.Filter.from_bytes(f.to_bytes())
    assert g.kind == kind
    assert np.array_equal(g.contains_hashes(absent), f.contains_hashes(absent))
    assert g.expected_fpr == pytest.approx(f.expected_fpr)


@pytest.mark.parametrize("kind", ["blocked_bloom", "split_block_bloom", "bumped_ribbon", "cuckoo"])
def test_byte_keys(kind):
    keys = [b"user:%d" % i for i in range(5000)]
    f = sf.Filter.build(kind, keys, fpr=0.01)
    assert f.contains_keys(keys).all()
    assert all(k in f for k in keys[:200])
    absent = [b"other:%d" % i for i in range(50_000)]
    fp = int(f.contains_keys(absent).sum())
    assert fp <= fp_bound(len(absent), f.expected_fpr)
    if kind != "split_block_bloom":  # which hashes with Parquet's XXH64 instead
        assert f.contains_hashes(sf.hash_keys(keys)).all()


def test_sizing_arguments():
    keys = sf.hash_u64(np.arange(10_000, dtype=np.uint64))
    loose = sf.Filter.build("standard_bloom", keys, bits_per_key=4)
    tight = sf.Filter.build("standard_bloom", keys, bits_per_key=16)
    assert loose.size_bytes < tight.size_bytes
    assert loose.expected_fpr > tight.expected_fpr
    ribbon = sf.Filter.build("ribbon", keys, fpr=0.001)
    assert ribbon.expected_fpr <= 0.002 and ribbon.keys == 10_000
    packed = sf.Filter.build("packed_binary_fuse", keys, fingerprint_bits=12)
    assert packed.expected_fpr == 2.0**-12
    with pytest.raises(siftdb.InvalidArgumentError):
        sf.Filter.build("xor8", keys, fpr=0.01)
    with pytest.raises(siftdb.InvalidArgumentError):
        sf.Filter.build("no_such_kind", keys)
    with pytest.raises(siftdb.InvalidArgumentError):
        sf.Filter.build("blocked_bloom", keys, fpr=1.5)
    with pytest.raises(TypeError):
        sf.Filter.build("blocked_bloom", np.arange(10, dtype=np.int64))
    # Non-contiguous arrays are read as well.
    f = sf.Filter.build("blocked_bloom", keys[::2])
    assert f.contains_hashes(keys[::2]).all()


def test_corrupt_bytes_raise_corruption_error():
    f = sf.Filter.build("bumped_ribbon", sf.hash_u64(np.arange(1000, dtype=np.uint64)))
    raw = bytearray(f.to_bytes())
    raw[len(raw) // 2] ^= 0x40
    with pytest.raises(siftdb.CorruptionError):
        sf.Filter.from_bytes(bytes(raw))
    with pytest.raises(siftdb.CorruptionError):
        sf.Filter.from_bytes(b"\x00" * 3)


@pytest.mark.parametrize("kind", ["bumped_ribbon", "blocked_bloom", "xor16", "cuckoo"])
def test_python_filter_read_by_rust(tmp_path, interop, kind):
    n = 30_000
    f = sf.Filter.build(kind, sf.hash_u64(np.arange(n, dtype=np.uint64)))
    path = tmp_path / f"{kind}.filter"
    f.save(path)
    out = subprocess.run(
        [str(interop), "check-filter", str(path), str(n)], check=True, capture_output=True, text=True
    ).stdout.split()
    assert out[0] == kind
    assert int(out[1]) <= fp_bound(n, f.expected_fpr)


@pytest.mark.parametrize("kind", ["bumped_ribbon", "blocked_bloom"])
def test_rust_filter_read_by_python(tmp_path, interop, kind):
    n = 30_000
    path = tmp_path / f"{kind}.filter"
    subprocess.run([str(interop), "write-filter", str(path), kind, str(n)], check=True)
    f = sf.Filter.load(path)
    assert f.kind == kind
    keys = sf.hash_u64(np.arange(n, dtype=np.uint64))
    assert f.contains_hashes(keys).all()
    absent = sf.hash_u64(np.arange(n, 11 * n, dtype=np.uint64))
    assert int(f.contains_hashes(absent).sum()) <= fp_bound(len(absent), f.expected_fpr)
    assert f.to_bytes() == path.read_bytes()
