"""How the benchmarks time work and take its peak memory, in one place.

* `run`: a command as a new process; its wall time and the largest peak RSS (/proc VmHWM) among it and its
  descendants (Dask workers, MPI ranks), the process tree polled every 0.1 s.
* `RssSampler`: for work timed inside this process (e.g. on a running Dask cluster), the peak RSS of given pids (or
  of this process's tree, and of that tree's summed RSS), sampled in a background thread.
* `on_workers`: a call timed in this process with every Dask worker's RSS sampled so.
* `own_peak`: this process's own peak RSS; `machine`: the date and machine size a result line records.
Only the standard library and psutil, so that the DGL venv can import it too.
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

import psutil


def own_peak() -> int:
    """Peak resident set size of the calling process in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def machine() -> dict:
    """Today's date, the core count and the RAM in GiB: the context every JSON result line carries."""
    return {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
            "ram_gib": round(psutil.virtual_memory().total / 2**30, 1)}


def hwm(pid: int) -> int:
    """A process's peak resident set size so far (/proc VmHWM, bytes); 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


def tree(pid: int) -> list[psutil.Process]:
    """A process and all its descendants (empty if it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


class _Poll:
    """Calls `sample` at once and then every `period` seconds in a daemon thread, until the context closes."""

    def __init__(self, sample: Callable[[], None], period: float):
        self.sample, self.period, self._stop = sample, period, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.period):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Run:
    """One measured command: exit code, wall seconds, largest peak RSS in its tree (bytes), captured output."""

    returncode: int
    wall: float
    peak: int
    stdout: str | bytes | None
    stderr: str | bytes | None


def run(cmd: list[str], period: float = 0.1, check: bool = False, **popen) -> Run:
    """Run a command to completion (keyword arguments go to subprocess.Popen: env, cwd, stdout=PIPE, text...);
    with `check`, a non-zero exit stops the benchmark with the command and the end of its captured stderr."""
    peaks: dict[int, int] = {}
    reaped_before = _reaped_peak()
    start = time.perf_counter()
    with subprocess.Popen(cmd, **popen) as proc:

        def sample() -> None:
            for p in tree(proc.pid):
                peaks[p.pid] = max(peaks.get(p.pid, 0), hwm(p.pid))

        with _Poll(sample, period):
            out, err = proc.communicate()
            wall = time.perf_counter() - start
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{str(err or '')[-3000:]}")
    # the kernel's exact peak of the reaped tree, when this command set a new high (polls can miss a short spike)
    exact = _reaped_peak() if _reaped_peak() > reaped_before else 0
    return Run(proc.returncode, wall, max(exact, *peaks.values(), 0), out, err)


def _reaped_peak() -> int:
    """The largest peak RSS (bytes) of any process this one (or a reaped descendant) has waited for."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


class RssSampler(_Poll):
    """Peak RSS per pid of the given processes (or of `tree_of`'s tree, re-listed each sample), and the peak of their
    summed RSS, sampled every `period` seconds while the context is open."""

    def __init__(self, pids: Iterable[int] = (), tree_of: int | None = None, period: float = 0.05):
        super().__init__(self._sample, period)
        self.procs = {pid: psutil.Process(pid) for pid in pids}
        self.tree_of, self.peak, self.total = tree_of, {pid: 0 for pid in pids}, 0

    def _sample(self) -> None:
        """One reading of every process's RSS."""
        procs = tree(self.tree_of) if self.tree_of is not None else self.procs.values()
        total = 0
        for proc in procs:
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                continue
            self.peak[proc.pid], total = max(self.peak.get(proc.pid, 0), rss), total + rss
        self.total = max(self.total, total)

    def peaks(self) -> list[int]:
        """The per-process peaks, largest first."""
        return sorted(self.peak.values(), reverse=True)


def on_workers(client, fn: Callable, /, *args, **kwargs) -> tuple[object, float, list[int]]:
    """Call fn here with a Dask client's workers sampled: (its result, wall seconds, worker peaks largest first)."""
    pids = list(client.run(os.getpid).values())
    with RssSampler(pids) as sampler:
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        seconds = time.perf_counter() - start
    return result, seconds, sampler.peaks()
