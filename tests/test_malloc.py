"""malloc.kept: freed memory stays in the process inside the block (no fresh page faults for the next array) and is
handed back on leaving."""

from __future__ import annotations

import os
import platform

import numpy as np
import pytest

from graphshard import malloc

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="glibc's malloc only")
MIB = 1 << 20


def rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def filled(mib: int) -> np.ndarray:
    a = np.empty(mib * MIB, dtype=np.uint8)
    a[:] = 1  # touch every page
    return a


def test_freed_arrays_stay_inside_and_go_back_after():
    before = rss()
    with malloc.kept(), malloc.kept():  # nested: the outer block restores
        a = filled(200)
        del a
        kept_rss = rss()
        b = filled(200)  # served from the heap the first array left
        assert rss() - kept_rss < 20 * MIB
        del b
    assert kept_rss - before > 150 * MIB  # the first array's pages were kept after its free
    assert rss() - before < 50 * MIB  # and handed back on leaving
    c = filled(200)
    del c
    assert rss() - before < 50 * MIB  # outside, a large array is unmapped on free again



AFTER_KEPT = """
import numpy as np
from graphshard import malloc
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
with malloc.kept():
    pass
before = rss()
parts = [np.ones(1 << 17) for _ in range(48)]  # 48 x 1 MiB, each above 128 KiB, together under 64 MiB
del parts
print(rss() - before)
"""


def test_a_dask_workers_thresholds_come_back():
    """Where the environment fixed the thresholds (Dask starts its workers with MALLOC_TRIM_THRESHOLD_), leaving puts
    them back: the worker's later tasks hand freed memory back at once, as before (with glibc's ceilings left
    behind, 48 MiB of freed 1 MiB arrays stay in the process)."""
    import subprocess
    import sys

    def kept_after(env: dict) -> int:
        out = subprocess.run([sys.executable, "-c", AFTER_KEPT], env={**os.environ, **env}, capture_output=True,
                             text=True, check=True)
        return int(out.stdout.split()[-1])

    assert kept_after({"MALLOC_TRIM_THRESHOLD_": "65536"}) < 8 * MIB
    assert kept_after({}) > 32 * MIB  # glibc's ceilings: the freed arrays stay (what a worker must not be left with)
