from . import filter as filter
from ._siftdb import (
    OPTION_NAMES as OPTION_NAMES,
    ClosedError as ClosedError,
    ConflictError as ConflictError,
    CorruptionError as CorruptionError,
    Db as Db,
    Error as Error,
    InvalidArgumentError as InvalidArgumentError,
    Iterator as Iterator,
    Keyspace as Keyspace,
    Snapshot as Snapshot,
    Transaction as Transaction,
    WriteBatch as WriteBatch,
    __version__ as __version__,
)
