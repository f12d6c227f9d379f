"""The partitioner interface: one subclass per method, each writing `<ntype>.txt` files with ids in [0, nparts)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from graphshard.assign.options import AssignOptions
from graphshard.formats.arrow import numpy_table
from graphshard.formats.chunked import ChunkedGraph
from graphshard.storage import Location, Storage

if TYPE_CHECKING:
    from distributed import Client  # type hints only: the plan imports this module's constants without Dask

TEXT_BLOCK = 1 << 22  # rows per block when streaming an assignment file


class Partitioner:
    """Decides each node's part. Which options a method reads is data (`options.HONOURS`), checked by
    `options.resolve` before any work; `check` refuses what only the graph shows (e.g. more parts than nodes)."""

    name: str = ""
    # Where a method whose Dask tasks hand files to each other keeps them: None, inside `out` (a folder every worker
    # sees); else a location, a store prefix when the workers share no filesystem (set by `assign`).
    scratch: Location | None = None
    storage: Storage | None = None

    def check(self, graph: ChunkedGraph, nparts: int, options: AssignOptions) -> None:
        """Raise GraphshardError for options this graph makes impossible; nothing by default."""

    def assign(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path,
               client: Client | None = None) -> dict:
        """Write `out/<ntype>.txt` for every node type; return facts for the report (timings, objective, ...)."""
        raise NotImplementedError


def write_blocks(path: Path, blocks: Iterable[np.ndarray]) -> Path:
    """Stream integer blocks into one text file, one value per line (the `<ntype>.txt` format)."""
    schema = pa.schema([("p", pa.int64())])
    with pacsv.CSVWriter(str(path), schema, write_options=pacsv.WriteOptions(include_header=False)) as writer:
        for block in blocks:
            writer.write_table(numpy_table([np.asarray(block, dtype=np.int64)], ["p"]))
    return path


def write_homogeneous(graph: ChunkedGraph, parts: np.ndarray, out: Path) -> None:
    """Split a type-major homogeneous part array into one `<ntype>.txt` per node type."""
    off = graph.type_node_offsets
    for t, nt in enumerate(graph.node_type):
        seg = parts[off[t]:off[t + 1]]
        write_blocks(out / f"{nt}.txt", (seg[i:i + TEXT_BLOCK] for i in range(0, len(seg), TEXT_BLOCK)))
