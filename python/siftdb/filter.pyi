from typing import Tuple

from ._siftdb import Filter as Filter, hash_keys as hash_keys, hash_u64 as hash_u64

KINDS: Tuple[str, ...]
