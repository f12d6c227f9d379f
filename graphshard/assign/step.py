"""The assignment step (the folder graphshard/assign/__init__.py describes): run a method's partitioner, merge trainer
ids, write the meta and the report; built in a hidden staging sibling and renamed into place only when complete.
"""

from __future__ import annotations

import importlib
import json
import logging
import shutil
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager

import numpy as np

from graphshard import digests
from graphshard.assign import REPORT_FILE, TRAINER_DIR
from graphshard.assign.base import TEXT_BLOCK, Partitioner, write_blocks
from graphshard.assign.fetch import seed_entry
from graphshard.assign.options import METHODS, AssignOptions, resolve
from graphshard.assign.report import build_report, load_parts, peak_memory
from graphshard.atomic import staged_output
from graphshard.errors import GraphshardError
from graphshard.formats.assignment import META_FILE, write_meta
from graphshard.formats.chunked import ChunkedGraph, as_graph
from graphshard.formats.overwrite import check_replaceable, in_assignment
from graphshard.storage import Location, Storage, location
from graphshard.storage.scratch import ScratchPath, scratch_space

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

PARTITIONERS = {  # method -> (module, class); imported on use, so that e.g. kaminpar loads only when asked for
    "random": ("graphshard.assign.random", "RandomPartitioner"),
    "metis": ("graphshard.assign.metis", "MetisPartitioner"),
    "parmetis": ("graphshard.assign.parmetis", "ParmetisPartitioner"),
    "kaminpar": ("graphshard.assign.kaminpar", "KaminparPartitioner"),
    "multilevel": ("graphshard.assign.multilevel", "MultilevelPartitioner"),
    "file": ("graphshard.assign.file", "FilePartitioner"),
}


def partitioner_for(method: str) -> Partitioner:
    """The partitioner object of a method name.

    Parameters
    ----------
    method : str
        A key of `PARTITIONERS` (random, metis, parmetis, kaminpar, multilevel, file).

    Returns
    -------
    Partitioner
        The method's partitioner (its module is imported now).
    """
    if method not in PARTITIONERS:
        raise GraphshardError(f"unknown assignment method '{method}': expected one of {', '.join(METHODS)}")
    module, cls = PARTITIONERS[method]
    return getattr(importlib.import_module(module), cls)()


def _merge_trainers(graph: ChunkedGraph, trainer_files: dict[str, Path], trainers: int, out: Path) -> None:
    """Write `<ntype>.txt` = trainer_id // trainers, streamed block by block."""
    for nt in graph.node_type:
        ids = np.load(trainer_files[nt], mmap_mode="r")
        write_blocks(out / f"{nt}.txt", (ids[i:i + TEXT_BLOCK] // trainers for i in range(0, len(ids), TEXT_BLOCK)))


def assign(metadata: str | Path | Location | ChunkedGraph, out_dir: str | Path | Location, num_parts: int,
           options: AssignOptions, client: "Client | None" = None, overwrite: bool = False, edge_report: bool = True,
           *, storage: Storage | None = None, scratch: str | Path | Location | None = None) -> Path | Location:
    """Write the assignment folder for `num_parts` partitions at `out_dir` (step 1 of the pipeline).

    Parameters
    ----------
    metadata : str, Path, Location or ChunkedGraph
        The chunked graph, or its metadata.json: a path or a URL (workers read its chunks from the store).
    out_dir : str, Path or Location
        The assignment folder: `<ntype>.txt`, `partition_meta.json`, `assignment_report.json` (+ `trainer_ids/`).
        A URL: the folder is built in a local temporary folder and uploaded, `partition_meta.json` last.
    num_parts : int
        Partitions, 1 to the node count.
    options : AssignOptions
        The method and its options.
    client : distributed.Client, optional
        The cluster of the methods that run Dask tasks (random, multilevel) and of the report.
    overwrite : bool
        Replace an existing `out_dir`.
    edge_report : bool
        False: the report's edge cut, edges per part and communication volume are null, saving a pass over every edge,
        for a caller that measures them on the written partitions (the flow, when it validates).
    storage : Storage, optional
        What locations given as URLs are read and written through; None: credentials from the environment.
    scratch : str, Path or Location, optional
        Where the methods whose tasks hand files to each other (random, multilevel) keep them: None, inside the
        output's staging folder; for a URL `out_dir`, a prefix beside it on its store (`.<name>.scratch`), so that
        workers on other hosts reach it.

    Returns
    -------
    Path or Location
        `out_dir` (a Path when local, as before; a Location for a URL).
    """
    start = time.perf_counter()
    graph = as_graph(metadata, storage)
    target = location(out_dir)
    if not target.is_local:
        return _assign_to_store(graph, target, num_parts, options, client, overwrite, edge_report, scratch)
    if not 1 <= num_parts <= graph.total_nodes:
        raise GraphshardError(f"num_parts: expected an integer in [1, {graph.total_nodes}] (the graph's node count), "
                              f"found {num_parts}")
    options, ignored = resolve(options)  # the method's block over the flat options; a conflict raises here
    for item in ignored:
        log.warning(item.warning(item.option))
    trainers = options.num_trainers_per_machine
    partitioner = partitioner_for(options.method)
    partitioner.check(graph, num_parts * trainers, options)
    partitioner.scratch, partitioner.storage = (location(scratch) if scratch is not None else None), graph.storage
    if overwrite and Path(target.path).is_dir():
        check_replaceable(target, graph.storage, in_assignment(target, graph.storage), "an assignment")
    with staged_output(out_dir, overwrite) as stage:
        target = stage / TRAINER_DIR if trainers > 1 else stage
        target.mkdir(exist_ok=True)
        info = partitioner.assign(graph, num_parts * trainers, options, target, client)
        scratch = stage / ".scratch"
        trainer_report = None
        if trainers > 1:
            trainer_files = load_parts(graph, target, num_parts * trainers, scratch / "trainers")
            _merge_trainers(graph, trainer_files, trainers, stage)
            trainer_report = {"trainers_per_machine": trainers,
                              "nodes_per_trainer": {nt: np.bincount(np.load(p), minlength=num_parts * trainers).tolist()
                                                    for nt, p in trainer_files.items()}}
        write_meta(stage, num_parts, info.get("algo_name", options.method), trainers=trainers)  # `file`: the source's
        part_files = load_parts(graph, stage, num_parts, scratch / "parts")
        with _report_scratch(partitioner.scratch, scratch, graph.storage, client) as where:
            report = build_report(graph, part_files, num_parts, options, where, client, edges=edge_report)
        shutil.rmtree(scratch)
        report.update({
            "method": options.method,
            "options": options.model_dump(mode="json"),
            "partitioner": info,
            "sampling": {"fanouts": options.sample_fanouts, "batch_size": options.sample_batch_size,
                         "seeds": seed_entry(options)},  # what `fetch` assumes, and the report's remote share draws
            "trainers": trainer_report,
            "seconds": round(time.perf_counter() - start, 3),
            "memory": peak_memory(),
        })
        Storage().write_bytes(stage / REPORT_FILE, json.dumps(report, indent=2).encode())
    return Path(out_dir)


def _report_scratch(shared: Location | None, local: Path, storage: Storage, client) -> ContextManager[ScratchPath]:
    """Where the report's edge pass hands the parts to its tasks: a prefix under the methods' scratch when that is on
    a store (the staging folder may be on the flow's host only), else the staging folder's `.scratch/report`."""
    if shared is not None and not shared.is_local:
        return scratch_space(shared.join("report"), storage, client)
    return nullcontext(local / "report")


def _assign_to_store(graph: ChunkedGraph, target: Location, num_parts: int, options: AssignOptions, client,
                     overwrite: bool, edge_report: bool, scratch: str | Path | Location | None) -> Location:
    """`assign` into a local temporary folder, then its files uploaded under `target`, `partition_meta.json` last
    (a folder without it is no assignment). An existing assignment there is replaced only with `overwrite`."""
    storage = graph.storage
    if storage.listing(target):
        if not overwrite:
            raise GraphshardError(f"{target}: output folder exists (pass --overwrite to replace it)")
        check_replaceable(target, storage, in_assignment(target, storage), "an assignment")
        storage.delete_prefix(target)
    with tempfile.TemporaryDirectory(prefix="graphshard-assign-") as tmp:
        folder = assign(graph, Path(tmp) / "assignment", num_parts, options, client, edge_report=edge_report,
                        scratch=scratch if scratch is not None else target.parent.join(f".{target.name}.scratch"))
        files = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.name == META_FILE)
        for path in files:
            digests.upload(path, target.join(path.relative_to(folder).as_posix()), storage)
    return target

