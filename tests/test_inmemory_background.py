"""started_beside: a context opened in a thread while the caller works (partition_graph's local cluster)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest

from graphshard.inmemory.background import started_beside


@contextmanager
def recorded(log: list, start_s: float = 0.0, fail_start: bool = False, fail_close: bool = False):
    log.append(("enter", threading.get_ident()))
    time.sleep(start_s)
    if fail_start:
        raise RuntimeError("cannot start")
    try:
        yield "client"
    finally:
        log.append(("exit", threading.get_ident()))
        if fail_close:
            raise RuntimeError("cannot close")


def test_value_waited_for_and_closed_in_the_thread_that_opened_it():
    log: list = []
    with started_beside(recorded(log, start_s=0.2)) as beside:
        before = time.perf_counter()
        assert beside.wait() == "client" and time.perf_counter() - before > 0.1  # it was still starting
        assert [e for e, _ in log] == ["enter"]
        beside.release()
        for _ in range(100):  # released: it closes while the caller goes on
            if len(log) == 2:
                break
            time.sleep(0.01)
        assert [e for e, _ in log] == ["enter", "exit"]
    assert log[0][1] == log[1][1] != threading.get_ident()


def test_start_failure_reaches_the_waiter_and_close_failure_the_block():
    with pytest.raises(RuntimeError, match="cannot start"):
        with started_beside(recorded([], fail_start=True)) as beside:
            beside.wait()
    with pytest.raises(RuntimeError, match="cannot close"):
        with started_beside(recorded([], fail_close=True)) as beside:
            beside.wait()


def test_a_failing_caller_still_closes_what_was_starting():
    log: list = []
    with pytest.raises(ValueError, match="bad input"):
        with started_beside(recorded(log, start_s=0.2)):
            raise ValueError("bad input")  # before the start-up ended: leaving waits for it, then closes
    assert [e for e, _ in log] == ["enter", "exit"]
