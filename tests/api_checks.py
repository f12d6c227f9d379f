"""Checks shared by the in-memory API tests (default suite and DGL venv): a returned mapping against the written set."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.formats.partition_reader import load_partition, load_partition_book


def check_mapping(config: Path, num_nodes: dict, edges: dict, node_feats: dict, edge_feats: dict,
                  orig_nids: dict, orig_eids: dict) -> None:
    """The mapping takes every inner node's and inner edge's feature row, and every inner edge's ends, back to the
    caller's rows; both mappings are permutations. Types are keyed as in the caller's graph (canonical tuples)."""
    for nt, n in num_nodes.items():
        np.testing.assert_array_equal(np.sort(orig_nids[nt]), np.arange(n))
    for can, (src, _) in edges.items():
        np.testing.assert_array_equal(np.sort(orig_eids[can]), np.arange(len(src)))
    book = load_partition_book(config)
    checked = 0
    for p in range(book.num_partitions()):
        part = load_partition(config, p)
        for nt, feats in node_feats.items():
            rows = orig_nids[nt][book.partid2nids(p, nt)]
            for name, arr in feats.items():
                np.testing.assert_array_equal(part.node_feats[f"{nt}/{name}"], arr[rows])
                checked += len(rows)
        for can, feats in edge_feats.items():
            rows = orig_eids[can][book.partid2eids(p, ":".join(can))]
            for name, arr in feats.items():
                np.testing.assert_array_equal(part.edge_feats[f"{':'.join(can)}/{name}"], arr[rows])
                checked += len(rows)
        checked += _check_inner_edges(part, book, edges, orig_nids, orig_eids)
    assert checked > 0


def _check_inner_edges(part, book, edges: dict, orig_nids: dict, orig_eids: dict) -> int:
    """Each inner edge's original ID points at the caller's edge with the same (original) endpoints."""
    g = part.graph
    inner = g.edata["inner_edge"] == 1
    etids, eids = book.map_to_per_etype(g.edata["_ID"][inner])
    _, src = book.map_to_per_ntype(g.ndata["_ID"][g.src[inner]])
    _, dst = book.map_to_per_ntype(g.ndata["_ID"][g.dst[inner]])
    cans = {":".join(c): c for c in edges}
    for t, name in enumerate(book.etypes):
        can, mask = cans[name], etids == t
        orig = orig_eids[can][eids[mask]]
        np.testing.assert_array_equal(orig_nids[can[0]][src[mask]], edges[can][0][orig])
        np.testing.assert_array_equal(orig_nids[can[2]][dst[mask]], edges[can][1][orig])
    return int(inner.sum())
