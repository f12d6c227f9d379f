"""DGL binary files indexed instead of loaded: where each array lies in the file, read later by row ranges.

Validation streams a partition piece by piece (`PIECE_ROWS` rows at a time) so that a worker never holds all of a
partition's edge arrays. Indexing walks the same structure as `graphshard.formats.dgl_binary` (and raises the same
InputErrors for bad magics or truncated files, since it reads every header and the trailer) but seeks over the data.
A `graph.dgl` whose edges are not stored as COO in edge-ID order (DGL may save CSC/CSR only) is loaded whole instead.
"""

from __future__ import annotations

import ctypes
import struct
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


def byte_pieces(col: Column) -> Iterator[tuple[int, int]]:
    """Row ranges of a column holding about as many bytes as PIECE_ROWS int64 values."""
    row_bytes = int(np.prod(col.shape[1:], dtype=np.int64)) * col.dtype.itemsize
    return pieces(col.rows, max(1, PIECE_ROWS * 8 // max(row_bytes, 1)))


class _Indexer(dgb._Reader):  # noqa: SLF001 - the same parser, seeking over array data instead of reading it
    def ndarray(self, what: str) -> Column:
        magic, _, device, _, ndim = self.unpack(dgb._NDARRAY_HEAD, what)
        if magic != dgb.NDARRAY_MAGIC:
            raise InputError(self.path, what, f"NDArray magic {dgb.NDARRAY_MAGIC:#x}", f"{magic:#x}")
        code, bits, lanes = self.unpack(dgb._DTYPE, what)
        if device != 1 or code not in dgb._CODE_TO_KIND or lanes != 1 or bits % 8:
            raise InputError(self.path, what, "a CPU array of int, uint or float with 1 lane",
                             f"device {device}, type code {code}, {bits} bits, {lanes} lanes")
        dtype = np.dtype(f"<{dgb._CODE_TO_KIND[code]}{bits // 8}")
        shape = struct.unpack(f"<{ndim}q", self.raw(8 * ndim, what))
        nbytes = self.i64(what)
        if nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise InputError(self.path, what, f"{int(np.prod(shape))} x {dtype.itemsize} data bytes", nbytes)
        col = Column(dtype, tuple(shape), self.path, self.f.tell())
        self.f.seek(nbytes, 1)
        return col


def index_tensor_dict(path: str | Path) -> dict[str, Column]:
    """{name: Column} of a DGL tensor-dict file (node_feat.dgl, orig_eids.dgl, ...)."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as err:
        raise InputError(path, None, "a readable DGL tensor file", err.strerror) from None
    with f:
        r = _Indexer(f, path)
        r.magic(dgb.TENSOR_DICT_MAGIC, "tensor dict header")
        count = r.u64("tensor count")
        tensors = r.named_tensors("tensors")
        if len(tensors) != count:
            raise InputError(path, "tensor count", f"{count} tensors", len(tensors))
        if Path(path).stat().st_size < _end(tensors):
            raise InputError(path, "tensors", "all data bytes", "end of file (truncated)")
        return tensors


def _end(columns: dict[str, Column]) -> int:
    return max((c.offset + c.rows * int(np.prod(c.shape[1:], dtype=np.int64)) * c.dtype.itemsize
                for c in columns.values()), default=0)


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


def _index_sections(r: _Indexer, path: Path) -> dict:
    """The format sections (name -> (rows, cols, columns)) of an opened graph file, up to the node counts."""
    r.magic(dgb.GRAPH_FILE_MAGIC, "file header")
    version, graph_type, num_graphs = r.u64("version"), r.u64("graph type"), r.u64("number of graphs")
    if (version, graph_type, num_graphs) != (dgb.GRAPH_FILE_VERSION, dgb.HETERO_GRAPH_TYPE, 1):
        raise InputError(path, "file header", "version 2 heterograph file with 1 graph",
                         f"version {version}, type {graph_type}, {num_graphs} graphs")
    r.f.seek(dgb.HEADER_SIZE)
    r.f.seek(r.u64("graph data offset"))
    r.magic(dgb.HETEROGRAPH_MAGIC, "heterograph")
    r.metagraph("metagraph")
    if (n_rel := r.u64("relation graphs")) != 1:
        raise InputError(path, "relation graphs", "a homogeneous graph (1 relation)", n_rel)
    r.magic(dgb.UNIT_GRAPH_MAGIC, "unit graph")
    saved = r.i64("saved formats")
    r.i64("allowed formats")
    saved = saved & 0xFFFFFFFF if saved >> 32 else dgb._LEGACY_FORMAT.get(saved, 0)
    sections = {}
    for name, code in dgb.FORMAT_CODES.items():
        if saved & code:
            r.metagraph(f"{name} metagraph")
            magic, flags = (dgb.COO_MAGIC, 2) if name == "coo" else (dgb.CSR_MAGIC, 1)
            sections[name] = r.sparse(magic, name, 3, flags)
    if not sections:
        raise InputError(path, "saved formats", "at least one of coo, csc, csr", saved)
    return sections


def index_graph(path: str | Path) -> GraphColumns:
    """Index a homogeneous `graph.dgl`; loaded whole (as held columns) unless it stores COO in edge-ID order."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as err:
        raise InputError(path, None, "a readable DGL graph file", err.strerror) from None
    with f:
        r = _Indexer(f, path)
        sections = _index_sections(r, path)
        n_types = r.u64("node types")
        nodes_per_type = struct.unpack(f"<{n_types}q", r.raw(8 * n_types, "nodes per type"))
        ndata = [r.named_tensors("node data") for _ in range(r.u64("node data"))]
        edata = [r.named_tensors("edge data") for _ in range(r.u64("edge data"))]
        ntypes, etypes = r.strings("node type names"), r.strings("edge type names")
        r.trailer()
    if len(ntypes) != 1 or len(etypes) != 1:
        raise InputError(path, "types", "a homogeneous graph (1 node type, 1 edge type)", f"{ntypes}, {etypes}")
    coo = sections.get("coo")
    if coo is None or coo[2][2].rows or coo[2][0].dtype != np.int64 or coo[2][1].dtype != np.int64:
        g = dgb.load_graph(path)
        return GraphColumns(g.num_nodes, held(g.src), held(g.dst), {k: held(v) for k, v in g.ndata.items()},
                            {k: held(v) for k, v in g.edata.items()})
    num_rows, _, (src, dst, _) = coo
    ndata_cols = {k: held(c.read()) for k, c in (ndata[0] if ndata else {}).items()}  # per node: small, read now
    return GraphColumns(int(nodes_per_type[0]) if nodes_per_type else num_rows, src, dst, ndata_cols,
                        edata[0] if edata else {})
