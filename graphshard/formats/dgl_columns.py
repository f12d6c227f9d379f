"""DGL binary files indexed instead of loaded: where each array lies in the file, read later by row ranges.

Indexing is `graphshard.formats.dgl_binary`'s own walk (the same InputErrors for bad magics or truncated files: it
reads every header and the trailer) told to note where arrays lie and seek over their data (`graph_columns`,
`tensor_dict_columns`); a `Column` reads rows [start, stop) of one array. A `graph.dgl` whose edges are not stored as
COO in edge-ID order (DGL may save CSC/CSR only) is loaded whole instead. Validation reads partitions this way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphshard.errors import InputError
from graphshard.formats import dgl_binary as dgb
from graphshard.storage import Location, StoredFile


@dataclass(frozen=True)
class Column:
    """One array: in a file at `offset` (read by row ranges), or already in memory (`held`)."""

    dtype: np.dtype
    shape: tuple[int, ...]
    path: StoredFile | None = None
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
        out = np.empty(count, dtype=self.dtype)
        at = self.offset + start * per_row * self.dtype.itemsize
        if count and self.path.read_into(at, memoryview(out.view(np.uint8))) != out.nbytes:
            raise InputError(self.path.shown, None, f"{out.nbytes} data bytes", "end of file (truncated)")
        return out.reshape((stop - start,) + self.shape[1:])


def held(arr: np.ndarray) -> Column:
    arr = np.asarray(arr)
    return Column(arr.dtype, arr.shape, held=arr)



def _column(path: StoredFile, at: dgb.ArrayIndex) -> Column:
    return Column(at.dtype, tuple(at.shape), path, at.offset)


def tensor_dict_columns(path: str | Path | Location | StoredFile) -> dict[str, Column]:
    """{name: Column} of a DGL tensor-dict file (node_feat.dgl, orig_eids.dgl, ...; local or an object read by
    ranges)."""
    path = StoredFile.of(path)
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


def graph_columns(path: str | Path | Location | StoredFile) -> GraphColumns:
    """Index a homogeneous `graph.dgl` (local or an object read by ranges); loaded whole (as held columns) unless it
    stores COO in edge-ID order."""
    path = StoredFile.of(path)
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
