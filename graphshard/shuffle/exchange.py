"""The exchange: route node features and edges (with their features) to their owners as bucket files.

Why bucket files rather than dask.dataframe's P2P shuffle: P2P took 16 s for 20M rows on 2 workers here
(reference figures.md), twice the whole budget of this step, and it would still leave the rows of a partition in an
order that needs a sort. A task here reads one input chunk, gathers owners and new IDs from memory-mapped arrays,
and writes one bucket per owner; the partition task concatenates its buckets in (type, chunk) order, which *is*
original order, so new edge IDs are a range and no sort is needed. Every task reads and writes only its own files, so
memory is bounded by the chunk size, a retried task (a lost worker) rewrites the same bytes, and the output is
deterministic whatever the scheduling order.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.assignment import PART_DTYPE, TRAINER_DIR, convert_parts
from graphshard.formats.buckets import write_bucket
from graphshard.formats.readers import read_edge_chunk, read_rows
from graphshard.shuffle.ids import Grouping, count_parts, ids_in_block
from graphshard.shuffle.plan import FeatureSpec, ShufflePlan, id_dtype_for
from graphshard.storage import Location, location
from graphshard.storage.overlap import each
from graphshard.storage.scratch import create_array, local_dir, open_array, upload_range, write_range

MASK_PASSES_MAX = 12  # up to this many partitions, cut edges are selected by one pass per partition, else a sort


def count_assignment(ntype_id: int, *, plan: ShufflePlan, assignment_dir: Path | Location) -> np.ndarray:
    """Convert `<ntype>.txt` to the int32 parts array (checking it), and with several trainers per machine
    `trainer_ids/<ntype>.txt` to the trainers array (partition = trainer id // T, checked); count nodes per (block,
    partition)."""
    ntype = plan.graph.node_type[ntype_id]
    parts = _convert(plan, assignment_dir, ntype, plan.num_parts, plan.scratch.parts(ntype_id))
    bounds = plan.node_blocks[ntype_id]
    if plan.trainers > 1:
        folder = location(assignment_dir).join(TRAINER_DIR)
        trainers = _convert(plan, folder, ntype, plan.num_parts * plan.trainers, plan.scratch.trainers(ntype_id))
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            bad = np.flatnonzero(np.asarray(trainers[lo:hi]) // plan.trainers != np.asarray(parts[lo:hi]))
            if len(bad):
                line = int(lo + bad[0])
                raise InputError(folder.join(f"{ntype}.txt"), f"line {line + 1}", f"a trainer of partition "
                                 f"{int(parts[line])} ({plan.trainers} trainers per machine)", int(trainers[line]))
    return np.stack([count_parts(np.asarray(parts[lo:hi]), plan.num_parts) for lo, hi in zip(bounds[:-1], bounds[1:])])


def _convert(plan: ShufflePlan, folder: Path | Location, ntype: str, limit: int, target) -> np.ndarray:
    """One `<ntype>.txt` of `folder` (ids in [0, limit)) as an int32 array at `target` in the scratch; returns it
    memory-mapped."""
    n = plan.graph.num_nodes(ntype)
    local = Path(target).parent if isinstance(target, Path) else local_dir()
    local.mkdir(parents=True, exist_ok=True)
    out = convert_parts(folder, ntype, n, limit, local / f".{Path(str(target)).stem}-{uuid.uuid4().hex}.npy",
                        storage=plan.graph.storage)
    mapped = np.load(out, mmap_mode="r")  # stays readable when the file is moved or, uploaded, removed
    if isinstance(target, Path):
        os.replace(out, target)
    else:
        create_array(target, (n,), PART_DTYPE)  # one piece on the store, which every reader copies to its own disk
        upload_range(target, 0, out)
    return mapped


def _write_groups(grouping: Grouping, grouped: list[np.ndarray], path_of) -> None:
    """One bucket per group holding that group's rows of every array (arrays already in grouped order)."""
    split = [grouping.cut(a) for a in grouped]
    for p in range(len(grouping.counts)):
        write_bucket(path_of(p), [s[p] for s in split])


def _features(plan: ShufflePlan, feats: tuple[FeatureSpec, ...], start: int, stop: int) -> list[np.ndarray]:
    """Rows [start, stop) of each feature. On a store, every (feature, file) piece is its own read and the pieces are
    read several at a time (a node block spans every file of every node feature: one after another, a round trip
    each)."""
    pieces = [(f, lo, hi) for f in feats for lo, hi in _file_ranges(f.index.offsets, start, stop)]
    read = each(lambda p: read_rows(plan.graph, p[0].spec, p[1], p[2], p[0].index), pieces, not plan.graph.is_local)
    out = []
    for f in feats:
        mine = [rows for (g, _, _), rows in zip(pieces, read) if g is f]
        out.append(np.concatenate(mine) if len(mine) > 1 else mine[0] if mine else
                   read_rows(plan.graph, f.spec, start, stop, f.index))
    return out


def _file_ranges(offsets: np.ndarray, start: int, stop: int) -> list[tuple[int, int]]:
    """[start, stop) cut at the files' first rows (`offsets`): one range per file it touches."""
    cuts = [int(x) for x in offsets if start < x < stop]
    bounds = [start, *cuts, stop]
    return [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]


def route_node_block(ntype_id: int, block: int, bases: np.ndarray, *, plan: ShufflePlan) -> None:
    """Write the new IDs of a node block into the ID map, and its feature rows (after its original IDs and trainer
    ids, when written) to owner buckets."""
    lo, hi = (int(x) for x in plan.node_blocks[ntype_id][block:block + 2])
    parts = np.array(open_array(plan.scratch.parts(ntype_id))[lo:hi])
    grouping = Grouping.of(parts, plan.num_parts)
    write_range(plan.scratch.idmap(ntype_id), lo, ids_in_block(parts, bases, grouping).astype(plan.id_dtype))
    arrays = ([np.arange(lo, hi, dtype=np.int64)] if plan.options.save_orig_nids else [])
    if plan.trainers > 1:
        arrays.append(np.asarray(open_array(plan.scratch.trainers(ntype_id))[lo:hi], dtype=np.int64))
    arrays += _features(plan, plan.node_feats[ntype_id], lo, hi)
    if arrays:
        _write_groups(grouping, [a[grouping.order] for a in arrays],
                      lambda p: plan.scratch.node_bucket(ntype_id, block, p))


def route_edge_chunk(etype_id: int, chunk: int, *, plan: ShufflePlan) -> np.ndarray:
    """Route one edge chunk to the owners of its destinations; returns the edge count sent to each partition.

    A bucket holds new src, new dst (`plan.id_dtype`), then the original per-type edge IDs (when saved), the trainer
    ids of the destinations (several trainers per machine), then every edge feature. With a full halo, cut edges
    also go to their source's owner as out-edge buckets (see `_route_out_edges`), so no partition has to scan the
    others for the out-edges DGL adds to the halo.
    """
    graph = plan.graph
    etype = graph.edge_type[etype_id]
    can = graph.canonical(etype)
    src_t, dst_t = graph.ntype_id(can.src), graph.ntype_id(can.dst)
    src, dst = read_edge_chunk(graph, etype, chunk)  # checks the IDs' ranges
    path = graph.path(graph.edges[etype].data[chunk])
    lo, hi = (int(x) for x in graph.edge_chunk_offsets(etype)[chunk:chunk + 2])
    if len(src) != hi - lo:
        raise InputError(graph.metadata_path, f"num_edges_per_chunk[{etype_id}][{chunk}]",
                         f"the row count of {path}", f"{hi - lo} (the file has {len(src)} rows)")
    owner = open_array(plan.scratch.parts(dst_t))[dst]
    src_owner = open_array(plan.scratch.parts(src_t))[src] if plan.out_buckets else None
    new_src = open_array(plan.scratch.idmap(src_t))[src]
    del src
    new_dst = open_array(plan.scratch.idmap(dst_t))[dst]
    trainer = open_array(plan.scratch.trainers(dst_t))[dst].astype(np.int64) if plan.trainers > 1 else None
    del dst
    arrays = [new_src, new_dst] + ([np.arange(lo, hi, dtype=np.int64)] if plan.options.save_orig_eids else [])
    arrays += [trainer] if trainer is not None else []
    arrays += _features(plan, plan.edge_feats[etype_id], lo, hi)
    grouping = Grouping.of(owner, plan.num_parts)
    grouped = [a[grouping.order] for a in arrays]
    del arrays, new_src, new_dst
    _write_groups(grouping, grouped, lambda p: plan.scratch.edge_bucket(etype_id, chunk, p))
    if src_owner is not None:
        _route_out_edges(plan, etype_id, chunk, grouping, grouped[0], grouped[1], src_owner[grouping.order])
    return grouping.counts


def _cut_rows_by_source(src_owner: np.ndarray, dst_owner: np.ndarray, num_parts: int) -> list[np.ndarray]:
    """Per source owner p, the positions of the edges p sends to other partitions, ascending.

    A pass per partition beats one grouping sort while partitions are few (5M edges, 4 parts: 38 ms vs 114 ms).
    """
    if num_parts <= MASK_PASSES_MAX:
        return [np.flatnonzero((src_owner == p) & (dst_owner != p)) for p in range(num_parts)]
    cut = np.flatnonzero(src_owner != dst_owner)
    by_src = Grouping.of(src_owner[cut], num_parts)
    return by_src.cut(cut[by_src.order])


def _route_out_edges(plan: ShufflePlan, etype_id: int, chunk: int, by_dst: Grouping, src: np.ndarray,
                     dst: np.ndarray, src_owner: np.ndarray) -> None:
    """Cut edges to their source's owner p: a bucket of (src, dst, rank in the destination owner q's bucket) with
    rows grouped by q, plus the row count per q; the edge's new ID is then base(q) + rank.

    Inputs are in destination-grouped order, so positions in ascending order are already in (q, rank) order.
    """
    dst_owner = by_dst.keys_sorted()
    rank_dtype = id_dtype_for(len(src))
    for p, rows in enumerate(_cut_rows_by_source(src_owner, dst_owner, plan.num_parts)):
        q = dst_owner[rows]
        write_bucket(plan.scratch.out_bucket(etype_id, chunk, p),
                     [src[rows], dst[rows], (rows - by_dst.firsts[q]).astype(rank_dtype),
                      np.bincount(q, minlength=plan.num_parts)])
