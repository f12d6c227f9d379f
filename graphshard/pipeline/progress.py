"""Per-step progress of the Dask work a library function submits (it does not hand its futures out).

A scheduler plugin counts, per client, the tasks submitted and finished; the flow polls those two numbers while a
step runs and passes them to sinks (a terminal bar here, a Prefect progress artifact in graphshard.pipeline.steps). This
module does not import Prefect: the scheduler imports it to unpickle the plugin.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import Counter
from typing import Callable, TextIO

from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin

from graphshard.daskrun import describe_key

NAME = "graphshard-progress"
Sink = Callable[[int, int, str], None]  # (done, submitted, what a running task does to which chunk or partition)
log = logging.getLogger(__name__)


class TaskCounter(SchedulerPlugin):
    """Counts tasks submitted and finished (in memory or erred), and the key that last started, per client id."""

    name = NAME

    def __init__(self) -> None:
        self.submitted: Counter[str] = Counter()
        self.finished: Counter[str] = Counter()
        self.owner: dict = {}
        self.doing: dict[str, str] = {}

    def update_graph(self, scheduler, *, client: str, tasks: list, **kwargs) -> None:
        for key in tasks:  # `tasks` also lists known dependencies; count each new computation once
            ts = scheduler.tasks.get(key)
            if key not in self.owner and ts is not None and ts.run_spec is not None:
                self.owner[key] = client
                self.submitted[client] += 1

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if finish == "processing" and key in self.owner:
            self.doing[self.owner[key]] = str(key)
        elif finish in ("memory", "erred") and start in ("processing", "waiting", "queued"):
            client = self.owner.get(key)
            if client is not None:
                self.finished[client] += 1
        elif finish == "forgotten":
            self.owner.pop(key, None)


def _counts(dask_scheduler, client_id: str) -> tuple[int, int, str]:
    plugin = dask_scheduler.plugins.get(NAME)
    if plugin is None:
        return 0, 0, ""
    return plugin.finished[client_id], plugin.submitted[client_id], plugin.doing.get(client_id, "")


def _installed(dask_scheduler) -> bool:
    return NAME in dask_scheduler.plugins


def install(client: Client) -> bool:
    """Register the counter on the scheduler once (it counts per client, so runs can share it); False (progress
    off, logged) if the scheduler cannot load it."""
    try:
        if not client.run_on_scheduler(_installed):
            client.register_plugin(TaskCounter(), name=NAME)
    except Exception as err:  # a scheduler without graphshard installed cannot unpickle the plugin
        log.warning("task progress unavailable: the scheduler could not load %s (%s)", NAME, err)
        return False
    return True


class StepProgress:
    """While active, polls this client's task counts every `interval` s and feeds the step's share to `sinks`."""

    def __init__(self, client: Client, sinks: list[Sink], interval: float = 0.5):
        self.client, self.sinks, self.interval = client, sinks, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="graphshard-progress", daemon=True)
        self._base = (0, 0, "")
        self.last = (0, 0)

    def _read(self) -> tuple[int, int, str]:
        return tuple(self.client.run_on_scheduler(_counts, client_id=self.client.id))

    def _emit(self) -> None:
        done, submitted, key = self._read()
        self.last = (done - self._base[0], submitted - self._base[1])
        doing = describe_key(key) if key != self._base[2] else ""
        for sink in self.sinks:
            sink(*self.last, doing)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._emit()
            except Exception as err:  # progress must never break a step
                log.debug("progress poll failed: %s", err)

    def __enter__(self) -> "StepProgress":
        try:
            self._base = self._read()
        except Exception as err:
            log.debug("progress unavailable: %s", err)
            return self
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
            try:
                self._emit()
            except Exception as err:
                log.debug("final progress poll failed: %s", err)
        for sink in self.sinks:
            if hasattr(sink, "close"):
                sink.close(failed=exc[0] is not None)


class TerminalBar:
    """A one-line progress bar on a terminal (redrawn in place); on a pipe, a line every `every` seconds."""

    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30, every: float = 10.0):
        self.label, self.width, self.every = label, width, every
        self.stream = stream or sys.stderr or sys.__stderr__
        self.tty = self.stream.isatty()
        self._last_print = 0.0
        self._last = (-1, -1)
        self._width = 0  # of the line drawn last, blanked when a shorter one replaces it

    def __call__(self, done: int, submitted: int, doing: str = "") -> None:
        if (done, submitted) == self._last or not submitted:  # no bar of "0/0": a step with no Dask work yet
            return
        self._last = (done, submitted)
        frac = done / submitted if submitted else 0.0
        filled = int(frac * self.width)
        line = f"{self.label:<9} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{submitted} dask tasks"
        line += f": {doing}" if doing and done < submitted else ""
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + line.ljust(self._width))
            self._width = len(line)
        elif now - self._last_print >= self.every or (done == submitted and submitted):
            self.stream.write(line + "\n")
            self._last_print = now
        self.stream.flush()

    def close(self, failed: bool = False) -> None:
        """End the redrawn line (called when the step ends, whether it finished or `failed`)."""
        if self.tty and self._last != (-1, -1):
            self.stream.write("\n")
            self.stream.flush()
