"""DGL's binary files (reference formats.md §4) in numpy + struct: tensor dicts and homogeneous `graph.dgl`.

Arrays are streamed to and from the file without intermediate copies (header via struct, data via memoryview /
readinto). Everything is little-endian, as DGL writes it on x86.
"""

from __future__ import annotations

import struct
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator, Mapping, Sequence

import numpy as np

from graphshard.digests import FileDigest, HashingWriter, written_identity
from graphshard.errors import GraphshardError, InputError
from graphshard.storage import Location, Storage, StoredFile

Target = str | Path | Location | StoredFile  # where a writer writes: a local path, or a URL through the storage layer

NDARRAY_MAGIC = 0xDD5E40F096B4A13F
TENSOR_DICT_MAGIC = 0xDD5A9FBE3FA2443F
GRAPH_FILE_MAGIC = 0xDD2E4FF046B4A13F
HETEROGRAPH_MAGIC = 0xDD589FBE35224ABF
IMMUTABLE_GRAPH_MAGIC = 0xDD3C5FFE20046ABF
UNIT_GRAPH_MAGIC = 0xDD2E60F0F6B4A127
COO_MAGIC = 0xDD61FFD305DFF127
CSR_MAGIC = 0xDD6CD31205DFF127

GRAPH_FILE_VERSION = 2
HETERO_GRAPH_TYPE = 2
HEADER_SIZE = 4096
WALK_BLOCK = 1 << 16  # bytes per ranged request while walking a remote file's headers (arrays: one request each)
FORMAT_FLAG = 1 << 32  # marks a format code as a bit set (DGL >= 0.5)
FORMAT_CODES = {"coo": 1, "csr": 2, "csc": 4}  # also the order in which the sections follow each other
ALL_FORMATS = 7
_LEGACY_FORMAT = {1: 1, 2: 2, 3: 4}  # pre-0.5 files store one SparseFormat enum value (coo, csr, csc)

# DGL type codes (DLPack): numpy kind -> code and back.
_KIND_TO_CODE = {"i": 0, "u": 1, "f": 2}
_CODE_TO_KIND = {v: k for k, v in _KIND_TO_CODE.items()}
_BFLOAT_CODE = 4

_NDARRAY_HEAD = struct.Struct("<QQiii")  # magic, reserved, device type, device id, ndim
_DTYPE = struct.Struct("<BBH")  # type code, bits, lanes
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_U8 = struct.Struct("<B")

_EMPTY_IDS = np.zeros(0, dtype=np.int64)


@dataclass
class LocalGraph:
    """A homogeneous graph as stored in `graph.dgl`: COO in edge-ID order plus node and edge data."""

    num_nodes: int
    src: np.ndarray
    dst: np.ndarray
    ndata: dict[str, np.ndarray] = field(default_factory=dict)
    edata: dict[str, np.ndarray] = field(default_factory=dict)
    formats: tuple[str, ...] = ("coo",)

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])


# ---------------------------------------------------------------- writing


def _storable(arr: np.ndarray) -> np.ndarray:
    """The array as DGL stores it: C-contiguous, little-endian, bool as uint8 (copies only when needed)."""
    arr = np.asarray(arr)
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    if arr.dtype.kind not in _KIND_TO_CODE:
        raise TypeError(f"dtype {arr.dtype} cannot be stored in a DGL file (int, uint, float or bool only)")
    return np.require(arr, dtype=arr.dtype.newbyteorder("<"), requirements="C")


def _write_u64(f: BinaryIO, value: int) -> None:
    f.write(_U64.pack(value))


def _write_string(f: BinaryIO, text: str) -> None:
    data = text.encode("utf-8")
    f.write(_U64.pack(len(data)) + data)


def _write_ndarray(f: BinaryIO, arr: np.ndarray) -> None:
    arr = _storable(arr)
    head = _NDARRAY_HEAD.pack(NDARRAY_MAGIC, 0, 1, 0, arr.ndim)
    head += _DTYPE.pack(_KIND_TO_CODE[arr.dtype.kind], arr.dtype.itemsize * 8, 1)
    head += struct.pack(f"<{arr.ndim}q", *arr.shape)
    head += _I64.pack(arr.nbytes)
    f.write(head)
    if arr.nbytes:
        f.write(memoryview(arr.reshape(-1).view(np.uint8)))


def _write_named_tensors(f: BinaryIO, tensors: Mapping[str, np.ndarray]) -> None:
    _write_u64(f, len(tensors))
    for name, arr in tensors.items():
        _write_string(f, name)
        _write_ndarray(f, arr)


def _write_sparse(f: BinaryIO, magic: int, num_rows: int, num_cols: int, arrays: Sequence[np.ndarray],
                  flags: Sequence[bool]) -> None:
    """A COO or CSR matrix record: magic, num_cols, num_rows, its arrays, its sortedness flags."""
    f.write(_U64.pack(magic) + _I64.pack(num_cols) + _I64.pack(num_rows))
    for arr in arrays:
        _write_ndarray(f, arr)
    f.write(b"".join(_U8.pack(int(flag)) for flag in flags))


def _write_metagraph(f: BinaryIO) -> None:
    """The metagraph of a homogeneous graph: one node type with one self-loop relation."""
    _write_u64(f, IMMUTABLE_GRAPH_MAGIC)
    zero = np.zeros(1, dtype=np.int64)
    _write_sparse(f, CSR_MAGIC, 1, 1, (np.array([0, 1], dtype=np.int64), zero, zero), (False,))


def compressed(rows: np.ndarray, cols: np.ndarray, num_rows: int, tags: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of (rows, cols): indptr, indices, edge IDs; inside a row edges are in tag order (as DGL's
    `sort_csr_by_tag` leaves them for typed sampling), then edge-ID order."""
    order = np.argsort(rows, kind="stable") if tags is None else np.lexsort((tags, rows))
    indptr = np.zeros(num_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_rows), out=indptr[1:])
    return indptr, cols[order], order.astype(np.int64, copy=False)


class _Written:
    """What `_atomic_binary` yields: the file to write through (hashing what passes), then the file's digest."""

    def __init__(self, f: BinaryIO):
        self.file = HashingWriter(f)
        self.digest: FileDigest | None = None


@contextmanager
def _atomic_binary(path: Target, storage: Storage | None = None) -> Iterator[_Written]:
    """Write `path` (a local file or an object) atomically through the storage layer, then note its content digest
    (hashed on the way out, so that a cache manifest need not read the file again)."""
    target = StoredFile.of(path, storage)
    with target.storage.write_atomic(target.loc, sync=False) as f:
        written = _Written(f)
        yield written
        size = f.tell()
    algorithm, hexdigest = written.file.algorithm, written.file.hexdigest()
    written.digest = FileDigest.of(target.loc.path, algorithm, hexdigest) if target.loc.is_local \
        else FileDigest(written_identity(target.loc, size), algorithm, hexdigest)


def save_tensor_dict(path: Target, tensors: Mapping[str, np.ndarray], storage: Storage | None = None) -> FileDigest:
    """Write {name: array} as DGL's tensor-dict file (`dgl.data.save_tensors`); bool is stored as uint8.
    `path` may be a URL (written through `storage`). Returns the file's content digest (`graphshard.digests`)."""
    with _atomic_binary(path, storage) as out:
        f = out.file
        f.write(_U64.pack(TENSOR_DICT_MAGIC) + _U64.pack(len(tensors)))
        _write_named_tensors(f, tensors)
    return out.digest


def save_graph(path: Target, num_nodes: int, src: np.ndarray, dst: np.ndarray,
               ndata: Mapping[str, np.ndarray] | None = None, edata: Mapping[str, np.ndarray] | None = None,
               formats: Sequence[str] = ("coo",), storage: Storage | None = None) -> FileDigest:
    """Write one homogeneous graph (ntype `_N`, etype `_E`) as `graph.dgl` in the `formats` asked (DGL's
    `graph_formats`: exactly those are saved; DGL's loaders and ours read any of them).
    Returns the file's content digest (`graphshard.digests`).

    CSR/CSC rows are sorted by `edata["_TYPE"]` when present, as DGL's partitioner saves heterogeneous partitions.
    """
    src = _storable(np.asarray(src, dtype=np.int64))
    dst = _storable(np.asarray(dst, dtype=np.int64))
    ndata, edata = dict(ndata or {}), dict(edata or {})
    if src.shape != dst.shape or src.ndim != 1:
        raise ValueError(f"src and dst must be 1-D of one length, got {src.shape} and {dst.shape}")
    for what, data, rows in (("ndata", ndata, num_nodes), ("edata", edata, src.shape[0])):
        for name, arr in data.items():
            if np.ndim(arr) == 0 or np.shape(arr)[0] != rows:
                raise ValueError(f"{what}['{name}'] has shape {np.shape(arr)}, expected {rows} rows")
    unknown = set(formats) - set(FORMAT_CODES)
    if unknown or not formats:
        raise ValueError(f"unknown graph formats {sorted(unknown)}; expected some of {sorted(FORMAT_CODES)}")
    saved = set(formats)
    saved_code = sum(FORMAT_CODES[name] for name in saved)

    with _atomic_binary(path, storage) as out:
        f = out.file
        header = _U64.pack(GRAPH_FILE_MAGIC) + _U64.pack(GRAPH_FILE_VERSION)
        header += _U64.pack(HETERO_GRAPH_TYPE) + _U64.pack(1)
        f.write(header.ljust(HEADER_SIZE, b"\0"))
        labels = _U64.pack(0)  # empty label dict
        _write_u64(f, HEADER_SIZE + _U64.size + len(labels))
        f.write(labels)
        graph_start = f.tell()
        _write_u64(f, HETEROGRAPH_MAGIC)
        _write_metagraph(f)
        _write_u64(f, 1)  # one relation graph
        _write_u64(f, UNIT_GRAPH_MAGIC)
        f.write(_I64.pack(saved_code | FORMAT_FLAG) + _I64.pack(ALL_FORMATS | FORMAT_FLAG))
        for name in FORMAT_CODES:  # sections in DGL's order: COO, CSR, CSC
            if name not in saved:
                continue
            _write_metagraph(f)
            if name == "coo":
                _write_sparse(f, COO_MAGIC, num_nodes, num_nodes, (src, dst, _EMPTY_IDS), (False, False))
            else:
                rows, cols = (src, dst) if name == "csr" else (dst, src)
                arrays = compressed(rows, cols, num_nodes, edata.get("_TYPE"))
                _write_sparse(f, CSR_MAGIC, num_nodes, num_nodes, arrays, (False,))
        f.write(_U64.pack(1) + _I64.pack(num_nodes))  # nodes per type
        for tensors in (ndata, edata):
            _write_u64(f, 1)
            _write_named_tensors(f, tensors)
        for names in (["_N"], ["_E"]):
            _write_u64(f, len(names))
            for name in names:
                _write_string(f, name)
        offsets = _U64.pack(1) + _U64.pack(graph_start)
        f.write(_U64.pack(len(offsets)) + offsets + _U64.pack(len(offsets)))
    return out.digest


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class ArrayIndex:
    """Where one array's data lies in a DGL file (byte offset, dtype, shape): indexed, to be read later."""

    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int


@dataclass
class GraphParts:
    """A homogeneous `graph.dgl` as stored: format sections (name -> (rows, cols, arrays)), node count, node and
    edge data; arrays are loaded (np.ndarray) or indexed (ArrayIndex) as the walk was asked to."""

    num_nodes: int
    sections: dict[str, tuple[int, int, list]]
    ndata: dict
    edata: dict


_EDGE_SOURCES = ("coo", "csc", "csr")  # the section edges are taken from, first present wins


class _Reader:
    """The one walker of DGL's binary files: reads arrays (or, with `index`, notes where they lie and seeks over
    them); short reads, arrays past the end of the file and bad magics become InputErrors naming the file."""

    def __init__(self, f: BinaryIO, path: Path | Location, index: bool = False):
        self.f, self.path, self.index = f, path, index
        self.size = f.seek(0, 2)
        f.seek(0)

    def raw(self, n: int, what: str) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise InputError(self.path, what, f"{n} more bytes", f"end of file at byte {self.f.tell()} (truncated)")
        return data

    def unpack(self, st: struct.Struct, what: str) -> tuple:
        return st.unpack(self.raw(st.size, what))

    def u64(self, what: str) -> int:
        return self.unpack(_U64, what)[0]

    def i64(self, what: str) -> int:
        return self.unpack(_I64, what)[0]

    def magic(self, expected: int, what: str) -> None:
        found = self.u64(what)
        if found != expected:
            raise InputError(self.path, what, f"magic number {expected:#x}", f"{found:#x}")

    def string(self, what: str) -> str:
        return self.raw(self.u64(what), what).decode("utf-8")

    def array_head(self, what: str) -> tuple[np.dtype, tuple[int, ...], int]:
        """dtype, shape and data byte count of the NDArray starting here; the data follows."""
        magic, _, device, _, ndim = self.unpack(_NDARRAY_HEAD, what)
        if magic != NDARRAY_MAGIC:
            raise InputError(self.path, what, f"NDArray magic {NDARRAY_MAGIC:#x}", f"{magic:#x}")
        if device != 1:
            raise InputError(self.path, what, "a CPU array (device type 1)", device)
        code, bits, lanes = self.unpack(_DTYPE, what)
        if code not in _CODE_TO_KIND or lanes != 1 or bits % 8:
            bfloat = " (bfloat16 has no numpy dtype)" if code == _BFLOAT_CODE else ""
            raise InputError(self.path, what, "an int, uint or float dtype with 1 lane",
                             f"type code {code}, {bits} bits, {lanes} lanes{bfloat}")
        dtype = np.dtype(f"<{_CODE_TO_KIND[code]}{bits // 8}")
        shape = struct.unpack(f"<{ndim}q", self.raw(8 * ndim, what))
        nbytes = self.i64(what)
        if nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise InputError(self.path, what, f"{int(np.prod(shape))} x {dtype.itemsize} data bytes for shape {shape}",
                             nbytes)
        if self.f.tell() + nbytes > self.size:
            raise InputError(self.path, what, f"{nbytes} data bytes", "end of file (truncated)")
        return dtype, shape, nbytes

    def ndarray(self, what: str) -> np.ndarray | ArrayIndex:
        dtype, shape, nbytes = self.array_head(what)
        if self.index:
            at = ArrayIndex(dtype, shape, self.f.tell())
            self.f.seek(nbytes, 1)
            return at
        arr = np.empty(shape, dtype=dtype)
        if nbytes and self.f.readinto(memoryview(arr.reshape(-1).view(np.uint8))) != nbytes:
            raise InputError(self.path, what, f"{nbytes} data bytes", "end of file (truncated)")
        return arr

    def named_tensors(self, what: str) -> dict[str, np.ndarray | ArrayIndex]:
        out = {}
        for _ in range(self.u64(what)):
            name = self.string(what)
            out[name] = self.ndarray(f"{what}['{name}']")
        return out

    def strings(self, what: str) -> list[str]:
        return [self.string(what) for _ in range(self.u64(what))]

    def sparse(self, magic: int, what: str, num_arrays: int, num_flags: int) -> tuple[int, int, list]:
        self.magic(magic, what)
        num_cols, num_rows = self.i64(what), self.i64(what)
        arrays = [self.ndarray(what) for _ in range(num_arrays)]
        self.raw(num_flags, what)
        return num_rows, num_cols, arrays

    def trailer(self) -> None:
        """The graph-offset vector and its size end the file; checking them catches a truncated tail."""
        blob = self.raw(self.u64("graph offsets"), "graph offsets")
        if self.u64("graph offsets size") != len(blob) or self.f.read(1):
            raise InputError(self.path, "graph offsets", "the offsets blob and its size at the end of the file",
                             "other bytes")

    def metagraph(self, what: str) -> None:
        self.magic(IMMUTABLE_GRAPH_MAGIC, what)
        self.sparse(CSR_MAGIC, what, 3, 1)

    def graph_sections(self) -> dict[str, tuple[int, int, list]]:
        """From the file header to the end of the format sections: {format name: (rows, cols, arrays)}."""
        self.magic(GRAPH_FILE_MAGIC, "file header")
        version, graph_type, num_graphs = self.u64("version"), self.u64("graph type"), self.u64("number of graphs")
        if (version, graph_type) != (GRAPH_FILE_VERSION, HETERO_GRAPH_TYPE):
            raise InputError(self.path, "file header", "version 2 heterograph file",
                             f"version {version}, type {graph_type}")
        if num_graphs != 1:
            raise InputError(self.path, "number of graphs", "1 graph", num_graphs)
        self.f.seek(HEADER_SIZE)
        self.f.seek(self.u64("graph data offset"))
        self.magic(HETEROGRAPH_MAGIC, "heterograph")
        self.metagraph("metagraph")
        if (n_rel := self.u64("relation graphs")) != 1:
            raise InputError(self.path, "relation graphs", "a homogeneous graph (1 relation)", n_rel)
        self.magic(UNIT_GRAPH_MAGIC, "unit graph")
        saved_code = self.i64("saved formats")
        self.i64("allowed formats")
        saved_code = saved_code & 0xFFFFFFFF if saved_code >> 32 else _LEGACY_FORMAT.get(saved_code, 0)
        sections = {}
        for name, code in FORMAT_CODES.items():
            if saved_code & code:
                self.metagraph(f"{name} metagraph")
                magic, arrays, flags = (COO_MAGIC, 3, 2) if name == "coo" else (CSR_MAGIC, 3, 1)
                sections[name] = self.sparse(magic, name, arrays, flags)
        if not sections:
            raise InputError(self.path, "saved formats", "at least one of coo, csr, csc", saved_code)
        return sections


@contextmanager
def _walker(path: Target, kind: str, index: bool, storage: Storage | None = None) -> Iterator[_Reader]:
    """The file to walk, local or an object (read by ranged requests; an index walk reads only the headers)."""
    source = StoredFile.of(path, storage)
    try:
        f = source.open(block_size=WALK_BLOCK)
    except (OSError, GraphshardError) as err:
        raise InputError(source.shown, None, f"a readable DGL {kind} file", getattr(err, "strerror", None) or err
                         ) from None
    with f:
        yield _Reader(f, source.shown, index)


def _walk_tensor_dict(path: Target, index: bool, storage: Storage | None = None) -> dict:
    with _walker(path, "tensor", index, storage) as r:
        path = r.path
        r.magic(TENSOR_DICT_MAGIC, "tensor dict header")
        count = r.u64("tensor count")
        tensors = r.named_tensors("tensors")
        if len(tensors) != count:
            raise InputError(path, "tensor count", f"{count} tensors", len(tensors))
        return tensors


def load_tensor_dict(path: Target, storage: Storage | None = None) -> dict[str, np.ndarray]:
    """Read DGL's tensor-dict file (`node_feat.dgl`, `orig_nids.dgl`, ...; a path or URL) into {name: array}."""
    return _walk_tensor_dict(path, False, storage)


def index_tensor_dict(path: Target, storage: Storage | None = None) -> dict[str, ArrayIndex]:
    """{name: where its data lies} of a DGL tensor-dict file, every header checked as `load_tensor_dict` does."""
    return _walk_tensor_dict(path, True, storage)


def _walk_graph(path: Target, index: bool, storage: Storage | None = None) -> GraphParts:
    with _walker(path, "graph", index, storage) as r:
        path = r.path
        sections = r.graph_sections()
        n_types = r.u64("node types")
        nodes_per_type = struct.unpack(f"<{n_types}q", r.raw(8 * n_types, "nodes per type"))
        ndata_list = [r.named_tensors("node data") for _ in range(r.u64("node data"))]
        edata_list = [r.named_tensors("edge data") for _ in range(r.u64("edge data"))]
        ntypes, etypes = r.strings("node type names"), r.strings("edge type names")
        r.trailer()
    if len(ntypes) != 1 or len(etypes) != 1:
        raise InputError(path, "types", "a homogeneous graph (1 node type, 1 edge type)", f"{ntypes}, {etypes}")
    num_rows = next(sections[name][0] for name in _EDGE_SOURCES if name in sections)
    return GraphParts(num_nodes=int(nodes_per_type[0]) if nodes_per_type else num_rows, sections=sections,
                      ndata=ndata_list[0] if ndata_list else {}, edata=edata_list[0] if edata_list else {})


def index_graph(path: Target, storage: Storage | None = None) -> GraphParts:
    """A homogeneous `graph.dgl` indexed (ArrayIndex for every array), every header checked as `load_graph` does."""
    return _walk_graph(path, True, storage)


def _coo_from_compressed(indptr: np.ndarray, indices: np.ndarray, eids: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) per edge in edge-ID order from a compressed matrix whose data array holds edge IDs."""
    rows = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    if eids.shape[0] == 0:
        return rows, indices.astype(np.int64, copy=False)
    row_out = np.empty_like(rows)
    col_out = np.empty(indices.shape[0], dtype=np.int64)
    row_out[eids] = rows
    col_out[eids] = indices
    return row_out, col_out


def load_graph(path: Target, storage: Storage | None = None) -> LocalGraph:
    """Read a homogeneous `graph.dgl` (ours or DGL's; COO, CSR or CSC saved; a path or URL) as COO in edge-ID
    order."""
    g = _walk_graph(path, False, storage)
    source = next(name for name in _EDGE_SOURCES if name in g.sections)
    arrays = g.sections[source][2]
    if source == "coo":
        src, dst, eids = arrays
        if eids.shape[0]:
            order = np.argsort(eids, kind="stable")
            src, dst = src[order], dst[order]
    elif source == "csc":
        dst, src = _coo_from_compressed(*arrays)
    else:
        src, dst = _coo_from_compressed(*arrays)
    return LocalGraph(num_nodes=g.num_nodes, src=src.astype(np.int64, copy=False),
                      dst=dst.astype(np.int64, copy=False), ndata=g.ndata, edata=g.edata,
                      formats=tuple(g.sections))
