"""Shuffle + write: from a chunked graph and an assignment folder to DGL-loadable partitions, on Dask.

`dispatch` runs the steps of docs/DESIGN.md "Shuffle data flow" as Dask tasks over plain functions that take paths
(no graph data goes through the scheduler, only small count matrices come back): assignment text -> binary, node
counts -> new IDs, edge/feature exchange into bucket files, one task per partition building and writing it, then
the partition config. Everything is built in a staging folder that is published only when complete; the scratch
folder (on a filesystem that every worker sees) is deleted at the end.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from distributed import Client
from distributed.scheduler import KilledWorker

from graphshard.errors import GraphshardError, InputError
from graphshard.formats.assignment import read_meta
from graphshard.formats.chunked import load_metadata
from graphshard.fsutil import staged_output
from graphshard.shuffle.exchange import count_assignment, route_edge_chunk, route_node_block
from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.options import DispatchOptions
from graphshard.shuffle.plan import feature_index, feature_keys, make_plan
from graphshard.shuffle.scratch import Scratch
from graphshard.shuffle.write import write_config, write_partition

__all__ = ["DispatchOptions", "dispatch"]

log = logging.getLogger(__name__)
SETTLE_TIMEOUT = 60.0  # seconds to let a failed step's running tasks end before its folders are removed


def _run(client: Client, what: str, fn: Callable, *iterables, **constants) -> list:
    """Run `fn` over the iterables as Dask tasks and gather the (small) results; a lost cluster is a clear error."""
    start = time.perf_counter()
    futures = client.map(fn, *iterables, key=[f"graphshard-{what}-{uuid.uuid4().hex[:8]}-{i}"
                                              for i in range(len(iterables[0]))], **constants)
    try:
        results = client.gather(futures)
        log.info("dispatch step %s: %d tasks in %.2f s", what, len(futures), time.perf_counter() - start)
        return results
    except BaseException as err:
        _settle(client, futures)
        if isinstance(err, KilledWorker):
            raise GraphshardError(f"dispatch: Dask workers died repeatedly while running '{what}' ({err}); "
                                  "nothing was published (check the workers' memory limit)") from None
        if isinstance(err, OSError):
            raise GraphshardError(f"dispatch: '{what}' failed: {err}") from None
        raise
    finally:
        client.cancel(futures)


def _executing(dask_worker) -> list[str]:
    """Keys a worker is still executing (cancelled tasks keep running until their function returns)."""
    return [str(ts.key) for ts in dask_worker.state.executing]


def _settle(client: Client, futures: list) -> None:
    """Cancel a failed step's tasks and wait until none still runs, so that removing their folders is final."""
    keys = {str(f.key) for f in futures}
    client.cancel(futures)
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        try:
            running = {k for ks in client.run(_executing).values() for k in ks}
        except Exception:  # noqa: BLE001 - workers gone: nothing of ours can still run on them
            return
        if not running & keys:
            return
        time.sleep(0.1)


@contextmanager
def _scratch(options: DispatchOptions, stage: Path) -> Iterator[Scratch]:
    """A fresh scratch folder (inside `options.scratch_dir`, else inside the staging folder), deleted afterwards."""
    if options.scratch_dir is not None:
        Path(options.scratch_dir).mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="graphshard-shuffle-", dir=options.scratch_dir))
    else:
        root = stage / ".scratch"
    try:
        yield Scratch(root).make()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def dispatch(metadata: str | Path, assignment_dir: str | Path, out_dir: str | Path,
             options: DispatchOptions | None, client: Client, overwrite: bool = False) -> Path:
    """Partition a chunked graph by an assignment folder into `out_dir`; returns `<out_dir>/<graph_name>.json`."""
    options = options or DispatchOptions()
    graph = load_metadata(metadata)
    assignment_dir = Path(assignment_dir).resolve()
    if not assignment_dir.is_dir():
        raise InputError(assignment_dir, None, "an assignment folder (<ntype>.txt files + partition_meta.json)",
                         "no such folder")
    meta = read_meta(assignment_dir)
    out_dir = Path(out_dir).resolve()
    with staged_output(out_dir, overwrite) as stage, _scratch(options, stage) as scratch:
        _shuffle_and_write(graph, assignment_dir, meta.num_parts, meta.algo_name, options, client, scratch, stage)
    return out_dir / f"{graph.graph_name}.json"


def _shuffle_and_write(graph, assignment_dir: Path, num_parts: int, part_method: str, options: DispatchOptions,
                       client: Client, scratch: Scratch, stage: Path) -> Path:
    base = make_plan(graph, scratch, num_parts, options, None)
    counts = _run(client, "assignment", count_assignment, range(base.num_ntypes), plan=base,
                  assignment_dir=assignment_dir)
    keys = feature_keys(graph)
    found = _run(client, "feature-rows", feature_index, *zip(*keys), graph=graph) if keys else []
    plan = make_plan(graph, scratch, num_parts, options, dict(zip([k[:3] for k in keys], found)))
    nodes = IdSpace.of(counts)

    for t, ntype in enumerate(graph.node_type):
        np.lib.format.open_memmap(scratch.idmap(t), mode="w+", dtype=plan.id_dtype, shape=(graph.num_nodes(ntype),))
    blocks = [(t, b) for t in range(plan.num_ntypes) for b in range(plan.num_blocks(t))]
    _run(client, "node-blocks", route_node_block, [t for t, _ in blocks], [b for _, b in blocks],
         [nodes.block_bases(t)[b] for t, b in blocks], plan=plan)

    chunks = [(et, c) for et in range(plan.num_etypes) for c in range(plan.num_chunks(et))]
    sent = _run(client, "edge-exchange", route_edge_chunk, [et for et, _ in chunks], [c for _, c in chunks], plan=plan)
    edges = IdSpace.of([np.stack([sent[i] for i, (e, _) in enumerate(chunks) if e == et]).reshape(-1, num_parts)
                        for et in range(plan.num_etypes)])

    _run(client, "write-partitions", write_partition, range(num_parts), plan=plan, nodes=nodes, edges=edges,
         out_dir=stage)
    return write_config(plan, nodes, edges, part_method, stage)
