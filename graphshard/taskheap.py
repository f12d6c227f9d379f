"""A task's temporaries served from the heap (glibc's malloc only; elsewhere nothing changes).

Dask starts its workers with MALLOC_TRIM_THRESHOLD_ set, which pins glibc's mmap threshold at 128 KiB: every larger
temporary is then a fresh mapping whose pages fault in one by one (validation on R-MAT 20M: 6.6 s of system time in
11 s of worker CPU; the multilevel rounds there: two workers faulting at once ran their clustering 1.3-1.65x slower
than one). `raised(threshold)` serves allocations below `threshold` from the heap for the block, then sets the
threshold back and trims the heap. The trim threshold is left as it is, so freed memory at the heap's top still goes
back at once and the task's peak stays what its live arrays need.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Iterator

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
PINNED = 128 << 10  # the mmap threshold where MALLOC_TRIM_THRESHOLD_ is set (Dask's workers)


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


@contextmanager
def raised(threshold: int) -> Iterator[None]:
    """Allocations below `threshold` bytes come from the heap inside the block; then 128 KiB again and a trim."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, threshold)
    try:
        yield
    finally:
        if libc is not None:
            libc.mallopt(M_MMAP_THRESHOLD, PINNED)
            libc.malloc_trim(0)
