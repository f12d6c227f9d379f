"""Requests to a store sent several at a time: a task that reads many small pieces (npy headers, a node block's rows
in each feature file) waits one round trip per piece when it sends them one after another (about 50 ms each on the
local S3 server), while the pieces do not depend on each other.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")

AT_ONCE = 16  # requests in flight at a time from one task
THREAD_PREFIX = "graphshard-overlap"  # the threads' names (a test tells a task's threads from its driver's by it)


def each(fn: Callable[[T], R], items: Iterable[T], remote: bool, at_once: int = AT_ONCE) -> list[R]:
    """`fn(item)` per item, results in order: `at_once` at a time in threads when `remote` (the items are requests to
    a store; s3fs's calls release the GIL while they wait), else one after another (local reads, memory maps). The
    threads run in the caller's context (its context variables: the Dask worker a task runs on, for one)."""
    items = list(items)
    if not remote or len(items) < 2:
        return [fn(it) for it in items]
    caller = contextvars.copy_context()
    with ThreadPoolExecutor(min(at_once, len(items)), thread_name_prefix=THREAD_PREFIX) as pool:
        return list(pool.map(lambda it: caller.copy().run(fn, it), items))
