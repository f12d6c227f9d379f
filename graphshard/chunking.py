"""Turn an OGB-style folder of .npy arrays into a chunked graph, streaming through memory maps.

Input layout (the folder `src`):
    meta.json                           {"num_nodes": {"<ntype>": count, ...}, "graph_name": "<name>" (optional)}
    <src>___<rel>___<dst>/edge_index.npy   per edge type, integer, shape (2, E) or (E, 2), per-type node IDs
    <src>___<rel>___<dst>/<name>.npy       edge feature `name` minus an `edge_` prefix, E rows
    <ntype>/<name>.npy                     node feature `name` minus a `node_` prefix (node_feat.npy -> feat), N rows
Node types come in meta.json's order, edge types in sorted folder order. Every type is split into C chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError, InputError
from graphshard.formats.chunked import chunk_bounds
from graphshard.formats.chunked_writer import (
    ChunkedGraphWriter,
    check_format,
    positive,
    spec_formats,
    write_edge_type,
    write_node_type,
)
from graphshard.formats.jsonfile import read_json_object
from graphshard.storage import inside

META = "meta.json"
EDGE_INDEX = "edge_index.npy"
ETYPE_SEP = "___"


@dataclass
class OgbLayout:
    """What an OGB-style folder holds: node counts, edge index files and feature files per type."""

    graph_name: str
    num_nodes: dict[str, int]
    edge_index: dict[str, Path] = field(default_factory=dict)  # canonical etype -> file
    node_feats: dict[str, dict[str, Path]] = field(default_factory=dict)
    edge_feats: dict[str, dict[str, Path]] = field(default_factory=dict)


def _feature_files(folder: Path, prefix: str, skip: str = "") -> dict[str, Path]:
    return {p.stem.removeprefix(prefix): p for p in sorted(folder.glob("*.npy")) if p.name != skip}


def _read_meta(path: Path) -> tuple[str | None, dict[str, int]]:
    data = read_json_object(path, 'meta.json giving node counts: {"num_nodes": {"<ntype>": count}}')
    counts = data.get("num_nodes")
    if not isinstance(counts, dict) or not counts:
        raise InputError(path, "num_nodes", "an object {ntype: node count} with at least one type", counts)
    for nt, n in counts.items():
        if not isinstance(n, int) or n < 0:
            raise InputError(path, f"num_nodes.{nt}", "an integer >= 0", n)
    return data.get("graph_name"), counts


def scan(src: str | Path) -> OgbLayout:
    """Find the node counts, edge types and features of an OGB-style folder; reject anything it cannot place."""
    src = Path(src)
    name, counts = _read_meta(src / META)
    graph_name = name or re.sub(r"[^A-Za-z0-9_]", "_", src.resolve().name)
    layout = OgbLayout(graph_name, counts)
    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        parts = folder.name.split(ETYPE_SEP)
        if len(parts) == 3:
            etype = ":".join(parts)
            for end in (parts[0], parts[2]):
                if end not in counts:
                    raise InputError(folder, "edge type folder", f"node types listed in {META} num_nodes "
                                     f"{list(counts)}", f"'{end}'")
            if not (folder / EDGE_INDEX).exists():
                raise InputError(folder / EDGE_INDEX, etype, "an edge_index.npy for every edge type folder",
                                 "no such file")
            layout.edge_index[etype] = folder / EDGE_INDEX
            layout.edge_feats[etype] = _feature_files(folder, "edge_", skip=EDGE_INDEX)
        elif folder.name in counts:
            layout.node_feats[folder.name] = _feature_files(folder, "node_")
        else:
            raise InputError(folder, "folder name", f"a node type from {META} {list(counts)} or "
                             f"'<src>{ETYPE_SEP}<rel>{ETYPE_SEP}<dst>'", f"'{folder.name}'")
    if not layout.edge_index:
        raise InputError(src, "edge types", f"at least one '<src>{ETYPE_SEP}<rel>{ETYPE_SEP}<dst>/{EDGE_INDEX}'",
                         "none")
    return layout


def _load(path: Path, what: str) -> np.ndarray:
    """A memory map of a .npy file (nothing is read until sliced)."""
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as err:  # noqa: BLE001 - re-raised with the file name
        raise InputError(path, what, "a readable .npy array of numbers", f"{type(err).__name__}: {err}") from None


def _edge_view(path: Path, etype: str) -> tuple[np.ndarray, bool]:
    """The memory-mapped edge index and whether it is stored as (2, E) (else (E, 2))."""
    arr = _load(path, etype)
    if arr.ndim != 2 or 2 not in arr.shape:
        raise InputError(path, etype, "an edge index of shape (2, E) or (E, 2)", f"shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InputError(path, etype, "integer node IDs", f"dtype {arr.dtype}")
    return arr, arr.shape[0] == 2


def _rows(path: Path, expected: int, what: str) -> np.ndarray:
    """A memory-mapped feature file, checked for its row count, rank and dtype."""
    arr = _load(path, what)
    if arr.ndim == 0 or arr.shape[0] != expected:
        raise InputError(path, what, f"an array of {expected} rows", f"shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise InputError(path, what, "a numeric or bool dtype", f"dtype {arr.dtype}")
    return arr


def _check_range(ids: np.ndarray, n: int, path: Path, etype: str, end: str, offset: int) -> None:
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        bad = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
        raise InputError(path, f"{etype} {end}", f"IDs in [0, {n})", f"{int(ids[bad])} at edge {offset + bad}")


def chunk_ogb(src: str | Path, out_dir: str | Path, chunks: int, fmt: str = "numpy",
              overwrite: bool = False) -> Path:
    """Write the OGB-style folder `src` as a chunked graph of `chunks` chunks per type.

    Parameters
    ----------
    src : str or Path
        The folder (meta.json, `<src>___<rel>___<dst>/edge_index.npy`, feature `.npy` files).
    out_dir : str or Path
        The chunked graph's folder.
    chunks : int
        Chunks per node and edge type.
    fmt : str
        numpy, parquet, csv or mixed.
    overwrite : bool
        Replace an existing `out_dir`.

    Returns
    -------
    Path
        The written metadata.json.
    """
    check_format(fmt)
    chunks = positive("chunks", chunks)
    if inside(out_dir, src):
        raise GraphshardError(f"--out {out_dir}: inside the OGB folder {src}, where every later `chunk` of it would "
                              "read the chunked graph as one more node type; give a folder outside it")
    layout = scan(src)
    etypes = list(layout.edge_index)
    spec_names = etypes + [f"{et}/{f}" for et in etypes for f in layout.edge_feats[et]]
    spec_names += [f"{nt}/{f}" for nt, feats in layout.node_feats.items() for f in feats]
    formats = spec_formats(fmt, spec_names)
    with ChunkedGraphWriter(out_dir, layout.graph_name, list(layout.num_nodes), etypes,
                            overwrite=overwrite) as writer:
        for et in etypes:
            path = layout.edge_index[et]
            arr, by_row = _edge_view(path, et)
            n_edges = arr.shape[1] if by_row else arr.shape[0]
            feats = {f: _rows(p, n_edges, f"{et} edge feature {f}") for f, p in layout.edge_feats[et].items()}
            write_edge_type(writer, et, chunk_bounds(n_edges, chunks), _checked_ends(layout, et, arr, by_row), feats,
                            formats)
        for nt, n in layout.num_nodes.items():
            feats = {f: _rows(p, n, f"{nt} node feature {f}") for f, p in layout.node_feats.get(nt, {}).items()}
            write_node_type(writer, nt, chunk_bounds(n, chunks), feats, formats)
        return writer.finish()


def _checked_ends(layout: OgbLayout, etype: str, arr: np.ndarray, by_row: bool):
    """Rows [lo, hi) of a memory-mapped edge index as int64 (src, dst), their IDs checked against the node counts."""
    s_t, _, d_t = etype.split(":")
    path = layout.edge_index[etype]

    def ends(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        s = np.asarray(arr[0, lo:hi] if by_row else arr[lo:hi, 0], dtype=np.int64)
        d = np.asarray(arr[1, lo:hi] if by_row else arr[lo:hi, 1], dtype=np.int64)
        _check_range(s, layout.num_nodes[s_t], path, etype, "src", lo)
        _check_range(d, layout.num_nodes[d_t], path, etype, "dst", lo)
        return s, d

    return ends
