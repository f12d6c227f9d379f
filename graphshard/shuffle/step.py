"""The shuffle step's driver (the flow graphshard/shuffle/__init__.py describes): plan, exchange, write, config."""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np

from graphshard import digests
from graphshard._deprecated import renamed
from graphshard.atomic import staged_output
from graphshard.daskrun import run_tasks
from graphshard.errors import InputError
from graphshard.formats.assignment import read_meta
from graphshard.formats.chunked import load_metadata
from graphshard.formats.set_digests import write_set_digests
from graphshard.shuffle.exchange import count_assignment, route_edge_chunk, route_node_block
from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.options import ShuffleOptions
from graphshard.shuffle.plan import feature_index, feature_keys, make_plan
from graphshard.shuffle.scratch import ShuffleScratch
from graphshard.shuffle.write import write_config, write_partition
from graphshard.storage import location
from graphshard.storage.scratch import create_array, scratch_space

if TYPE_CHECKING:
    from distributed import Client


def _run(client: Client, what: str, fn: Callable, items: list[tuple], label: Callable[[tuple], str],
         detail: Callable[[tuple], str] | None = None, **constants) -> list:
    """fn(*item, **constants) per item as named Dask tasks of the shuffle step."""
    return run_tasks(client, "shuffle", what, fn, items, label=label, detail=detail, star=True, **constants)


@contextmanager
def _scratch(options: ShuffleOptions, stage: Path, client: Client | None) -> Iterator[ShuffleScratch]:
    """A fresh scratch (inside `options.scratch_dir`, a folder or a store prefix, else inside the staging folder),
    deleted afterwards."""
    where = options.scratch_dir if options.scratch_dir is not None else stage / ".scratch"
    if options.scratch_dir is not None and location(where).is_local:
        Path(where).mkdir(parents=True, exist_ok=True)
        where = tempfile.mkdtemp(prefix="graphshard-shuffle-", dir=where)
    with scratch_space(where, None, client) as root:
        yield ShuffleScratch(root).make()


def shuffle(metadata: str | Path, assignment_dir: str | Path, out_dir: str | Path,
            options: ShuffleOptions | None, client: Client, overwrite: bool = False) -> Path:
    """Partition a chunked graph by an assignment folder into `out_dir`: DGL's partition files (step 2 of the pipeline).

    Parameters
    ----------
    metadata : str or Path
        The chunked graph's metadata.json (or its folder).
    assignment_dir : str or Path
        An assignment folder (`<ntype>.txt` + `partition_meta.json`), e.g. what `assign` wrote.
    out_dir : str or Path
        The partition set's folder (created complete, or not at all).
    options : ShuffleOptions or None
        Halo, original-ID files, graph formats, scratch folder; None: the defaults.
    client : distributed.Client or None
        The cluster the exchange and the writes run on; None runs them here.
    overwrite : bool
        Replace an existing `out_dir`.

    Returns
    -------
    Path
        The partition config, `<out_dir>/<graph_name>.json`.
    """
    options = options or ShuffleOptions()
    graph = load_metadata(metadata)
    assignment_dir = Path(assignment_dir).resolve()
    if not assignment_dir.is_dir():
        raise InputError(assignment_dir, None, "an assignment folder (<ntype>.txt files + partition_meta.json)",
                         "no such folder")
    meta = read_meta(assignment_dir)
    out_dir = Path(out_dir).resolve()
    with staged_output(out_dir, overwrite) as stage, _scratch(options, stage, client) as scratch:
        _shuffle_and_write(graph, assignment_dir, meta.num_parts, meta.algo_name, options, client, scratch, stage)
    return out_dir / f"{graph.graph_name}.json"


def _shuffle_and_write(graph, assignment_dir: Path, num_parts: int, part_method: str, options: ShuffleOptions,
                       client: Client, scratch: ShuffleScratch, stage: Path) -> Path:
    base = make_plan(graph, scratch, num_parts, options, None)
    counts = _run(client, "convert-assignment", count_assignment, [(t,) for t in range(base.num_ntypes)],
                  lambda it: graph.node_type[it[0]], plan=base, assignment_dir=assignment_dir)
    keys = feature_keys(graph)
    found = _run(client, "index-feature-rows", feature_index, keys, lambda k: f"{k[1]}/{k[2]}", graph=graph)
    plan = make_plan(graph, scratch, num_parts, options, dict(zip([k[:3] for k in keys], found)))
    nodes = IdSpace.of(counts)

    for t, ntype in enumerate(graph.node_type):
        create_array(scratch.idmap(t), (graph.num_nodes(ntype),), plan.id_dtype)
    blocks = [(t, b) for t in range(plan.num_ntypes) for b in range(plan.num_blocks(t))]
    _run(client, "route-node-blocks", route_node_block, [(t, b, nodes.block_bases(t)[b]) for t, b in blocks],
         lambda it: f"{graph.node_type[it[0]]}/block{it[1]}", plan=plan)

    chunks = [(et, c) for et in range(plan.num_etypes) for c in range(plan.num_chunks(et))]
    sent = _run(client, "route-edge-chunks", route_edge_chunk, chunks,
                lambda it: f"{graph.edge_type[it[0]]}/chunk{it[1]}", plan=plan)
    edges = IdSpace.of([np.stack([sent[i] for i, (e, _) in enumerate(chunks) if e == et]).reshape(-1, num_parts)
                        for et in range(plan.num_etypes)])

    owned = [np.diff(nodes.part_starts()), np.diff(edges.part_starts())]
    written = _run(client, "write-partitions", write_partition, [(p,) for p in range(num_parts)],
                   lambda it: f"part{it[0]}",
                   lambda it: f"{owned[0][it[0]]:,} owned nodes, {owned[1][it[0]]:,} owned edges",
                   plan=plan, nodes=nodes, edges=edges, out_dir=stage)
    digests.remember(d for files in written for d in files)  # a cache manifest of the set need not re-read them
    write_set_digests(stage, graph.graph_name, written)  # <graph_name>.digests.json: what `graphshard fetch` checks
    return write_config(plan, nodes, edges, part_method, stage)


__getattr__ = renamed(__name__, {"dispatch": "graphshard.shuffle.step:shuffle"})
