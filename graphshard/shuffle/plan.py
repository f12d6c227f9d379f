"""What every shuffle task needs to know, in one small picklable object (no arrays beyond offsets)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphshard.errors import GraphshardError, InputError
from graphshard.formats.assignment import TRAINER_FEAT
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec
from graphshard.formats.readers import RowIndex
from graphshard.shuffle.ids import block_offsets
from graphshard.shuffle.options import ShuffleOptions
from graphshard.shuffle.scratch import ShuffleScratch

# IDs, offsets and counts below this fit int32 (the narrow arrays: half the bytes to move); at or above it the shuffle
# uses int64 (new node IDs in the ID map and the buckets, local IDs, out-edge ranks). Tests lower it to run the wide
# paths on a small graph.
NARROW_LIMIT = int(np.iinfo(np.int32).max)


def id_dtype_for(count: int) -> type:
    """int32 for IDs of a space of `count` entries while they fit, else int64."""
    return np.int32 if count < NARROW_LIMIT else np.int64


@dataclass(frozen=True)
class FeatureSpec:
    """One node or edge feature: its owner type, name, chunk files and where its rows live across them."""

    type_id: int
    name: str
    spec: ChunkFileSpec
    index: RowIndex


@dataclass(frozen=True)
class ShufflePlan:
    """The graph, the scratch layout, the partition count, the options, the node blocks and the features."""

    graph: ChunkedGraph
    scratch: ShuffleScratch
    num_parts: int
    options: ShuffleOptions
    node_blocks: tuple[np.ndarray, ...]
    node_feats: tuple[tuple[FeatureSpec, ...], ...]
    edge_feats: tuple[tuple[FeatureSpec, ...], ...]
    trainers: int = 1  # trainers per machine: > 1 writes DGL's `trainer_id` node and edge features

    @property
    def num_ntypes(self) -> int:
        return len(self.graph.node_type)

    @property
    def num_etypes(self) -> int:
        return len(self.graph.edge_type)

    @property
    def id_dtype(self) -> type:
        """dtype of new node IDs in the ID map and the buckets: int32 while they fit (half the bytes to move)."""
        return id_dtype_for(self.graph.total_nodes)

    @property
    def out_buckets(self) -> bool:
        """Whether the exchange also routes cut edges to their source's owner (needed by the full halo only)."""
        return self.options.halo_mode == "full" and self.options.halo_hops >= 1 and self.num_parts > 1

    def num_blocks(self, ntype_id: int) -> int:
        return len(self.node_blocks[ntype_id]) - 1

    def num_chunks(self, etype_id: int) -> int:
        return len(self.graph.num_edges_per_chunk[etype_id])


def feature_index(kind: str, type_name: str, feat: str, expected_rows: int, *, graph: ChunkedGraph) -> RowIndex:
    """Row offsets of a feature's files, checked against the node or edge count of its type."""
    spec = (graph.node_data if kind == "node" else graph.edge_data)[type_name][feat]
    index = RowIndex.of(graph, spec)
    if index.total != expected_rows:
        where = "node_data" if kind == "node" else "edge_data"
        raise InputError(graph.metadata_path, f"{where}['{type_name}']['{feat}']",
                         f"{expected_rows} rows in total (one per {kind} of '{type_name}')", f"{index.total} rows")
    return index


def make_plan(graph: ChunkedGraph, scratch: ShuffleScratch, num_parts: int, options: ShuffleOptions,
              indexes: dict[tuple[str, str, str], RowIndex] | None, trainers: int = 1) -> ShufflePlan:
    """Assemble the plan; `indexes` maps (kind, type name, feature) to the feature's row index (None: no features,
    enough for the steps that do not read them). With `trainers` > 1 the set gets DGL's `trainer_id` features from
    the assignment, so an input feature of that name is refused."""
    if (expected := options.halo_problem(num_parts)) is not None:
        raise GraphshardError(f"halo_hops: expected {expected}, found {options.halo_hops}")
    clash = [(where, t) for where, data in (("node_data", graph.node_data), ("edge_data", graph.edge_data))
             for t, feats in data.items() if TRAINER_FEAT in feats]
    if trainers > 1 and clash:
        raise InputError(graph.metadata_path, f"{clash[0][0]}['{clash[0][1]}']['{TRAINER_FEAT}']",
                         f"no feature named '{TRAINER_FEAT}': with {trainers} trainers per machine the partitions get "
                         "it from the assignment (as DGL writes it)", "one; rename it in the input")
    def feats(kind: str, names: list[str], data: dict) -> tuple[tuple[FeatureSpec, ...], ...]:
        return tuple(tuple(FeatureSpec(t, f, spec, indexes[(kind, name, f)])
                           for f, spec in data.get(name, {}).items() if indexes is not None)
                     for t, name in enumerate(names))

    return ShufflePlan(
        graph=graph, scratch=scratch, num_parts=num_parts, options=options,
        node_blocks=tuple(block_offsets(graph.num_nodes(nt), options.node_block_rows) for nt in graph.node_type),
        node_feats=feats("node", graph.node_type, graph.node_data),
        edge_feats=feats("edge", graph.edge_type, graph.edge_data), trainers=trainers,
    )


def feature_keys(graph: ChunkedGraph) -> list[tuple[str, str, str, int]]:
    """(kind, type name, feature, expected rows) of every node and edge feature of the graph."""
    keys = [("node", nt, f, graph.num_nodes(nt)) for nt, feats in graph.node_data.items() for f in feats]
    return keys + [("edge", et, f, graph.num_edges(et)) for et, feats in graph.edge_data.items() for f in feats]
