"""A local Dask cluster that starts in a thread while the caller goes on (writing chunks, assigning in process),
so `partition_graph` waits for the start-up only when it needs the cluster, if at all."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, Iterator


def _hold(opened: AbstractContextManager, ready: Future, done: threading.Event, closing: list) -> None:
    """Open the context, hand its value over, keep it open until `done`: enter and exit in this one thread."""
    try:
        with opened as value:
            ready.set_result(value)
            done.wait()
    except BaseException as err:  # noqa: BLE001 - handed to the caller: by `ready`, or as a failed close
        if ready.done():
            closing.append(err)
        else:
            ready.set_exception(err)


@contextmanager
def started_beside(opened: AbstractContextManager) -> Iterator[Callable[[], Any]]:
    """Enter `opened` (e.g. `dask_client(...)`) in a background thread; yields a function that waits for its value.
    On leaving, the context is closed in the same thread (after its start-up, if it was still starting)."""
    ready: Future = Future()
    done = threading.Event()
    closing: list[BaseException] = []
    thread = threading.Thread(target=_hold, args=(opened, ready, done, closing), name="graphshard-cluster",
                              daemon=True)
    thread.start()
    try:
        yield ready.result
    finally:
        done.set()
        thread.join()
    if closing:
        raise closing[0]
