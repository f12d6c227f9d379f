"""heap.kept: freed memory stays in the process inside the block (no fresh page faults for the next array) and is
handed back on leaving."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from graphshard.inmemory import heap

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
    with heap.kept(), heap.kept():  # nested: the outer block restores
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
