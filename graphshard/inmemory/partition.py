"""`partition_graph`: DGL 2.1's `dgl.distributed.partition_graph` on an in-memory graph, by graphshard's steps.

The graph is written once as numpy chunks in a work folder beside `out_path` (in the system's temporary folder when
`out_path` is a URL: the graph is in this process's memory anyway), then the CLI's own steps run on Dask
(`assign.assign`, `shuffle.shuffle`, optionally `validate.validate`); the partition set is published to `out_path`
only when complete (on a store: `atomic.publish_on_store`, its files under a prefix named after the set's digests,
the config last). DGL's arguments keep their meanings (see `_assign_options`); the returned mapping is DGL's:
`orig_nids[new per-type ID] = original per-type ID` (and the same for edges).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
import warnings
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import xxhash
from pydantic import ValidationError

from graphshard.assign import PARTITIONERS, REPORT_FILE, assign
from graphshard.assign.constraints import FEATURE_RADIX
from graphshard.assign.options import HONOURS, AssignOptions
from graphshard.atomic import move_into_place, publish_on_store, remove_stale, staging_dir
from graphshard.cluster import ClusterSpec, dask_client
from graphshard.errors import GraphshardError
from graphshard.formats.assignment import TRAINER_FEAT, read_parts
from graphshard.formats.partition_config import PartitionConfig
from graphshard.formats.set_digests import digests_name, foreign_entries, unprefixed_set
from graphshard.inmemory import heap
from graphshard.inmemory.adapters import InMemoryGraph, as_numpy, from_input
from graphshard.inmemory.background import started_beside
from graphshard.inmemory.chunks import add_features, safe_graph_name, write_chunked
from graphshard.shuffle import ShuffleOptions, shuffle
from graphshard.shuffle.graphbolt import GraphboltOptions, options_from_kwargs, to_graphbolt
from graphshard.shuffle.ids import Grouping
from graphshard.storage import Location, Storage, check_location, location
from graphshard.validate.report_html import REPORT_CLASH, REPORT_FILES, report_clash

log = logging.getLogger(__name__)
BALANCE_FEAT = "__graphshard_balance"  # a work-folder-only node feature holding DGL's balance_ntypes classes
IN_CALLER = frozenset({"random", "metis", "kaminpar"})  # methods whose assignment needs no cluster
RUN_HERE = frozenset({"random"})  # methods whose every step runs in the caller when no client is given
DGL_METIS_NITER = 1  # DGL's partition_graph runs METIS with METIS_OPTION_NITER = 1 (metis_partition_hetero.cc)


class Phases:
    """Wall seconds per phase of one call, logged at its end (the record's `phases`; bench/api.py reports them)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.since(name, start)

    def since(self, name: str, start: float) -> None:
        """Record phase `name` as ending now, begun at `start` (a `time.perf_counter()` value)."""
        self.seconds[name] = round(time.perf_counter() - start, 2)


def part_methods() -> list[str]:
    """The `part_method` values: DGL's random and metis plus graphshard's other in-memory methods."""
    return [m for m in PARTITIONERS if m != "file"]


def _balance_classes(graph: InMemoryGraph, balance_ntypes: Any) -> dict[str, dict[str, np.ndarray]]:
    """DGL's `balance_ntypes` (one class array, or {ntype: class array}) as per-type node features."""
    if not isinstance(balance_ntypes, dict):
        if len(graph.ntypes) != 1:
            raise GraphshardError(f"balance_ntypes: expected a dict {{ntype: class array}} for a graph with node "
                                  f"types {graph.ntypes}, found {type(balance_ntypes).__name__}")
        balance_ntypes = {graph.ntypes[0]: balance_ntypes}
    out = {}
    for nt, arr in balance_ntypes.items():
        if nt not in graph.num_nodes:
            raise GraphshardError(f"balance_ntypes: expected keys among the node types {graph.ntypes}, found {nt!r}")
        arr = as_numpy(arr, f"balance_ntypes[{nt!r}]")
        if arr.shape != (graph.num_nodes[nt],) or arr.dtype.kind not in "biu":
            raise GraphshardError(f"balance_ntypes[{nt!r}]: expected {graph.num_nodes[nt]} integer or bool class "
                                  f"labels (one per node), found shape {arr.shape} dtype {arr.dtype}")
        if len(arr) and arr.dtype.kind != "b" and (arr.min() < 0 or arr.max() >= FEATURE_RADIX):
            arr = np.unique(arr, return_inverse=True)[1].reshape(-1)  # DGL's classes are labels: only equality counts
        out[nt] = {BALANCE_FEAT: arr}
    return out


def _assign_options(graph: InMemoryGraph, part_method: str, num_parts: int, balance_ntypes: Any, balance_edges: bool,
                    num_trainers_per_machine: int, objtype: str, seed: int) -> tuple[AssignOptions, dict]:
    """AssignOptions with DGL's meanings, and the balance classes to write as node features.

    As in DGL: `random` ignores the balance and trainer arguments, except with one partition and several trainers,
    where DGL splits the graph among the trainers with METIS whatever the method; a heterograph is balanced per node
    type by default (for methods that take balance constraints), a dict of class arrays splits those types further;
    `metis` refines once per level (DGL's METIS_OPTION_NITER).
    """
    if part_method not in part_methods():
        raise GraphshardError(f"part_method: expected one of {', '.join(part_methods())}, found {part_method!r}")
    if objtype not in ("cut", "vol"):
        raise GraphshardError(f"objtype: expected 'cut' or 'vol', found {objtype!r}")
    if not isinstance(num_trainers_per_machine, (int, np.integer)) or num_trainers_per_machine < 1:
        raise GraphshardError(f"num_trainers_per_machine: expected an integer >= 1, found {num_trainers_per_machine!r}")
    num_trainers_per_machine = int(num_trainers_per_machine)
    if part_method == "random" and num_parts == 1 and num_trainers_per_machine > 1:
        part_method = "metis"
    if part_method == "random":
        if balance_ntypes is not None or balance_edges or num_trainers_per_machine > 1:
            warnings.warn("part_method='random' ignores balance_ntypes, balance_edges and num_trainers_per_machine "
                          "(as DGL does)", stacklevel=3)
        return _options(method="random", seed=seed), {}
    classes = _balance_classes(graph, balance_ntypes) if balance_ntypes is not None else {}
    entries = [f"{nt}/{BALANCE_FEAT}" for nt in classes]
    if len(graph.ntypes) > 1 and (classes or "balance_ntypes" in HONOURS[part_method]):
        entries.insert(0, "ntype")
    options = _options(method=part_method, seed=seed, balance_ntypes=entries, balance_edges=balance_edges,
                       objtype=objtype, num_trainers_per_machine=num_trainers_per_machine,
                       **({"metis_niter": DGL_METIS_NITER} if part_method == "metis" else {}))
    return options, classes


def _without_trainer_ids(graph: InMemoryGraph) -> InMemoryGraph:
    """With several trainers per machine DGL writes `trainer_id` features of its own over any the caller's graph has
    (its own call leaves them there, so a second call meets them): theirs are not partitioned, as in DGL."""
    def kept(feats: dict) -> dict:
        return {key: {name: a for name, a in f.items() if name != TRAINER_FEAT} for key, f in feats.items()}

    return replace(graph, node_feats=kept(graph.node_feats), edge_feats=kept(graph.edge_feats))


def _options(**fields: Any) -> AssignOptions:
    """AssignOptions of these fields; a value it refuses (e.g. a negative seed) is one GraphshardError naming it."""
    try:
        return AssignOptions(**fields)
    except ValidationError as err:
        first = err.errors()[0]
        raise GraphshardError(f"{first['loc'][0]}: {first['msg']}") from None


def _shuffle_options(num_hops: int, graph_formats: Any) -> ShuffleOptions:
    """DGL's `num_hops` and `graph_formats` (None, a name or a list of names) as ShuffleOptions."""
    formats = ["coo"] if graph_formats is None else [graph_formats] if isinstance(graph_formats, str) \
        else list(graph_formats)
    try:
        return ShuffleOptions(halo_hops=num_hops, halo_mode="full", graph_formats=formats)
    except ValidationError as err:
        first = err.errors()[0]
        name = {"halo_hops": "num_hops"}.get(str(first["loc"][0]), str(first["loc"][0]))
        raise GraphshardError(f"{name}: {first['msg']}, found {first.get('input')!r}") from None


def _check_out_path(out: Path | Location, storage: Storage) -> None:
    """`out_path` is replaced as a whole: refuse a folder that holds anything but an earlier partition set."""
    if isinstance(out, Location):
        check_location(out, write=True, storage=storage)
    elif out.exists() and not out.is_dir():
        raise GraphshardError(f"out_path {out}: expected a folder, found a file")
    elif not out.is_dir():
        return
    if isinstance(out, Path) and os.path.ismount(out):  # renamed into place, which a mount point refuses
        raise GraphshardError(f"out_path {out}: a mount point, which partition_graph cannot replace (the finished set "
                              f"is renamed into place); give a folder inside it, e.g. {out}/sets/<name>")
    if foreign := foreign_entries(out, storage, REPORT_FILES):
        raise GraphshardError(f"out_path {out}: holds {foreign[:3]}, which are not part of a partition set; "
                              "partition_graph replaces the whole folder, so give it a new or empty one")


def _mapping(graph: InMemoryGraph, assignment: Path, num_parts: int) -> tuple[Any, Any]:
    """DGL's (orig_nids, orig_eids): new IDs are partition-major then original order, so a stable grouping by owner."""
    parts = {nt: read_parts(assignment, nt, n, num_parts) for nt, n in graph.num_nodes.items()}
    nids = {nt: graph.to_output(Grouping.of(p, num_parts).order) for nt, p in parts.items()}
    eids = {c: graph.to_output(Grouping.of(parts[c[2]][dst], num_parts).order) for c, (_, dst) in graph.edges.items()}
    if graph.homogeneous:
        return nids[graph.ntypes[0]], eids[graph.etypes[0]]
    return nids, eids


def _rename(config: Path, graph_name: str) -> Path:
    """Give the partition config DGL's graph name when the chunked format needed a safer one."""
    if config.stem == graph_name:
        return config
    cfg = PartitionConfig.load(config)
    target = config.with_name(f"{graph_name}.json")
    cfg.model_copy(update={"graph_name": graph_name}).save(target)
    config.unlink()
    config.with_name(digests_name(config.name)).rename(target.with_name(digests_name(target.name)))
    return target


def _validate(config: Path, metadata: Path, assignment: Path, client, work: Path) -> None:
    """graphshard's validation step on the staged set; a failed check stops before anything is published."""
    from graphshard import validate as validation

    report = validation.validate(config, input_metadata=metadata, client=client,
                                 assignment_report=assignment / REPORT_FILE, scratch_dir=work)
    if not report["ok"]:
        _, html = validation.write_report(tempfile.mkdtemp(prefix="graphshard-failed-report-"), report)
        raise GraphshardError(f"validation failed: {report['num_problems']} problem(s), first: "
                              f"{validation.problem_lines(report)[0]} (report: {html}); nothing was published")
    validation.write_report(config.parent, report)


def _run_steps(graph: InMemoryGraph, metadata: Path, name: str, num_parts: int, options: AssignOptions,
               classes: dict, shuffle_options: ShuffleOptions, cluster: Callable[[], Any], own_cluster: bool,
               work: Path, validate: bool, graphbolt: GraphboltOptions | None, phases: Phases) -> Path:
    """Assign, shuffle (convert to GraphBolt, validate) the chunked `metadata` in `work`; returns the staged
    partition config. `cluster()` waits for the client (None: the steps run here); a method that assigns in this
    process does not wait for a cluster partition_graph starts itself (same result: `run_tasks` without a client
    runs the same tasks here)."""
    with phases("assign"):
        assign_input = add_features(metadata, "assign", classes) if classes else metadata
        assign_client = None if own_cluster and options.method in IN_CALLER else cluster()
        assignment = assign(assign_input, work / "assignment", num_parts, options, client=assign_client,
                            edge_report=False)  # the report stays in the work folder; validation measures the cut
    with phases("cluster wait"):
        client = cluster()
    with phases("shuffle"):  # with several trainers per machine, it writes DGL's `trainer_id` features
        config = _rename(shuffle(metadata, assignment, work / "partitions", shuffle_options, client), name)
    if graphbolt is not None:
        with phases("graphbolt"):
            to_graphbolt(config, graphbolt, client)
    if validate:
        with phases("validate"):
            _validate(config, metadata, assignment, client, work)
    return config


def _out_location(out_path: str | Path | Location) -> Path | Location:
    if not isinstance(out_path, (str, os.PathLike, Location)):
        raise GraphshardError(f"out_path: expected a folder's path or URL, found {type(out_path).__name__} "
                              f"{out_path!r}")
    loc = location(out_path)
    return Path(loc.path).resolve() if loc.is_local else loc


def _work_folder(out: Path | Location) -> Path:
    """A hidden work folder beside a local `out_path` (same filesystem: publishing renames), else one in the
    system's temporary folder; what killed calls of this host left there is deleted first."""
    beside = Path(tempfile.gettempdir()) / "graphshard-partition" if isinstance(out, Location) else out
    remove_stale(beside)
    return staging_dir(beside)


def _publish(config: Path, out: Path | Location, validate: bool, storage: Storage) -> None:
    """The staged set into `out_path`: renamed into place locally, published under a run prefix on a store (its
    name a digest of the set's digests file, so the same graph and seed give the same objects)."""
    if validate:  # the report names where the set is published, not the work folder it was checked in
        from graphshard.validate import retarget_report

        retarget_report(config.parent, (out / config.name).url if isinstance(out, Location) else out / config.name)
    if isinstance(out, Location):
        run = xxhash.xxh3_128_hexdigest(config.with_name(digests_name(config.name)).read_bytes())[:16]
        publish_on_store([config.parent], out, config.name, run, storage,
                         replaces=unprefixed_set(out, config.name, storage, REPORT_FILES))
    else:
        move_into_place(config.parent, out, overwrite=True)


def _cluster(client: Any, method: str) -> AbstractContextManager:
    """Where the steps run: the caller's client; none (this process) for a method whose assignment is too quick to
    hide a local cluster's start-up (random: the graph is here, and the start-up, the workers' imports and the
    hand-offs cost more than the second core saves, BENCHMARKS.md); else a local cluster started while the chunks
    are written and, for `IN_CALLER` methods, while they assign here."""
    if client is not None or method in RUN_HERE:
        return nullcontext(client)
    return dask_client(ClusterSpec(subprocess=True))


def partition_graph(g: Any, graph_name: str, num_parts: int, out_path: str | Path | Location, num_hops: int = 1,
                    part_method: str = "metis", balance_ntypes: Any = None, balance_edges: bool = False,
                    return_mapping: bool = False, num_trainers_per_machine: int = 1, objtype: str = "cut",
                    graph_formats: Any = None, use_graphbolt: bool = False, *, num_nodes: Any = None,
                    node_feats: Any = None, edge_feats: Any = None, client: Any = None, validate: bool = False,
                    seed: int = 0, **kwargs: Any) -> tuple[Any, Any] | None:
    """Partition an in-memory graph into `out_path` as `dgl.distributed.partition_graph` does (same arguments).

    The graph is written once as numpy chunks in a hidden work folder beside `out_path` (removed afterwards), then
    assigned, shuffled and, with `validate`, validated; the set appears in `out_path` only when complete.
    `out_path` may be a URL (`s3://bucket/sets/name`; credentials from the environment): the set is published
    there under a run prefix with its config written last (`fetch` brings it to a training host).

    Parameters
    ----------
    g : DGLGraph, PyG Data/HeteroData, scipy sparse matrix or dict
        The graph; a dict is `{(src_type, rel, dst_type): (src, dst)}` and needs `num_nodes`.
    graph_name, num_parts, out_path, num_hops, part_method, balance_ntypes, balance_edges : see DGL
    return_mapping, num_trainers_per_machine, objtype, graph_formats, use_graphbolt : see DGL
        DGL 2.1's arguments and meanings (`part_method`: a name in `graphshard.assign.PARTITIONERS` but `file`).
    **kwargs
        DGL's GraphBolt choices (`store_eids`, `store_inner_node`, `store_inner_edge`), with `use_graphbolt`: the
        set is converted by DGL's own converter.
    num_nodes, node_feats, edge_feats : optional
        For dict and scipy inputs: `{ntype: count}` (or an int), `{type: {name: array}}` (or `{name: array}`).
    client : distributed.Client, optional
        Where the work runs; default this process for `random`, else a local cluster of 2 worker processes.
    validate : bool
        Check every invariant and write report.json/report.html into the set.
    seed : int
        Every random choice of the assignment derives from it.

    Returns
    -------
    tuple or None
        `(orig_nids, orig_eids)` when `return_mapping`, as DGL returns them (tensors of the input's library; dicts keyed
        by node type and canonical edge type for a heterogeneous input), else None.
    """
    graphbolt = options_from_kwargs(use_graphbolt, kwargs)
    if not isinstance(graph_name, str) or not graph_name or "/" in graph_name:
        raise GraphshardError(f"graph_name: expected a non-empty name without '/', found {graph_name!r}")
    if not isinstance(num_parts, (int, np.integer)) or num_parts < 1:  # numpy's too: e.g. a count read from a file
        raise GraphshardError(f"num_parts: expected an integer >= 1, found {num_parts!r}")
    num_parts = int(num_parts)
    graph = from_input(g, num_nodes, node_feats, edge_feats)
    options, classes = _assign_options(graph, part_method, num_parts, balance_ntypes, balance_edges,
                                       num_trainers_per_machine, objtype, seed)
    if options.num_trainers_per_machine > 1:
        graph = _without_trainer_ids(graph)
    shuffle_options = _shuffle_options(num_hops, graph_formats)
    if (expected := shuffle_options.halo_problem(num_parts)) is not None:
        raise GraphshardError(f"num_hops: expected {expected}, found {num_hops}")
    if validate and report_clash(graph_name):
        raise GraphshardError(f"graph_name: expected {REPORT_CLASH}, found {graph_name!r}")
    out = _out_location(out_path)
    storage = Storage()
    _check_out_path(out, storage)
    work = _work_folder(out)
    phases = Phases()
    try:
        here = client is None and options.method in RUN_HERE
        with heap.kept() if here else nullcontext(), started_beside(_cluster(client, options.method)) as cluster:
            with phases("chunks"):
                metadata = write_chunked(graph, work / "input", safe_graph_name(graph_name))
            config = _run_steps(graph, metadata, graph_name, num_parts, options, classes, shuffle_options,
                                cluster.wait, client is None, work, validate, graphbolt, phases)
            cluster.release()  # it stops while the mapping is computed
            with phases("mapping"):
                mapping = _mapping(graph, work / "assignment", num_parts) if return_mapping else None
            stopping = time.perf_counter()
        phases.since("cluster stop", stopping)
        with phases("publish"):
            _publish(config, out, validate, storage)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("partition_graph: %d partitions of '%s' in %s; phases (s): %s", num_parts, graph_name, out,
             phases.seconds, extra={"phases": phases.seconds})
    return mapping
