"""Read a partition set back from disk without DGL: graph arrays, features, the partition book, original IDs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.dgl_binary import LocalGraph, load_graph, load_tensor_dict
from graphshard.formats.partition_book import PartitionBook
from graphshard.formats.partition_config import PartitionConfig

ORIG_FILES = {"node": "orig_nids.dgl", "edge": "orig_eids.dgl"}


@dataclass
class Partition:
    """One partition as `dgl.distributed.load_partition` returns it, in numpy."""

    part_id: int
    graph: LocalGraph
    node_feats: dict[str, np.ndarray]  # "<ntype>/<feat>"
    edge_feats: dict[str, np.ndarray]  # "<src:rel:dst>/<feat>"
    book: PartitionBook
    graph_name: str
    ntypes: dict[str, int]
    etypes: dict[str, int]


def load_partition_book(config_path: str | Path) -> PartitionBook:
    """The partition book of a partition set; `book.config` holds the parsed config."""
    return PartitionBook.load(config_path)


def _part_files(config_path: Path, config: PartitionConfig, part_id: int) -> dict[str, Path]:
    if not 0 <= part_id < config.num_parts:
        raise InputError(config_path, "num_parts", f"a partition id in 0..{config.num_parts - 1}", part_id)
    return config.part_paths(config_path.parent, part_id)


def load_partition_feats(config_path: str | Path, part_id: int, load_nodes: bool = True, load_edges: bool = True
                         ) -> tuple[dict[str, np.ndarray] | None, dict[str, np.ndarray] | None]:
    """(node features, edge features) of one partition, keyed as stored; None for a kind not asked for."""
    config_path = Path(config_path)
    files = _part_files(config_path, PartitionConfig.load(config_path), part_id)
    return (load_tensor_dict(files["node_feats"]) if load_nodes else None,
            load_tensor_dict(files["edge_feats"]) if load_edges else None)


def load_partition(config_path: str | Path, part_id: int, load_feats: bool = True) -> Partition:
    """Partition `part_id`: local graph (owned nodes/edges first), features, book, names and type ids."""
    config_path = Path(config_path)
    book = load_partition_book(config_path)
    config = book.config
    files = _part_files(config_path, config, part_id)
    graph = load_graph(files["part_graph"])
    node_feats = load_tensor_dict(files["node_feats"]) if load_feats else {}
    edge_feats = load_tensor_dict(files["edge_feats"]) if load_feats else {}
    return Partition(part_id=part_id, graph=graph, node_feats=node_feats, edge_feats=edge_feats, book=book,
                     graph_name=config.graph_name, ntypes=dict(config.ntypes), etypes=dict(config.etypes))


def load_orig_ids(config_path: str | Path, part_id: int, kind: Literal["node", "edge"] = "node"
                  ) -> dict[str, np.ndarray]:
    """{type: original per-type IDs of the partition's owned nodes (edges), in new-ID order}."""
    config_path = Path(config_path)
    return load_tensor_dict(_orig_path(config_path, PartitionConfig.load(config_path), part_id, kind))


def _orig_path(config_path: Path, config: PartitionConfig, part_id: int, kind: Literal["node", "edge"]) -> Path:
    """The original-ID file sits beside the partition's graph.dgl."""
    path = _part_files(config_path, config, part_id)["part_graph"].parent / ORIG_FILES[kind]
    if not path.exists():
        flag = "--save-orig-nids" if kind == "node" else "--save-orig-eids"
        raise InputError(path, None, f"an original-ID file (partition with {flag})", "no such file")
    return path


def to_original_order(config_path: str | Path, arrays: np.ndarray, ntype: str,
                      kind: Literal["node", "edge"] = "node") -> np.ndarray:
    """Rows indexed by new per-type ID of `ntype` (an etype when kind="edge") -> rows in original per-type ID order.

    DGL's `return_mapping` use case: e.g. embeddings computed on the partitioned graph, mapped back to input IDs.
    Reads one partition's original-ID file at a time.
    """
    config_path = Path(config_path)
    config = PartitionConfig.load(config_path)
    arrays = np.asarray(arrays)
    book = PartitionBook(config, config_path)
    ranges = book.nodes if kind == "node" else book.edges
    t = ranges.type_id(ntype)
    total = int(ranges.typed_ends[t, -1])
    if arrays.shape[0] != total:
        raise ValueError(f"expected {total} rows for {kind} type '{ntype}', got {arrays.shape[0]}")
    out = np.empty_like(arrays)
    filled = np.zeros(total, dtype=bool)
    for p in range(config.num_parts):
        start, end = int(ranges.typed_starts[t, p]), int(ranges.typed_ends[t, p])
        path = _orig_path(config_path, config, p, kind)
        orig = load_tensor_dict(path).get(ntype, np.zeros(0, dtype=np.int64))
        if orig.shape[0] != end - start:
            raise InputError(path, ntype, f"{end - start} original IDs (the partition's owned count)", orig.shape[0])
        if orig.size and (orig.min() < 0 or orig.max() >= total):
            raise InputError(path, ntype, f"original IDs in 0..{total - 1}", f"{orig.min()}..{orig.max()}")
        out[orig] = arrays[start:end]
        filled[orig] = True
    if not filled.all():
        raise InputError(config_path, ORIG_FILES[kind], f"original IDs of '{ntype}' forming a permutation",
                         f"{int((~filled).sum())} IDs never listed")
    return out
