"""The rows a partition holds, keyed by original ID, piece by piece: what the input checks compare (by checksum and
sampled rows in phase one, row by row with --full in phase two).

Per edge type: (original edge ID, new src, new dst) of its inner edges, where the inner edge with per-type new ID
`start + i` has original ID `orig_eids[type][i]` (DGL's meaning of the file). Per feature: row i of the tensor and
`orig_nids`/`orig_eids[type][i]`. A sink receives `take(kind, key, n, rank, orig, rows)` per piece, `rank` being
the rows' positions 0..n-1 in new-ID order (or the first position, an int, when they are consecutive), after
`declare(kind, key, n)` once per key (also for keys with no rows). Edge rows come as a list of two int64 columns
(new src, new dst): `stacked` makes the (n, 2) rows where needed.
"""

from __future__ import annotations

import numpy as np

from graphshard.validate import hashing
from graphshard.validate.checks import NodeView, split_feature_key
from graphshard.validate.edges import EdgePiece
from graphshard.validate.layout import Layout
from graphshard.validate.part_files import PartData
from graphshard.validate.piecewise import byte_pieces
from graphshard.validate.sampling import sample_rows


def stacked(rows: np.ndarray | list[np.ndarray]) -> np.ndarray:
    """Rows given as an array, or as a list of 1-D columns, as one array."""
    return np.stack(rows, axis=1) if isinstance(rows, list) else rows


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
        inner, (new_src, new_dst) = e.inner_idx(), e.inner_new_ends(self.v)
        for t, (col, start) in self.cols.items():
            sel = np.flatnonzero(e.etype[inner] == t) if len(self.layout.etypes) > 1 else None
            rank = e.eid[inner if sel is None else inner[sel]] - start
            ends = [new_src, new_dst] if sel is None else [new_src[sel], new_dst[sel]]
            ok = (rank >= 0) & (rank < col.rows)
            if not ok.all():
                rank, ends = rank[ok], [x[ok] for x in ends]
            if not rank.size:
                continue
            lo, hi = int(rank.min()), int(rank.max()) + 1
            orig = col.read(lo, hi)
            run = hi - lo == rank.size and (rank[1:] > rank[:-1]).all()  # ranks lo..hi-1 in order (our files)
            self.sink.take("edges", self.layout.etypes[t], col.rows, lo if run else rank, orig if run else
                           orig[rank - lo], ends)


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
                sink.take(kind, name, col.rows, a, orig.read(a, b), col.read(a, b))


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

    def take(self, kind: str, key: str, n: int, rank: np.ndarray | int, orig: np.ndarray, rows) -> None:
        k = (kind, key)
        (total,) = hashing.pair_sums(orig, *rows) if isinstance(rows, list) else hashing.row_sums(orig, rows)
        self.sums[k] = hashing.add(self.sums[k], total)
        if not self.full:
            pick = self.picks[k]
            if isinstance(rank, (int, np.integer)):  # consecutive positions: the picks inside them
                a, b = np.searchsorted(pick, [rank, rank + orig.shape[0]])
                sel, rank = pick[a:b] - rank, pick[a:b]
            else:
                pos = np.minimum(np.searchsorted(pick, rank), max(pick.size - 1, 0))
                sel = np.flatnonzero(pick[pos] == rank) if pick.size else np.zeros(0, np.int64)
                rank = rank[sel]
            if sel.size:
                rows = [c[sel] for c in rows] if isinstance(rows, list) else rows[sel]
                self.found[k].append((rank, orig[sel], np.ascontiguousarray(stacked(rows))))

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

