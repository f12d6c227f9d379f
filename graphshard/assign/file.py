"""A user's assignment folder, checked (one line per node, ids in range, non-empty partitions) and used as is.

With `num_trainers_per_machine` T > 1 the folder must hold `trainer_ids/<ntype>.txt` (ids in [0, num_parts * T));
its `<ntype>.txt` files must then agree with trainer_id // T.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
from distributed import Client

from graphshard.assign.base import Partitioner
from graphshard.assign.options import AssignOptions
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.assignment import META_FILE, convert_parts, read_meta
from graphshard.formats.chunked import ChunkedGraph


class FilePartitioner(Partitioner):
    name = "file"

    def assign(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path,
               client: Client | None = None) -> dict:
        if options.dir is None:
            raise GraphshardError("method 'file' needs --dir: the folder holding <ntype>.txt and partition_meta.json")
        src = Path(options.dir)
        trainers = options.num_trainers_per_machine
        meta = read_meta(src)
        if meta.num_parts * trainers != nparts:
            raise InputError(src / META_FILE, "num_parts", f"{nparts // trainers} (the --num-parts asked for)",
                             meta.num_parts)
        folder = src / "trainer_ids" if trainers > 1 else src
        empty = {}
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            for nt in graph.node_type:
                ids = np.load(convert_parts(folder, nt, graph.num_nodes(nt), nparts, Path(tmp) / f"{nt}.npy"))
                if trainers > 1:
                    parts = np.load(convert_parts(src, nt, graph.num_nodes(nt), meta.num_parts, Path(tmp) / "p.npy"))
                    bad = np.flatnonzero(parts != ids // trainers)
                    if len(bad):
                        raise InputError(src / f"{nt}.txt", f"line {bad[0] + 1}",
                                         f"trainer_ids/{nt}.txt's trainer id // {trainers} = {ids[bad[0]] // trainers}",
                                         int(parts[bad[0]]))
                empty[nt] = np.flatnonzero(np.bincount(ids, minlength=nparts) == 0).tolist()
                shutil.copyfile(folder / f"{nt}.txt", out / f"{nt}.txt")
        never_used = set(range(nparts)).intersection(*map(set, empty.values()))
        if never_used:
            warnings.warn(f"{folder}: partitions {sorted(never_used)} own no node of any type; their partitions will "
                          "be empty", stacklevel=2)
        return {"source": str(src), "algo_name": meta.algo_name, "empty_partitions": sorted(never_used)}
