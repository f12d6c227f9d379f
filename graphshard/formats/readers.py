"""Chunk file readers, one class per format and a table from format name to reader.

Every reader returns numpy arrays for one chunk file at a time, so memory is bounded by the chunk size, and can
count a file's rows cheaply (npy header, parquet footer, a line scan for csv) without loading it.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from graphshard import npyheader  # noqa: F401 - numpy's header parser under one lock (threads)
from graphshard.errors import InputError
from graphshard.formats.arrow import column_to_numpy
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, FileFormat
from graphshard.storage import Location, StoredFile
from graphshard.storage.overlap import each
from graphshard.storage.scratch import npy_header

Source = StoredFile | Path | str | Location  # what a reader method takes: a StoredFile, else a path or URL


def _file(source: Source) -> StoredFile:
    return StoredFile.of(source)


def _open_error(f: StoredFile, err: Exception) -> InputError:
    if not f.exists():
        if f.is_local and os.path.isdir(f.loc.path):
            return InputError(f.shown, None, "a chunk file", "a directory (name a file in it)")
        return InputError(f.shown, None, "an existing chunk file", "no such file")
    return InputError(f.shown, None, "a readable chunk file", f"{type(err).__name__}: {' '.join(str(err).split())}")


VALID_KINDS = "biuf"  # bool, signed, unsigned, float: what DGL's NDArray can hold
CSV_SCAN_LIMIT = 64 << 20  # csv files up to this size have their rows counted by `header` (a line scan, ~50 ms)
NPY_PROBE = 4096  # bytes read for an .npy header (one ranged request; a longer header costs a second one)
HEAD_BLOCK = 1 << 16  # bytes per request while reading a remote file's first rows (csv head, parquet footer)
FLOAT_MARKS = b".eEiInN+"  # a csv value with one of these reads as a float: 1.5, 1e3, inf, nan, +1
RUN_GAP = 1 << 20  # bytes of unwanted rows worth reading to save a request (`take` on an object)


@dataclass(frozen=True)
class Header:
    """What a chunk file holds, read from its header or footer: rows (None: unknown without a full read), the shape
    of one row and the dtype."""

    rows: int | None
    row_shape: tuple[int, ...]
    dtype: np.dtype


class ChunkReader:
    """Reads one chunk file of a format into numpy arrays. Every method takes the file as a `StoredFile` (a local
    path, an object read through its Storage, or bytes already read), or a plain path or URL."""

    def header(self, path: Source, fmt: FileFormat) -> Header:
        """Rows, row shape and dtype without loading the file (the first rows at most)."""
        head = self.head(path, fmt)
        return Header(self.num_rows(path, fmt), tuple(int(x) for x in head.shape[1:]), head.dtype)

    def counted(self, path: Source, fmt: FileFormat) -> Header:
        """The header with its rows counted and the dtype the whole file reads as (a csv file is scanned for them)."""
        return self.header(path, fmt)

    def table(self, path: Source, fmt: FileFormat) -> np.ndarray:
        """The whole file as a 1-D or 2-D numpy array."""
        raise NotImplementedError

    def num_rows(self, path: Source, fmt: FileFormat) -> int:
        """Row count without materializing the data."""
        raise NotImplementedError

    def rows(self, path: Source, fmt: FileFormat, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of the file."""
        return self.table(path, fmt)[start:stop]

    def head(self, path: Source, fmt: FileFormat) -> np.ndarray:
        """A few leading rows (at least one when the file has any), read without loading the whole file."""
        return self.rows(path, fmt, 0, 1)

    def take(self, path: Source, fmt: FileFormat, ids: np.ndarray) -> np.ndarray:
        """The rows at positions `ids` (a local .npy: from its memory map; formats without row ranges: the file
        read whole)."""
        return np.asarray(self.table(path, fmt)[ids])


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t)


def _null_lost(t: pa.DataType) -> bool:
    """Whether numpy has no value for a null of this type (integers, bools, a column of nulls only). A float null
    becomes NaN, as DGL's pandas-based reader reads it, so float columns keep their nulls."""
    return pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_null(t)


def _null_row(col: pa.ChunkedArray) -> int | None:
    """The first row holding a null numpy cannot hold (a missing list, or a null integer or bool); None when there
    is none, known from the null counts alone."""
    if not _is_list(col.type):
        return pc.index(col.is_null(), True).as_py() if col.null_count and _null_lost(col.type) else None
    values = sum(c.flatten().null_count for c in col.chunks) if _null_lost(col.type.value_type) else 0
    if not col.null_count and not values:
        return None
    col = col.combine_chunks()
    rows = [pc.index(col.is_null(), True).as_py()]
    if values:
        rows.append(pc.list_parent_indices(col)[pc.index(col.flatten().is_null(), True).as_py()].as_py())
    return min(r for r in rows if r >= 0)


def _null_problem(table: pa.Table, path: object, first_row: int) -> InputError | None:
    """A null where numpy has no value for it (an edge endpoint, an integer label, a bool mask): its column and
    first row (`first_row`: the table's first row in the file)."""
    for name, col in zip(table.column_names, table.columns):
        if (row := _null_row(col)) is not None:
            return InputError(path, None, f"no nulls in column {name!r} of type {col.type} (fill them or drop "
                              "their rows)", f"a null at row {first_row + row}")
    return None


def _ragged_problem(col: pa.Array, path: object, first_row: int) -> InputError | None:
    """A list column whose rows differ in length, which no 2-D array holds (flattened and reshaped, its values would
    shift between rows unnoticed whenever their total divides by the row count): the first row unlike row 0."""
    lengths = column_to_numpy(pc.list_value_length(col))
    other = np.flatnonzero(lengths != lengths[0]) if lengths.size else lengths
    if other.size == 0:
        return None
    row = int(other[0])
    return InputError(path, None, f"lists of one length in every row ({lengths[0]}, as at row {first_row})",
                      f"a list of {lengths[row]} at row {first_row + row}")


def _arrow_to_numpy(table: pa.Table, path: object, first_row: int = 0) -> np.ndarray:
    """A table of one list column or of N scalar columns as an (n,) or (n, N) array; a null integer or bool, or a
    list column of rows of different lengths, refused."""
    if (problem := _null_problem(table, path, first_row)) is not None:
        raise problem
    if table.num_columns == 1:
        col = table.column(0).combine_chunks()
        if _is_list(col.type):
            if (problem := _ragged_problem(col, path, first_row)) is not None:
                raise problem
            flat = column_to_numpy(col.flatten())
            n = len(col)
            return flat.reshape(n, -1) if n else flat.reshape(0, 0)
        return column_to_numpy(col)
    cols = [column_to_numpy(table.column(i)) for i in range(table.num_columns)]
    dtypes = {c.dtype for c in cols}
    if len(dtypes) != 1:
        common = common_dtype(dtypes, columns=True)
        if common is None:
            raise InputError(path, None, "columns of one dtype, or numbers whose common dtype loses no value (cast "
                             "the columns to one dtype)", sorted(str(d) for d in dtypes))
        cols = [c.astype(common, copy=False) for c in cols]
    return np.stack(cols, axis=1)


def common_dtype(dtypes: set[np.dtype], columns: bool = False) -> np.dtype | None:
    """The dtype numeric columns or files of different dtypes share, as numpy (and DGL's pandas read) promotes them,
    when it is one of theirs: int32 beside int64 IDs, a csv feature column of whole numbers (int64) beside float64
    ones. `columns`: one file's columns, which DGL's pandas read promotes to a float any of them is or not (a count
    column beside float32 ones: float64). None for bool or text, or when files (or integers) would promote to a
    dtype none has (int64 beside uint64 or float32)."""
    if not all(d.kind in "iuf" for d in dtypes):
        return None
    common = np.result_type(*dtypes)
    return common if common in dtypes or (columns and any(d.kind == "f" for d in dtypes)) else None


@dataclass(frozen=True)
class NpyLayout:
    """An .npy file's header: shape, order, dtype and where the data starts."""

    shape: tuple[int, ...]
    fortran: bool
    dtype: np.dtype
    offset: int

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    @property
    def data_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def array(self, data: bytes | memoryview, rows: int) -> np.ndarray:
        """`rows` rows of this layout from their bytes (no copy; read-only, as a memory map is)."""
        arr = np.frombuffer(data, dtype=self.dtype, count=rows * self.row_bytes // max(self.dtype.itemsize, 1))
        shape = (rows, *self.shape[1:]) if self.shape else ()
        return arr.reshape(shape, order="F" if self.fortran else "C")


def _npy_layout(head: bytes) -> NpyLayout:
    """Parse an .npy header from the file's first bytes (they must hold the whole header)."""
    fh = io.BytesIO(head)
    shape, fortran, dtype = npy_header(fh)
    return NpyLayout(tuple(int(x) for x in shape), bool(fortran), dtype, fh.tell())


class NumpyReader(ChunkReader):
    """.npy files: local ones memory-mapped; remote ones by ranges (the header, then exactly the rows asked for)."""

    def layout(self, path: Source) -> NpyLayout:
        """The header: one ranged read of the file's first NPY_PROBE bytes (a second one for a longer header)."""
        f = _file(path)
        try:
            head = f.read_range(0, NPY_PROBE)
            if len(head) >= 12 and head[:6] == b"\x93NUMPY":
                size = 10 + int.from_bytes(head[8:10], "little") if head[6] == 1 \
                    else 12 + int.from_bytes(head[8:12], "little")
                if size > len(head):
                    head = f.read_range(0, size)
            return _npy_layout(head)
        except Exception as err:  # noqa: BLE001 - re-raised with the file name
            raise _open_error(f, err) from None

    def header(self, path: Source, fmt: FileFormat) -> Header:
        """The .npy header; a file shorter than its header's shape and dtype need is reported as truncated."""
        f = _file(path)
        lay = self.layout(f)
        if lay.dtype.hasobject:  # its size says nothing: the objects are pickled after the header
            raise InputError(f.shown, None, "a numeric or bool dtype", "dtype object (pickled Python objects)")
        need, size = lay.offset + lay.data_bytes, f.size()
        if size < need:
            raise InputError(f.shown, None, f"{need} bytes (header: shape {lay.shape}, dtype {lay.dtype})",
                             f"{size} bytes: the file is truncated")
        return Header(lay.shape[0] if lay.shape else 0, lay.shape[1:], lay.dtype)

    def table(self, path: Source, fmt: FileFormat) -> np.ndarray:
        f = _file(path)
        if f.is_local:
            self.header(f, fmt)  # a truncated file is named as such
            try:
                return np.load(f.loc.path, mmap_mode="r", allow_pickle=False)
            except Exception as err:  # noqa: BLE001 - re-raised with the file name
                raise _open_error(f, err) from None
        if f.data is None:
            try:
                f = f.holding(f.read_all())  # one GET of the whole object
            except Exception as err:  # noqa: BLE001
                raise _open_error(f, err) from None
        self.header(f, fmt)  # a truncated file is named as such
        lay = self.layout(f)
        return lay.array(memoryview(f.data)[lay.offset:], lay.shape[0] if lay.shape else 1)

    def num_rows(self, path: Source, fmt: FileFormat) -> int:
        return self.header(path, fmt).rows or 0

    def rows(self, path: Source, fmt: FileFormat, start: int, stop: int) -> np.ndarray:
        f = _file(path)
        if f.is_local or f.data is not None:
            return np.ascontiguousarray(self.table(f, fmt)[start:stop])
        lay = self.layout(f)
        if lay.fortran or not lay.shape:
            return np.ascontiguousarray(self.table(f, fmt)[start:stop])
        stop, start = min(stop, lay.shape[0]), max(min(start, stop, lay.shape[0]), 0)
        if stop <= start:
            return lay.array(b"", 0)
        return self._ranged(f, lay, start, stop)

    def _ranged(self, f: StoredFile, lay: NpyLayout, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of an object: one ranged GET."""
        data = f.read_range(lay.offset + start * lay.row_bytes, lay.offset + stop * lay.row_bytes)
        if len(data) != (stop - start) * lay.row_bytes:
            raise InputError(f.shown, None, f"{lay.offset + lay.data_bytes} bytes (header: shape {lay.shape}, "
                             f"dtype {lay.dtype})", "fewer: the file is truncated")
        return lay.array(data, stop - start)

    def take(self, path: Source, fmt: FileFormat, ids: np.ndarray) -> np.ndarray:
        """Rows at positions `ids`; an object's by one ranged GET per run of nearby rows (`_runs`) after its
        header, never the whole object unless the rows span it."""
        f = _file(path)
        if f.is_local or f.data is not None:
            return super().take(f, fmt, ids)
        lay = self.layout(f)
        if lay.fortran or not lay.shape:
            return super().take(f, fmt, ids)
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= lay.shape[0]):
            raise IndexError(f"{f.shown}: row {int(ids.max())} of {lay.shape[0]}")
        out = np.empty((ids.shape[0], *lay.shape[1:]), dtype=lay.dtype)
        for lo, hi in _runs(ids, lay.row_bytes):
            sel = np.flatnonzero((ids >= lo) & (ids < hi))
            out[sel] = self._ranged(f, lay, lo, hi)[ids[sel] - lo]
        return out


def _runs(ids: np.ndarray, row_bytes: int, gap: int = RUN_GAP) -> list[tuple[int, int]]:
    """[lo, hi) row ranges covering `ids`, two neighbours joined when the rows between them are under `gap` bytes
    (reading them costs less than one more request)."""
    order = np.unique(ids)
    cut = np.flatnonzero(np.diff(order) * max(row_bytes, 1) > gap) + 1
    return [(int(r[0]), int(r[-1]) + 1) for r in np.split(order, cut)] if order.size else []


def _parquet(f: StoredFile):
    """A ParquetFile over a local path, bytes already read, or an object read by ranges (footer, row groups)."""
    if f.is_local:
        return pq.ParquetFile(f.loc.path)
    return pq.ParquetFile(pa.BufferReader(f.data) if f.data is not None else f.open(block_size=HEAD_BLOCK))


def _null_group(pf: pq.ParquetFile, names: list[str]) -> tuple[int, int] | None:
    """The first row group (and its first row) whose footer statistics count a null numpy has no value for in a
    flat column of `names` (exact there; a list's leaf count may include empty lists): the pre-flight finds it from
    the footer, where before a shuffle task met it mid-run. Nulls in lists are found when the rows are read."""
    meta = pf.metadata
    lost = {field.name for field in pf.schema_arrow if _null_lost(field.type) and field.name in names}
    leaves = [j for j in range(meta.num_columns) if meta.schema.column(j).path in lost]
    first = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        stats = [group.column(j).statistics for j in leaves]
        if any(st is not None and st.has_null_count and st.null_count for st in stats):
            return g, first
        first += group.num_rows
    return None


def _recorded_row(pf: pq.ParquetFile, flat: tuple[int, ...], shown: str) -> tuple[int, ...] | None:
    """The row shape DGL's parquet writer recorded when it flattened an array of more than 2 dimensions (schema
    metadata `shape`, e.g. b"(300, 2, 3)"; DGL's reader reshapes the rows back), else None. A recorded shape that
    does not fit the file's rows and columns is refused: DGL's reshape fails on it, and read flat it would be wrong."""
    recorded = (pf.schema_arrow.metadata or {}).get(b"shape")
    if recorded is None:
        return None
    found = re.fullmatch(rb"\(\s*(\d+)\s*((?:,\s*\d+\s*)*),?\s*\)", recorded.strip())
    dims = [int(x) for x in re.findall(rb"\d+", recorded)] if found else []
    fits = bool(dims) and dims[0] == pf.metadata.num_rows and math.prod(dims[1:]) == math.prod(flat)
    if not fits:
        shown_shape = recorded.decode(errors="replace")[:80]
        raise InputError(shown, "shape", f"the schema metadata's shape to be (rows, ...) matching the file's "
                         f"{pf.metadata.num_rows} rows of {math.prod(flat)} values (DGL reshapes the rows to it)",
                         f"{shown_shape!r}; rewrite the file with the shape it holds, or drop that metadata key")
    return tuple(dims[1:]) if len(dims) >= 3 else None


def _shaped(arr: np.ndarray, pf: pq.ParquetFile, shown: str) -> np.ndarray:
    """Rows as DGL reads them: reshaped to the row shape its parquet writer recorded (`_recorded_row`)."""
    row = _recorded_row(pf, arr.shape[1:], shown)
    return arr if row is None else arr.reshape(len(arr), *row)


class ParquetReader(ChunkReader):
    """Parquet files: the footer for counts, the row groups a row range needs (ranged reads on a store). With
    `first`, only a file's first that many columns are read (edge files: src and dst, as DGL reads them; other
    columns, a timestamp or a nullable weight, are never read nor checked)."""

    def __init__(self, first: int | None = None) -> None:
        self.first = first

    def _columns(self, pf: pq.ParquetFile) -> list[str]:
        """The columns read: a DataFrame's index, which pandas stores as columns, is not data (DGL's reader, through
        pandas, drops it too)."""
        pandas = pf.schema_arrow.pandas_metadata or {}
        index = {c for c in pandas.get("index_columns", []) if isinstance(c, str)}  # a RangeIndex is no column
        names = [n for n in pf.schema_arrow.names if n not in index]
        return names[:self.first] if self.first else names

    def table(self, path: Source, fmt: FileFormat) -> np.ndarray:
        f = _file(path)
        try:
            with _parquet(f) as pf:  # not pq.read_table: it imports pandas (~0.6 s per process)
                return _shaped(_arrow_to_numpy(pf.read(columns=self._columns(pf)), f.shown), pf, f.shown)
        except InputError:
            raise
        except Exception as err:  # noqa: BLE001
            raise _open_error(f, err) from None

    def rows(self, path: Source, fmt: FileFormat, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop): only the row groups that hold them are read."""
        f = _file(path)
        try:
            with _parquet(f) as pf:
                sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
                ends = np.cumsum([0, *sizes])
                groups = [i for i in range(len(sizes)) if ends[i] < stop and ends[i + 1] > start]
                if not groups:
                    return self.head(f, fmt)[:0]
                table = pf.read_row_groups(groups, columns=self._columns(pf))
        except InputError:
            raise
        except Exception as err:  # noqa: BLE001
            raise _open_error(f, err) from None
        first = int(ends[groups[0]])
        return _shaped(_arrow_to_numpy(table, f.shown, first)[start - first:stop - first], pf, f.shown)

    def header(self, path: Source, fmt: FileFormat) -> Header:
        """From the footer alone when every column read is one numeric or bool type (N columns: rows of N values; a
        remote file is then read for its footer only); else from the first row, as `ChunkReader.header`. A null
        where numpy has none, counted by the footer's statistics, is refused here."""
        f = _file(path)
        try:
            with _parquet(f) as pf:
                names = self._columns(pf)
                types = {pf.schema_arrow.field(i).type for i in range(len(names))}
                rows = int(pf.metadata.num_rows)
                null = _null_group(pf, names)
                problem = None if null is None else _null_problem(pf.read_row_group(null[0], columns=names),
                                                                  f.shown, null[1])
        except Exception as err:  # noqa: BLE001
            raise _open_error(f, err) from None
        if problem is not None:
            raise problem
        typ = types.pop() if len(types) == 1 else None
        if typ is None or not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)):
            head = super().header(f, fmt)
        else:
            head = Header(rows, (len(names),) if len(names) > 1 else (), np.dtype(typ.to_pandas_dtype()))
        row = _recorded_row(pf, head.row_shape, f.shown)
        return head if row is None else Header(head.rows, row, head.dtype)

    def head(self, path: Source, fmt: FileFormat) -> np.ndarray:
        f = _file(path)
        try:
            with _parquet(f) as pf:
                batch = next(pf.iter_batches(batch_size=1, columns=self._columns(pf)), None)
        except Exception as err:  # noqa: BLE001
            raise _open_error(f, err) from None
        return self.table(f, fmt) if batch is None else _shaped(_arrow_to_numpy(pa.Table.from_batches([batch]),
                                                                                f.shown), pf, f.shown)

    def num_rows(self, path: Source, fmt: FileFormat) -> int:
        f = _file(path)
        try:
            with _parquet(f) as pf:
                return int(pf.metadata.num_rows)
        except Exception as err:  # noqa: BLE001
            raise _open_error(f, err) from None


# What pyarrow's read_csv decompresses by a path's extension, so DGL's csv reader too (a `.csv.gz` chunk)
CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}


def _codec(f: StoredFile) -> str | None:
    return CODECS.get(os.path.splitext(f.loc.path)[1].lower())


def _csv_source(f: StoredFile, block: int):
    """What pyarrow's csv reader takes: a local path, bytes already read, or the object streamed by ranges; a
    compressed file's text as a stream that decompresses it."""
    codec = _codec(f)
    if f.is_local and not codec:
        return f.loc.path
    raw = pa.BufferReader(f.data) if f.data is not None else \
        pa.OSFile(f.loc.path) if f.is_local else f.open(block_size=block)
    return pa.CompressedInputStream(raw, codec) if codec else raw


@contextlib.contextmanager
def _text(f: StoredFile) -> Iterator:
    """The csv file's text as bytes, decompressed when its extension names a codec: what its rows are read from."""
    with f.open(block_size=1 << 24) as fh:
        codec = _codec(f)
        yield pa.CompressedInputStream(pa.PythonFile(fh, mode="r"), codec) if codec else fh


NO_LINE_END = "cannot infer number of columns"  # pyarrow's words for a non-empty csv file without a line end


def _parse_csv(source, fmt: FileFormat) -> pa.Table:
    """The whole csv file, no header, columns split at format.delimiter."""
    return _trailing_delimiter_dropped(pacsv.read_csv(
        source, read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter=fmt.delimiter)))


def _trailing_delimiter_dropped(table: pa.Table) -> pa.Table:
    """The table without a last column that is empty on every line: each line ended with the delimiter (a trailing
    space, as some writers leave), which is no value. A last column empty on some lines only is still an error."""
    if table.num_columns > 1 and table.num_rows and table.column(-1).null_count == table.num_rows:
        return table.drop_columns([table.column_names[-1]])
    return table


class CsvReader(ChunkReader):
    """Text files of numbers: read whole (a store serves them as whole objects), the first block for headers."""

    def header(self, path: Source, fmt: FileFormat) -> Header:
        """Column count and dtype of the first block; files up to CSV_SCAN_LIMIT bytes are scanned for their rows and
        for a float after that block (else rows None, dtype the first block's)."""
        return self._header(_file(path), fmt, CSV_SCAN_LIMIT)

    def counted(self, path: Source, fmt: FileFormat) -> Header:
        return self._header(_file(path), fmt, None)

    def _header(self, f: StoredFile, fmt: FileFormat, limit: int | None) -> Header:
        """The header, the whole file scanned when it is at most `limit` bytes (None: always)."""
        try:
            size = f.size()
        except Exception as err:  # noqa: BLE001
            raise _open_error(f, err) from None
        if size == 0:
            return Header(0, (), np.dtype(np.int64))
        head = self.head(f, fmt)
        shape = tuple(int(x) for x in head.shape[1:])
        if limit is not None and size > limit:
            return Header(None, shape, head.dtype)
        rows, floats = self._scan(f, fmt)
        return Header(rows, shape, np.dtype(np.float64) if floats and head.dtype.kind in "iu" else head.dtype)

    def _read(self, f: StoredFile, fmt: FileFormat) -> pa.Table:
        try:
            return _parse_csv(_csv_source(f, HEAD_BLOCK), fmt)
        except Exception as err:  # noqa: BLE001
            if not f.exists():
                raise _open_error(f, err) from None
            if NO_LINE_END in str(err) and f.size():  # one row without a final newline: pyarrow sees no line
                if not self._scan(f, fmt)[0]:
                    return pa.table({})  # blank lines only (one writer's empty chunk): no rows, as an empty file
                try:
                    with _text(f) as fh:
                        return _parse_csv(pa.BufferReader(fh.read() + b"\n"), fmt)
                except Exception as again:  # noqa: BLE001
                    err = again
            raise _ragged_line(f, fmt) or InputError(
                f.shown, "format.delimiter", f"rows of numbers separated by {fmt.delimiter!r}",
                f"{type(err).__name__}: {str(err).splitlines()[0]}") from None

    def table(self, path: Source, fmt: FileFormat) -> np.ndarray:
        f = _file(path)
        if not f.is_local and f.data is None:
            try:
                f = f.holding(f.read_all())  # one GET of the whole object, no HEAD before it
            except Exception as err:  # noqa: BLE001
                raise _open_error(f, err) from None
        if f.exists() and f.size() == 0:
            return np.zeros((0, 0), dtype=np.int64)  # pyarrow refuses empty files; an empty chunk is valid
        table = self._read(f, fmt)
        if not table.num_columns:
            return np.zeros((0, 0), dtype=np.int64)
        if (problem := _csv_value_problem(f, fmt, table)) is not None:
            raise problem
        return _arrow_to_numpy(table, f.shown)

    def head(self, path: Source, fmt: FileFormat) -> np.ndarray:
        f = _file(path)
        try:
            stream = pacsv.open_csv(
                _csv_source(f, HEAD_BLOCK),
                read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 16),
                parse_options=pacsv.ParseOptions(delimiter=fmt.delimiter),
            )
            head = _trailing_delimiter_dropped(pa.Table.from_batches([stream.read_next_batch()]))
            return _arrow_to_numpy(head, f.shown)
        except Exception:  # noqa: BLE001 - empty or unreadable: the full read reports it precisely
            return self.table(f, fmt)

    def num_rows(self, path: Source, fmt: FileFormat) -> int:
        """The rows pyarrow reads: non-empty lines, ended by LF, CRLF or CR (blank lines are skipped, as it does)."""
        return self._scan(_file(path), fmt)[0]

    def _scan(self, f: StoredFile, fmt: FileFormat) -> tuple[int, bool]:
        """One pass over the file: its rows (`num_rows`), and whether a value anywhere has a float's mark, which makes
        pyarrow read its column as float64 however many whole numbers come first."""
        marks = re.compile(b"[" + re.escape(FLOAT_MARKS.replace(fmt.delimiter.encode(), b"")) + b"]")
        try:
            with _text(f) as fh:
                count, last, floats = 0, b"\n", False
                while block := fh.read(1 << 24):
                    count += _line_ends(last + block)
                    floats = floats or marks.search(block) is not None
                    last = block[-1:]
                return count + (last not in b"\r\n"), floats
        except Exception as err:  # noqa: BLE001
            raise _open_error(f, err) from None


def _csv_lines(f: StoredFile) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a csv file and their 1-based numbers (LF, CRLF or CR ends; blank lines skipped, as
    pyarrow does): for messages, so only on an error path."""
    with _text(f) as fh:
        for number, line in enumerate(io.TextIOWrapper(fh, encoding="utf-8", errors="replace", newline=None), 1):
            if line := line.rstrip("\n"):
                yield number, line


def _shown_line(number: int, line: str) -> str:
    """A csv line as a message quotes it: its number and its text, shortened."""
    return f"line {number}: {line if len(line) <= 60 else line[:57] + '...'!r}"


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def _text_row(col: pa.ChunkedArray) -> int | None:
    """The first row of a text column whose value is not a number (pyarrow reads a column as text for one such)."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return None
    return next((row for row, value in enumerate(col.to_pylist()) if not NUMBER.fullmatch(value or "")), None)


def _csv_value_problem(f: StoredFile, fmt: FileFormat, table: pa.Table) -> InputError | None:
    """The first value of a csv file no number column holds, by its line, column and token: text among numbers, or
    an empty (null) value in an integer or bool column (floats keep theirs as NaN, as `_null_lost` says)."""
    for column, col in enumerate(table.columns):
        if (row := _text_row(col)) is None and (row := _null_row(col)) is None:
            continue
        number, line = next(itertools.islice(_csv_lines(f), row, None))
        tokens = line.split(fmt.delimiter)
        token = tokens[column] if column < len(tokens) else ""
        return InputError(f.shown, None, f"numbers separated by format.delimiter {fmt.delimiter!r}",
                          f"{repr(token) if token else 'an empty value'} in column {column + 1} of "
                          f"{_shown_line(number, line)}")
    return None


def _first_non_integer(f: StoredFile, fmt: FileFormat, columns: int) -> str | None:
    """The first value in a csv file's first `columns` columns that is not a whole number int64 holds (an empty
    value, 'NA', a fraction, an exponent, too many digits, a '+' sign: pyarrow reads '+1' as a float), by its line
    and column as a message shows it; None if there is none. A whole-file scan, on an error path only: pyarrow reads
    a column as float64 from such a value on, wherever it is, and the dtype alone does not say where."""
    for number, line in _csv_lines(f):
        for column, token in enumerate(line.split(fmt.delimiter)[:columns]):
            if not (re.fullmatch(r"-?\d+", token.strip()) and -2**63 <= int(token) < 2**63):  # '+1': a float
                return f"{repr(token) if token else 'an empty value'} in column {column + 1} of " \
                       f"{_shown_line(number, line)}"
    return None


def _ragged_line(f: StoredFile, fmt: FileFormat) -> InputError | None:
    """The first line whose column count differs from the count most lines have (a value missing or extra); None
    when all lines agree. pyarrow names neither the line nor the usual count (it takes the first line's)."""
    seen: dict[int, list] = {}  # columns -> [lines with that many, the first such line's number, its text]
    for number, line in _csv_lines(f):
        seen.setdefault(line.count(fmt.delimiter) + 1, [0, number, line])[0] += 1
    if len(seen) < 2:
        return None
    usual = max(seen, key=lambda n: seen[n][0])
    odd = min((n for n in seen if n != usual), key=lambda n: seen[n][1])
    return InputError(f.shown, None, f"{usual} columns separated by {fmt.delimiter!r} on every line (as "
                      f"{seen[usual][0]} lines have)", f"{odd} at {_shown_line(*seen[odd][1:])}")


def _line_ends(data: bytes) -> int:
    """How many non-empty lines end in `data`: bytes other than CR and LF followed by a CR or LF."""
    arr = np.frombuffer(data, dtype=np.uint8)
    end = (arr == 10) | (arr == 13)
    return int(np.count_nonzero(end[1:] & ~end[:-1]))


READERS: dict[str, ChunkReader] = {"numpy": NumpyReader(), "parquet": ParquetReader(), "csv": CsvReader()}
PARQUET_EDGES = ParquetReader(first=2)


def reader_for(fmt: FileFormat) -> ChunkReader:
    return READERS[fmt.name]


# ---- graph-level helpers ---------------------------------------------------------------------------------------

def _first_line(path: Source) -> str:
    """The first line of a text file (at most 80 characters), to show what a csv file really holds."""
    f = _file(path)
    if _codec(f):
        with _text(f) as fh:
            head = fh.read(80)
    else:
        head = f.read_range(0, 80)  # one small request on a store
    return head.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")


def not_numeric_problem(path: Source, fmt: FileFormat, field: str, dtype: np.dtype) -> InputError:
    """A non-numeric column: for csv most often a wrong format.delimiter, so show the first line."""
    if fmt.name == "csv":
        return InputError(path, field, f"numbers separated by format.delimiter {fmt.delimiter!r}",
                          f"first line {_first_line(path)!r}")
    return InputError(path, field, "a numeric or bool dtype (DGL files hold no strings or objects)", f"dtype {dtype}")


def unloadable_dtype(dtype: np.dtype) -> tuple[str, str] | None:
    """(expected, found) refusing a uint16/32/64 feature or a float wider than 64 bits (numpy's longdouble), None for
    any other dtype: DGL files can hold them, but DGL 2.x cannot load them into torch ('Unsupported kUInt bits 32';
    torch has no 128-bit float), so a partition set holding one would not load. The pre-flight's and the in-memory
    API's one rule and wording."""
    if dtype.kind == "u" and dtype.itemsize > 1:
        cast = "a signed type, e.g. int64"
    elif dtype.kind == "f" and dtype.itemsize > 8:
        cast = "float64"
    else:
        return None
    return (f"a dtype DGL loads into torch (bool, uint8, int8-int64, float16-float64): cast the feature to {cast}",
            f"dtype {dtype}")


def edge_field(etype: str, chunk: int) -> str:
    """The metadata field naming an edge chunk file, as messages show it."""
    return f"edges['{etype}'].data[{chunk}]"


def edge_ids_problem(path: Source, field: str, fmt: FileFormat, row_shape: tuple[int, ...],
                     dtype: np.dtype) -> InputError | None:
    """An edge file must hold exactly two integer ID columns, src and dst (parquet: at least two, the first two used,
    as DGL reads them); None when it does."""
    columns = row_shape[0] if len(row_shape) == 1 else None
    if dtype.kind not in "iu" and dtype.kind not in VALID_KINDS:
        return not_numeric_problem(path, fmt, field, dtype)
    integer = dtype.kind in "iu"
    if not integer and (fmt.name != "csv" or columns == 2):  # else the column count is the problem
        found = _first_non_integer(_file(path), fmt, 2) if fmt.name == "csv" else None
        return InputError(path, field, "integer node IDs", found or f"dtype {dtype}")
    if integer and (columns == 2 or (fmt.name == "parquet" and columns and columns > 2)):
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


def edge_reader(fmt: FileFormat) -> ChunkReader:
    """The reader of an edge chunk file: its format's, but of a parquet file's first two columns only."""
    return PARQUET_EDGES if fmt.name == "parquet" else reader_for(fmt)


def edge_table(graph: ChunkedGraph, etype: str, chunk: int) -> np.ndarray:
    """One edge chunk file as its reader returns it (numpy: memory-mapped; parquet: its first two columns),
    checked to hold the 2 integer ID columns when it has rows."""
    spec = graph.edges[etype]
    path = graph.file(spec.data[chunk])
    arr = edge_reader(spec.format).table(path, spec.format)
    if arr.size and (problem := edge_ids_problem(path, edge_field(etype, chunk), spec.format, arr.shape[1:],
                                                 arr.dtype)) is not None:
        raise problem
    return arr


def _wide_id_problem(graph: ChunkedGraph, etype: str, chunk: int, arr: np.ndarray) -> InputError | None:
    """A uint64 edge chunk's IDs that int64 cannot hold (out of any type's range), with their true values."""
    path, canonical = graph.path(graph.edges[etype].data[chunk]), graph.canonical(etype)
    for col, end, ntype in ((0, "src", canonical.src), (1, "dst", canonical.dst)):
        bad = np.flatnonzero(arr[:, col] > np.uint64(np.iinfo(np.int64).max))
        if bad.size:
            n = graph.num_nodes(ntype)
            return InputError(path, f"{edge_field(etype, chunk)} {end}", f"{ntype} IDs in [0, {n})",
                              f"{len(bad)} out of range, first {int(arr[bad[0], col])} at row {int(bad[0])}")
    return None


def read_edge_chunk(graph: ChunkedGraph, etype: str, chunk: int,
                    check_ids: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) per-type node IDs of one edge chunk, as int64; checks the 2 columns and (`check_ids`) the IDs'
    ranges. The arrays are the caller's own (writable copies: a column of a Fortran-ordered .npy, memory-mapped
    read-only, is already contiguous and would otherwise come back as a read-only view)."""
    arr = edge_table(graph, etype, chunk)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if arr.dtype == np.uint64:  # IDs of 2^63 and above would wrap to negative int64s: name them as they are
        if (problem := _wide_id_problem(graph, etype, chunk, arr)) is not None:
            raise problem
    src, dst = np.array(arr[:, 0], dtype=np.int64), np.array(arr[:, 1], dtype=np.int64)
    problems = id_problems(graph, etype, chunk, src, dst) if check_ids else []
    if problems:
        raise problems[0]
    return src, dst


def read_chunk(graph: ChunkedGraph, spec: ChunkFileSpec, chunk: int) -> np.ndarray:
    """One feature chunk file as a numpy array (bool stays bool)."""
    return np.asarray(reader_for(spec.format).table(graph.file(spec.data[chunk]), spec.format))


def chunk_row_counts(graph: ChunkedGraph, spec: ChunkFileSpec) -> list[int]:
    """Row count of every file of a spec, read cheaply from headers/footers (on a store, several at a time)."""
    reader = reader_for(spec.format)
    return each(lambda p: reader.num_rows(graph.file(p), spec.format), spec.data, not graph.base.is_local)


def _rows_and_dtype(reader: ChunkReader, path: Source, fmt: FileFormat) -> tuple[int, np.dtype]:
    head = reader.counted(path, fmt)
    return head.rows, head.dtype


@dataclass(frozen=True)
class RowIndex:
    """Where rows live across the files of a spec: offsets[i] is the first global row of file i; `dtype`: what
    their rows are read as (the files' common dtype, as DGL's concatenation promotes a csv file of whole numbers
    beside float ones; None: each file's own)."""

    offsets: np.ndarray
    dtype: np.dtype | None = None

    @classmethod
    def of(cls, graph: ChunkedGraph, spec: ChunkFileSpec, reader: ChunkReader | None = None) -> "RowIndex":
        """The index of `spec`'s files as `reader` reads them (default: their format's; an edge spec's:
        `edge_reader`, a parquet file's first two columns)."""
        reader = reader or reader_for(spec.format)
        found = each(lambda p: _rows_and_dtype(reader, graph.file(p), spec.format), spec.data,
                     not graph.base.is_local)
        dtypes = {dtype for rows, dtype in found if rows}  # an empty file's dtype (an empty csv's int64) is no data's
        dtype = common_dtype(dtypes) if len(dtypes) > 1 else None
        return cls(np.concatenate([[0], np.cumsum([rows for rows, _ in found])]).astype(np.int64), dtype)

    def cast(self, rows: np.ndarray) -> np.ndarray:
        """`rows` as the spec's common dtype (unchanged when its files share one)."""
        return rows if self.dtype is None or rows.dtype == self.dtype else rows.astype(self.dtype)

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
            pieces.append(reader.rows(graph.file(spec.data[i]), spec.format, lo, hi))
        i += 1
    if not pieces:
        pieces = [reader.rows(graph.file(spec.data[0]), spec.format, 0, 0)[:0]]
    return index.cast(np.concatenate(pieces) if len(pieces) > 1 else np.asarray(pieces[0]))
