"""Partition-quality figures from the per-partition summaries of phase one (no extra pass over the data).

Edge cut: inner edges whose source is owned by another partition (each edge counted once, by its destination's
partition), as a count and a share of all edges. Edge matrix M[q][p]: edges from nodes of partition q into nodes of
partition p. Imbalance of a quantity: max over partitions / mean (1.0 = perfect). Halo share: halo nodes / all nodes
of a partition. Replication factor: nodes stored over all partitions (inner + halo) / nodes of the graph. Remote
share (validate/remote_share.py, added by the step): the estimated share of neighbour-sampled mini-batch input nodes
a trainer fetches from other partitions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.storage import location
from graphshard.validate.layout import Layout

ASSIGNMENT_REPORT = "assignment_report.json"


def imbalance(values) -> float:
    """max / mean (1.0 when all are equal or all are zero)."""
    arr = np.asarray(values, dtype=np.float64)
    mean = arr.mean() if arr.size else 0.0
    return float(arr.max() / mean) if mean > 0 else 1.0


def assignment_report_data(layout: Layout, assignment_report: str | Path | None) -> tuple[dict | None, str | None]:
    """`assignment_report.json` (given, or beside the config) as a dict, and its path; (None, None) when absent."""
    source = layout.file(location(assignment_report) if assignment_report else layout.under(ASSIGNMENT_REPORT))
    try:
        data = json.loads(source.read_all()) if source.exists() else None
    except (OSError, GraphshardError, json.JSONDecodeError):
        return None, None
    return (data, str(assignment_report or source.shown)) if isinstance(data, dict) else (None, None)


def balance_constraints(layout: Layout, assignment_report: str | Path | None) -> tuple[dict[str, float], str | None]:
    """Imbalance per balance constraint from `assignment_report.json` (given, or beside the config), and its path."""
    data, path = assignment_report_data(layout, assignment_report)
    imb = data.get("imbalance") if data else None
    if not isinstance(imb, dict):
        return {}, None
    return {str(k): float(v) for k, v in imb.items() if isinstance(v, (int, float))}, path


def quality(layout: Layout, summaries: list[dict], assignment_report: str | Path | None = None) -> dict:
    """The figures of the report's quality section."""
    nt, et, P = len(layout.ntypes), len(layout.etypes), layout.num_parts
    zero = {"inner_nodes": [0] * nt, "halo_nodes": [0] * nt, "inner_edges": [0] * et, "halo_edges": [0] * et,
            "edges_from": [0] * P, "cut_in": 0}
    stats = [s["stats"] or zero for s in sorted(summaries, key=lambda s: s["part"])]
    inner_n = np.array([s["inner_nodes"] for s in stats], dtype=np.int64).reshape(P, nt)
    halo_n = np.array([s["halo_nodes"] for s in stats], dtype=np.int64).reshape(P, nt)
    inner_e = np.array([s["inner_edges"] for s in stats], dtype=np.int64).reshape(P, et)
    halo_e = np.array([s["halo_edges"] for s in stats], dtype=np.int64).reshape(P, et)
    matrix = np.array([s["edges_from"] for s in stats], dtype=np.int64).reshape(P, P).T  # [from q][into p]
    cut = int(sum(s["cut_in"] for s in stats))
    num_edges = int(inner_e.sum())
    nodes_total = int(inner_n.sum())
    part_nodes = inner_n.sum(axis=1) + halo_n.sum(axis=1)
    bytes_per = [dict(sorted(s.get("file_bytes", {}).items())) for s in sorted(summaries, key=lambda s: s["part"])]
    constraints, source = balance_constraints(layout, assignment_report)
    return {
        "num_parts": P,
        "ntypes": list(layout.ntypes),
        "etypes": list(layout.etypes),
        "num_nodes": nodes_total,
        "num_edges": num_edges,
        "partitions": [{
            "part": p,
            "inner_nodes": dict(zip(layout.ntypes, inner_n[p].tolist())),
            "halo_nodes": dict(zip(layout.ntypes, halo_n[p].tolist())),
            "inner_edges": dict(zip(layout.etypes, inner_e[p].tolist())),
            "halo_edges": dict(zip(layout.etypes, halo_e[p].tolist())),
            "halo_share": float(halo_n[p].sum() / part_nodes[p]) if part_nodes[p] else 0.0,
            "bytes": int(sum(bytes_per[p].values())),
            "file_bytes": bytes_per[p],
            "readable": summaries[p]["stats"] is not None,
        } for p in range(P)],
        "edge_cut": {"count": cut, "share": cut / num_edges if num_edges else 0.0},
        "edge_matrix": matrix.tolist(),
        "imbalance": {
            "nodes": {t: imbalance(inner_n[:, i]) for i, t in enumerate(layout.ntypes)},
            "edges": {t: imbalance(inner_e[:, i]) for i, t in enumerate(layout.etypes)},
            "all_nodes": imbalance(inner_n.sum(axis=1)),
            "all_edges": imbalance(inner_e.sum(axis=1)),
        },
        "balance_constraints": constraints,
        "balance_constraints_source": source,
        "replication_factor": float(part_nodes.sum() / nodes_total) if nodes_total else 0.0,
        "bytes_total": int(sum(sum(b.values()) for b in bytes_per)),
    }
