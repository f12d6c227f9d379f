"""One partition's local graph and data, built from its buckets (one Dask task per partition).

Local layout as DGL's `partition_graph` writes it: owned nodes first (local IDs 0..n-1 in new-ID order), then halo
nodes in new-ID order; owned edges first (new-ID order), then halo edges in new-ID order. Reserved fields carry
DGL 2.1's names and dtypes (reference §3): `_TYPE` int32 for nodes and edges, where DGL writes it (`optional_fields`).
Memory is bounded by the partition: owned edges and rows, plus one bucket at a time while scanning the other
partitions for the halo; node IDs are mapped through `local_ids` (nothing sized by the graph's node count).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphshard.formats.assignment import TRAINER_FEAT
from graphshard.formats.buckets import read_bucket
from graphshard.shuffle.halo import Edges, find_halo
from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.local_ids import LocalIds
from graphshard.shuffle.plan import ShufflePlan

# DGL 2.1's reserved dtype of `_TYPE` (dgl.NTYPE and dgl.ETYPE are the same string; its table keeps int32 for both).
TYPE_DTYPE = np.int32


def optional_fields(plan: ShufflePlan) -> tuple[bool, bool]:
    """(`_TYPE`, `part_id`) written or not, as DGL 2.1 does: its `partition_graph` writes `_TYPE` for heterographs
    only and `part_id` always, except for one partition (`_TYPE` and no `part_id`: it saves the whole graph as
    `to_homogeneous` made it); its distributed pipeline (halo_mode "in_edges") writes `_TYPE` always and never
    `part_id` (its `convert_partition.py`: `_ID`, `_TYPE`, `inner_node`; `_ID`, `_TYPE`, `inner_edge`)."""
    if plan.options.halo_mode == "in_edges":
        return True, False
    if plan.num_parts == 1:
        return True, False
    return plan.num_ntypes > 1 or plan.num_etypes > 1, True


class Stacker:
    """Concatenates pieces into one preallocated array (no second copy of the whole)."""

    def __init__(self, rows: int):
        self.rows, self.filled, self.out = rows, 0, None

    def add(self, piece: np.ndarray) -> None:
        if self.out is None:
            self.out = np.empty((self.rows, *piece.shape[1:]), dtype=piece.dtype)
        self.out[self.filled:self.filled + len(piece)] = piece
        self.filled += len(piece)

    def result(self) -> np.ndarray:
        assert self.filled == self.rows, (self.filled, self.rows)
        return self.out if self.out is not None else np.zeros(0, dtype=np.int64)


@dataclass
class PartitionData:
    """What one partition writes: its local graph and its owned rows."""

    num_nodes: int
    src: np.ndarray
    dst: np.ndarray
    ndata: dict[str, np.ndarray]
    edata: dict[str, np.ndarray]
    node_feats: dict[str, np.ndarray] = field(default_factory=dict)
    edge_feats: dict[str, np.ndarray] = field(default_factory=dict)
    orig_nids: dict[str, np.ndarray] = field(default_factory=dict)
    orig_eids: dict[str, np.ndarray] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)


def _owned_edges(plan: ShufflePlan, part: int, edges: IdSpace) -> tuple[Edges, dict, dict]:
    """Owned edges in new-ID order (buckets in (type, chunk) order), their features and original IDs."""
    counts = edges.group_counts()[part]
    first = int(edges.part_starts()[part])
    trainers = plan.trainers > 1
    total = int(counts.sum())
    src, dst = Stacker(total), Stacker(total)
    etype = np.repeat(np.arange(plan.num_etypes, dtype=np.int32), counts)
    feats, origs = {}, {}
    for et, name in enumerate(plan.graph.edge_type):
        specs = plan.edge_feats[et]
        stacks = [Stacker(int(counts[et])) for _ in range(len(specs) + plan.options.save_orig_eids + trainers)]
        for chunk in range(plan.num_chunks(et)):
            records = read_bucket(plan.scratch.edge_bucket(et, chunk, part))
            src.add(records[0])
            dst.add(records[1])
            for stack, rec in zip(stacks, records[2:]):
                stack.add(rec)
        if plan.options.save_orig_eids:
            origs[name] = stacks.pop(0).result()
        if trainers:
            feats[f"{name}/{TRAINER_FEAT}"] = stacks.pop(0).result()
        feats.update({f"{name}/{spec.name}": stack.result() for spec, stack in zip(specs, stacks)})
    owned = Edges(src.result(), dst.result(), np.arange(first, first + total, dtype=np.int64), etype)
    return owned, feats, origs


def _owned_node_rows(plan: ShufflePlan, part: int, nodes: IdSpace) -> tuple[dict, dict]:
    """Node features (DGL's `trainer_id` first, with several trainers per machine) and original IDs of the owned
    nodes, type by type, in new-ID order."""
    counts = nodes.group_counts()[part]
    feats, origs = {}, {}
    trainers = plan.trainers > 1
    for t, name in enumerate(plan.graph.node_type):
        specs = plan.node_feats[t]
        n_stacks = len(specs) + plan.options.save_orig_nids + trainers
        if not n_stacks:
            continue
        stacks = [Stacker(int(counts[t])) for _ in range(n_stacks)]
        for block in range(plan.num_blocks(t)):
            for stack, rec in zip(stacks, read_bucket(plan.scratch.node_bucket(t, block, part))):
                stack.add(rec)
        if plan.options.save_orig_nids:
            origs[name] = stacks.pop(0).result().astype(np.int64, copy=False)
        if trainers:
            feats[f"{name}/{TRAINER_FEAT}"] = stacks.pop(0).result()
        feats.update({f"{name}/{spec.name}": stack.result() for spec, stack in zip(specs, stacks)})
    return feats, origs


def _local_edges(ids: LocalIds, owned: Edges, halo: Edges) -> Edges:
    """Owned then halo edges in local IDs, written once into their final arrays (an owned edge's destination is
    owned: its local ID is arithmetic)."""
    n_own, total = len(owned.src), len(owned.src) + len(halo.src)
    out = Edges(np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, np.int64),
                np.empty(total, np.int32))
    for part, rows in ((owned, slice(0, n_own)), (halo, slice(n_own, total))):
        ids(part.src, out.src[rows])
        (ids.owned if part is owned else ids)(part.dst, out.dst[rows])
        out.eid[rows] = part.eid
        out.etype[rows] = part.etype
    return out


def build_partition(plan: ShufflePlan, part: int, nodes: IdSpace, edges: IdSpace) -> PartitionData:
    """The local graph, reserved fields, features and original IDs of partition `part`."""
    lo, hi = (int(x) for x in nodes.part_starts()[part:part + 2])
    owned, edge_feats, orig_eids = _owned_edges(plan, part, edges)
    halo_edges, halo_nodes = find_halo(plan, part, nodes, edges, owned.src)
    node_feats, orig_nids = _owned_node_rows(plan, part, nodes)
    n_inner, n_halo = hi - lo, len(halo_nodes)
    node_ids = np.concatenate([np.arange(lo, hi, dtype=np.int64), halo_nodes.astype(np.int64)])
    local = _local_edges(LocalIds(lo, hi, halo_nodes), owned, halo_edges)
    ndata = {"_ID": node_ids, "inner_node": np.concatenate([np.ones(n_inner, np.uint8), np.zeros(n_halo, np.uint8)])}
    edata = {
        "_ID": local.eid,
        "inner_edge": np.concatenate([np.ones(len(owned.src), np.uint8), np.zeros(len(halo_edges.src), np.uint8)]),
    }
    types, part_ids = optional_fields(plan)
    if part_ids:
        ndata["part_id"] = np.concatenate([np.full(n_inner, part, np.int64),
                                           nodes.part_of(halo_nodes).astype(np.int64)])
    if types:
        ndata["_TYPE"] = nodes.type_of(node_ids).astype(TYPE_DTYPE)
        edata["_TYPE"] = local.etype.astype(TYPE_DTYPE, copy=False)
    return PartitionData(
        num_nodes=n_inner + n_halo,
        src=local.src, dst=local.dst,
        ndata=ndata, edata=edata, node_feats=node_feats, edge_feats=edge_feats,
        orig_nids=orig_nids, orig_eids=orig_eids,
        stats={"part": part, "inner_nodes": n_inner, "halo_nodes": n_halo,
               "inner_edges": len(owned.eid), "halo_edges": len(halo_edges.eid)},
    )
