"""Transactions from Python: read-your-writes, commit on exit, rollback on an exception,
ConflictError for a lost update, write skew refused under serializable isolation and allowed
under snapshot isolation, keyspaces and range reads."""

import threading

import pytest

import siftdb


def test_reads_see_own_writes_and_commit_on_exit(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        db[b"a"] = b"1"
        with db.transaction() as tx:
            assert tx[b"a"] == b"1"
            tx[b"b"] = b"2"
            del tx[b"a"]
            assert b"a" not in tx and tx.get(b"b") == b"2"
            assert tx.items() == [(b"b", b"2")]
            assert b"b" not in db  # not yet committed
        assert db.get(b"a") is None and db[b"b"] == b"2"
        with pytest.raises(siftdb.ClosedError):
            tx.get(b"b")


def test_an_exception_rolls_back(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        with pytest.raises(RuntimeError):
            with db.transaction() as tx:
                tx[b"x"] = b"1"
                raise RuntimeError("boom")
        assert b"x" not in db


def test_a_lost_update_is_a_conflict(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        db[b"n"] = b"0"
        t1, t2 = db.transaction(), db.transaction()
        t1[b"n"] = str(int(t1[b"n"]) + 1).encode()
        t2[b"n"] = str(int(t2[b"n"]) + 1).encode()
        t1.commit()
        with pytest.raises(siftdb.ConflictError):
            t2.commit()
        assert db[b"n"] == b"1"


@pytest.mark.parametrize("isolation,both", [("serializable", False), ("snapshot", True)])
def test_write_skew(tmp_path, isolation, both):
    with siftdb.Db(tmp_path / "db") as db:
        db[b"x"], db[b"y"] = b"1", b"1"
        t1 = db.transaction(isolation=isolation)
        t2 = db.transaction(isolation=isolation)
        # Each reads both and clears one: together they break "at least one is 1".
        assert t1[b"x"] == t1[b"y"] == t2[b"x"] == t2[b"y"] == b"1"
        t1[b"x"] = b"0"
        t2[b"y"] = b"0"
        t1.commit()
        committed = True
        try:
            t2.commit()
        except siftdb.ConflictError:
            committed = False
        assert committed == both


def test_keyspaces_ranges_and_bad_isolation(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        ks = db.keyspace("accounts")
        ks[b"b"] = b"2"
        with db.transaction() as tx:
            tx.put(b"a", b"1", keyspace=ks)
            tx.put(b"c", b"3", keyspace=ks)
            assert tx.items(keyspace=ks) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
            assert tx.items(b"b", keyspace=ks, reverse=True) == [(b"c", b"3"), (b"b", b"2")]
            assert tx.get(b"a") is None  # the default keyspace
        assert ks[b"c"] == b"3"
        with pytest.raises(siftdb.InvalidArgumentError):
            db.transaction(isolation="chaos")


def test_counter_from_threads_loses_nothing(tmp_path):
    with siftdb.Db(tmp_path / "db") as db:
        db[b"n"] = (0).to_bytes(8, "little")
        conflicts = []

        def work():
            mine = 0
            for _ in range(200):
                while True:
                    try:
                        with db.transaction() as tx:
                            n = int.from_bytes(tx[b"n"], "little")
                            tx[b"n"] = (n + 1).to_bytes(8, "little")
                        break
                    except siftdb.ConflictError:
                        mine += 1
            conflicts.append(mine)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert int.from_bytes(db[b"n"], "little") == 800


def test_a_transaction_of_a_closed_database_says_so(tmp_path):
    db = siftdb.Db(tmp_path / "db")
    tx = db.transaction()
    db.close()
    with pytest.raises(siftdb.ClosedError, match="database is closed"):
        tx.get(b"k")
    tx.rollback()
    with pytest.raises(siftdb.ClosedError, match="transaction"):
        tx.get(b"k")
