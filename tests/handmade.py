"""A tiny in-memory partitioner for tests of the readers (independent of graphshard.shuffle).

Builds a partition set by the reference rules (formats.md §3): new IDs partition-major then type, original order
inside a group; edges owned by their destination's partition; owned in-edges only (halo hops 1, DGL pipeline style).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphshard.formats.dgl_binary import save_graph, save_tensor_dict
from graphshard.formats.partition_config import PartitionConfig


@dataclass
class ToyGraph:
    """Per-type nodes and edges (per-type IDs), their features and a partition per node."""

    ntypes: list[str]
    num_nodes: dict[str, int]
    etypes: list[str]  # canonical src:rel:dst
    edges: dict[str, tuple[np.ndarray, np.ndarray]]
    parts: dict[str, np.ndarray]
    num_parts: int
    node_feats: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    edge_feats: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


def toy_hetero(num_parts: int = 3, seed: int = 0) -> ToyGraph:
    """Authors write papers, papers cite papers; no author lands in partition 1."""
    rng = np.random.default_rng(seed)
    n = {"author": 6, "paper": 10}
    parts = {"author": rng.choice([p for p in range(num_parts) if p != 1 or num_parts == 1], n["author"]),
             "paper": rng.integers(0, num_parts, n["paper"])}
    edges = {"author:writes:paper": (rng.integers(0, 6, 14), rng.integers(0, 10, 14)),
             "paper:cites:paper": (rng.integers(0, 10, 20), rng.integers(0, 10, 20))}
    return ToyGraph(
        ntypes=["author", "paper"], num_nodes=n, etypes=list(edges), edges=edges, parts=parts, num_parts=num_parts,
        node_feats={"author": {"age": rng.integers(20, 80, 6).astype(np.int32)},
                    "paper": {"feat": rng.standard_normal((10, 4)).astype(np.float32),
                              "train_mask": rng.random(10) < 0.5}},
        edge_feats={"paper:cites:paper": {"weight": rng.random(20)}},
    )


def toy_homo(num_parts: int = 2, seed: int = 0, num_nodes: int = 12, num_edges: int = 40) -> ToyGraph:
    rng = np.random.default_rng(seed)
    return ToyGraph(
        ntypes=["_N"], num_nodes={"_N": num_nodes}, etypes=["_N:_E:_N"],
        edges={"_N:_E:_N": (rng.integers(0, num_nodes, num_edges), rng.integers(0, num_nodes, num_edges))},
        parts={"_N": rng.integers(0, num_parts, num_nodes)}, num_parts=num_parts,
        node_feats={"_N": {"feat": rng.standard_normal((num_nodes, 3)).astype(np.float32)}},
        edge_feats={"_N:_E:_N": {"w": rng.random(num_edges).astype(np.float32)}},
    )


def _new_ids(groups: list[np.ndarray], num_parts: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Counts (parts, types) and per type the new homogeneous ID of each item, given its partition."""
    counts = np.array([np.bincount(g, minlength=num_parts) for g in groups], dtype=np.int64).T.reshape(num_parts, -1)
    ends = np.cumsum(counts.ravel()).reshape(counts.shape)
    starts = ends - counts
    new = []
    for t, g in enumerate(groups):
        ids = np.empty(len(g), dtype=np.int64)
        for p in range(num_parts):
            members = np.flatnonzero(g == p)
            ids[members] = starts[p, t] + np.arange(len(members))
        new.append(ids)
    return counts, new


def write_partitions(g: ToyGraph, out: Path, graph_name: str = "toy", formats=("coo",)) -> Path:
    """Write `g` as a partition set under `out`; returns the config path."""
    node_counts, nid = _new_ids([g.parts[t] for t in g.ntypes], g.num_parts)
    src_type = {e: g.ntypes.index(e.split(":")[0]) for e in g.etypes}
    dst_type = {e: g.ntypes.index(e.split(":")[2]) for e in g.etypes}
    owner = [g.parts[g.ntypes[dst_type[e]]][g.edges[e][1]] for e in g.etypes]
    edge_counts, eid = _new_ids(owner, g.num_parts)
    cfg = PartitionConfig.from_counts(graph_name, g.ntypes, g.etypes, node_counts, edge_counts, "random", 1)
    homo_src = np.concatenate([nid[src_type[e]][g.edges[e][0]] for e in g.etypes])
    homo_dst = np.concatenate([nid[dst_type[e]][g.edges[e][1]] for e in g.etypes])
    homo_eid = np.concatenate(eid)
    etype_of = np.concatenate([np.full(len(eid[i]), i, dtype=np.int32) for i in range(len(g.etypes))])
    all_nid = np.concatenate(nid)
    ntype_of = np.concatenate([np.full(len(nid[i]), i, dtype=np.int16) for i in range(len(g.ntypes))])
    part_of_node = np.concatenate([g.parts[t] for t in g.ntypes])
    for p in range(g.num_parts):
        pdir = out / f"part{p}"
        pdir.mkdir(parents=True)
        start, end = cfg.node_ranges()[0, p, 0], cfg.node_ranges()[-1, p, 1]
        owned_e = np.flatnonzero((homo_dst >= start) & (homo_dst < end))
        owned_e = owned_e[np.argsort(homo_eid[owned_e])]
        srcs = homo_src[owned_e]
        halo = np.unique(srcs[(srcs < start) | (srcs >= end)])
        local_homo = np.concatenate([np.arange(start, end), halo])
        order = np.argsort(all_nid)  # homogeneous ID -> position in the concatenated per-type arrays
        pos = order[local_homo]
        to_local = {int(h): i for i, h in enumerate(local_homo)}
        ndata = {"_ID": local_homo, "inner_node": (np.arange(len(local_homo)) < end - start).astype(np.uint8),
                 "part_id": part_of_node[pos].astype(np.int64), "_TYPE": ntype_of[pos]}
        edata = {"_ID": homo_eid[owned_e], "inner_edge": np.ones(len(owned_e), dtype=np.uint8),
                 "_TYPE": etype_of[owned_e]}
        save_graph(pdir / "graph.dgl", len(local_homo), np.array([to_local[int(s)] for s in srcs], dtype=np.int64),
                   np.array([to_local[int(d)] for d in homo_dst[owned_e]], dtype=np.int64), ndata, edata, formats)
        nfeat, orig_n = {}, {}
        for t, name in enumerate(g.ntypes):
            ids = np.flatnonzero(g.parts[name] == p)  # original IDs in original order = new-ID order
            orig_n[name] = ids.astype(np.int64)
            for feat, arr in g.node_feats.get(name, {}).items():
                nfeat[f"{name}/{feat}"] = arr[ids]
        efeat, orig_e = {}, {}
        for i, name in enumerate(g.etypes):
            ids = np.flatnonzero(owner[i] == p)
            orig_e[name] = ids.astype(np.int64)
            for feat, arr in g.edge_feats.get(name, {}).items():
                efeat[f"{name}/{feat}"] = arr[ids]
        save_tensor_dict(pdir / "node_feat.dgl", nfeat)
        save_tensor_dict(pdir / "edge_feat.dgl", efeat)
        save_tensor_dict(pdir / "orig_nids.dgl", orig_n)
        save_tensor_dict(pdir / "orig_eids.dgl", orig_e)
    return cfg.save(out / f"{graph_name}.json")
