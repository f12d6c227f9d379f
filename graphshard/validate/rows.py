"""The rows a partition holds, keyed by original ID, piece by piece: what the input checks compare (by checksum and
sampled rows in phase one, row by row with --full in phase two).

Per edge type: (original edge ID, new src, new dst) of its inner edges, where the inner edge with per-type new ID
`start + i` has original ID `orig_eids[type][i]` (DGL's meaning of the file). Per feature: row i of the tensor and
`orig_nids`/`orig_eids[type][i]`. A sink receives `take(kind, key, n, rank, orig, rows)` per piece, `rank` being the
rows' positions 0..n-1 in new-ID order, after `declare(kind, key, n)` once per key (also for keys with no rows).
"""

from __future__ import annotations

import numpy as np

from graphshard.validate import hashing
from graphshard.validate.checks import NodeView, split_feature_key
from graphshard.validate.edges import EdgePiece
from graphshard.validate.layout import Layout
from graphshard.validate.lazy import byte_pieces
from graphshard.validate.part_files import PartData
from graphshard.validate.sampling import sample_rows


class EdgeRows:
    """Feeds a sink the (original ID, new ends) rows of the inner edges of each piece, per edge type."""

    def __init__(self, data: PartData, v: NodeView, layout: Layout, sink):
        self.v, self.layout, self.sink, self.cols = v, layout, sink, {}
        for t, et in enumerate(layout.etypes):
            col, (s, e) = (data.orig_eids or {}).get(et), layout.edge_ranges[t, data.part]
            if col is not None and col.shape == (e - s,):
                self.cols[t] = (col, int(s))
                sink.declare("edges", et, e - s)

    def add(self, e: EdgePiece) -> None:
        for t, (col, start) in self.cols.items():
            idx = np.flatnonzero(e.inner_edge & (e.etype == t) if len(self.layout.etypes) > 1 else e.inner_edge)
            rank = e.eid[idx] - start
            ok = (rank >= 0) & (rank < col.rows)
            if not ok.all():
                idx, rank = idx[ok], rank[ok]
            if not idx.size:
                continue
            lo, hi = int(rank.min()), int(rank.max()) + 1
            orig = col.read(lo, hi)
            orig = orig if hi - lo == rank.size and (rank[1:] > rank[:-1]).all() else orig[rank - lo]
            rows = np.stack([self.v.nid[e.src[idx]], self.v.nid[e.dst[idx]]], axis=1)
            self.sink.take("edges", self.layout.etypes[t], col.rows, rank, orig, rows)


def feature_rows(data: PartData, layout: Layout, sink) -> None:
    """Feeds a sink every feature's rows with their original IDs, piece by piece."""
    for kind, feats, types, orig_ids in (("node_feat", data.node_feats, layout.ntypes, data.orig_nids),
                                         ("edge_feat", data.edge_feats, layout.etypes, data.orig_eids)):
        for key, col in (feats or {}).items():
            split = split_feature_key(key, types, types[0])
            orig = (orig_ids or {}).get(split[0]) if split else None
            if orig is None or col.ndim == 0 or orig.rows != col.rows:
                continue
            name = f"{split[0]}/{split[1]}"
            sink.declare(kind, name, col.rows)
            for a, b in byte_pieces(col):
                sink.take(kind, name, col.rows, np.arange(a, b, dtype=np.int64), orig.read(a, b), col.read(a, b))


class SumsAndSamples:
    """Checksums over every row, and the seeded sample of rows (sampled mode), per (kind, key)."""

    def __init__(self, part: int, full: bool, seed: int, sample_size: int):
        self.part, self.full, self.seed, self.size = part, full, seed, sample_size
        self.sums, self.picks, self.found = {}, {}, {}

    def declare(self, kind: str, key: str, n: int) -> None:
        self.sums[(kind, key)] = 0
        if not self.full:
            self.picks[(kind, key)] = sample_rows(n, False, self.seed, self.part, key, self.size)
            self.found[(kind, key)] = []

    def take(self, kind: str, key: str, n: int, rank: np.ndarray, orig: np.ndarray, rows: np.ndarray) -> None:
        k = (kind, key)
        self.sums[k] = hashing.add(self.sums[k], hashing.hash_sum(orig, rows))
        if not self.full:
            pick = self.picks[k]
            pos = np.minimum(np.searchsorted(pick, rank), max(pick.size - 1, 0))
            sel = np.flatnonzero(pick[pos] == rank) if pick.size else np.zeros(0, np.int64)
            if sel.size:
                self.found[k].append((rank[sel], orig[sel], np.ascontiguousarray(rows[sel])))

    def samples(self) -> dict:
        out = {}
        for k, parts in self.found.items():
            if not parts:  # still compared: a key the input lacks is a problem even without rows
                out[k] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
                continue
            rank = np.concatenate([p[0] for p in parts])
            order = np.argsort(rank, kind="stable")
            out[k] = (np.concatenate([p[1] for p in parts])[order], np.concatenate([p[2] for p in parts])[order])
        return out

