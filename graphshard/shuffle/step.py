"""The shuffle step's driver (the flow graphshard/shuffle/__init__.py describes): plan, exchange, write, config."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np

from graphshard import digests
from graphshard._deprecated import renamed
from graphshard.atomic import staged_output
from graphshard.daskrun import run_tasks
from graphshard.digests import FileDigest
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.assignment import META_FILE, AssignmentMeta, read_meta
from graphshard.formats.chunked import ChunkedGraph, load_metadata
from graphshard.formats.overwrite import check_replaceable
from graphshard.formats.set_digests import in_set, write_set_digests
from graphshard.shuffle.exchange import count_assignment, route_edge_chunk, route_node_block
from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.options import ShuffleOptions
from graphshard.shuffle.plan import ShufflePlan, feature_index, feature_keys, make_plan
from graphshard.shuffle.scratch import ShuffleScratch
from graphshard.shuffle.write import write_config, write_partition
from graphshard.storage import Location, Storage, location
from graphshard.storage.scratch import create_array, is_store, scratch_space

if TYPE_CHECKING:
    from distributed import Client


def _run(client: Client, what: str, fn: Callable, items: list[tuple], label: Callable[[tuple], str],
         detail: Callable[[tuple], str] | None = None, *, remote: bool = False, **constants) -> list:
    """fn(*item, **constants) per item as named Dask tasks of the shuffle step. `remote`: the step reads or writes a
    store, so the constants that carry its `Storage` (`_CARRIERS`) go once to each worker (`daskrun.submit_tasks`
    `share`: one S3 client per worker and task group, not one per task); a local step's tasks are sent as before."""
    share = tuple(name for name in _CARRIERS if name in constants) if remote else ()
    return run_tasks(client, "shuffle", what, fn, items, label=label, detail=detail, star=True, share=share,
                     **constants)


_CARRIERS = ("plan", "graph")  # task constants holding the graph's Storage (the plan holds the graph and scratch)


def _on_store(graph: ChunkedGraph, scratch: ShuffleScratch, *where: Location) -> bool:
    """Whether any location the shuffle's tasks read or write is on a store (not a local or shared folder)."""
    return not graph.is_local or is_store(scratch.root) or any(not loc.is_local for loc in where)


@contextmanager
def _scratch(options: ShuffleOptions, beside: Location, storage: Storage, client: Client | None
             ) -> Iterator[ShuffleScratch]:
    """A fresh scratch, deleted afterwards: inside `options.scratch_dir` (a folder every worker sees, or a store
    prefix), else `beside` (a staging folder's `.scratch`, or for a set written to a store a prefix beside it on the
    same store: never a folder of this host that the workers may not see)."""
    where = options.scratch_dir
    with scratch_space(where if where is not None else beside, storage, client, fresh=where is not None) as root:
        yield ShuffleScratch(root).make()


def shuffle(metadata: str | Path | Location, assignment_dir: str | Path | Location, out_dir: str | Path | Location,
            options: ShuffleOptions | None, client: Client, overwrite: bool = False, *,
            storage: Storage | None = None) -> Path | Location:
    """Partition a chunked graph by an assignment folder into `out_dir`: DGL's partition files (step 2 of the pipeline).

    Parameters
    ----------
    metadata : str, Path or Location
        The chunked graph's metadata.json (or its folder): a path or a URL (workers read the chunks from the store).
    assignment_dir : str, Path or Location
        An assignment folder (`<ntype>.txt` + `partition_meta.json`), e.g. what `assign` wrote; a path or a URL.
    out_dir : str, Path or Location
        The partition set's folder (created complete, or not at all). A URL: the workers write the files to the
        store themselves (`write_set`), the config last.
    options : ShuffleOptions or None
        Halo, original-ID files, graph formats, scratch folder; None: the defaults.
    client : distributed.Client or None
        The cluster the exchange and the writes run on; None runs them here.
    overwrite : bool
        Replace an existing `out_dir` (on a store: its objects are deleted first, so the set is not atomic there;
        the pipeline publishes under a run-unique prefix instead).
    storage : Storage, optional
        What locations given as URLs are read and written through; None: credentials from the environment.

    Returns
    -------
    Path or Location
        The partition config, `<out_dir>/<graph_name>.json` (a Location when `out_dir` is a URL).
    """
    options = options or ShuffleOptions()
    graph = load_metadata(metadata, storage)
    assignment = _assignment_folder(assignment_dir, graph.storage)
    meta = read_meta(assignment, graph.storage)
    out = location(out_dir)
    if overwrite:
        check_replaceable(out, graph.storage, in_set(out, graph.storage), "a partition set")
    if not out.is_local:
        if graph.storage.listing(out):
            if not overwrite:
                raise GraphshardError(f"{out}: output folder exists (pass --overwrite to replace it)")
            graph.storage.delete_prefix(out)
        return write_set(graph, assignment, out, options, client, meta)[0]
    with staged_output(Path(out.path), overwrite) as stage, \
            _scratch(options, location(stage).join(".scratch"), graph.storage, client) as scratch:
        _shuffle_and_write(graph, assignment, meta, options, client, scratch, location(stage))
    return Path(out.path) / f"{graph.graph_name}.json"


def _assignment_folder(where: str | Path | Location, storage: Storage) -> Location:
    """An assignment folder's location; InputError when it holds no partition_meta.json (local: no folder)."""
    loc = location(where)
    found = Path(loc.path).is_dir() if loc.is_local else storage.exists(loc.join(META_FILE))
    if not found:
        raise InputError(loc, None,
                         "an assignment folder (<ntype>.txt files + partition_meta.json)", "no such folder")
    return loc


def write_set(graph: ChunkedGraph, assignment: Location, out: Location, options: ShuffleOptions, client: Client,
              meta: AssignmentMeta | None = None) -> tuple[Path | Location, list[list[FileDigest]]]:
    """The shuffle's files written under `out` (a folder or a URL prefix, as given: no staging, no rename), the
    digests file and then the partition config last; returns the config and every partition's `FileDigest`s.

    What `shuffle` runs for a URL, and what a publisher that picks its own prefix (a run-unique one) calls. The
    scratch is `options.scratch_dir`, else a fresh prefix beside `out` (`.<name>.scratch`), on its store."""
    meta = meta or read_meta(assignment, graph.storage)
    with _scratch(options, out.parent.join(f".{out.name}.scratch"), graph.storage, client) as scratch:
        return _shuffle_and_write(graph, assignment, meta, options, client, scratch, out)


def route(graph: ChunkedGraph, assignment_dir: Location, num_parts: int, options: ShuffleOptions, client: Client,
          scratch: ShuffleScratch, remote: bool = False, trainers: int = 1) -> tuple[ShufflePlan, IdSpace, IdSpace]:
    """The exchange: the binary assignment, the ID maps, node and edge buckets in `scratch`; returns the plan and the
    new-ID layouts of nodes and edges (what each partition's write task needs). `trainers` > 1: the assignment's
    trainer ids travel with the nodes and edges, for DGL's `trainer_id` features."""
    base = make_plan(graph, scratch, num_parts, options, None, trainers)
    counts = _run(client, "convert-assignment", count_assignment, [(t,) for t in range(base.num_ntypes)],
                  lambda it: graph.node_type[it[0]], remote=remote, plan=base,
                  assignment_dir=assignment_dir)
    keys = feature_keys(graph)
    found = _run(client, "index-feature-rows", feature_index, keys, lambda k: f"{k[1]}/{k[2]}", remote=remote,
                 graph=graph)
    plan = make_plan(graph, scratch, num_parts, options, dict(zip([k[:3] for k in keys], found)), trainers)
    nodes = IdSpace.of(counts)

    for t, ntype in enumerate(graph.node_type):
        create_array(scratch.idmap(t), (graph.num_nodes(ntype),), plan.id_dtype)
    blocks = [(t, b) for t in range(plan.num_ntypes) for b in range(plan.num_blocks(t))]
    _run(client, "route-node-blocks", route_node_block, [(t, b, nodes.block_bases(t)[b]) for t, b in blocks],
         lambda it: f"{graph.node_type[it[0]]}/block{it[1]}", remote=remote, plan=plan)

    chunks = [(et, c) for et in range(plan.num_etypes) for c in range(plan.num_chunks(et))]
    sent = _run(client, "route-edge-chunks", route_edge_chunk, chunks,
                lambda it: f"{graph.edge_type[it[0]]}/chunk{it[1]}", remote=remote, plan=plan)
    edges = IdSpace.of([np.stack([sent[i] for i, (e, _) in enumerate(chunks) if e == et]).reshape(-1, num_parts)
                        for et in range(plan.num_etypes)])
    return plan, nodes, edges


def _shuffle_and_write(graph, assignment_dir: Location, meta: AssignmentMeta, options: ShuffleOptions,
                       client: Client, scratch: ShuffleScratch, stage: Location
                       ) -> tuple[Path | Location, list[list[FileDigest]]]:
    remote = _on_store(graph, scratch, assignment_dir, stage)
    num_parts = meta.num_parts
    plan, nodes, edges = route(graph, assignment_dir, num_parts, options, client, scratch, remote,
                               meta.num_trainers_per_machine)
    owned = [np.diff(nodes.part_starts()), np.diff(edges.part_starts())]
    written = _run(client, "write-partitions", write_partition, [(p,) for p in range(num_parts)],
                   lambda it: f"part{it[0]}",
                   lambda it: f"{owned[0][it[0]]:,} owned nodes, {owned[1][it[0]]:,} owned edges",
                   remote=remote, plan=plan, nodes=nodes, edges=edges, out_dir=stage)
    digests.remember(d for files in written for d in files)  # a cache manifest of the set need not re-read them
    # <graph_name>.digests.json: what `graphshard fetch` checks
    write_set_digests(stage, graph.graph_name, written, graph.storage)
    return write_config(plan, nodes, edges, meta.algo_name, stage), written


__getattr__ = renamed(__name__, {"dispatch": "graphshard.shuffle.step:shuffle"})
