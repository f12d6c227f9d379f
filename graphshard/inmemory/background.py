"""A local Dask cluster that starts in a thread while the caller goes on (writing chunks, assigning in process),
so `partition_graph` waits for the start-up only when it needs the cluster, if at all."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Beside:
    """`wait()`: the context's value, once started; `release()`: let it close now, in its thread, while the caller
    goes on (leaving the `started_beside` block waits for that)."""

    wait: Callable[[], Any]
    release: Callable[[], None]


@contextmanager
def started_beside(opened: AbstractContextManager) -> Iterator[Beside]:
    """Enter `opened` (e.g. `dask_client(...)`) in a background thread while the caller works; on leaving, it is
    closed in that same thread (after its start-up, if it was still starting) and any close failure raised here."""
    ready: Future = Future()
    done = threading.Event()
    closing: list[BaseException] = []
    thread = threading.Thread(target=_hold, args=(opened, ready, done, closing), name="graphshard-cluster",
                              daemon=True)
    thread.start()
    try:
        yield Beside(wait=ready.result, release=done.set)
    finally:
        done.set()
        thread.join()
    if closing:
        raise closing[0]
