"""taskheap.raised: inside the block a task's temporaries below the threshold come from the heap instead of a fresh
mapping each (Dask's workers pin glibc's mmap threshold at 128 KiB); outside, the pinned threshold is back."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="glibc's malloc only")

PROBE = """
import numpy as np
from graphshard import taskheap
def region(a):
    at = a.ctypes.data
    for line in open("/proc/self/maps"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if lo <= at < hi:
            return line.split()[5] if len(line.split()) > 5 else "anonymous"
before = region(np.ones(1 << 17))  # 1 MiB
with taskheap.raised(16 << 20):
    inside = region(np.ones(1 << 17))
after = region(np.ones(1 << 17))
print(before, inside, after)
"""


def test_temporaries_come_from_the_heap_inside_only():
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}  # as Dask starts its workers
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["anonymous", "[heap]", "anonymous"]
