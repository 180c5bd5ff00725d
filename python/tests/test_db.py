"""The engine from Python: the dict-like API against a Python dict model with reopens,
iterators both ways, snapshots, keyspaces, batches, stats, and the error mapping."""

import random
import subprocess
import threading

import pytest

import siftdb


def sorted_items(model, lo=None, hi=None, prefix=None):
    items = sorted(model.items())
    if prefix is not None:
        return [(k, v) for k, v in items if k.startswith(prefix)]
    return [(k, v) for k, v in items if (lo is None or k >= lo) and (hi is None or k < hi)]


def check_against(db, model, universe):
    for k in universe:
        assert db.get(k) == model.get(k), k
        assert (k in db) == (k in model), k
    assert list(db.items()) == sorted_items(model)
    assert list(db.items(reverse=True)) == sorted_items(model)[::-1]
    assert db.multi_get(universe) == [model.get(k) for k in universe]
    assert db.multi_get(universe, threads=3) == [model.get(k) for k in universe]


def test_dict_model_with_reopens(tmp_path):
    rng = random.Random(45)
    universe = [b"k%03d" % i for i in range(300)]
    model = {}
    path = tmp_path / "db"
    # A small memtable so the run flushes and compacts: reads cross memtable, L0 and deeper.
    opts = dict(memtable_size=64 * 1024)
    db = siftdb.Db(path, **opts)
    try:
        for step in range(3000):
            r = rng.random()
            k = rng.choice(universe)
            if r < 0.55:
                v = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 200)))
                db[k] = v
                model[k] = v
            elif r < 0.75:
                del db[k]
                model.pop(k, None)
            elif r < 0.8:
                a, b = sorted(rng.sample(universe, 2))
                db.delete_range(a, b)
                for key in [key for key in model if a <= key < b]:
                    del model[key]
            elif r < 0.9:
                with db.write_batch() as batch:
                    for _ in range(rng.randrange(1, 10)):
                        key = rng.choice(universe)
                        if rng.random() < 0.7:
                            batch[key] = b"batch%d" % step
                            model[key] = b"batch%d" % step
                        else:
                            del batch[key]
                            model.pop(key, None)
            else:
                assert db.get(k) == model.get(k)
            if step % 500 == 499:
                check_against(db, model, universe)
                db.close()
                db = siftdb.Db(path, **opts)
                check_against(db, model, universe)
    finally:
        db.close()


def test_batch_discarded_on_exception(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        with pytest.raises(RuntimeError):
            with db.write_batch() as batch:
                batch.put(b"a", b"1")
                raise RuntimeError("abort")
        assert b"a" not in db
        batch = db.write_batch()
        batch.put(b"a", b"1")
        assert len(batch) == 1
        batch.commit()
        assert db[b"a"] == b"1"
        with pytest.raises(siftdb.ClosedError):
            batch.put(b"b", b"2")


def test_iterators_both_ways(tmp_path):
    model = {b"%c%d" % (c, i): b"v%d" % i for c in b"abc" for i in range(50)}
    with siftdb.Db(tmp_path / "db") as db:
        for k, v in model.items():
            db[k] = v
        db.flush()
        db[b"b7"] = b"fresh"  # memtable over SSTs
        model[b"b7"] = b"fresh"
        for lo, hi in [(None, None), (b"a3", b"b2"), (b"b", None), (None, b"b"), (b"z", None)]:
            want = sorted_items(model, lo, hi)
            assert list(db.items(lo, hi)) == want
            assert list(db.items(lo, hi, reverse=True)) == want[::-1]
            assert list(db.keys(lo, hi)) == [k for k, _ in want]
            assert list(db.values(lo, hi, reverse=True)) == [v for _, v in want[::-1]]
        want = sorted_items(model, prefix=b"c1")
        assert list(db.items(prefix=b"c1")) == want
        assert list(db.items(prefix=b"c1", reverse=True)) == want[::-1]
        assert list(db) == sorted(model)
        # An iterator reads at the moment it was made.
        it = db.items()
        first = next(it)
        db[b"a00"] = b"later"
        assert first == (b"a0", b"v0")
        assert b"a00" not in dict(it)
        with pytest.raises(siftdb.InvalidArgumentError):
            db.items(b"a", prefix=b"a")



def test_long_scans_in_keyspaces(tmp_path):
    # Thousands of entries of varied lengths: the iterator fetches them in growing batches
    # (16 up to 1024 per release of the GIL) into one reused buffer, so entries must come out
    # whole across batch boundaries; a keyspace's scan must stop at its own keys both ways.
    rng = random.Random(7)
    default = {b"d%05d" % i: b"x" * rng.randrange(0, 300) for i in range(5000)}
    other = {b"d%05d" % i: b"o%d" % i for i in range(0, 5000, 3)}
    with siftdb.Db(tmp_path / "db", memtable_size=128 * 1024) as db:
        ks = db.keyspace("other")
        for k, v in default.items():
            db[k] = v
        for k, v in other.items():
            ks[k] = v
        db.flush()
        del db[b"d00100"]  # a tombstone in the memtable over the SSTs
        del default[b"d00100"]
        for handle, model in ((db, default), (ks, other)):
            for lo in (None, b"d00100", b"d02500x", b"e"):
                want = sorted_items(model, lo)
                assert list(handle.items(lo)) == want
                assert list(handle.items(lo, reverse=True)) == want[::-1]
                assert list(handle.keys(lo, reverse=True)) == [k for k, _ in want[::-1]]
                assert list(handle.values(lo)) == [v for _, v in want]
        with db.snapshot() as snap:
            db[b"d00001"] = b"after"
            assert list(snap.items()) == sorted_items(default)

def test_snapshots(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        db[b"a"] = b"1"
        ks = db.keyspace("other")
        ks[b"x"] = b"1"
        with db.snapshot() as snap, ks.snapshot() as ks_snap:
            db[b"a"] = b"2"
            db[b"b"] = b"2"
            ks[b"x"] = b"2"
            db.flush()
            assert snap[b"a"] == b"1"
            assert b"b" not in snap
            assert list(snap.items()) == [(b"a", b"1")]
            assert ks_snap[b"x"] == b"1"
            assert snap.sequence > 0
        with pytest.raises(siftdb.ClosedError):
            snap.get(b"a")
        assert db[b"a"] == b"2"


def test_keyspaces_checkpoint_stats(tmp_path):
    pandas = pytest.importorskip("pandas")
    with siftdb.Db(tmp_path / "db") as db:
        users = db.keyspace("users")
        users[b"u1"] = b"ann"
        db[b"u1"] = b"default"
        assert users[b"u1"] == b"ann"
        assert db.keyspace_names() == ["default", "users"]
        with pytest.raises(siftdb.InvalidArgumentError):
            db.keyspace("missing", create=False)
        with db.write_batch() as batch:  # one atomic batch across keyspaces
            batch.put(b"u2", b"bo", keyspace=users)
            batch.put(b"d2", b"x")
        assert users[b"u2"] == b"bo" and db[b"d2"] == b"x"
        with users.write_batch() as batch:
            batch[b"u3"] = b"cy"
        assert users[b"u3"] == b"cy" and b"u3" not in db
        for i in range(1000):
            db[b"key%05d" % i] = b"v"
        db.flush()
        for i in range(0, 2000, 2):
            db.get(b"key%05d" % i)
        db.checkpoint(tmp_path / "copy")
        stats = db.stats()
        assert stats["gets"] >= 1000 and stats["flushes"] >= 1
        assert isinstance(stats["tickers"]["rocksdb.bloom.filter.useful"], int)
        levels = pandas.DataFrame(stats["levels"])
        assert levels["files"].sum() >= 1
        table = pandas.DataFrame(db.read_amp_table())
        assert (table["checks"] > 0).any()
        assert db.memory_usage()["total"] > 0
        db.drop_keyspace("users")
        with pytest.raises(siftdb.InvalidArgumentError):
            users.get(b"u1")
    with siftdb.Db(tmp_path / "copy") as copy:
        assert copy[b"key00999"] == b"v"
        assert copy.keyspace("users", create=False)[b"u1"] == b"ann"


def test_buffers_and_defaults(tmp_path):
    np = pytest.importorskip("numpy")
    with siftdb.Db(tmp_path / "db") as db:
        db[bytearray(b"k1")] = memoryview(b"v1")
        db[np.frombuffer(b"k2", dtype=np.uint8)] = b"v2"
        assert db[memoryview(b"k1")] == b"v1"
        assert db.get(b"k2") == b"v2"
        assert db.get(b"nope", b"dflt") == b"dflt"
        with pytest.raises(KeyError):
            db[b"nope"]
        with pytest.raises(TypeError):
            db["text"] = b"v"
        with pytest.raises(TypeError):
            db.get(5)


def test_error_mapping(tmp_path):
    path = tmp_path / "db"
    with pytest.raises(siftdb.InvalidArgumentError, match="memtable_size"):
        siftdb.Db(path, memtable_size=0)
    with pytest.raises(siftdb.InvalidArgumentError, match="unknown option"):
        siftdb.Db(path, no_such_option=1)
    with pytest.raises(siftdb.InvalidArgumentError, match="compression"):
        siftdb.Db(path, compression="gzip")
    db = siftdb.Db(path, compression="lz4")
    db[b"a"] = b"1"
    ks = db.keyspace("k")
    it = db.items()
    with pytest.raises(siftdb.Error, match="LOCK"):  # a second handle on a locked database
        siftdb.Db(path)
    db.close()
    db.close()  # a no-op
    assert db.closed
    for call in (lambda: db[b"a"], lambda: db.put(b"a", b"1"), lambda: ks.get(b"a"), db.stats):
        with pytest.raises(siftdb.ClosedError):
            call()
    with pytest.raises(siftdb.ClosedError):
        list(it)
    assert issubclass(siftdb.CorruptionError, siftdb.Error)
    assert issubclass(siftdb.ConflictError, siftdb.Error)
    # Corrupt bytes: an SST whose every byte but the last 8 is flipped.
    with siftdb.Db(tmp_path / "ro", memtable_size=64 * 1024) as db2:
        db2[b"x"] = b"y"
        db2.flush()
    sst = sorted((tmp_path / "ro").glob("*.sst"))[0]
    raw = bytearray(sst.read_bytes())
    for i in range(0, len(raw) - 8):
        raw[i] ^= 0xFF
    sst.write_bytes(bytes(raw))
    with pytest.raises(siftdb.CorruptionError):
        with siftdb.Db(tmp_path / "ro") as db3:
            db3[b"x"]


def test_read_only_and_merge(tmp_path):
    path = tmp_path / "db"
    with siftdb.Db(path, merge_operator="u64add") as db:
        for _ in range(3):
            db.merge(b"count", (5).to_bytes(8, "little"))
        assert int.from_bytes(db[b"count"], "little") == 15
    with siftdb.Db(path, read_only=True, merge_operator="u64add") as ro:
        assert int.from_bytes(ro[b"count"], "little") == 15
        with pytest.raises(siftdb.Error, match="read-only"):
            ro[b"x"] = b"y"


def test_threads_share_a_db(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        errors = []

        def work(t):
            try:
                for i in range(500):
                    db[b"t%d-%d" % (t, i)] = b"%d" % i
                for i in range(500):
                    assert db[b"t%d-%d" % (t, i)] == b"%d" % i
            except Exception as e:  # surfaced below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert len(list(db.keys())) == 2000


def test_reads_a_database_written_by_rust(tmp_path, interop):
    path = tmp_path / "rust-db"
    subprocess.run([str(interop), "write-db", str(path), "2000"], check=True)
    with siftdb.Db(path, create_if_missing=False) as db:
        want = [(b"key%06d" % i, b"value%d" % i) for i in range(2000) if i % 7 != 0]
        assert list(db.items()) == want
        assert db[b"key000001"] == b"value1"
        assert b"key000007" not in db
        ks = db.keyspace("ks", create=False)
        assert list(ks.items(prefix=b"k9")) == [(b"k9", b"v9")] + [
            (b"k9%d" % i, b"v9%d" % i) for i in range(10)
        ]


def test_multi_get_threads_out_of_range_is_an_invalid_argument(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        db[b"a"] = b"1"
        assert db.multi_get([b"a", b"b"], threads=2) == [b"1", None]
        for bad in (0, 65):
            with pytest.raises(siftdb.InvalidArgumentError, match="multi_get_threads"):
                db.multi_get([b"a"], threads=bad)


def test_multi_get_takes_any_buffers_from_a_list_a_tuple_or_a_generator(tmp_path):
    with siftdb.Db(str(tmp_path / "db")) as db:
        for i in range(0, 40, 2):
            db[b"k%02d" % i] = b"v%02d" % i
        keys = [b"k%02d" % i for i in range(40)]
        want = [b"v%02d" % i if i % 2 == 0 else None for i in range(40)]
        # Every kind of buffer, in a list longer than the read-ahead of its items.
        mixed = [
            [bytes, bytearray, memoryview][i % 3](k) for i, k in enumerate(keys)
        ]
        assert db.multi_get(mixed) == want
        assert db.multi_get(tuple(mixed)) == want
        assert db.multi_get(k for k in keys) == want
        assert db.multi_get([]) == []
        with pytest.raises(TypeError, match="key must be bytes"):
            db.multi_get(keys[:20] + ["k00"] + keys[20:])
