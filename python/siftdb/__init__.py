"""siftdb: an embeddable LSM key-value store in which approximate-membership filters are
first-class, from Python.

    import siftdb

    with siftdb.Db("/tmp/demo") as db:
        db[b"apple"] = b"red"
        with db.write_batch() as batch:      # atomic; commits on exit
            batch[b"banana"] = b"yellow"
            del batch[b"apple"]
        print(db.get(b"apple", b"gone"), list(db.items(reverse=True)))

Keys and values are ``bytes`` (any buffer is accepted: bytearray, memoryview, numpy arrays).
``Db`` behaves like a dict of bytes (``db[k]``, ``db[k] = v``, ``k in db``, ``del db[k]``,
``get``, iteration over keys) and adds ``multi_get``, ``delete_range``, ``write_batch()``,
range and prefix iteration both ways (``items``/``keys``/``values``), ``snapshot()``,
``transaction()`` (optimistic, serializable by default: a context manager that commits on
exit and raises ``ConflictError`` when what it read changed; run it again),
``keyspace(name)``, ``checkpoint(dir)``, ``stats()`` and ``read_amp_table()`` (plain dicts and
lists of dicts: ``pandas.DataFrame(db.read_amp_table())``). Every call that reaches the engine
releases the GIL. Errors are ``siftdb.Error`` and its subclasses ``CorruptionError``,
``InvalidArgumentError``, ``ConflictError`` (transactions) and ``ClosedError``, carrying the
engine's message. The filter library is ``siftdb.filter``. The full guide is docs/python.md in
the repository.
"""

from ._siftdb import (
    OPTION_NAMES,
    ClosedError,
    ConflictError,
    CorruptionError,
    Db,
    Error,
    InvalidArgumentError,
    Iterator,
    Keyspace,
    Snapshot,
    Transaction,
    WriteBatch,
    __version__,
)
from . import filter

__all__ = [
    "Db",
    "Keyspace",
    "Snapshot",
    "Transaction",
    "WriteBatch",
    "Iterator",
    "Error",
    "CorruptionError",
    "InvalidArgumentError",
    "ConflictError",
    "ClosedError",
    "OPTION_NAMES",
    "filter",
    "__version__",
]
