"""Validation reads a partition piece by piece (`PIECE_ROWS` rows at a time) so that a worker never holds all of its
edge arrays: the pieces' row ranges, their size, and the heap setting that keeps piece temporaries cheap.

The arrays themselves are indexed, not loaded: graphshard.formats.dgl_columns.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import numpy as np

if TYPE_CHECKING:
    from graphshard.formats.dgl_columns import Column

PIECE_ROWS = 1 << 18  # rows per piece (small pieces keep temporaries in cache); tests set it tiny

_M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
_DEFAULT_MMAP_THRESHOLD = 128 << 10


def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


@contextmanager
def heap_for_pieces() -> Iterator[None]:
    """Serve piece-sized temporaries from the heap while a validation task runs.

    Dask starts workers with MALLOC_TRIM_THRESHOLD_ set, which pins glibc's mmap threshold at 128 KiB: every
    temporary of a piece is then a fresh mmap whose pages fault in one by one (measured: 6.6 s of system time in
    11 s of worker CPU on rmat20m). Raised to 16 MiB for the task, then set back and the heap trimmed."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, 16 << 20)
    try:
        yield
    finally:
        if libc is not None:
            libc.mallopt(_M_MMAP_THRESHOLD, _DEFAULT_MMAP_THRESHOLD)
            libc.malloc_trim(0)


def set_piece_rows(rows: int) -> None:
    """Use pieces of `rows` rows in this process (each task sets the size its run decided on the client)."""
    global PIECE_ROWS
    PIECE_ROWS = max(1, int(rows))


def pieces(rows: int, size: int | None = None) -> Iterator[tuple[int, int]]:
    """[start, stop) ranges covering `rows` rows, `size` (default PIECE_ROWS) at a time."""
    size = max(1, size or PIECE_ROWS)
    for start in range(0, rows, size):
        yield start, min(rows, start + size)


def byte_pieces(arr: Column | np.ndarray, scale: int = 1) -> Iterator[tuple[int, int]]:
    """Row ranges of a column (or array) holding about `scale` times as many bytes as PIECE_ROWS int64 values."""
    row_bytes = int(np.prod(arr.shape[1:], dtype=np.int64)) * arr.dtype.itemsize
    return pieces(arr.shape[0] if arr.shape else 0, max(1, scale * PIECE_ROWS * 8 // max(row_bytes, 1)))
