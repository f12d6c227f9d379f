"""DGL binary files indexed instead of loaded: where each array lies in the file, read later by row ranges.

Validation streams a partition piece by piece (`PIECE_ROWS` rows at a time) so that a worker never holds all of a
partition's edge arrays. Indexing is `graphshard.formats.dgl_binary`'s own walk (the same InputErrors for bad magics
or truncated files: it reads every header and the trailer) told to note where arrays lie and seek over their data.
A `graph.dgl` whose edges are not stored as COO in edge-ID order (DGL may save CSC/CSR only) is loaded whole instead.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from graphshard.errors import InputError
from graphshard.formats import dgl_binary as dgb

PIECE_ROWS = 1 << 18  # rows per piece (small pieces keep temporaries in cache); tests set it tiny


@dataclass(frozen=True)
class Column:
    """One array: in a file at `offset` (read by row ranges), or already in memory (`held`)."""

    dtype: np.dtype
    shape: tuple[int, ...]
    path: Path | None = None
    offset: int = 0
    held: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def rows(self) -> int:
        return self.shape[0] if self.shape else 0

    def read(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows [start, stop) as a fresh array (the whole array by default)."""
        stop = self.rows if stop is None else min(stop, self.rows)
        start = min(start, stop)
        if self.held is not None:
            return self.held[start:stop]
        per_row = int(np.prod(self.shape[1:], dtype=np.int64))
        count = (stop - start) * per_row
        with open(self.path, "rb") as f:
            f.seek(self.offset + start * per_row * self.dtype.itemsize)
            out = np.empty(count, dtype=self.dtype)
            if count and f.readinto(memoryview(out.view(np.uint8))) != out.nbytes:
                raise InputError(self.path, None, f"{out.nbytes} data bytes", "end of file (truncated)")
        return out.reshape((stop - start,) + self.shape[1:])


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


def held(arr: np.ndarray) -> Column:
    arr = np.asarray(arr)
    return Column(arr.dtype, arr.shape, held=arr)


def pieces(rows: int, size: int | None = None) -> Iterator[tuple[int, int]]:
    """[start, stop) ranges covering `rows` rows, `size` (default PIECE_ROWS) at a time."""
    size = max(1, size or PIECE_ROWS)
    for start in range(0, rows, size):
        yield start, min(rows, start + size)


def byte_pieces(arr: Column | np.ndarray, scale: int = 1) -> Iterator[tuple[int, int]]:
    """Row ranges of a column (or array) holding about `scale` times as many bytes as PIECE_ROWS int64 values."""
    row_bytes = int(np.prod(arr.shape[1:], dtype=np.int64)) * arr.dtype.itemsize
    return pieces(arr.shape[0] if arr.shape else 0, max(1, scale * PIECE_ROWS * 8 // max(row_bytes, 1)))


def _column(path: Path, at: dgb.ArrayIndex) -> Column:
    return Column(at.dtype, tuple(at.shape), path, at.offset)


def index_tensor_dict(path: str | Path) -> dict[str, Column]:
    """{name: Column} of a DGL tensor-dict file (node_feat.dgl, orig_eids.dgl, ...)."""
    path = Path(path)
    return {name: _column(path, at) for name, at in dgb.index_tensor_dict(path).items()}


@dataclass
class GraphColumns:
    """A homogeneous `graph.dgl` as columns: COO ends in edge-ID order plus node and edge data."""

    num_nodes: int
    src: Column
    dst: Column
    ndata: dict[str, Column]
    edata: dict[str, Column]

    @property
    def num_edges(self) -> int:
        return self.src.rows


def index_graph(path: str | Path) -> GraphColumns:
    """Index a homogeneous `graph.dgl`; loaded whole (as held columns) unless it stores COO in edge-ID order."""
    path = Path(path)
    parts = dgb.index_graph(path)
    coo = parts.sections.get("coo")
    if coo is None or coo[2][2].shape[0] or coo[2][0].dtype != np.int64 or coo[2][1].dtype != np.int64:
        g = dgb.load_graph(path)
        return GraphColumns(g.num_nodes, held(g.src), held(g.dst), {k: held(v) for k, v in g.ndata.items()},
                            {k: held(v) for k, v in g.edata.items()})
    src, dst, _ = coo[2]
    ndata = {k: held(_column(path, at).read()) for k, at in parts.ndata.items()}  # per node: small, read now
    return GraphColumns(parts.num_nodes, _column(path, src), _column(path, dst), ndata,
                        {k: _column(path, at) for k, at in parts.edata.items()})
