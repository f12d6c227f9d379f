"""Writes a chunked graph one chunk at a time: what the generators and both chunkers (an OGB-style folder,
`graphshard.chunk_graph`'s in-memory graph) share.

The graph is built in a temporary sibling folder and renamed into place by `finish()`, so a failed run never leaves
something that looks like a finished chunked graph. On an object store (`out_dir` a URL) there is no rename: each
file is written in place through the storage layer and `metadata.json`, which names them, goes last.
`write_edge_type`/`write_node_type` write one type's rows slice by slice (the chunkers' loop); `spec_formats` says
which file format each spec gets ("mixed" cycles through them).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import BinaryIO, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from graphshard.atomic import move_into_place, output_folder, staging_dir
from graphshard.errors import GraphshardError
from graphshard.formats.arrow import numpy_table
from graphshard.formats.chunked import FORMAT_NAMES, parse_metadata
from graphshard.formats.overwrite import check_replaceable, in_chunked_graph
from graphshard.storage import Location, Storage, location

WRITE_FORMATS = (*FORMAT_NAMES, "mixed")
# "mixed" cycles through the formats spec by spec (edges of one type, one feature, ...), in this order.
_MIXED_CYCLE = ("parquet", "numpy", "csv")


def _write_numpy(fh: BinaryIO, arr: np.ndarray, delimiter: str) -> None:
    np.save(fh, arr, allow_pickle=False)


def _write_parquet(fh: BinaryIO, arr: np.ndarray, delimiter: str) -> None:
    """One column per value of a row; rows of more than one dimension flattened, their shape recorded in the schema
    metadata as DGL's parquet writer does (`shape`, which its reader and ours reshape by)."""
    flat = arr.reshape(len(arr), int(np.prod(arr.shape[1:]))) if arr.ndim > 2 else arr  # no rows: still its width
    cols = [flat] if flat.ndim == 1 else [flat[:, i] for i in range(flat.shape[1])]
    table = numpy_table(cols, [f"c{i}" for i in range(len(cols))])
    if arr.ndim > 2:
        table = table.replace_schema_metadata({"shape": str(arr.shape)})
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf)
    fh.write(buf.getvalue())


def _write_csv(fh: BinaryIO, arr: np.ndarray, delimiter: str) -> None:
    if arr.ndim > 2:
        raise GraphshardError(f"csv: expected rows of one dimension, found rows of shape {arr.shape[1:]}; write "
                              "this feature as numpy or parquet")
    cols = [arr] if arr.ndim == 1 else [arr[:, i] for i in range(arr.shape[1])]
    table = numpy_table(cols, [f"c{i}" for i in range(len(cols))])
    buf = pa.BufferOutputStream()
    pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="none"))
    fh.write(buf.getvalue())


WRITERS = {"numpy": (_write_numpy, ".npy"), "parquet": (_write_parquet, ".parquet"), "csv": (_write_csv, ".csv")}


class ChunkedGraphWriter:
    """Accumulates chunk files and their row counts; `finish()` writes metadata.json and publishes the folder."""

    def __init__(self, out_dir: str | Path | Location, graph_name: str, node_types: list[str], edge_types: list[str],
                 overwrite: bool = False, delimiter: str = " ", storage: Storage | None = None):
        self.out, self.storage = location(out_dir), storage or Storage()
        if self.out.is_local:  # a link: the folder it points at (made there when it points at nothing yet)
            self.out = location(output_folder(self.out.path, overwrite))
        self.out_dir = Path(self.out.path) if self.out.is_local else self.out
        exists = self.out_dir.exists() if self.out.is_local else bool(self.storage.listing(self.out))
        if exists and not overwrite:
            raise GraphshardError(f"{self.out_dir}: output folder exists (pass --overwrite to replace it)")
        if exists:
            check_replaceable(self.out, self.storage, in_chunked_graph(self.out, self.storage), "a chunked graph")
        if exists and not self.out.is_local:
            self.storage.delete_prefix(self.out)  # no rename on a store: the earlier graph goes before the new one
        self.overwrite = overwrite
        self.graph_name = graph_name
        self.node_types = list(node_types)
        self.edge_types = list(edge_types)
        self.delimiter = delimiter
        self._stage = location(staging_dir(self.out_dir)) if self.out.is_local else self.out
        self._nodes_per_chunk: dict[str, list[int]] = {nt: [] for nt in node_types}
        self._edges: dict[str, dict] = {}
        self._edges_per_chunk: dict[str, list[int]] = {et: [] for et in edge_types}
        self._node_data: dict[str, dict[str, dict]] = defaultdict(dict)
        self._edge_data: dict[str, dict[str, dict]] = defaultdict(dict)

    def _write(self, rel: str, arr: np.ndarray, fmt: str) -> str:
        if fmt not in FORMAT_NAMES:
            raise GraphshardError(f"unsupported chunk format '{fmt}': expected one of {FORMAT_NAMES}")
        fn, ext = WRITERS[fmt]
        with self.storage.write_atomic(self._stage.join(rel + ext), sync=False) as fh:
            fn(fh, arr, self.delimiter)
        return rel + ext

    def _spec(self, store: dict, fmt: str) -> dict:
        if not store:
            store.update({"format": {"name": fmt, **({"delimiter": self.delimiter} if fmt == "csv" else {})},
                          "data": []})
        elif store["format"]["name"] != fmt:
            raise GraphshardError(f"all chunks of one spec must share a format: {store['format']['name']} vs {fmt}")
        return store

    def set_node_chunks(self, ntype: str, counts: list[int]) -> None:
        """Rows per node chunk of a type (needed even for types without features)."""
        self._nodes_per_chunk[ntype] = [int(c) for c in counts]

    def add_edges(self, etype: str, src: np.ndarray, dst: np.ndarray, fmt: str) -> None:
        """Append one edge chunk (per-type src and dst IDs)."""
        spec = self._spec(self._edges.setdefault(etype, {}), fmt)
        chunk = len(spec["data"])
        rel = f"edges/{etype.replace(':', '__')}-{chunk}"
        spec["data"].append(self._write(rel, np.stack([src, dst], axis=1).astype(np.int64, copy=False), fmt))
        self._edges_per_chunk[etype].append(int(len(src)))

    def add_node_feature(self, ntype: str, feat: str, arr: np.ndarray, fmt: str) -> None:
        """Append one chunk of a node feature."""
        spec = self._spec(self._node_data[ntype].setdefault(feat, {}), fmt)
        spec["data"].append(self._write(f"node_data/{ntype}-{feat}-{len(spec['data'])}", arr, fmt))

    def add_edge_feature(self, etype: str, feat: str, arr: np.ndarray, fmt: str) -> None:
        """Append one chunk of an edge feature."""
        spec = self._spec(self._edge_data[etype].setdefault(feat, {}), fmt)
        rel = f"edge_data/{etype.replace(':', '__')}-{feat}-{len(spec['data'])}"
        spec["data"].append(self._write(rel, arr, fmt))

    def finish(self) -> Path | Location:
        """Write metadata.json (validated) and move the folder into place (on a store: metadata.json written last);
        returns the metadata's path (a Location for a URL)."""
        meta = {
            "graph_name": self.graph_name,
            "node_type": self.node_types,
            "num_nodes_per_chunk": [self._nodes_per_chunk[nt] for nt in self.node_types],
            "edge_type": self.edge_types,
            "num_edges_per_chunk": [self._edges_per_chunk[et] for et in self.edge_types],
            "edges": self._edges,
            "node_data": dict(self._node_data),
            "edge_data": dict(self._edge_data),
        }
        target = self._stage.join("metadata.json")
        graph = parse_metadata(meta, self._stage, target)
        self.storage.write_bytes(target, json.dumps(graph.to_json_dict(), indent=2).encode())
        if not self.out.is_local:
            return self.out.join("metadata.json")
        move_into_place(Path(self._stage.path), self.out_dir, overwrite=self.overwrite)
        return self.out_dir / "metadata.json"

    def abort(self) -> None:
        """Delete what was written (the staging folder; on a store, the objects under the output prefix)."""
        self.storage.delete_prefix(self._stage)

    def __enter__(self) -> "ChunkedGraphWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()


def check_format(fmt: str, option: str = "--format") -> None:
    """Reject a format name the writers cannot write (`option`: how the caller's user names it)."""
    if fmt not in WRITE_FORMATS:
        raise GraphshardError(f"{option}: expected one of {', '.join(WRITE_FORMATS)}, found '{fmt}'")


def spec_format(fmt: str, index: int) -> str:
    """The file format of the `index`-th spec of a graph: `fmt` itself, or a cycle through all formats for 'mixed'."""
    return _MIXED_CYCLE[index % len(_MIXED_CYCLE)] if fmt == "mixed" else fmt


def spec_formats(fmt: str, names: Sequence[str]) -> dict[str, str]:
    """The file format of each named spec (edges of a type, then its features, ...), in the order given."""
    return {name: spec_format(fmt, i) for i, name in enumerate(names)}


def positive(name: str, value: int, minimum: int = 1, prefix: str = "--") -> int:
    """Validate a size option (`prefix` + `name`: how the caller's user names it, a CLI flag by default)."""
    if int(value) < minimum:
        raise GraphshardError(f"{prefix}{name}: expected an integer >= {minimum}, found {value}")
    return int(value)


Ends = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


def write_edge_type(writer: ChunkedGraphWriter, etype: str, bounds: Sequence[int], ends: Ends,
                    feats: Mapping[str, np.ndarray], formats: Mapping[str, str]) -> None:
    """One edge type, chunk by chunk: `ends(lo, hi)` gives the (checked) source and destination IDs of rows
    [lo, hi); feature `f` (an array or memory map) is sliced alike and written with format `formats[f"{etype}/{f}"]`."""
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        src, dst = ends(lo, hi)
        writer.add_edges(etype, src, dst, formats[etype])
        for f, arr in feats.items():
            writer.add_edge_feature(etype, f, np.ascontiguousarray(arr[lo:hi]), formats[f"{etype}/{f}"])


def write_node_type(writer: ChunkedGraphWriter, ntype: str, bounds: Sequence[int], feats: Mapping[str, np.ndarray],
                    formats: Mapping[str, str]) -> None:
    """One node type's chunk sizes and its features, chunk by chunk (format `formats[f"{ntype}/{f}"]`)."""
    writer.set_node_chunks(ntype, np.diff(bounds).tolist())
    for f, arr in feats.items():
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            writer.add_node_feature(ntype, f, np.ascontiguousarray(arr[lo:hi]), formats[f"{ntype}/{f}"])
