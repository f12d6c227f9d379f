"""Random assignment, streamed per block of nodes (Dask tasks when a client is given).

Each (node type, block) draws from its own generator seeded by (seed, type id, block), so the output does not depend
on the number of workers. `balanced`: node i of a type gets `(i + r) mod k`, shuffled inside its block, with r a
seeded rotation per type; every part then holds floor(N/k) or ceil(N/k) nodes of each type, exactly.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from graphshard.assign.base import Partitioner, write_blocks
from graphshard.assign.options import AssignOptions
from graphshard.daskrun import run_tasks
from graphshard.formats.chunked import ChunkedGraph
from graphshard.storage import location
from graphshard.storage.scratch import ScratchPath, is_store, local_dir, open_file, publish_file, scratch_space

if TYPE_CHECKING:
    from distributed import Client  # type hints only: the plan imports this module's constants without Dask

BLOCK = 1 << 20  # nodes per task; fixed so that results do not depend on the input's chunking


def block_parts(seed: int, type_id: int, block: int, lo: int, hi: int, nparts: int, balanced: bool) -> np.ndarray:
    """Parts of per-type nodes [lo, hi) of one type."""
    rng = np.random.default_rng([seed, type_id, block])
    if not balanced:
        return rng.integers(0, nparts, hi - lo, dtype=np.int64)
    rotation = int(np.random.default_rng([seed, type_id]).integers(nparts))
    return rng.permutation((np.arange(lo, hi, dtype=np.int64) + rotation) % nparts)


def write_block(name: str, seed: int, type_id: int, block: int, lo: int, hi: int, nparts: int, balanced: bool, *,
                pieces_dir: ScratchPath) -> None:
    """One task: draw a block and write it as the text piece `name` of `pieces_dir` (a file of the shared folder or
    an object of the store)."""
    path = pieces_dir / name
    folder = path.parent if isinstance(path, Path) else local_dir()
    folder.mkdir(parents=True, exist_ok=True)
    local = write_blocks(folder / f".{type_id}-{block}-{uuid.uuid4().hex}.tmp",
                         [block_parts(seed, type_id, block, lo, hi, nparts, balanced)])
    publish_file(local, path)


class RandomPartitioner(Partitioner):
    name = "random"

    def assign(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path,
               client: Client | None = None) -> dict:
        where = self.scratch.join("random") if self.scratch is not None else location(out).join(".pieces")
        with scratch_space(where, self.storage, client) as pieces_dir:
            return self._draw(graph, nparts, options, out, client, pieces_dir)

    def _draw(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path, client: Client | None,
              pieces_dir: ScratchPath) -> dict:
        jobs = []
        for t, nt in enumerate(graph.node_type):
            n = graph.num_nodes(nt)
            for b, lo in enumerate(range(0, n, BLOCK)):
                name = f"{t:04d}-{b:08d}.txt"
                jobs.append((nt, (name, options.seed, t, b, lo, min(n, lo + BLOCK), nparts, options.balanced)))
        # on a store the folder carries the Storage: sent once per worker (one S3 client each, not one per task)
        run_tasks(client, "assign", "draw-block", write_block, [args for _, args in jobs],
                  label=lambda args: f"{graph.node_type[args[2]]}/block{args[3]}", star=True,
                  share=("pieces_dir",) if is_store(pieces_dir) else (), pieces_dir=pieces_dir)
        for nt in graph.node_type:
            with open(out / f"{nt}.txt", "wb") as dest:
                for owner, args in jobs:
                    if owner == nt:
                        with open_file(pieces_dir / args[0]) as src:
                            shutil.copyfileobj(src, dest, 1 << 22)
        return {"block_size": BLOCK, "tasks": len(jobs), "dask": client is not None}
