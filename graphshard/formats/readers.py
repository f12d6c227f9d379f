"""Chunk file readers, one class per format and a table from format name to reader.

Every reader returns numpy arrays for one chunk file at a time, so memory is bounded by the chunk size, and can
count a file's rows cheaply (npy header, parquet footer, a line scan for csv) without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from graphshard.errors import InputError
from graphshard.formats.arrow import column_to_numpy
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, FileFormat


def _open_error(path: Path, err: Exception) -> InputError:
    if not path.exists():
        return InputError(path, None, "an existing chunk file", "no such file")
    return InputError(path, None, "a readable chunk file", f"{type(err).__name__}: {err}")


VALID_KINDS = "biuf"  # bool, signed, unsigned, float: what DGL's NDArray can hold
CSV_SCAN_LIMIT = 64 << 20  # csv files up to this size have their rows counted by `header` (a line scan, ~50 ms)


@dataclass(frozen=True)
class Header:
    """What a chunk file holds, read from its header or footer: rows (None: unknown without a full read), the shape
    of one row and the dtype."""

    rows: int | None
    row_shape: tuple[int, ...]
    dtype: np.dtype


class ChunkReader:
    """Reads one chunk file of a format into numpy arrays."""

    def header(self, path: Path, fmt: FileFormat) -> Header:
        """Rows, row shape and dtype without loading the file (the first rows at most)."""
        head = self.head(path, fmt)
        return Header(self.num_rows(path, fmt), tuple(int(x) for x in head.shape[1:]), head.dtype)

    def table(self, path: Path, fmt: FileFormat) -> np.ndarray:
        """The whole file as a 1-D or 2-D numpy array."""
        raise NotImplementedError

    def num_rows(self, path: Path, fmt: FileFormat) -> int:
        """Row count without materializing the data."""
        raise NotImplementedError

    def rows(self, path: Path, fmt: FileFormat, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of the file."""
        return self.table(path, fmt)[start:stop]

    def head(self, path: Path, fmt: FileFormat) -> np.ndarray:
        """A few leading rows (at least one when the file has any), read without loading the whole file."""
        return self.rows(path, fmt, 0, 1)


def _arrow_to_numpy(table: pa.Table, path: Path) -> np.ndarray:
    """A table of one list column or of N scalar columns as an (n,) or (n, N) array."""
    if table.num_columns == 1:
        col = table.column(0).combine_chunks()
        if pa.types.is_list(col.type) or pa.types.is_fixed_size_list(col.type) or pa.types.is_large_list(col.type):
            flat = column_to_numpy(col.flatten())
            n = len(col)
            return flat.reshape(n, -1) if n else flat.reshape(0, 0)
        return column_to_numpy(col)
    cols = [column_to_numpy(table.column(i)) for i in range(table.num_columns)]
    dtypes = {c.dtype for c in cols}
    if len(dtypes) != 1:
        raise InputError(path, None, "columns of one dtype", sorted(str(d) for d in dtypes))
    return np.stack(cols, axis=1)


class NumpyReader(ChunkReader):
    def header(self, path: Path, fmt: FileFormat) -> Header:
        """The .npy header; a file shorter than its header's shape and dtype need is reported as truncated."""
        try:
            with open(path, "rb") as fh:
                npf = np.lib.format
                read = npf.read_array_header_1_0 if npf.read_magic(fh) == (1, 0) else npf.read_array_header_2_0
                shape, _, dtype = read(fh)
                offset = fh.tell()
        except Exception as err:  # noqa: BLE001 - re-raised with the file name
            raise _open_error(path, err) from None
        need = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        size = path.stat().st_size
        if size < need:
            raise InputError(path, None, f"{need} bytes (header: shape {shape}, dtype {dtype})",
                             f"{size} bytes: the file is truncated")
        return Header(int(shape[0]) if shape else 0, tuple(int(x) for x in shape[1:]), dtype)

    def table(self, path: Path, fmt: FileFormat) -> np.ndarray:
        self.header(path, fmt)  # a truncated file is named as such
        try:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as err:  # noqa: BLE001 - re-raised with the file name
            raise _open_error(path, err) from None

    def num_rows(self, path: Path, fmt: FileFormat) -> int:
        arr = self.table(path, fmt)
        return int(arr.shape[0]) if arr.ndim else 0

    def rows(self, path: Path, fmt: FileFormat, start: int, stop: int) -> np.ndarray:
        return np.ascontiguousarray(self.table(path, fmt)[start:stop])


class ParquetReader(ChunkReader):
    def table(self, path: Path, fmt: FileFormat) -> np.ndarray:
        try:
            with pq.ParquetFile(path) as f:  # not pq.read_table: it imports pandas (~0.6 s per process)
                return _arrow_to_numpy(f.read(), path)
        except InputError:
            raise
        except Exception as err:  # noqa: BLE001
            raise _open_error(path, err) from None

    def head(self, path: Path, fmt: FileFormat) -> np.ndarray:
        try:
            batch = next(pq.ParquetFile(path).iter_batches(batch_size=1), None)
        except Exception as err:  # noqa: BLE001
            raise _open_error(path, err) from None
        return self.table(path, fmt) if batch is None else _arrow_to_numpy(pa.Table.from_batches([batch]), path)

    def num_rows(self, path: Path, fmt: FileFormat) -> int:
        try:
            return int(pq.ParquetFile(path).metadata.num_rows)
        except Exception as err:  # noqa: BLE001
            raise _open_error(path, err) from None


class CsvReader(ChunkReader):
    def header(self, path: Path, fmt: FileFormat) -> Header:
        """Column count and dtype of the first block; rows counted only for files up to CSV_SCAN_LIMIT bytes."""
        try:
            size = path.stat().st_size
        except OSError as err:
            raise _open_error(path, err) from None
        if size == 0:
            return Header(0, (), np.dtype(np.int64))
        head = self.head(path, fmt)
        rows = self.num_rows(path, fmt) if size <= CSV_SCAN_LIMIT else None
        return Header(rows, tuple(int(x) for x in head.shape[1:]), head.dtype)

    def _read(self, path: Path, fmt: FileFormat) -> pa.Table:
        try:
            return pacsv.read_csv(
                path,
                read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 24),
                parse_options=pacsv.ParseOptions(delimiter=fmt.delimiter),
            )
        except Exception as err:  # noqa: BLE001
            if not path.exists():
                raise _open_error(path, err) from None
            raise InputError(path, "format.delimiter", f"rows of numbers separated by {fmt.delimiter!r}",
                             f"{type(err).__name__}: {str(err).splitlines()[0]}") from None

    def table(self, path: Path, fmt: FileFormat) -> np.ndarray:
        if path.exists() and path.stat().st_size == 0:
            return np.zeros((0, 0), dtype=np.int64)  # pyarrow refuses empty files; an empty chunk is valid
        return _arrow_to_numpy(self._read(path, fmt), path)

    def head(self, path: Path, fmt: FileFormat) -> np.ndarray:
        try:
            stream = pacsv.open_csv(
                path,
                read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 16),
                parse_options=pacsv.ParseOptions(delimiter=fmt.delimiter),
            )
            return _arrow_to_numpy(pa.Table.from_batches([stream.read_next_batch()]), path)
        except Exception:  # noqa: BLE001 - empty or unreadable: the full read reports it precisely
            return self.table(path, fmt)

    def num_rows(self, path: Path, fmt: FileFormat) -> int:
        try:
            with open(path, "rb") as fh:
                count, last = 0, b"\n"
                while block := fh.read(1 << 24):
                    count += block.count(b"\n")
                    last = block[-1:]
                return count + (last != b"\n")
        except OSError as err:
            raise _open_error(path, err) from None


READERS: dict[str, ChunkReader] = {"numpy": NumpyReader(), "parquet": ParquetReader(), "csv": CsvReader()}


def reader_for(fmt: FileFormat) -> ChunkReader:
    return READERS[fmt.name]


# ---- graph-level helpers ---------------------------------------------------------------------------------------

def _first_line(path: Path) -> str:
    """The first line of a text file (at most 80 characters), to show what a csv file really holds."""
    with open(path, "rb") as fh:
        return fh.readline(80).decode("utf-8", "replace").rstrip("\r\n")


def not_numeric_problem(path: Path, fmt: FileFormat, field: str, dtype: np.dtype) -> InputError:
    """A non-numeric column: for csv most often a wrong format.delimiter, so show the first line."""
    if fmt.name == "csv":
        return InputError(path, field, f"numbers separated by format.delimiter {fmt.delimiter!r}",
                          f"first line {_first_line(path)!r}")
    return InputError(path, field, "a numeric or bool dtype (DGL files hold no strings or objects)", f"dtype {dtype}")


def edge_field(etype: str, chunk: int) -> str:
    """The metadata field naming an edge chunk file, as messages show it."""
    return f"edges['{etype}'].data[{chunk}]"


def edge_ids_problem(path: Path, field: str, fmt: FileFormat, row_shape: tuple[int, ...],
                     dtype: np.dtype) -> InputError | None:
    """An edge file must hold exactly two integer ID columns, src and dst (parquet: at least two, the first two used,
    as DGL reads them); None when it does."""
    if dtype.kind not in "iu":
        return not_numeric_problem(path, fmt, field, dtype) if dtype.kind not in VALID_KINDS \
            else InputError(path, field, "integer node IDs", f"dtype {dtype}")
    columns = row_shape[0] if len(row_shape) == 1 else None
    if columns == 2 or (fmt.name == "parquet" and columns and columns > 2):
        return None
    expected = "at least 2 columns, the first two src and dst" if fmt.name == "parquet" \
        else "exactly 2 columns (src, dst IDs)"
    return InputError(path, field, expected, f"{columns} columns" if columns else f"a {len(row_shape) + 1}-D array")


def id_problems(graph: ChunkedGraph, etype: str, chunk: int, src: np.ndarray, dst: np.ndarray) -> list[InputError]:
    """Node IDs of an edge chunk outside their type's [0, n): one problem per end (a min/max pass when none is)."""
    path, canonical, problems = graph.path(graph.edges[etype].data[chunk]), graph.canonical(etype), []
    for end, ids, ntype in (("src", src, canonical.src), ("dst", dst, canonical.dst)):
        n = graph.num_nodes(ntype)
        if len(ids) and (ids.min() < 0 or ids.max() >= n):
            bad = np.flatnonzero((ids < 0) | (ids >= n))
            problems.append(InputError(path, f"{edge_field(etype, chunk)} {end}", f"{ntype} IDs in [0, {n})",
                                       f"{len(bad)} out of range, first {int(ids[bad[0]])} at row {int(bad[0])}"))
    return problems


def edge_table(graph: ChunkedGraph, etype: str, chunk: int) -> np.ndarray:
    """One edge chunk file as its reader returns it (numpy: memory-mapped), checked to hold the 2 integer ID
    columns when it has rows."""
    spec = graph.edges[etype]
    path = graph.path(spec.data[chunk])
    arr = reader_for(spec.format).table(path, spec.format)
    if arr.size and (problem := edge_ids_problem(path, edge_field(etype, chunk), spec.format, arr.shape[1:],
                                                 arr.dtype)) is not None:
        raise problem
    return arr


def read_edge_chunk(graph: ChunkedGraph, etype: str, chunk: int,
                    check_ids: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) per-type node IDs of one edge chunk, as int64; checks the 2 columns and (`check_ids`) the IDs'
    ranges."""
    arr = edge_table(graph, etype, chunk)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    src, dst = np.ascontiguousarray(arr[:, 0], dtype=np.int64), np.ascontiguousarray(arr[:, 1], dtype=np.int64)
    problems = id_problems(graph, etype, chunk, src, dst) if check_ids else []
    if problems:
        raise problems[0]
    return src, dst


def read_chunk(graph: ChunkedGraph, spec: ChunkFileSpec, chunk: int) -> np.ndarray:
    """One feature chunk file as a numpy array (bool stays bool)."""
    return np.asarray(reader_for(spec.format).table(graph.path(spec.data[chunk]), spec.format))


def chunk_row_counts(graph: ChunkedGraph, spec: ChunkFileSpec) -> list[int]:
    """Row count of every file of a spec, read cheaply from headers/footers."""
    reader = reader_for(spec.format)
    return [reader.num_rows(graph.path(p), spec.format) for p in spec.data]


@dataclass(frozen=True)
class RowIndex:
    """Where rows live across the files of a spec: offsets[i] is the first global row of file i."""

    offsets: np.ndarray

    @classmethod
    def of(cls, graph: ChunkedGraph, spec: ChunkFileSpec) -> "RowIndex":
        return cls(np.concatenate([[0], np.cumsum(chunk_row_counts(graph, spec))]).astype(np.int64))

    @property
    def total(self) -> int:
        return int(self.offsets[-1])


def read_rows(graph: ChunkedGraph, spec: ChunkFileSpec, start: int, stop: int,
              index: RowIndex | None = None) -> np.ndarray:
    """Global rows [start, stop) of a spec whose files split rows differently from the request."""
    index = index or RowIndex.of(graph, spec)
    reader = reader_for(spec.format)
    first = int(np.searchsorted(index.offsets, start, side="right") - 1)
    pieces = []
    i = max(first, 0)
    while i < len(spec.data) and index.offsets[i] < stop:
        lo = max(start, int(index.offsets[i])) - int(index.offsets[i])
        hi = min(stop, int(index.offsets[i + 1])) - int(index.offsets[i])
        if hi > lo:
            pieces.append(reader.rows(graph.path(spec.data[i]), spec.format, lo, hi))
        i += 1
    if not pieces:
        probe = reader.rows(graph.path(spec.data[0]), spec.format, 0, 0)
        return probe[:0]
    return np.concatenate(pieces) if len(pieces) > 1 else np.asarray(pieces[0])
